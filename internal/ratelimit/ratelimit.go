// Package ratelimit holds token buckets by key: the per-address and
// per-page limits of the page agent's traffic controller, and the
// per-address and per-feed limits of the WebSub hub's requests.
package ratelimit

import (
	"sync"
	"time"
)

// Buckets are token buckets by key, each filling at the same rate up to
// the same burst. Idle buckets (full again) are dropped once a minute
// when there are more than 1,024, and all of them when there are more
// than MaxKeys, so a flood of keys cannot grow the memory without bound.
// The zero rate allows everything.
type Buckets struct {
	mu    sync.Mutex
	rate  float64 // tokens per second
	burst float64
	m     map[string]*bucket
	swept time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// MaxKeys bounds the keys remembered at once.
const MaxKeys = 100000

// New returns buckets that let a key take perMinute tokens a minute, up to
// burst at once; perMinute 0 or less allows everything.
func New(perMinute, burst int) *Buckets {
	return &Buckets{rate: float64(perMinute) / 60, burst: float64(max(burst, 1)), m: map[string]*bucket{}}
}

// Allow takes a token from key's bucket; false when it is empty.
func (b *Buckets) Allow(key string, now time.Time) bool {
	return b.Take(key, now) == 0
}

// Take takes a token from key's bucket and returns 0, or, when the
// bucket is empty, takes nothing and returns how long until it holds a
// token again (at least a nanosecond).
func (b *Buckets) Take(key string, now time.Time) time.Duration {
	if b == nil || b.rate <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) >= MaxKeys || now.Sub(b.swept) > time.Minute && len(b.m) > 1024 {
		b.sweep(now)
	}
	x := b.m[key]
	if x == nil {
		x = &bucket{tokens: b.burst, at: now}
		b.m[key] = x
	}
	if now.After(x.at) {
		x.tokens = min(b.burst, x.tokens+now.Sub(x.at).Seconds()*b.rate)
		x.at = now
	}
	if x.tokens < 1 {
		return max(time.Nanosecond, time.Duration((1-x.tokens)/b.rate*float64(time.Second)))
	}
	x.tokens--
	return 0
}

// sweep drops the buckets that are full again, and all of them when that
// leaves too many.
func (b *Buckets) sweep(now time.Time) {
	full := time.Duration(b.burst / b.rate * float64(time.Second))
	for k, x := range b.m {
		if now.Sub(x.at) > full {
			delete(b.m, k)
		}
	}
	if len(b.m) >= MaxKeys {
		clear(b.m)
	}
	b.swept = now
}
