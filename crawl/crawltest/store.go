package crawltest

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
)

// MemStore is an in-memory watch store with the two methods the crawl
// scheduler needs (DueWatches and SaveSchedule), indexed by due time so
// that it stays cheap with tens of thousands of watches. It hands out and
// keeps copies, as a real store would. Safe for concurrent use.
type MemStore struct {
	mu    sync.Mutex
	byID  map[int64]*entry
	due   dueHeap
	saves int
}

type entry struct {
	w     *changedigest.Watch
	index int // in the heap
}

// NewMemStore returns a store holding copies of ws (IDs must be unique
// and non-zero).
func NewMemStore(ws ...*changedigest.Watch) *MemStore {
	s := &MemStore{byID: make(map[int64]*entry, len(ws))}
	for _, w := range ws {
		s.Put(w)
	}
	return s
}

// Put adds or replaces a copy of w.
func (s *MemStore) Put(w *changedigest.Watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[w.ID]; ok {
		e.w = Clone(w)
		heap.Fix(&s.due, e.index)
		return
	}
	e := &entry{w: Clone(w)}
	s.byID[w.ID] = e
	heap.Push(&s.due, e)
}

// DueWatches returns copies of up to limit unpaused watches whose
// NextCheck is at or before now, earliest first.
func (s *MemStore) DueWatches(ctx context.Context, now time.Time, limit int) ([]*changedigest.Watch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*changedigest.Watch
	var popped []*entry
	for len(s.due) > 0 && len(out) < limit {
		e := s.due[0]
		if e.w.NextCheck.After(now) {
			break
		}
		popped = append(popped, heap.Pop(&s.due).(*entry))
		if !e.w.Paused {
			out = append(out, Clone(e.w))
		}
	}
	for _, e := range popped {
		heap.Push(&s.due, e)
	}
	return out, nil
}

// SaveSchedule stores the crawler-owned fields of w.
func (s *MemStore) SaveSchedule(ctx context.Context, w *changedigest.Watch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[w.ID]
	if !ok {
		return nil
	}
	s.saves++
	d := e.w
	d.NextCheck, d.LastCheck, d.LastChange = w.NextCheck, w.LastCheck, w.LastChange
	d.LastError, d.LastErrorAt, d.ErrorCount = w.LastError, w.LastErrorAt, w.ErrorCount
	d.Checks, d.ChangeChecks = w.Checks, w.ChangeChecks
	d.ETag, d.LastModified, d.RetryAfter = w.ETag, w.LastModified, w.RetryAfter
	d.Samples = slices.Clone(w.Samples)
	d.DueByReport = w.DueByReport
	heap.Fix(&s.due, e.index)
	return nil
}

// Watch returns a copy of the stored watch, or nil.
func (s *MemStore) Watch(id int64) *changedigest.Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		return Clone(e.w)
	}
	return nil
}

// Watches returns copies of all stored watches, by ID.
func (s *MemStore) Watches() []*changedigest.Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*changedigest.Watch, 0, len(s.byID))
	for _, e := range s.byID {
		out = append(out, Clone(e.w))
	}
	slices.SortFunc(out, func(a, b *changedigest.Watch) int { return int(a.ID - b.ID) })
	return out
}

// Saves counts SaveSchedule calls.
func (s *MemStore) Saves() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves
}

// Clone returns a deep copy of w.
func Clone(w *changedigest.Watch) *changedigest.Watch {
	c := *w
	c.Tags = slices.Clone(w.Tags)
	c.Samples = slices.Clone(w.Samples)
	return &c
}

type dueHeap []*entry

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if a, b := h[i].w.NextCheck, h[j].w.NextCheck; !a.Equal(b) {
		return a.Before(b)
	}
	return h[i].w.ID < h[j].w.ID
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *dueHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
