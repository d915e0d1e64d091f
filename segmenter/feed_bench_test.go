package segmenter

import (
	"path/filepath"
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

// BenchmarkDiffFeedsEdited diffs two versions where a long post was
// edited, the case that runs the word diff.
func BenchmarkDiffFeedsEdited(b *testing.B) {
	dir := testenv.Corpus(b, "feeds", "history", "pandasthumb-atom", "timestamp_only_pairs")
	files := feedCorpusFiles(b, dir, "pair1_*.xml")
	old := feedRead(b, files[0])
	f := mustParseFeed(b, old)
	it := f.Items[0]
	// Change one word in the middle of the first item's content.
	raw := old[it.Start:it.End]
	mid := len(raw) / 2
	edited := append(append(append([]byte{}, old[:it.Start+mid]...), " inserted "...), old[it.Start+mid:]...)
	_ = filepath.Base
	b.ReportAllocs()
	for b.Loop() {
		d, err := DiffFeeds(old, edited)
		if err != nil || len(d.Changes) != 1 {
			b.Fatalf("%v, %d changes", err, len(d.Changes))
		}
	}
}
