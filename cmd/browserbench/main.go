// Command browserbench measures what a check of a browser-rendered watch
// costs: real corpus pages (and one page built by JavaScript) served from
// loopback, checked through the real pipeline, browser pool, segmenter
// and Page Evolution Track, with the CPU time and memory of Chromium's
// whole process tree and of the service.
//
//	go run ./cmd/browserbench -pages 20 -tabs 2
//
// Each page is checked -rounds times (the first stores a first version,
// later ones find it unchanged or changed). CPU is user+sys: the service's
// from getrusage (less the sampler's own thread), Chromium's from
// /proc/PID/stat of every process in its tree (children that exited are
// in their parent's cutime/cstime). Memory is sampled every 50 ms: the
// sum of RSS and of PSS (shared pages split between processes) over the
// tree, and the service's peak RSS (VmHWM).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/browser"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
	"github.com/changedigest/changedigest/visual"
)

func main() {
	pages := flag.Int("pages", 20, "corpus pages to watch")
	shops := flag.Int("shops", 1, "small pages built by JavaScript to watch")
	rounds := flag.Int("rounds", 2, "checks of each page")
	tabs := flag.Int("tabs", 2, "browser tabs (checks running at once)")
	exe := flag.String("chromium", "", "Chromium binary (default: on the PATH)")
	shots := flag.Bool("shots", true, "take a screenshot of each version (as watches do); -shots=false measures without")
	corpus := flag.String("corpus", cmp.Or(os.Getenv("CHANGEDIGEST_CORPUS"), filepath.Join("..", "shared", "corpus")), "the shared test corpus")
	flag.Parse()
	if err := run(*pages, *shops, *rounds, *tabs, *exe, *corpus, *shots); err != nil {
		fmt.Fprintln(os.Stderr, "browserbench:", err)
		os.Exit(1)
	}
}

const jsPage = `<!DOCTYPE html><html><head><title>Shop</title></head><body><div id="root">Loading</div>
<script>
fetch("/api/items").then(r => r.json()).then(items => {
  const root = document.getElementById("root");
  root.textContent = "";
  for (const it of items) {
    const a = document.createElement("article");
    const h = document.createElement("h2"); h.textContent = it.name;
    const p = document.createElement("p"); p.textContent = it.text;
    a.append(h, p); root.appendChild(a);
  }
});
</script></body></html>`

