package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
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
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

// killConfig is what -measure kill runs.
type killConfig struct {
	bin            string
	pages, hosts   int
	settle         time.Duration // steady state before the change or the kill
	ackWait        time.Duration
	change         bool          // every page changes, the kill follows
	changeToKill   time.Duration // from the change to the kill
	watchAfterKill time.Duration // how long the run goes on after the kill
	keep           bool          // keep the data directories and logs
}

// killNode is a serve process of the kill run.
type killNode struct {
	name     string
	cmd      *exec.Cmd
	log      string
	site     string
	password string
	exited   chan struct{}
}

// killRun measures what kill -9 of one of three nodes costs a cluster in
// steady state: every watch checked every minute, the pages unchanged or
// (change) all changed a moment before the kill. It reports how late the
// checks came around the kill (per page, the time between its last
// request before the kill and its first after), how long the changed
// pages took to have their new version stored, the farm's requests in
// each ten seconds (a pause of the checks shows there), the answers of
// GET /api/v1/watches/{id}/versions on a survivor through it all (a 404
// for a watch that exists is a fault), and the watches whose page on a
// survivor shows versions but no check.
func killRun(kc killConfig) error {
	t := &tb{}
	defer func() {
		for _, fn := range t.cleanups {
			fn()
		}
	}()
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: kc.hosts, Pages: kc.pages, Size: 2 << 10, Rate: func(int) float64 { return 0 }})
	root, err := os.MkdirTemp("", "clusterbench-kill")
	if err != nil {
		return err
	}
	if kc.keep {
		fmt.Printf("  data and logs in %s\n", root)
	} else {
		defer os.RemoveAll(root)
	}
	ctx := context.Background()
	ports := freePorts(6)
	routes, clients := ports[:3], ports[3:]
	nodes := make([]*killNode, 3)
	for i := range nodes {
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		nd := &killNode{name: "n" + strconv.Itoa(i), log: filepath.Join(root, "n"+strconv.Itoa(i)+".log"), exited: make(chan struct{})}
		f, err := os.Create(nd.log)
		if err != nil {
			return err
		}
		nd.cmd = exec.Command(kc.bin, "serve", "--addr", "127.0.0.1:0", "--allow-private", "--log-level", "info",
			"--data", filepath.Join(root, nd.name), "--cluster", "bench", "--node", nd.name,
			"--cluster-listen", routes[i], "--routes", strings.Join(others, ","), "--nats-listen", clients[i],
			"--shards", "12", "--host-gap", "20ms", "--workers", "16", "--check-ack-wait", kc.ackWait.String())
		nd.cmd.Stdout, nd.cmd.Stderr = f, f
		if err := nd.cmd.Start(); err != nil {
			return err
		}
		go func() {
			nd.cmd.Wait()
			f.Close()
			close(nd.exited)
		}()
		nodes[i] = nd
	}
	defer func() {
		for _, nd := range nodes {
			nd.cmd.Process.Signal(syscall.SIGTERM)
			<-nd.exited
		}
	}()
	var conn *cluster.Conn
	for conn == nil {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, _ = cluster.Connect(cctx, "nats://"+clients[0], "")
		cancel()
		time.Sleep(200 * time.Millisecond)
	}
	defer conn.Close()
	formed := func(live int) bool {
		nodes, owners, err := conn.Shards(ctx)
		if err != nil || slices.Contains(owners, "") {
			return false
		}
		ready, up := map[int]string{}, 0
		for _, n := range nodes {
			if n.Down {
				continue
			}
			up++
			for _, s := range n.Ready {
				ready[s] = n.Name
			}
		}
		for s, o := range owners {
			if ready[s] != o {
				return false
			}
		}
		return up == live
	}
	for !formed(3) {
		time.Sleep(200 * time.Millisecond)
	}
	for _, nd := range nodes {
		b, _ := os.ReadFile(nd.log)
		if m := regexp.MustCompile(`running at (http://\S+)`).FindSubmatch(b); m != nil {
			nd.site = string(m[1])
		}
		if m := regexp.MustCompile(`log in as admin with password (\S+)`).FindSubmatch(b); m != nil {
			nd.password = string(m[1])
		}
	}
	password := ""
	for _, nd := range nodes {
		password = cmpOr(password, nd.password)
	}
	ws := make([]*changedigest.Watch, kc.pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i), Interval: time.Minute}
	}
	if err := conn.AddWatches(ctx, ws); err != nil {
		return err
	}
	defined := time.Now()
	fmt.Printf("  %d watches on %d hosts, every minute; steady state for %s\n", kc.pages, kc.hosts, kc.settle)

	// Every page's requests, as seen every 100 ms.
	rec := newRequestLog(farm)
	rctx, stopRec := context.WithCancel(ctx)
	recDone := make(chan struct{})
	go func() { defer close(recDone); rec.run(rctx) }()
	defer stopRec()

	time.Sleep(time.Until(defined.Add(kc.settle)))
	const victim = 1
	survivor := nodes[0]
	api, err := apiClient(survivor.site, password)
	if err != nil {
		return err
	}
	var changed time.Time
	if kc.change {
		changed = time.Now()
		for _, p := range farm.Pages {
			p.Touch()
		}
		rec.changed(changed)
		time.Sleep(kc.changeToKill)
	}
	// Reads on a survivor through the kill: every watch's versions, in turn.
	reads := &readCounts{codes: map[int]int{}}
	readCtx, stopReads := context.WithCancel(ctx)
	readsDone := make(chan struct{})
	go func() { defer close(readsDone); reads.run(readCtx, api, survivor.site, ws) }()
	time.Sleep(5 * time.Second)

	killed := time.Now()
	nodes[victim].cmd.Process.Signal(syscall.SIGKILL)
	<-nodes[victim].exited
	for !formed(2) {
		time.Sleep(100 * time.Millisecond)
	}
	failover := time.Since(killed)
	fmt.Printf("  killed %s; its shards served again %.1f s later\n", nodes[victim].name, failover.Seconds())
	var doneAll time.Time
	for end := killed.Add(kc.watchAfterKill); time.Now().Before(end); time.Sleep(time.Second) {
		if kc.change && doneAll.IsZero() && rec.allFull() {
			doneAll = time.Now()
		}
	}
	stopReads()
	<-readsDone
	stopRec()
	<-recDone

	// Lateness: per page, the gap around the kill.
	var gaps []float64
	late := 0
	bound := 66*time.Second + failover + 15*time.Second // interval with its jitter, failover, margin
	for i := range farm.Pages {
		before, after := rec.around(i, killed)
		if before.IsZero() {
			continue
		}
		gap := time.Since(before)
		if !after.IsZero() {
			gap = after.Sub(before)
		}
		gaps = append(gaps, gap.Seconds())
		if gap > bound {
			late++
		}
	}
	slices.Sort(gaps)
	fmt.Printf("  gap between a page's last request before the kill and its first after: median %.1f s, 99th %.1f s, max %.1f s; %d of %d pages over %.0f s (a minute and its jitter, the failover, 15 s)\n",
		gaps[len(gaps)/2], gaps[len(gaps)*99/100], gaps[len(gaps)-1], late, len(gaps), bound.Seconds())
	if kc.change {
		missing2 := rec.fullMissingAt(changed.Add(2 * time.Minute))
		last := rec.lastFirstFull()
		fmt.Printf("  changed %.0f s before the kill: %d of %d pages not fetched anew 2 min after the change; the last %.1f s after it",
			kc.changeToKill.Seconds(), missing2, kc.pages, last.Sub(changed).Seconds())
		if doneAll.IsZero() {
			fmt.Printf(" (not all within the run)")
		}
		fmt.Println()
		// Stored, not only fetched: every watch's newest version is the page's.
		counts, dups, err := conn.VersionCounts(ctx)
		if err == nil {
			short := 0
			for _, w := range ws {
				if counts[w.ID] < 2 {
					short++
				}
			}
			fmt.Printf("  versions: %d watches without the new version at the end, %d due checks stored twice\n", short, dups)
		}
	}
	fmt.Printf("  farm requests per 10 s from the watches' definition (the kill in the %s): %s\n",
		ordinal(int(killed.Sub(defined)/(10*time.Second))+1), rec.perTen(defined, killed.Add(kc.watchAfterKill)))
	reads.mu.Lock()
	fmt.Printf("  GET versions on %s through the kill: %d reads, answers %v (0: no answer", survivor.name, reads.n, reads.codes)
	if reads.lastErr != nil {
		fmt.Printf(": %v", reads.lastErr)
	}
	fmt.Println(")")
	reads.mu.Unlock()
	// Watches showing versions but no check, on the survivor.
	noCheck := 0
	for _, w := range ws {
		var aw struct {
			Checks    int       `json:"checks"`
			LastCheck time.Time `json:"last_check"`
		}
		if code := getJSON(api, fmt.Sprintf("%s/api/v1/watches/%d", survivor.site, w.ID), &aw); code == 200 && (aw.Checks == 0 || aw.LastCheck.IsZero()) {
			noCheck++
		}
	}
	fmt.Printf("  watches with versions whose page shows no check (checks 0 or no last check): %d\n", noCheck)
	var hostLock, busyPaused int
	for i, nd := range nodes {
		if i == victim {
			continue
		}
		b, _ := os.ReadFile(nd.log)
		hostLock += strings.Count(string(b), "host lock")
	}
	if nodesInfo, _, err := conn.Shards(ctx); err == nil {
		for _, n := range nodesInfo {
			if !n.Down {
				busyPaused += int(n.Busy)
			}
			up := n.Beat.Sub(n.Started).Round(time.Second).String()
			if n.Down {
				up = "-"
			}
			fmt.Printf("  status of %s: down %v, %d shards, %d served, up %s\n", n.Name, n.Down, len(n.Shards), len(n.Ready), up)
		}
	}
	fmt.Printf("  survivors: %d \"host lock\" warnings, %d checks put back for a busy host\n", hostLock, busyPaused)
	return nil
}

