package crawl

import (
	"math"
	"time"

	"github.com/changedigest/changedigest"
)

// The change-rate estimators of Cho and Garcia-Molina, "Estimating
// frequency of change" (ACM TOIT 3(3), 2003). A page is assumed to change
// as a Poisson process of rate λ, but we only see, at each check, whether
// it changed at least once since the previous one; the naive "changes
// seen / time" underestimates λ as soon as changes come faster than
// checks.

// regularSpread is the largest (max-min)/mean spread of the check
// intervals for which they count as regular. Jitter of ±10 % and small
// delays stay well inside it.
const regularSpread = 0.5

// EstimateRate estimates the change rate, in changes per second, of a page
// from its check samples. With regular intervals (spread within
// regularSpread) it uses the bias-reduced estimator
//
//	λ̂ = −ln((n − X + 0.5)/(n + 0.5)) / I
//
// (n checks of mean interval I, X of which saw a change); with irregular
// ones the maximum-likelihood estimate (see RateMLE). It returns 0 when no
// change was seen (or there are no samples): the page looks static.
//
// Samples of checks that a report made due (Reported) end because a
// change came, not at a time chosen beforehand: read as the others, they
// would say a change came within every such interval, which is sure by
// construction, and the estimate would run high (a third to twice the
// true rate once polling clients reported most changes). With any of
// them it is
// the maximum-likelihood estimate that reads them as the time the first
// change came (see RateMLE).
func EstimateRate(samples []changedigest.CheckSample) float64 {
	n, x, r := 0, 0, 0
	var sum float64
	lo, hi := math.Inf(1), 0.0
	for _, s := range samples {
		t := s.Interval.Seconds()
		if t <= 0 {
			continue
		}
		n++
		sum += t
		lo, hi = math.Min(lo, t), math.Max(hi, t)
		if s.Changed {
			x++
		}
		if s.Reported {
			r++
		}
	}
	if n == 0 || x == 0 {
		return 0
	}
	if r > 0 {
		return RateMLE(samples)
	}
	mean := sum / float64(n)
	if (hi-lo)/mean <= regularSpread || x == n {
		// All intervals saw a change: the MLE is infinite, and the
		// bias-reduced estimator on the mean interval is the best we have.
		return RateRegular(n, x, time.Duration(mean*float64(time.Second)))
	}
	return RateMLE(samples)
}

// RateRegular is Cho and Garcia-Molina's bias-reduced estimator for n
// checks at a regular interval, x of which saw a change, in changes per
// second: −ln((n − x + 0.5)/(n + 0.5)) / interval. It stays finite when
// every check saw a change (x = n), where the plain MLE diverges.
func RateRegular(n, x int, interval time.Duration) float64 {
	if n <= 0 || x <= 0 || interval <= 0 {
		return 0
	}
	x = min(x, n)
	return -math.Log((float64(n-x)+0.5)/(float64(n)+0.5)) / interval.Seconds()
}

// RateMLE is the maximum-likelihood estimate of the change rate, in
// changes per second, from checks at irregular intervals. With t_c the
// intervals that saw a change and t_u those that did not, the likelihood
// Π(1 − e^(−λ t_c)) · Π e^(−λ t_u) is greatest where
//
//	Σ t_c / (e^(λ t_c) − 1) = Σ t_u.
//
// A Reported sample's interval t_r ended when a change came (a report
// made the check due): it is the waiting time for the first change, of
// likelihood λ e^(−λ t_r), which adds R/λ on the left (R such samples)
// and Σ t_r on the right. The left side falls monotonically in λ, and
// since 1/λ − t/2 ≤ t/(e^(λt) − 1) ≤ 1/λ, the root lies in
// [(X+R)/(U + T + C/2), (X+R)/(U + T)] (X changes seen by checks not
// made due by a report, C and U the sums of changed and unchanged
// intervals, T that of the reported ones); Newton's method kept in that
// bracket converges in a few steps. It returns 0 with no change seen and
// +Inf when every interval saw one and none was reported (use
// RateRegular then).
func RateMLE(samples []changedigest.CheckSample) float64 {
	var x, c, u, r float64
	for _, s := range samples {
		t := s.Interval.Seconds()
		if t <= 0 {
			continue
		}
		switch {
		case s.Reported:
			r++
			u += t // the Σ t_r term joins Σ t_u
		case s.Changed:
			x++
			c += t
		default:
			u += t
		}
	}
	switch {
	case x+r == 0:
		return 0
	case u == 0:
		return math.Inf(1)
	}
	// Newton's method, kept inside the bracket by bisection steps.
	lo, hi := (x+r)/(u+c/2), (x+r)/u
	lambda := (lo + hi) / 2
	for range 100 {
		f, df := r/lambda, -r/(lambda*lambda)
		for _, s := range samples {
			if t := s.Interval.Seconds(); s.Changed && !s.Reported && t > 0 {
				em1 := math.Expm1(lambda * t)
				f += t / em1
				df -= t * t * (em1 + 1) / (em1 * em1)
			}
		}
		f -= u
		if f > 0 {
			lo = lambda
		} else {
			hi = lambda
		}
		next := lambda - f/df
		if df == 0 || math.IsNaN(next) || next <= lo || next >= hi {
			next = (lo + hi) / 2
		}
		if math.Abs(next-lambda) <= 1e-12*lambda || hi-lo <= 1e-12*hi {
			return next
		}
		lambda = next
	}
	return lambda
}
