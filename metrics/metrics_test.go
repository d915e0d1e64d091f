package metrics

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrite checks the text format of each kind: counters, counters by
// label (values quoted and escaped, at most maxSeries kept), histograms
// with cumulative buckets, gauges left out when they have no value.
func TestWrite(t *testing.T) {
	r := &Registry{}
	c := r.Counter("t_total", "A counter.", &Counter{})
	c.Add(3)
	v := r.CounterVec("t_by_total", "By label.", "reason", "kind")
	v.With("timeout", "page").Inc()
	v.With(`say "no"`, "feed").Add(2)
	h := r.Histogram("t_seconds", "Durations.", NewHistogram(0.1, 1))
	for _, x := range []float64{0.05, 0.5, 0.5, 3} {
		h.Observe(x)
	}
	r.Gauge("t_gauge", "A gauge.", func() (float64, bool) { return 2.5, true })
	r.Gauge("t_none", "Nothing now.", func() (float64, bool) { return 0, false })
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got := rec.Body.String()
	for _, want := range []string{
		"# HELP t_total A counter.\n# TYPE t_total counter\nt_total 3\n",
		`t_by_total{reason="say \"no\"",kind="feed"} 2` + "\n",
		`t_by_total{reason="timeout",kind="page"} 1` + "\n",
		"# TYPE t_seconds histogram\n" + `t_seconds_bucket{le="0.1"} 1` + "\n" + `t_seconds_bucket{le="1"} 3` + "\n" +
			`t_seconds_bucket{le="+Inf"} 4` + "\nt_seconds_sum 4.05\nt_seconds_count 4\n",
		"t_gauge 2.5\n",
		"# TYPE t_none gauge\n# HELP",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q in:\n%s", want, got)
		}
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	for i := range 3 * maxSeries {
		v.With(fmt.Sprint("r", i), "x").Inc()
	}
	if n := len(v.m); n > maxSeries+1 {
		t.Errorf("%d series kept, want at most %d and other", n, maxSeries)
	}
	if o := v.With("other", "other").Value(); o == 0 {
		t.Error("values past the bound are not counted under other")
	}
}
