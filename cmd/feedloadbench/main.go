// Command feedloadbench measures a user's feed and dashboard under load while
// checks store new versions: what feed readers and a user see of a
// running service.
//
// It builds a store with one user watching -watches pages on loopback,
// each page a real history from the corpus (../shared/corpus/versions:
// every fetch of a page answers its history's next version), checked
// -rounds times through the real fetcher, segmenter and store so that the
// user's feed has its 100 entries of real text, and a profile whose
// interests some of them match. It then starts `changedigest serve` (the
// -bin binary) on that store, with every watch due once per -every from
// the start, so that checks store new versions all through the
// measurement, and runs wrk against
//
//   - feed: the user's Atom feed, every request unconditional (200);
//   - feed-gzip: the same, asking for it gzip-compressed as feed readers
//     do;
//   - feed-reader: the same feed as feed readers ask for it, each
//     connection sending back the ETag of its last answer in
//     If-None-Match (304 until the feed changes);
//   - dashboard: the user's dashboard (first page of 50 watches), logged in.
//
// Before them it times single feed requests. For each phase it prints
// wrk's requests/s and latency percentiles, the statuses, the server's
// CPU per request (all of the process's CPU over the phase, the checks'
// included, divided by the requests answered) and resident memory (from
// /proc), the checks made during the phase, and the machine's load
// average before it.
//
//	go build -o /tmp/changedigest ./cmd/changedigest
//	go run ./cmd/feedloadbench -bin /tmp/changedigest
//
// -store DIR keeps the prepared store in DIR and reuses it on later runs
// (each run works on a copy), so that binaries can be compared on the
// same store: -bin A,B runs the phases with each binary in turn,
// -runs times, and prints the ranges. -hold starts the service on a copy
// of the store and prints the addresses, to measure or profile by hand
// (serve takes CHANGEDIGEST_CPUPROFILE from the environment). The
// store's pages are served on the loopback ports it was prepared with.
// wrk must be installed (Debian: apt-get install wrk).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

func main() {
	cfg := config{}
	bins := flag.String("bin", "", "changedigest binaries to measure, comma-separated (go build -o /tmp/changedigest ./cmd/changedigest)")
	flag.StringVar(&cfg.corpus, "corpus", "../shared/corpus/versions", "folder of page histories (one folder of NNNN_*.html versions each)")
	flag.StringVar(&cfg.store, "store", "", "keep the prepared store here and reuse it when it is there (default: a new one in a temporary folder)")
	flag.IntVar(&cfg.watches, "watches", 200, "watches of the user")
	flag.IntVar(&cfg.rounds, "rounds", 3, "checks of every watch before the service starts (each one a new version)")
	flag.DurationVar(&cfg.every, "every", time.Minute, "check interval of every watch while measuring (at least 1m; 0: no checks)")
	flag.DurationVar(&cfg.duration, "duration", 20*time.Second, "length of each phase")
	flag.IntVar(&cfg.conns, "c", 16, "wrk connections")
	flag.IntVar(&cfg.threads, "t", 2, "wrk threads")
	flag.IntVar(&cfg.runs, "runs", 1, "times each binary is measured (binaries in turn)")
	flag.StringVar(&cfg.phases, "phases", "feed,feed-gzip,feed-reader,dashboard", "phases to run, comma-separated")
	flag.StringVar(&cfg.wrk, "wrk", "wrk", "the wrk program")
	flag.BoolVar(&cfg.hold, "hold", false, "start the service on the store and wait for an interrupt, printing the addresses to measure by hand (no phases)")
	flag.Parse()
	for b := range strings.SplitSeq(*bins, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.bins = append(cfg.bins, b)
		}
	}
	if len(cfg.bins) == 0 || cfg.watches < 1 || cfg.rounds < 2 || cfg.duration <= 0 || cfg.runs < 1 ||
		(cfg.every != 0 && cfg.every < time.Minute) {
		fmt.Fprintln(os.Stderr, "feedloadbench: give -bin, -watches ≥ 1, -rounds ≥ 2, -every 0 or ≥ 1m, -duration and -runs")
		os.Exit(2)
	}
	if _, err := exec.LookPath(cfg.wrk); err != nil {
		fmt.Fprintf(os.Stderr, "feedloadbench: %s not found (apt-get install wrk)\n", cfg.wrk)
		os.Exit(2)
	}
	// An interrupt stops the phase running, and the service with it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cfg.ctx = ctx
	err := run(&cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "feedloadbench:", err)
		os.Exit(1)
	}
}

