package pet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
)

// TestCover checks that the buckets covering a range hold every hour of
// it exactly once and no hour outside it.
func TestCover(t *testing.T) {
	d := func(s string) time.Time {
		t, err := time.Parse("2006-01-02T15", s)
		if err != nil {
			panic(err)
		}
		return t
	}
	tests := []struct {
		name string
		a, b time.Time
		want int // number of terms, 0 to skip
	}{
		{"one hour", d("2025-06-01T15"), d("2025-06-01T15").Add(59 * time.Minute), 1},
		{"one day", d("2025-06-01T00"), d("2025-06-01T23"), 1},
		{"one month", d("2025-02-01T00"), d("2025-02-28T23"), 1},
		{"one year", d("2024-01-01T00"), d("2024-12-31T23"), 1},
		{"leap day", d("2024-02-28T22"), d("2024-03-01T01"), 5},
		{"across a new year", d("2024-12-31T23"), d("2025-01-01T00"), 2},
		{"ragged month", d("2025-03-03T05"), d("2025-04-29T17"), 0},
		{"from the start of time", minTime, d("2025-06-01T15"), 0},
		{"to the end of time", d("2025-06-01T15"), maxTime, 0},
		{"empty", d("2025-06-02T00"), d("2025-06-01T00"), 0},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		a := d("2023-01-01T00").Add(time.Duration(r.IntN(3*365*24)) * time.Hour)
		tests = append(tests, struct {
			name string
			a, b time.Time
			want int
		}{"random", a, a.Add(time.Duration(r.IntN(900*24)) * time.Hour), 0})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			terms := cover(tc.a, tc.b)
			set := map[string]bool{}
			for _, x := range terms {
				if set[x] {
					t.Fatalf("term %s twice", x)
				}
				set[x] = true
			}
			if tc.want > 0 && len(terms) != tc.want {
				t.Errorf("cover = %v, want %d terms", terms, tc.want)
			}
			if len(terms) > 200 {
				t.Errorf("%d terms", len(terms))
			}
			covered := func(h time.Time) int {
				n := 0
				for _, b := range buckets(h) {
					if set[b] {
						n++
					}
				}
				return n
			}
			a, b := tc.a.Truncate(time.Hour), tc.b.Truncate(time.Hour)
			// Check the edges and a sample of the inside.
			for h := a; !h.After(b); h = h.Add(time.Duration(1+r.IntN(97)) * time.Hour) {
				if n := covered(h); n != 1 {
					t.Fatalf("hour %s covered %d times by %v", h, n, terms)
				}
			}
			if !b.Before(a) {
				for _, h := range []time.Time{a, b, a.Add(-time.Hour), b.Add(time.Hour)} {
					want := 0
					if !h.Before(a) && !h.After(b) {
						want = 1
					}
					if h.Before(minTime) || h.After(maxTime) {
						continue
					}
					if n := covered(h); n != want {
						t.Errorf("hour %s covered %d times, want %d", h, n, want)
					}
				}
			}
		})
	}
}

// panicky is an index whose searches panic, as Bleve's do on an in-memory
// segment that a failed persist has closed.
type panicky struct{ bleveIndex }

// bleveIndex names the embedded index apart from its Index method.
type bleveIndex = bleve.Index

func (panicky) SearchInContext(context.Context, *bleve.SearchRequest) (*bleve.SearchResult, error) {
	var m map[int]int
	m[0] = 1
	return nil, nil
}

