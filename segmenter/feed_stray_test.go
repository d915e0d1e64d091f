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

// deepTruncatedFeed is an RSS feed cut off after n items, whose channel
// sits inside n unclosed elements.
func deepTruncatedFeed(n int) []byte {
	return []byte(`<?xml version="1.0"?><rss version="2.0">` + strings.Repeat("<a>", n) + `<channel><title>t</title>` +
		strings.Repeat(`<item><title>x</title></item>`, n) + `<item><title>cut off`)
}

// TestFeedTruncateRepairDeep: a feed cut off is repaired after its last
// complete item by closing that item's ancestors, however deep.
func TestFeedTruncateRepairDeep(t *testing.T) {
	fixed, ok := feedTruncateRepair(deepTruncatedFeed(3))
	want := `<?xml version="1.0"?><rss version="2.0"><a><a><a><channel><title>t</title>` +
		strings.Repeat(`<item><title>x</title></item>`, 3) + `</channel></a></a></a></rss>`
	if !ok || string(fixed) != want {
		t.Errorf("repaired to\n%s\nwant\n%s", fixed, want)
	}
}

// BenchmarkFeedTruncateRepairDeep detects a 1.9 MB feed cut off after
// 60,000 items inside 60,000 unclosed elements (the ancestors were
// copied for every item: 1.4 s of CPU; 0.4 s now, mostly gofeed).
func BenchmarkFeedTruncateRepairDeep(b *testing.B) {
	body := deepTruncatedFeed(60000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		DetectFeed(Input{Body: body}) // an error: the feed stays malformed
	}
}
