package crawl

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// poissonPage simulates a page whose changes form a Poisson process of a
// given rate, observed only at check times.
type poissonPage struct {
	rate float64 // changes per second
	rng  *rand.Rand
	next float64 // time of the next change, seconds
	now  float64
}

func newPoissonPage(rate float64, seed uint64) *poissonPage {
	p := &poissonPage{rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	p.next = p.rng.ExpFloat64() / rate
	return p
}

// advance moves time on by d and reports whether the page changed at
// least once meanwhile.
func (p *poissonPage) advance(d time.Duration) bool {
	p.now += d.Seconds()
	changed := false
	for p.next <= p.now {
		changed = true
		p.next += p.rng.ExpFloat64() / p.rate
	}
	return changed
}

func TestEstimateRateConverges(t *testing.T) {
	tests := []struct {
		name     string
		perHour  float64 // true change rate
		interval time.Duration
		spread   float64 // 0: regular checks; else intervals uniform in interval × [1-spread, 1+spread]
		n        int
		tol      float64 // relative tolerance
	}{
		{"hourly page, checked every 10 min", 1, 10 * time.Minute, 0, 2000, 0.10},
		{"hourly page, checked every 30 min", 1, 30 * time.Minute, 0, 2000, 0.10},
		{"hourly page, checked hourly", 1, time.Hour, 0, 2000, 0.10},
		{"hourly page, checked every 2 h", 1, 2 * time.Hour, 0, 2000, 0.12},
		{"daily page, checked every 6 h", 1.0 / 24, 6 * time.Hour, 0, 2000, 0.10},
		{"weekly page, checked daily", 1.0 / 168, 24 * time.Hour, 0, 2000, 0.15},
		{"page changing every 5 min, checked every 5 min", 12, 5 * time.Minute, 0, 2000, 0.10},
		{"hourly page, jittered 30-min checks", 1, 30 * time.Minute, 0.1, 2000, 0.10},
		{"hourly page, irregular checks 6 min to 3 h", 1, 93 * time.Minute, 0.94, 2000, 0.12},
		{"daily page, irregular checks", 1.0 / 24, 12 * time.Hour, 0.9, 2000, 0.12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rate := tt.perHour / 3600
			page := newPoissonPage(rate, 42)
			rng := rand.New(rand.NewPCG(7, 11))
			samples := make([]changedigest.CheckSample, tt.n)
			for i := range samples {
				d := tt.interval
				if tt.spread > 0 {
					d = time.Duration(float64(d) * (1 + tt.spread*(2*rng.Float64()-1)))
				}
				samples[i] = changedigest.CheckSample{Interval: d, Changed: page.advance(d)}
			}
			got := EstimateRate(samples)
			if rel := math.Abs(got-rate) / rate; rel > tt.tol {
				t.Errorf("estimated %.4f changes/h, true %.4f (off by %.0f%%, tolerance %.0f%%)", got*3600, tt.perHour, rel*100, tt.tol*100)
			}

			// The naive estimate (changes seen / time) is biased low
			// once checks are not much more frequent than changes: the
			// estimator must do better than it.
			seen := 0
			var total time.Duration
			for _, s := range samples {
				total += s.Interval
				if s.Changed {
					seen++
				}
			}
			naive := float64(seen) / total.Seconds()
			if ratio := rate * tt.interval.Seconds(); ratio >= 0.5 && math.Abs(got-rate) >= math.Abs(naive-rate) {
				t.Errorf("estimate %.4f/h is no better than the naive %.4f/h (true %.4f/h)", got*3600, naive*3600, tt.perHour)
			}
		})
	}
}

func cs(d time.Duration, changed bool) changedigest.CheckSample {
	return changedigest.CheckSample{Interval: d, Changed: changed}
}

func TestEstimateRateEdges(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name    string
		samples []changedigest.CheckSample
		want    float64 // changes per hour; -1: only check it is finite and positive
	}{
		{"no samples", nil, 0},
		{"no change seen", []changedigest.CheckSample{cs(h, false), cs(h, false), cs(2*h, false)}, 0},
		{"zero and negative intervals ignored", []changedigest.CheckSample{cs(0, true), cs(-h, true)}, 0},
		// Regular: −ln((n−X+0.5)/(n+0.5)) / I.
		{"regular, 2 of 4", []changedigest.CheckSample{cs(h, true), cs(h, false), cs(h, true), cs(h, false)}, -math.Log(2.5 / 4.5)},
		{"regular, all changed", []changedigest.CheckSample{cs(h, true), cs(h, true), cs(h, true)}, math.Log(7)},
		{"irregular, all changed", []changedigest.CheckSample{cs(h, true), cs(10*h, true)}, -1},
		{"irregular, one change", []changedigest.CheckSample{cs(h, true), cs(10*h, false), cs(h/2, false)}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EstimateRate(tt.samples) * 3600
			switch {
			case tt.want < 0:
				if got <= 0 || math.IsInf(got, 0) || math.IsNaN(got) {
					t.Errorf("EstimateRate = %v/h, want finite and positive", got)
				}
			case math.Abs(got-tt.want) > 1e-9:
				t.Errorf("EstimateRate = %v/h, want %v/h", got, tt.want)
			}
		})
	}
}

