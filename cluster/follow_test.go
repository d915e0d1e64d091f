package cluster_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

// TestOneCopyViewsReadOtherWriters: on streams kept by one server, a
// node's view passes the versions its own worker stored in it without
// reading them back, and moves its place to where the stream is known to
// reach; the versions another node's worker appends to its shards, and
// the watches defined through another node, still reach it, each
// version once.
func TestOneCopyViewsReadOtherWriters(t *testing.T) {
	const pages = 8
	// Every page changes between any two checks.
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 2, Pages: pages + 1, Size: 1 << 10, Rate: func(int) float64 { return 100 }})
	client := freeAddr(t)
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer a.stop()
	ctx := context.Background()
	waitFor(t, "a serving every shard", func() bool { return len(a.node.Info().Ready) == 4 })
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i), Paused: true}
	}
	if err := a.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	latest := func(n *node, id int64) int {
		info, err := n.store.Track(ctx, id)
		if err != nil {
			return 0
		}
		return info.Latest
	}
	// check runs a check of watch w now through n, as its scheduler
	// would, and waits until n's view holds the version it stored: the
	// next check compares against it. Queued, it is not awaited otherwise:
	// the view learns of a version another node's worker stored when it
	// next looks at the stream's end.
	check := func(n *node, w *changedigest.Watch) {
		t.Helper()
		var got *changedigest.Watch
		waitFor(t, "the watch in the view", func() bool {
			var err error
			got, err = n.store.Watch(ctx, 1, w.ID)
			return err == nil
		})
		got.NextCheck = time.Now()
		out, err := n.node.Check(ctx, got)
		if err != nil || out.Seq == 0 {
			t.Fatalf("check of watch %d: %+v, %v", w.ID, out, err)
		}
		waitFor(t, "the version in the view", func() bool { return latest(n, w.ID) >= out.Seq })
	}
	// Alone, a checks each watch twice itself.
	for range 2 {
		for _, w := range ws {
			check(a, w)
		}
	}
	for _, w := range ws {
		if got := latest(a, w.ID); got != 2 {
			t.Fatalf("a alone: watch %d's view holds version %d, want 2", w.ID, got)
		}
	}

	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer b.stop()
	waitFor(t, "two shards each", func() bool { return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2 })
	servedBy := func(id int64) *node {
		if slices.Contains(a.node.Info().Ready, cluster.ShardOf(id, 4)) {
			return a
		}
		return b
	}
	// A watch renamed through the node that does not serve it keeps its
	// name in the view of the one that does, whose checks record the
	// page's kind and title in the definition too.
	renamed := ws[0]
	for i, w := range ws {
		if servedBy(w.ID) == a {
			renamed = ws[i]
			break
		}
	}
	if _, err := (cluster.Store{Store: b.store, Node: b.node}).UpdateWatch(ctx, 1, renamed.ID, func(x *changedigest.Watch) error {
		x.Title = "Renamed"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Each node queues the checks of the watches it serves; either
	// node's worker takes each (the other's appends are read from the
	// stream, a node's own are passed).
	for range 4 {
		for _, w := range ws {
			check(servedBy(w.ID), w)
		}
	}
	// A watch defined through b, of a shard a serves, reaches a's view.
	var added *changedigest.Watch
	for i := 0; added == nil; i++ {
		w := &changedigest.Watch{UserID: 1, URL: farm.URL(pages) + "?v=" + strconv.Itoa(i), Paused: true}
		if err := (cluster.Store{Store: b.store, Node: b.node}).CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
		if servedBy(w.ID) == a {
			added = w
		}
	}
	waitFor(t, "the watch defined through b in a's view", func() bool {
		_, err := a.store.Watch(ctx, 1, added.ID)
		return err == nil
	})
	counts, dups, err := a.conn.VersionCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Errorf("%d due checks stored twice", dups)
	}
	for _, w := range ws {
		n := servedBy(w.ID)
		waitFor(t, "every version in the serving node's view", func() bool { return latest(n, w.ID) == 6 })
		if counts[w.ID] != 6 {
			t.Errorf("watch %d: %d versions in the stream, want 6", w.ID, counts[w.ID])
		}
		vs, err := n.store.Versions(ctx, w.ID, 0, 10)
		if err != nil || len(vs) != 6 {
			t.Errorf("watch %d: %d versions in the view, %v; want 6", w.ID, len(vs), err)
		}
		got, err := n.store.Watch(ctx, 1, w.ID)
		if err != nil || got.Kind != changedigest.KindPage || got.Title == "" || (w == renamed) != (got.Title == "Renamed") {
			t.Errorf("watch %d in the view: kind %q, title %q, %v", w.ID, got.Kind, got.Title, err)
		}
	}
}
