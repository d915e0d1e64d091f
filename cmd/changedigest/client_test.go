package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/cluster"
)

// TestClientsEndToEnd: two polling clients (one the command, one in
// process) register with a running service, take staggered slots, and
// one of them finds a change that the server verifies and stores as
// detected by a client; the schedule is recomputed as they leave.
func TestClientsEndToEnd(t *testing.T) {
	m := mustServe(t)
	m.Clients.ClientGap, m.Clients.MinGap = 600*time.Millisecond, 100*time.Millisecond
	m.Clients.Poll = 200 * time.Millisecond
	ctx := context.Background()

	var version atomic.Int32
	version.Store(1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Scores</title></head><body><main><p>The score of the match is now %d to 1, in the second half.</p></main></body></html>`, version.Load())
	}))
	defer site.Close()

	users, _ := m.Store.Users(ctx)
	uid := users[0].ID
	w := &changedigest.Watch{UserID: uid, URL: site.URL + "/", Interval: 24 * time.Hour}
	if err := m.clusterStore().CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	firstVersion(t, m, w)
	token, _, err := m.clusterStore().CreateToken(ctx, uid, "client")
	if err != nil {
		t.Fatal(err)
	}
	base := m.Server.Render.Site()

	// A bad token is refused clearly.
	var errOut bytes.Buffer
	if code := Run(ctx, []string{"client", "--server", base, "--token", "nope"}, nil, &bytes.Buffer{}, &errOut); code == 0 || !strings.Contains(errOut.String(), "refused the API token") {
		t.Errorf("bad token: exit %d, %s", code, errOut.String())
	}

	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var cliOut, cliErr bytes.Buffer
	wg.Add(2)
	go func() {
		defer wg.Done()
		if code := Run(cctx, []string{"client", "--server", base, "--token", token, "--name", "cli", "--allow-private"}, nil, &cliOut, &cliErr); code != 0 {
			t.Errorf("client command: exit %d: %s", code, cliErr.String())
		}
	}()
	c := agent.NewClient(base, token)
	c.Name, c.Fetcher.AllowPrivate, c.HostGap = "inproc", true, 0
	c.Logger = slog.New(slog.DiscardHandler)
	go func() {
		defer wg.Done()
		if err := c.Run(cctx); err != nil {
			t.Errorf("client: %v", err)
		}
	}()
	waitFor(t, "two clients online", func() bool { return m.Clients.Online(uid) == 2 })
	slots := m.Clients.Slots(w)
	if len(slots) != 2 || slots[0].CrawlGap != 600*time.Millisecond || slots[1].DelayToStart != 300*time.Millisecond {
		t.Errorf("slots: %+v", slots)
	}
	time.Sleep(time.Second) // a few polls of an unchanged page: no report
	if st := m.Agent.Stats(w.ID); st.Reports != 0 {
		t.Errorf("reports of an unchanged page: %+v", st)
	}

	version.Store(2)
	waitFor(t, "a second version", func() bool {
		tr, _ := m.Store.Track(ctx, w.ID)
		return tr.Versions >= 2
	})
	waitFor(t, "the detection recorded", func() bool {
		got, _ := m.Store.Watch(ctx, uid, w.ID)
		return got.DetectedBy(2) == changedigest.DetectedByClient
	})
	stop()
	wg.Wait()
	if n := m.Clients.Online(uid); n != 0 {
		t.Errorf("%d clients online after both stopped", n)
	}
	if !strings.Contains(cliOut.String(), "stopped:") {
		t.Errorf("client output: %q", cliOut.String())
	}
	if st := m.Agent.Stats(w.ID); st.Confirmed != 1 || st.Refuted != 0 {
		t.Errorf("stats: %+v", st)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// firstVersion waits until the scheduler stored the first version of w
// (a new watch is due at once).
func firstVersion(t *testing.T, m *Main, w *changedigest.Watch) {
	t.Helper()
	waitFor(t, "the first version", func() bool {
		tr, err := m.Store.Track(context.Background(), w.ID)
		return err == nil && tr.Versions >= 1
	})
}

// TestClientsOnACluster: a polling client of a cluster's node is given
// the user's watches of every node; its report of a change of a watch
// another node serves is verified there and recorded as detected by a
// client.
func TestClientsOnACluster(t *testing.T) {
	a, b := startPair(t)
	a.Clients.ClientGap, a.Clients.MinGap = 600*time.Millisecond, 100*time.Millisecond
	a.Clients.Poll = 200 * time.Millisecond
	ctx := context.Background()
	var version atomic.Int32
	version.Store(1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Scores</title></head><body><main><p>The score of %s is now %d to 1, in the second half.</p></main></body></html>`, r.URL.Path, version.Load())
	}))
	defer site.Close()
	w := watchOn(t, a, b, site.URL, "match")
	waitFor(t, "the first version in b's view", func() bool {
		tr, err := b.Store.Track(ctx, w.ID)
		return err == nil && tr.Versions >= 1
	})
	cs := cluster.Store{Store: a.Store, Node: a.Node}
	token, _, err := cs.CreateToken(ctx, w.UserID, "client")
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	c := agent.NewClient(a.Server.Render.Site(), token)
	c.Name, c.Fetcher.AllowPrivate, c.HostGap = "inproc", true, 0
	c.Logger = slog.New(slog.DiscardHandler)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	waitFor(t, "the client online on a", func() bool { return a.Clients.Online(w.UserID) == 1 })
	waitFor(t, "the client polling the watch b serves", func() bool { return c.Fetches.Load() > 0 })

	version.Store(2)
	waitFor(t, "version 2, detected by a client", func() bool {
		got, err := b.Store.Watch(ctx, w.UserID, w.ID)
		return err == nil && got.DetectedBy(2) == changedigest.DetectedByClient
	})
	stop()
	if err := <-done; err != nil {
		t.Errorf("client: %v", err)
	}
	if st := a.Server.Agent.Stats(w.ID); st.Confirmed != 1 || st.Refuted != 0 {
		t.Errorf("stats read on a: %+v", st)
	}
}