func ordinal(k int) string {
	switch {
	case k%10 == 1 && k%100 != 11:
		return strconv.Itoa(k) + "st"
	case k%10 == 2 && k%100 != 12:
		return strconv.Itoa(k) + "nd"
	case k%10 == 3 && k%100 != 13:
		return strconv.Itoa(k) + "rd"
	}
	return strconv.Itoa(k) + "th"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// requestLog records when each page of a farm was requested (as seen by
// polling its counters).
type requestLog struct {
	farm *crawltest.Farm
	mu   sync.Mutex
	at   [][]time.Time // requests by page
	// full: the first full answer after the change, by page.
	since time.Time
	full  []time.Time
	base  []int64
}

func newRequestLog(f *crawltest.Farm) *requestLog {
	return &requestLog{farm: f, at: make([][]time.Time, len(f.Pages)), full: make([]time.Time, len(f.Pages)), base: make([]int64, len(f.Pages))}
}

func (r *requestLog) run(ctx context.Context) {
	last := make([]int64, len(r.farm.Pages))
	for ctx.Err() == nil {
		now := time.Now()
		r.mu.Lock()
		for i, p := range r.farm.Pages {
			if n := p.Requests.Load(); n != last[i] {
				for range n - last[i] {
					r.at[i] = append(r.at[i], now)
				}
				last[i] = n
			}
			if !r.since.IsZero() && r.full[i].IsZero() && p.Full.Load() > r.base[i] {
				r.full[i] = now
			}
		}
		r.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *requestLog) changed(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.since = at
	for i, p := range r.farm.Pages {
		r.base[i] = p.Full.Load()
	}
}

func (r *requestLog) allFull() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !slices.ContainsFunc(r.full, time.Time.IsZero)
}

func (r *requestLog) fullMissingAt(t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := 0
	for _, f := range r.full {
		if f.IsZero() || f.After(t) {
			k++
		}
	}
	return k
}

func (r *requestLog) lastFirstFull() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, f := range r.full {
		if f.IsZero() {
			return time.Now()
		}
		if f.After(last) {
			last = f
		}
	}
	return last
}

