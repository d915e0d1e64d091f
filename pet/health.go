package pet

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/changedigest/changedigest"
)

// A full disk and a failed index.
//
// pet.db needs no special care: a bbolt commit that cannot write is rolled
// back, and the next one tries again. A write that fails for lack of space
// returns an error matching ErrNoSpace, and the store reports itself full
// (StorageFull) until a version is stored again.
//
// The index is another matter: once Bleve fails to persist or merge (a
// full disk does that), its in-memory state can no longer be trusted, and
// writing to it again has been seen to panic inside Bleve. So the first
// failure closes it and opens what it last persisted read-only: searches
// go on over everything persisted, and nothing is written to it. The
// pending markers in pet.db keep every write the index missed. After
// IndexRetry the next write or search reopens it for writing and replays
// the markers; should that fail again, it goes back to read-only for
// another IndexRetry.

// DefaultIndexRetry is how long the index stays read-only after a failure
// before a write or search tries to reopen it for writing.
const DefaultIndexRetry = 30 * time.Second

// indexFault is a failure of the index: when, why, and when to try again.
type indexFault struct {
	err   error
	at    time.Time
	retry time.Time
}

// fullState records that a write failed for lack of space.
type fullState struct {
	at  time.Time
	err string
}

// errIndexReadOnly: the index failed and is not written to until it is
// reopened.
var errIndexReadOnly = errors.New("search index is read-only")

// isNoSpace reports whether err comes from a full filesystem or quota.
// Bleve's background errors reach us as text, hence the string test.
func isNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "no space left on device") || strings.Contains(msg, "disk quota exceeded")
}

// writeErr turns a failed write into the error AddVersion and the other
// writes return: for a full disk, one that says so and matches ErrNoSpace.
func (s *Store) writeErr(err error) error {
	if !isNoSpace(err) {
		return err
	}
	s.full.Store(&fullState{at: s.now(), err: err.Error()})
	s.Logger.Error("storage is full; nothing was written", "dir", s.Dir, "err", err)
	return userErr(changedigest.EFULL, ErrNoSpace,
		"storage is full (no space left on device): nothing was stored; writes resume when space is freed")
}

// StorageFull reports whether the store has run out of space: a write to
// pet.db or the search index failed for lack of space since the last
// version was stored. since is the time of that failure.
func (s *Store) StorageFull() (since time.Time, full bool) {
	if f := s.full.Load(); f != nil {
		return f.at, true
	}
	return time.Time{}, false
}

// IndexFailure returns the error that made the index read-only, or nil
// when the index is healthy.
func (s *Store) IndexFailure() error {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if s.fault == nil {
		return nil
	}
	return s.fault.err
}

// The async error callback Bleve calls from its persister and merger,
// looked up by index path.
const asyncErrorCallback = "changedigest-pet"

var (
	registerOnce sync.Once
	stores       sync.Map // index store path → *Store
)

// indexConfig is the runtime configuration of the index at path: the
// async error callback, and read-only when asked.
func (s *Store) indexConfig(path string, readOnly bool) map[string]any {
	registerOnce.Do(func() {
		scorch.RegistryAsyncErrorCallbacks[asyncErrorCallback] = func(err error, path string) {
			if v, ok := stores.Load(filepath.Clean(path)); ok {
				v.(*Store).asyncIndexError(err)
			}
		}
	})
	stores.Store(filepath.Join(path, "store"), s)
	cfg := map[string]any{
		"asyncErrorCallbackName": asyncErrorCallback,
		"scorchMergePlanOptions": mergePlan,
	}
	if readOnly {
		cfg["read_only"] = true
	}
	return cfg
}

// newIndex and openIndexAt create and open the index at path with the
// store's runtime configuration.
func (s *Store) newIndex(path string, m mapping.IndexMapping) (bleve.Index, error) {
	return bleve.NewUsing(path, m, scorch.Name, bleve.Config.DefaultKVStore, s.indexConfig(path, false))
}

