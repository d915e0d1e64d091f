package pet

import (
	"bytes"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// DefaultEventCacheBytes bounds the memory of the rows Changes keeps.
const DefaultEventCacheBytes = 16 << 20

// The rows of change events: a stored version never changes, and feed
// readers and dashboards ask for the same newest events again and again,
// so each row is read and decoded (its record inflated) once while it is
// kept, not at every request. Rows are kept by watch and number and
// checked against the detection time of the event that names them, so a
// number given again to another version (a watch's history replaced) is
// read again.

// eventRef names a version.
type eventRef struct {
	watchID int64
	seq     int
}

// eventRow is a version's light row as Changes keeps it (see events),
// with the detection time of the event that named it.
type eventRow struct {
	fetched int64 // FetchedAt in unix nanoseconds
	snap    *changedigest.Snapshot
}

// rowSize estimates the memory of a row.
func rowSize(s *changedigest.Snapshot) int {
	n := 512 + len(s.Title) + len(s.ETag) + len(s.LastModified) + len(s.ContentType) + len(s.FinalURL) + len(s.Zone)
	for i := range s.Changes {
		c := &s.Changes[i]
		n += 256 + len(c.Path) + len(c.OldText) + len(c.NewText) + len(c.Before) + len(c.After) +
			len(c.Title) + len(c.Link) + len(c.Noise)
	}
	return n
}

// eventVersion returns the light row of a version for Changes: what its
// record's header holds (changes, significance, title …) and whether it
// has a screenshot, without segments or layout, which no event shows.
// fetched is the detection time its event key holds. The row is shared:
// callers copy the Snapshot and never change its Changes.
func (s *Store) eventVersion(tx *bolt.Tx, watchID int64, seq int, fetched int64) (*changedigest.Snapshot, error) {
	ref := eventRef{watchID, seq}
	if row, ok := s.events.Get(ref); ok && row.fetched == fetched {
		return row.snap, nil
	}
	rec, err := versionRecord(tx, watchID, seq)
	if err != nil {
		return nil, err
	}
	h := &rec.hdr
	snap := h.snapshot(watchID, seq)
	shot, err := shotOf(tx, watchID, seq, false)
	if err != nil {
		return nil, err
	}
	if shot != nil {
		snap.Screenshot = shot.screenshot()
	}
	if h.FetchedAt == fetched {
		s.events.Put(ref, eventRow{fetched, snap}, rowSize(snap))
	}
	return snap, nil
}

// watchCacheBytes bounds the memory of the watches kept decoded.
const watchCacheBytes = 4 << 20

// decodedWatch is a watch kept decoded (see Store.watches), with the
// record it was decoded from.
type decodedWatch struct {
	rec []byte
	w   *changedigest.Watch
}

// keptWatch is getWatch for listings (Changes, WatchPage): the watch is
// kept decoded with its record, and decoded again only when the record
// changed (a listing of a user's 200 watches otherwise decodes 200 JSON
// records). The watch is shared with other calls: read only.
func (s *Store) keptWatch(tx *bolt.Tx, id int64) (*changedigest.Watch, error) {
	v := tx.Bucket(bWatches).Get(id64(id))
	if v == nil {
		return nil, notFoundf("watch %d not found", id)
	}
	if d, ok := s.watches.Get(id); ok && bytes.Equal(d.rec, v) {
		return d.w, nil
	}
	var w changedigest.Watch
	if err := json.Unmarshal(v, &w); err != nil {
		return nil, corruptf("watch %d: %v", id, err)
	}
	s.watches.Put(id, decodedWatch{rec: bytes.Clone(v), w: &w}, 2*len(v)+1024)
	return &w, nil
}

// Changes listings made with Refs are kept (Store.refs) for the
// snapshot they were read in, as listCache keeps watch lists: a read
// transaction with another id (any write since) reads the listing again,
// so a listing is never stale, and the readers polling a feed between
// two writes (checks write a few times a second) share one.

// refListsBytes bounds the memory of the listings kept.
const refListsBytes = 8 << 20

// eventSize is about the memory of an Event.
const eventSize = 1024

// refQuery is a ChangeFilter with Refs and no Types, comparable.
type refQuery struct {
	userID, watchID int64
	tag             string
	since, until    int64
	limit           int
}

type refList struct {
	txid int
	evs  []Event
}

// refQueryOf is the key of f's listing, and whether it is kept at all.
func refQueryOf(f ChangeFilter, limit int) (refQuery, bool) {
	if !f.Refs || len(f.Types) > 0 {
		return refQuery{}, false
	}
	return refQuery{userID: f.UserID, watchID: f.WatchID, tag: f.Tag, since: unixNano(f.Since), until: unixNano(f.Until), limit: limit}, true
}
