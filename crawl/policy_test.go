package crawl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// fixedPolicy is the default policy without jitter.
func fixedPolicy() Policy {
	p := NewPolicy()
	p.Jitter = 0
	return p
}

func TestFirstInterval(t *testing.T) {
	tests := []struct {
		name     string
		category changedigest.Category
		interval time.Duration
		want     time.Duration
	}{
		{"news", changedigest.CategoryNews, 0, time.Hour},
		{"personal", changedigest.CategoryPersonal, 0, 24 * time.Hour},
		{"academic", changedigest.CategoryAcademic, 0, 48 * time.Hour},
		{"no category", "", 0, 24 * time.Hour},
		{"explicit interval wins over news", changedigest.CategoryNews, 3 * time.Hour, 3 * time.Hour},
		{"explicit interval below the minimum is the user's choice", changedigest.CategoryAcademic, 2 * time.Minute, 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fixedPolicy()
			w := &changedigest.Watch{ID: 1, URL: "http://example.org/", Category: tt.category, Interval: tt.interval}
			if got := p.Interval(w); got != tt.want {
				t.Errorf("Interval = %s, want %s", got, tt.want)
			}
			// The first check of a new watch sets the next due time from it.
			p.Apply(w, Outcome{Result: FirstVersion}, nil, t0)
			if got := w.NextCheck.Sub(t0); got != tt.want {
				t.Errorf("after the first check, next check in %s, want %s", got, tt.want)
			}
			if len(w.Samples) != 0 || w.Checks != 1 || w.ChangeChecks != 0 || !w.LastChange.IsZero() {
				t.Errorf("first version: samples %d checks %d change checks %d last change %v", len(w.Samples), w.Checks, w.ChangeChecks, w.LastChange)
			}
		})
	}
}

func TestIntervalKeepsCategoryUntilMinSamples(t *testing.T) {
	p := fixedPolicy()
	w := &changedigest.Watch{Category: changedigest.CategoryAcademic}
	now := t0
	p.Apply(w, Outcome{Result: FirstVersion}, nil, now)
	for i := range p.MinSamples - 1 {
		now = w.NextCheck
		p.Apply(w, Outcome{Result: Changed}, nil, now)
		if got := w.NextCheck.Sub(now); got != 48*time.Hour {
			t.Fatalf("after %d samples: interval %s, want the category's 48h", i+1, got)
		}
	}
	now = w.NextCheck
	p.Apply(w, Outcome{Result: Changed}, nil, now)
	// Five regular 48 h checks that all saw a change: λ̂ = ln(11)/48h,
	// interval = 0.5/λ̂ ≈ 10 h.
	want := time.Duration(0.5 / (math.Log(11) / (48 * 3600)) * float64(time.Second))
	if got := w.NextCheck.Sub(now); got != want {
		t.Errorf("after %d samples: interval %s, want %s from the estimated rate", len(w.Samples), got, want)
	}
}

