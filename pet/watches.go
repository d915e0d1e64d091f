package pet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// domainErr turns a changedigest.Error from a domain type's validation
// into a package error matching the sentinel of its code.
func domainErr(err error) error {
	var ce *changedigest.Error
	if !errors.As(err, &ce) {
		return err
	}
	sentinel := ErrInvalid
	switch ce.Code {
	case changedigest.ENOTFOUND:
		sentinel = ErrNotFound
	case changedigest.ECONFLICT:
		sentinel = ErrConflict
	case changedigest.ETOOLARGE:
		sentinel = ErrTooLarge
	}
	return &userError{user: ce, sentinel: sentinel}
}

func getWatch(tx *bolt.Tx, id int64) (*changedigest.Watch, error) {
	v := tx.Bucket(bWatches).Get(id64(id))
	if v == nil {
		return nil, notFoundf("watch %d not found", id)
	}
	var w changedigest.Watch
	if err := json.Unmarshal(v, &w); err != nil {
		return nil, corruptf("watch %d: %v", id, err)
	}
	return &w, nil
}

// damagedWatch stands for a watch whose stored record cannot be read, in
// a list of its user's watches: its ID and user, the name its summary
// kept (sum, nil for none), and the failure as its last error.
func damagedWatch(userID, id int64, sum *watchSummary, err error) changedigest.Watch {
	w := changedigest.Watch{ID: id, UserID: userID, Paused: true,
		LastError: DamagedMessage(err)}
	if sum != nil {
		w.Title = string(sum.name)
	}
	if w.Title == "" {
		w.Title = fmt.Sprintf("watch %d", id)
	}
	w.URL = "about:damaged"
	return w
}

// DamagedMessage is what a user is told of a record the store cannot
// read: what it is, and what to do.
func DamagedMessage(err error) string {
	return "stored record damaged: run changedigest repair while the service is stopped (" + strings.TrimPrefix(err.Error(), "pet: ") + ")"
}

// noteDamaged logs a damaged record once for each opening of the store.
func (s *Store) noteDamaged(what string, id int64, err error) {
	if _, seen := s.damaged.LoadOrStore(what+strconv.FormatInt(id, 10), true); !seen {
		s.Logger.Error("a stored record is damaged and is passed over; run changedigest repair", "record", what, "id", id, "err", err)
	}
}

// getUserWatch returns the watch when it is userID's (any user's for
// AnyUser); another user's watch is not found, with the same message.
func getUserWatch(tx *bolt.Tx, userID, id int64) (*changedigest.Watch, error) {
	w, err := getWatch(tx, id)
	if err != nil {
		return nil, err
	}
	if userID != AnyUser && w.UserID != userID {
		return nil, notFoundf("watch %d not found", id)
	}
	return w, nil
}

func dueKey(w *changedigest.Watch) []byte { return key(timeKey(w.NextCheck), uint64(w.ID)) }

// putWatch stores w and keeps the indexes in step with old (nil when new).
func putWatch(tx *bolt.Tx, w, old *changedigest.Watch) error {
	v, err := json.Marshal(w)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bWatches).Put(id64(w.ID), v); err != nil {
		return err
	}
	due := tx.Bucket(bDue)
	if old != nil && !old.Paused {
		if err := due.Delete(dueKey(old)); err != nil {
			return err
		}
	}
	if !w.Paused {
		if err := due.Put(dueKey(w), nil); err != nil {
			return err
		}
	}
	if err := indexWatchKey(tx, w, old); err != nil {
		return err
	}
	return tx.Bucket(bUserWatch).Put(id64(w.UserID, w.ID), summaryOf(w))
}

// watchKey identifies a watch of a user by its URL and zone.
func watchKey(w *changedigest.Watch) []byte {
	h := sha256.Sum256([]byte(w.URL + "\x00" + w.Zone))
	return append(id64(w.UserID), h[:16]...)
}

// checkDuplicate refuses a second watch of the same URL and zone for a user.
func checkDuplicate(tx *bolt.Tx, w *changedigest.Watch) error {
	v := tx.Bucket(bWatchKeys).Get(watchKey(w))
	if v == nil {
		return nil
	}
	if id := int64(binary.BigEndian.Uint64(v)); id != w.ID {
		return conflictf("you already watch %s (watch %d)", w.URL, id)
	}
	return nil
}

// rebuildWatchKeys fills the URL-and-zone index of a store written before
// it existed.
func rebuildWatchKeys(tx *bolt.Tx) error {
	if k, _ := tx.Bucket(bWatchKeys).Cursor().First(); k != nil {
		return nil
	}
	return tx.Bucket(bWatches).ForEach(func(k, v []byte) error {
		var w changedigest.Watch
		if err := json.Unmarshal(v, &w); err != nil {
			return nil // a damaged record, passed over in lists; see Mend
		}
		return indexWatchKey(tx, &w, nil)
	})
}

