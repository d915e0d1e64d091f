package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// TestOwnerMarksVolatileLocations: checks run on the node serving the
// watch read its view as a single node reads its store, so a counter
// that moves at every check is marked noise with its reason, as it is
// on a single node; every version is still in the versions stream, once,
// and a view rebuilt from the stream holds the same changes.
func TestOwnerMarksVolatileLocations(t *testing.T) {
	var views atomic.Int64
	story := atomic.Value{}
	story.Store("The harbour festival opens on Friday with music on the quay.")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><body><main><h1>Harbour</h1><p>%s</p>
<p>The ferry to the islands leaves from the north pier every hour until midnight in summer.</p></main>
<aside><p>Tickets left: %d</p></aside></body></html>`, story.Load(), 100+views.Add(1))
	}))
	defer site.Close()
	natsDir := t.TempDir()
	n := startNode(t, natsDir, t.TempDir())
	ctx := context.Background()
	waitFor(t, "the shards served", func() bool { return n.node.Ready() == nil && len(n.node.Info().Ready) == 4 })
	w := &changedigest.Watch{UserID: 1, URL: site.URL + "/harbour"}
	if err := n.conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		t.Fatal(err)
	}
	check := func(v int) *changedigest.Snapshot {
		t.Helper()
		waitFor(t, "the watch in the view", func() bool {
			_, err := n.store.Watch(ctx, pet.AnyUser, w.ID)
			return err == nil
		})
		lw, _ := n.store.Watch(ctx, pet.AnyUser, w.ID)
		sum, err := n.sched.CheckNow(ctx, nil, lw)
		if err != nil || sum.Failed != 0 {
			t.Fatalf("check %d: %+v, %v", v, sum, err)
		}
		var last *changedigest.Snapshot
		waitFor(t, fmt.Sprintf("version %d in the view", v), func() bool {
			last, err = n.store.Latest(ctx, w.ID)
			return err == nil && last.Seq == v
		})
		return last
	}
	checks := segmenter.NoiseVolatileMin + 3
	var last *changedigest.Snapshot
	for v := 1; v <= checks; v++ {
		last = check(v)
	}
	if len(last.Changes) != 1 || !strings.HasPrefix(last.Changes[0].Noise, "volatile location: changes at") {
		t.Fatalf("the counter after %d checks: %+v", checks, last.Changes)
	}
	story.Store("The harbour festival is cancelled because of the storm.")
	last = check(checks + 1)
	told := 0
	for _, c := range last.Changes {
		if c.Noise == "" && c.Type == changedigest.ChangeContent {
			told++
		}
	}
	if told == 0 {
		t.Errorf("the story's edit was not told: %+v", last.Changes)
	}
	counts, dups, err := n.conn.VersionCounts(ctx)
	if err != nil || dups != 0 || counts[w.ID] != checks+1 {
		t.Fatalf("the stream holds %d versions (%d twice), %v; want %d", counts[w.ID], dups, err, checks+1)
	}
	n.stop()

	n2 := startNode(t, natsDir, t.TempDir())
	defer n2.stop()
	var rebuilt *changedigest.Snapshot
	waitFor(t, "the rebuilt view", func() bool {
		rebuilt, err = n2.store.Latest(ctx, w.ID)
		return err == nil && rebuilt.Seq == checks+1
	})
	if fmt.Sprint(rebuilt.Changes) != fmt.Sprint(last.Changes) {
		t.Errorf("rebuilt view's changes %+v, want %+v", rebuilt.Changes, last.Changes)
	}
}

// TestAnyNodeMarksVolatileLocations: a check run by a node that does not
// serve the watch asks the node that does for the watch's recent changes,
// so a counter that moves at every check is marked noise as the serving
// node's own checks mark it. The serving node runs no worker here: every
// check goes through the queue to the other node.
func TestAnyNodeMarksVolatileLocations(t *testing.T) {
	var views atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><body><main><h1>Harbour</h1><p>The harbour festival opens on Friday with music on the quay.</p>
<p>The ferry to the islands leaves from the north pier every hour until midnight in summer.</p></main>
<aside><p>Tickets left: %d</p></aside></body></html>`, 100+views.Add(1))
	}))
	defer site.Close()
	client := freeAddr(t)
	const shards = 4
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: shards, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer a.stop()
	b := startNodeWorking(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir(), false)
	defer b.stop()
	ctx := context.Background()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2
	})
	// A watch of a shard b serves.
	var w *changedigest.Watch
	for i := 0; w == nil; i++ {
		x := &changedigest.Watch{UserID: 1, URL: fmt.Sprintf("%s/harbour/%d", site.URL, i)}
		if err := a.conn.AddWatches(ctx, []*changedigest.Watch{x}); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(b.node.Info().Ready, cluster.ShardOf(x.ID, shards)) {
			w = x
		}
	}
	checks := segmenter.NoiseVolatileMin + 3
	var last *changedigest.Snapshot
	for v := 1; v <= checks; v++ {
		waitFor(t, "the watch in b's view", func() bool {
			_, err := b.store.Watch(ctx, pet.AnyUser, w.ID)
			return err == nil
		})
		lw, _ := b.store.Watch(ctx, pet.AnyUser, w.ID)
		if sum, err := b.sched.CheckNow(ctx, nil, lw); err != nil || sum.Failed != 0 {
			t.Fatalf("check %d: %+v, %v", v, sum, err)
		}
		waitFor(t, fmt.Sprintf("version %d in b's view", v), func() bool {
			l, err := b.store.Latest(ctx, w.ID)
			last = l
			return err == nil && l.Seq == v
		})
	}
	if len(last.Changes) != 1 || !strings.HasPrefix(last.Changes[0].Noise, "volatile location: changes at") {
		t.Fatalf("the counter after %d checks on the other node: %+v", checks, last.Changes)
	}
}
