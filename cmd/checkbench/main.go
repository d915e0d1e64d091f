// Command checkbench measures the whole check path at scale: a farm of
// changing pages on loopback, watched through the real scheduler, fetcher,
// segmenter and Page Evolution Track, and reports checks per second and
// the process's peak memory.
//
//	go run ./cmd/checkbench -watches 10000 -hosts 200
//
// It runs two passes over every watch: the first fetches and stores every
// page (a first version each); before the second, -change of the pages
// change, so the second pass is mostly conditional GETs answered 304 plus
// the detection and storage of the changed pages.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

func main() {
	watches := flag.Int("watches", 10000, "watches (one page each)")
	hosts := flag.Int("hosts", 200, "loopback hosts the pages are spread over")
	size := flag.Int("size", 32<<10, "page size in bytes")
	change := flag.Float64("change", 0.1, "fraction of pages that change between the passes")
	workers := flag.Int("workers", 32, "checks running at once")
	gap := flag.Duration("host-gap", 100*time.Millisecond, "least time between two requests to one host")
	users := flag.Int("users", 100, "users the watches are spread over")
	noSync := flag.Bool("nosync", false, "do not fsync the store on commit (faster, unsafe)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memProfile := flag.String("memprofile", "", "write a heap profile (allocations) after the first pass to this file")
	keep := flag.String("keep", "", "keep the store in this new `directory` (default: a temporary one, removed)")
	memLimit := flag.Int("memory-limit", 180, "soft memory limit in MB, as `serve` sets by default (0: none)")
	flag.Parse()
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && *memLimit > 0 {
		debug.SetMemoryLimit(int64(*memLimit) << 20)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkbench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*watches, *hosts, *size, *change, *workers, *gap, *users, *noSync, *memProfile, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "checkbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// tb stands in for testing.TB for the farm.
type tb struct{ cleanups []func() }

func (t *tb) Helper()          {}
func (t *tb) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *tb) close() {
	for _, f := range t.cleanups {
		f()
	}
}

func run(n, hosts, size int, change float64, workers int, gap time.Duration, nusers int, noSync bool, memProfile, keep string) error {
	ctx := context.Background()
	dir := keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "checkbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	t := &tb{}
	defer t.close()
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: hosts, Pages: n, Size: size,
		Rate: func(int) float64 { return 0 }})

	store := pet.New(dir)
	store.NoSync = noSync
	// Warnings (an index rebuild, a failed batch) change what is measured.
	store.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := store.Open(ctx); err != nil {
		return err
	}
	defer store.Close()
	var uids []int64
	for i := 0; i < nusers; i++ {
		u := &changedigest.User{Name: fmt.Sprintf("user%d", i), DigestHour: -1}
		if err := store.CreateUser(ctx, u); err != nil {
			return err
		}
		uids = append(uids, u.ID)
	}
	start := time.Now()
	ws := make([]*changedigest.Watch, n)
	for i := range n {
		w := &changedigest.Watch{UserID: uids[i%len(uids)], URL: farm.URL(i), Category: changedigest.CategoryNews}
		if err := store.CreateWatch(ctx, w); err != nil {
			return err
		}
		ws[i] = w
	}
	fmt.Printf("created %d watches for %d users in %s\n", n, nusers, time.Since(start).Round(time.Millisecond))
	stopSampling := sampleMemory()

	f := crawl.NewFetcher()
	f.AllowPrivate = true
	p := crawl.NewPipeline(f, segmenter.New(), store)
	sched := crawl.NewScheduler(store, p)
	sched.Workers, sched.HostGap = workers, gap
	sched.Logger = slog.New(slog.DiscardHandler)

	pass := func(name string) error {
		start, cpu0 := time.Now(), cpuTime()
		sum, err := sched.CheckNow(ctx, nil, ws...)
		if err != nil {
			return err
		}
		// The index work a pass leaves pending belongs to it.
		if _, err := store.Stats(ctx); err != nil {
			return err
		}
		d, cpu := time.Since(start), cpuTime()-cpu0
		fmt.Printf("%-7s %d checks in %s: %.0f checks/s (first %d, changed %d, unchanged %d, not modified %d, failed %d)\n",
			name, sum.Checked, d.Round(time.Millisecond), float64(sum.Checked)/d.Seconds(),
			sum.FirstVersion, sum.Changed, sum.Unchanged, sum.NotModified, sum.Failed)
		fmt.Printf("%-7s cpu (user+sys, whole process, the farm included) %s: %.2f ms per check, %.0f checks per cpu-second\n",
			name, cpu.Round(time.Millisecond), float64(cpu.Microseconds())/1000/float64(sum.Checked),
			float64(sum.Checked)/cpu.Seconds())
		return nil
	}
	if err := pass("first"); err != nil {
		return err
	}
	if memProfile != "" {
		f, err := os.Create(memProfile)
		if err != nil {
			return err
		}
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	changed := int(float64(n) * change)
	for i := 0; i < changed; i++ {
		farm.Pages[(i*7919)%n].Touch()
	}
	if err := pass("second"); err != nil {
		return err
	}
	stopSampling()
	st, err := store.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("memory: peak RSS %s: anonymous (Go heap, stacks) peak %d MB, file-backed (the store's memory maps) peak %d MB; Go heap peak %d MB\n",
		peakRSS(), peak.anon>>20, peak.file>>20, peak.heap>>20)
	fmt.Printf("store: %d versions, %d segments, chunks %d MB, pet.db in use %d MB (file %d MB), index %d MB (live %d MB, %d docs); %d pages of %d KB on %d hosts, %d workers, host gap %s, GOMAXPROCS %d\n",
		st.Versions, st.Segments, st.ChunkBytes>>20, st.DBBytes>>20, st.FileBytes>>20, st.IndexBytes>>20, st.IndexLiveBytes>>20, st.IndexDocs,
		n, size>>10, hosts, workers, gap, runtime.GOMAXPROCS(0))
	return nil
}

// peaks of memory use, sampled while the benchmark runs.
var peak struct {
	mu               sync.Mutex
	anon, file, heap int64
}

// sampleMemory records peak memory every 100 ms until the returned
// function is called.
func sampleMemory() func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			anon, file := rss()
			peak.mu.Lock()
			peak.anon, peak.file, peak.heap = max(peak.anon, anon), max(peak.file, file), max(peak.heap, int64(ms.HeapInuse))
			peak.mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// rss reads the resident anonymous and file-backed memory (Linux).
func rss() (anon, file int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v int64
		if _, err := fmt.Sscanf(line, "RssAnon: %d kB", &v); err == nil {
			anon = v << 10
		} else if _, err := fmt.Sscanf(line, "RssFile: %d kB", &v); err == nil {
			file = v << 10
		}
	}
	return anon, file
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS reads the process's peak resident set size (Linux).
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