// indexWatchKey keeps the URL-and-zone index in step with a watch (old is
// nil for a new watch; w nil for a deleted one).
func indexWatchKey(tx *bolt.Tx, w, old *changedigest.Watch) error {
	keys := tx.Bucket(bWatchKeys)
	if old != nil && (w == nil || old.URL != w.URL || old.Zone != w.Zone) {
		if err := keys.Delete(watchKey(old)); err != nil {
			return err
		}
	}
	if w == nil {
		return nil
	}
	return keys.Put(watchKey(w), id64(w.ID))
}

// CreateWatch validates and stores a new watch for w.UserID, setting
// w.ID, CreatedAt, UpdatedAt and, when zero, NextCheck (to Now: due at
// once). Errors: EINVALID from Watch.Validate; ENOTFOUND when the user
// does not exist; ECONFLICT when the user already watches the URL with
// the same zone.
func (s *Store) CreateWatch(ctx context.Context, w *changedigest.Watch) error {
	if w == nil {
		return invalidf("watch is missing")
	}
	if err := w.Validate(); err != nil {
		return domainErr(err)
	}
	if err := w.CheckInput(nil); err != nil {
		return domainErr(err)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if _, err := getUser(tx, w.UserID); err != nil {
			return err
		}
		if err := checkDuplicate(tx, w); err != nil {
			return err
		}
		id, err := tx.Bucket(bWatches).NextSequence()
		if err != nil {
			return err
		}
		now := s.now()
		nw := *w
		nw.ID, nw.CreatedAt, nw.UpdatedAt = int64(id), now, now
		if nw.NextCheck.IsZero() {
			nw.NextCheck = now
		}
		if err := putWatch(tx, &nw, nil); err != nil {
			return err
		}
		*w = nw
		return nil
	})
	return wrap(err, "create watch")
}

// PutWatch stores a watch defined elsewhere (another node's copy) under
// its own ID: a new one as given, due when its NextCheck says (zero: at
// once); an existing one takes w's definition and keeps the schedule
// state the crawler saved here (SaveSchedule's fields) and what checks
// learned of the page (Watch.KeepLearned). The user need not
// exist in this store. Errors: EINVALID from Watch.Validate or a zero ID;
// ECONFLICT when another watch of the user has the same URL and zone.
func (s *Store) PutWatch(ctx context.Context, w *changedigest.Watch) error {
	if w == nil || w.ID <= 0 {
		return invalidf("watch to put has no ID")
	}
	if err := w.Validate(); err != nil {
		return domainErr(err)
	}
	// Concurrent puts (a view applying many definitions) share a commit.
	err := s.batchUpdate(ctx, func(tx *bolt.Tx) error {
		old, err := getWatch(tx, w.ID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		nw := *w
		if old != nil {
			if err := keepStored(tx, &nw, old); err != nil {
				return err
			}
			if old.UserID != nw.UserID {
				if err := tx.Bucket(bUserWatch).Delete(id64(old.UserID, old.ID)); err != nil {
					return err
				}
			}
		} else {
			if nw.NextCheck.IsZero() {
				nw.NextCheck = s.now()
			}
			if seq := tx.Bucket(bWatches).Sequence(); uint64(nw.ID) > seq {
				// Watches created here later must not take this ID.
				if err := tx.Bucket(bWatches).SetSequence(uint64(nw.ID)); err != nil {
					return err
				}
			}
		}
		if err := checkDuplicate(tx, &nw); err != nil {
			return err
		}
		return putWatch(tx, &nw, old)
	})
	return wrap(err, "put watch %d", w.ID)
}

// keepStored sets w's schedule state and what checks learned of its page
// to old's, the stored watch (Watch.CopySchedule, Watch.KeepLearned).
func keepStored(tx *bolt.Tx, w, old *changedigest.Watch) error {
	w.CopySchedule(old)
	page := ""
	if w.Title == "" && old.Title != "" {
		var err error
		if page, err = newestTitle(tx, old.ID); err != nil {
			return err
		}
	}
	w.KeepLearned(old, page)
	return nil
}

// AsStored sets w's schedule state and what checks learned of its page
// to the stored watch's, as PutWatch would keep them: for a definition
// changed elsewhere (a cluster's watches bucket) shown before this store
// takes it. Errors: ENOTFOUND when the store does not hold the watch.
func (s *Store) AsStored(ctx context.Context, w *changedigest.Watch) error {
	err := s.view(ctx, func(tx *bolt.Tx) error {
		old, err := getWatch(tx, w.ID)
		if err != nil {
			return err
		}
		return keepStored(tx, w, old)
	})
	return wrap(err, "watch %d as stored", w.ID)
}

// Watch returns the watch if it is userID's (any user's for AnyUser).
// Errors: ENOTFOUND when it does not exist or is another user's.
func (s *Store) Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error) {
	var w *changedigest.Watch
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		w, err = getUserWatch(tx, userID, id)
		return err
	})
	if err != nil {
		return nil, wrap(err, "get watch %d", id)
	}
	return w, nil
}

