package pet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

func pageIDs(p *WatchPage) []int64 {
	var ids []int64
	for _, w := range p.Watches {
		ids = append(ids, w.ID)
	}
	return ids
}

func TestWatchPage(t *testing.T) {
	f := newFixture(t) // alice's watch 1: https://example.org/, tag news
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	f.mustWatch(t, bob.ID, "https://bob.example/", "news", "bob")
	t0 := f.clock.Now()
	// Alice's watches 3 to 8.
	specs := []struct {
		url, title string
		tags       []string
		change     time.Duration // since t0; 0 for never
		failing    bool
	}{
		{"https://b.example/", "banana", []string{"fruit"}, -time.Hour, false},
		{"https://a.example/", "Apple", []string{"fruit", "news"}, -3 * time.Hour, true},
		{"https://c.example/", "", nil, 0, false},
		{"https://d.example/", "cherry", []string{"fruit"}, -2 * time.Hour, true},
		{"https://e.example/", "apple", nil, -30 * time.Minute, false},
		{"https://f.example/", "Zebra", []string{"animal"}, 0, false},
	}
	for _, sp := range specs {
		w := f.mustWatch(t, f.user.ID, sp.url, sp.tags...)
		if _, err := f.s.UpdateWatch(ctx, f.user.ID, w.ID, func(w *changedigest.Watch) error {
			w.Title = sp.title
			if sp.change != 0 {
				w.LastChange, w.LastCheck = t0.Add(sp.change), t0.Add(sp.change)
			}
			if sp.failing {
				w.LastError = "fetch: 404"
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		q       WatchQuery
		want    []int64
		total   int
		failing int
	}{
		{"all, added", WatchQuery{}, []int64{1, 3, 4, 5, 6, 7, 8}, 7, 2},
		{"by name", WatchQuery{Sort: SortName}, []int64{4, 7, 3, 6, 5, 1, 8}, 7, 2},
		{"by last change", WatchQuery{Sort: SortChanged}, []int64{7, 3, 6, 4, 1, 5, 8}, 7, 2},
		{"failing first", WatchQuery{Sort: SortFailing}, []int64{4, 6, 1, 3, 5, 7, 8}, 7, 2},
		{"tag", WatchQuery{Tag: "fruit", Sort: SortName}, []int64{4, 3, 6}, 3, 2},
		{"tag, normalised", WatchQuery{Tag: " News "}, []int64{1, 4}, 2, 1},
		{"second page", WatchQuery{Sort: SortName, Offset: 2, Limit: 2}, []int64{3, 6}, 7, 2},
		{"past the end", WatchQuery{Offset: 7}, nil, 7, 2},
		{"unknown tag", WatchQuery{Tag: "nope"}, nil, 0, 0},
	}
	for _, tc := range cases {
		p, err := f.s.WatchPage(ctx, f.user.ID, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := pageIDs(p); !slices.Equal(got, tc.want) || p.Total != tc.total || p.Failing != tc.failing {
			t.Errorf("%s: ids %v, total %d, failing %d; want %v, %d, %d", tc.name, got, p.Total, p.Failing, tc.want, tc.total, tc.failing)
		}
		if !slices.Equal(p.Tags, []string{"animal", "fruit", "news"}) {
			t.Errorf("%s: tags %v", tc.name, p.Tags)
		}
	}
	for _, q := range []WatchQuery{{Offset: -1}, {Limit: -1}, {Sort: "size"}} {
		if _, err := f.s.WatchPage(ctx, f.user.ID, q); changedigest.ErrorCode(err) != changedigest.EINVALID {
			t.Errorf("%+v: %v, want EINVALID", q, err)
		}
	}
	if p, _ := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Limit: 5000}); p.Limit != MaxWatchLimit {
		t.Errorf("limit 5000 became %d, want %d", p.Limit, MaxWatchLimit)
	}

	// The list is kept until the next write, and a write is seen at once.
	kept := f.s.lists.users[f.user.ID]
	if _, err := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Sort: SortChanged}); err != nil || f.s.lists.users[f.user.ID] != kept {
		t.Errorf("a second page without a write read the list again (%v)", err)
	}
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, 8, func(w *changedigest.Watch) error { w.Title = "aardvark"; return nil }); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Sort: SortName, Limit: 2}); !slices.Equal(pageIDs(p), []int64{8, 4}) {
		t.Errorf("by name after renaming watch 8: %v, want [8 4]", pageIDs(p))
	}
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, 8, func(w *changedigest.Watch) error { w.Title = "Zebra"; return nil }); err != nil {
		t.Fatal(err)
	}

	// A store written before the summaries: the index values are empty,
	// and the list reads the watches themselves.
	want, _ := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Sort: SortName})
	if err := f.s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bUserWatch).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if err := tx.Bucket(bUserWatch).Put(append([]byte(nil), k...), nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Sort: SortName})
	if err != nil || !slices.Equal(pageIDs(got), pageIDs(want)) || got.Failing != want.Failing {
		t.Errorf("without summaries: %v, %v; want %v", pageIDs(got), err, pageIDs(want))
	}
	// Opening the store fills them in.
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bUserWatch).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if _, ok := decodeSummary(at(k, 1), v); !ok {
				t.Errorf("watch %d has no summary after Open", at(k, 1))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err = f.s.WatchPage(ctx, f.user.ID, WatchQuery{Sort: SortName})
	if err != nil || !slices.Equal(pageIDs(got), pageIDs(want)) || got.Failing != want.Failing {
		t.Errorf("after reopening: %v, %v; want %v", pageIDs(got), err, pageIDs(want))
	}
	// Deleting a watch takes it out of the list.
	if err := f.s.DeleteWatch(ctx, f.user.ID, 4); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Tag: "fruit"}); !slices.Equal(pageIDs(p), []int64{3, 6}) || p.Failing != 1 {
		t.Errorf("after deleting watch 4: %v, failing %d", pageIDs(p), p.Failing)
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	w := &changedigest.Watch{ID: 7, URL: "https://x.example/", Title: fmt.Sprint("t", string(make([]byte, 300))),
		Tags: []string{"a", "bé"}, LastError: "x", Paused: true, LastChange: time.Unix(100, 5), LastCheck: time.Unix(200, 0)}
	s, ok := decodeSummary(7, summaryOf(w))
	var tags []string
	s.eachTag(func(t []byte) bool { tags = append(tags, string(t)); return true })
	if !ok || !s.failing || !s.paused || s.lastChange != 100e9+5 || s.lastCheck != 200e9 ||
		len(s.name) != maxSummaryName || !slices.Equal(tags, w.Tags) || !s.hasTag("bé") || s.hasTag("b") {
		t.Errorf("round trip: %+v, %v", s, ok)
	}
	for _, bad := range [][]byte{nil, {}, {1}, {2, 0}, {1, 0, 0xff}, {1, 0, 1, 1, 50, 'x'}} {
		if _, ok := decodeSummary(1, bad); ok {
			t.Errorf("decodeSummary(%v) accepted", bad)
		}
	}
}

