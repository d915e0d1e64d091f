package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// errRaced: another worker stored a version of the watch after this
// check read the newest one; this check's version is not stored.
var errRaced = errors.New("cluster: another check stored a version of this watch first")

// errUnavailable marks a failure because the cluster did not answer in
// time (a stream electing a leader after a server died, a node that
// stopped), not because of the page or the request: the worker puts such
// a check back to be run again, and the web server answers 503 with a
// Retry-After (EBUSY).
var errUnavailable = changedigest.Errorf(changedigest.EBUSY, "the cluster did not answer in time (it may be replacing a server that stopped); try again in a few seconds")

// unavailable wraps err with errUnavailable when it is transient, and
// with errFull when it is for want of space.
func unavailable(err error) error {
	switch {
	case transient(err):
		return fmt.Errorf("%w: %w", errUnavailable, err)
	case storageFull(err) && !errors.Is(err, errFull):
		return fmt.Errorf("%w: %w", errFull, err)
	}
	return err
}

// checkTrack is the track of record as one check sees it (the check
// pipeline's crawl.Track): the newest version is read from the versions
// stream, and a new version is appended there, once per due check and
// only on top of the version the check compared against.
type checkTrack struct {
	c      *Conn
	shard  int
	due    time.Time
	matrix int
	// node, when set, is asked for the watch's recent changes (see
	// RecentChanges).
	node *Node

	read bool
	last *version
}

// recentWait bounds asking the node serving a watch for its recent
// changes.
const recentWait = 2 * time.Second

// RecentChanges asks the node serving the watch's shard for the changes
// of the watch's last n versions, which mark the locations that change at
// nearly every check as noise, as that node's own checks mark them. When
// no node can say within recentWait (none serves the shard now, or it is
// busy), the check goes on without them, as a check of a watch with no
// history.
func (t *checkTrack) RecentChanges(ctx context.Context, watchID int64, n int) ([][]changedigest.Change, error) {
	if t.node == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, recentWait)
	defer cancel()
	recent, err := askWatch[[][]changedigest.Change](ctx, t.node, watchQuestion{Op: "recent", ID: watchID, Limit: n})
	if err != nil {
		t.node.logger().Debug("checking without the recent changes", "watch", watchID, "err", err)
		return nil, nil
	}
	return recent, nil
}

// newest reads the newest version of the watch (nil when it has none).
func (t *checkTrack) newest(ctx context.Context, watchID int64) (*version, error) {
	if t.read {
		return t.last, nil
	}
	m, err := t.c.versions.GetLastMsgForSubject(ctx, versionSubject(t.shard, watchID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		t.read = true
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read the newest version of watch %d: %w", watchID, unavailable(err))
	}
	v, err := decodeRaw(m)
	if err != nil {
		return nil, fmt.Errorf("cluster: newest version of watch %d: %w", watchID, err)
	}
	t.read, t.last = true, v
	return v, nil
}

// stored reads the newest version of the watch afresh and, when it was
// stored by the check due at due, returns that check's outcome.
func (t *checkTrack) stored(ctx context.Context, watchID int64, due time.Time) (crawl.Outcome, bool) {
	t.read, t.last = false, nil
	v, err := t.newest(ctx, watchID)
	if err != nil || v == nil || v.due != due.UnixNano() {
		return crawl.Outcome{}, false
	}
	res := crawl.Changed
	if v.seq == 1 {
		res = crawl.FirstVersion
	}
	return crawl.Outcome{Result: res, ETag: v.meta.Snapshot.ETag, LastModified: v.meta.Snapshot.LastModified}, true
}

// Prior is crawl.Track's: the newest version, its body and the signature
// matrix of the last m versions.
func (t *checkTrack) Prior(ctx context.Context, watchID int64, m int) (*changedigest.Snapshot, []byte, [][]string, error) {
	v, err := t.newest(ctx, watchID)
	if err != nil || v == nil {
		return nil, nil, nil, err
	}
	h := v.meta.History
	if m > 0 && len(h) > m {
		h = h[:m]
	}
	return v.meta.Snapshot, v.body, h, nil
}

// AddVersion appends the version to the watch's subject of the versions
// stream. JetStream refuses it when another version was appended since
// Prior (errRaced) and drops it when this due check already stored one.
func (t *checkTrack) AddVersion(ctx context.Context, watchID int64, snap *changedigest.Snapshot, body []byte) (int, error) {
	prev, err := t.newest(ctx, watchID)
	if err != nil {
		return 0, err
	}
	seq, last := 1, uint64(0)
	var prior [][]string
	if prev != nil {
		seq, last, prior = prev.seq+1, prev.streamSeq, prev.meta.History
	}
	if snap.FetchedAt.IsZero() {
		snap.FetchedAt = time.Now()
	}
	snap.WatchID, snap.Seq, snap.Size = watchID, seq, len(body)
	msg, _, err := versionMsg(t.shard, snap, prior, t.matrix, body, t.due)
	if err != nil {
		return 0, err
	}
	_, err = t.c.publish(ctx, msg, jetstream.WithMsgID(checkID(watchID, t.due)),
		jetstream.WithExpectLastSequencePerSubject(last))
	if conflict(err) {
		return 0, errRaced
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: store a version of watch %d: %w", watchID, unavailable(err))
	}
	return seq, nil
}

// UpdateWatch records nothing: the view of the watch's shard learns what
// the check learned of the page from the version it applies (learn), and
// the watches bucket holds what users define.
func (t *checkTrack) UpdateWatch(ctx context.Context, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error) {
	return nil, nil
}

// updateWatch reads, changes and writes a watch definition, again when
// another writer came between.
func (c *Conn) updateWatch(ctx context.Context, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error) {
	key := watchKey(ShardOf(id, c.Config.Shards), id)
	for try := 0; try < 5; try++ {
		e, err := c.watches.Get(ctx, key)
		if transient(err) && ctx.Err() == nil {
			try--
			time.Sleep(250 * time.Millisecond) // a leader is being elected
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: read watch %d: %w", id, unavailable(err))
		}
		var w changedigest.Watch
		if err := json.Unmarshal(e.Value(), &w); err != nil {
			return nil, fmt.Errorf("cluster: watch %d: %w", id, err)
		}
		if err := fn(&w); err != nil {
			return nil, err
		}
		v, err := json.Marshal(&w)
		if err != nil {
			return nil, err
		}
		if _, err := c.watches.Update(ctx, key, v, e.Revision()); err == nil {
			return &w, nil
		} else if transient(err) && ctx.Err() == nil {
			try--
			time.Sleep(250 * time.Millisecond)
		} else if !conflict(err) {
			return nil, fmt.Errorf("cluster: write watch %d: %w", id, unavailable(err))
		}
	}
	return nil, fmt.Errorf("cluster: watch %d changed under five writes in a row", id)
}
