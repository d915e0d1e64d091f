package segmenter

import (
	"strings"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

// feedBenchPair is a real pair of successive pandasthumb feed versions:
// one post added at the top, one pushed out at the bottom.
func feedBenchPair(b *testing.B) (old, new []byte) {
	dir := testenv.Corpus(b, "feeds", "history", "pandasthumb-atom", "versions_first40")
	files := feedCorpusFiles(b, dir, "*.xml")
	return feedRead(b, files[0]), feedRead(b, files[1])
}

func BenchmarkDiffFeeds(b *testing.B) {
	old, new := feedBenchPair(b)
	b.SetBytes(int64(len(old) + len(new)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DiffFeeds(old, new); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseFeed(b *testing.B) {
	body, _ := feedBenchPair(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFeed(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiffFeedsEdited diffs a feed against a copy with a few words
// added in the middle of a long post, the case that runs the word diff.
func BenchmarkDiffFeedsEdited(b *testing.B) {
	old, _ := feedBenchPair(b)
	f := mustParseFeed(b, old)
	it := f.Items[0]
	raw := string(old[it.Start:it.End])
	open, end := strings.Index(raw, "<content"), strings.Index(raw, "</content>")
	cut := strings.Index(raw[open+(end-open)/2:], ". ")
	if open < 0 || end < 0 || cut < 0 {
		b.Fatal("first entry has no content with a sentence break")
	}
	at := it.Start + open + (end-open)/2 + cut + 2
	edited := append(append(append([]byte{}, old[:at]...), "A few inserted words. "...), old[at:]...)
	b.ReportAllocs()
	for b.Loop() {
		d, err := DiffFeeds(old, edited)
		if err != nil || len(d.Changes) != 1 {
			b.Fatalf("%v, %d changes", err, len(d.Changes))
		}
	}
}
