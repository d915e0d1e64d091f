// Package memo keeps values that cost much to make and never change for
// their key (a stored version's rendered feed entry, what it matches in
// a profile, a written feed by its entity tag) within a bound on their
// memory: the least recently used go first. A value that several
// callers ask for while it is being made is made once: when a new
// version comes, every feed reader polling at that moment wants its
// entry, and without this each would render it.
package memo

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// Cache keeps values by key. The zero Cache keeps nothing: set Max. A
// Cache is safe for concurrent use; the values it hands out are shared,
// so callers must not change them.
type Cache[K comparable, V any] struct {
	// Max bounds the summed sizes of the values kept; a value larger
	// than an eighth of it is not kept.
	Max int

	mu     sync.Mutex
	size   int
	byKey  map[K]*list.Element
	lru    list.List // of *item[K, V], most recent first
	making map[K]*call[V]
	made   int64
}

type item[K comparable, V any] struct {
	key  K
	val  V
	size int
}

type call[V any] struct {
	done chan struct{}
	val  V
	err  error
}

// Get returns the value kept for k.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*item[K, V]).val, true
}

// Put keeps v for k, size being the memory it takes (an estimate),
// replacing what was kept for k.
func (c *Cache[K, V]) Put(k K, v V, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(k, v, size)
}

func (c *Cache[K, V]) put(k K, v V, size int) {
	if size > c.Max/8 {
		return
	}
	if c.byKey == nil {
		c.byKey = map[K]*list.Element{}
	}
	if el, ok := c.byKey[k]; ok {
		it := el.Value.(*item[K, V])
		c.size += size - it.size
		it.val, it.size = v, size
		c.lru.MoveToFront(el)
	} else {
		c.byKey[k] = c.lru.PushFront(&item[K, V]{key: k, val: v, size: size})
		c.size += size
	}
	for c.size > c.Max {
		last := c.lru.Back()
		it := last.Value.(*item[K, V])
		c.lru.Remove(last)
		delete(c.byKey, it.key)
		c.size -= it.size
	}
}

// Do returns the value kept for k, or the one work returns, which it
// keeps (with the size work gives; a negative size keeps nothing). While
// work runs, other calls of Do for k wait for its result rather than
// making the value too. work's error is returned to every caller that
// waited for it, and nothing is kept; but an error of a context that
// ended (the caller that made the value went away) is that caller's
// alone, and the callers that waited make the value again, one of them.
func (c *Cache[K, V]) Do(k K, work func() (V, int, error)) (V, error) {
	c.mu.Lock()
	for {
		if el, ok := c.byKey[k]; ok {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			return el.Value.(*item[K, V]).val, nil
		}
		m, ok := c.making[k]
		if !ok {
			break
		}
		c.mu.Unlock()
		<-m.done
		if !errors.Is(m.err, context.Canceled) && !errors.Is(m.err, context.DeadlineExceeded) {
			return m.val, m.err
		}
		c.mu.Lock()
	}
	m := &call[V]{done: make(chan struct{}), err: errPanicked}
	if c.making == nil {
		c.making = map[K]*call[V]{}
	}
	c.making[k] = m
	c.made++
	c.mu.Unlock()

	size := -1
	defer func() {
		c.mu.Lock()
		delete(c.making, k)
		if m.err == nil && size >= 0 {
			c.put(k, m.val, size)
		}
		c.mu.Unlock()
		close(m.done)
	}()
	v, size, err := work()
	m.val, m.err = v, err
	return v, err
}

// errPanicked is what the callers waiting for a value get when its work
// panicked.
var errPanicked = errors.New("memo: the value's work panicked")

// Made is the number of values Do has made (its calls that found no
// value kept and none being made).
func (c *Cache[K, V]) Made() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made
}

// Reset forgets every value kept.
func (c *Cache[K, V]) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byKey, c.size = nil, 0
	c.lru.Init()
}
