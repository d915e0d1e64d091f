package cluster_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
)

// TestRebuiltViewCountsTheChecksOfItsVersions: a node that takes a shard
// over after its node died before it kept the shard's schedules in the
// cluster counts, in each watch's schedule, the checks that stored the
// versions it reads from the stream: its page does not show "checks 0,
// last check never" beside versions. Before, it showed just that.
func TestRebuiltViewCountsTheChecksOfItsVersions(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 1, Pages: 1, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	natsDir := t.TempDir()
	n := startNode(t, natsDir, t.TempDir())
	ctx := context.Background()
	waitFor(t, "the shards served", func() bool { return n.node.Ready() == nil && len(n.node.Info().Ready) == 4 })
	w := &changedigest.Watch{UserID: 1, URL: farm.URL(0), Paused: true}
	if err := n.conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch in the view", func() bool {
		_, err := n.store.Watch(ctx, 1, w.ID)
		return err == nil
	})
	for i := range 3 {
		if i == 1 {
			farm.Pages[0].Touch() // the second check finds a change, the third none
		}
		lw, err := n.store.Watch(ctx, 1, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.sched.CheckNow(ctx, nil, lw); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := n.store.Watch(ctx, 1, w.ID)
	if err != nil || kept.Checks != 3 || kept.ChangeChecks != 1 {
		t.Fatalf("the watch after three checks: %+v, %v", kept, err)
	}
	v2, err := n.store.Latest(ctx, w.ID)
	if err != nil || v2.Seq != 2 {
		t.Fatalf("the newest version: %+v, %v", v2, err)
	}
	n.stop()
	// The node died before it kept the schedules in the cluster.
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	conn, err := cluster.Dial(dctx, cluster.Config{Name: "solo", Dir: natsDir, Shards: 4, Logger: slog.New(slog.DiscardHandler)})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	err = conn.DropSchedules(ctx)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}

	n2 := startNode(t, natsDir, t.TempDir())
	defer n2.stop()
	waitFor(t, "the rebuilt view", func() bool {
		info, err := n2.store.Track(ctx, w.ID)
		return err == nil && info.Latest == 2 && n2.node.Ready() == nil
	})
	got, err := n2.store.Watch(ctx, pet.AnyUser, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The check that found nothing new stored nothing: it is not known.
	if got.Checks != 2 || got.ChangeChecks != 1 || !got.LastCheck.Equal(v2.FetchedAt) || !got.LastChange.Equal(v2.FetchedAt) ||
		got.ETag != v2.ETag || len(got.Samples) != 1 || !got.Samples[0].Changed {
		t.Errorf("the watch in the rebuilt view: checks %d, changes %d, last check %v, last change %v, etag %q, samples %+v; want 2, 1, %v twice, %q, one change",
			got.Checks, got.ChangeChecks, got.LastCheck, got.LastChange, got.ETag, got.Samples, v2.FetchedAt, v2.ETag)
	}
}
