package server

import (
	"container/list"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/visual"
)

// Screenshots of browser-rendered versions and the overlay of the pixels
// that differ from the version before. Both routes sit behind the login,
// on the user's own watches, like every version view.

// handleScreenshot sends a version's screenshot.
func (s *Server) handleScreenshot(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	seq, err := seqParam(r, "seq")
	if err != nil {
		return err
	}
	shot, err := s.Store.Screenshot(r.Context(), wt.ID, seq)
	if err != nil {
		return err
	}
	return sendPNG(w, r, shot.PNG, shot.Hash)
}

// handleOverlay sends the pixels that differ between a version's
// screenshot and the one of the stored version before it.
func (s *Server) handleOverlay(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	seq, err := seqParam(r, "seq")
	if err != nil {
		return err
	}
	prev, _, err := s.neighbours(r, wt.ID, seq)
	if err != nil {
		return err
	}
	if prev == 0 {
		return changedigest.Errorf(changedigest.ENOTFOUND, "version %d is the first stored version: there is nothing to compare its screenshot with", seq)
	}
	after, err := s.Store.Screenshot(r.Context(), wt.ID, seq)
	if err != nil {
		return err
	}
	before, err := s.Store.Screenshot(r.Context(), wt.ID, prev)
	if err != nil {
		return err
	}
	key := before.Hash + "-" + after.Hash
	img, err := s.overlayCache().get(key, func() ([]byte, error) {
		res, err := visual.Diff(before.PNG, after.PNG)
		if err != nil {
			return nil, err
		}
		return res.PNG, nil
	})
	if errors.Is(err, visual.ErrImage) || errors.Is(err, visual.ErrTooLarge) {
		return changedigest.Errorf(changedigest.EUNAVAILABLE, "the screenshots of versions %d and %d cannot be compared: %v", prev, seq, err)
	} else if err != nil {
		return err
	}
	return sendPNG(w, r, img, key)
}

// sendPNG sends a stored image; it never changes, so its hash is its ETag.
func sendPNG(w http.ResponseWriter, r *http.Request, img []byte, hash string) error {
	h := w.Header()
	etag := strconv.Quote(hash)
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, max-age=86400")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "image/png")
	h.Set("Content-Length", strconv.Itoa(len(img)))
	_, err := w.Write(img)
	return err
}

// overlayCache keeps the most recent overlays (they cost a decode of two
// screenshots each) up to a byte budget, and computes one at a time: two
// decoded full-page screenshots take tens of MB.
type overlayCache struct {
	mu    sync.Mutex
	work  sync.Mutex
	max   int
	size  int
	order *list.List // of *overlayItem, most recent first
	items map[string]*list.Element
}

type overlayItem struct {
	key string
	img []byte
}

// overlayCache returns the server's cache of overlays (32 MB).
func (s *Server) overlayCache() *overlayCache {
	s.overlaysOnce.Do(func() {
		s.overlays = &overlayCache{max: 32 << 20, order: list.New(), items: map[string]*list.Element{}}
	})
	return s.overlays
}

func (c *overlayCache) lookup(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*overlayItem).img, true
	}
	return nil, false
}

// get returns the overlay of key, computing it with make when absent.
func (c *overlayCache) get(key string, build func() ([]byte, error)) ([]byte, error) {
	if img, ok := c.lookup(key); ok {
		return img, nil
	}
	c.work.Lock()
	defer c.work.Unlock()
	if img, ok := c.lookup(key); ok { // made while this request waited
		return img, nil
	}
	img, err := build()
	if err != nil {
		return nil, fmt.Errorf("server: overlay: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(img) <= c.max {
		c.items[key] = c.order.PushFront(&overlayItem{key: key, img: img})
		c.size += len(img)
		for c.size > c.max {
			last := c.order.Back()
			it := last.Value.(*overlayItem)
			c.order.Remove(last)
			delete(c.items, it.key)
			c.size -= len(it.img)
		}
	}
	return img, nil
}
