package crawl_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// event is one check as a fake checker saw it.
type event struct {
	id         int64
	host       string
	start, end time.Time
}

// recorder is a fake checker: it sleeps for a watch-dependent duration
// (inside a synctest bubble, fake time), records what ran when, and
// returns what result says.
type recorder struct {
	mu       sync.Mutex
	events   []event
	running  int
	peak     int
	byHost   map[string]int
	hostPeak int
	took     func(w *changedigest.Watch) time.Duration
	result   func(w *changedigest.Watch, n int) (crawl.Outcome, error)
	calls    map[int64]int
}

func newRecorder() *recorder {
	return &recorder{
		byHost: map[string]int{},
		calls:  map[int64]int{},
		took:   func(*changedigest.Watch) time.Duration { return 100 * time.Millisecond },
		result: func(*changedigest.Watch, int) (crawl.Outcome, error) {
			return crawl.Outcome{Result: crawl.Unchanged}, nil
		},
	}
}

func hostOf(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	host, _, _ := strings.Cut(u, "/")
	return host
}

func (r *recorder) Check(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
	host := hostOf(w.URL)
	r.mu.Lock()
	r.running++
	r.peak = max(r.peak, r.running)
	r.byHost[host]++
	r.hostPeak = max(r.hostPeak, r.byHost[host])
	r.calls[w.ID]++
	n := r.calls[w.ID]
	r.mu.Unlock()
	start := time.Now()
	defer func() {
		r.mu.Lock()
		r.running--
		r.byHost[host]--
		r.events = append(r.events, event{id: w.ID, host: host, start: start, end: time.Now()})
		r.mu.Unlock()
	}()
	select {
	case <-time.After(r.took(w)):
	case <-ctx.Done():
		return crawl.Outcome{}, ctx.Err()
	}
	return r.result(w, n)
}

func (r *recorder) snapshot() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func watches(n, hosts int, category changedigest.Category) []*changedigest.Watch {
	ws := make([]*changedigest.Watch, n)
	for i := range ws {
		ws[i] = &changedigest.Watch{
			ID:       int64(i + 1),
			URL:      fmt.Sprintf("http://host%d.test/page/%d", i%hosts, i),
			Category: category,
		}
	}
	return ws
}

func newScheduler(store crawl.Store, checker crawl.Checker) *crawl.Scheduler {
	s := crawl.NewScheduler(store, checker)
	s.Policy.Jitter = 0
	s.Logger = quiet
	return s
}

// runFor runs s in the bubble for d of fake time, then stops it and
// checks that Run returned.
func runFor(t *testing.T, s *crawl.Scheduler, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(d)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestRunFirstIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ws := []*changedigest.Watch{
			{ID: 1, URL: "http://a.test/", Category: changedigest.CategoryNews},
			{ID: 2, URL: "http://b.test/", Category: changedigest.CategoryPersonal},
			{ID: 3, URL: "http://c.test/", Category: changedigest.CategoryAcademic},
			{ID: 4, URL: "http://d.test/", Category: changedigest.CategoryAcademic, Interval: 90 * time.Minute},
			{ID: 5, URL: "http://e.test/", Paused: true},
			{ID: 6, URL: "http://f.test/", NextCheck: start.Add(30 * time.Minute)},
		}
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		rec.result = func(w *changedigest.Watch, n int) (crawl.Outcome, error) {
			return crawl.Outcome{Result: crawl.FirstVersion, ETag: fmt.Sprintf(`"%d-%d"`, w.ID, n)}, nil
		}
		runFor(t, newScheduler(store, rec), 10*time.Minute)

		want := map[int64]time.Duration{1: time.Hour, 2: 24 * time.Hour, 3: 48 * time.Hour, 4: 90 * time.Minute}
		for id, iv := range want {
			w := store.Watch(id)
			if w.Checks != 1 || w.ETag != fmt.Sprintf(`"%d-1"`, id) {
				t.Errorf("watch %d: checks %d etag %q", id, w.Checks, w.ETag)
			}
			if got := w.NextCheck.Sub(w.LastCheck); got != iv {
				t.Errorf("watch %d: next check %s after the first, want %s", id, got, iv)
			}
		}
		if w := store.Watch(5); w.Checks != 0 {
			t.Errorf("paused watch was checked")
		}
		if w := store.Watch(6); w.Checks != 0 {
			t.Errorf("watch not yet due was checked")
		}
	})
}

func TestRunRechecksWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := crawltest.NewMemStore(watches(3, 3, changedigest.CategoryNews)...)
		rec := newRecorder()
		runFor(t, newScheduler(store, rec), 3*time.Hour+time.Minute)
		for _, w := range store.Watches() {
			// Checked at 0, 1 h, 2 h and 3 h.
			if w.Checks != 4 || len(w.Samples) != 3 {
				t.Errorf("watch %d: %d checks, %d samples; want 4 and 3", w.ID, w.Checks, len(w.Samples))
			}
		}
	})
}

func TestRunRespectsPoolBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := crawltest.NewMemStore(watches(100, 100, changedigest.CategoryNews)...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return time.Second }
		s := newScheduler(store, rec)
		s.Workers = 4
		runFor(t, s, 30*time.Second)
		if rec.peak != 4 {
			t.Errorf("peak concurrency %d, want the pool bound 4", rec.peak)
		}
		if n := len(rec.snapshot()); n < 100 {
			t.Errorf("%d checks in 30 s with 4 workers and 1 s checks, want all 100", n)
		}
	})
}

func TestRunHostPoliteness(t *testing.T) {
	for _, skipping := range []bool{false, true} {
		t.Run(map[bool]string{false: "saved", true: "in memory"}[skipping], func(t *testing.T) {
			testHostPoliteness(t, skipping)
		})
	}
}

// skippingStore is a MemStore that can leave out the watches the
// scheduler is checking or has postponed (crawl.DueSkipper).
type skippingStore struct{ *crawltest.MemStore }

func (s skippingStore) DueWatchesSkipping(ctx context.Context, now time.Time, limit int, skip func(int64) bool) ([]*changedigest.Watch, error) {
	ws, err := s.DueWatches(ctx, now, 1<<20)
	out := ws[:0]
	for _, w := range ws {
		if !skip(w.ID) && len(out) < limit {
			out = append(out, w)
		}
	}
	return out, err
}

// testHostPoliteness: a slow host's watches are checked one at a time,
// the host gap apart, without holding up other hosts; with a skipping
// store the busy host's waiting watches cost no writes.
func testHostPoliteness(t *testing.T, skipping bool) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		// 10 watches on one slow host, 10 on ten other hosts.
		var ws []*changedigest.Watch
		for i := range 10 {
			ws = append(ws, &changedigest.Watch{ID: int64(i + 1), URL: fmt.Sprintf("http://busy.test/%d", i), Category: changedigest.CategoryNews})
		}
		for i := range 10 {
			ws = append(ws, &changedigest.Watch{ID: int64(i + 11), URL: fmt.Sprintf("http://other%d.test/", i), Category: changedigest.CategoryNews})
		}
		mem := crawltest.NewMemStore(ws...)
		var store crawl.Store = mem
		if skipping {
			store = skippingStore{mem}
		}
		rec := newRecorder()
		rec.took = func(w *changedigest.Watch) time.Duration {
			if strings.Contains(w.URL, "busy") {
				return 3 * time.Second
			}
			return 100 * time.Millisecond
		}
		s := newScheduler(store, rec)
		s.Workers = 4
		s.HostGap = 2 * time.Second
		s.Tick = time.Hour // only completions and slot timers wake the loop
		runFor(t, s, 2*time.Minute)

		if rec.hostPeak != 1 {
			t.Errorf("a host saw %d requests at once", rec.hostPeak)
		}
		var busy []event
		for _, e := range rec.snapshot() {
			if e.host == "busy.test" {
				busy = append(busy, e)
			} else if d := e.start.Sub(start); d > 5*time.Second {
				t.Errorf("watch %d on an idle host waited %s behind the busy one", e.id, d)
			}
		}
		if len(busy) != 10 {
			t.Fatalf("busy host: %d checks, want 10", len(busy))
		}
		slices.SortFunc(busy, func(a, b event) int { return a.start.Compare(b.start) })
		for i := 1; i < len(busy); i++ {
			if gap := busy[i].start.Sub(busy[i-1].end); gap < 2*time.Second {
				t.Errorf("busy host: %s between checks %d and %d, want at least the 2 s gap", gap, busy[i-1].id, busy[i].id)
			}
		}
		// Postponed watches got staggered turns, and a worker never sat
		// waiting for the busy host.
		if last := busy[len(busy)-1].start.Sub(start); last > 70*time.Second {
			t.Errorf("10 checks of 3 s with 2 s gaps took until %s", last)
		}
		// One save a check; with a skipping store, none for a postponement.
		if checks := len(rec.snapshot()); skipping && mem.Saves() != checks {
			t.Errorf("%d saves for %d checks: postponing wrote to the store", mem.Saves(), checks)
		} else if !skipping && mem.Saves() <= checks {
			t.Errorf("%d saves for %d checks: the busy host's watches were never postponed", mem.Saves(), checks)
		}
	})
}