// TestPolicyConvergesOnPoissonPage runs the policy against simulated
// pages: after enough checks, the estimated rate is near the true one and
// the interval near TargetFraction/λ within the bounds.
func TestPolicyConvergesOnPoissonPage(t *testing.T) {
	tests := []struct {
		name     string
		category changedigest.Category
		period   time.Duration // mean time between changes; 0: never changes
		want     time.Duration // expected interval
	}{
		{"news page changing every 20 min", changedigest.CategoryNews, 20 * time.Minute, 10 * time.Minute},
		{"news page changing hourly", changedigest.CategoryNews, time.Hour, 30 * time.Minute},
		{"personal page changing every 6 h", changedigest.CategoryPersonal, 6 * time.Hour, 3 * time.Hour},
		{"academic page changing daily", changedigest.CategoryAcademic, 24 * time.Hour, 12 * time.Hour},
		{"news page changing daily", changedigest.CategoryNews, 24 * time.Hour, 12 * time.Hour},
		{"personal page changing weekly", changedigest.CategoryPersonal, 7 * 24 * time.Hour, 84 * time.Hour},
		{"page changing every minute: clamped to the minimum", changedigest.CategoryNews, time.Minute, 5 * time.Minute},
		{"static page: grows to the maximum", changedigest.CategoryNews, 0, 7 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(5) {
				rate := 0.0
				if tt.period > 0 {
					rate = 1 / tt.period.Seconds()
				}
				page := newPoissonPage(max(rate, 1e-12), seed)
				rng := rand.New(rand.NewPCG(seed, 99))
				p := NewPolicy()
				p.Rand = rng.Float64
				w := &changedigest.Watch{Category: tt.category}
				now := t0
				p.Apply(w, Outcome{Result: FirstVersion}, nil, now)
				var sum time.Duration
				var rates float64
				const checks, tail = 800, 500
				for i := range checks {
					d := w.NextCheck.Sub(now)
					now = w.NextCheck
					res := Unchanged
					if page.advance(d) {
						res = Changed
					}
					p.Apply(w, Outcome{Result: res}, nil, now)
					if i >= checks-tail {
						sum += p.Interval(w)
						rates += EstimateRate(w.Samples)
					}
				}
				mean, meanRate := sum/tail, rates/tail
				if seed == 0 {
					t.Logf("mean interval %s (want %s), mean estimate %.3g/h (true %.3g/h)", mean.Round(time.Second), tt.want, meanRate*3600, rate*3600)
				}
				if rel := math.Abs(float64(mean-tt.want)) / float64(tt.want); rel > 0.25 {
					t.Errorf("seed %d: mean interval over the last %d checks %s, want %s ±25%%", seed, tail, mean.Round(time.Second), tt.want)
				}
				// Where the interval is not clamped, the estimates
				// average out near the true rate.
				if rate > 0 && tt.want > p.MinInterval {
					if rel := math.Abs(meanRate-rate) / rate; rel > 0.2 {
						t.Errorf("seed %d: mean estimate %.3g/h, true %.3g/h (±20%%)", seed, meanRate*3600, rate*3600)
					}
				}
			}
		})
	}
}

func TestIntervalGrowthIsCapped(t *testing.T) {
	p := fixedPolicy()
	w := &changedigest.Watch{Category: changedigest.CategoryNews}
	now := t0
	p.Apply(w, Outcome{Result: FirstVersion}, nil, now)
	var got []time.Duration
	for range 14 {
		now = w.NextCheck
		p.Apply(w, Outcome{Result: NotModified}, nil, now)
		got = append(got, w.NextCheck.Sub(now))
	}
	h := time.Hour
	want := []time.Duration{h, h, h, h, 2 * h, 4 * h, 8 * h, 16 * h, 32 * h, 64 * h, 128 * h, 168 * h, 168 * h, 168 * h}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("intervals of a static news page:\n got %v\nwant %v", got, want)
	}
}

func TestApplyBacksOffOnErrors(t *testing.T) {
	p := fixedPolicy()
	w := &changedigest.Watch{Category: changedigest.CategoryNews, ETag: `"e"`, Checks: 3, LastCheck: t0}
	now := t0
	fail := errors.New("crawl: GET http://example.org/: connection failed")
	var got []time.Duration
	for range 10 {
		now = now.Add(time.Minute)
		p.Apply(w, Outcome{}, fail, now)
		got = append(got, w.NextCheck.Sub(now))
	}
	h, m := time.Hour, time.Minute
	// Soon at first (a server down a moment), then the interval doubled.
	want := []time.Duration{5 * m, 15 * m, 45 * m, h, 2 * h, 4 * h, 8 * h, 16 * h, 32 * h, 64 * h}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("back-off:\n got %v\nwant %v", got, want)
	}
	if w.ErrorCount != 10 || w.LastError != fail.Error() || !w.LastErrorAt.Equal(now) {
		t.Errorf("error state: count %d, last %q at %v", w.ErrorCount, w.LastError, w.LastErrorAt)
	}
	if w.Checks != 3 || len(w.Samples) != 0 || w.ETag != `"e"` || !w.LastCheck.Equal(t0) {
		t.Errorf("a failure touched the success state: checks %d samples %d etag %q last check %v", w.Checks, len(w.Samples), w.ETag, w.LastCheck)
	}

	// A success clears the error state; its sample spans the failures.
	now = now.Add(time.Hour)
	p.Apply(w, Outcome{Result: Unchanged, ETag: `"f"`}, nil, now)
	if w.ErrorCount != 0 || w.LastError != "" || w.Checks != 4 || w.ETag != `"f"` {
		t.Errorf("after success: errors %d %q, checks %d, etag %q", w.ErrorCount, w.LastError, w.Checks, w.ETag)
	}
	if len(w.Samples) != 1 || w.Samples[0].Interval != now.Sub(t0) {
		t.Errorf("samples %+v, want one spanning %s", w.Samples, now.Sub(t0))
	}
	if got := w.NextCheck.Sub(now); got != time.Hour {
		t.Errorf("after success: next check in %s, want 1h", got)
	}
}

