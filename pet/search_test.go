package pet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/changedigest/changedigest"
)

func TestSearch(t *testing.T) {
	testSearch(t, newFixture(t))
}

// TestSearchInAnIndexMadeBefore runs the same searches over an index made
// with the mapping of before fOrder (newest first by fSort, then by the
// document's ID): the hits come in the same order.
func TestSearchInAnIndexMadeBefore(t *testing.T) {
	testSearch(t, newFixture(t, func(s *Store) {
		idx, err := s.newIndex(filepath.Join(s.Dir, indexDir), legacyMapping(fSort))
		if err != nil {
			t.Fatal(err)
		}
		if newestFirst(idx.Mapping())[0] != "-"+fSort {
			t.Fatalf("a legacy index sorts by %v", newestFirst(idx.Mapping()))
		}
		idx.Close()
	}))
}

// legacyMapping is indexMapping as it was when order, fSort or fOrder,
// ordered the hits.
func legacyMapping(order string) mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.DefaultAnalyzer = wordsAnalyzer
	im.IndexDynamic, im.StoreDynamic, im.DocValuesDynamic = false, false, false
	dm := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = wordsAnalyzer
	text.Store, text.IncludeInAll, text.IncludeTermVectors, text.DocValues = false, false, true, false
	text.SkipFreqNorm = true
	dm.AddFieldMappingsAt(fText, text)
	for _, name := range []string{fUser, fWatch, fTypes, fFirst, fLast, order} {
		kw := bleve.NewKeywordFieldMapping()
		kw.Store, kw.IncludeInAll, kw.IncludeTermVectors = false, false, false
		kw.DocValues = name == order
		dm.AddFieldMappingsAt(name, kw)
	}
	im.DefaultMapping = dm
	return im
}

