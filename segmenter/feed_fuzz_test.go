package segmenter

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/changedigest/changedigest"
)

// feedFuzzSeeds are the hand-written feeds plus a few broken fragments.
func feedFuzzSeeds(f *testing.F) [][]byte {
	paths, err := filepath.Glob(filepath.Join("testdata", "feeds", "*"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	var seeds [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return append(seeds,
		[]byte(`<rss><channel><item><title>a</title></item><item>`),
		[]byte(`<feed><entry><id>x</id></entry><entry><id>x</id></entry></feed>`),
		[]byte(`{"version":"https://jsonfeed.org/version/1","items":[{"id":"1"},null,{}]}`),
		[]byte("\ufeff<rdf:RDF><item><link>/x</link></item></rdf:RDF>"),
		[]byte(`<rss><channel><link>::bad</link><item><link>%zz</link></item></channel></rss>`),
	)
}

// checkParsedFeed checks what ParseFeed promises of any feed it returns.
func checkParsedFeed(t *testing.T, body []byte, f *Feed) {
	t.Helper()
	keys := map[string]bool{}
	last := 0
	for i, it := range f.Items {
		if it.Key == "" || keys[it.Key] {
			t.Fatalf("item %d key %q empty or repeated", i, it.Key)
		}
		keys[it.Key] = true
		if h, err := hex.DecodeString(it.Hash()); err != nil || len(h) != 16 {
			t.Fatalf("item %d hash %q", i, it.Hash())
		}
		if (it.Start == -1) != (it.End == -1) {
			t.Fatalf("item %d range [%d,%d)", i, it.Start, it.End)
		}
		if it.Start != -1 {
			if it.Start < last || it.End <= it.Start || it.End > len(body) {
				t.Fatalf("item %d range [%d,%d) after %d in %d bytes", i, it.Start, it.End, last, len(body))
			}
			last = it.End
		}
	}
}

// FuzzParseFeed: no input panics or yields a malformed Feed, errors are
// input errors, and a feed diffed with itself has no change.
func FuzzParseFeed(f *testing.F) {
	for _, s := range feedFuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		feed, err := ParseFeed(body)
		if err != nil {
			if changedigest.ErrorCode(err) != changedigest.EINVALID {
				t.Fatalf("error %v is not an input error", err)
			}
			return
		}
		checkParsedFeed(t, body, feed)
		d, err := DiffFeeds(body, body)
		if err != nil {
			t.Fatalf("parses once but not twice: %v", err)
		}
		if d.Changes == nil || len(d.Changes) != 0 || d.Similarity != 1 {
			t.Fatalf("feed against itself: %+v", d)
		}
	})
}

// FuzzDiffFeeds: any two inputs diff without panic, and the changes of
// two feeds account for every item on both sides.
func FuzzDiffFeeds(f *testing.F) {
	seeds := feedFuzzSeeds(f)
	for i := range seeds {
		f.Add(seeds[i], seeds[(i+1)%len(seeds)])
	}
	f.Fuzz(func(t *testing.T, old, new []byte) {
		d, err := DiffFeeds(old, new)
		if err != nil {
			if changedigest.ErrorCode(err) != changedigest.EINVALID {
				t.Fatalf("error %v is not an input error", err)
			}
			return
		}
		if d.Changes == nil || d.Similarity < 0 || d.Similarity > 1 || d.ChangedSegments != len(d.Changes) {
			t.Fatalf("diff header %+v", d)
		}
		seenOld, seenNew := map[int]bool{}, map[int]bool{}
		inserts, deletes := 0, 0
		for _, c := range d.Changes {
			o, n := *c.OldItem, *c.NewItem
			if o >= d.Old.Segments || n >= d.New.Segments || (o >= 0 && seenOld[o]) || (n >= 0 && seenNew[n]) {
				t.Fatalf("change %+v out of range or repeated", c)
			}
			seenOld[o], seenNew[n] = true, true
			switch c.Op {
			case changedigest.OpInsert:
				inserts++
				if o != -1 || n < 0 {
					t.Fatalf("insert %d→%d", o, n)
				}
			case changedigest.OpDelete:
				deletes++
				if o < 0 || n != -1 {
					t.Fatalf("delete %d→%d", o, n)
				}
			case changedigest.OpUpdate:
				if o < 0 || n < 0 || c.OldText == c.NewText {
					t.Fatalf("update %d→%d %q→%q", o, n, c.OldText, c.NewText)
				}
			default:
				t.Fatalf("op %q", c.Op)
			}
		}
		if d.Old.Segments-deletes != d.New.Segments-inserts {
			t.Fatalf("%d-%d old items vs %d-%d new", d.Old.Segments, deletes, d.New.Segments, inserts)
		}
	})
}