type config struct {
	bins                       []string
	corpus, store, wrk, phases string
	watches, rounds, conns     int
	threads, runs              int
	every, duration            time.Duration
	hold                       bool
	ctx                        context.Context // ends at an interrupt
}

// setup is what the prepared store holds, written next to it.
type setup struct {
	FeedToken string
	Cookie    string
	Farm      []string // the farm's listening addresses, one per history
}

func run(cfg *config) error {
	template := cfg.store
	if template == "" {
		tmp, err := os.MkdirTemp("", "feedloadbench-store-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		template = tmp
	}
	su, err := loadSetup(template)
	prepared := err == nil
	if !prepared {
		su = &setup{}
	}
	// The store's watches name the farm's addresses: a store prepared
	// before gets the same ones.
	farm, err := newFarm(cfg.corpus, su.Farm)
	if err != nil {
		return err
	}
	defer farm.close()
	if prepared {
		fmt.Printf("store: %s (prepared before)\n", template)
	} else if su, err = prepare(cfg, farm, template); err != nil {
		return err
	}
	var results []result
	for r := range cfg.runs {
		for _, bin := range cfg.bins {
			rs, err := measure(cfg, farm, template, su, bin, r+1)
			if err != nil {
				return err
			}
			results = append(results, rs...)
		}
	}
	if cfg.runs > 1 || len(cfg.bins) > 1 {
		fmt.Println("\nsummary (ranges over runs):")
		summarise(results)
	}
	return nil
}

// ---- the page farm ----

// farm serves each watch's page on loopback: history h's pages on the
// h-th listener (a host of its own, for the fetcher's politeness), page
// i of a history at /p/I. Every GET answers the history's next version.
type farm struct {
	histories [][]string // file names of each history's versions, in order
	servers   []*http.Server
	urls      []string // listener base URLs, one per history
	mu        sync.Mutex
	next      map[int]int // page → index of the version its next GET answers
	gets      atomic.Int64
}

var versionFile = regexp.MustCompile(`^\d{4}_.*\.html$`)

// newFarm serves the histories in dir, on addrs when given (one per
// history), else on port 8080 of 127.77.0.1, 127.77.0.2 …
func newFarm(dir string, addrs []string) (*farm, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w (give -corpus)", err)
	}
	f := &farm{next: map[int]int{}}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, e.Name(), "*.html"))
		if err != nil {
			return nil, err
		}
		files = slices.DeleteFunc(files, func(p string) bool { return !versionFile.MatchString(filepath.Base(p)) })
		if len(files) < 4 {
			continue // packed histories: only their plain versions are served
		}
		slices.Sort(files)
		f.histories = append(f.histories, files)
	}
	if len(f.histories) == 0 {
		return nil, fmt.Errorf("corpus: no history of plain versions in %s", dir)
	}
	if addrs != nil && len(addrs) != len(f.histories) {
		return nil, fmt.Errorf("the store was prepared with %d histories, %s has %d", len(addrs), dir, len(f.histories))
	}
	for h := range f.histories {
		// Each history on a loopback address of its own (a host for the
		// fetcher's politeness), away from the ports other programs get.
		addr := fmt.Sprintf("127.77.0.%d:8080", h+1)
		if addrs != nil {
			addr = addrs[h]
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("page farm: %w", err)
		}
		srv := &http.Server{Handler: f.handler(h), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		f.servers = append(f.servers, srv)
		f.urls = append(f.urls, "http://"+ln.Addr().String())
	}
	return f, nil
}

func (f *farm) close() {
	for _, s := range f.servers {
		s.Close()
	}
}

// url is the address of page i: the page of history i mod histories.
func (f *farm) url(i int) string {
	return f.urls[i%len(f.histories)] + "/p/" + strconv.Itoa(i)
}