func run(npages, shops, rounds, tabs int, exe, corpus string, shots bool) error {
	files, err := filepath.Glob(filepath.Join(corpus, "pages", "readability", "pages", "*", "source.html"))
	if err != nil || (len(files) == 0 && npages > 0) {
		return fmt.Errorf("no corpus pages under %s (give -corpus)", corpus)
	}
	sort.Strings(files)
	if len(files) > npages {
		// Spread the choice over the corpus rather than take the first few.
		step := float64(len(files)) / float64(npages)
		var pick []string
		for i := range npages {
			pick = append(pick, files[int(float64(i)*step)])
		}
		files = pick
	}
	bodies := map[string][]byte{}
	var total int
	for i, f := range files[:min(npages, len(files))] {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		bodies[fmt.Sprintf("/p/%d", i)] = b
		total += len(b)
	}
	var round atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/shop":
			fmt.Fprint(w, jsPage)
		case p == "/api/items":
			fmt.Fprintf(w, `[{"name":"Kettle","text":"In stock: %d"},{"name":"Toaster","text":"Four slots and a crumb tray."}]`, 10+round.Load())
		case bodies[p] != nil:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(bodies[p])
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	dir, err := os.MkdirTemp("", "browserbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store := pet.New(dir)
	store.Logger = slog.New(slog.DiscardHandler)
	if err := store.Open(ctx); err != nil {
		return err
	}
	defer store.Close()
	u := &changedigest.User{Name: "bench", DigestHour: -1}
	if err := store.CreateUser(ctx, u); err != nil {
		return err
	}
	var watches []*changedigest.Watch
	var paths []string
	for i := range shops {
		paths = append(paths, fmt.Sprintf("/shop?n=%d", i))
	}
	for p := range bodies {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		w := &changedigest.Watch{UserID: u.ID, URL: srv.URL + p, Render: changedigest.RenderBrowser}
		if err := store.CreateWatch(ctx, w); err != nil {
			return err
		}
		watches = append(watches, w)
	}
	f := crawl.NewFetcher()
	f.Allow = []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}
	pool := browser.NewPool(f.DialContext)
	pool.Exec, pool.Tabs = exe, tabs
	pool.Logger = slog.New(slog.DiscardHandler)
	pool.PagesPerBrowser = 1 << 30 // one process for the whole run, so its tree can be followed
	pool.NoScreenshots = !shots
	defer pool.Close()
	pipe := crawl.NewPipeline(f, segmenter.New(), store)
	pipe.Renderer = pool

	smp := &sampler{}
	// Time to the first check of a new browser watch: Chromium starts.
	cpu0, self0 := smp.chromiumCPU(0), selfCPU()
	start := time.Now()
	if _, err := pipe.Check(ctx, watches[0]); err != nil {
		return fmt.Errorf("first check: %w", err)
	}
	first := time.Since(start)
	pid := pool.Stats().PID
	firstCPU := smp.chromiumCPU(pid) - cpu0 + selfCPU() - self0
	time.Sleep(time.Second)
	idle := smp.memory(pid)
	fmt.Printf("first check of a new browser watch (Chromium starts): %s wall, %.0f ms CPU; idle browser: RSS %.0f MB, PSS %.0f MB in %d processes\n",
		first.Round(time.Millisecond), firstCPU.Seconds()*1000, mb(idle.rss), mb(idle.pss), idle.procs)

	stop := smp.start(pid)
	cpuA, selfA := smp.chromiumCPU(pid), selfCPU()
	start = time.Now()
	results := map[crawl.Result]int{}
	var failed []string
	var mu sync.Mutex
	jobs := make(chan *changedigest.Watch)
	var wg sync.WaitGroup
	for range tabs {
		wg.Go(func() {
			for w := range jobs {
				o, err := pipe.Check(ctx, w)
				mu.Lock()
				if err != nil {
					failed = append(failed, fmt.Sprintf("%s: %v", w.URL, err))
				} else {
					results[o.Result]++
				}
				mu.Unlock()
			}
		})
	}
	checks := 0
	for r := range rounds {
		round.Store(int64(r))
		for _, w := range watches {
			jobs <- w
			checks++
		}
	}
	close(jobs)
	wg.Wait()
	wall := time.Since(start)
	chromeCPU := smp.chromiumCPU(pid) - cpuA
	peak := stop()
	svcCPU := selfCPU() - selfA - smp.ownCPU()
	per := (chromeCPU + svcCPU) / time.Duration(checks)
	fmt.Printf("%d pages (%d corpus pages, mean %d KB, and %d small pages built by JavaScript), %d rounds, %d tabs: %d checks in %s\n",
		len(watches), len(bodies), total/max(len(bodies), 1)>>10, shops, rounds, tabs, checks, wall.Round(time.Millisecond))
	fmt.Printf("results: %v; failed: %d\n", results, len(failed))
	for _, s := range failed[:min(5, len(failed))] {
		fmt.Println("  ", s)
	}
	fmt.Printf("CPU per check (user+sys): %.0f ms = Chromium %.0f ms + service %.0f ms; %.0f checks per minute per core\n",
		per.Seconds()*1000, chromeCPU.Seconds()*1000/float64(checks), svcCPU.Seconds()*1000/float64(checks), 60/per.Seconds())
	fmt.Printf("peak memory: Chromium tree RSS %.0f MB, PSS %.0f MB (%d processes at most); service peak RSS %.0f MB\n",
		mb(peak.rss), mb(peak.pss), peak.procs, mb(vmHWM()))
	fmt.Printf("peak PSS above the idle browser, per tab: %.0f MB\n", mb((peak.pss-idle.pss)/int64(tabs)))
	if shots {
		if err := shotStats(ctx, store, watches); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d checks failed", len(failed))
	}
	return nil
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// mem is the memory of a process tree.
type mem struct {
	rss, pss int64
	procs    int
}

// sampler follows Chromium's process tree from a thread of its own, so
// its CPU time can be told apart from the service's.
type sampler struct {
	mu   sync.Mutex
	own  time.Duration
	peak mem
}

func (s *sampler) ownCPU() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own
}

