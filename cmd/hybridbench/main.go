// Command hybridbench measures the hybrid detection of Meegahapola et al.
// (seed 002, Fig. 4) with real processes on loopback: a `changedigest
// serve` process, then 1, 5 and 10 `changedigest client` processes
// joining it, and pages on loopback that change as Poisson processes. For
// the server alone and for each number of clients it reports the mean
// time from a change to the stored version that shows it, and what each
// client spends (the paper's Table I): its fetches per page per hour and
// its share of a CPU.
//
// Time is scaled: with -scale 5, 1 s stands for 5 s, and the service's
// knobs are scaled with it: the clients' --client-gap of 5 min becomes
// 1 min, --client-min-gap 30 s becomes 6 s, --host-gap 1 s becomes 200
// ms, and the server checks each page every 5 min, the scheduler's
// fastest (its MinInterval), i.e. every minute, the shortest interval a
// watch may be given. What is not scaled is the scheduler's 1 s tick (a
// reported change waits for it, 0.5 s on average, 2.5 s at -scale 5)
// and the clients' 30 s assignment poll (the bench waits for it after
// clients join). The -scale must leave the server's interval at least a
// minute.
//
//	go build -o /tmp/changedigest ./cmd/changedigest
//	go run ./cmd/hybridbench -bin /tmp/changedigest
//
// The whole run takes about 4 × -run plus 3 minutes (19 minutes with the
// defaults).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

func main() {
	bin := flag.String("bin", "", "the changedigest binary (go build -o /tmp/changedigest ./cmd/changedigest)")
	scale := flag.Float64("scale", 5, "1 s of the run stands for this many seconds (at most 5)")
	pages := flag.Int("pages", 10, "pages, each changing on its own")
	change := flag.Duration("change", 5*time.Minute, "mean time between two changes of a page (scaled time)")
	run := flag.Duration("run", 4*time.Minute, "length of each measured phase (real time)")
	counts := flag.String("clients", "1,5,10", "numbers of clients, joining in turn")
	flag.Parse()
	var ks []int
	for f := range strings.SplitSeq(*counts, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || (len(ks) > 0 && k <= ks[len(ks)-1]) {
			fmt.Fprintf(os.Stderr, "hybridbench: -clients %q: want rising numbers ≥ 1\n", *counts)
			os.Exit(2)
		}
		ks = append(ks, k)
	}
	if *bin == "" || *scale <= 0 || *scale > 5 || *pages < 1 || *change <= 0 || *run < 30*time.Second {
		fmt.Fprintln(os.Stderr, "hybridbench: give -bin, a -scale in (0, 5], -pages and -change, and -run of at least 30 s")
		os.Exit(2)
	}
	b := &bench{bin: *bin, scale: *scale, pages: *pages, change: *change, run: *run, ks: ks}
	err := b.main()
	b.stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hybridbench:", err)
		os.Exit(1)
	}
}

type bench struct {
	bin          string
	scale        float64
	pages        int
	change, run  time.Duration
	ks           []int
	dir, base    string
	token        string
	serve        *exec.Cmd
	clients      []*exec.Cmd
	sites        []*site
	watchIDs     []int64
	stopChanging context.CancelFunc
	changers     sync.WaitGroup
}

