package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// TestFullDiskDashboard runs the server with its store on a real 2 MB
// filesystem and fills it: pages, feeds and search go on, the dashboard
// says that storage is full, and the notice goes once space comes back
// and a version is stored.
func TestFullDiskDashboard(t *testing.T) {
	dir := testenv.SmallFS(t, 2<<20)
	e := mustServerIn(t, dir)
	u := e.mustUser("alice", "correct horse battery")
	w := e.mustWatch(u, "https://example.org/news")
	c := e.login("alice", "correct horse battery")
	ctx := context.Background()

	page := func(i int) string {
		var b strings.Builder
		b.WriteString("<html><body>")
		for j := range 40 {
			fmt.Fprintf(&b, "<p>Report%d number %d: %x %x %x.</p>\n", i, j, i*7919+j, j*104729+i, i*j+1)
		}
		return b.String() + "</body></html>"
	}
	var full bool
	for i := range 1000 {
		body := page(i)
		snap := e.addVersionErr(w, body)
		if snap == nil {
			full = true
			break
		}
	}
	if !full {
		t.Fatal("1000 versions fitted in 2 MB: the test no longer fills the disk")
	}
	resp, body := c.get("/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard on a full disk: status %d", resp.StatusCode)
	}
	mustContain(t, body, "Storage is full")
	if resp, _ := c.get(fmt.Sprintf("/watches/%d", w.ID)); resp.StatusCode != http.StatusOK {
		t.Errorf("watch page on a full disk: status %d", resp.StatusCode)
	}
	if resp, body := c.get("/search?q=Report1"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Report1") {
		t.Errorf("search on a full disk: status %d", resp.StatusCode)
	}
	if resp, _ := c.get("/feeds/" + u.FeedToken + "/atom.xml"); resp.StatusCode != http.StatusOK {
		t.Errorf("feed on a full disk: status %d", resp.StatusCode)
	}

	// Space comes back; the index is reopened for writing once its
	// retry time has passed.
	testenv.ResizeFS(t, dir, 64<<20)
	e.setNow(e.clock().Add(pet.DefaultIndexRetry + time.Second))
	if e.addVersionErr(w, page(5000)) == nil {
		t.Fatal("no version stored after space came back")
	}
	_, body = c.get("/")
	if strings.Contains(body, "Storage is full") {
		t.Error("the dashboard still says storage is full after a version was stored")
	}
	if _, err := e.store.Latest(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
}

// addVersionErr is addVersion that returns nil when the store is full.
func (e *testEnv) addVersionErr(w *changedigest.Watch, body string) (snap *changedigest.Snapshot) {
	e.t.Helper()
	ctx := context.Background()
	prev, err := e.store.Latest(ctx, w.ID)
	if err == nil {
		prevBody, err := e.store.Body(ctx, w.ID, prev.Seq)
		if err != nil {
			e.t.Fatal(err)
		}
		snap, err = e.seg.Detect(segmenter.Input{Body: []byte(body), Prev: prev, PrevBody: prevBody})
		if err != nil {
			e.t.Fatal(err)
		}
	} else if snap, err = e.seg.Detect(segmenter.Input{Body: []byte(body)}); err != nil {
		e.t.Fatal(err)
	}
	snap.FetchedAt, snap.Status = e.clock(), 200
	if _, err := e.store.AddVersion(ctx, w.ID, snap, []byte(body)); errors.Is(err, pet.ErrNoSpace) {
		return nil
	} else if err != nil {
		e.t.Fatal(err)
	}
	return snap
}
