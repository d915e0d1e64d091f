// Package crawltest has test helpers for the crawler: a farm of changing
// pages served on loopback and an in-memory watch store.
package crawltest

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/changedigest/changedigest"
)

// FarmConfig describes a farm.
type FarmConfig struct {
	// Hosts is the number of servers (one loopback listener, hence one
	// host:port, each); Pages the number of pages, page i on host i%Hosts.
	Hosts, Pages int
	// Rate returns page i's change rate in changes per second (nil: every
	// page changes once an hour; 0: never).
	Rate func(i int) float64
	// Size is the approximate body size in bytes (default 8 KiB).
	Size int
	// Delay is added before each answer, to stand for a slow network.
	Delay time.Duration
	// Seed makes the change times reproducible.
	Seed uint64
	// Now is the clock the change process follows (default time.Now).
	Now func() time.Time
}

// Farm serves pages whose content changes as Poisson processes of
// controllable rates, with ETag and Last-Modified validators and 304
// answers to conditional requests.
type Farm struct {
	Servers   []*httptest.Server
	Pages     []*Page
	cfg       FarmConfig
	hosts     []*hostStats
	closeOnce sync.Once
}

type hostStats struct {
	inflight, maxInflight atomic.Int32
}

// Page is one page of a farm.
type Page struct {
	index int
	size  int
	now   func() time.Time

	mu         sync.Mutex
	rate       float64
	rng        *rand.Rand
	version    int
	changedAt  time.Time
	nextChange time.Time
	status     int
	retryAfter string

	// Requests, Full and NotModified count the requests, the 200 answers
	// and the 304 answers.
	Requests, Full, NotModified atomic.Int64
}

// TB is the part of testing.TB a farm needs.
type TB interface {
	Helper()
	Cleanup(func())
}

// NewFarm starts the farm's servers; they are closed when the test ends
// (tb.Cleanup) or by Close.
func NewFarm(tb TB, cfg FarmConfig) *Farm {
	tb.Helper()
	if cfg.Hosts <= 0 {
		cfg.Hosts = 1
	}
	if cfg.Size <= 0 {
		cfg.Size = 8 << 10
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rate == nil {
		cfg.Rate = func(int) float64 { return 1.0 / 3600 }
	}
	f := &Farm{cfg: cfg}
	start := cfg.Now()
	for i := range cfg.Pages {
		p := &Page{
			index:     i,
			size:      cfg.Size,
			now:       cfg.Now,
			rng:       rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
			changedAt: start.Truncate(time.Second),
		}
		p.setRate(cfg.Rate(i), start)
		f.Pages = append(f.Pages, p)
	}
	for h := range cfg.Hosts {
		st := &hostStats{}
		f.hosts = append(f.hosts, st)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := st.inflight.Add(1)
			defer st.inflight.Add(-1)
			for {
				m := st.maxInflight.Load()
				if n <= m || st.maxInflight.CompareAndSwap(m, n) {
					break
				}
			}
			f.serve(w, r, h)
		}))
		f.Servers = append(f.Servers, srv)
	}
	tb.Cleanup(f.Close)
	return f
}

// Close stops the servers; it may be called more than once.
func (f *Farm) Close() {
	f.closeOnce.Do(func() {
		for _, s := range f.Servers {
			s.Close()
		}
	})
}

// URL is the address of page i.
func (f *Farm) URL(i int) string {
	return fmt.Sprintf("%s/p/%d", f.Servers[i%len(f.Servers)].URL, i)
}

// Watches returns one watch per page (IDs from 1), all due now.
func (f *Farm) Watches(category changedigest.Category) []*changedigest.Watch {
	ws := make([]*changedigest.Watch, len(f.Pages))
	for i := range f.Pages {
		ws[i] = &changedigest.Watch{ID: int64(i + 1), UserID: 1, URL: f.URL(i), Category: category}
	}
	return ws
}

// MaxConcurrent returns the most requests host h served at once.
func (f *Farm) MaxConcurrent(h int) int { return int(f.hosts[h].maxInflight.Load()) }

// Requests sums the requests of all pages.
func (f *Farm) Requests() (total, full, notModified int64) {
	for _, p := range f.Pages {
		total += p.Requests.Load()
		full += p.Full.Load()
		notModified += p.NotModified.Load()
	}
	return
}

func (f *Farm) serve(w http.ResponseWriter, r *http.Request, host int) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/p/")
	i, err := strconv.Atoi(rest)
	if !ok || err != nil || i < 0 || i >= len(f.Pages) || i%len(f.Servers) != host {
		http.NotFound(w, r)
		return
	}
	if f.cfg.Delay > 0 {
		select {
		case <-time.After(f.cfg.Delay):
		case <-r.Context().Done():
			return
		}
	}
	p := f.Pages[i]
	p.Requests.Add(1)
	p.mu.Lock()
	p.advance(p.now())
	version, changedAt, status, retry := p.version, p.changedAt, p.status, p.retryAfter
	p.mu.Unlock()

	if status != 0 {
		if retry != "" {
			w.Header().Set("Retry-After", retry)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	etag := fmt.Sprintf(`"%d-%d"`, i, version)
	lastMod := changedAt.UTC().Format(http.TimeFormat)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", lastMod)
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if inm == etag {
			p.NotModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !changedAt.Truncate(time.Second).After(ims) {
		p.NotModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	p.Full.Add(1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(Body(i, version, p.size))
}

// Body is the HTML of version v of page i, about size bytes long.
func Body(i, v, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><title>Page %d</title></head><body>\n<h1>Page %d</h1>\n", i, i)
	fmt.Fprintf(&b, "<div id=\"news\"><p>Version %d of page %d: item %d is new today.</p></div>\n", v, i, v*7919%1000)
	for n := 0; b.Len() < size-32; n++ {
		fmt.Fprintf(&b, "<p>Paragraph %d keeps the same words in every version of the page.</p>\n", n)
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// Version returns the page's current version (0 until its first change).
func (p *Page) Version() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(p.now())
	return p.version
}

// Touch makes the page change now.
func (p *Page) Touch() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.advance(now)
	p.version++
	p.changedAt = now
}

// SetRate changes the page's change rate (changes per second, 0: never).
func (p *Page) SetRate(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.advance(now)
	p.setRate(rate, now)
}

// SetStatus makes the page answer with an error status (and Retry-After
// header, if not empty) until it is set back to 0.
func (p *Page) SetStatus(status int, retryAfter string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status, p.retryAfter = status, retryAfter
}

func (p *Page) setRate(rate float64, now time.Time) {
	p.rate = rate
	if rate <= 0 {
		p.nextChange = time.Time{}
		return
	}
	p.nextChange = now.Add(p.exp())
}

func (p *Page) exp() time.Duration {
	return time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second))
}

// advance applies the changes due by now.
func (p *Page) advance(now time.Time) {
	for !p.nextChange.IsZero() && !now.Before(p.nextChange) {
		p.version++
		p.changedAt = p.nextChange
		p.nextChange = p.nextChange.Add(p.exp())
	}
}