// TestRunWakesForPostponedWatches checks that a watch postponed to a
// later slot is checked at that slot even when nothing else wakes the
// loop (no check in flight, no tick for an hour).
func TestRunWakesForPostponedWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ws := watches(3, 1, changedigest.CategoryNews)
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		s := newScheduler(store, rec)
		s.HostGap = 2 * time.Second
		s.Tick = time.Hour
		runFor(t, s, 10*time.Second)
		var got []time.Duration
		for _, e := range rec.snapshot() {
			got = append(got, e.start.Sub(start))
		}
		if len(got) != 3 || got[2] > 5*time.Second {
			t.Errorf("checks started at %v, want three within 5 s", got)
		}
	})
}

// TestRunWake checks that a watch made due while the loop sleeps (no
// tick for an hour) is checked as soon as Wake is called, and only then.
func TestRunWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ws := watches(1, 1, changedigest.CategoryNews)
		ws[0].NextCheck = start.Add(24 * time.Hour)
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		s := newScheduler(store, rec)
		s.Tick = time.Hour
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(10 * time.Second)
		w := store.Watch(ws[0].ID)
		w.NextCheck = time.Now() // a report made it due
		store.Put(w)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := len(rec.snapshot()); n != 0 {
			t.Fatalf("%d checks before Wake, want none (the next tick is an hour away)", n)
		}
		s.Wake()
		time.Sleep(time.Second)
		synctest.Wait()
		got := rec.snapshot()
		if len(got) != 1 || got[0].start.Sub(start) > 21*time.Second {
			t.Errorf("checks after Wake: %d, want one at once", len(got))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
}

func TestRunShutdownCancelsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := crawltest.NewMemStore(watches(20, 20, changedigest.CategoryNews)...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return time.Hour }
		s := newScheduler(store, rec)
		s.Workers = 5
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		if rec.running != 5 {
			t.Fatalf("%d checks running, want 5", rec.running)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(time.Second):
			t.Fatal("Run did not return within a second of cancellation")
		}
		if rec.running != 0 {
			t.Errorf("%d checks still running after Run returned", rec.running)
		}
		// The cancelled checks left their watches as they were: still
		// due, no error recorded.
		for _, w := range store.Watches() {
			if w.ErrorCount != 0 || w.LastError != "" || w.Checks != 0 || !w.NextCheck.IsZero() {
				t.Errorf("watch %d changed by a cancelled check: %+v", w.ID, w)
			}
		}
		// synctest.Test fails if any goroutine of the bubble is left.
	})
}

func TestRunErrorsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		store := crawltest.NewMemStore(watches(1, 1, changedigest.CategoryNews)...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return 0 }
		rec.result = func(w *changedigest.Watch, n int) (crawl.Outcome, error) {
			return crawl.Outcome{}, fmt.Errorf("crawl: GET %s: %w", w.URL, crawl.ErrConnect)
		}
		runFor(t, newScheduler(store, rec), 16*time.Hour)
		var offsets []time.Duration
		for _, e := range rec.snapshot() {
			offsets = append(offsets, e.start.Sub(start).Round(time.Second))
		}
		// Failures at 0, then after 5, 15 and 45 min, then 1 h, 2 h, 4 h,
		// 8 h.
		m := time.Minute
		want := []time.Duration{0, 5 * m, 20 * m, 65 * m, 125 * m, 245 * m, 485 * m}
		if fmt.Sprint(offsets) != fmt.Sprint(want) {
			t.Errorf("checks at %v, want %v", offsets, want)
		}
		w := store.Watch(1)
		if w.ErrorCount != 7 || !strings.Contains(w.LastError, "connection failed") || w.Checks != 0 {
			t.Errorf("error state: count %d, last %q, checks %d", w.ErrorCount, w.LastError, w.Checks)
		}
	})
}

func TestRunHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ws := watches(3, 1, changedigest.CategoryNews) // one host
		ws[0].URL = "http://throttled.test/a"
		ws[1].URL = "http://throttled.test/b"
		ws[1].NextCheck = start.Add(10 * time.Minute)
		ws[2].URL = "http://free.test/"
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return 0 }
		rec.result = func(w *changedigest.Watch, n int) (crawl.Outcome, error) {
			if w.ID == 1 && n == 1 {
				return crawl.Outcome{}, &crawl.HTTPError{URL: w.URL, StatusCode: 429, RetryAfter: time.Now().Add(3 * time.Hour)}
			}
			return crawl.Outcome{Result: crawl.Unchanged}, nil
		}
		s := newScheduler(store, rec)
		s.MaxHostDelay = 30 * time.Minute
		runFor(t, s, 4*time.Hour)
		first := map[int64][]time.Duration{}
		for _, e := range rec.snapshot() {
			first[e.id] = append(first[e.id], e.start.Sub(start).Round(time.Second))
		}
		// Watch 1 asked to wait 3 h; watch 2 on the same host waits the
		// host's share of it (capped at 30 min), not its own 10 min;
		// watch 3 on another host is not held up.
		if got := first[1]; len(got) < 2 || got[1] != 3*time.Hour {
			t.Errorf("throttled watch checked at %v, want its second check at 3h", got)
		}
		if got := first[2]; len(got) == 0 || got[0] < 30*time.Minute || got[0] > 31*time.Minute {
			t.Errorf("watch on the throttled host checked at %v, want at 30m", got)
		}
		if got := first[3]; len(got) == 0 || got[0] != 0 {
			t.Errorf("watch on another host checked at %v, want at 0", got)
		}
		if w := store.Watch(1); w.RetryAfter.IsZero() && w.Checks == 0 {
			t.Errorf("RetryAfter was not recorded")
		}
	})
}

func TestRunCheckTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := crawltest.NewMemStore(watches(1, 1, changedigest.CategoryNews)...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return time.Hour }
		s := newScheduler(store, rec)
		s.CheckTimeout = time.Minute
		runFor(t, s, 2*time.Minute)
		if w := store.Watch(1); w.ErrorCount != 1 || !strings.Contains(w.LastError, "deadline exceeded") {
			t.Errorf("stuck check: errors %d, last %q", w.ErrorCount, w.LastError)
		}
	})
}

func TestRunSurvivesPanickingChecker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := crawltest.NewMemStore(watches(2, 2, changedigest.CategoryNews)...)
		checker := crawl.CheckFunc(func(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
			if w.ID == 1 {
				var m map[string]int
				m["boom"]++ // a bug in the pipeline
			}
			return crawl.Outcome{Result: crawl.Changed}, nil
		})
		runFor(t, newScheduler(store, checker), time.Minute)
		if w := store.Watch(1); w.ErrorCount != 1 || !strings.Contains(w.LastError, "internal error") {
			t.Errorf("panicking check: errors %d, last %q", w.ErrorCount, w.LastError)
		}
		if w := store.Watch(2); w.Checks != 1 || w.ChangeChecks != 1 {
			t.Errorf("other watch: checks %d changes %d", w.Checks, w.ChangeChecks)
		}
	})
}

func TestRunStateSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		store := crawltest.NewMemStore(watches(5, 5, changedigest.CategoryAcademic)...)
		rec := newRecorder()
		runFor(t, newScheduler(store, rec), time.Minute)
		// A new scheduler on the same store does not recheck before the
		// saved due times (48 h).
		rec2 := newRecorder()
		runFor(t, newScheduler(store, rec2), 47*time.Hour)
		if n := len(rec2.snapshot()); n != 0 {
			t.Errorf("restarted scheduler checked %d watches before they were due", n)
		}
		for _, w := range store.Watches() {
			if want := start.Add(48 * time.Hour); w.NextCheck.Sub(want).Abs() > time.Second {
				t.Errorf("watch %d due at %v, want %v", w.ID, w.NextCheck, want)
			}
		}
	})
}

func TestCheckNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ws := watches(6, 2, changedigest.CategoryNews)
		for _, w := range ws {
			w.NextCheck = start.Add(24 * time.Hour) // none is due
		}
		ws[5].Paused = true // an explicit check runs it anyway
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return time.Second }
		rec.result = func(w *changedigest.Watch, n int) (crawl.Outcome, error) {
			switch w.ID {
			case 1:
				return crawl.Outcome{Result: crawl.Changed}, nil
			case 2:
				return crawl.Outcome{Result: crawl.NotModified}, nil
			case 3:
				return crawl.Outcome{}, &crawl.HTTPError{URL: w.URL, StatusCode: 404}
			}
			return crawl.Outcome{Result: crawl.Unchanged}, nil
		}
		s := newScheduler(store, rec)
		s.HostGap = 5 * time.Second
		var reports []crawl.Report
		sum, err := s.CheckNow(t.Context(), func(r crawl.Report) { reports = append(reports, r) }, ws...)
		if err != nil {
			t.Fatal(err)
		}
		want := crawl.Summary{Checked: 6, Changed: 1, NotModified: 1, Failed: 1, Unchanged: 3}
		if sum != want {
			t.Errorf("summary %+v, want %+v", sum, want)
		}
		if len(reports) != 6 || reports[5].Done != 6 || reports[5].Total != 6 || reports[0].Done != 1 {
			t.Errorf("progress: %d reports", len(reports))
		}
		for _, r := range reports {
			if (r.Watch.ID == 3) != (r.Err != nil) {
				t.Errorf("report for watch %d: err %v", r.Watch.ID, r.Err)
			}
		}
		// Two hosts, three watches each, 1 s checks, 5 s gaps: 13 s.
		if took := time.Since(start); took != 13*time.Second {
			t.Errorf("CheckNow took %s, want 13s", took)
		}
		if rec.hostPeak != 1 {
			t.Errorf("host peak %d", rec.hostPeak)
		}
		if w := store.Watch(3); w.ErrorCount != 1 || !strings.Contains(w.LastError, "404") {
			t.Errorf("failed watch saved as %+v", w)
		}
		if w := store.Watch(1); w.Checks != 1 || w.NextCheck.Sub(time.Now()) > time.Hour {
			t.Errorf("checked watch saved as checks %d next %v", w.Checks, w.NextCheck)
		}
	})
}

func TestCheckNowCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ws := watches(10, 1, changedigest.CategoryNews)
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return time.Second }
		s := newScheduler(store, rec)
		ctx, cancel := context.WithTimeout(t.Context(), 5500*time.Millisecond)
		defer cancel()
		sum, err := s.CheckNow(ctx, nil, ws...)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "of 10") {
			t.Errorf("err = %v", err)
		}
		if sum.Checked < 2 || sum.Checked > 4 {
			t.Errorf("checked %d before the deadline", sum.Checked)
		}
		// Every claim was released: a second pass checks all ten.
		sum, err = s.CheckNow(t.Context(), nil, ws...)
		if err != nil || sum.Checked != 10 || sum.Skipped != 0 {
			t.Errorf("second pass: %+v, %v", sum, err)
		}
	})
}

func TestCheckNowSkipsWatchesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ws := watches(2, 2, changedigest.CategoryNews)
		store := crawltest.NewMemStore(ws...)
		var calls atomic.Int32
		release := make(chan struct{})
		checker := crawl.CheckFunc(func(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
			calls.Add(1)
			if w.ID == 1 {
				select {
				case <-release:
				case <-ctx.Done():
					return crawl.Outcome{}, ctx.Err()
				}
			}
			return crawl.Outcome{Result: crawl.Unchanged}, nil
		})
		s := newScheduler(store, checker)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(time.Second)
		synctest.Wait()
		sum, err := s.CheckNow(t.Context(), nil, ws[0])
		if err != nil || sum.Skipped != 1 || sum.Checked != 0 {
			t.Errorf("CheckNow of a watch in flight: %+v, %v", sum, err)
		}
		close(release)
		cancel()
		<-done
		if n := calls.Load(); n != 2 {
			t.Errorf("%d checks, want 2", n)
		}
	})
}