func (f *farm) handler(h int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || i < 0 || i%len(f.histories) != h {
			http.NotFound(w, r)
			return
		}
		hist := f.histories[h]
		f.mu.Lock()
		v, ok := f.next[i]
		if !ok {
			v = (i / len(f.histories) * 7) % len(hist) // pages of one history start apart
		}
		f.next[i] = (v + 1) % len(hist)
		f.mu.Unlock()
		f.gets.Add(1)
		body, err := os.ReadFile(hist[v])
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	})
}

// ---- the store ----

// interests of the bench user: words of the corpus pages in several of
// its languages, so that some changes match.
var interests = []string{"privacy", "security", "election", "football", "python", "javascript", "data", "music", "cycling", "climate"}

func prepare(cfg *config, f *farm, dir string) (*setup, error) {
	start := time.Now()
	ctx := context.Background()
	st := pet.New(dir)
	st.NoSync = true // a throw-away store
	st.Logger = slog.New(slog.DiscardHandler)
	if err := st.Open(ctx); err != nil {
		return nil, err
	}
	defer st.Close()
	u := &changedigest.User{Name: "bench", DigestHour: -1}
	if err := st.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	prof := &changedigest.Profile{UserID: u.ID}
	for _, t := range interests {
		prof.Interests = append(prof.Interests, changedigest.Interest{Term: t, Source: "foaf:interest", Weight: 1})
	}
	if err := st.PutProfile(ctx, prof, nil); err != nil {
		return nil, err
	}
	var ws []*changedigest.Watch
	for i := range cfg.watches {
		w := &changedigest.Watch{UserID: u.ID, URL: f.url(i), Category: changedigest.CategoryNews}
		if cfg.every > 0 {
			w.Interval = cfg.every
		}
		if i%3 == 0 {
			w.Tags = []string{"bench"}
		}
		if err := st.CreateWatch(ctx, w); err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	fetcher := crawl.NewFetcher()
	fetcher.AllowPrivate = true
	sched := crawl.NewScheduler(st, crawl.NewPipeline(fetcher, segmenter.New(), st))
	sched.Workers, sched.HostGap = 4, time.Millisecond
	sched.Logger = slog.New(slog.DiscardHandler)
	for r := range cfg.rounds {
		sum, err := sched.CheckNow(ctx, nil, ws...)
		if err != nil {
			return nil, err
		}
		fmt.Printf("prepare: round %d of %d: %d checked, %d changed (%s)\n", r+1, cfg.rounds, sum.Checked, sum.Changed,
			time.Since(start).Round(time.Second))
	}
	evs, err := st.Changes(ctx, pet.ChangeFilter{UserID: u.ID, Limit: 1000})
	if err != nil {
		return nil, err
	}
	token, err := st.CreateSession(ctx, u.ID, 30*24*time.Hour)
	if err != nil {
		return nil, err
	}
	if u, err = st.User(ctx, u.ID); err != nil {
		return nil, err
	}
	su := &setup{FeedToken: u.FeedToken, Cookie: "cd_session=" + token}
	for _, u := range f.urls {
		su.Farm = append(su.Farm, strings.TrimPrefix(u, "http://"))
	}
	text := su.FeedToken + "\n" + su.Cookie + "\n" + strings.Join(su.Farm, " ") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "feedloadbench.txt"), []byte(text), 0o600); err != nil {
		return nil, err
	}
	fmt.Printf("prepare: store %s: %d watches, %d versions with changes, in %s\n", dir, len(ws), len(evs),
		time.Since(start).Round(time.Second))
	return su, nil
}

func loadSetup(dir string) (*setup, error) {
	b, err := os.ReadFile(filepath.Join(dir, "feedloadbench.txt"))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		return nil, errors.New("feedloadbench.txt: want three lines")
	}
	return &setup{FeedToken: lines[0], Cookie: lines[1], Farm: strings.Fields(lines[2])}, nil
}

