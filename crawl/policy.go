package crawl

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/changedigest/changedigest"
)

// Policy decides when a watch is checked next. Its exported fields are the
// knobs; NewPolicy sets the defaults. A Policy is safe for concurrent use
// as long as its Rand is.
type Policy struct {
	// MinInterval and MaxInterval bound the interval derived from the
	// change rate and the error back-off (defaults 5 min and 7 days).
	MinInterval time.Duration
	MaxInterval time.Duration
	// MinSamples is the number of check samples needed before the
	// estimated change rate replaces the category interval (default 5).
	MinSamples int
	// HistorySize is how many recent check samples a watch keeps (default
	// 64: the estimate's error is about 20 % at 64 samples, 30 % at 32).
	HistorySize int
	// TargetFraction is the check interval as a fraction of the mean time
	// between changes, 1/λ (default 0.5: about two checks per change).
	TargetFraction float64
	// MaxGrowth caps how fast the interval may lengthen, as a factor of
	// the last interval (default 2; 0 means no cap). Shortening is not capped.
	MaxGrowth float64
	// Jitter spreads due times by ± this fraction (default 0.1), so that
	// watches added together do not stay in lock step.
	Jitter float64
	// MaxRetryAfter caps how far a server's Retry-After may push a check
	// (default 7 days).
	MaxRetryAfter time.Duration
	// Rand returns a uniform number in [0, 1) for the jitter (default
	// math/rand/v2's Float64).
	Rand func() float64
	// FailRetry is the wait after a first failed check (default 5 min);
	// see Backoff.
	FailRetry time.Duration
	// FaultRetry is the longest a watch waits for its next check after
	// one that failed for the service's own reason (a full disk, a
	// cluster that did not answer: changedigest.ServiceFault) rather than
	// its page's (default 15 min; never longer than its interval).
	FaultRetry time.Duration
}

// NewPolicy returns the default policy.
func NewPolicy() Policy {
	return Policy{
		MinInterval:    5 * time.Minute,
		MaxInterval:    7 * 24 * time.Hour,
		MinSamples:     5,
		HistorySize:    64,
		TargetFraction: 0.5,
		MaxGrowth:      2,
		Jitter:         0.1,
		MaxRetryAfter:  7 * 24 * time.Hour,
		Rand:           rand.Float64,
		FailRetry:      5 * time.Minute,
		FaultRetry:     15 * time.Minute,
	}
}

// Interval is the time from one successful check of w to the next,
// before jitter:
//
//   - the watch's explicit Interval when set (not clamped: the user chose it);
//   - its category's interval (news 1 h, personal 24 h, academic 48 h)
//     until it has MinSamples samples;
//   - then TargetFraction / λ̂ with λ̂ = EstimateRate(w.Samples), at most
//     MaxGrowth times the last interval, within [MinInterval, MaxInterval]
//     (MaxInterval when no change has been seen).
func (p *Policy) Interval(w *changedigest.Watch) time.Duration {
	if w.Interval > 0 {
		return w.Interval
	}
	if len(w.Samples) < max(p.MinSamples, 1) {
		return p.clamp(w.Category.Interval())
	}
	iv := p.MaxInterval
	if rate := EstimateRate(w.Samples); rate > 0 {
		secs := p.TargetFraction / rate
		if secs < p.MaxInterval.Seconds() {
			iv = time.Duration(secs * float64(time.Second))
		}
	}
	if last := w.Samples[len(w.Samples)-1].Interval; p.MaxGrowth > 0 && last > 0 {
		if limit := float64(last) * p.MaxGrowth; float64(iv) > limit {
			iv = time.Duration(limit)
		}
	}
	return p.clamp(iv)
}

func (p *Policy) clamp(d time.Duration) time.Duration {
	if p.MinInterval > 0 && d < p.MinInterval {
		d = p.MinInterval
	}
	if p.MaxInterval > 0 && d > p.MaxInterval {
		d = p.MaxInterval
	}
	return d
}

// Backoff is the delay before retrying w after its ErrorCount-th
// consecutive failure: FailRetry after the first, three times as long
// after each next one while that is shorter than its normal interval
// (5, 15, 45 min… a server down a moment is tried again soon, a first
// check that failed is not put off for a day), then the normal interval
// doubled for each failure after that (1×, 2×, 4×, …), at most
// MaxInterval (or the normal interval when that is longer, e.g. an
// explicit one).
func (p *Policy) Backoff(w *changedigest.Watch) time.Duration { return p.backoff(w, true) }