// TestRateMLESolvesLikelihood checks the bisection against the equation
// it solves, and that the MLE is the regular one on regular intervals.
func TestRateMLESolvesLikelihood(t *testing.T) {
	samples := []changedigest.CheckSample{
		cs(20*time.Minute, false), cs(3*time.Hour, true), cs(45*time.Minute, true),
		cs(6*time.Hour, true), cs(10*time.Minute, false), cs(2*time.Hour, false),
	}
	l := RateMLE(samples)
	var lhs, rhs float64
	for _, s := range samples {
		if tc := s.Interval.Seconds(); s.Changed {
			lhs += tc / math.Expm1(l*tc)
		} else {
			rhs += tc
		}
	}
	if math.Abs(lhs-rhs) > 1e-6*rhs {
		t.Errorf("at λ=%g: Σ t_c/(e^(λt_c)−1) = %g, Σ t_u = %g", l, lhs, rhs)
	}
	// Regular intervals: the MLE is −ln(1 − X/n)/I.
	reg := []changedigest.CheckSample{cs(time.Hour, true), cs(time.Hour, false), cs(time.Hour, false), cs(time.Hour, true), cs(time.Hour, false)}
	if got, want := RateMLE(reg), -math.Log(1-2.0/5)/3600; math.Abs(got-want) > 1e-9*want {
		t.Errorf("RateMLE on regular intervals = %g, want %g", got, want)
	}
	if !math.IsInf(RateMLE([]changedigest.CheckSample{cs(time.Hour, true)}), 1) {
		t.Error("RateMLE with every interval changed must be +Inf")
	}
	if RateRegular(0, 0, time.Hour) != 0 || RateRegular(3, 5, time.Hour) != RateRegular(3, 3, time.Hour) {
		t.Error("RateRegular edge cases")
	}
}

func BenchmarkEstimateRate(b *testing.B) {
	page := newPoissonPage(1.0/3600, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	regular := make([]changedigest.CheckSample, 64)
	irregular := make([]changedigest.CheckSample, 64)
	for i := range regular {
		regular[i] = changedigest.CheckSample{Interval: 30 * time.Minute, Changed: page.advance(30 * time.Minute)}
		d := time.Duration(float64(time.Hour) * (0.1 + 3*rng.Float64()))
		irregular[i] = changedigest.CheckSample{Interval: d, Changed: page.advance(d)}
	}
	b.Run("regular-64", func(b *testing.B) {
		cpu := CPUTime()
		for b.Loop() {
			EstimateRate(regular)
		}
		b.ReportMetric(float64(CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("irregular-64", func(b *testing.B) {
		cpu := CPUTime()
		for b.Loop() {
			EstimateRate(irregular)
		}
		b.ReportMetric(float64(CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
}

// TestEstimateRateWithReportedChecks: a page changing every 5 minutes
// on average, checked every 5 minutes and, whenever a change came
// before the next check, at once after it (polling clients or page
// agents reported it). The intervals of the reported checks end because
// a change came: read as ordinary checks that found one, they put the
// estimate a third above the true rate; read as the waiting time for a
// change, the estimate converges.
func TestEstimateRateWithReportedChecks(t *testing.T) {
	const rate = 1.0 / 300
	rng := rand.New(rand.NewPCG(3, 4))
	var samples []changedigest.CheckSample
	for range 4000 {
		// The first change after a check, and the report of it within
		// a client's poll of it (up to 30 s later).
		first := rng.ExpFloat64() / rate
		if first+15 < 300 {
			d := time.Duration((first + 30*rng.Float64()) * float64(time.Second))
			samples = append(samples, changedigest.CheckSample{Interval: d, Changed: true, Reported: true})
			continue
		}
		samples = append(samples, changedigest.CheckSample{Interval: 5 * time.Minute, Changed: first < 300})
	}
	if got := EstimateRate(samples); math.Abs(got-rate) > 0.1*rate {
		t.Errorf("estimate %.3g changes/s, want %.3g ± 10%%", got, rate)
	}
	plain := make([]changedigest.CheckSample, len(samples))
	for i, s := range samples {
		plain[i] = changedigest.CheckSample{Interval: s.Interval, Changed: s.Changed}
	}
	t.Logf("with the reported checks read as such: %.3g changes/s; as ordinary checks: %.3g (true %.3g)",
		EstimateRate(samples), EstimateRate(plain), rate)
	// The likelihood equation holds at the estimate.
	l := RateMLE(samples)
	var lhs, rhs float64
	for _, s := range samples {
		tc := s.Interval.Seconds()
		switch {
		case s.Reported:
			lhs += 1 / l
			rhs += tc
		case s.Changed:
			lhs += tc / math.Expm1(l*tc)
		default:
			rhs += tc
		}
	}
	if math.Abs(lhs-rhs) > 1e-6*rhs {
		t.Errorf("at λ=%g: left %g, right %g", l, lhs, rhs)
	}
	// Reported samples alone: the exponential waiting time's MLE, n / Σt.
	only := []changedigest.CheckSample{{Interval: time.Minute, Changed: true, Reported: true}, {Interval: 3 * time.Minute, Changed: true, Reported: true}}
	if got, want := EstimateRate(only), 2.0/240; math.Abs(got-want) > 1e-9 {
		t.Errorf("two reported samples: %g, want %g", got, want)
	}
}
