package pet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// page builds a small HTML page with one <p> per paragraph.
func page(paras ...string) string {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html><head><title>Test page</title></head>\n<body>\n")
	for _, p := range paras {
		b.WriteString("  <p>" + p + "</p>\n")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// words returns n pseudo-random words from a small vocabulary, seeded.
func words(seed uint64, n int) string {
	vocab := strings.Fields(`the council voted budget river bridge school library opened closed
		museum garden harvest election market train station weather storm summer winter report
		evolution fossil panda thumb science creationism court ruling teacher student paper`)
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[r.IntN(len(vocab))]
	}
	return strings.Join(out, " ")
}

// sameSnapshot compares a stored snapshot with what was added.
func sameSnapshot(t *testing.T, got, want *changedigest.Snapshot) {
	t.Helper()
	if !got.FetchedAt.Equal(want.FetchedAt) {
		t.Errorf("FetchedAt = %v, want %v", got.FetchedAt, want.FetchedAt)
	}
	g, w := *got, *want
	g.FetchedAt, w.FetchedAt = time.Time{}, time.Time{}
	if len(w.Layout) == 0 {
		w.Layout = nil
	}
	if len(w.Changes) == 0 {
		w.Changes = nil
	}
	if len(w.Segments) == 0 {
		w.Segments = nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("stored snapshot differs:\n got %+v\nwant %+v", g, w)
	}
}

func TestRoundTrip(t *testing.T) {
	big := []byte(strings.Repeat(words(1, 3000)+"\n", 8)) // ~150 KB, no ranges
	bin := make([]byte, 5000)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	one := 1
	tests := []struct {
		name string
		body []byte
		snap func(body []byte) *changedigest.Snapshot
	}{
		{"paragraphs", []byte(page("one fish", "two fish", "red fish", "blue fish")), snapshotOf},
		{"empty body", nil, func([]byte) *changedigest.Snapshot { return &changedigest.Snapshot{Status: 304} }},
		{"no byte ranges", big, func(b []byte) *changedigest.Snapshot {
			return &changedigest.Snapshot{Segments: []changedigest.Segment{
				{Index: 0, Hash: "h0", Text: "first", Start: -1, End: -1},
				{Index: 1, Hash: "h1", Text: "second", Start: -1, End: -1}}}
		}},
		{"binary body", bin, func(b []byte) *changedigest.Snapshot {
			return &changedigest.Snapshot{Segments: []changedigest.Segment{
				{Index: 0, Hash: "a", Start: 0, End: 100}, {Index: 1, Hash: "b", Start: 100, End: 100},
				{Index: 2, Hash: "c", Start: 4000, End: 5000}}}
		}},
		{"one large segment", big, func(b []byte) *changedigest.Snapshot {
			return &changedigest.Snapshot{Segments: []changedigest.Segment{
				{Index: 0, Hash: "all", Text: "everything", Start: 10, End: len(b) - 10}}}
		}},
		{"some ranges unknown", []byte(page("a", "b", "c")), func(b []byte) *changedigest.Snapshot {
			s := snapshotOf(b)
			s.Segments[1].Start, s.Segments[1].End = -1, -1
			return s
		}},
		{"repeated segment", []byte(page("same", "same", "other")), snapshotOf},
		{"everything set", []byte(page("x <b>y</b> &amp; z", "w")), func(b []byte) *changedigest.Snapshot {
			s := snapshotOf(b)
			s.ETag, s.LastModified, s.FinalURL, s.Title = `"abc"`, "Mon, 02 Jun 2025 10:00:00 GMT", "https://example.org/final", "Test page"
			s.Zone = "main > article"
			s.Layout = []byte("layout: p p")
			s.Similarity = 0.75
			s.Segments[1].Index = 7
			s.Changes = []changedigest.Change{{Segment: 1, Path: "html|body|p[1]", Type: changedigest.ChangeContent,
				Op: changedigest.OpUpdate, OldText: "v", NewText: "w", OldItem: &one, Title: "t"}}
			return s
		}},
		{"noise and significance", []byte(page("a", "b")), func(b []byte) *changedigest.Snapshot {
			s := snapshotOf(b)
			s.Significance = 0.125
			s.Print = &changedigest.TextPrint{Version: 1, MainWords: 40, AllWords: 1 << 20, MainHash: 0xdeadbeefcafe, AllHash: 1<<63 | 7}
			s.Changes = []changedigest.Change{
				{Segment: 0, Path: "html|body|p", Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "1 view", NewText: "2 views",
					Noise: "volatile location: changes at 19 of the last 20 checks"},
				{Segment: 1, Path: "html|body|p[1]", Type: changedigest.ChangeContent, Op: changedigest.OpInsert, NewText: "b"}}
			return s
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			snap := tc.snap(tc.body)
			want := *snap
			seq, err := f.s.AddVersion(ctx, f.watch.ID, snap, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if seq != 1 || snap.Seq != 1 || snap.WatchID != f.watch.ID {
				t.Errorf("seq = %d, snap.Seq = %d, snap.WatchID = %d", seq, snap.Seq, snap.WatchID)
			}
			want.WatchID, want.Seq, want.Size, want.FetchedAt = f.watch.ID, 1, len(tc.body), snap.FetchedAt
			got, err := f.s.Version(ctx, f.watch.ID, 1)
			if err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, got, &want)
			body, err := f.s.Body(ctx, f.watch.ID, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(body, tc.body) {
				t.Errorf("body differs: got %d bytes, want %d", len(body), len(tc.body))
			}
		})
	}
}

// TestRoundTripManyVersions stores versions whose segments change,
// move, flip back and repeat, and reads every one back.
func TestRoundTripManyVersions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	paras := make([]string, 12)
	for i := range paras {
		paras[i] = words(uint64(i), 12)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var bodies []string
	var snaps []*changedigest.Snapshot
	for v := range 30 {
		switch r.IntN(4) {
		case 0: // edit one paragraph
			paras[r.IntN(len(paras))] = words(uint64(100+v), 12)
		case 1: // move one
			i, j := r.IntN(len(paras)), r.IntN(len(paras))
			paras[i], paras[j] = paras[j], paras[i]
		case 2: // banner flips back to an earlier text
			paras[0] = words(uint64(v%2), 12)
		}
		body := page(paras...)
		snap, _ := f.add(t, f.watch.ID, body)
		cp := *snap
		bodies, snaps = append(bodies, body), append(snaps, &cp)
	}
	for i, want := range snaps {
		got, err := f.s.Version(ctx, f.watch.ID, i+1)
		if err != nil {
			t.Fatal(err)
		}
		sameSnapshot(t, got, want)
		body, err := f.s.Body(ctx, f.watch.ID, i+1)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != bodies[i] {
			t.Errorf("version %d: body differs", i+1)
		}
	}
}

func TestTextOverride(t *testing.T) {
	// The same hash with another text (a segmenter normalising text the
	// hash ignores) still reads back exactly.
	f := newFixture(t)
	ctx := context.Background()
	body := []byte(page("alpha"))
	for i, text := range []string{"alpha", "alpha  "} {
		snap := snapshotOf(body)
		snap.Segments[0].Text = text
		if _, err := f.s.AddVersion(ctx, f.watch.ID, snap, body); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.Version(ctx, f.watch.ID, i+1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Segments[0].Text != text {
			t.Errorf("version %d text = %q, want %q", i+1, got.Segments[0].Text, text)
		}
	}
}

// TestFeedItemsKept stores versions of a feed with and without an item
// count past the item limit: each reads back as stored.
func TestFeedItemsKept(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, items := range []int{40000, 0, 2500} {
		body := []byte(page(fmt.Sprintf("version %d", i)))
		snap := snapshotOf(body)
		snap.Kind, snap.FeedItems = changedigest.KindFeed, items
		if _, err := f.s.AddVersion(ctx, f.watch.ID, snap, body); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.Version(ctx, f.watch.ID, i+1)
		if err != nil {
			t.Fatal(err)
		}
		if got.FeedItems != items || got.Segments[0].Text != snap.Segments[0].Text {
			t.Errorf("version %d: FeedItems %d, text %q; want %d, %q", i+1, got.FeedItems, got.Segments[0].Text, items, snap.Segments[0].Text)
		}
	}
}

// TestValueKept stores versions with and without a value: each reads
// back as stored, whole and in the version list (headers alone).
func TestValueKept(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	n, prev := 19.5, 24.0
	values := []*changedigest.Value{
		{Text: "19,50 €", Number: &n, Currency: "EUR", PrevNumber: &prev, Base: &prev},
		nil,
		{Error: `the value selector ".price" matched nothing`, PrevNumber: &n},
		{Text: "Auf Lager", Avail: changedigest.AvailInStock, PrevAvail: changedigest.AvailOutOfStock},
	}
	for i, v := range values {
		body := []byte(page(fmt.Sprintf("version %d", i)))
		snap := snapshotOf(body)
		snap.Value = v
		if _, err := f.s.AddVersion(ctx, f.watch.ID, snap, body); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.Version(ctx, f.watch.ID, i+1)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Value, v) || got.Segments[0].Text != snap.Segments[0].Text {
			t.Errorf("version %d: value %+v, want %+v", i+1, got.Value, v)
		}
	}
	list, err := f.s.Versions(ctx, f.watch.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if want := values[s.Seq-1]; !reflect.DeepEqual(s.Value, want) {
			t.Errorf("listed version %d: value %+v, want %+v", s.Seq, s.Value, want)
		}
	}
}

func TestChunkDedup(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	paras := make([]string, 20)
	for i := range paras {
		paras[i] = words(uint64(i), 40)
	}
	stats := func() Stats {
		t.Helper()
		st, err := f.s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	f.add(t, f.watch.ID, page(paras...))
	s1 := stats()
	// 20 paragraphs, the head, the tail and the gap between paragraphs
	// (the same bytes each time, so stored once).
	if s1.Chunks != 20+3 {
		t.Errorf("first version: %d chunks, want 23", s1.Chunks)
	}
	paras[7] = words(99, 40)
	f.add(t, f.watch.ID, page(paras...))
	s2 := stats()
	if d := s2.Chunks - s1.Chunks; d != 1 {
		t.Errorf("one changed paragraph added %d chunks, want 1", d)
	}
	if d := s2.ChunkBytes - s1.ChunkBytes; d > int64(len(paras[7])) {
		t.Errorf("one changed paragraph added %d chunk bytes, more than its %d raw bytes", d, len(paras[7]))
	}
	if d := s2.Segments - s1.Segments; d != 1 {
		t.Errorf("one changed paragraph added %d segment records, want 1", d)
	}
	f.add(t, f.watch.ID, page(paras...))
	if s3 := stats(); s3.Chunks != s2.Chunks || s3.ChunkBytes != s2.ChunkBytes || s3.Segments != s2.Segments {
		t.Errorf("an unchanged version added chunks or segments: %+v then %+v", s2, s3)
	}
	// Another watch of the same page shares the chunks.
	w2 := f.mustWatch(t, f.user.ID, "https://example.org/copy")
	f.add(t, w2.ID, page(paras...))
	if s4 := stats(); s4.Chunks != s2.Chunks {
		t.Errorf("the same page in another watch added %d chunks", s4.Chunks-s2.Chunks)
	}
}

func TestHistory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var rows [][]string
	for v := range 7 {
		snap, _ := f.add(t, f.watch.ID, page(words(uint64(v), 5), "constant", words(uint64(v%2), 5)))
		rows = append([][]string{snap.Hashes()}, rows...)
	}
	tests := []struct {
		name string
		m    int
		want [][]string
	}{
		{"default m", 0, rows[:5]},
		{"m=3", 3, rows[:3]},
		{"m larger than the track", 20, rows},
		{"m=1", 1, rows[:1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.s.History(ctx, f.watch.ID, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("History(%d) = %v, want %v", tc.m, got, tc.want)
			}
		})
	}
	w2 := f.mustWatch(t, f.user.ID, "https://example.org/new")
	if got, err := f.s.History(ctx, w2.ID, 0); err != nil || len(got) != 0 {
		t.Errorf("History of a new watch = %v, %v; want no rows", got, err)
	}
	_, err := f.s.History(ctx, 999, 0)
	if !errors.Is(err, ErrNotFound) || changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("History of an unknown watch: %v (code %q)", err, changedigest.ErrorCode(err))
	}
}

func TestVersionsPaging(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for v := range 12 {
		f.add(t, f.watch.ID, page(words(uint64(v), 5)))
	}
	var seqs []int
	before := 0
	for {
		rows, err := f.s.Versions(ctx, f.watch.ID, before, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			seqs = append(seqs, r.Seq)
			if len(r.Segments) != 1 || r.Segments[0].Hash == "" || r.Segments[0].Text != "" {
				t.Errorf("version %d: light row segments = %+v", r.Seq, r.Segments)
			}
		}
		before = rows[len(rows)-1].Seq
	}
	want := []int{12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	if !reflect.DeepEqual(seqs, want) {
		t.Errorf("paged seqs = %v, want %v", seqs, want)
	}
	info, err := f.s.Track(ctx, f.watch.ID)
	if err != nil || info.Versions != 12 || info.Oldest != 1 || info.Latest != 12 {
		t.Errorf("Track = %+v, %v", info, err)
	}
	latest, err := f.s.Latest(ctx, f.watch.ID)
	if err != nil || latest.Seq != 12 {
		t.Errorf("Latest = %v, %v", latest, err)
	}
	w2 := f.mustWatch(t, f.user.ID, "https://example.org/empty")
	if _, err := f.s.Latest(ctx, w2.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Latest of a watch without versions: %v, want ErrNotFound", err)
	}
	if _, err := f.s.Version(ctx, f.watch.ID, 13); !errors.Is(err, ErrNotFound) {
		t.Errorf("Version 13: %v, want ErrNotFound", err)
	}
}

func TestAddVersionRejects(t *testing.T) {
	body := []byte(page("a", "b"))
	tests := []struct {
		name string
		snap func() *changedigest.Snapshot
		body []byte
		code string
	}{
		{"nil snapshot", func() *changedigest.Snapshot { return nil }, body, changedigest.EINVALID},
		{"segment without hash", func() *changedigest.Snapshot {
			s := snapshotOf(body)
			s.Segments[0].Hash = ""
			return s
		}, body, changedigest.EINVALID},
		{"range past the end", func() *changedigest.Snapshot {
			s := snapshotOf(body)
			s.Segments[1].End = len(body) + 1
			return s
		}, body, changedigest.EINVALID},
		{"ranges out of order", func() *changedigest.Snapshot {
			s := snapshotOf(body)
			s.Segments[0], s.Segments[1] = s.Segments[1], s.Segments[0]
			return s
		}, body, changedigest.EINVALID},
		{"negative start", func() *changedigest.Snapshot {
			s := snapshotOf(body)
			s.Segments[0].Start = -1
			return s
		}, body, changedigest.EINVALID},
		{"body too large", func() *changedigest.Snapshot { return &changedigest.Snapshot{} }, make([]byte, 2000), changedigest.ETOOLARGE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(s *Store) { s.MaxBodySize = 1000 })
			_, err := f.s.AddVersion(context.Background(), f.watch.ID, tc.snap(), tc.body)
			if code := changedigest.ErrorCode(err); code != tc.code {
				t.Fatalf("error %v has code %q, want %q", err, code, tc.code)
			}
			if !strings.HasPrefix(err.Error(), "pet: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if info, _ := f.s.Track(context.Background(), f.watch.ID); info.Versions != 0 {
				t.Errorf("a rejected version was stored: %+v", info)
			}
		})
	}
	f := newFixture(t)
	_, err := f.s.AddVersion(context.Background(), 999, snapshotOf(body), body)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("AddVersion to an unknown watch: %v", err)
	}
}

