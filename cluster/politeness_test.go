package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
)

// TestHostGapFollowsTheAnswer checks the cluster's politeness: one
// request at a time to a host, and a gap after each answer of GapFactor
// times what the answer took (5 ms here: 50 ms), not the whole HostGap.
func TestHostGapFollowsTheAnswer(t *testing.T) {
	const pages = 8
	type span struct{ start, end time.Time }
	var (
		mu      sync.Mutex
		spans   []span
		running int
		overlap bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		running++
		overlap = overlap || running > 1
		start := time.Now()
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		fmt.Fprintf(w, "<html><body><h1>Page %s</h1><p>Some text that stays the same on this page.</p></body></html>", r.URL.Path)
		mu.Lock()
		running--
		spans = append(spans, span{start, time.Now()})
		mu.Unlock()
	}))
	defer srv.Close()

	n := startNodeWith(t, cluster.Config{Name: "solo", Dir: t.TempDir(), Shards: 4, HostGap: 3 * time.Second, GapFactor: 10},
		filepath.Join(t.TempDir(), "view"))
	defer n.stop()
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: fmt.Sprintf("%s/p%d", srv.URL, i)}
	}
	if err := n.conn.AddWatches(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a check of every page", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(spans) >= pages
	})
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Error("two requests to the host ran at once")
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
	for i := 1; i < len(spans); i++ {
		if gap := spans[i].start.Sub(spans[i-1].end); gap < 50*time.Millisecond {
			t.Errorf("%s between requests %d and %d, want at least 10 × 5 ms", gap, i-1, i)
		}
	}
	// With the full 3 s gap the 8 requests would take 21 s.
	if took := spans[len(spans)-1].start.Sub(spans[0].start); took > 10*time.Second {
		t.Errorf("8 requests to a host answering in 5 ms took %s", took)
	}
}
