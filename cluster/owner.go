package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// A check that lands on the node serving its watch's shard reads the
// previous version from that node's view rather than from the versions
// stream, as a single node reads its store: only the parts its
// comparison needs, and the watch's recent changes, which mark locations
// that change at nearly every check as noise. Its version still goes to
// the stream first, only on top of the stream's newest version of the
// watch, and then into the view at once, which the view's follower then
// finds there. A check elsewhere, or one whose view is not known to hold
// the stream's newest version, reads the stream (checkTrack).

// tip is where a watch's track ends in the versions stream: the stream
// sequence of its newest version (0: the stream has none) and that
// version's number.
type tip struct {
	streamSeq uint64
	seq       int
}

// tips remembers each watch's tip as this node last saw it (applied by
// its view, or appended by its workers), and the newest version its view
// is known to hold.
type tips struct {
	mu   sync.Mutex
	m    map[int64]tip
	view map[int64]int
	// drops counts, by shard, the times its view was given up: what was
	// learnt of a view before that is not recorded after it.
	drops map[int]int
	// own are the versions this node's workers appended to the versions
	// stream and put in its view at once, by stream sequence, with their
	// shard: the views' followers move past them without reading them
	// back (pass).
	own map[uint64]int
}

// maxOwn bounds the writes remembered (tips.own) while a view that lags
// keeps them from being forgotten; past it they are forgotten, and the
// views read them back.
const maxOwn = 1 << 16

// generation is how many times shard s's view was given up.
func (t *tips) generation(s int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.drops[s]
}

// held records that the view holds the watch's versions up to seq, as
// learnt while the view of its shard s was in generation gen.
func (t *tips) held(id int64, s, gen, seq int) { t.heldOwn(id, s, gen, seq, 0) }

// heldOwn is held for a version this node appended at stream sequence
// streamSeq (0: unknown): the view of shard s need not read it back.
func (t *tips) heldOwn(id int64, s, gen, seq int, streamSeq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drops[s] != gen {
		return
	}
	if t.view == nil {
		t.view = map[int64]int{}
	}
	t.view[id] = max(t.view[id], seq)
	if streamSeq != 0 {
		t.addOwn(streamSeq, s)
	}
}

func (t *tips) addOwn(seq uint64, s int) {
	if t.own == nil || len(t.own) >= maxOwn {
		t.own = map[uint64]int{}
	}
	t.own[seq] = s
}

// pass returns how far the view of shard s, having applied the versions
// stream up to pos, may move on without reading: past the run of
// sequences right after pos that are all this node's own appends (those
// of other shards are on no subject of the view; those of s are in it),
// and how many of them are of s.
func (t *tips) pass(pos uint64, s int) (uint64, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := 0
	for {
		shard, ok := t.own[pos+1]
		if !ok {
			return pos, k
		}
		pos++
		if shard == s {
			k++
		}
	}
}

// forgetOwn forgets the appends at or below seq, which every view has
// moved past.
func (t *tips) forgetOwn(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for q := range t.own {
		if q <= seq {
			delete(t.own, q)
		}
	}
}

// holds reports whether the view is known to hold version seq of the
// watch.
func (t *tips) holds(id int64, seq int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.view[id] >= seq
}

func (t *tips) get(id int64) (tip, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	x, ok := t.m[id]
	return x, ok
}

// set records x as watch id's tip unless a later one is known.
func (t *tips) set(id int64, x tip) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[int64]tip{}
	}
	if old, ok := t.m[id]; !ok || x.streamSeq >= old.streamSeq {
		t.m[id] = x
	}
}

// dropShard forgets the watches of shard s, which the view gives up.
func (t *tips) dropShard(s, shards int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drops == nil {
		t.drops = map[int]int{}
	}
	t.drops[s]++
	for id := range t.m {
		if ShardOf(id, shards) == s {
			delete(t.m, id)
		}
	}
	for id := range t.view {
		if ShardOf(id, shards) == s {
			delete(t.view, id)
		}
	}
	for q, shard := range t.own {
		if shard == s {
			delete(t.own, q)
		}
	}
}

