package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// TestNewestOnlyKeepsAVersionTheStoreLacks: a check that would append on
// top of a version its store does not hold yet waits (errUnavailable,
// run again a second later) when the versions stream keeps the newest
// version only, which the append would drop for good; with every
// version kept it appends. The stream then holds one version a watch.
func TestNewestOnlyKeepsAVersionTheStoreLacks(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	snap := func() *changedigest.Snapshot {
		return &changedigest.Snapshot{FetchedAt: time.Now(), Kind: changedigest.KindPage,
			Segments: []changedigest.Segment{{Path: "html|body|p", Hash: "6b3ac12f0a0e4c0a3d2d1c2f7bb1f7e1", Text: "The weather today", Start: -1, End: -1}}}
	}
	for _, newestOnly := range []bool{true, false} {
		conn, err := Dial(ctx, Config{Name: "a", Dir: t.TempDir(), Shards: 2, Logger: quiet, NewestOnly: newestOnly})
		if err != nil {
			t.Fatal(err)
		}
		n := &Node{Conn: conn, Logger: quiet}
		const id = 7
		// Version 1 in the stream, not in the store (the view behind).
		first := &checkTrack{c: conn, shard: ShardOf(id, 2), due: time.Now(), matrix: 1}
		if _, err := first.AddVersion(ctx, id, snap(), []byte("<p>The weather today</p>")); err != nil {
			t.Fatal(err)
		}
		ot := &ownerTrack{n: n, st: &checkTrack{c: conn, shard: ShardOf(id, 2), due: time.Now().Add(time.Minute), matrix: 1}, resolved: true}
		seq, err := ot.AddVersion(ctx, id, snap(), []byte("<p>The weather tomorrow</p>"))
		counts, _, cerr := conn.VersionCounts(ctx)
		if cerr != nil {
			t.Fatal(cerr)
		}
		switch {
		case newestOnly && !errors.Is(err, errUnavailable):
			t.Errorf("newest only: appended version %d on top of one the store lacks (%v)", seq, err)
		case newestOnly && counts[id] != 1:
			t.Errorf("newest only: the stream holds %d versions of the watch", counts[id])
		case !newestOnly && (err != nil || seq != 2 || counts[id] != 2):
			t.Errorf("every version kept: version %d, %v; the stream holds %d", seq, err, counts[id])
		}
		conn.Close()
	}
}

// TestOwnHeartbeatAlwaysLive: a node takes itself for alive whatever its
// last heartbeat says (a cluster of one that no other node can reach
// writes one every 10 s, past the lease), and the others by the lease.
func TestOwnHeartbeatAlwaysLive(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	conn, err := Dial(ctx, Config{Name: "a", Dir: t.TempDir(), Shards: 2, Logger: quiet, NewestOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := &Node{Conn: conn}
	if n.beatEvery() <= conn.Config.Lease || n.pollMost() != 10*time.Second {
		t.Errorf("newest only: heartbeat every %v (lease %v), looks at most %v apart", n.beatEvery(), conn.Config.Lease, n.pollMost())
	}
	now := time.Now()
	for name, beat := range map[string]time.Time{"a": now.Add(-time.Minute), "b": now.Add(-time.Minute), "c": now} {
		data, _ := json.Marshal(NodeInfo{Name: name, Beat: beat})
		if _, err := conn.nodes.Put(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
	live, err := liveNodes(ctx, conn, now)
	if err != nil || !maps.Equal(live, map[string]bool{"a": true, "c": true}) {
		t.Errorf("live nodes %v, %v; want a (itself) and c", live, err)
	}
}
