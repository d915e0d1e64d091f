package server

import (
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
)

// backoff limits failures per key with growing waits: after free
// failures a key must wait a second before it tries again, and each
// further failure doubles the wait (two seconds, four, …, at most max). A key that has not failed for forget
// starts afresh.
type backoff struct {
	free   int
	max    time.Duration
	forget time.Duration
	now    func() time.Time

	mu sync.Mutex
	m  map[string]*strikes
}

type strikes struct {
	fails       int
	last, until time.Time
}

// maxKeys bounds the memory of a limiter under a flood of keys.
const maxKeys = 100000

func newBackoff(free int, max, forget time.Duration, now func() time.Time) *backoff {
	return &backoff{free: free, max: max, forget: forget, now: now, m: map[string]*strikes{}}
}

// wait returns how long key must still wait; 0 when it may try now.
func (b *backoff) wait(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.m[key]
	if st == nil {
		return 0
	}
	now := b.now()
	if now.Sub(st.last) >= b.forget {
		delete(b.m, key)
		return 0
	}
	return max(0, st.until.Sub(now))
}

// fail records a failure of key.
func (b *backoff) fail(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	st := b.m[key]
	if st == nil || now.Sub(st.last) >= b.forget {
		if len(b.m) >= maxKeys {
			b.sweep(now)
		}
		st = &strikes{}
		b.m[key] = st
	}
	st.fails++
	st.last = now
	if over := st.fails - b.free + 1; over > 0 {
		d := b.max
		if over <= 30 {
			d = min(b.max, time.Second<<(over-1))
		}
		st.until = now.Add(d)
	}
}

// reset forgets key's failures.
func (b *backoff) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}

// sweep drops the keys that have been forgotten, and when that is not
// enough, the keys with the fewest failures.
func (b *backoff) sweep(now time.Time) {
	for k, st := range b.m {
		if now.Sub(st.last) >= b.forget || st.fails < b.free {
			delete(b.m, k)
		}
	}
	if len(b.m) >= maxKeys {
		clear(b.m)
	}
}

// RateLimit is a rate of requests a minute, taken in bursts of up to
// Burst; PerMinute 0 is no limit.
type RateLimit struct {
	PerMinute, Burst int
}

// addrKey is the key of a client address for the limits per address:
// the address, or for IPv6 its /64, which one party usually holds whole.
func addrKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

// rateLimitedFor is the ERATELIMIT error of a wait, with its Retry-After.
func rateLimitedFor(d time.Duration, what string) error {
	secs := int((d + time.Second - 1) / time.Second)
	when := "in a second"
	switch {
	case secs >= 120:
		when = "in " + strconv.Itoa((secs+59)/60) + " minutes"
	case secs > 1:
		when = "in " + strconv.Itoa(secs) + " seconds"
	}
	return &rateLimited{err: changedigest.Errorf(changedigest.ERATELIMIT, "%s; try again %s", what, when), after: secs}
}

// loginGuard limits password guessing without letting an attacker lock
// the owner of a name out:
//   - failures of a name from one address make that address wait, with
//     growing waits (pair);
//   - failures from one address, whatever the names, make it wait too,
//     after more of them (addr), against an address that tries many names;
//   - failures of a name from all addresses make addresses wait that
//     have never logged in to it (name), against guessing from many
//     addresses; an address the name logged in from before, or a browser
//     that did (it carries a signed cookie), is not held back by others'
//     failures, only by its own.
type loginGuard struct {
	pair, addr, name *backoff

	mu    sync.Mutex
	known map[string][]string // name → addresses of its successful logins, newest last
}

// knownPerName bounds the addresses remembered for a name.
const knownPerName = 16

func newLoginGuard(free int, window time.Duration, now func() time.Time) *loginGuard {
	return &loginGuard{
		pair:  newBackoff(free, window, window, now),
		addr:  newBackoff(5*free, window, window, now),
		name:  newBackoff(free, window, window, now),
		known: map[string][]string{},
	}
}

// check returns an ERATELIMIT error when a login of name from addr must wait.
// A browser that logged in to the name before (knownBrowser, from its
// cookie) counts as a known address.
func (g *loginGuard) check(addr, name string, knownBrowser bool) error {
	if d := max(g.pair.wait(addr+"\x00"+name), g.addr.wait(addr)); d > 0 {
		return rateLimitedFor(d, "too many failed logins from your address")
	}
	if !knownBrowser && !g.isKnown(addr, name) {
		if d := g.name.wait(name); d > 0 {
			return rateLimitedFor(d, "too many failed logins for this name; an address or browser you logged in from before is not held back")
		}
	}
	return nil
}

func (g *loginGuard) fail(addr, name string) {
	g.pair.fail(addr + "\x00" + name)
	g.addr.fail(addr)
	g.name.fail(name)
}

// succeed forgets the failures of name from addr and remembers addr as
// one the name logs in from.
func (g *loginGuard) succeed(addr, name string) {
	g.pair.reset(addr + "\x00" + name)
	g.addr.reset(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.known) >= maxKeys {
		clear(g.known)
	}
	list := slices.DeleteFunc(g.known[name], func(a string) bool { return a == addr })
	list = append(list, addr)
	if len(list) > knownPerName {
		list = list[len(list)-knownPerName:]
	}
	g.known[name] = list
}

func (g *loginGuard) isKnown(addr, name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Contains(g.known[name], addr)
}
