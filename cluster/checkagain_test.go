package cluster_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

// TestCheckDoneElsewhereRunsAgain: a node that takes a shard over
// schedules its watches from the state the node before kept (some
// minutes old), so it asks for checks of due times that node queued and
// had done. Such a check runs again at once, as a check of its own:
// before, JetStream dropped it as a duplicate and the node waited for an
// outcome that had gone to the node before, AckWait and 10 s more, one
// host at a time; or, when that check had stored a version, took its
// outcome for the check asked and left a later change of the page
// unread until the next check.
func TestCheckDoneElsewhereRunsAgain(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 1, Pages: 1, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	client := freeAddr(t)
	const ackWait = 20 * time.Second
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond,
		Lease: 2 * time.Second, AckWait: ackWait}, t.TempDir())
	defer a.stop()
	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second,
		AckWait: ackWait}, t.TempDir())
	defer b.stop()
	ctx := context.Background()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2
	})
	// Paused: checked here only, each under the due time the test gives.
	w := &changedigest.Watch{UserID: 1, URL: farm.URL(0), Paused: true}
	if err := a.conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		t.Fatal(err)
	}
	var owner *node
	waitFor(t, "the watch in its owner's view", func() bool {
		for _, n := range []*node{a, b} {
			if _, err := n.store.Watch(ctx, 1, w.ID); err == nil {
				owner = n
			}
		}
		return owner != nil
	})
	versions := 0
	check := func(n *node, due time.Time) (crawl.Outcome, time.Duration) {
		t.Helper()
		x := *w
		x.NextCheck = due
		began := time.Now()
		out, err := n.node.Check(ctx, &x)
		if err != nil {
			t.Fatalf("check of %s due %s on %s: %v", w, due.Format(time.StampMilli), n.conn.Config.Name, err)
		}
		took := time.Since(began)
		if out.Result == crawl.FirstVersion || out.Result == crawl.Changed {
			// As the scheduler's next check comes once the owner's view
			// holds the version (its view reads it from the stream when
			// another node's worker stored it).
			versions++
			waitFor(t, "the version in the owner's view", func() bool {
				info, err := owner.store.Track(ctx, w.ID)
				return err == nil && info.Latest == versions
			})
		}
		return out, took
	}
	due := time.Now().Add(-time.Hour).Truncate(time.Second)
	if out, _ := check(a, due); out.Result != crawl.FirstVersion {
		t.Fatalf("the first check: %v", out.Result)
	}
	due = due.Add(time.Minute)
	if out, _ := check(a, due); out.Result != crawl.NotModified && out.Result != crawl.Unchanged {
		t.Fatalf("the second check of an unchanged page: %v", out.Result)
	}

	// That check found no change: asked again, elsewhere, once the page
	// changed, it runs at once and finds the change.
	farm.Pages[0].Touch()
	out, took := check(b, due)
	if out.Result != crawl.Changed || took > ackWait/2 {
		t.Errorf("a check done elsewhere asked again: %v after %s; want changed at once (AckWait %s)", out.Result, took.Round(time.Millisecond), ackWait)
	}

	// That check stored a version: asked again, elsewhere, once the page
	// changed again, it stores the change, not the check's outcome.
	due = due.Add(time.Minute)
	farm.Pages[0].Touch()
	if out, _ := check(a, due); out.Result != crawl.Changed {
		t.Fatalf("a check of a changed page: %v", out.Result)
	}
	farm.Pages[0].Touch()
	if out, took := check(b, due); out.Result != crawl.Changed || took > ackWait/2 {
		t.Errorf("a check that stored a version asked again: %v after %s; want changed at once", out.Result, took.Round(time.Millisecond))
	}
	counts, dups, err := a.conn.VersionCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts[w.ID] != 4 || dups != 0 {
		t.Errorf("the track of record holds %d versions, %d due checks twice; want 4 (first, three changes), none", counts[w.ID], dups)
	}
	// Five checks, each a full read (the checks here send no validators).
	if _, full, _ := farm.Requests(); full != 5 {
		t.Errorf("the page was read in full %d times, want 5", full)
	}
}

// TestCheckQueuedElsewhereAwaited: a check asked for again while the one
// of the same due time is in the queue (waiting for a worker, or taken by
// one) waits for that one's outcome and does not fetch the page again.
func TestCheckQueuedElsewhereAwaited(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 1, Pages: 1, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	client := freeAddr(t)
	cfg := cluster.Config{HostGap: 10 * time.Millisecond, Lease: 2 * time.Second, AckWait: 20 * time.Second}
	ca, cb := cfg, cfg
	ca.Name, ca.Dir, ca.Client, ca.Shards = "a", t.TempDir(), client, 4
	cb.Name, cb.URL = "b", "nats://"+client
	// No worker: the checks wait in the queue.
	a := startNodeWorking(t, ca, t.TempDir(), false)
	defer a.stop()
	b := startNodeWorking(t, cb, t.TempDir(), false)
	defer b.stop()
	ctx := context.Background()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2
	})
	w := &changedigest.Watch{UserID: 1, URL: farm.URL(0), Paused: true}
	if err := a.conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		t.Fatal(err)
	}
	x := *w
	x.NextCheck = time.Now().Add(-time.Hour)
	type result struct {
		out crawl.Outcome
		err error
	}
	results := make(chan result, 2)
	for _, n := range []*node{a, b} {
		go func() {
			y := x
			out, err := n.node.Check(ctx, &y)
			results <- result{out, err}
		}()
		waitFor(t, "the check in the queue", func() bool {
			st, err := a.conn.Status(ctx, false)
			return err == nil && st.Queued+uint64(st.Running) == 1
		})
	}
	time.Sleep(200 * time.Millisecond) // b looks at the queue
	c := startNodeWith(t, cluster.Config{Name: "c", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second},
		filepath.Join(t.TempDir(), "c"))
	defer c.stop()
	for range 2 {
		select {
		case r := <-results:
			if r.err != nil || r.out.Result != crawl.FirstVersion {
				t.Errorf("a check asked twice: %v, %v; want the first version", r.out.Result, r.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the checks did not come back")
		}
	}
	if total, _, _ := farm.Requests(); total != 1 {
		t.Errorf("the page was requested %d times, want once", total)
	}
}
