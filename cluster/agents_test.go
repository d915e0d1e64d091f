package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
)

// TestAgentWorkOnTheServingNode: a page agent's request and report that
// reach a node which does not serve the watch are done by the node that
// does. The digester and its token come from there, the report makes the
// watch due there, and the check that follows (run by the other node's
// worker: the serving node runs none) confirms the report: the watch
// records that the page agent detected its new version, and the counts
// read on either node say so. A polling client's comparison reads the
// serving node's newest version.
func TestAgentWorkOnTheServingNode(t *testing.T) {
	var edition atomic.Int32
	page := func(path string) string {
		return fmt.Sprintf("<html><head><title>Shop %s</title></head><body><main><p>Open today, edition %d.</p></main></body></html>", path, edition.Load())
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page(r.URL.Path))
	}))
	defer site.Close()
	a, b, w := agentPair(t, site.URL)
	ctx := context.Background()
	key := agentOn(t, a, b, w)

	edition.Store(1)
	js, _, err := a.agents.ScriptEncoded(ctx, key, false)
	if err != nil || agent.IsVoid(js) {
		t.Fatalf("agent request on a: void %v, %v; want the digester", agent.IsVoid(js), err)
	}
	s := string(js)
	i := strings.Index(s, `T = "`)
	if i < 0 {
		t.Fatalf("no token in the digester")
	}
	tok := s[i+5:]
	tok = tok[:strings.IndexByte(tok, '"')]
	path := strings.TrimPrefix(w.URL, site.URL)
	err = a.agents.Report(ctx, agent.ReportIn{Token: tok, URL: w.URL, Summary: agent.Summarize([]byte(page(path)), "text/html").String(),
		Origin: site.URL, Addr: "192.0.2.1"})
	if err != nil {
		t.Fatalf("report on a: %v", err)
	}
	if err := a.agents.Report(ctx, agent.ReportIn{Token: tok, URL: w.URL, Summary: agent.Summarize([]byte(page(path)), "text/html").String(),
		Origin: site.URL, Addr: "192.0.2.2"}); changedigest.ErrorCode(err) != changedigest.EFORBIDDEN {
		t.Errorf("the same token again, on a: %v; want it refused as used", err)
	}
	waitFor(t, "the reported version, detected by the page agent", func() bool {
		x, err := b.store.Watch(ctx, 1, w.ID)
		return err == nil && len(x.Detections) == 1 && x.Detections[0].Seq == 2 && x.Detections[0].By == changedigest.DetectedByAgent
	})
	// The detection is the watch's definition's: an edit of the watch on
	// another node keeps it.
	if _, err := (cluster.Store{Store: a.store, Node: a.node}).UpdateWatch(ctx, 1, w.ID, func(x *changedigest.Watch) error {
		x.Title = "Shop"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the edit in b's view, with the detection", func() bool {
		x, err := b.store.Watch(ctx, 1, w.ID)
		return err == nil && x.Title == "Shop" && x.DetectedBy(2) == changedigest.DetectedByAgent
	})
	for name, n := range map[string]*node{"a": a, "b": b} {
		st := n.agents.Stats(w.ID)
		if st.Served != 1 || st.Digester != 1 || st.Accepted != 1 || st.Confirmed != 1 || st.Refuted != 0 {
			t.Errorf("%s: the agent's counts for the watch: %+v", name, st)
		}
	}
	seq, hash, sum, err := a.agents.Latest(ctx, w.ID)
	if err != nil || seq != 2 || hash == "" || sum != agent.Summarize([]byte(page(path)), "text/html") {
		t.Errorf("latest for polling clients, on a: %d %q %+v, %v", seq, hash, sum, err)
	}
	if _, _, err := a.agents.ScriptEncoded(ctx, fmt.Sprintf("%d-wrong", w.ID), false); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("a wrong key on a: %v; want not found", err)
	}
}

