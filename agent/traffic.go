package agent

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/changedigest/changedigest"
)

// ignoreList holds the reporters whose reports verification refuted:
// after limit refutations within the window a reporter is ignored for
// the window.
type ignoreList struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	m      map[string]*strikes
}

type strikes struct {
	n     int
	first time.Time
	until time.Time
}

func newIgnoreList(limit int, window time.Duration) *ignoreList {
	return &ignoreList{limit: max(limit, 1), window: window, m: map[string]*strikes{}}
}

// ignored returns the time until which reporter is ignored, zero if it is not.
func (l *ignoreList) ignored(reporter string, now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.m[reporter]
	if s == nil || !now.Before(s.until) {
		return time.Time{}
	}
	return s.until
}

// strike counts a refuted report of reporter; true when it is now ignored.
func (l *ignoreList) strike(reporter string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) > 100000 {
		for k, s := range l.m {
			if now.Sub(s.first) > l.window && now.After(s.until) {
				delete(l.m, k)
			}
		}
	}
	s := l.m[reporter]
	if s == nil || now.Sub(s.first) > l.window {
		s = &strikes{first: now}
		l.m[reporter] = s
	}
	s.n++
	if s.n >= l.limit {
		s.until = now.Add(l.window)
		s.n, s.first = 0, now
		return true
	}
	return false
}

// queued is a report waiting for the change detector.
type queued struct {
	watchID   int64
	summary   Summary
	at        time.Time
	by        changedigest.DetectedBy
	reporters []string
	// direct reports say the page changed (a client compared it); the
	// summary is not compared.
	direct bool
	// base is the version a client compared the page with.
	base int
	// url and origin are the report's, when the intake could not check
	// them against the page (too busy to read the store).
	url, origin string
}

// queue is the bounded queue of reports between the HTTP handlers and
// the change detector. It keeps at most one report per page: a newer
// report for a page already waiting replaces the summary (the newest is
// what the page looks like now) and adds its reporter, so a burst for one
// page costs one comparison, and a queue that falls behind holds only
// the newest report of each page. It holds at most size pages.
type queue struct {
	mu      sync.Mutex
	size    int
	order   []int64
	waiting map[int64]*queued
	ready   chan struct{}
	// n is len(order), read without the lock by every agent request
	// (the manager's load level).
	n atomic.Int64
	// coalesced counts reports merged into one already waiting.
	coalesced int64
}

func newQueue(size int) *queue {
	return &queue{size: max(size, 1), waiting: map[int64]*queued{}, ready: make(chan struct{}, 1)}
}

// maxReporters bounds the reporters kept with one waiting report.
const maxReporters = 32

// push adds q; false when the queue is full.
func (qu *queue) push(q *queued) bool {
	qu.mu.Lock()
	defer qu.mu.Unlock()
	if w := qu.waiting[q.watchID]; w != nil {
		w.summary, w.by, w.direct, w.base = q.summary, q.by, w.direct || q.direct, max(w.base, q.base)
		if q.url != "" || w.url != "" {
			w.url, w.origin = q.url, q.origin
		}
		if len(w.reporters) < maxReporters {
			w.reporters = append(w.reporters, q.reporters...)
		}
		qu.coalesced++
		return true
	}
	if len(qu.order) >= qu.size {
		return false
	}
	qu.waiting[q.watchID] = q
	qu.order = append(qu.order, q.watchID)
	qu.n.Store(int64(len(qu.order)))
	select {
	case qu.ready <- struct{}{}:
	default:
	}
	return true
}

// pop takes the oldest waiting page's report; nil when none waits.
func (qu *queue) pop() *queued {
	qu.mu.Lock()
	defer qu.mu.Unlock()
	if len(qu.order) == 0 {
		return nil
	}
	id := qu.order[0]
	qu.order = qu.order[1:]
	if len(qu.order) == 0 {
		qu.order = nil
	}
	qu.n.Store(int64(len(qu.order)))
	q := qu.waiting[id]
	delete(qu.waiting, id)
	return q
}

// len is the number of pages waiting.
func (qu *queue) len() int {
	return int(qu.n.Load())
}
