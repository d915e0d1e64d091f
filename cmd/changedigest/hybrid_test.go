package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
)

// TestHybridMeasure measures the hybrid detection of Meegahapola et al.
// (Fig. 4) on loopback, on a compressed clock (1 s stands for 1 min): a
// page changing as a Poisson process (mean 3 s), the server polling it
// every minute, and 0, 1, 5 and 10 polling clients with a time gap of
// 1 s. It reports the mean time from a change to its stored version and
// each client's fetches. Set CHANGEDIGEST_HYBRID=1 to run it (4 min).
func TestHybridMeasure(t *testing.T) {
	if os.Getenv("CHANGEDIGEST_HYBRID") == "" {
		t.Skip("a measurement: set CHANGEDIGEST_HYBRID=1 to run it")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "clients | changes | detected | mean detection | fetches per client per minute\n")
	for _, k := range []int{0, 1, 5, 10} {
		run := 30 * time.Second
		if k == 0 {
			run = 150 * time.Second // the server alone polls once a minute
		}
		mean, changes, detected, perClient := hybridRun(t, k, run)
		fmt.Fprintf(&b, "%d | %d | %d | %.2f s | %.1f\n", k, changes, detected, mean.Seconds(), perClient)
	}
	t.Log("\n" + b.String())
}

func hybridRun(t *testing.T, k int, run time.Duration) (time.Duration, int, int, float64) {
	m := mustServe(t)
	m.Clients.Gap = func(*changedigest.Watch) time.Duration { return time.Second }
	m.Clients.Poll = 500 * time.Millisecond
	ctx := context.Background()

	var mu sync.Mutex
	version := 0
	var changedAt []time.Time
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		v := version
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>v%d</title></head><body><main><p>The live score is now %d, as the match goes on in the second half.</p></main></body></html>`, v, v)
	}))
	defer site.Close()
	users, _ := m.Store.Users(ctx)
	uid := users[0].ID
	w := &changedigest.Watch{UserID: uid, URL: site.URL + "/", Interval: time.Minute}
	if err := m.Store.CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	firstVersion(t, m, w)
	token, _, _ := m.Store.CreateToken(ctx, uid, "hybrid")
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	clients := make([]*agent.Client, k)
	for i := range k {
		c := agent.NewClient(m.Server.Render.Site(), token)
		c.Name, c.Fetcher.AllowPrivate, c.HostGap = strconv.Itoa(i), true, 0
		c.Logger = slog.New(slog.DiscardHandler)
		clients[i] = c
		wg.Go(func() { c.Run(cctx) })
	}
	waitFor(t, "clients online", func() bool { return m.Clients.Online(uid) == k })
	// Let the schedule settle (every client has its slots), then change.
	time.Sleep(time.Second)
	for _, c := range clients {
		c.Fetches.Store(0)
	}
	rng := rand.New(rand.NewPCG(uint64(k), 1))
	begin := time.Now()
	for time.Since(begin) < run {
		time.Sleep(time.Duration(rng.ExpFloat64() * float64(3*time.Second)))
		mu.Lock()
		version++
		changedAt = append(changedAt, time.Now())
		mu.Unlock()
	}
	time.Sleep(2 * time.Second) // the last change's check
	var fetches int64
	for _, c := range clients {
		fetches += c.Fetches.Load()
	}
	elapsed := time.Since(begin)
	stop()
	wg.Wait()

	vs, err := m.Store.Versions(ctx, w.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	// The first stored version with number ≥ j detects change j.
	var sum time.Duration
	detected := 0
	mu.Lock()
	defer mu.Unlock()
	for j := 1; j <= len(changedAt); j++ {
		var first time.Time
		for _, v := range vs {
			n, _ := strconv.Atoi(strings.TrimPrefix(v.Title, "v"))
			if n >= j && v.FetchedAt.After(changedAt[j-1]) && (first.IsZero() || v.FetchedAt.Before(first)) {
				first = v.FetchedAt
			}
		}
		if !first.IsZero() {
			sum += first.Sub(changedAt[j-1])
			detected++
		}
	}
	perClient := 0.0
	if k > 0 {
		perClient = float64(fetches) / float64(k) / elapsed.Minutes()
	}
	if detected == 0 {
		return 0, len(changedAt), 0, perClient
	}
	return sum / time.Duration(detected), len(changedAt), detected, perClient
}
