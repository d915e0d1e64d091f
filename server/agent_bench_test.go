package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime/pprof"
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
	// wall is how long the phase took, its last answers included.
	wall time.Duration
}

// rate is the successful requests per second of the phase.
func (r *loadResult) rate() float64 { return float64(r.ok) / r.wall.Seconds() }

// report reports the rate and the latency percentiles.
func (r *loadResult) report(b *testing.B, prefix, rateUnit string) {
	b.ReportMetric(r.rate(), rateUnit)
	b.ReportMetric(r.pct(0.5), prefix+"p50-ms")
	b.ReportMetric(r.pct(0.99), prefix+"p99-ms")
}

// check fails b when fewer than 90% of the requests succeeded.
func (r *loadResult) check(b *testing.B, what string) {
	if float64(r.ok) < 0.9*float64(len(r.lat)) {
		b.Errorf("%s: only %d of %d succeeded", what, r.ok, len(r.lat))
	}
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
func hammer(addr string, workers int, d time.Duration, fn func(wk *loadWorker) bool) *loadResult {
	res := &loadResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for i := range workers {
		wg.Go(func() {
			clientSide()
			wk := &loadWorker{rng: rand.New(rand.NewPCG(uint64(i), 3)), wire: &wire{addr: addr}}
			defer wk.wire.close()
			var lat []time.Duration
			ok := 0
			for time.Now().Before(stop) {
				t := time.Now()
				if fn(wk) {
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

// errVoid is a visit that got the void agent.
var errVoid = errors.New("the void agent")

// clientSide labels the calling goroutine (and those it starts) as the
// load generator's, so that a CPU profile tells its share from the
// server's: go tool pprof -tagfocus side=client.
func clientSide() {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("side", "client")))
}

// loadWorker is one simulated client: its random numbers, its
// connection and its gzip reader.
type loadWorker struct {
	rng  *rand.Rand
	wire *wire
	zr   *gzip.Reader
}

// offer sends requests at rate per second from workers until d has
// passed, on a fixed schedule (an open loop, as visitors arrive whether
// or not the server keeps up). fn makes one request and returns its
// latency and whether it succeeded; late is how far behind its schedule
// the request was sent, which counts in its latency, so a server that
// falls behind is not excused by a generator that waited for it.
func offer(addr string, rate float64, workers int, d time.Duration, fn func(wk *loadWorker, late time.Duration) (time.Duration, bool)) *loadResult {
	res := &loadResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	t0 := time.Now()
	gap := time.Duration(float64(time.Second) * float64(workers) / rate)
	for i := range workers {
		wg.Go(func() {
			clientSide()
			wk := &loadWorker{rng: rand.New(rand.NewPCG(uint64(i), 5)), wire: &wire{addr: addr}}
			defer wk.wire.close()
			var lat []time.Duration
			ok := 0
			for at := t0.Add(gap * time.Duration(i) / time.Duration(workers)); at.Sub(t0) < d; at = at.Add(gap) {
				if wait := time.Until(at); wait > 0 {
					time.Sleep(wait)
				}
				l, good := fn(wk, max(0, time.Since(at)))
				if good {
					ok++
				}
				lat = append(lat, l)
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.ok += ok
			mu.Unlock()
		})
	}
	wg.Wait()
	res.wall = time.Since(t0)
	return res
}

// BenchmarkAgentLoad is the page agent's load test on loopback, through
// the server's own http.Server (its timeouts), router, middleware and
// handlers: agent requests (most
// answered with the void agent, as on a busy site) and visits that
// report (a digester request, then its report with the digester's
// token), while feed readers poll a feed. Clients ask for gzip as
// browsers do. It runs its phases once (use -benchtime=1x):
//
//   - capacity: closed loops, each worker as fast as the server answers
//     (24 agent requesters, 8 reporting visitors), alone and with the
//     feed readers;
//   - fresh: the capacity loops with a new connection for every page
//     view, from one of 4,096 loopback addresses, as when visitors
//     reach the server directly rather than through a proxy that keeps
//     its connections open;
//   - target: the target load offered on a fixed schedule, 10,000 agent
//     requests/s and 5,000 reporting visits/s, with the feed readers;
//     latencies count from the scheduled time.
//
// Feed latencies are those of the requests (readers pause between
// them). It reports rates, latency percentiles, the CPU time of the
// process (server and load generator together) and the time it waited
// for a CPU. One loopback address plays every visitor, so the rate
// limits are set far above the load: they are consulted, never reached.
func BenchmarkAgentLoad(b *testing.B) {
	e, feedURL := feedFixture(b, 100)
	e.srv.Logger = slog.New(slog.DiscardHandler)
	m := agent.New(e.store, e.http.URL+"/agent/report")
	m.Logger = slog.New(slog.DiscardHandler)
	m.AddrPerMinute, m.AddrBurst = 1<<40, 1<<30 // consulted, never reached
	m.PagePerMinute, m.PageBurst = 1<<40, 1<<30
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
	// Agent requests and reports go as browsers send them (the headers
	// of a script load and of the digester's CORS fetch), through a lean client; the
	// feed through net/http's.
	// Served as the serve command serves: the server's own http.Server
	// with its timeouts, on a loopback port of its own.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := e.srv.Serve(ln); err != nil {
		b.Fatal(err)
	}
	defer e.srv.Close()
	addr := ln.Addr().String()
	feedURL = "http://" + addr + strings.TrimPrefix(feedURL, e.http.URL)
	browser := "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:145.0) Gecko/20100101 Firefox/145.0\r\n" +
		"Accept-Language: en-GB,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n"
	scriptReq := make([][]byte, pages)
	for i := range pages {
		scriptReq[i] = []byte("GET /agent.js?k=" + url.QueryEscape(keys[i]) + " HTTP/1.1\r\nHost: " + addr + "\r\n" + browser +
			"Accept: */*\r\nReferer: https://site" + strconv.Itoa(i) + ".example.org/\r\nSec-Fetch-Dest: script\r\n" +
			"Sec-Fetch-Mode: no-cors\r\nSec-Fetch-Site: cross-site\r\n\r\n")
	}
	reportReq := func(i int, tok string) []byte {
		form := url.Values{"t": {tok}, "u": {fmt.Sprintf("https://site%d.example.org/", i)}, "s": {sums[i]}}.Encode()
		return []byte("POST /agent/report HTTP/1.1\r\nHost: " + addr + "\r\n" + browser +
			"Accept: */*\r\nContent-Type: application/x-www-form-urlencoded;charset=UTF-8\r\n" +
			"Content-Length: " + strconv.Itoa(len(form)) + "\r\nOrigin: https://site" + strconv.Itoa(i) + ".example.org\r\n" +
			"Sec-Fetch-Dest: empty\r\nSec-Fetch-Mode: cors\r\nSec-Fetch-Site: cross-site\r\n\r\n" + form)
	}
	// token gets a digester for page i and returns its report token.
	token := func(wk *loadWorker, i int) (string, error) {
		res, err := wk.wire.do(scriptReq[i])
		if err != nil {
			return "", err
		}
		js := res.Body
		if res.Gzip {
			if wk.zr == nil {
				wk.zr = new(gzip.Reader)
			}
			if err := wk.zr.Reset(bytes.NewReader(res.Body)); err != nil {
				return "", err
			}
			if js, err = io.ReadAll(wk.zr); err != nil {
				return "", err
			}
		}
		if res.Status == 200 && agent.IsVoid(js) {
			return "", errVoid
		}
		at := bytes.Index(js, []byte(`T = "`))
		if res.Status != 200 || at < 0 {
			return "", fmt.Errorf("page %d: no digester: %d %.60q", i, res.Status, js)
		}
		tok := js[at+5:]
		return string(tok[:bytes.IndexByte(tok, '"')]), nil
	}
	feedClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	feed := func() (time.Duration, bool) {
		t := time.Now()
		resp, err := feedClient.Get(feedURL)
		if err != nil {
			b.Error(err)
			return time.Since(t), false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(t), resp.StatusCode == 200
	}
	agentReq := func(wk *loadWorker) (time.Duration, bool) {
		t := time.Now()
		res, err := wk.wire.do(scriptReq[wk.rng.IntN(pages)])
		if err != nil {
			b.Error(err)
			return time.Since(t), false
		}
		return time.Since(t), res.Status == 200
	}
	// visit gets a digester and posts its report; it returns the
	// report's latency.
	visit := func(wk *loadWorker) (time.Duration, bool) {
		i := 2*wk.rng.IntN(pages/2) + 1
		tok, err := token(wk, i)
		if errors.Is(err, errVoid) {
			// A concurrent report was accepted between this request's
			// clock reading and its answer: the page is not due.
			return 0, false
		}
		if err != nil {
			b.Error(err)
			return 0, false
		}
		req := reportReq(i, tok)
		t := time.Now()
		res, err := wk.wire.do(req)
		if err != nil {
			b.Error(err)
			return time.Since(t), false
		}
		return time.Since(t), res.Status == http.StatusAccepted
	}
	// One report for each page with the default threshold: its agent
	// requests get the void agent for the next 10 minutes.
	wk := &loadWorker{wire: &wire{addr: addr}}
	for i := 0; i < pages; i += 2 {
		tok, err := token(wk, i)
		if err != nil {
			b.Fatal(err)
		}
		res, err := wk.wire.do(reportReq(i, tok))
		if err != nil || res.Status != http.StatusAccepted {
			b.Fatalf("page %d: report: %d %v %s", i, res.Status, err, res.Body)
		}
	}
	wk.wire.close()
	const d = 5 * time.Second
	// Feed readers at a steady pace: 4 readers, one request each 250 ms.
	readers := func() *loadResult {
		return offer(addr, 16, 4, d, func(*loadWorker, time.Duration) (time.Duration, bool) { return feed() })
	}
	// closed runs fn's workers as fast as they go and keeps latencies.
	closed := func(workers int, fn func(*loadWorker) (time.Duration, bool)) *loadResult {
		res := &loadResult{}
		var mu sync.Mutex
		t0 := time.Now()
		hammer(addr, workers, d, func(wk *loadWorker) bool {
			l, ok := fn(wk)
			mu.Lock()
			res.lat = append(res.lat, l)
			if ok {
				res.ok++
			}
			mu.Unlock()
			return ok
		})
		res.wall = time.Since(t0)
		return res
	}
	// usage reports the process's CPU time and run-queue wait over run,
	// in cores.
	usage := func(b *testing.B, prefix string, run func()) {
		c, w, t := cpuTime(), runqWait(), time.Now()
		run()
		wall := time.Since(t).Seconds()
		b.ReportMetric((cpuTime()-c).Seconds()/wall, prefix+"cpu-cores")
		b.ReportMetric((runqWait()-w).Seconds()/wall, prefix+"runq-wait-cores")
	}
	for range 20 { // the feed's first answers fill its caches
		feed()
	}
	alone := readers()
	var wg sync.WaitGroup
	b.Run("capacity", func(b *testing.B) {
		var agents, reports *loadResult
		c0 := cpuTime()
		usage(b, "", func() {
			wg.Go(func() { agents = closed(24, agentReq) })
			wg.Go(func() { reports = closed(8, visit) })
			wg.Wait()
		})
		// Agent requests and reports (a report costs a digester request
		// and a post) per CPU second of the process: server and load
		// generator.
		b.ReportMetric(float64(len(agents.lat)+2*len(reports.lat))/(cpuTime()-c0).Seconds(), "agent-req/cpu-s")
		agents.report(b, "agent-", "agent-req/s")
		reports.report(b, "report-", "reports/s")

		var feed *loadResult
		wg.Go(func() { feed = readers() })
		wg.Go(func() { agents = closed(24, agentReq) })
		wg.Go(func() { reports = closed(8, visit) })
		wg.Wait()
		b.ReportMetric(agents.rate(), "loaded-agent-req/s")
		b.ReportMetric(reports.rate(), "loaded-reports/s")
		b.ReportMetric(alone.pct(0.5), "feed-alone-p50-ms")
		b.ReportMetric(alone.pct(0.99), "feed-alone-p99-ms")
		b.ReportMetric(feed.pct(0.5), "feed-loaded-p50-ms")
		b.ReportMetric(feed.pct(0.99), "feed-loaded-p99-ms")
		agents.check(b, "agent requests")
		reports.check(b, "reports")
	})
	// fresh runs fn as a page view of its own: a new connection from
	// one of 4,096 loopback addresses (visitors), closed after the view.
	fresh := func(fn func(*loadWorker) (time.Duration, bool)) func(*loadWorker) (time.Duration, bool) {
		return func(wk *loadWorker) (time.Duration, bool) {
			n := 1 + wk.rng.IntN(4096)
			wk.wire.from = net.IPv4(127, 1, byte(n>>8), byte(n))
			defer wk.wire.close()
			return fn(wk)
		}
	}
	b.Run("fresh", func(b *testing.B) {
		var agents, reports *loadResult
		c0 := cpuTime()
		usage(b, "", func() {
			wg.Go(func() { agents = closed(24, fresh(agentReq)) })
			wg.Go(func() { reports = closed(8, fresh(visit)) })
			wg.Wait()
		})
		b.ReportMetric(float64(len(agents.lat)+2*len(reports.lat))/(cpuTime()-c0).Seconds(), "agent-req/cpu-s")
		agents.report(b, "agent-", "agent-req/s")
		reports.report(b, "report-", "reports/s")
		agents.check(b, "agent requests")
		reports.check(b, "reports")
	})
	b.Run("target", func(b *testing.B) {
		var agents, reports, feed *loadResult
		usage(b, "", func() {
			wg.Go(func() { feed = readers() })
			wg.Go(func() {
				agents = offer(addr, 10000, 96, d, func(wk *loadWorker, late time.Duration) (time.Duration, bool) {
					l, ok := agentReq(wk)
					return late + l, ok
				})
			})
			wg.Go(func() {
				reports = offer(addr, 5000, 96, d, func(wk *loadWorker, late time.Duration) (time.Duration, bool) {
					l, ok := visit(wk)
					return late + l, ok
				})
			})
			wg.Wait()
		})
		agents.report(b, "agent-", "agent-req/s")
		reports.report(b, "report-", "reports/s")
		b.ReportMetric(alone.pct(0.99), "feed-alone-p99-ms")
		b.ReportMetric(feed.pct(0.5), "feed-loaded-p50-ms")
		b.ReportMetric(feed.pct(0.99), "feed-loaded-p99-ms")
		agents.check(b, "agent requests")
		reports.check(b, "reports")
	})
	// Every report is genuine: a refusal is the server shedding load
	// (a request past its deadline), which the test allows rarely.
	st := m.Totals()
	b.Logf("agent totals: %+v", st)
	if st.Refused*100 > st.Reports {
		b.Errorf("%d of %d reports were refused", st.Refused, st.Reports)
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
		pu, err := url.Parse(w.URL)
		if err != nil {
			b.Fatal(err)
		}
		origin := pu.Scheme + "://" + pu.Host
		b.ResetTimer()
		c0 := cpuTime()
		for i := range b.N {
			form := url.Values{"t": {toks[i]}, "u": {w.URL}, "s": {sum}}.Encode()
			req := httptest.NewRequest("POST", "/agent/report", strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", origin)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				b.Fatalf("report: %d %s", rec.Code, rec.Body)
			}
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
	})
}
