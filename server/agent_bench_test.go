package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
)

// loadResult is what one kind of request gave in a load phase.
type loadResult struct {
	lat []time.Duration
	ok  int
}

func (r *loadResult) pct(p float64) float64 {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return float64(r.lat[int(p*float64(len(r.lat)-1))].Microseconds()) / 1000
}

// hammer runs workers calling fn until d has passed; fn says whether
// its request succeeded.
func hammer(workers int, d time.Duration, fn func(rng *rand.Rand) bool) *loadResult {
	res := &loadResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for i := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 3))
			var lat []time.Duration
			ok := 0
			for time.Now().Before(stop) {
				t := time.Now()
				if fn(rng) {
					ok++
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.ok += ok
			mu.Unlock()
		})
	}
	wg.Wait()
	return res
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runqWait is the time the process's threads have spent ready to run
// but waiting for a CPU (the second field of each thread's schedstat),
// zero where the kernel does not say. With CPU time it tells a process
// that could not get the cores (other programs had them) from one that
// left them idle.
func runqWait() time.Duration {
	tasks, _ := os.ReadDir("/proc/self/task")
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum += time.Duration(n)
		}
	}
	return sum
}

// BenchmarkAgentLoad is the page agent's load test on loopback: agent
// requests (most answered with the void agent, as on a busy site) and
// reports (each with a fresh digester's token) from many workers, while
// feed readers poll a feed, against the feed readers alone. It runs its
// phases once (use -benchtime=1x) and reports rates, latency percentiles
// and the CPU time of the process (server and load generator together).
// One loopback address plays every visitor, so the per-address report
// limit is off, and so is the per-page one: this measures capacity.
func BenchmarkAgentLoad(b *testing.B) {
	e, feedURL := feedFixture(b, 100)
	e.srv.Logger = slog.New(slog.DiscardHandler)
	m := agent.New(e.store, e.http.URL+"/agent/report")
	m.Logger = slog.New(slog.DiscardHandler)
	m.AddrPerMinute, m.PagePerMinute = 0, 0 // capacity, not the limits
	e.srv.Agent = m
	m.Start()
	defer m.Stop()
	u, _ := e.store.UserByName(context.Background(), "ann")
	const pages = 200
	keys := make([]string, pages)
	sums := make([]string, pages)
	for i := range pages {
		w := e.mustWatch(u, fmt.Sprintf("https://site%d.example.org/", i), "news")
		body := fmt.Sprintf(`<html><head><title>Site %d</title></head><body><header>Site</header><main><p>The news of site %d today, with a paragraph of text long enough.</p></main><footer>About</footer></body></html>`, i, i)
		e.addVersion(w, body)
		w, err := e.store.UpdateWatch(context.Background(), u.ID, w.ID, func(x *changedigest.Watch) error {
			x.AgentKey = agent.NewKey(x.ID)
			if i%2 == 1 {
				x.AgentThreshold = time.Nanosecond // always the digester: reporters use these
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = w.AgentKey
		sums[i] = agent.Summarize([]byte(body), "text/html").String()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}
	get := func(u string) (int, string) {
		resp, err := client.Get(u)
		if err != nil {
			b.Error(err)
			return 0, ""
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	feed := func(*rand.Rand) bool { st, _ := get(feedURL); return st == 200 }
	agentReq := func(rng *rand.Rand) bool {
		st, _ := get(e.http.URL + "/agent.js?k=" + url.QueryEscape(keys[rng.IntN(pages)]))
		return st == 200
	}
	var reports loadResult
	var rmu sync.Mutex
	report := func(rng *rand.Rand) bool {
		i := 2*rng.IntN(pages/2) + 1
		st, js := get(e.http.URL + "/agent.js?k=" + url.QueryEscape(keys[i]))
		at := strings.Index(js, `T = "`)
		if st != 200 || at < 0 {
			return false
		}
		tok := js[at+5:]
		tok = tok[:strings.IndexByte(tok, '"')]
		form := url.Values{"t": {tok}, "u": {fmt.Sprintf("https://site%d.example.org/", i)}, "s": {sums[i]}}
		t := time.Now()
		resp, err := client.PostForm(e.http.URL+"/agent/report", form)
		if err != nil {
			b.Error(err)
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rmu.Lock()
		reports.lat = append(reports.lat, time.Since(t))
		if resp.StatusCode == http.StatusAccepted {
			reports.ok++
		}
		rmu.Unlock()
		return resp.StatusCode == http.StatusAccepted
	}
	// One report for each page with the default threshold: its agent
	// requests get the void agent for the next 10 minutes.
	for i := 0; i < pages; i += 2 {
		_, js := get(e.http.URL + "/agent.js?k=" + url.QueryEscape(keys[i]))
		at := strings.Index(js, `T = "`)
		if at < 0 {
			b.Fatalf("page %d: no digester", i)
		}
		tok := js[at+5:]
		tok = tok[:strings.IndexByte(tok, '"')]
		resp, err := client.PostForm(e.http.URL+"/agent/report", url.Values{"t": {tok}, "u": {fmt.Sprintf("https://site%d.example.org/", i)}, "s": {sums[i]}})
		if err != nil || resp.StatusCode != http.StatusAccepted {
			b.Fatalf("page %d: report: %v %v", i, resp.StatusCode, err)
		}
		resp.Body.Close()
	}
	const d = 5 * time.Second
	// Feed readers at a steady pace (4 readers, one request each 250 ms
	// at most), as feed readers poll; the agent traffic as fast as it goes.
	paced := func(rng *rand.Rand) bool {
		t := time.Now()
		ok := feed(rng)
		time.Sleep(250*time.Millisecond - time.Since(t))
		return ok
	}
	b.ResetTimer()
	alone := hammer(4, d, paced)

	cpu0, wait0, t0 := cpuTime(), runqWait(), time.Now()
	var agents *loadResult
	var wg sync.WaitGroup
	wg.Go(func() { agents = hammer(24, d, agentReq) })
	wg.Go(func() { hammer(8, d, report) })
	wg.Wait()
	cpu, wait, wall := cpuTime()-cpu0, runqWait()-wait0, time.Since(t0)
	agentsOnly, reportsOnly := agents, reports
	reports = loadResult{}

	var feedLoaded *loadResult
	wg.Go(func() { feedLoaded = hammer(4, d, paced) })
	wg.Go(func() { agents = hammer(24, d, agentReq) })
	wg.Go(func() { hammer(8, d, report) })
	wg.Wait()
	b.StopTimer()
	secs := d.Seconds()
	b.ReportMetric(float64(agentsOnly.ok)/secs, "agent-req/s")
	b.ReportMetric(agentsOnly.pct(0.5), "agent-p50-ms")
	b.ReportMetric(agentsOnly.pct(0.99), "agent-p99-ms")
	b.ReportMetric(float64(reportsOnly.ok)/secs, "reports/s")
	b.ReportMetric(reportsOnly.pct(0.5), "report-p50-ms")
	b.ReportMetric(reportsOnly.pct(0.99), "report-p99-ms")
	// Agent requests and reports (a report costs a digester request and
	// a post) per CPU second of the process: server and load generator.
	b.ReportMetric(float64(len(agentsOnly.lat)+2*len(reportsOnly.lat))/cpu.Seconds(), "agent-req/cpu-s")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-cores")
	b.ReportMetric(wait.Seconds()/wall.Seconds(), "runq-wait-cores")
	b.ReportMetric(float64(agents.ok)/secs, "loaded-agent-req/s")
	b.ReportMetric(float64(reports.ok)/secs, "loaded-reports/s")
	b.ReportMetric(alone.pct(0.5), "feed-alone-p50-ms")
	b.ReportMetric(alone.pct(0.99), "feed-alone-p99-ms")
	b.ReportMetric(feedLoaded.pct(0.5), "feed-loaded-p50-ms")
	b.ReportMetric(feedLoaded.pct(0.99), "feed-loaded-p99-ms")
	st := m.Totals()
	b.Logf("agent totals: %+v", st)
	if float64(agentsOnly.ok) < 0.9*float64(len(agentsOnly.lat)) {
		b.Errorf("only %d of %d agent requests succeeded", agentsOnly.ok, len(agentsOnly.lat))
	}
}

// BenchmarkAgentHandler is the server's own cost of an agent request and
// of a report (with the detector's comparison), through the router and
// middleware without the network; cpu-ns/op is the process's CPU time.
func BenchmarkAgentHandler(b *testing.B) {
	e := mustServer(b)
	e.srv.Logger = slog.New(slog.DiscardHandler)
	m := agent.New(e.store, e.http.URL+"/agent/report")
	m.Logger = slog.New(slog.DiscardHandler)
	m.AddrPerMinute, m.PagePerMinute = 0, 0
	e.srv.Agent = m
	m.Start()
	defer m.Stop()
	u := e.mustUser("ann", "correct horse")
	w := e.mustWatch(u, "https://site.example.org/")
	body := `<html><head><title>Site</title></head><body><main><p>The news of the site today, with a paragraph of text.</p></main></body></html>`
	e.addVersion(w, body)
	w, _ = e.store.UpdateWatch(context.Background(), u.ID, w.ID, func(x *changedigest.Watch) error {
		x.AgentKey, x.AgentThreshold = agent.NewKey(x.ID), time.Nanosecond
		return nil
	})
	sum := agent.Summarize([]byte(body), "text/html").String()
	h := e.srv.Handler()
	script := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/agent.js?k="+url.QueryEscape(w.AgentKey), nil))
		if rec.Code != 200 {
			b.Fatalf("agent.js: %d", rec.Code)
		}
		return rec.Body.String()
	}
	b.Run("script", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			script()
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("script-gzip", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			req := httptest.NewRequest("GET", "/agent.js?k="+url.QueryEscape(w.AgentKey), nil)
			req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" {
				b.Fatalf("agent.js: %d %v", rec.Code, rec.Header())
			}
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("report", func(b *testing.B) {
		toks := make([]string, 0, b.N)
		for range b.N {
			js := script()
			t := js[strings.Index(js, `T = "`)+5:]
			toks = append(toks, t[:strings.IndexByte(t, '"')])
		}
		b.ResetTimer()
		c0 := cpuTime()
		for i := range b.N {
			form := url.Values{"t": {toks[i]}, "u": {w.URL}, "s": {sum}}.Encode()
			req := httptest.NewRequest("POST", "/agent/report", strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				b.Fatalf("report: %d %s", rec.Code, rec.Body)
			}
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
	})
}