// site is a loopback page whose version number goes up at each change.
type site struct {
	mu       sync.Mutex
	version  int
	changed  []time.Time // changed[j-1]: when version j appeared
	requests int
	srv      *http.Server
	url      string
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	v := s.version
	s.requests++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<html><head><title>v%d</title></head><body><header><p>Match centre</p></header>`+
		`<main><h1>Live score</h1><p>The score is now %d to %d, as the match goes on in the second half.</p></main>`+
		`<footer><p>Updated as it happens</p></footer></body></html>`, v, v, v/2)
}

// scaled turns a duration of the modelled world into run time.
func (b *bench) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) / b.scale)
}

func (b *bench) main() error {
	var err error
	if b.dir, err = os.MkdirTemp("", "hybridbench"); err != nil {
		return err
	}
	for range b.pages {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		s := &site{url: "http://" + ln.Addr().String() + "/"}
		s.srv = &http.Server{Handler: s}
		go s.srv.Serve(ln)
		b.sites = append(b.sites, s)
	}
	if err := b.prepare(); err != nil {
		return err
	}
	if err := b.startServe(); err != nil {
		return err
	}
	// The first versions, then the pages start changing.
	if err := b.waitFor("the first versions", 30*time.Second, func() (bool, error) {
		for _, id := range b.watchIDs {
			vs, err := b.versions(id)
			if err != nil || len(vs) == 0 {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopChanging = cancel
	for i, s := range b.sites {
		rng := rand.New(rand.NewPCG(uint64(i+1), 2))
		b.changers.Go(func() {
			for {
				t := time.NewTimer(time.Duration(rng.ExpFloat64() * float64(b.scaled(b.change))))
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				s.mu.Lock()
				s.version++
				s.changed = append(s.changed, time.Now())
				s.mu.Unlock()
			}
		})
	}

	fmt.Printf("scale 1:%g (1 s stands for %g s); %d pages changing every %s on average (%s here); server checks every 5m0s (%s); client gap 5m0s (%s), min gap 30s (%s); %s per phase\n",
		b.scale, b.scale, b.pages, b.change, b.scaled(b.change), b.scaled(5*time.Minute), b.scaled(5*time.Minute), b.scaled(30*time.Second), b.run)
	var rows []result
	// The server alone first: also the warm-up that gives each page its
	// change-rate estimate.
	r, err := b.phase(0)
	if err != nil {
		return err
	}
	rows = append(rows, r)
	for _, k := range b.ks {
		for len(b.clients) < k {
			if err := b.startClient(len(b.clients)); err != nil {
				return err
			}
		}
		if err := b.waitFor(fmt.Sprintf("%d clients online", k), time.Minute, func() (bool, error) {
			n, err := b.online()
			return n == k, err
		}); err != nil {
			return err
		}
		// Every client asks for its assignments within the poll interval.
		time.Sleep(32 * time.Second)
		r, err := b.phase(k)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	cancel()
	b.changers.Wait()
	time.Sleep(b.scaled(2 * time.Minute)) // the last changes' checks
	if err := b.measure(rows); err != nil {
		return err
	}
	fmt.Println("clients | changes (not stored by the end) | mean detection (scaled) | mean detection (real) | median | p90 | server fetches per page per hour | fetches per client per page per hour | CPU per client | time gap → crawl gap (scaled)")
	for _, r := range rows {
		fmt.Println(r)
	}
	return nil
}

// result is one phase: k clients from start to end.
type result struct {
	b          *bench
	k          int
	start, end time.Time
	requests   int // page requests during the phase, all pages
	checks     int // the server's checks during the phase, all pages
	delays     []time.Duration
	missed     int           // changes not stored by the end
	gap, crawl time.Duration // as the clients were told, first page
	cpu        time.Duration // CPU the clients used during the phase, all of them
	// polls is what the schedules ask of each client, per page and
	// hour (scaled), averaged over the pages and over the schedules at
	// the start and at the end of the phase: each page has a time gap
	// of its own, from its own change rate.
	polls float64
}

func (r result) String() string {
	scale := r.b.scale
	hours := r.end.Sub(r.start).Hours() * scale
	mean, med, p90 := stats(r.delays)
	perClient := "-"
	gaps := "-"
	cpu := "-"
	if r.k > 0 {
		perClient = fmt.Sprintf("%.1f (scheduled %.1f)", float64(r.requests-r.checks)/float64(r.k)/float64(r.b.pages)/hours, r.polls)
		cpu = fmt.Sprintf("%.2f %%", 100*r.cpu.Seconds()/float64(r.k)/r.end.Sub(r.start).Seconds())
		gaps = fmt.Sprintf("%s → %s", time.Duration(float64(r.gap)*scale).Round(time.Second), time.Duration(float64(r.crawl)*scale).Round(time.Second))
	}
	sc := func(d time.Duration) string { return time.Duration(float64(d) * scale).Round(time.Second).String() }
	return fmt.Sprintf("%d | %d (%d) | %s | %.2f s | %s | %s | %.1f | %s | %s | %s", r.k, len(r.delays), r.missed, sc(mean), mean.Seconds(), sc(med), sc(p90),
		float64(r.checks)/float64(r.b.pages)/hours, perClient, cpu, gaps)
}

func stats(ds []time.Duration) (mean, med, p90 time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s)), s[len(s)/2], s[len(s)*9/10]
}

// phase runs k clients for b.run and counts the page requests and the
// server's checks.
func (b *bench) phase(k int) (result, error) {
	r := result{b: b, k: k}
	checks0, err := b.checks()
	if err != nil {
		return r, err
	}
	req0 := b.requests()
	cpu0 := b.clientsCPU()
	r.start = time.Now()
	if k > 0 {
		a, err := b.slot()
		if err != nil {
			return r, err
		}
		r.gap, r.crawl = a.TimeGap, a.CrawlGap
		if r.polls, err = b.polls(); err != nil {
			return r, err
		}
	}
	fmt.Fprintf(os.Stderr, "%s: %d clients for %s\n", time.Now().Format(time.TimeOnly), k, b.run)
	time.Sleep(b.run)
	r.end = time.Now()
	if k > 0 {
		end, err := b.polls()
		if err != nil {
			return r, err
		}
		r.polls = (r.polls + end) / 2
	}
	r.requests = b.requests() - req0
	r.cpu = b.clientsCPU() - cpu0
	checks1, err := b.checks()
	r.checks = checks1 - checks0
	return r, err
}

// measure finds, for every change in a phase, the first stored version
// fetched after it that shows it or a later change.
func (b *bench) measure(rows []result) error {
	for i, id := range b.watchIDs {
		vs, err := b.versions(id)
		if err != nil {
			return err
		}
		s := b.sites[i]
		s.mu.Lock()
		changed := slices.Clone(s.changed)
		s.mu.Unlock()
		for j, at := range changed {
			var first time.Time
			for _, v := range vs {
				n, err := strconv.Atoi(strings.TrimPrefix(v.Title, "v"))
				if err == nil && n >= j+1 && v.FetchedAt.After(at) && (first.IsZero() || v.FetchedAt.Before(first)) {
					first = v.FetchedAt
				}
			}
			for ri := range rows {
				if !at.Before(rows[ri].start) && at.Before(rows[ri].end) {
					if first.IsZero() {
						rows[ri].missed++
						continue
					}
					rows[ri].delays = append(rows[ri].delays, first.Sub(at))
				}
			}
		}
	}
	return nil
}

// prepare creates the user, an API token and the watches in a new store,
// before the service opens it.
func (b *bench) prepare() error {
	ctx := context.Background()
	st := pet.New(b.dir)
	if err := st.Open(ctx); err != nil {
		return err
	}
	defer st.Close()
	u := &changedigest.User{Name: "bench", Admin: true, DigestHour: -1}
	if err := st.CreateUser(ctx, u); err != nil {
		return err
	}
	tok, _, err := st.CreateToken(ctx, u.ID, "hybridbench")
	if err != nil {
		return err
	}
	b.token = tok
	for _, s := range b.sites {
		// The server alone checks each page every 5 min, the fastest the
		// scheduler goes by the change rate (its MinInterval).
		w := &changedigest.Watch{UserID: u.ID, URL: s.url, Interval: b.scaled(5 * time.Minute)}
		if err := st.CreateWatch(ctx, w); err != nil {
			return err
		}
		b.watchIDs = append(b.watchIDs, w.ID)
	}
	return nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (b *bench) startServe() error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	b.base = "http://" + addr
	cmd := exec.Command(b.bin, "serve", "--data", b.dir, "--addr", addr, "--allow-private", "--log-level", "warn",
		"--host-gap", b.scaled(time.Second).String(),
		"--client-gap", b.scaled(5*time.Minute).String(), "--client-min-gap", b.scaled(30*time.Second).String())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	b.serve = cmd
	return b.waitFor("the server", 30*time.Second, func() (bool, error) {
		resp, err := http.Get(b.base + "/")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return true, nil
	})
}

func (b *bench) startClient(i int) error {
	cmd := exec.Command(b.bin, "client", "--server", b.base, "--token", b.token, "--name", "client"+strconv.Itoa(i+1), "--allow-private")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errs strings.Builder
	cmd.Stderr = &lockedWriter{w: &errs}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "stopped:") {
				fmt.Fprintf(os.Stderr, "client%d %s\n", i+1, sc.Text())
			}
		}
	}()
	b.clients = append(b.clients, cmd)
	return nil
}

// lockedWriter keeps a client's log (warnings only are shown at the end).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(string(p), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			fmt.Fprintln(os.Stderr, line)
		}
	}
	return l.w.Write(p)
}

// stop ends the clients (which print their counts) and the server, and
// removes the data directory.
func (b *bench) stop() {
	if b.stopChanging != nil {
		b.stopChanging()
		b.changers.Wait()
	}
	for _, c := range b.clients {
		c.Process.Signal(syscall.SIGINT)
	}
	for _, c := range b.clients {
		c.Wait()
	}
	if b.serve != nil {
		b.serve.Process.Signal(syscall.SIGINT)
		b.serve.Wait()
	}
	for _, s := range b.sites {
		s.srv.Close()
	}
	if b.dir != "" && strings.HasPrefix(filepath.Base(b.dir), "hybridbench") {
		os.RemoveAll(b.dir)
	}
}

// clientsCPU is the CPU the client processes used so far, all of them.
func (b *bench) clientsCPU() time.Duration {
	var sum time.Duration
	for _, c := range b.clients {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		sum += time.Duration(utime+stime) * time.Second / 100 // clock ticks (USER_HZ 100)
	}
	return sum
}

func (b *bench) requests() int {
	n := 0
	for _, s := range b.sites {
		s.mu.Lock()
		n += s.requests
		s.mu.Unlock()
	}
	return n
}

func (b *bench) waitFor(what string, limit time.Duration, ok func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		done, err := ok()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *bench) get(path string, out any) error {
	req, err := http.NewRequest(http.MethodGet, b.base+"/api/v1"+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

type version struct {
	Seq       int       `json:"seq"`
	Title     string    `json:"title"`
	FetchedAt time.Time `json:"fetched_at"`
}

func (b *bench) versions(id int64) ([]version, error) {
	var out struct {
		Versions []version `json:"versions"`
	}
	err := b.get(fmt.Sprintf("/watches/%d/versions?limit=1000", id), &out)
	if len(out.Versions) == 1000 {
		return nil, errors.New("more than 1000 versions: shorten -run")
	}
	return out.Versions, err
}

// checks is the server's successful checks of all pages so far.
func (b *bench) checks() (int, error) {
	n := 0
	for _, id := range b.watchIDs {
		var w struct {
			Checks int `json:"checks"`
		}
		if err := b.get(fmt.Sprintf("/watches/%d", id), &w); err != nil {
			return 0, err
		}
		n += w.Checks
	}
	return n, nil
}

type slot struct {
	CrawlGap     time.Duration `json:"crawl_gap"`
	DelayToStart time.Duration `json:"delay_to_start"`
}

// online is the number of clients online for the first page.
func (b *bench) online() (int, error) {
	var v struct {
		Clients []slot `json:"clients"`
	}
	err := b.get(fmt.Sprintf("/watches/%d/agent", b.watchIDs[0]), &v)
	return len(v.Clients), err
}

// polls is the mean over the pages of the polls per hour (scaled) that
// each page's schedule asks of one client.
func (b *bench) polls() (float64, error) {
	sum := 0.0
	for _, id := range b.watchIDs {
		var v struct {
			Clients []slot `json:"clients"`
		}
		if err := b.get(fmt.Sprintf("/watches/%d/agent", id), &v); err != nil {
			return 0, err
		}
		if len(v.Clients) > 0 && v.Clients[0].CrawlGap > 0 {
			sum += time.Hour.Seconds() / (v.Clients[0].CrawlGap.Seconds() * b.scale)
		}
	}
	return sum / float64(len(b.watchIDs)), nil
}

// slot is the first page's schedule: its time gap and crawl gap.
type gaps struct{ TimeGap, CrawlGap time.Duration }

func (b *bench) slot() (gaps, error) {
	var v struct {
		Clients []slot `json:"clients"`
	}
	if err := b.get(fmt.Sprintf("/watches/%d/agent", b.watchIDs[0]), &v); err != nil || len(v.Clients) == 0 {
		return gaps{}, err
	}
	g := gaps{CrawlGap: v.Clients[0].CrawlGap}
	if len(v.Clients) > 1 {
		g.TimeGap = v.Clients[1].DelayToStart
	} else {
		g.TimeGap = g.CrawlGap
	}
	return g, nil
}