// TestApplyLeavesBackoffOnServiceFaults: a check that failed for the
// service's own reason (a full disk, a cluster that did not answer) is
// recorded but leaves the page's back-off as it was, and is tried again
// within FaultRetry, however often it fails so.
func TestApplyLeavesBackoffOnServiceFaults(t *testing.T) {
	p := fixedPolicy()
	for _, fault := range []error{
		fmt.Errorf("crawl: store a version: %w", changedigest.Errorf(changedigest.EFULL, "storage is full")),
		fmt.Errorf("crawl: store a version: %w", changedigest.Errorf(changedigest.EBUSY, "the cluster did not answer")),
	} {
		for _, w := range []*changedigest.Watch{
			{Category: changedigest.CategoryPersonal, ErrorCount: 2, Checks: 3, LastCheck: t0},
			{Interval: 10 * time.Minute, Checks: 3, LastCheck: t0},
		} {
			now := t0
			for range 20 {
				now = now.Add(time.Minute)
				p.Apply(w, Outcome{}, fault, now)
				if d, most := w.NextCheck.Sub(now), min(p.FaultRetry, p.Interval(w)); d != most {
					t.Errorf("%v: next check in %s, want %s", fault, d, most)
				}
			}
			if w.ErrorCount > 2 || w.LastError != fault.Error() || !w.LastErrorAt.Equal(now) || w.Checks != 3 {
				t.Errorf("%v: error count %d, last %q at %v, checks %d", fault, w.ErrorCount, w.LastError, w.LastErrorAt, w.Checks)
			}
		}
	}
}

func TestApplyHonoursRetryAfter(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name    string
		outcome Outcome
		err     error
		want    time.Duration // from now
		retry   bool          // w.RetryAfter set
	}{
		{"429 with Retry-After beyond the back-off", Outcome{}, &HTTPError{StatusCode: 429, RetryAfter: t0.Add(3 * h)}, 3 * h, true},
		{"503 with Retry-After before the back-off", Outcome{}, &HTTPError{StatusCode: 503, RetryAfter: t0.Add(time.Minute)}, h, false},
		{"wrapped HTTPError", Outcome{}, fmt.Errorf("check: %w", &HTTPError{StatusCode: 429, RetryAfter: t0.Add(5 * h)}), 5 * h, true},
		{"absurd Retry-After is capped", Outcome{}, &HTTPError{StatusCode: 429, RetryAfter: t0.Add(90 * 24 * h)}, 7 * 24 * h, true},
		{"Retry-After on a successful outcome", Outcome{Result: Unchanged, RetryAfter: t0.Add(2 * h)}, nil, 2 * h, true},
		{"429 without Retry-After backs off", Outcome{}, &HTTPError{StatusCode: 429}, h, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fixedPolicy()
			w := &changedigest.Watch{Category: changedigest.CategoryNews, RetryAfter: t0.Add(-h)}
			p.Apply(w, tt.outcome, tt.err, t0)
			if got := w.NextCheck.Sub(t0); got != tt.want {
				t.Errorf("next check in %s, want %s", got, tt.want)
			}
			if !w.RetryAfter.IsZero() != tt.retry || (tt.retry && !w.RetryAfter.Equal(w.NextCheck)) {
				t.Errorf("RetryAfter = %v, NextCheck = %v", w.RetryAfter, w.NextCheck)
			}
		})
	}
}