// backoff is Backoff, without the quick retries when quick is false (a
// server that said it is busy or limits requests: 429, 503).
func (p *Policy) backoff(w *changedigest.Watch, quick bool) time.Duration {
	base := p.Interval(w)
	n := max(w.ErrorCount-1, 0)
	if quick {
		d := float64(cmp.Or(p.FailRetry, 5*time.Minute))
		for ; n > 0 && d < float64(base); n-- {
			d *= 3
		}
		if d < float64(base) {
			return time.Duration(d)
		}
	}
	limit := max(p.MaxInterval, base)
	d := float64(base) * math.Pow(2, float64(min(n, 30)))
	if d > float64(limit) {
		return limit
	}
	return time.Duration(d)
}

// jitter spreads d by ±Jitter.
func (p *Policy) jitter(d time.Duration) time.Duration {
	if p.Jitter <= 0 {
		return d
	}
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	return time.Duration(float64(d) * (1 + p.Jitter*(2*r()-1)))
}

// Apply records the result of a check of w that ended at now and sets
// w.NextCheck. With err == nil (o holds the outcome): a sample joins the
// history (the interval since the last successful check, whether a
// change was found, and whether a report made the check due to find it:
// DueByReport, which the check clears; none for the first check or a
// FirstVersion), counters
// and validators are updated, the error state is cleared, and the next
// check is due after the jittered Interval. With err != nil (o is
// ignored): ErrorCount grows, LastError is set and the next check comes
// after the jittered Backoff; an error that is the service's fault
// (changedigest.ServiceFault) is recorded the same way but leaves
// ErrorCount, and so the page's back-off, as it was, and the next check
// comes after at most FaultRetry. In all cases a Retry-After (from o, or
// from an *HTTPError in err) later than that is honoured, up to
// MaxRetryAfter.
func (p *Policy) Apply(w *changedigest.Watch, o Outcome, err error, now time.Time) {
	var next time.Time
	retry := o.RetryAfter
	switch {
	case err != nil && changedigest.ServiceFault(err):
		w.LastError = err.Error()
		w.LastErrorAt = now
		retry = RetryAfter(err)
		next = now.Add(p.jitter(min(p.Interval(w), cmp.Or(p.FaultRetry, 15*time.Minute))))
	case err != nil:
		w.ErrorCount++
		w.LastError = err.Error()
		w.LastErrorAt = now
		retry = RetryAfter(err)
		var he *HTTPError
		busy := errors.As(err, &he) && (he.StatusCode == http.StatusTooManyRequests || he.StatusCode == http.StatusServiceUnavailable)
		next = now.Add(p.jitter(p.backoff(w, !busy)))
	default:
		if !w.LastCheck.IsZero() && o.Result != FirstVersion && now.After(w.LastCheck) {
			w.Samples = append(w.Samples, changedigest.CheckSample{
				Interval: now.Sub(w.LastCheck),
				Changed:  o.Result == Changed,
				Reported: o.Result == Changed && w.DueByReport,
			})
			if h := max(p.HistorySize, 1); len(w.Samples) > h {
				w.Samples = append(w.Samples[:0:0], w.Samples[len(w.Samples)-h:]...)
			}
		}
		w.DueByReport = false
		w.Checks++
		if o.Result == Changed {
			w.ChangeChecks++
			w.LastChange = now
		}
		w.LastCheck = now
		w.ErrorCount = 0
		w.LastError = ""
		if o.Result != NotModified || o.ETag != "" {
			w.ETag = o.ETag
		}
		if o.Result != NotModified || o.LastModified != "" {
			w.LastModified = o.LastModified
		}
		next = now.Add(p.jitter(p.Interval(w)))
	}
	w.RetryAfter = time.Time{}
	if p.MaxRetryAfter > 0 && retry.Sub(now) > p.MaxRetryAfter {
		retry = now.Add(p.MaxRetryAfter)
	}
	if retry.After(next) {
		w.RetryAfter = retry
		next = retry
	}
	w.NextCheck = next
}
