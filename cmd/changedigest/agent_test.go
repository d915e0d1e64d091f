package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/internal/testenv"
)

// mustServe runs the service on a free port, fetching from loopback.
func mustServe(t *testing.T) *Main {
	t.Helper()
	m := NewMain()
	m.Stdout = &bytes.Buffer{}
	m.Logger = slogDiscard()
	m.Config.data = t.TempDir()
	m.Config.Addr = "127.0.0.1:0"
	m.Config.allowPrivate = true
	m.Config.HostGap = 10 * time.Millisecond
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return m
}

// TestAgentEndToEnd: a page served from loopback with the agent snippet,
// opened in headless Chromium after it changed, leads to a verified new
// version within seconds, recorded as detected by the page agent.
func TestAgentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs Chromium")
	}
	bin := testenv.Tool(t, "chromium")
	m := mustServe(t)
	ctx := context.Background()

	var version atomic.Int32
	version.Store(1)
	var snippet atomic.Value
	snippet.Store("")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/news" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Club news</title></head><body>
<header><h1>The chess club</h1></header>
<main><article><h2>Next meeting</h2><p>The next meeting is on Tuesday number %d at the library, with a simultaneous exhibition.</p></article></main>
<footer>Contact the secretary</footer>%s</body></html>`, version.Load(), snippet.Load())
	}))
	defer site.Close()

	users, err := m.Store.Users(ctx)
	if err != nil || len(users) != 1 {
		t.Fatalf("users: %v, %v", users, err)
	}
	w := &changedigest.Watch{UserID: users[0].ID, URL: site.URL + "/news", Interval: 24 * time.Hour}
	if err := m.clusterStore().CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	w, err = m.clusterStore().UpdateWatch(ctx, w.UserID, w.ID, func(x *changedigest.Watch) error {
		x.AgentKey = agent.NewKey(x.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snippet.Store(agent.Snippet(m.Server.Render.URL("/agent.js"), w.AgentKey))
	firstVersion(t, m, w)

	version.Store(2)
	start := time.Now()
	out, err := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", site.URL+"/news").CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		tr, err := m.Store.Track(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Versions >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new version 20 s after the page was viewed; agent stats %+v", m.Agent.Stats(w.ID))
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	// The detection is recorded just after the version.
	time.Sleep(200 * time.Millisecond)
	got, err := m.Store.Watch(ctx, w.UserID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if by := got.DetectedBy(2); by != changedigest.DetectedByAgent {
		t.Errorf("version 2 detected by %q, want agent (detections %+v)", by, got.Detections)
	}
	snap, err := m.Store.Version(ctx, w.ID, 2)
	if err != nil || len(snap.Changes) == 0 || len(snap.Segments) == 0 || !strings.Contains(snap.Segments[0].Text, "number 2") {
		t.Errorf("version 2 changes: %+v, %v", snap, err)
	}
	st := m.Agent.Stats(w.ID)
	if st.Digester != 1 || st.Accepted != 1 || st.Triggered != 1 || st.Confirmed != 1 {
		t.Errorf("agent stats = %+v", st)
	}
	t.Logf("page viewed to new version stored: %s (Chromium start-up included)", took.Round(10*time.Millisecond))
}

// TestAgentEndToEndOnACluster: as TestAgentEndToEnd, on a cluster of two
// serve nodes, with the page's snippet naming the node that does not
// serve the watch: the agent request and the report go to that node,
// which hands them to the serving node, whose check stores the new
// version and records it as detected by the page agent.
func TestAgentEndToEndOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs Chromium")
	}
	bin := testenv.Tool(t, "chromium")
	ctx := context.Background()
	a, b := startPair(t)

	var version atomic.Int32
	version.Store(1)
	var snippet atomic.Value
	snippet.Store("")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Club news</title></head><body>
<main><article><h2>Next meeting</h2><p>The next meeting of %s is on Tuesday number %d at the library.</p></article></main>%s</body></html>`,
			r.URL.Path, version.Load(), snippet.Load())
	}))
	defer site.Close()
	cs := cluster.Store{Store: a.Store, Node: a.Node}
	w := watchOn(t, a, b, site.URL, "news")
	w, err := cs.UpdateWatch(ctx, w.UserID, w.ID, func(x *changedigest.Watch) error {
		x.AgentKey = agent.NewKey(x.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snippet.Store(agent.Snippet(a.Server.Render.URL("/agent.js"), w.AgentKey))
	waitFor(t, "the first version and the agent key in b's view", func() bool {
		x, err := b.Store.Watch(ctx, w.UserID, w.ID)
		tr, terr := b.Store.Track(ctx, w.ID)
		return err == nil && terr == nil && x.AgentKey == w.AgentKey && tr.Versions >= 1
	})

	version.Store(2)
	viewed := time.Now()
	out, err := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", w.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	waitFor(t, "version 2, detected by the page agent", func() bool {
		x, err := b.Store.Watch(ctx, w.UserID, w.ID)
		return err == nil && x.DetectedBy(2) == changedigest.DetectedByAgent
	})
	t.Logf("page viewed to new version stored and confirmed: %s (Chromium start-up included)", time.Since(viewed).Round(10*time.Millisecond))
	for name, m := range map[string]*Main{"a": a, "b": b} {
		st := m.Server.Agent.Stats(w.ID)
		if st.Digester != 1 || st.Accepted != 1 || st.Triggered != 1 || st.Confirmed != 1 {
			t.Errorf("%s: agent stats = %+v", name, st)
		}
	}
	if st := a.Agent.Stats(w.ID); st.Served != 0 {
		t.Errorf("a's own manager served the watch's agent: %+v", st)
	}
}

// startPair runs two serve nodes of a cluster in process, a with the
// embedded NATS server, and waits until each serves two of the 4 shards.
func startPair(t *testing.T) (a, b *Main) {
	t.Helper()
	ctx := context.Background()
	nats := freePorts(t, 1)[0]
	start := func(f clusterFlags) *Main {
		m := NewMain()
		m.Stdout, m.Logger = &bytes.Buffer{}, slogDiscard()
		m.Config.data, m.Config.Addr, m.Config.allowPrivate = t.TempDir(), "127.0.0.1:0", true
		m.Config.HostGap = 10 * time.Millisecond
		m.Config.Cluster = f
		m.Config.Cluster.AckWait = time.Minute
		if err := m.Run(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	a = start(clusterFlags{Name: "cd", Node: "a", NATSListen: nats, Shards: 4})
	b = start(clusterFlags{NATS: "nats://" + nats, Node: "b"})
	waitFor(t, "two shards served by each node", func() bool {
		return len(a.Node.Info().Ready) == 2 && len(b.Node.Info().Ready) == 2
	})
	return a, b
}

// watchOn defines watches of the cluster's user on a, at site's paths
// /name0, /name1, …, until one falls in a shard b serves, and returns it.
func watchOn(t *testing.T, a, b *Main, site, name string) *changedigest.Watch {
	t.Helper()
	ctx := context.Background()
	users, err := a.Cluster.Users(ctx)
	if err != nil || len(users) != 1 {
		t.Fatalf("users: %v, %v", users, err)
	}
	cs := cluster.Store{Store: a.Store, Node: a.Node}
	for i := range 8 {
		w := &changedigest.Watch{UserID: users[0].ID, URL: fmt.Sprintf("%s/%s%d", site, name, i), Interval: 24 * time.Hour}
		if err := cs.CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(b.Node.Info().Shards, cluster.ShardOf(w.ID, 4)) {
			return w
		}
	}
	t.Fatal("no watch in b's shards")
	return nil
}