func TestApplyValidatorsAndSamples(t *testing.T) {
	p := fixedPolicy()
	p.HistorySize = 4
	w := &changedigest.Watch{Category: changedigest.CategoryNews}
	now := t0
	step := func(o Outcome) {
		now = now.Add(time.Hour)
		p.Apply(w, o, nil, now)
	}
	step(Outcome{Result: FirstVersion, ETag: `"1"`, LastModified: "Mon, 02 Mar 2026 08:00:00 GMT"})
	if w.ETag != `"1"` || len(w.Samples) != 0 {
		t.Fatalf("first: etag %q samples %d", w.ETag, len(w.Samples))
	}
	step(Outcome{Result: NotModified})
	if w.ETag != `"1"` || w.LastModified == "" {
		t.Errorf("a 304 without validators dropped them: %q %q", w.ETag, w.LastModified)
	}
	step(Outcome{Result: Changed, ETag: `"2"`})
	if w.ETag != `"2"` || w.LastModified != "" {
		t.Errorf("a 200 must replace the validators: %q %q", w.ETag, w.LastModified)
	}
	if !w.LastChange.Equal(now) || w.ChangeChecks != 1 {
		t.Errorf("LastChange %v ChangeChecks %d", w.LastChange, w.ChangeChecks)
	}
	for range 5 {
		step(Outcome{Result: Unchanged})
	}
	if len(w.Samples) != 4 || w.Samples[0].Changed || w.Checks != 8 {
		t.Errorf("history not bounded to 4 or wrong: %+v (checks %d)", w.Samples, w.Checks)
	}
	for _, s := range w.Samples {
		if s.Interval != time.Hour {
			t.Errorf("sample interval %s, want 1h", s.Interval)
		}
	}
}

func TestJitterSpreadsDueTimes(t *testing.T) {
	p := NewPolicy()
	rng := rand.New(rand.NewPCG(1, 2))
	p.Rand = rng.Float64
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for range 1000 {
		w := &changedigest.Watch{Category: changedigest.CategoryNews}
		p.Apply(w, Outcome{Result: FirstVersion}, nil, t0)
		d := w.NextCheck.Sub(t0)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 54*time.Minute || hi > 66*time.Minute || hi-lo < 10*time.Minute {
		t.Errorf("jittered first intervals span [%s, %s], want within 1h ±10%% and spread out", lo, hi)
	}
}

func BenchmarkPolicyApply(b *testing.B) {
	p := NewPolicy()
	page := newPoissonPage(1.0/3600, 1)
	w := &changedigest.Watch{Category: changedigest.CategoryNews}
	now := t0
	p.Apply(w, Outcome{Result: FirstVersion}, nil, now)
	cpu := CPUTime()
	for b.Loop() {
		d := w.NextCheck.Sub(now)
		now = w.NextCheck
		res := Unchanged
		if page.advance(d) {
			res = Changed
		}
		p.Apply(w, Outcome{Result: res}, nil, now)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// TestApplyMarksReportedSamples: a check that a report made due and
// that found the change records its sample as Reported, and clears
// DueByReport; one that found nothing records an ordinary sample.
func TestApplyMarksReportedSamples(t *testing.T) {
	p := fixedPolicy()
	w := &changedigest.Watch{Category: changedigest.CategoryNews}
	now := t0
	p.Apply(w, Outcome{Result: FirstVersion}, nil, now)
	for _, tc := range []struct {
		due      bool
		result   Result
		reported bool
	}{
		{true, Changed, true},
		{true, Unchanged, false},
		{false, Changed, false},
	} {
		w.DueByReport = tc.due
		now = now.Add(time.Minute)
		p.Apply(w, Outcome{Result: tc.result}, nil, now)
		s := w.Samples[len(w.Samples)-1]
		if s.Reported != tc.reported || w.DueByReport {
			t.Errorf("due by report %v, %v: sample %+v, DueByReport %v", tc.due, tc.result, s, w.DueByReport)
		}
	}
}