func TestOutcomeOfResponse(t *testing.T) {
	r := &crawl.Response{NotModified: true, ETag: `"x"`, LastModified: "then"}
	if o := r.Outcome(crawl.Changed); o.Result != crawl.NotModified || o.ETag != `"x"` || o.LastModified != "then" {
		t.Errorf("Outcome of a 304 = %+v", o)
	}
	r = &crawl.Response{Status: 200, ETag: `"y"`}
	if o := r.Outcome(crawl.Changed); o.Result != crawl.Changed || o.ETag != `"y"` {
		t.Errorf("Outcome of a 200 = %+v", o)
	}
}

// TestGapFollowsTheHost checks the delay factor: a host that answers in
// 20 ms is asked again GapFactor times that later, not HostGap later;
// one that answers slowly or fails waits the full HostGap. The watches
// postponed before the first answer get their turns retimed.
func TestGapFollowsTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var ws []*changedigest.Watch
		for i := range 10 {
			for _, host := range []string{"fast", "slow", "failing"} {
				ws = append(ws, &changedigest.Watch{ID: int64(len(ws) + 1), URL: fmt.Sprintf("http://%s.test/%d", host, i), Category: changedigest.CategoryNews})
			}
		}
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		answer := map[string]time.Duration{"fast.test": 20 * time.Millisecond, "slow.test": 300 * time.Millisecond, "failing.test": 20 * time.Millisecond}
		rec.took = func(w *changedigest.Watch) time.Duration { return answer[hostOf(w.URL)] }
		rec.result = func(w *changedigest.Watch, _ int) (crawl.Outcome, error) {
			if hostOf(w.URL) == "failing.test" {
				return crawl.Outcome{}, &crawl.HTTPError{URL: w.URL, StatusCode: 500}
			}
			return crawl.Outcome{Result: crawl.Unchanged, Answer: answer[hostOf(w.URL)]}, nil
		}
		s := newScheduler(store, rec)
		s.Workers = 4
		s.HostGap = 2 * time.Second
		s.GapFactor = 10
		if _, err := s.CheckNow(t.Context(), nil, ws...); err != nil {
			t.Fatal(err)
		}
		if rec.hostPeak != 1 {
			t.Errorf("a host saw %d requests at once", rec.hostPeak)
		}
		byHost := map[string][]event{}
		for _, e := range rec.snapshot() {
			byHost[e.host] = append(byHost[e.host], e)
		}
		want := map[string]time.Duration{"fast.test": 200 * time.Millisecond, "slow.test": 2 * time.Second, "failing.test": 2 * time.Second}
		for host, evs := range byHost {
			if len(evs) != 10 {
				t.Fatalf("%s: %d checks, want 10", host, len(evs))
			}
			slices.SortFunc(evs, func(a, b event) int { return a.start.Compare(b.start) })
			var longest time.Duration
			for i := 1; i < len(evs); i++ {
				gap := evs[i].start.Sub(evs[i-1].end)
				if gap < want[host] {
					t.Errorf("%s: %s between checks %d and %d, want at least %s", host, gap, evs[i-1].id, evs[i].id, want[host])
				}
				longest = max(longest, gap)
			}
			// The turns handed out before the first answer are retimed:
			// no fast check waits a slow host's gap.
			if host == "fast.test" && longest > 300*time.Millisecond {
				t.Errorf("fast host: a gap of %s, want about 200ms", longest)
			}
		}
		// The slow and failing hosts set the pace: 9 gaps of 2 s.
		if took := time.Since(start); took > 22*time.Second {
			t.Errorf("CheckNow took %s", took)
		}
	})
}

