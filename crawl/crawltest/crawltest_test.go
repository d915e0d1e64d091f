package crawltest_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

func fetcher() *crawl.Fetcher {
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	return f
}

func TestFarmConditionalGet(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 2, Pages: 4, Rate: func(int) float64 { return 0 }})
	f := fetcher()
	ctx := t.Context()

	first, err := f.Fetch(ctx, crawl.Request{URL: farm.URL(3)})
	if err != nil {
		t.Fatal(err)
	}
	// The farm's pages were changed in the second they are first served:
	// their Last-Modified is not kept as a validator (it could not tell a
	// change later in that second).
	if first.ETag != `"3-0"` || first.LastModified != "" || len(first.Body) < 8000 {
		t.Fatalf("first fetch: ETag %q Last-Modified %q, %d bytes", first.ETag, first.LastModified, len(first.Body))
	}
	first.LastModified = time.Now().UTC().Format(http.TimeFormat)
	again, err := f.Fetch(ctx, crawl.Request{URL: farm.URL(3), ETag: first.ETag})
	if err != nil || !again.NotModified {
		t.Fatalf("refetch with ETag: %+v, %v", again, err)
	}
	byDate, err := f.Fetch(ctx, crawl.Request{URL: farm.URL(3), LastModified: first.LastModified})
	if err != nil || !byDate.NotModified {
		t.Fatalf("refetch with Last-Modified: %+v, %v", byDate, err)
	}

	farm.Pages[3].Touch()
	changed, err := f.Fetch(ctx, crawl.Request{URL: farm.URL(3), ETag: first.ETag})
	if err != nil || changed.NotModified || changed.ETag != `"3-1"` || string(changed.Body) == string(first.Body) {
		t.Fatalf("after a change: NotModified %v ETag %q, %v", changed.NotModified, changed.ETag, err)
	}
	if total, full, nm := farm.Requests(); total != 4 || full != 2 || nm != 2 {
		t.Errorf("requests %d, full %d, not modified %d; want 4, 2, 2", total, full, nm)
	}
	// Page 3 lives on host 1 only.
	if _, err := f.Fetch(ctx, crawl.Request{URL: farm.Servers[0].URL + "/p/3"}); err == nil {
		t.Error("page served by the wrong host")
	}
}

func TestFarmStatus(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Pages: 1})
	farm.Pages[0].SetStatus(429, "60")
	_, err := fetcher().Fetch(t.Context(), crawl.Request{URL: farm.URL(0)})
	var he *crawl.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 429 || he.RetryAfter.IsZero() {
		t.Fatalf("err = %v, want a 429 with Retry-After", err)
	}
	farm.Pages[0].SetStatus(0, "")
	if _, err := fetcher().Fetch(t.Context(), crawl.Request{URL: farm.URL(0)}); err != nil {
		t.Fatal(err)
	}
}

// TestFarmChangeRate checks the farm's Poisson process on a fake clock.
func TestFarmChangeRate(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Pages: 3, Now: clock, Seed: 1,
		Rate: func(i int) float64 { return []float64{1.0 / 60, 1.0 / 3600, 0}[i] }})
	mu.Lock()
	now = now.Add(1000 * time.Minute)
	mu.Unlock()
	want := []float64{1000, 1000.0 / 60, 0}
	for i, w := range want {
		got := float64(farm.Pages[i].Version())
		if math.Abs(got-w) > 4*math.Sqrt(w)+0.5 {
			t.Errorf("page %d: %v changes in 1000 min, want about %v", i, got, w)
		}
	}
}

func TestMemStore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := crawltest.NewMemStore(
		&changedigest.Watch{ID: 1, URL: "http://a/", NextCheck: t0.Add(2 * time.Hour)},
		&changedigest.Watch{ID: 2, URL: "http://b/"},
		&changedigest.Watch{ID: 3, URL: "http://c/", NextCheck: t0.Add(time.Hour)},
		&changedigest.Watch{ID: 4, URL: "http://d/", Paused: true},
		&changedigest.Watch{ID: 5, URL: "http://e/", NextCheck: t0.Add(time.Hour)},
	)
	ctx := context.Background()
	ids := func(ws []*changedigest.Watch) (out []int64) {
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	due, _ := s.DueWatches(ctx, t0.Add(time.Hour), 10)
	if got := ids(due); len(got) != 3 || got[0] != 2 || got[1] != 3 || got[2] != 5 {
		t.Errorf("due at +1h: %v, want [2 3 5]", got)
	}
	due, _ = s.DueWatches(ctx, t0.Add(3*time.Hour), 2)
	if got := ids(due); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("due at +3h, limit 2: %v, want [2 3]", got)
	}
	// The returned watches are copies; SaveSchedule keeps only the
	// crawler's fields.
	w := due[0]
	w.Title = "changed by the crawler"
	w.NextCheck = t0.Add(5 * time.Hour)
	w.Checks = 7
	w.Samples = []changedigest.CheckSample{{Interval: time.Hour, Changed: true}}
	if err := s.SaveSchedule(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := s.Watch(2)
	if got.Title != "" || got.Checks != 7 || !got.NextCheck.Equal(t0.Add(5*time.Hour)) || len(got.Samples) != 1 {
		t.Errorf("saved watch: %+v", got)
	}
	due, _ = s.DueWatches(ctx, t0.Add(3*time.Hour), 10)
	if got := ids(due); len(got) != 3 || got[0] != 3 || got[2] != 1 {
		t.Errorf("due after the save: %v, want [3 5 1]", got)
	}
	if err := s.SaveSchedule(ctx, &changedigest.Watch{ID: 99}); err != nil {
		t.Errorf("saving a deleted watch: %v", err)
	}
}