func (s *Store) openIndexAt(path string, readOnly bool) (bleve.Index, error) {
	return bleve.OpenUsing(path, s.indexConfig(path, readOnly))
}

// asyncIndexError receives Bleve's background errors. Failing to remove
// old files is harmless; a failed persist or merge, or a panic, makes the
// index untrustworthy.
func (s *Store) asyncIndexError(err error) {
	if errors.Is(err, scorch.ErrCleanup) {
		s.Logger.Warn("search index could not remove old files", "err", err)
		return
	}
	s.indexFailed(err)
}

// indexFailed records a failure of the index and wakes a batch waiting on
// it. Reopening happens in syncIndex, which holds syncMu.
func (s *Store) indexFailed(err error) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if s.fault != nil {
		return
	}
	now := s.now()
	s.fault = &indexFault{err: err, at: now, retry: now.Add(s.indexRetry())}
	if isNoSpace(err) {
		s.full.CompareAndSwap(nil, &fullState{at: now, err: err.Error()})
	}
	close(s.faultCh)
	s.Logger.Error("search index failed; it is read-only until it is reopened", "err", err, "retry_after", s.indexRetry())
}

func (s *Store) indexRetry() time.Duration {
	if s.IndexRetry > 0 {
		return s.IndexRetry
	}
	return DefaultIndexRetry
}

// currentFault returns the index failure and the channel closed on the next one.
func (s *Store) currentFault() (*indexFault, <-chan struct{}) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.fault, s.faultCh
}

// batch applies b to the index, turning a panic inside Bleve into an
// error and giving up waiting when the index reports a failure of its own
// meanwhile. Any failure marks the index failed. The caller holds syncMu.
func (s *Store) batch(b *bleve.Batch) error {
	_, failed := s.currentFault()
	idx := s.idx
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%w: %v", errIndexPanic, r)
			}
		}()
		done <- idx.Batch(b)
	}()
	var err error
	select {
	case err = <-done:
	case <-failed:
		// The batch may stay blocked in Bleve until the index is closed.
		f, _ := s.currentFault()
		err = f.err
	}
	if err != nil {
		s.indexFailed(err)
	}
	return err
}

// recoverIndex deals with a failed index; the caller holds syncMu. While
// the failure is recent it makes sure the index is open read-only and
// returns the failure; after IndexRetry it reopens the index for writing,
// and returns nil so the caller can replay the pending markers.
func (s *Store) recoverIndex() error {
	f, _ := s.currentFault()
	if f == nil {
		return nil
	}
	path := filepath.Join(s.Dir, indexDir)
	retry := !s.now().Before(f.retry)
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.idx != nil && !s.idxReadOnly || retry {
		if s.idx != nil {
			closeIndex(s.idx)
			s.idx = nil
		}
		idx, err := s.openIndexAt(path, !retry)
		if err != nil && retry {
			// Still failing: go on searching what is persisted.
			s.Logger.Warn("search index cannot be reopened for writing yet", "err", err)
			idx, err = s.openIndexAt(path, true)
			retry = false
		}
		if err != nil {
			s.Logger.Error("search index cannot be opened", "err", err)
			s.faultMu.Lock()
			s.fault.retry = s.now().Add(s.indexRetry())
			s.faultMu.Unlock()
			return fmt.Errorf("pet: search index failed (%v) and cannot be reopened: %w", f.err, err)
		}
		s.idx, s.idxReadOnly = idx, !retry
	}
	if !retry {
		s.behind.Store(true)
		return fmt.Errorf("pet: %w after a failure (%v); it is reopened for writing after %s", errIndexReadOnly, f.err, s.indexRetry())
	}
	s.faultMu.Lock()
	s.fault, s.faultCh = nil, make(chan struct{})
	s.faultMu.Unlock()
	s.Logger.Info("search index reopened for writing")
	return nil
}

// closeIndex closes a failed index; a panic inside Bleve is logged, not
// passed on.
func closeIndex(idx bleve.Index) {
	defer func() { recover() }()
	idx.Close()
}