func TestCompareFold(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"apple", "Banana", -1},
		{"Apple", "apple", -1},
		{"apple", "apple", 0},
		{"Ébène", "ébène z", -1},
		{"zèbre", "Zebra", 1},
		{"ab", "a", 1},
		{"", "a", -1},
	} {
		if got := compareFold([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("compareFold(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// BenchmarkWatchPage reads a page of a user with 10,000 watches in each
// order (the list kept from the first page), and the list itself sorted
// by name, as the first page after a write does.
func BenchmarkWatchPage(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	tags := []string{"news", "science", "sport", "music", "local", "work"}
	for i := range 10000 {
		w := &changedigest.Watch{UserID: f.user.ID, URL: fmt.Sprintf("https://site%d.example/%d", i%300, i),
			Tags: []string{tags[i%len(tags)], tags[(i/7)%len(tags)]}}
		if i%3 > 0 {
			w.Title = fmt.Sprintf("Page %d of site %d", i, i%300)
		}
		if err := f.s.CreateWatch(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	for _, o := range []WatchSort{SortAdded, SortName, SortChanged} {
		b.Run(string(o), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Sort: o, Offset: 5000}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Reading the list, as the first page after a write does.
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := f.s.view(ctx, func(tx *bolt.Tx) error {
				l, err := readUserList(tx, f.user.ID)
				if err == nil && len(l.order(SortName)) != 10001 {
					b.Fatalf("%d watches", len(l.sums))
				}
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tag", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.s.WatchPage(ctx, f.user.ID, WatchQuery{Tag: "music", Sort: SortName}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSaveSchedules checks that saving many schedules in one transaction
// stores the crawler's fields of each watch, keeps the fields a user
// edits, and passes over a watch deleted meanwhile.
func TestSaveSchedules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.mustWatch(t, f.user.ID, "https://example.org/a", "news")
	b := f.mustWatch(t, f.user.ID, "https://example.org/b", "news")
	gone := f.mustWatch(t, f.user.ID, "https://example.org/gone", "news")
	next := f.clock.Now().Add(time.Hour).UTC()
	var ws []*changedigest.Watch
	for i, w := range []*changedigest.Watch{a, b, gone} {
		c := *w
		c.NextCheck, c.LastCheck, c.Checks, c.ETag = next, f.clock.Now().UTC(), 3+i, fmt.Sprintf(`"v%d"`, i)
		c.Title = "a title the crawler must not set"
		ws = append(ws, &c)
	}
	if err := f.s.DeleteWatch(ctx, f.user.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SaveSchedules(ctx, ws); err != nil {
		t.Fatalf("save schedules with a deleted watch: %v", err)
	}
	for i, w := range []*changedigest.Watch{a, b} {
		got, err := f.s.Watch(ctx, f.user.ID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.NextCheck.Equal(next) || got.Checks != 3+i || got.ETag != fmt.Sprintf(`"v%d"`, i) {
			t.Errorf("watch %d: next %v checks %d etag %s, want %v %d \"v%d\"", w.ID, got.NextCheck, got.Checks, got.ETag, next, 3+i, i)
		}
		if got.Title != w.Title {
			t.Errorf("watch %d: title %q, want the stored %q", w.ID, got.Title, w.Title)
		}
	}
}