// TestGapFactorZeroKeepsHostGap checks that GapFactor 0 spaces every
// request to a host by HostGap, however fast it answers.
func TestGapFactorZeroKeepsHostGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ws := watches(4, 1, changedigest.CategoryNews)
		store := crawltest.NewMemStore(ws...)
		rec := newRecorder()
		rec.took = func(*changedigest.Watch) time.Duration { return 10 * time.Millisecond }
		rec.result = func(*changedigest.Watch, int) (crawl.Outcome, error) {
			return crawl.Outcome{Result: crawl.Unchanged, Answer: 10 * time.Millisecond}, nil
		}
		s := newScheduler(store, rec)
		s.HostGap, s.GapFactor = time.Second, 0
		if _, err := s.CheckNow(t.Context(), nil, ws...); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 3*time.Second+40*time.Millisecond {
			t.Errorf("4 checks of 10 ms with 1 s gaps took %s, want 3.04s", took)
		}
	})
}

// TestAnsweredFreesTheHost: a check that says its host has answered
// (crawl.Answered) frees the host then, so the host's gap runs while the
// check compares and stores, and its next request need not wait for
// that; requests to the host still never overlap and keep the gap.
func TestAnsweredFreesTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fetch, store, gap = 20 * time.Millisecond, 300 * time.Millisecond, 200 * time.Millisecond
		start := time.Now()
		ws := watches(5, 1, changedigest.CategoryNews)
		var (
			mu       sync.Mutex
			requests [][2]time.Time
			checks   [][2]time.Time
		)
		checker := crawl.CheckFunc(func(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
			begin := time.Now()
			time.Sleep(fetch)
			answered := time.Now()
			crawl.Answered(ctx, fetch)
			crawl.Answered(ctx, time.Hour) // once per check: ignored
			time.Sleep(store)
			mu.Lock()
			requests = append(requests, [2]time.Time{begin, answered})
			checks = append(checks, [2]time.Time{begin, time.Now()})
			mu.Unlock()
			return crawl.Outcome{Result: crawl.Changed, Answer: fetch}, nil
		})
		s := newScheduler(crawltest.NewMemStore(ws...), checker)
		s.Workers, s.HostGap, s.GapFactor = 4, time.Second, 10
		sum, err := s.CheckNow(t.Context(), nil, ws...)
		if err != nil || sum.Changed != 5 {
			t.Fatalf("CheckNow: %+v, %v", sum, err)
		}
		slices.SortFunc(requests, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
		overlapped := false
		for i := 1; i < len(requests); i++ {
			if d := requests[i][0].Sub(requests[i-1][1]); d < gap {
				t.Errorf("request %d came %s after the one before answered, want at least %s", i, d, gap)
			}
		}
		slices.SortFunc(checks, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
		for i := 1; i < len(checks); i++ {
			overlapped = overlapped || checks[i][0].Before(checks[i-1][1])
		}
		if !overlapped {
			t.Error("no check of the host started before the one before it had stored")
		}
		// Four gaps after four answers, then the last check whole.
		if took, want := time.Since(start), 4*(fetch+gap)+fetch+store; took != want {
			t.Errorf("5 checks took %s, want %s", took, want)
		}
	})
}

// TestAnsweredOutsideAScheduler: a checker run on its own may call it.
func TestAnsweredOutsideAScheduler(t *testing.T) {
	crawl.Answered(t.Context(), time.Second)
}

// TestRunHoldsWatches: a watch Hold reports is not checked, and is asked
// about again an hour later; once Hold lets it go, it is checked.
func TestRunHoldsWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := crawltest.NewMemStore(watches(2, 2, changedigest.CategoryNews)...)
		rec := newRecorder()
		s := newScheduler(store, rec)
		var asked atomic.Int32
		held := atomic.Bool{}
		held.Store(true)
		s.Hold = func(w *changedigest.Watch) bool {
			if w.ID != 1 {
				return false
			}
			asked.Add(1)
			return held.Load()
		}
		runFor(t, s, 30*time.Minute)
		if w := store.Watch(1); w.Checks != 0 {
			t.Errorf("a held watch was checked %d times", w.Checks)
		}
		if w := store.Watch(2); w.Checks != 1 {
			t.Errorf("the other watch: %d checks, want 1", w.Checks)
		}
		if n := asked.Load(); n != 1 {
			t.Errorf("Hold asked %d times in half an hour, want once (the turn moves an hour on)", n)
		}
		held.Store(false)
		runFor(t, s, 31*time.Minute)
		if w := store.Watch(1); w.Checks != 1 {
			t.Errorf("let go: %d checks, want 1", w.Checks)
		}
	})
}