func testSearch(t *testing.T, f *fixture) {
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	alice, news := f.user, f.watch
	blog := f.mustWatch(t, alice.ID, "https://example.org/blog")
	bobs := f.mustWatch(t, bob.ID, "https://example.net/")
	content := changedigest.Change{Segment: 1, Type: changedigest.ChangeContent, Op: changedigest.OpUpdate}
	cosmetic := changedigest.Change{Segment: 1, Type: changedigest.ChangeCosmetic, Op: changedigest.OpUpdate}

	s1, _ := f.add(t, news.ID, page("Council meeting agenda", "The river bridge will close for repairs"))
	f.add(t, blog.ID, page("Fossil news", "A panda thumb is not a thumb"))
	f.add(t, bobs.ID, page("Bob's page", "The river bridge is Bob's secret"))
	s4, _ := f.add(t, news.ID, page("Council meeting agenda", "The bridge reopened after repairs to the river wall"), content)
	s5, _ := f.add(t, blog.ID, page("Fossil news", `<b>Evolution</b> of the panda's thumb: 5 &lt; 6 &amp; &quot;quotes&quot;`), cosmetic)
	f.add(t, news.ID, page("Council meeting agenda", "Nothing about it now")) // the bridge text leaves
	t1, t4, t5 := s1.FetchedAt, s4.FetchedAt, s5.FetchedAt

	type hit struct {
		watch int64
		seq   int
	}
	tests := []struct {
		name  string
		q     Query
		want  []hit
		total int
	}{
		{"words, newest first", Query{Text: "river bridge", UserID: alice.ID}, []hit{{news.ID, 2}, {news.ID, 1}}, 2},
		{"stemming", Query{Text: "reopens", UserID: alice.ID}, []hit{{news.ID, 2}}, 1},
		{"all words must occur", Query{Text: "bridge fossil", UserID: alice.ID}, nil, 0},
		{"phrase", Query{Text: `"bridge will close"`, UserID: alice.ID}, []hit{{news.ID, 1}}, 1},
		{"phrase and word", Query{Text: `"panda thumb" fossil`, UserID: alice.ID}, nil, 0},
		{"phrase in order only", Query{Text: `"close will bridge"`, UserID: alice.ID}, nil, 0},
		{"other user sees only theirs", Query{Text: "river bridge", UserID: bob.ID}, []hit{{bobs.ID, 1}}, 1},
		{"all users", Query{Text: "river bridge", UserID: AnyUser}, []hit{{news.ID, 2}, {bobs.ID, 1}, {news.ID, 1}}, 3},
		{"watch", Query{Text: "thumb", UserID: alice.ID, WatchID: blog.ID}, []hit{{blog.ID, 2}, {blog.ID, 1}}, 2},
		{"type content", Query{Text: "bridge", UserID: alice.ID, Types: []changedigest.ChangeType{changedigest.ChangeContent}}, []hit{{news.ID, 2}}, 1},
		{"type cosmetic", Query{Text: "thumb", UserID: alice.ID, Types: []changedigest.ChangeType{changedigest.ChangeCosmetic}}, []hit{{blog.ID, 2}}, 1},
		{"until before the update", Query{Text: "bridge", UserID: alice.ID, Until: t4.Add(-time.Minute)}, []hit{{news.ID, 1}}, 1},
		// The first bridge text was on the page from t1 until version 2 replaced it.
		{"since the update", Query{Text: "bridge", UserID: alice.ID, Since: t4}, []hit{{news.ID, 2}}, 1},
		{"range inside a segment's life", Query{Text: "council", UserID: alice.ID, Since: t5, Until: t5}, []hit{{news.ID, 1}}, 1},
		{"range before everything", Query{Text: "council", UserID: alice.ID, Until: t1.Add(-time.Hour)}, nil, 0},
		{"paging", Query{Text: "river bridge", UserID: AnyUser, Limit: 1, Offset: 1}, []hit{{bobs.ID, 1}}, 3},
		{"stop words only", Query{Text: "the of", UserID: alice.ID}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := f.s.Search(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []hit
			for _, h := range res.Hits {
				got = append(got, hit{h.WatchID, h.Seq})
			}
			if !reflect.DeepEqual(got, tc.want) || res.Total != tc.total {
				t.Errorf("hits = %v (total %d), want %v (total %d)", got, res.Total, tc.want, tc.total)
			}
		})
	}

	t.Run("hit fields", func(t *testing.T) {
		res, err := f.s.Search(ctx, Query{Text: "bridge repairs", UserID: alice.ID})
		if err != nil || len(res.Hits) != 2 {
			t.Fatalf("%+v, %v", res, err)
		}
		h := res.Hits[0] // version 2's bridge text, gone in version 3
		want := Hit{WatchID: news.ID, Seq: 2, Time: t4, Segment: 1, Path: "html|body|p[1]", Hash: s4.Segments[1].Hash,
			LastSeq: 2, LastSeen: t4, Types: []changedigest.ChangeType{changedigest.ChangeContent}}
		h.Snippet = Snippet{}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("hit = %+v\nwant %+v", h, want)
		}
		sn := res.Hits[0].Snippet
		if sn.Text != "The bridge reopened after repairs to the river wall" {
			t.Errorf("snippet text = %q", sn.Text)
		}
		var marked []string
		for _, m := range sn.Matches {
			marked = append(marked, sn.Text[m.Start:m.End])
		}
		if !reflect.DeepEqual(marked, []string{"bridge", "repairs"}) {
			t.Errorf("marked %q", marked)
		}
		if got := sn.HTML(); got != "The <mark>bridge</mark> reopened after <mark>repairs</mark> to the river wall" {
			t.Errorf("HTML = %q", got)
		}
		live, err := f.s.Search(ctx, Query{Text: "council", UserID: alice.ID})
		if err != nil || len(live.Hits) != 1 || live.Hits[0].LastSeq != 0 || !live.Hits[0].LastSeen.IsZero() || live.Hits[0].Types != nil {
			t.Errorf("a segment still on the page: %+v, %v", live, err)
		}
	})

	t.Run("page text is escaped", func(t *testing.T) {
		res, err := f.s.Search(ctx, Query{Text: "evolution", UserID: alice.ID})
		if err != nil || len(res.Hits) != 1 {
			t.Fatalf("%+v, %v", res, err)
		}
		got := res.Hits[0].Snippet.HTML()
		want := `<mark>Evolution</mark> of the panda&#39;s thumb: 5 &lt; 6 &amp; &#34;quotes&#34;`
		if got != want {
			t.Errorf("HTML = %q\nwant %q", got, want)
		}
	})

	errs := []struct {
		name string
		q    Query
		code string
	}{
		{"empty", Query{Text: "  ", UserID: alice.ID}, changedigest.EINVALID},
		{"too long", Query{Text: strings.Repeat("a", 1001), UserID: alice.ID}, changedigest.EINVALID},
		{"bad type", Query{Text: "a", UserID: alice.ID, Types: []changedigest.ChangeType{"weird"}}, changedigest.EINVALID},
		{"bad offset", Query{Text: "a", UserID: alice.ID, Offset: -1}, changedigest.EINVALID},
		{"another user's watch", Query{Text: "bridge", UserID: bob.ID, WatchID: news.ID}, changedigest.ENOTFOUND},
	}
	for _, tc := range errs {
		t.Run("error/"+tc.name, func(t *testing.T) {
			_, err := f.s.Search(ctx, tc.q)
			if changedigest.ErrorCode(err) != tc.code {
				t.Errorf("error %v, want code %s", err, tc.code)
			}
		})
	}
}