// Watches lists the user's watches (every user's for AnyUser) by id,
// those carrying tag when tag is not empty.
func (s *Store) Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error) {
	if tag != "" {
		if t := changedigest.NormaliseTags([]string{tag}); len(t) > 0 {
			tag = t[0]
		}
	}
	var out []changedigest.Watch
	keep := func(w *changedigest.Watch) {
		if tag == "" || w.HasTag(tag) {
			out = append(out, *w)
		}
	}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if userID == AnyUser {
			return tx.Bucket(bWatches).ForEach(func(k, _ []byte) error {
				w, err := getWatch(tx, at(k, 0))
				if errors.Is(err, ErrCorrupt) {
					s.noteDamaged("watch", at(k, 0), err)
					return nil
				}
				if err == nil {
					keep(w)
				}
				return err
			})
		}
		prefix := id64(userID)
		c := tx.Bucket(bUserWatch).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			w, err := getWatch(tx, at(k, 1))
			if errors.Is(err, ErrCorrupt) {
				s.noteDamaged("watch", at(k, 1), err)
				sum, ok := decodeSummary(at(k, 1), v)
				d := damagedWatch(userID, at(k, 1), &sum, err)
				if !ok {
					d = damagedWatch(userID, at(k, 1), nil, err)
				}
				w = &d
			} else if err != nil {
				return err
			}
			keep(w)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "list watches")
	}
	return out, nil
}

// UpdateWatch changes watch id atomically: fn edits a copy of the stored
// watch, which is then validated and stored. ID, UserID and CreatedAt
// cannot change; UpdatedAt is set when a field the user sets changed (not
// for schedule state). Changed retention limits apply at once. userID
// restricts the update to the user's watch (AnyUser for the crawler).
// Errors: ENOTFOUND; EINVALID from Watch.Validate; ECONFLICT when the
// new URL and zone duplicate another of the user's watches; fn's own
// error, returned as is, leaves the watch unchanged. Concurrent updates
// (the crawler's workers recording pages' kinds and titles) share one
// commit, so fn may run more than once: it must only edit the copy.
func (s *Store) UpdateWatch(ctx context.Context, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error) {
	return s.updateWatch(ctx, s.batchUpdate, userID, id, fn)
}

// updateWatch is UpdateWatch in a transaction made by update (s.update,
// or s.batchUpdate).
func (s *Store) updateWatch(ctx context.Context, update func(context.Context, func(*bolt.Tx) error) error, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error) {
	var out *changedigest.Watch
	var fnErr error
	err := update(ctx, func(tx *bolt.Tx) error {
		fnErr = nil // a batched transaction may run fn again
		old, err := getUserWatch(tx, userID, id)
		if err != nil {
			return err
		}
		w := *old
		w.Tags = slices.Clone(old.Tags)
		if err := fn(&w); err != nil {
			fnErr = err
			return err
		}
		w.ID, w.UserID, w.CreatedAt = old.ID, old.UserID, old.CreatedAt
		if err := w.Validate(); err != nil {
			return domainErr(err)
		}
		if err := w.CheckInput(old); err != nil {
			return domainErr(err)
		}
		if w.URL != old.URL || w.Zone != old.Zone {
			if err := checkDuplicate(tx, &w); err != nil {
				return err
			}
		}
		if userFieldsChanged(old, &w) {
			w.UpdatedAt = s.now()
		}
		if err := putWatch(tx, &w, old); err != nil {
			return err
		}
		if w.KeepVersions != old.KeepVersions || w.KeepDays != old.KeepDays {
			t, err := s.openTrack(tx, id)
			if err != nil {
				return err
			}
			if err := t.retain(s.now()); err != nil {
				return err
			}
			if err := t.finish(); err != nil {
				return err
			}
		}
		out = &w
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, wrap(err, "update watch %d", id)
	}
	s.syncAfterWrite()
	return out, nil
}

func userFieldsChanged(a, b *changedigest.Watch) bool {
	return a.URL != b.URL || a.Title != b.Title || a.Zone != b.Zone || a.Category != b.Category ||
		a.Interval != b.Interval || !slices.Equal(a.Tags, b.Tags) || a.Paused != b.Paused ||
		a.KeepVersions != b.KeepVersions || a.KeepDays != b.KeepDays ||
		a.Render != b.Render || a.WaitFor != b.WaitFor || !slices.Equal(a.Steps, b.Steps) || filtersChanged(a, b) ||
		!a.Request.Equal(b.Request)
}

func filtersChanged(a, b *changedigest.Watch) bool {
	return !slices.Equal(a.IgnoreText, b.IgnoreText) || !slices.Equal(a.TriggerText, b.TriggerText) ||
		a.MinSignificance != b.MinSignificance || !slices.Equal(a.NotifyTypes, b.NotifyTypes) ||
		a.OnlyInterests != b.OnlyInterests || a.ShowNoise != b.ShowNoise ||
		a.ValueSelector != b.ValueSelector || a.When != b.When
}

// DeleteWatch deletes the watch with its whole history and its index
// entries. Errors: ENOTFOUND when it does not exist or is another user's.
func (s *Store) DeleteWatch(ctx context.Context, userID, id int64) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		w, err := getUserWatch(tx, userID, id)
		if err != nil {
			return err
		}
		return deleteWatch(s, tx, w)
	})
	if err != nil {
		return wrap(err, "delete watch %d", id)
	}
	s.syncAfterWrite()
	return nil
}

