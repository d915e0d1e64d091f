package crawl_test

import (
	"context"
	"crypto/md5"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

// hashChecker is the shape of the check pipeline, with an MD5 of the body
// standing in for segmentation and the track: fetch conditionally, then
// compare with the last version.
type hashChecker struct {
	f    *crawl.Fetcher
	mu   sync.Mutex
	last map[int64][md5.Size]byte
}

func newHashChecker() *hashChecker {
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	return &hashChecker{f: f, last: map[int64][md5.Size]byte{}}
}

func (c *hashChecker) Check(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
	res, err := c.f.Fetch(ctx, crawl.WatchRequest(w))
	if err != nil {
		return crawl.Outcome{}, err
	}
	if res.NotModified {
		return res.Outcome(crawl.NotModified), nil
	}
	sum := md5.Sum(res.Raw)
	c.mu.Lock()
	prev, seen := c.last[w.ID]
	c.last[w.ID] = sum
	c.mu.Unlock()
	switch {
	case !seen:
		return res.Outcome(crawl.FirstVersion), nil
	case prev == sum:
		return res.Outcome(crawl.Unchanged), nil
	}
	return res.Outcome(crawl.Changed), nil
}

// TestScheduleFarm runs the scheduler, the fetcher and a hashing checker
// against a loopback farm in real time, until every watch has had four
// checks.
func TestScheduleFarm(t *testing.T) {
	const hosts, pages, static, checks = 4, 40, 10, 4
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: hosts, Pages: pages, Size: 4 << 10, Seed: 3,
		Rate: func(i int) float64 {
			if i < static {
				return 0
			}
			return 100 // changes per second: every check sees one
		}})
	ws := farm.Watches(changedigest.CategoryNews)
	for _, w := range ws {
		w.Interval = 200 * time.Millisecond
	}
	store := crawltest.NewMemStore(ws...)
	s := crawl.NewScheduler(store, newHashChecker())
	s.Logger = quiet
	s.Workers = 8
	s.HostGap = 10 * time.Millisecond
	s.Tick = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	seen := map[int64]int{}
	s.OnCheck = func(r crawl.Report) {
		if r.Err != nil {
			t.Errorf("watch %d: %v", r.Watch.ID, r.Err)
		}
		seen[r.Watch.ID]++
		for _, w := range ws {
			if seen[w.ID] < checks {
				return
			}
		}
		cancel()
	}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("not every watch had %d checks within a minute: %v", checks, seen)
	}
	for h := range hosts {
		if n := farm.MaxConcurrent(h); n != 1 {
			t.Errorf("host %d served %d requests at once", h, n)
		}
	}
	total, full, notModified := farm.Requests()
	t.Logf("%d requests: %d full, %d not modified", total, full, notModified)
	for i, w := range store.Watches() {
		if w.Checks < checks || w.ErrorCount != 0 {
			t.Errorf("watch %d: %d checks, %d errors", w.ID, w.Checks, w.ErrorCount)
		}
		if i < static && (w.ChangeChecks != 0 || farm.Pages[i].Full.Load() != 1) {
			t.Errorf("static page %d: %d changes, %d full fetches", i, w.ChangeChecks, farm.Pages[i].Full.Load())
		}
		if i >= static && w.ChangeChecks < w.Checks-2 {
			t.Errorf("changing page %d: %d changes seen in %d checks", i, w.ChangeChecks, w.Checks)
		}
		if w.ETag == "" || len(w.Samples) != w.Checks-1 {
			t.Errorf("watch %d: ETag %q, %d samples for %d checks", w.ID, w.ETag, len(w.Samples), w.Checks)
		}
	}
}

// BenchmarkSchedulerLoop measures the scheduling loop alone: 10,000 due
// watches on 100 hosts, a checker that answers at once, an in-memory store.
func BenchmarkSchedulerLoop(b *testing.B) {
	const n, hosts = 10000, 100
	cpu := crawl.CPUTime()
	for b.Loop() {
		store := crawltest.NewMemStore(watches(n, hosts, changedigest.CategoryNews)...)
		checker := crawl.CheckFunc(func(context.Context, *changedigest.Watch) (crawl.Outcome, error) {
			return crawl.Outcome{Result: crawl.Unchanged}, nil
		})
		s := crawl.NewScheduler(store, checker)
		s.Logger = quiet
		s.HostGap = 0
		ctx, cancel := context.WithCancel(context.Background())
		count := 0
		s.OnCheck = func(crawl.Report) {
			if count++; count == n {
				cancel()
			}
		}
		s.Run(ctx)
		cancel()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "checks/s")
	b.ReportMetric(float64(crawl.CPUTime()-cpu)/float64(n*b.N), "cpu-ns/check")
}

// BenchmarkFarmFetch checks 10,000 watches spread over 100 loopback hosts
// twice with the real Fetcher and the hashing checker (no segmentation,
// no track): a first pass of 8 KiB pages, then a pass of 304 answers. It
// is the crawl share of the end-to-end figure; the farm's servers run in
// the same process, so the CPU time per check includes theirs.
func BenchmarkFarmFetch(b *testing.B) {
	const n, hosts = 10000, 100
	farm := crawltest.NewFarm(b, crawltest.FarmConfig{Hosts: hosts, Pages: n, Rate: func(int) float64 { return 0 }})
	var peak uint64
	cpu := crawl.CPUTime()
	for b.Loop() {
		ws := farm.Watches(changedigest.CategoryNews)
		store := crawltest.NewMemStore(ws...)
		s := crawl.NewScheduler(store, newHashChecker())
		s.Logger = quiet
		s.Workers = 32
		s.HostGap = 0
		for pass := range 2 {
			sum, err := s.CheckNow(context.Background(), nil, ws...)
			if err != nil || sum.Failed != 0 {
				b.Fatalf("pass %d: %+v, %v", pass, sum, err)
			}
			if pass == 1 && sum.NotModified != n {
				b.Fatalf("second pass: %+v, want all not modified", sum)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.Sys)
		}
	}
	b.ReportMetric(float64(2*n*b.N)/b.Elapsed().Seconds(), "checks/s")
	b.ReportMetric(float64(crawl.CPUTime()-cpu)/float64(2*n*b.N), "cpu-ns/check")
	b.ReportMetric(float64(peak)/(1<<20), "sys-MiB")
}