func TestSearchReappearing(t *testing.T) {
	// A rotating block that comes back is one document, live again.
	f := newFixture(t)
	ctx := context.Background()
	f.add(t, f.watch.ID, page("banner aardvark"))
	f.add(t, f.watch.ID, page("banner buffalo"))
	f.add(t, f.watch.ID, page("banner aardvark"))
	res, err := f.s.Search(ctx, Query{Text: "aardvark", UserID: f.user.ID})
	if err != nil || res.Total != 1 || res.Hits[0].Seq != 1 || res.Hits[0].LastSeq != 0 {
		t.Errorf("reappearing segment: %+v, %v", res, err)
	}
	res, err = f.s.Search(ctx, Query{Text: "buffalo", UserID: f.user.ID})
	if err != nil || res.Total != 1 || res.Hits[0].Seq != 2 || res.Hits[0].LastSeq != 2 {
		t.Errorf("rotated-out segment: %+v, %v", res, err)
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor ", 30) + "NEEDLE" + strings.Repeat(" sit amet", 40)
	at := strings.Index(long, "NEEDLE")
	tests := []struct {
		name    string
		text    string
		spans   []Span
		want    string
		matches []string
	}{
		{"short", "a  b\n\tc", nil, "a b c", nil},
		{"match at start", "hello world", []Span{{0, 5}}, "hello world", []string{"hello"}},
		{"cut around a late match", long, []Span{{at, at + 6}},
			"… lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor NEEDLE sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit amet sit …",
			[]string{"NEEDLE"}},
		{"multibyte", "ünïcödé wörds ünd mörë", []Span{{len("ünïcödé "), len("ünïcödé wörds")}}, "ünïcödé wörds ünd mörë", []string{"wörds"}},
		{"invalid utf-8", "a\xffb word", []Span{{4, 8}}, "a\uFFFDb word", []string{"word"}},
		{"span past the window", "abc", []Span{{1, 9}}, "abc", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sn := makeSnippet(tc.text, tc.spans)
			if sn.Text != tc.want {
				t.Errorf("text = %q\nwant %q", sn.Text, tc.want)
			}
			var got []string
			for _, m := range sn.Matches {
				got = append(got, sn.Text[m.Start:m.End])
			}
			if !reflect.DeepEqual(got, tc.matches) {
				t.Errorf("matches = %q, want %q", got, tc.matches)
			}
		})
	}
}