// TestSearchAfterIndexPanic checks that a panic inside the index marks it
// failed and that the search is answered from the index reopened
// read-only, then that writes resume after IndexRetry.
func TestSearchAfterIndexPanic(t *testing.T) {
	f := newFixture(t, func(s *Store) { s.IndexDelay = -1; s.IndexRetry = time.Minute })
	ctx := context.Background()
	f.add(t, f.watch.ID, "<p>first edition about lighthouses</p>")
	if _, err := f.s.Search(ctx, Query{Text: "lighthouses", UserID: f.user.ID}); err != nil {
		t.Fatal(err)
	}
	f.s.idxMu.Lock()
	f.s.idx = panicky{f.s.idx}
	f.s.idxMu.Unlock()

	res, err := f.s.Search(ctx, Query{Text: "lighthouses", UserID: f.user.ID})
	if err != nil {
		t.Fatalf("search after a panic in the index: %v", err)
	}
	if res.Total != 1 {
		t.Errorf("search after a panic found %d, want 1", res.Total)
	}
	if err := f.s.IndexFailure(); err == nil || !strings.Contains(err.Error(), "index panicked") {
		t.Errorf("index failure = %v, want the panic", err)
	}
	// Versions stored meanwhile are kept and indexed once the index is
	// writable again.
	f.add(t, f.watch.ID, "<p>second edition about harbours</p>")
	f.clock.Add(2 * time.Minute)
	res, err = f.s.Search(ctx, Query{Text: "harbours", UserID: f.user.ID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 {
		t.Errorf("search for a version stored while the index was failed found %d, want 1", res.Total)
	}
	if err := f.s.IndexFailure(); err != nil {
		t.Errorf("index still failed after IndexRetry: %v", err)
	}
}

// TestDeferIndex stores versions with the index work deferred, as the
// commands do: no index is opened or written, and the next process that
// searches finds every version, the pending work applied in batches of
// at most syncBudget documents.
func TestDeferIndex(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := MustOpen(t, dir, c, func(s *Store) { s.DeferIndex = true })
	f := &fixture{s: s, clock: c}
	f.user = f.mustUser(t, "alice")
	f.watch = f.mustWatch(t, f.user.ID, "https://example.org/", "news")
	const versions, paras = 30, 200 // 6,000 documents: more than one batch
	for v := range versions {
		ps := make([]string, paras)
		for i := range ps {
			ps[i] = fmt.Sprintf("edition%d paragraph%d %s", v, i, words(uint64(v*paras+i), 6))
		}
		f.add(t, f.watch.ID, page(ps...))
	}
	if versions*paras <= syncBudget {
		t.Fatal("the test no longer needs more than one batch")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, indexDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the index was written with its work deferred: %v", err)
	}
	s = MustOpen(t, dir, c)
	if n := s.pendingCount(); n != versions {
		t.Errorf("%d pending markers, want %d", n, versions)
	}
	ctx := context.Background()
	for _, word := range []string{"edition0", "edition29", "paragraph199"} {
		res, err := s.Search(ctx, Query{Text: word, UserID: f.user.ID})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total == 0 {
			t.Errorf("search %q finds nothing", word)
		}
	}
	if n := s.pendingCount(); n != 0 {
		t.Errorf("%d pending markers left after a search", n)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("store check: %v", err)
	}
}

// TestOpenIndexWhileWriting opens the index of a store whose versions are
// still being stored, as a service's checks go on while its index opens:
// a version committed between the replay of the markers and the count
// check must not make the store rebuild its whole index, and must still
// be found by the next search.
func TestOpenIndexWhileWriting(t *testing.T) {
	var logs strings.Builder
	var logMu sync.Mutex
	dir := t.TempDir()
	c := newClock()
	s := MustOpen(t, dir, c, func(s *Store) {
		s.IndexDelay = time.Hour // only the test's searches apply index work
		s.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))
	})
	f := &fixture{s: s, clock: c}
	f.user = f.mustUser(t, "alice")
	f.watch = f.mustWatch(t, f.user.ID, "https://example.org/", "news")
	f.add(t, f.watch.ID, page("first edition about lighthouses", "a second paragraph"))
	written := false
	s.afterOpenSync = func() {
		if !written {
			written = true
			f.add(t, f.watch.ID, page("second edition about harbours", "a second paragraph"))
		}
	}
	ctx := context.Background()
	for _, word := range []string{"lighthouses", "harbours"} {
		res, err := s.Search(ctx, Query{Text: word, UserID: f.user.ID})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 1 {
			t.Errorf("search %q found %d, want 1", word, res.Total)
		}
	}
	if !written {
		t.Fatal("the index was not opened by the search")
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), "rebuil") {
		t.Errorf("the index was rebuilt:\n%s", logs.String())
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("store check: %v", err)
	}
}

// TestOpenIndexMissingDocuments checks that the count check still finds
// an index that lacks documents no marker will bring: it is rebuilt.
func TestOpenIndexMissingDocuments(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := MustOpen(t, dir, c, func(s *Store) { s.IndexDelay = -1 })
	f := &fixture{s: s, clock: c}
	f.user = f.mustUser(t, "alice")
	f.watch = f.mustWatch(t, f.user.ID, "https://example.org/", "news")
	f.add(t, f.watch.ID, page("first edition about lighthouses", "a second paragraph"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A store whose index was emptied behind its back.
	if err := os.RemoveAll(filepath.Join(dir, indexDir)); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	s = MustOpen(t, dir, c, func(s *Store) {
		s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	res, err := s.Search(context.Background(), Query{Text: "lighthouses", UserID: f.user.ID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 {
		t.Errorf("search after the index was lost found %d, want 1", res.Total)
	}
	if !strings.Contains(logs.String(), "rebuilding") {
		t.Errorf("no rebuild logged:\n%s", logs.String())
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