// around returns page i's last request before t and its first after.
func (r *requestLog) around(i int, t time.Time) (before, after time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.at[i] {
		if at.Before(t) {
			before = at
		} else if after.IsZero() {
			after = at
		}
	}
	return before, after
}

func (r *requestLog) perTen(from, to time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := int(to.Sub(from)/(10*time.Second)) + 1
	counts := make([]int, n)
	for _, ats := range r.at {
		for _, at := range ats {
			if k := int(at.Sub(from) / (10 * time.Second)); !at.Before(from) && k < n {
				counts[k]++
			}
		}
	}
	parts := make([]string, n)
	for k, c := range counts {
		parts[k] = strconv.Itoa(c)
	}
	return strings.Join(parts, " ")
}

// readCounts counts the answers of the versions reads.
type readCounts struct {
	mu      sync.Mutex
	n       int
	codes   map[int]int
	lastErr error // the first read that got no answer
}

func (rc *readCounts) run(ctx context.Context, c *http.Client, site string, ws []*changedigest.Watch) {
	var k atomic.Int64
	for ctx.Err() == nil {
		w := ws[int(k.Add(1)-1)%len(ws)]
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/watches/%d/versions", site, w.ID), nil)
		resp, err := c.Do(req)
		code := 0
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		} else if ctx.Err() != nil {
			return
		}
		rc.mu.Lock()
		rc.n++
		rc.codes[code]++
		if err != nil && rc.lastErr == nil {
			rc.lastErr = err
		}
		rc.mu.Unlock()
	}
}

// apiClient logs in as admin on site, makes an API token and returns a
// client that sends it.
func apiClient(site, password string) (*http.Client, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	csrf := func(path string) (string, error) {
		resp, err := c.Get(site + path)
		if err != nil {
			return "", err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(b)
		if m == nil {
			return "", fmt.Errorf("%s%s has no form token (%s)", site, path, resp.Status)
		}
		return string(m[1]), nil
	}
	tok, err := csrf("/login")
	if err != nil {
		return nil, err
	}
	resp, err := c.PostForm(site+"/login", url.Values{"csrf_token": {tok}, "name": {"admin"}, "password": {password}})
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if tok, err = csrf("/settings"); err != nil {
		return nil, err
	}
	resp, err = c.PostForm(site+"/settings/tokens", url.Values{"csrf_token": {tok}, "name": {"bench"}})
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`class="copy" type="text" readonly value="([^"]+)"`).FindSubmatch(b)
	if m == nil {
		return nil, fmt.Errorf("no API token on the settings page (%s)", resp.Status)
	}
	secret := string(m[1])
	return &http.Client{Timeout: 20 * time.Second, Transport: bearer{secret}}, nil
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func getJSON(c *http.Client, u string, v any) int {
	resp, err := c.Get(u)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == 200 {
		json.NewDecoder(bufio.NewReader(resp.Body)).Decode(v)
	}
	return resp.StatusCode
}