func FuzzSnippet(f *testing.F) {
	f.Add("hello brave new world", 6, 11)
	f.Add("a\xff\xfe b", 0, 3)
	f.Fuzz(func(t *testing.T, text string, start, end int) {
		var spans []Span
		if start >= 0 && end >= start && end <= len(text) {
			spans = []Span{{start, end}}
		}
		sn := makeSnippet(text, spans)
		prev := 0
		for _, m := range sn.Matches {
			if m.Start < prev || m.End < m.Start || m.End > len(sn.Text) {
				t.Fatalf("bad match %+v in %q", m, sn.Text)
			}
			prev = m.End
		}
		if h := sn.HTML(); strings.ContainsAny(strings.NewReplacer("<mark>", "", "</mark>", "").Replace(h), "<>") {
			t.Fatalf("HTML %q has unescaped markup", h)
		}
	})
}

func TestSearchClosed(t *testing.T) {
	f := newFixture(t)
	f.s.Close()
	_, err := f.s.Search(context.Background(), Query{Text: "x", UserID: f.user.ID})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("search on a closed store: %v", err)
	}
}

// TestSearchTiesInOrder: the segments of one version share their first
// time; both orders (fOrder, and fSort then the ID) put them in the same
// order, ID descending, over pages of hits.
func TestSearchTiesInOrder(t *testing.T) {
	legacy := func(s *Store) {
		idx, err := s.newIndex(filepath.Join(s.Dir, indexDir), legacyMapping(fSort))
		if err != nil {
			t.Fatal(err)
		}
		idx.Close()
	}
	var orders [2][]int
	for k, f := range []*fixture{newFixture(t), newFixture(t, legacy)} {
		var paras []string
		for i := range 12 {
			paras = append(paras, fmt.Sprintf("Lantern number %d hangs over the harbour gate", i))
		}
		f.add(t, f.watch.ID, page(paras...))
		for off := 0; off < 12; off += 5 {
			res, err := f.s.Search(context.Background(), Query{Text: "lantern", UserID: f.user.ID, Limit: 5, Offset: off})
			if err != nil || res.Total != 12 {
				t.Fatalf("search: %+v, %v", res, err)
			}
			for _, h := range res.Hits {
				orders[k] = append(orders[k], h.Segment)
			}
		}
	}
	if len(orders[0]) != 12 || !reflect.DeepEqual(orders[0], orders[1]) {
		t.Fatalf("segments in order %v, in an index made before %v", orders[0], orders[1])
	}
	if slices.IsSorted(orders[0]) {
		t.Errorf("ties in the order segments were stored (%v): the test does not tell orders apart", orders[0])
	}
}

// byteTimes are the first times of versions of as many watches, oldest
// first, whose nanoseconds hold the byte 0xFF in various places: Bleve's
// doc values split a term at that byte.
var byteTimes = func() []time.Time {
	base := int64(0x18d0_0000_0000_0000) // in 2026
	var ts []time.Time
	for _, ns := range []int64{0xfe, 0xff, 0x100, 0xff00, 0xff01, 0x1_0000, 0xff_0000_0000, 0x100_0000_0000} {
		ts = append(ts, time.Unix(0, base+ns))
	}
	return ts
}()

