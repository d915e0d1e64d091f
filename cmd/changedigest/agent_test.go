package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
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
	if err := m.Store.CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	w, err = m.Store.UpdateWatch(ctx, w.UserID, w.ID, func(x *changedigest.Watch) error {
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