// start samples the tree of pid every 50 ms until the returned function
// is called; that returns the peak.
func (s *sampler) start(pid int) func() mem {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			m := s.memory(pid)
			s.mu.Lock()
			s.peak.rss, s.peak.pss, s.peak.procs = max(s.peak.rss, m.rss), max(s.peak.pss, m.pss), max(s.peak.procs, m.procs)
			s.mu.Unlock()
			select {
			case <-done:
				var ru syscall.Rusage
				syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
				s.mu.Lock()
				s.own = tv(ru.Utime) + tv(ru.Stime)
				s.mu.Unlock()
				return
			case <-t.C:
			}
		}
	}()
	return func() mem {
		close(done)
		<-stopped
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.peak
	}
}

// tree returns pid and all its descendants.
func tree(pid int) []int {
	if pid == 0 {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	kids := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st := stat(p); st != nil {
			ppid, _ := strconv.Atoi(st[1])
			kids[ppid] = append(kids[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// stat returns the fields of /proc/PID/stat after the command name
// (field 4, the parent, is at index 1).
func stat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

var clkTck = 100.0 // USER_HZ on Linux

// chromiumCPU is the CPU time of the tree of pid, exited children included.
func (s *sampler) chromiumCPU(pid int) time.Duration {
	var ticks int64
	for _, p := range tree(pid) {
		st := stat(p)
		if len(st) < 15 {
			continue
		}
		for _, f := range st[11:15] { // utime, stime, cutime, cstime
			n, _ := strconv.ParseInt(f, 10, 64)
			ticks += n
		}
	}
	return time.Duration(float64(ticks) / clkTck * float64(time.Second))
}

// memory is the RSS and PSS of the tree of pid.
func (s *sampler) memory(pid int) mem {
	var m mem
	for _, p := range tree(pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			continue
		}
		m.procs++
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Rss:"); ok {
				m.rss += kb(v)
			} else if v, ok := strings.CutPrefix(line, "Pss:"); ok {
				m.pss += kb(v)
			}
		}
	}
	return m
}

func kb(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "kB")), 10, 64)
	return n << 10
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return kb(v)
		}
	}
	return 0
}

// shotStats reports the size of the stored screenshots (the latest
// version of each watch) and the cost of an overlay between the
// screenshots of two neighbouring watches (different pages: the worst
// case, every pixel may differ).
func shotStats(ctx context.Context, store *pet.Store, watches []*changedigest.Watch) error {
	var sizes, heights, boxes []int
	var imgs [][]byte
	for _, w := range watches {
		snap, err := store.Latest(ctx, w.ID)
		if err != nil || snap == nil {
			continue
		}
		sh, err := store.Screenshot(ctx, w.ID, snap.Seq)
		if err != nil {
			continue
		}
		sizes, heights, boxes = append(sizes, len(sh.PNG)), append(heights, sh.Height), append(boxes, len(sh.Boxes))
		imgs = append(imgs, sh.PNG)
	}
	if len(sizes) == 0 {
		return fmt.Errorf("no screenshot was stored")
	}
	sort.Ints(sizes)
	sort.Ints(heights)
	sort.Ints(boxes)
	sum := 0
	for _, n := range sizes {
		sum += n
	}
	fmt.Printf("screenshots: %d, PNG mean %.0f KB, median %.0f KB, max %.0f KB; height median %d px, max %d px; boxes median %d, max %d\n",
		len(sizes), float64(sum)/float64(len(sizes))/1024, float64(sizes[len(sizes)/2])/1024, float64(sizes[len(sizes)-1])/1024,
		heights[len(heights)/2], heights[len(heights)-1], boxes[len(boxes)/2], boxes[len(boxes)-1])
	var cpu time.Duration
	n := 0
	for i := 0; i+1 < len(imgs); i++ {
		c0 := selfCPU()
		if _, err := visual.Diff(imgs[i], imgs[i+1]); err != nil {
			return err
		}
		cpu += selfCPU() - c0
		n++
	}
	if n > 0 {
		fmt.Printf("overlay of two screenshots (visual.Diff, decode both, encode the PNG): %.0f ms CPU each over %d pairs\n", cpu.Seconds()*1000/float64(n), n)
	}
	return nil
}