// addAtByteTimes stores a version of a new watch at each of byteTimes and
// returns the watches newest first.
func addAtByteTimes(t *testing.T, f *fixture) []int64 {
	var ids []int64
	for i, at := range byteTimes {
		w := f.mustWatch(t, f.user.ID, fmt.Sprintf("https://example.org/%d", i))
		body := page(fmt.Sprintf("Lantern number %d hangs over the harbour gate", i))
		snap := snapshotOf([]byte(body))
		snap.FetchedAt = at
		if _, err := f.s.AddVersion(context.Background(), w.ID, snap, []byte(body)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	slices.Reverse(ids)
	return ids
}

// searchInPages lists the watches of the hits for "lantern", three hits a
// page.
func searchInPages(t *testing.T, f *fixture) []int64 {
	var got []int64
	for off := 0; off < len(byteTimes); off += 3 {
		res, err := f.s.Search(context.Background(), Query{Text: "lantern", UserID: f.user.ID, Limit: 3, Offset: off})
		if err != nil || res.Total != len(byteTimes) {
			t.Fatalf("search: %+v, %v", res, err)
		}
		for _, h := range res.Hits {
			got = append(got, h.WatchID)
		}
	}
	return got
}

// TestSearchNewestFirstWhateverTheTime: hits are newest first, page after
// page, whatever bytes their times' nanoseconds hold.
func TestSearchNewestFirstWhateverTheTime(t *testing.T) {
	f := newFixture(t)
	want := addAtByteTimes(t, f)
	if got := searchInPages(t, f); !slices.Equal(got, want) {
		t.Errorf("watches of the hits %v, want %v", got, want)
	}
}

// TestIndexMadeWithOrderRebuilt: an index made with fOrder, which sorted
// some times wrongly, is rebuilt when opened, and orders every hit.
func TestIndexMadeWithOrderRebuilt(t *testing.T) {
	f := newFixture(t, func(s *Store) {
		idx, err := s.newIndex(filepath.Join(s.Dir, indexDir), legacyMapping(fOrder))
		if err != nil {
			t.Fatal(err)
		}
		idx.Close()
		s.DeferIndex = true // the index is opened by the first search
	})
	want := addAtByteTimes(t, f)
	if got := searchInPages(t, f); !slices.Equal(got, want) {
		t.Errorf("watches of the hits %v, want %v", got, want)
	}
	if got := newestFirst(f.s.idx.Mapping()); !slices.Equal(got, []string{"-" + fNewest}) {
		t.Errorf("the index opened sorts by %v", got)
	}
}

// TestCompareHitsMergesStores: the hits of several stores, each holding
// its own watches, merged by a stable sort on CompareHits, come in the
// order one store holding them all lists them, ties of one time included
// (watch IDs of one and two digits, two segments a version).
func TestCompareHitsMergesStores(t *testing.T) {
	f := newFixture(t)
	at := f.clock.Add(time.Hour)
	for i := range 12 {
		w := f.mustWatch(t, f.user.ID, fmt.Sprintf("https://example.org/%d", i))
		body := page(fmt.Sprintf("Lantern number %d hangs over the gate", i), fmt.Sprintf("Lantern %d is lit at dusk", i))
		snap := snapshotOf([]byte(body))
		snap.FetchedAt = at
		if i%3 == 0 {
			snap.FetchedAt = at.Add(time.Duration(i)) // not all ties
		}
		if _, err := f.s.AddVersion(context.Background(), w.ID, snap, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := f.s.Search(context.Background(), Query{Text: "lantern", UserID: f.user.ID, Limit: 100})
	if err != nil || len(res.Hits) != 24 {
		t.Fatalf("search: %+v, %v", res, err)
	}
	// Two stores: the watches of odd IDs, then those of even ones.
	var merged []Hit
	for _, odd := range []int64{1, 0} {
		for _, h := range res.Hits {
			if h.WatchID%2 == odd {
				merged = append(merged, h)
			}
		}
	}
	slices.SortStableFunc(merged, CompareHits)
	key := func(hs []Hit) (k []string) {
		for _, h := range hs {
			k = append(k, fmt.Sprintf("%d/%d", h.WatchID, h.Segment))
		}
		return k
	}
	if got, want := key(merged), key(res.Hits); !slices.Equal(got, want) {
		t.Errorf("merged %v\none store %v", got, want)
	}
}