// forget drops what is known of the watch's tip (the view's part stays:
// versions are not taken out of a view but by retention, which keeps the
// newest).
func (t *tips) forget(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

// ownerTrack returns the track of a check of watch id on this node when
// the node serves its shard, nil otherwise. It reads nothing yet: which
// of the view and the stream the check reads is settled when the check
// first reads the track, after its fetch (see resolve).
func (n *Node) ownerTrack(id int64, st *checkTrack) *ownerTrack {
	if n == nil || n.Store == nil || !n.owns(id) {
		return nil
	}
	return &ownerTrack{n: n, st: st}
}

// heldBy reports whether a view whose newest version of the watch is
// latest holds the stream's newest, x. A view ahead of an empty stream
// holds a track kept from before its versions went to a stream.
func (x tip) heldBy(latest int) bool {
	if x.streamSeq == 0 {
		return latest >= x.seq
	}
	return latest == x.seq
}

// ownerTrack is the track of a check run by the node serving the watch
// (see above): crawl.Track, and the parts and recent changes the
// pipeline reads of a store. It reads the node's view when the view
// holds the stream's newest version of the watch, else the stream.
type ownerTrack struct {
	n  *Node
	st *checkTrack

	resolved, local bool
	tip             tip
	latest          int
	gen             int // the generation of the shard's view read
	// history is the signature matrix the check read, newest first.
	history [][]string
}

// resolve settles, once, whether the check reads the view (local) or the
// stream.
func (t *ownerTrack) resolve(ctx context.Context, id int64) error {
	if t.resolved {
		return nil
	}
	t.gen = t.n.tips.generation(t.st.shard)
	info, err := t.n.Store.Track(ctx, id)
	if err != nil {
		// Not in the view (defined a moment ago): the stream has it all.
		t.resolved = true
		return nil
	}
	x, ok := t.n.tips.get(id)
	if !ok || !x.heldBy(info.Latest) {
		// Not known, or not what the view holds: ask the stream.
		v, err := t.st.newest(ctx, id)
		if err != nil {
			return err
		}
		x = tip{}
		if v != nil {
			x = tip{streamSeq: v.streamSeq, seq: v.seq}
		}
		t.n.tips.set(id, x)
	}
	t.resolved = true
	// A view behind the stream (another node's version not applied yet)
	// leaves the check to the stream.
	t.local = x.heldBy(info.Latest)
	t.tip, t.latest = x, info.Latest
	return nil
}

func (t *ownerTrack) Prior(ctx context.Context, watchID int64, m int) (*changedigest.Snapshot, []byte, [][]string, error) {
	if err := t.resolve(ctx, watchID); err != nil || !t.local {
		if err != nil {
			return nil, nil, nil, err
		}
		return t.st.Prior(ctx, watchID, m)
	}
	snap, body, rows, err := t.n.Store.Prior(ctx, watchID, m)
	t.history = rows
	return snap, body, rows, err
}

func (t *ownerTrack) PriorParts(ctx context.Context, watchID int64, m int) (*changedigest.Snapshot, changedigest.VersionParts, [][]string, error) {
	if err := t.resolve(ctx, watchID); err != nil {
		return nil, nil, nil, err
	}
	if !t.local {
		snap, body, rows, err := t.st.Prior(ctx, watchID, m)
		if err != nil || snap == nil {
			return nil, nil, rows, err
		}
		return snap, wholeParts{snap: snap, body: body}, rows, nil
	}
	snap, parts, rows, err := t.n.Store.PriorParts(ctx, watchID, m)
	t.history = rows
	return snap, parts, rows, err
}

// RecentChanges reads the view's, even when a newer version is in the
// stream than in the view: the locations that change at nearly every
// check are the same a version or two later.
func (t *ownerTrack) RecentChanges(ctx context.Context, watchID int64, n int) ([][]changedigest.Change, error) {
	if err := t.resolve(ctx, watchID); err != nil {
		return nil, err
	}
	recent, err := t.n.Store.RecentChanges(ctx, watchID, n)
	if err != nil && !t.local {
		return nil, nil // the view does not hold the watch yet: none
	}
	return recent, err
}

// wholeParts are the parts of a version read whole from the stream.
type wholeParts struct {
	snap *changedigest.Snapshot
	body []byte
}

func (p wholeParts) SegmentText(i int) (string, error) {
	if i < 0 || i >= len(p.snap.Segments) {
		return "", fmt.Errorf("cluster: segment %d of a version of %d segments", i, len(p.snap.Segments))
	}
	return p.snap.Segments[i].Text, nil
}

func (p wholeParts) BodyRange(start, end int) ([]byte, error) {
	if start < 0 || end < start || end > len(p.body) {
		return nil, fmt.Errorf("cluster: bytes %d to %d of a body of %d", start, end, len(p.body))
	}
	return p.body[start:end], nil
}

func (p wholeParts) Body() ([]byte, error) { return p.body, nil }

// UpdateWatch records what the check learned of the page in the view,
// when the check stored its version there; else the view learns it when
// it applies the version from the stream (learn). The watches bucket
// holds what users define.
func (t *ownerTrack) UpdateWatch(ctx context.Context, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error) {
	if !t.local {
		return nil, nil
	}
	return t.n.Store.UpdateWatch(ctx, userID, id, fn)
}

// AddVersion appends the version to the stream on top of the tip the
// check read (errRaced when another version came first), then stores it
// in the view; a check that read the stream appends as checkTrack does.
func (t *ownerTrack) AddVersion(ctx context.Context, watchID int64, snap *changedigest.Snapshot, body []byte) (int, error) {
	if err := t.resolve(ctx, watchID); err != nil {
		return 0, err
	}
	if !t.local {
		if t.n.Conn.Config.NewestOnly {
			// The stream keeps each watch's newest version only:
			// appending on top of one the store does not hold yet would
			// drop it for good. The view takes it first; the check is
			// run again a second later.
			if prev, err := t.st.newest(ctx, watchID); err != nil {
				return 0, err
			} else if prev != nil {
				t.n.pokeVersions(watchID)
				return 0, fmt.Errorf("cluster: version %d of watch %d is not in the store yet: %w", prev.seq, watchID, errUnavailable)
			}
		}
		seq, err := t.st.AddVersion(ctx, watchID, snap, body)
		if err == nil {
			t.n.pokeVersions(watchID) // for the view to apply it now
		}
		return seq, err
	}
	c := t.n.Conn
	seq := t.latest + 1
	if snap.FetchedAt.IsZero() {
		snap.FetchedAt = time.Now()
	}
	snap.WatchID, snap.Seq, snap.Size = watchID, seq, len(body)
	msg, _, err := versionMsg(t.st.shard, snap, t.history, t.st.matrix, body, t.st.due)
	if err != nil {
		return 0, err
	}
	ack, err := c.publish(ctx, msg, jetstream.WithMsgID(checkID(watchID, t.st.due)),
		jetstream.WithExpectLastSequencePerSubject(t.tip.streamSeq))
	if conflict(err) {
		t.n.tips.forget(watchID)
		return 0, errRaced
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: store a version of watch %d: %w", watchID, unavailable(err))
	}
	if ack.Duplicate {
		// This due check stored its version before (a check delivered
		// again): the view applies that one.
		t.n.tips.forget(watchID)
		t.n.pokeVersions(watchID)
		return seq, nil
	}
	t.n.tips.set(watchID, tip{streamSeq: ack.Sequence, seq: seq})
	_, err = t.n.Store.AddVersionAt(ctx, watchID, seq, snap, body)
	switch {
	case err == nil, errors.Is(err, pet.ErrConflict):
		// ErrConflict: the view's follower applied it first.
		if c.oneCopy {
			// The views pass it unread (see follow; with three copies
			// they read on from their last version, rarely next to it).
			t.n.tips.heldOwn(watchID, t.st.shard, t.gen, seq, ack.Sequence)
			t.n.seen.raise(ends{versions: ack.Sequence})
		} else {
			t.n.tips.held(watchID, t.st.shard, t.gen, seq)
		}
	default:
		// Stored in the track of record: the follower applies it to the
		// view when the view can take it.
		t.n.logger().Warn("a version stored in the stream waits for the view", "watch", watchID, "version", seq, "err", err)
		t.n.pokeVersions(watchID)
	}
	return seq, nil
}
