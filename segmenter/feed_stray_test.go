package segmenter

import (
	"strings"
	"testing"
)

// strayEndTagFeed is an RSS feed of two items with n unclosed elements
// between them, closed by n end tags that match none of them.
func strayEndTagFeed(n int) []byte {
	item := func(i string) string {
		return `<item><title>Item ` + i + `</title><link>https://x.example/` + i + `</link><description>d</description></item>`
	}
	return []byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>` + item("1") +
		strings.Repeat("<a>", n) + strings.Repeat("</b>", n) + `</channel>` + item("2") + `</rss>`)
}

// TestFeedStrayEndTags: end tags that match no open element are ignored,
// and an end tag closes the elements left open inside its own.
func TestFeedStrayEndTags(t *testing.T) {
	body := strayEndTagFeed(1000)
	var got []string
	feedXMLScan(body, func(start, end int, open []string) {
		got = append(got, string(body[start:end])+" in "+strings.Join(open, "/"))
	})
	want := []string{
		`<item><title>Item 1</title><link>https://x.example/1</link><description>d</description></item> in rss/channel`,
		`<item><title>Item 2</title><link>https://x.example/2</link><description>d</description></item> in rss`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("items\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// BenchmarkFeedStrayEndTags detects a 700 KB feed with 100,000 unclosed
// elements and as many stray end tags (23 s of CPU when each end tag
// searched the open elements; 0.1 s now).
func BenchmarkFeedStrayEndTags(b *testing.B) {
	body := strayEndTagFeed(100000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DetectFeed(Input{Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}