// agentPair starts nodes a (with a worker) and b (without: the checks of
// its shards are run by a's worker), two shards each, defines watches of
// site's pages, and returns one that b serves, once b's view holds its
// first version.
func agentPair(t testing.TB, site string) (a, b *node, w *changedigest.Watch) {
	t.Helper()
	client := freeAddr(t)
	a = startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	t.Cleanup(a.stop)
	waitFor(t, "a serving every shard", func() bool { return len(a.node.Info().Ready) == 4 })
	b = startNodeWorking(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir(), false)
	t.Cleanup(b.stop)
	waitFor(t, "two shards each", func() bool { return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2 })
	ctx := context.Background()
	ws := make([]*changedigest.Watch, 8)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: fmt.Sprintf("%s/p%d", site, i)}
	}
	if err := a.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	for _, x := range ws {
		if slices.Contains(b.node.Info().Shards, cluster.ShardOf(x.ID, 4)) {
			w = x
			break
		}
	}
	if w == nil {
		t.Fatal("no watch in b's shards")
	}
	waitFor(t, "the first version in b's view", func() bool {
		info, err := b.store.Track(ctx, w.ID)
		return err == nil && info.Latest == 1
	})
	return a, b, w
}

// agentOn turns the page agent of w on through node a, waits until the
// view of b, which serves w, has it, and returns its key.
func agentOn(t testing.TB, a, b *node, w *changedigest.Watch) string {
	t.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("%d-s3cretk3y", w.ID)
	if _, err := (cluster.Store{Store: a.store, Node: a.node}).UpdateWatch(ctx, 1, w.ID, func(x *changedigest.Watch) error {
		x.AgentKey = key
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent on in b's view", func() bool {
		x, err := b.store.Watch(ctx, 1, w.ID)
		return err == nil && x.AgentKey == key
	})
	return key
}

// BenchmarkAgentRequest times an agent request (the digester, gzipped, as
// browsers get it) on the node serving the watch and on another node,
// which hands it over: wall time per request on loopback, both nodes in
// this process.
func BenchmarkAgentRequest(b *testing.B) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><body><main><p>Open today.</p></main></body></html>")
	}))
	defer site.Close()
	na, nb, w := agentPair(b, site.URL)
	ctx := context.Background()
	key := agentOn(b, na, nb, w)
	for _, bc := range []struct {
		name string
		n    *node
	}{{"serving", nb}, {"handed-over", na}} {
		b.Run(bc.name, func(b *testing.B) {
			cpu := processCPU()
			for b.Loop() {
				if _, _, err := bc.n.agents.ScriptEncoded(ctx, key, true); err != nil {
					b.Fatal(err)
				}
			}
			// Both nodes and the NATS server are this process.
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCheckNowOnTheServingNode: "check now" of a watch asked for on a node
// that does not serve it is run by the serving node's scheduler, which
// keeps the watch's schedule: the watch's last check and count move
// there, and the report comes back to the asking node.
func TestCheckNowOnTheServingNode(t *testing.T) {
	var edition atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><main><p>Edition %d of %s.</p></main></body></html>", edition.Load(), r.URL.Path)
	}))
	defer site.Close()
	a, b, w := agentPair(t, site.URL)
	ctx := context.Background()
	before, err := b.store.Watch(ctx, 1, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	edition.Store(1)
	var rep crawl.Report
	sum, err := cluster.Checker{Node: a.node, Local: a.sched}.CheckNow(ctx, func(r crawl.Report) { rep = r }, w)
	if err != nil || sum.Checked != 1 || sum.Changed != 1 || rep.Err != nil || rep.Outcome.Result != crawl.Changed || rep.Watch == nil {
		t.Fatalf("check now on a: %+v, report %+v, %v", sum, rep, err)
	}
	after, err := b.store.Watch(ctx, 1, w.ID)
	if err != nil || after.Checks != before.Checks+1 || !after.LastCheck.After(before.LastCheck) || after.ChangeChecks != before.ChangeChecks+1 {
		t.Errorf("the serving node's schedule: checks %d → %d, change checks %d → %d, last check %s → %s, %v",
			before.Checks, after.Checks, before.ChangeChecks, after.ChangeChecks, before.LastCheck, after.LastCheck, err)
	}
	if info, err := b.store.Track(ctx, w.ID); err != nil || info.Latest != 2 {
		t.Errorf("the serving node's track: %+v, %v", info, err)
	}
}