func deleteWatch(s *Store, tx *bolt.Tx, w *changedigest.Watch) error {
	t, err := s.openTrack(tx, w.ID)
	if err != nil {
		return err
	}
	if err := t.deleteAll(); err != nil {
		return err
	}
	if !w.Paused {
		if err := tx.Bucket(bDue).Delete(dueKey(w)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bUserWatch).Delete(id64(w.UserID, w.ID)); err != nil {
		return err
	}
	if err := indexWatchKey(tx, nil, w); err != nil {
		return err
	}
	return tx.Bucket(bWatches).Delete(id64(w.ID))
}

// DueWatches returns the watches whose NextCheck is at or before now,
// earliest first, skipping paused ones; limit defaults to 100, at most
// 10000. Due times live in pet.db and survive restarts. The watches are
// the caller's to modify: this is the crawler's view of the store.
func (s *Store) DueWatches(ctx context.Context, now time.Time, limit int) ([]*changedigest.Watch, error) {
	return s.DueWatchesSkipping(ctx, now, limit, nil)
}

// DueWatchesSkipping is DueWatches leaving out, without reading them, the
// watches skip refuses (those the crawler is checking already); they do
// not count against limit. A nil skip refuses none.
func (s *Store) DueWatchesSkipping(ctx context.Context, now time.Time, limit int, skip func(watchID int64) bool) ([]*changedigest.Watch, error) {
	limit = clampLimit(limit, 100, 10000)
	end := timeKey(now)
	var out []*changedigest.Watch
	err := s.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bDue).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if uint64(at(k, 0)) > end {
				break
			}
			if skip != nil && skip(at(k, 1)) {
				continue
			}
			w, err := getWatch(tx, at(k, 1))
			if errors.Is(err, ErrCorrupt) {
				// The others are checked all the same.
				s.noteDamaged("watch", at(k, 1), err)
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, w)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "list due watches")
	}
	return out, nil
}

// SaveSchedule stores the fields of w the crawler owns (NextCheck,
// LastCheck, LastChange, LastError, LastErrorAt, ErrorCount, Checks,
// ChangeChecks, ETag, LastModified, RetryAfter, Samples, DueByReport), leaving the
// fields a user edits as stored, so an edit made while a check ran is not
// lost. A watch deleted meanwhile is not an error.
func (s *Store) SaveSchedule(ctx context.Context, w *changedigest.Watch) error {
	// Every check saves its schedule, most with nothing else to write (a
	// 304): the saves of concurrent checks share one commit.
	return s.saveSchedule(ctx, s.batchUpdate, w)
}

// SaveSchedules is SaveSchedule for many watches in one transaction.
func (s *Store) SaveSchedules(ctx context.Context, ws []*changedigest.Watch) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		inTx := func(_ context.Context, fn func(*bolt.Tx) error) error { return fn(tx) }
		for _, w := range ws {
			if err := s.saveSchedule(ctx, inTx, w); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) saveSchedule(ctx context.Context, update func(context.Context, func(*bolt.Tx) error) error, w *changedigest.Watch) error {
	_, err := s.updateWatch(ctx, update, AnyUser, w.ID, func(x *changedigest.Watch) error {
		x.CopySchedule(w)
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
