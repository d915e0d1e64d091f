package cluster_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// node is one in-process node: an embedded server alone (no port), its
// store as the view, a worker and the scheduler.
type node struct {
	conn   *cluster.Conn
	store  *pet.Store
	node   *cluster.Node
	worker *cluster.Worker
	sched  *crawl.Scheduler
	cancel context.CancelFunc
	done   chan struct{}
}

func startNode(t *testing.T, natsDir, dataDir string) *node {
	t.Helper()
	return startNodeWith(t, cluster.Config{Name: "solo", Dir: natsDir, Shards: 4, HostGap: 10 * time.Millisecond}, dataDir)
}

func startNodeWith(t *testing.T, cfg cluster.Config, dataDir string) *node {
	t.Helper()
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	cfg.Logger = quiet
	conn, err := cluster.Dial(dctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := pet.New(dataDir)
	store.Logger = quiet
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	p := crawl.NewPipeline(f, segmenter.New(), store)
	wk := &cluster.Worker{Conn: conn, Pipeline: p, Workers: 4, Logger: quiet}
	nd := &cluster.Node{Conn: conn, Store: store, Dir: dataDir, Worker: wk, Logger: quiet}
	sched := crawl.NewScheduler(nd, nd)
	sched.HostGap, sched.Tick = 10*time.Millisecond, 50*time.Millisecond
	sched.Logger = quiet
	rctx, stop := context.WithCancel(ctx)
	n := &node{conn: conn, store: store, node: nd, worker: wk, sched: sched, cancel: stop, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		ch := make(chan struct{}, 3)
		go func() { nd.Run(rctx); ch <- struct{}{} }()
		go func() { wk.Run(rctx); ch <- struct{}{} }()
		go func() { sched.Run(rctx); ch <- struct{}{} }()
		for range 3 {
			<-ch
		}
	}()
	return n
}

func (n *node) stop() {
	n.cancel()
	<-n.done
	n.store.Close()
	n.conn.Close()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestCheckStoredOnceAndRebuilt runs checks through the work queue and
// the versions stream, checks that each stored version reached the view,
// then opens a fresh view on the same stream: it is rebuilt whole.
func TestCheckStoredOnceAndRebuilt(t *testing.T) {
	const pages = 20
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 4, Pages: pages, Size: 2 << 10, Rate: func(int) float64 { return 0 }})
	natsDir, dataDir := t.TempDir(), filepath.Join(t.TempDir(), "view")
	n := startNode(t, natsDir, dataDir)
	ctx := context.Background()
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i)}
	}
	if err := n.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	stored := func(s *pet.Store) int {
		k := 0
		for _, w := range ws {
			if info, err := s.Track(ctx, w.ID); err == nil && info.Versions > 0 {
				k++
			}
		}
		return k
	}
	waitFor(t, "every watch's first version in the view", func() bool { return stored(n.store) == pages })
	counts, dups, err := n.conn.VersionCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dups != 0 || len(counts) != pages {
		t.Fatalf("track of record: %d watches with versions, %d due checks stored twice", len(counts), dups)
	}
	for _, w := range ws {
		if counts[w.ID] != 1 {
			t.Errorf("watch %d has %d versions in the track of record", w.ID, counts[w.ID])
		}
	}
	_, full, _ := farm.Requests()
	if full != pages {
		t.Errorf("the farm answered %d pages in full, want %d (one check each)", full, pages)
	}
	st, err := n.conn.Status(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Versions != pages || st.Watches != pages || len(st.Nodes) != 1 || st.Nodes[0].Name != "solo" {
		t.Errorf("status: %d versions, %d watches, nodes %+v", st.Versions, st.Watches, st.Nodes)
	}
	if err := n.node.Ready(); err != nil {
		t.Errorf("ready: %v", err)
	}
	n.stop()

	// A node with an empty store takes the same shards: its view is
	// rebuilt from the versions stream, and nothing is fetched again
	// but what is due.
	n2 := startNode(t, natsDir, filepath.Join(t.TempDir(), "fresh"))
	defer n2.stop()
	waitFor(t, "the rebuilt view", func() bool { return stored(n2.store) == pages })
	for _, w := range ws {
		snap, err := n2.store.Latest(ctx, w.ID)
		if err != nil || snap.Seq != 1 || len(snap.Segments) == 0 {
			t.Fatalf("rebuilt view of watch %d: %+v, %v", w.ID, snap, err)
		}
	}
}