func TestChanges(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	news := f.watch // alice, tag news
	blog := f.mustWatch(t, f.user.ID, "https://example.org/blog", "blog")
	bobs := f.mustWatch(t, bob.ID, "https://example.net/", "news")
	change := func(typ changedigest.ChangeType) changedigest.Change {
		return changedigest.Change{Segment: 0, Type: typ, Op: changedigest.OpUpdate, NewText: string(typ)}
	}
	type ev struct {
		watch int64
		seq   int
	}
	// Each watch: a first version (no change), then versions with changes.
	var times []time.Time
	add := func(w *changedigest.Watch, v int, cs ...changedigest.Change) {
		snap, _ := f.add(t, w.ID, page(words(uint64(v), 4)), cs...)
		times = append(times, snap.FetchedAt)
	}
	add(news, 0)                                        // t0 news#1
	add(blog, 1)                                        // t1 blog#1
	add(bobs, 2)                                        // t2 bob#1
	add(news, 3, change(changedigest.ChangeContent))    // t3 news#2
	add(blog, 4, change(changedigest.ChangeCosmetic))   // t4 blog#2
	add(bobs, 5, change(changedigest.ChangeContent))    // t5 bob#2
	add(news, 6, change(changedigest.ChangeStructural), // t6 news#3
		change(changedigest.ChangeContent)) //
	add(news, 7)                                         // t7 news#4, no change
	add(blog, 8, change(changedigest.ChangeBehavioural)) // t8 blog#3

	tests := []struct {
		name   string
		filter ChangeFilter
		want   []ev
	}{
		{"user", ChangeFilter{UserID: f.user.ID}, []ev{{blog.ID, 3}, {news.ID, 3}, {blog.ID, 2}, {news.ID, 2}}},
		{"other user", ChangeFilter{UserID: bob.ID}, []ev{{bobs.ID, 2}}},
		{"all users", ChangeFilter{UserID: AnyUser}, []ev{{blog.ID, 3}, {news.ID, 3}, {bobs.ID, 2}, {blog.ID, 2}, {news.ID, 2}}},
		{"watch", ChangeFilter{UserID: f.user.ID, WatchID: news.ID}, []ev{{news.ID, 3}, {news.ID, 2}}},
		{"tag", ChangeFilter{UserID: f.user.ID, Tag: " Blog "}, []ev{{blog.ID, 3}, {blog.ID, 2}}},
		{"since", ChangeFilter{UserID: f.user.ID, Since: times[4]}, []ev{{blog.ID, 3}, {news.ID, 3}, {blog.ID, 2}}},
		{"until", ChangeFilter{UserID: f.user.ID, Until: times[4]}, []ev{{blog.ID, 2}, {news.ID, 2}}},
		{"range", ChangeFilter{UserID: f.user.ID, Since: times[4], Until: times[6]}, []ev{{news.ID, 3}, {blog.ID, 2}}},
		{"type", ChangeFilter{UserID: f.user.ID, Types: []changedigest.ChangeType{changedigest.ChangeContent}}, []ev{{news.ID, 3}, {news.ID, 2}}},
		{"types", ChangeFilter{UserID: f.user.ID, Types: []changedigest.ChangeType{changedigest.ChangeCosmetic, changedigest.ChangeBehavioural}}, []ev{{blog.ID, 3}, {blog.ID, 2}}},
		{"limit", ChangeFilter{UserID: f.user.ID, Limit: 1}, []ev{{blog.ID, 3}}},
		{"all users, watch", ChangeFilter{WatchID: bobs.ID}, []ev{{bobs.ID, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.s.Changes(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			var evs []ev
			for _, e := range got {
				evs = append(evs, ev{e.Watch.ID, e.Version.Seq})
				if len(e.Version.Changes) == 0 {
					t.Errorf("event %d/%d has no changes", e.Watch.ID, e.Version.Seq)
				}
				if len(tc.filter.Types) > 0 {
					for _, c := range e.Version.Changes {
						if !typesHave(tc.filter.Types, c.Type) {
							t.Errorf("event %d/%d keeps a %s change", e.Watch.ID, e.Version.Seq, c.Type)
						}
					}
				}
			}
			if !reflect.DeepEqual(evs, tc.want) {
				t.Errorf("events = %v, want %v", evs, tc.want)
			}
			// The same listing without the versions.
			refsFilter := tc.filter
			refsFilter.Refs = true
			refs, err := f.s.Changes(ctx, refsFilter)
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) != len(got) {
				t.Fatalf("with Refs: %d events, want %d", len(refs), len(got))
			}
			for i, r := range refs {
				want := changedigest.Snapshot{WatchID: got[i].Watch.ID, Seq: got[i].Version.Seq, FetchedAt: got[i].Version.FetchedAt}
				if r.Watch.ID != got[i].Watch.ID || !reflect.DeepEqual(r.Version, want) {
					t.Errorf("with Refs: event %d is %d/%+v, want %d/%+v", i, r.Watch.ID, r.Version, got[i].Watch.ID, want)
				}
			}
		})
	}
	// Versions listed with some of their changes (Types) are kept whole.
	all, err := f.s.Changes(ctx, ChangeFilter{UserID: f.user.ID, WatchID: news.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || len(all[0].Version.Changes) != 2 {
		t.Errorf("news#3 after listings by type: %+v, want its 2 changes", all)
	}
	_, err = f.s.Changes(ctx, ChangeFilter{UserID: bob.ID, WatchID: news.ID})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("changes of another user's watch: %v, want ErrNotFound", err)
	}
}

// TestChangesRefsKept checks that a listing with Refs is shared until
// the store's next write, and read again after it.
func TestChangesRefsKept(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.add(t, f.watch.ID, page(words(1, 4)))
	f.add(t, f.watch.ID, page(words(2, 4)), changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: "x"})
	filter := ChangeFilter{UserID: f.user.ID, Refs: true}
	a, err := f.s.Changes(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.s.Changes(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || len(b) != 1 || &a[0] != &b[0] {
		t.Fatalf("two listings with no write between: %d and %d events, shared %v", len(a), len(b), len(a) == 1 && len(b) == 1 && &a[0] == &b[0])
	}
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, f.watch.ID, func(w *changedigest.Watch) error {
		w.Title = "Renamed"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := f.s.Changes(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 1 || &c[0] == &a[0] || c[0].Watch.Title != "Renamed" {
		t.Fatalf("after a write: %+v, want a new listing with the new title", c)
	}
}

func typesHave(ts []changedigest.ChangeType, t changedigest.ChangeType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func TestRetention(t *testing.T) {
	tests := []struct {
		name       string
		keepN      int // watch limit
		keepD      int
		versions   int
		step       time.Duration
		wantOldest int
	}{
		{"keep 10 of 25", 10, 0, 25, time.Hour, 16},
		{"keep 2, matrix keeps 5", 2, 0, 12, time.Hour, 8},
		{"keep 7 days of daily versions", 0, 7, 12, 24 * time.Hour, 5},
		{"keep 1 day, matrix keeps 5", 0, 1, 12, 24 * time.Hour, 8},
		{"no limit", 0, 0, 12, time.Hour, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(s *Store) { s.KeepVersions, s.KeepDays = 0, 0 })
			ctx := context.Background()
			if _, err := f.s.UpdateWatch(ctx, f.user.ID, f.watch.ID, func(w *changedigest.Watch) error {
				w.KeepVersions, w.KeepDays = tc.keepN, tc.keepD
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			paras := []string{"constant header", words(1, 6), words(2, 6), "constant footer"}
			bodies := map[int]string{}
			for v := 1; v <= tc.versions; v++ {
				paras[1+v%2] = fmt.Sprintf("version %d says %s", v, words(uint64(v), 5))
				snap := snapshotOf([]byte(page(paras...)))
				snap.FetchedAt = f.clock.Add(tc.step)
				if _, err := f.s.AddVersion(ctx, f.watch.ID, snap, []byte(page(paras...))); err != nil {
					t.Fatal(err)
				}
				bodies[v] = page(paras...)
			}
			info, err := f.s.Track(ctx, f.watch.ID)
			if err != nil {
				t.Fatal(err)
			}
			if info.Oldest != tc.wantOldest || info.Latest != tc.versions {
				t.Fatalf("track = %+v, want versions %d..%d", info, tc.wantOldest, tc.versions)
			}
			if rows, _ := f.s.History(ctx, f.watch.ID, 0); len(rows) != 5 {
				t.Errorf("matrix has %d rows, want 5", len(rows))
			}
			checkTrack(t, f.s, f.watch.ID, bodies)
			// Text of removed versions is no longer found; text that lives on is,
			// at its oldest stored version.
			for v := 1; v <= tc.versions; v++ {
				res, err := f.s.Search(ctx, Query{Text: fmt.Sprintf(`"version %d says"`, v), UserID: f.user.ID})
				if err != nil {
					t.Fatal(err)
				}
				// Version v's text is in v and v+1 (it alternates between two paragraphs).
				present := v+1 >= tc.wantOldest
				if present != (len(res.Hits) == 1) {
					t.Errorf("search for version %d's text: %d hits, want present=%v", v, len(res.Hits), present)
				} else if present && res.Hits[0].Seq != max(v, tc.wantOldest) {
					t.Errorf("version %d's text first seen at %d, want %d", v, res.Hits[0].Seq, max(v, tc.wantOldest))
				}
			}
			res, err := f.s.Search(ctx, Query{Text: "constant header", UserID: f.user.ID})
			if err != nil || len(res.Hits) != 1 || res.Hits[0].Seq != tc.wantOldest {
				t.Errorf("constant text: %+v, %v; want one hit at %d", res, err, tc.wantOldest)
			}
		})
	}
}

// checkTrack checks that the store is sound (Check) and holds what the
// listed versions need: every body reads back (as given in bodies, when
// there), and there is one segment record per distinct hash.
func checkTrack(t *testing.T, s *Store, watchID int64, bodies map[int]string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Check(ctx); err != nil {
		t.Errorf("check: %v", err)
	}
	info, err := s.Track(ctx, watchID)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]bool{}
	for seq := info.Oldest; info.Latest > 0 && seq <= info.Latest; seq++ {
		body, err := s.Body(ctx, watchID, seq)
		if err != nil {
			t.Fatalf("version %d: %v", seq, err)
		}
		if want, ok := bodies[seq]; ok && string(body) != want {
			t.Errorf("version %d: body differs", seq)
		}
		snap, err := s.Version(ctx, watchID, seq)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range snap.Hashes() {
			hashes[h] = true
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Watches == 1 && st.Segments != len(hashes) {
		t.Errorf("store holds %d segment records, the stored versions have %d distinct hashes", st.Segments, len(hashes))
	}
	if st.IndexDocs > uint64(st.Segments) {
		t.Errorf("index holds %d documents for %d segments", st.IndexDocs, st.Segments)
	}
}

func TestPrune(t *testing.T) {
	f := newFixture(t, func(s *Store) { s.KeepVersions, s.KeepDays = 0, 7 })
	ctx := context.Background()
	for v := range 10 {
		f.add(t, f.watch.ID, page(words(uint64(v), 5)))
	}
	if n, err := f.s.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune = %d, %v; want nothing to remove yet", n, err)
	}
	f.clock.Add(30 * 24 * time.Hour)
	n, err := f.s.Prune(ctx)
	if err != nil || n != 5 {
		t.Fatalf("Prune a month later = %d, %v; want 5 (the matrix keeps 5)", n, err)
	}
	checkTrack(t, f.s, f.watch.ID, nil)
}

func TestDeleteWatch(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other := f.mustWatch(t, f.user.ID, "https://example.org/other")
	f.add(t, other.ID, page("shared paragraph", "other zebra"))
	for v := range 5 {
		f.add(t, f.watch.ID, page("shared paragraph", words(uint64(v), 5), "giraffe"))
	}
	bob := f.mustUser(t, "bob")
	if err := f.s.DeleteWatch(ctx, bob.ID, f.watch.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting another user's watch: %v, want ErrNotFound", err)
	}
	if err := f.s.DeleteWatch(ctx, f.user.ID, f.watch.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Version(ctx, f.watch.ID, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("version of a deleted watch: %v", err)
	}
	if res, err := f.s.Search(ctx, Query{Text: "giraffe", UserID: f.user.ID}); err != nil || res.Total != 0 {
		t.Errorf("search finds a deleted watch: %+v, %v", res, err)
	}
	if res, err := f.s.Search(ctx, Query{Text: "zebra", UserID: f.user.ID}); err != nil || res.Total != 1 {
		t.Errorf("search lost the other watch: %+v, %v", res, err)
	}
	checkTrack(t, f.s, other.ID, map[int]string{1: page("shared paragraph", "other zebra")})
	if evs, err := f.s.Changes(ctx, ChangeFilter{UserID: f.user.ID}); err != nil || len(evs) != 0 {
		t.Errorf("changes of a deleted watch remain: %v, %v", evs, err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := MustOpen(t, dir, c)
	ctx := context.Background()
	u := &changedigest.User{Name: "carol", DigestHour: 7}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	w := &changedigest.Watch{UserID: u.ID, URL: "https://example.com/", NextCheck: c.Now().Add(time.Hour)}
	if err := s.CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	bodies := map[int]string{}
	for v := 1; v <= 4; v++ {
		bodies[v] = page("okapi "+words(uint64(v), 4), "tapir")
		snap := snapshotOf([]byte(bodies[v]))
		if _, err := s.AddVersion(ctx, w.ID, snap, []byte(bodies[v])); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Latest(ctx, w.ID); !errors.Is(err, ErrClosed) || changedigest.ErrorCode(err) != changedigest.EUNAVAILABLE {
		t.Errorf("use after Close: %v", err)
	}
	reopen := func(name string) *Store {
		t.Helper()
		s := MustOpen(t, dir, c)
		checkTrack(t, s, w.ID, bodies)
		res, err := s.Search(ctx, Query{Text: "okapi", UserID: u.ID})
		if err != nil || res.Total != 4 {
			t.Errorf("%s: search okapi = %+v, %v; want 4 hits", name, res, err)
		}
		due, err := s.DueWatches(ctx, c.Now().Add(2*time.Hour), 0)
		if err != nil || len(due) != 1 || !due[0].NextCheck.Equal(w.NextCheck) {
			t.Errorf("%s: due watches = %v, %v", name, due, err)
		}
		if got, err := s.UserByName(ctx, "CAROL"); err != nil || got.DigestHour != 7 {
			t.Errorf("%s: user = %+v, %v", name, got, err)
		}
		return s
	}
	s = reopen("reopened")
	s.Close()
	// A lost index is rebuilt from pet.db.
	if err := os.RemoveAll(filepath.Join(dir, indexDir)); err != nil {
		t.Fatal(err)
	}
	s = reopen("index removed")
	s.Close()
	// So is one that cannot be read.
	entries, _ := os.ReadDir(filepath.Join(dir, indexDir))
	for _, e := range entries {
		os.WriteFile(filepath.Join(dir, indexDir, e.Name()), []byte("garbage"), 0o600)
	}
	s = reopen("index garbled")
	s.Close()
}

// TestDeltaChunks edits one large paragraph again and again: each version
// costs the edit, chains stay bounded, and every version reads back after
// retention removed the bases of later deltas.
func TestDeltaChunks(t *testing.T) {
	f := newFixture(t, func(s *Store) { s.KeepVersions = 0 })
	ctx := context.Background()
	long := []byte(words(11, 400)) // ~2.7 KB paragraph
	bodies := map[int]string{}
	var sizes []int64
	for v := 1; v <= 30; v++ {
		copy(long[v*50:], fmt.Sprintf("edit%02d", v))
		_, seq := f.add(t, f.watch.ID, page("header", string(long), "footer"))
		bodies[seq] = page("header", string(long), "footer")
		st, err := f.s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.ChunkBytes)
	}
	// A full copy starts a new chain once the chain is maxDeltaDepth long.
	full := 0
	for i := 1; i < len(sizes); i++ {
		if d := sizes[i] - sizes[i-1]; d > 200 {
			full++
		}
	}
	if want := len(sizes) / (maxDeltaDepth + 1); full > want {
		t.Errorf("%d of %d versions stored the edited %d-byte paragraph in full, want at most %d (sizes %v)", full, len(sizes)-1, len(long), want, sizes)
	}
	var depth int
	f.s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bChunkData).ForEach(func(_, v []byte) error {
			d, _, _ := deltaHeader(v)
			depth = max(depth, d)
			return nil
		})
	})
	if depth == 0 || depth > maxDeltaDepth {
		t.Errorf("deepest delta chain %d, want 1..%d", depth, maxDeltaDepth)
	}
	checkTrack(t, f.s, f.watch.ID, bodies)
	// Retention removes the early versions; the bases their successors
	// need stay, the rest go.
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, f.watch.ID, func(w *changedigest.Watch) error {
		w.KeepVersions = 6
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkTrack(t, f.s, f.watch.ID, bodies)
	if err := f.s.DeleteWatch(ctx, f.user.ID, f.watch.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.s.Stats(ctx); st.Chunks != 0 || st.Segments != 0 {
		t.Errorf("deleting the only watch left %d chunks and %d segments", st.Chunks, st.Segments)
	}
	if err := f.s.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestCheckFindsDamage damages the store in several ways and expects
// Check to say so.
func TestCheckFindsDamage(t *testing.T) {
	tests := []struct {
		name   string
		damage func(tx *bolt.Tx) error
	}{
		{"reference count off", func(tx *bolt.Tx) error {
			b := tx.Bucket(bChunkRefs)
			k, v := b.Cursor().First()
			n, w := uvarint(v)
			return b.Put(bytes.Clone(k), append(putUvarint(nil, n+1), v[w:]...))
		}},
		{"chunk lost", func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bChunkData).Cursor().Last()
			return tx.Bucket(bChunkData).Delete(bytes.Clone(k))
		}},
		{"chunk bytes flipped", func(tx *bolt.Tx) error {
			b := tx.Bucket(bChunkData)
			k, v := b.Cursor().First()
			v = bytes.Clone(v)
			v[len(v)-1] ^= 0x55
			return b.Put(bytes.Clone(k), v)
		}},
		{"version lost", func(tx *bolt.Tx) error {
			return tx.Bucket(bVersions).Delete(id64(1, 2))
		}},
		{"segment lost", func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bSegs).Cursor().First()
			return tx.Bucket(bSegs).Delete(bytes.Clone(k))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for v := range 4 {
				f.add(t, f.watch.ID, page("same", words(uint64(v), 60)))
			}
			if err := f.s.Check(context.Background()); err != nil {
				t.Fatalf("sound store: %v", err)
			}
			if err := f.s.db.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			err := f.s.Check(context.Background())
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestConcurrent writes to several watches while searching and deleting,
// then checks the store.
func TestConcurrent(t *testing.T) {
	f := newFixture(t, func(s *Store) { s.KeepVersions = 8 })
	ctx := context.Background()
	var watches []*changedigest.Watch
	for i := range 4 {
		watches = append(watches, f.mustWatch(t, f.user.ID, fmt.Sprintf("https://concurrent.example/%d", i)))
	}
	errs := make(chan error, 100)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range watches {
		wg.Go(func() {
			for v := range 15 {
				body := []byte(page("shared banner", fmt.Sprintf("watch%d version%d", i, v), words(uint64(v/3), 30)))
				if _, err := f.s.AddVersion(ctx, w.ID, snapshotOf(body), body); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := f.s.Search(ctx, Query{Text: "banner", UserID: f.user.ID}); err != nil {
				errs <- err
				return
			}
		}
	})
	readers.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			w := &changedigest.Watch{UserID: f.user.ID, URL: fmt.Sprintf("https://temp.example/%d", i)}
			if err := f.s.CreateWatch(ctx, w); err != nil {
				errs <- err
				return
			}
			body := []byte(page("shared banner", "temporary"))
			if _, err := f.s.AddVersion(ctx, w.ID, snapshotOf(body), body); err != nil {
				errs <- err
				return
			}
			if err := f.s.DeleteWatch(ctx, f.user.ID, w.ID); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := f.s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		info, err := f.s.Track(ctx, w.ID)
		if err != nil || info.Latest != 15 || info.Versions != 8 {
			t.Errorf("watch %d: %+v, %v", i, info, err)
		}
		res, err := f.s.Search(ctx, Query{Text: fmt.Sprintf(`"watch%d version14"`, i), UserID: f.user.ID})
		if err != nil || res.Total != 1 {
			t.Errorf("watch %d: last version not found: %+v, %v", i, res, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := MustOpen(t, dir, nil)
	b := New(dir)
	b.OpenTimeout, b.Logger = 100*time.Millisecond, quiet
	if err := b.Open(ctx); err == nil || !strings.Contains(err.Error(), "pet: open") {
		t.Errorf("second store on a locked directory: %v", err)
	}
	if err := a.Open(ctx); err == nil {
		t.Error("Open of an open store succeeded")
	}
	a.Close()
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	if err := New(file).Open(ctx); err == nil {
		t.Error("a store in a plain file opened")
	}
	if err := New("").Open(ctx); !errors.Is(err, ErrInvalid) {
		t.Errorf("a store without a directory: %v", err)
	}

	// A newer schema is refused, and the store is left as it was.
	s := MustOpen(t, dir, nil)
	s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put([]byte("schema"), putUvarint(nil, 99)) })
	s.Close()
	if err := New(dir).Open(ctx); err == nil || !strings.Contains(err.Error(), "schema 99") {
		t.Errorf("unknown schema: %v", err)
	}
}

func TestReindexAndCompact(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for v := range 6 {
		f.add(t, f.watch.ID, page("wombat "+words(uint64(v), 8), "koala"))
	}
	if err := f.s.Reindex(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := f.s.Search(ctx, Query{Text: "wombat", UserID: f.user.ID}); err != nil || res.Total != 6 {
		t.Errorf("after Reindex: %+v, %v", res, err)
	}
	if err := f.s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := f.s.Stats(ctx)
	if err != nil || st.IndexLiveBytes <= 0 || st.IndexLiveBytes > st.IndexBytes || st.IndexDocs != 7 {
		t.Errorf("stats after Compact = %+v, %v", st, err)
	}
	checkTrack(t, f.s, f.watch.ID, nil)
}

func TestPrior(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	snap, body, rows, err := f.s.Prior(ctx, f.watch.ID, 0)
	if err != nil || snap != nil || body != nil || rows != nil {
		t.Fatalf("Prior of a new watch = %v, %q, %v, %v", snap, body, rows, err)
	}
	var want [][]string
	var last string
	for v := range 7 {
		last = page(words(uint64(v), 6), "fixed")
		s, _ := f.add(t, f.watch.ID, last)
		want = append([][]string{s.Hashes()}, want...)
	}
	snap, body, rows, err = f.s.Prior(ctx, f.watch.ID, 3)
	if err != nil || snap.Seq != 7 || string(body) != last || !reflect.DeepEqual(rows, want[:3]) || snap.Segments[1].Text != "fixed" {
		t.Errorf("Prior = seq %d, %d bytes, %v, %v", snap.Seq, len(body), rows, err)
	}
	if _, _, _, err := f.s.Prior(ctx, 99, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Prior of an unknown watch: %v", err)
	}
}

// TestRecentChanges checks that the changes of the last versions come
// newest first, as many as asked, and that an unknown watch is not found.
func TestRecentChanges(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i := range 4 {
		f.add(t, f.watch.ID, page(fmt.Sprint("v", i)), changedigest.Change{Segment: 0, Path: fmt.Sprint("html|body|p[", i, "]"),
			Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "a", NewText: "b"})
	}
	got, err := f.s.RecentChanges(ctx, f.watch.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got the changes of %d versions, want 3", len(got))
	}
	for i, cs := range got {
		if want := fmt.Sprint("html|body|p[", 3-i, "]"); len(cs) != 1 || cs[0].Path != want {
			t.Errorf("version %d back: %+v, want one change at %s", i, cs, want)
		}
	}
	if _, err := f.s.RecentChanges(ctx, 999, 3); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("unknown watch: %v, want ENOTFOUND", err)
	}
}

// TestAddVersionAt: a track kept elsewhere keeps its numbers: an empty
// track starts where the other's kept versions start, and a version
// must follow the newest.
func TestAddVersionAt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	add := func(seq int, text string) (int, error) {
		body := []byte(page("constant header", text, "constant footer"))
		return f.s.AddVersionAt(ctx, f.watch.ID, seq, snapshotOf(body), body)
	}
	if got, err := add(7, "seventh"); err != nil || got != 7 {
		t.Fatalf("AddVersionAt(7) on an empty track = %d, %v", got, err)
	}
	if _, err := add(9, "ninth"); !errors.Is(err, ErrConflict) {
		t.Errorf("AddVersionAt(9) after 7: %v, want a conflict", err)
	}
	if _, err := add(7, "seventh again"); !errors.Is(err, ErrConflict) {
		t.Errorf("AddVersionAt(7) again: %v, want a conflict", err)
	}
	if got, err := add(8, "eighth"); err != nil || got != 8 {
		t.Fatalf("AddVersionAt(8) = %d, %v", got, err)
	}
	body := []byte(page("constant header", "ninth", "constant footer"))
	if got, err := f.s.AddVersion(ctx, f.watch.ID, snapshotOf(body), body); err != nil || got != 9 {
		t.Fatalf("AddVersion after 8 = %d, %v", got, err)
	}
	info, err := f.s.Track(ctx, f.watch.ID)
	if err != nil || info.Oldest != 7 || info.Latest != 9 || info.Versions != 3 {
		t.Errorf("Track = %+v, %v; want versions 7 to 9", info, err)
	}
	if b, err := f.s.Body(ctx, f.watch.ID, 7); err != nil || !strings.Contains(string(b), "seventh") {
		t.Errorf("Body(7) = %q, %v", b, err)
	}
	if vs, err := f.s.Versions(ctx, f.watch.ID, 0, 10); err != nil || len(vs) != 3 || vs[0].Seq != 9 || vs[2].Seq != 7 {
		t.Errorf("Versions = %d, %v", len(vs), err)
	}
}

// TestPriorParts reads the newest version in parts: each segment's text is
// Prior's, every byte range (a segment, a run of them, stretches across
// chunk boundaries, the whole) is the body's, the whole body is Prior's.
// A version whose record has no chunk lengths (stored before them) reads
// its ranges from the whole body; ranges outside the body are refused.
func TestPriorParts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if snap, parts, rows, err := f.s.PriorParts(ctx, f.watch.ID, 0); err != nil || snap != nil || parts != nil || rows != nil {
		t.Fatalf("PriorParts of a new watch = %v, %v, %v, %v", snap, parts, rows, err)
	}
	body := func(v int) string {
		var b strings.Builder
		b.WriteString("<html><body><h1>Title</h1>\n")
		for i := range 40 {
			fmt.Fprintf(&b, "<p>paragraph %d of version %d: %s</p>\n<div>gap %d</div>\n", i, v*(i%3), words(uint64(i+v*(i%2)), 12), i)
		}
		// a paragraph longer than a chunk, cut by content
		b.WriteString("<p>" + strings.Repeat(words(uint64(v), 200)+" ", 12) + "</p>\n</body></html>\n")
		return b.String()
	}
	for v := range 4 {
		f.add(t, f.watch.ID, body(v))
	}
	want, wantBody, wantRows, err := f.s.Prior(ctx, f.watch.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		got, parts, rows, err := f.s.PriorParts(ctx, f.watch.ID, 0)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got.Seq != want.Seq || !reflect.DeepEqual(rows, wantRows) || !bytes.Equal(got.Layout, want.Layout) || len(got.Segments) != len(want.Segments) {
			t.Fatalf("%s: seq %d, %d segments, rows %v; want seq %d, %d segments", what, got.Seq, len(got.Segments), rows, want.Seq, len(want.Segments))
		}
		for i, sg := range want.Segments {
			text, err := parts.SegmentText(i)
			if err != nil || text != sg.Text {
				t.Fatalf("%s: text of segment %d = %q, %v; want %q", what, i, text, err, sg.Text)
			}
			if got.Segments[i].Start != sg.Start || got.Segments[i].End != sg.End || got.Segments[i].Hash != sg.Hash {
				t.Fatalf("%s: segment %d is %+v, want %+v", what, i, got.Segments[i], sg)
			}
			ranges := [][2]int{{sg.Start, sg.End}, {sg.Start, len(wantBody)}, {0, sg.End}, {max(sg.Start-7, 0), min(sg.End+7, len(wantBody))}}
			for _, r := range ranges {
				p, err := parts.BodyRange(r[0], r[1])
				if err != nil || !bytes.Equal(p, wantBody[r[0]:r[1]]) {
					t.Fatalf("%s: bytes %d to %d: %d bytes, %v", what, r[0], r[1], len(p), err)
				}
			}
		}
		for _, r := range [][2]int{{-1, 3}, {0, len(wantBody) + 1}, {5, 4}} {
			if _, err := parts.BodyRange(r[0], r[1]); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: bytes %d to %d: %v, want EINVALID", what, r[0], r[1], err)
			}
		}
		if _, err := parts.SegmentText(len(want.Segments)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: text of a segment past the last: %v, want EINVALID", what, err)
		}
		whole, err := parts.Body()
		if err != nil || !bytes.Equal(whole, wantBody) {
			t.Errorf("%s: body of %d bytes, %v; want %d bytes", what, len(whole), err, len(wantBody))
		}
	}
	check("with chunk lengths")
	var chunks int
	err = f.s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bVersions)
		k := id64(f.watch.ID, int64(want.Seq))
		rec, err := decodeVersion(b.Get(k))
		if err != nil {
			return err
		}
		chunks = len(rec.chunks)
		rec.lens = nil
		v, err := rec.encode()
		if err != nil {
			return err
		}
		return b.Put(k, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if chunks < len(want.Segments) {
		t.Fatalf("the body is %d chunks for %d segments", chunks, len(want.Segments))
	}
	check("stored without chunk lengths")

	// A watch deleted after PriorParts: its parts are not found, not corrupt.
	_, parts, _, err := f.s.PriorParts(ctx, f.watch.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.DeleteWatch(ctx, f.user.ID, f.watch.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := parts.SegmentText(0); !errors.Is(err, ErrNotFound) {
		t.Errorf("text of a deleted watch's segment: %v, want ENOTFOUND", err)
	}
	if _, err := parts.BodyRange(0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("bytes of a deleted watch's version: %v, want ENOTFOUND", err)
	}
}

// TestCompareEventsMergesStores: the change lists of several stores, each
// holding its own watches, merged by CompareEvents, come in the order one
// store holding them all lists them, ties of one time included.
func TestCompareEventsMergesStores(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	at := f.clock.Add(time.Hour)
	change := changedigest.Change{Segment: 0, Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: "x"}
	for i := range 12 {
		w := f.mustWatch(t, f.user.ID, fmt.Sprintf("https://example.org/%d", i))
		for v := range 2 {
			body := page(words(uint64(10*i+v), 4))
			snap := snapshotOf([]byte(body))
			snap.FetchedAt = at.Add(time.Duration(v) * time.Minute)
			if i%4 == 0 {
				snap.FetchedAt = snap.FetchedAt.Add(time.Duration(i)) // not all ties
			}
			snap.Changes = []changedigest.Change{change}
			if _, err := f.s.AddVersion(ctx, w.ID, snap, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := f.s.Changes(ctx, ChangeFilter{UserID: f.user.ID, Limit: 100})
	if err != nil || len(all) != 24 {
		t.Fatalf("changes: %d, %v", len(all), err)
	}
	var merged []Event
	for _, odd := range []int64{1, 0} {
		for _, e := range all {
			if e.Watch.ID%2 == odd {
				merged = append(merged, e)
			}
		}
	}
	slices.SortStableFunc(merged, CompareEvents)
	key := func(es []Event) (k []string) {
		for _, e := range es {
			k = append(k, fmt.Sprintf("%d#%d", e.Watch.ID, e.Version.Seq))
		}
		return k
	}
	if got, want := key(merged), key(all); !slices.Equal(got, want) {
		t.Errorf("merged %v\none store %v", got, want)
	}
}
