// Package metrics keeps the service's counters, gauges and histograms and
// writes them in the Prometheus text format (version 0.0.4) for a
// scraper: checks by result, failures by reason, check durations, the
// work queue, feed requests, deliveries, the store's size. It has no
// dependencies: the few metric kinds the service needs are written out
// here.
package metrics

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter is a value that only goes up.
type Counter struct{ v atomic.Uint64 }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Value is the count so far.
func (c *Counter) Value() uint64 { return c.v.Load() }

// CounterVec is counters told apart by the values of their labels.
type CounterVec struct {
	labels []string
	mu     sync.Mutex
	m      map[string]*Counter
}

// maxSeries bounds the label values a CounterVec keeps: past it, new
// values count under "other" (a reason or status is a short list).
const maxSeries = 200

// With returns the counter of the label values (in the order of the
// labels).
func (v *CounterVec) With(values ...string) *Counter {
	key := strings.Join(values, "\xff")
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]*Counter{}
	}
	c, ok := v.m[key]
	if !ok {
		if len(v.m) >= maxSeries {
			other := make([]string, len(values))
			for i := range other {
				other[i] = "other"
			}
			key = strings.Join(other, "\xff")
			if c, ok = v.m[key]; ok {
				return c
			}
		}
		c = &Counter{}
		v.m[key] = c
	}
	return c
}

// Histogram counts observations in buckets of upper bounds.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64 // one per bound, and +Inf
	sum    atomic.Uint64   // float64 bits
}

// NewHistogram is a histogram of the given upper bounds, ascending.
func NewHistogram(bounds ...float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts x.
func (h *Histogram) Observe(x float64) {
	i, _ := slices.BinarySearch(h.bounds, x)
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+x)) {
			return
		}
	}
}

type metric struct {
	name, help, kind string
	write            func(w io.Writer, name string)
}

// Registry holds metrics by name and writes them.
type Registry struct {
	mu      sync.Mutex
	metrics []metric
}

func (r *Registry) add(m metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.metrics {
		if r.metrics[i].name == m.name {
			r.metrics[i] = m // registered again (a restarted component)
			return
		}
	}
	r.metrics = append(r.metrics, m)
	slices.SortFunc(r.metrics, func(a, b metric) int { return cmp.Compare(a.name, b.name) })
}

// Counter registers c under name.
func (r *Registry) Counter(name, help string, c *Counter) *Counter {
	r.add(metric{name, help, "counter", func(w io.Writer, name string) {
		fmt.Fprintf(w, "%s %d\n", name, c.Value())
	}})
	return c
}

// CounterVec registers a counter vector of the labels under name.
func (r *Registry) CounterVec(name, help string, labels ...string) *CounterVec {
	v := &CounterVec{labels: labels}
	r.add(metric{name, help, "counter", func(w io.Writer, name string) {
		v.mu.Lock()
		keys := make([]string, 0, len(v.m))
		for k := range v.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		counts := make([]uint64, len(keys))
		for i, k := range keys {
			counts[i] = v.m[k].Value()
		}
		v.mu.Unlock()
		for i, k := range keys {
			fmt.Fprintf(w, "%s{%s} %d\n", name, labelPairs(v.labels, strings.Split(k, "\xff")), counts[i])
		}
	}})
	return v
}

// Histogram registers h under name.
func (r *Registry) Histogram(name, help string, h *Histogram) *Histogram {
	r.add(metric{name, help, "histogram", func(w io.Writer, name string) {
		var cum uint64
		for i, b := range h.bounds {
			cum += h.counts[i].Load()
			fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, formatFloat(b), cum)
		}
		cum += h.counts[len(h.bounds)].Load()
		fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
		fmt.Fprintf(w, "%s_sum %s\n", name, formatFloat(math.Float64frombits(h.sum.Load())))
		fmt.Fprintf(w, "%s_count %d\n", name, cum)
	}})
	return h
}

// Gauge registers a value read when the metrics are written; fn returns
// false when it has none to give (the metric is then left out).
func (r *Registry) Gauge(name, help string, fn func() (float64, bool)) {
	r.add(metric{name, help, "gauge", func(w io.Writer, name string) {
		if v, ok := fn(); ok {
			fmt.Fprintf(w, "%s %s\n", name, formatFloat(v))
		}
	}})
}

// Write writes every metric in the text format.
func (r *Registry) Write(w io.Writer) {
	r.mu.Lock()
	ms := slices.Clone(r.metrics)
	r.mu.Unlock()
	for _, m := range ms {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", m.name, escapeHelp(m.help), m.name, m.kind)
		m.write(w, m.name)
	}
}

// Handler serves the metrics for a scraper.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		r.Write(w)
	})
}

func labelPairs(names, values []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := ""
		if i < len(values) {
			v = values[i]
		}
		b.WriteString(n + "=" + strconv.Quote(v))
	}
	return b.String()
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Default is the service's registry, with the metrics below.
var Default = &Registry{}

// The service's metrics.
var (
	Checks = Default.CounterVec("changedigest_checks_total",
		"Checks made, by result: changed, unchanged, first_version, not_modified, failed.", "result")
	CheckFailures = Default.CounterVec("changedigest_check_failures_total",
		"Failed checks by reason (the error's code: timeout, unavailable, invalid, …).", "reason")
	CheckSeconds = Default.Histogram("changedigest_check_duration_seconds",
		"Time a check took, fetch, comparison and storing.", NewHistogram(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
	FeedRequests = Default.CounterVec("changedigest_feed_requests_total",
		"Requests for feeds by format (atom, rss, json) and status (200, 304, …).", "format", "status")
	Deliveries = Default.CounterVec("changedigest_deliveries_total",
		"Tries to deliver notifications (kind channel) and WebSub distributions (kind websub), by outcome: delivered, failed.", "kind", "outcome")
)

func init() {
	Default.Gauge("go_goroutines", "Goroutines that exist now.", func() (float64, bool) {
		return float64(runtime.NumGoroutine()), true
	})
	Default.Gauge("go_memstats_heap_alloc_bytes", "Bytes of allocated heap objects.", func() (float64, bool) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc), true
	})
}