// TestSearchAndChangesAcrossNodes runs two nodes on one NATS server, each owning
// half the shards: a search on either finds the pages of both, newest
// first, and pages through them as one store would.
func TestSearchAndChangesAcrossNodes(t *testing.T) {
	const pages = 12
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 4, Pages: pages, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := ln.Addr().String()
	ln.Close()
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer a.stop()
	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer b.stop()
	ctx := context.Background()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2
	})
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i)}
	}
	if err := a.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	local := func(n *node) int {
		k := 0
		for _, w := range ws {
			if info, err := n.store.Track(ctx, w.ID); err == nil && info.Versions > 0 {
				k++
			}
		}
		return k
	}
	waitFor(t, "every first version in one of the views", func() bool { return local(a)+local(b) == pages })
	if local(a) == 0 || local(b) == 0 {
		t.Fatalf("views hold %d and %d watches: the shards are not split", local(a), local(b))
	}
	q := pet.Query{Text: "today", UserID: 1, Limit: 5}
	for _, n := range []*node{a, b} {
		res, err := n.node.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != pages || len(res.Hits) != 5 {
			t.Fatalf("search on one node: total %d, %d hits; want %d and 5", res.Total, len(res.Hits), pages)
		}
		seen := map[int64]bool{}
		all := res.Hits
		for off := 5; off < pages; off += 5 {
			q2 := q
			q2.Offset = off
			more, err := n.node.Search(ctx, q2)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, more.Hits...)
		}
		for i, h := range all {
			if i > 0 && h.Time.After(all[i-1].Time) {
				t.Errorf("hit %d is newer than hit %d", i, i-1)
			}
			seen[h.WatchID] = true
		}
		if len(all) != pages || len(seen) != pages {
			t.Errorf("paging through the search: %d hits of %d watches, want %d", len(all), len(seen), pages)
		}
	}
	// The web server's store searches the cluster too.
	res, err := cluster.Store{Store: a.store, Node: a.node}.Search(ctx, q)
	if err != nil || res.Total != pages {
		t.Errorf("cluster.Store search: %+v, %v", res, err)
	}

	// Every page changes and each owner checks its watches now: the
	// change listing of feeds and digests holds them all, newest first.
	for _, p := range farm.Pages {
		p.Touch()
	}
	for _, n := range []*node{a, b} {
		var mine []*changedigest.Watch
		for _, w := range ws {
			if lw, err := n.store.Watch(ctx, pet.AnyUser, w.ID); err == nil {
				mine = append(mine, lw)
			}
		}
		if _, err := n.sched.CheckNow(ctx, nil, mine...); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every second version in a view", func() bool {
		k := 0
		for _, n := range []*node{a, b} {
			for _, w := range ws {
				if info, err := n.store.Track(ctx, w.ID); err == nil && info.Versions == 2 {
					k++
				}
			}
		}
		return k == pages
	})
	evs, err := cluster.Store{Store: b.store, Node: b.node}.Changes(ctx, pet.ChangeFilter{UserID: 1, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i, ev := range evs {
		seen[ev.Watch.ID] = true
		if ev.Version.Seq != 2 || len(ev.Version.Changes) == 0 {
			t.Errorf("event %d: version %d with %d changes", i, ev.Version.Seq, len(ev.Version.Changes))
		}
		if i > 0 && ev.Version.FetchedAt.After(evs[i-1].Version.FetchedAt) {
			t.Errorf("event %d is newer than event %d", i, i-1)
		}
	}
	if len(evs) != pages || len(seen) != pages {
		t.Errorf("changes across the cluster: %d events of %d watches, want %d", len(evs), len(seen), pages)
	}
	if few, err := b.node.Changes(ctx, pet.ChangeFilter{UserID: 1, Limit: 5}); err != nil || len(few) != 5 {
		t.Errorf("changes with limit 5: %d events, %v", len(few), err)
	}
}

// TestWatchesEditedInTheCluster creates, changes and deletes a watch
// through the web server's store: the cluster holds the definition, the
// owner's view follows, and IDs are never given twice.
func TestWatchesEditedInTheCluster(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 1, Pages: 3, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	n := startNode(t, t.TempDir(), t.TempDir())
	defer n.stop()
	ctx := context.Background()
	waitFor(t, "the shards served", func() bool { return n.node.Ready() == nil && len(n.node.Info().Ready) == 4 })
	cs := cluster.Store{Store: n.store, Node: n.node}
	w := &changedigest.Watch{UserID: 1, URL: farm.URL(0)}
	if err := cs.CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := n.store.Watch(ctx, 1, w.ID); err != nil {
		t.Fatalf("the view does not hold the new watch %d: %v", w.ID, err)
	}
	if err := cs.CreateWatch(ctx, &changedigest.Watch{UserID: 1, URL: farm.URL(0)}); changedigest.ErrorCode(err) != changedigest.ECONFLICT {
		t.Errorf("the same URL again: %v, want a conflict", err)
	}
	more := []*changedigest.Watch{{UserID: 1, URL: farm.URL(1)}, {UserID: 1, URL: farm.URL(2)}}
	if err := n.conn.AddWatches(ctx, more); err != nil {
		t.Fatal(err)
	}
	if more[0].ID == w.ID || more[1].ID == w.ID {
		t.Fatalf("IDs given twice: %d, then %d and %d", w.ID, more[0].ID, more[1].ID)
	}
	if _, err := cs.UpdateWatch(ctx, 2, w.ID, func(x *changedigest.Watch) error { x.Title = "x"; return nil }); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's update: %v, want not found", err)
	}
	got, err := cs.UpdateWatch(ctx, 1, w.ID, func(x *changedigest.Watch) error { x.Title = "Renamed"; x.Tags = []string{"news"}; return nil })
	if err != nil || got.Title != "Renamed" {
		t.Fatalf("update: %+v, %v", got, err)
	}
	waitFor(t, "the view to take the new title", func() bool {
		lw, err := n.store.Watch(ctx, 1, w.ID)
		return err == nil && lw.Title == "Renamed" && len(lw.Tags) == 1
	})
	if err := cs.DeleteWatch(ctx, 2, w.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's delete: %v, want not found", err)
	}
	if err := cs.DeleteWatch(ctx, 1, w.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the view to drop the watch", func() bool {
		_, err := n.store.Watch(ctx, 1, w.ID)
		return err != nil
	})
	if err := cs.DeleteWatch(ctx, 1, w.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("deleting it again: %v, want not found", err)
	}
}