// schedule makes every watch of the copy due once per -every from now,
// spread evenly, so that checks run all through the measurement.
func schedule(cfg *config, dir string) error {
	ctx := context.Background()
	st := pet.New(dir)
	st.NoSync = true
	st.Logger = slog.New(slog.DiscardHandler)
	if err := st.Open(ctx); err != nil {
		return err
	}
	defer st.Close()
	ws, err := st.Watches(ctx, pet.AnyUser, "")
	if err != nil {
		return err
	}
	now := time.Now()
	for i, w := range ws {
		if _, err := st.UpdateWatch(ctx, pet.AnyUser, w.ID, func(x *changedigest.Watch) error {
			if cfg.every == 0 {
				x.Interval = 0
				x.NextCheck = now.Add(30 * 24 * time.Hour)
			} else {
				x.Interval = cfg.every
				x.NextCheck = now.Add(10*time.Second + time.Duration(i)*cfg.every/time.Duration(len(ws)))
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// ---- measuring ----

type result struct {
	bin, phase                  string
	reqs, p50, p90, p99, cpuReq float64 // req/s; ms
	load                        string
	rss, peak                   int // MB
	checks                      int64
	statuses                    string
}

func measure(cfg *config, f *farm, template string, su *setup, bin string, run int) ([]result, error) {
	dir, err := os.MkdirTemp("", "feedloadbench-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := exec.Command("cp", "-a", template+"/.", dir).Run(); err != nil {
		return nil, fmt.Errorf("copy the store: %w", err)
	}
	if err := schedule(cfg, dir); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(os.TempDir(), fmt.Sprintf("feedloadbench-serve-%d.log", run)))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(cfg.ctx, bin, "serve", "--data", dir, "--addr", addr, "--allow-private")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	base := "http://" + addr
	feedURL := base + "/feeds/" + su.FeedToken + "/atom.xml"
	if err := waitFor(feedURL, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("%s serve: %w (log in %s)", bin, err, logf.Name())
	}
	// One request at a time, before the load: the first after start-up
	// and the next three (the checks start 10 s after the copy is made).
	var took []time.Duration
	entries, size := 0, 0
	for range 4 {
		start := time.Now()
		if entries, size, err = feedEntries(feedURL); err != nil {
			return nil, err
		}
		took = append(took, time.Since(start))
	}
	fmt.Printf("\nrun %d, %s: serve pid %d on %s; feed: %d entries, %d KB; alone: first %s, then %s\n", run, bin, cmd.Process.Pid,
		addr, entries, size>>10, took[0].Round(time.Millisecond), took[1:])
	if cfg.hold {
		fmt.Printf("feed: %s\ndashboard: %s/ with Cookie: %s\nlog: %s\nwaiting for an interrupt\n", feedURL, base, su.Cookie, logf.Name())
		<-cfg.ctx.Done()
		return nil, nil
	}
	var out []result
	for phase := range strings.SplitSeq(cfg.phases, ",") {
		if phase = strings.TrimSpace(phase); phase == "" {
			continue
		}
		url, headers, script := feedURL, []string{}, ""
		switch phase {
		case "feed":
		case "feed-gzip":
			headers = []string{"Accept-Encoding: gzip"}
		case "feed-reader":
			script = readerScript
		case "dashboard":
			url, headers = base+"/", []string{"Cookie: " + su.Cookie}
		default:
			return nil, fmt.Errorf("unknown phase %q", phase)
		}
		if script == "" {
			script = countScript
		}
		r, err := wrk(cfg, cmd.Process.Pid, f, url, headers, script)
		if err != nil {
			return nil, err
		}
		r.bin, r.phase = bin, phase
		fmt.Printf("  %-12s %7.1f req/s  p50 %6.1f ms  p90 %6.1f ms  p99 %6.1f ms  server CPU %.2f ms/req  %s  checks %d  RSS %d MB (peak %d)  load %s\n",
			phase, r.reqs, r.p50, r.p90, r.p99, r.cpuReq, r.statuses, r.checks, r.rss, r.peak, r.load)
		out = append(out, r)
	}
	return out, nil
}

func waitFor(url string, limit time.Duration) error {
	end := time.Now().Add(limit)
	for {
		resp, err := http.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s did not answer 200 within %s", url, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func feedEntries(url string) (int, int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	return strings.Count(string(b), "<entry>"), len(b), nil
}

// countScript counts the statuses of the answers.
const countScript = `
local threads = {}
setup = function(thread) table.insert(threads, thread) end
init = function() counts = {} end
response = function(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
done = function(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    for s, n in pairs(t:get("counts")) do all[s] = (all[s] or 0) + n end
  end
  local line = "statuses:"
  for s, n in pairs(all) do line = line .. " " .. s .. "=" .. n end
  print(line)
end
`

// readerScript is countScript for a feed reader: each connection sends
// back the ETag of its last answer.
var readerScript = strings.Replace(countScript, "response = function(status, headers, body) counts[status] = (counts[status] or 0) + 1 end", `
response = function(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
  local tag = headers["Etag"] or headers["ETag"]
  if tag then etag = tag end
end
request = function()
  if etag then return wrk.format("GET", nil, {["If-None-Match"] = etag}) end
  return wrk.format("GET")
end`, 1)

var (
	reqsRe   = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	pctRe    = regexp.MustCompile(`(?m)^\s+(50|90|99)%\s+([\d.]+)(us|ms|s)\s*$`)
	statusRe = regexp.MustCompile(`statuses:.*`)
	errorsRe = regexp.MustCompile(`Socket errors:.*|Non-2xx or 3xx responses:.*`)
)

func wrk(cfg *config, pid int, f *farm, url string, headers []string, script string) (result, error) {
	sf, err := os.CreateTemp("", "feedloadbench-*.lua")
	if err != nil {
		return result{}, err
	}
	defer os.Remove(sf.Name())
	sf.WriteString(script)
	sf.Close()
	args := []string{"-t", strconv.Itoa(cfg.threads), "-c", strconv.Itoa(cfg.conns), "-d", strconv.Itoa(int(cfg.duration.Seconds())) + "s",
		"--timeout", "30s", "--latency", "-s", sf.Name()}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	args = append(args, url)
	load, _ := os.ReadFile("/proc/loadavg")
	cpu0 := procCPU(pid)
	gets0 := f.gets.Load()
	out, err := exec.CommandContext(cfg.ctx, cfg.wrk, args...).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	cpu := procCPU(pid) - cpu0
	r := result{checks: f.gets.Load() - gets0, load: strings.Join(strings.Fields(string(load))[:3], " ")}
	r.rss, r.peak = procRSS(pid)
	text := string(out)
	if m := reqsRe.FindStringSubmatch(text); m != nil {
		r.reqs, _ = strconv.ParseFloat(m[1], 64)
	}
	for _, m := range pctRe.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		switch m[3] {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		switch m[1] {
		case "50":
			r.p50 = v
		case "90":
			r.p90 = v
		case "99":
			r.p99 = v
		}
	}
	r.statuses = statusRe.FindString(text)
	if e := errorsRe.FindAllString(text, -1); len(e) > 0 {
		r.statuses += " (" + strings.Join(e, "; ") + ")"
	}
	if n := r.reqs * cfg.duration.Seconds(); n > 0 {
		r.cpuReq = cpu.Seconds() * 1000 / n
	}
	return r, nil
}

// procRSS is the resident memory of process pid, and its peak, in MB.
func procRSS(pid int) (rss, peak int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			rss = kb >> 10
		case "VmHWM:":
			peak = kb >> 10
		}
	}
	return rss, peak
}

// procCPU is the user and system time of process pid.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	s = s[strings.LastIndexByte(s, ')')+2:]
	fs := strings.Fields(s)
	if len(fs) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

func summarise(rs []result) {
	type key struct{ bin, phase string }
	var keys []key
	by := map[key][]result{}
	for _, r := range rs {
		k := key{r.bin, r.phase}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	span := func(rs []result, f func(result) float64, prec int) string {
		lo, hi := f(rs[0]), f(rs[0])
		for _, r := range rs[1:] {
			lo, hi = min(lo, f(r)), max(hi, f(r))
		}
		return strconv.FormatFloat(lo, 'f', prec, 64) + "–" + strconv.FormatFloat(hi, 'f', prec, 64)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for _, k := range keys {
		rs := by[k]
		var loads []string
		for _, r := range rs {
			loads = append(loads, strings.Fields(r.load)[0])
		}
		fmt.Fprintf(w, "  %s %-12s %s req/s, p50 %s ms, p99 %s ms, server CPU %s ms/req (load %s)\n", k.bin, k.phase,
			span(rs, func(r result) float64 { return r.reqs }, 1), span(rs, func(r result) float64 { return r.p50 }, 1),
			span(rs, func(r result) float64 { return r.p99 }, 1), span(rs, func(r result) float64 { return r.cpuReq }, 2),
			strings.Join(loads, ", "))
	}
}
