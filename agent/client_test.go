package agent

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeService is the client API of a server as a polling client sees
// it, with one watch whose stored version the test sets.
type fakeService struct {
	mu      sync.Mutex
	page    string
	version int
	body    string // the stored version's body
	begin   time.Time
	clients int64
	reports int
}

func (f *fakeService) store(body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	f.body = body
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/clients":
		f.clients++
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": f.clients, "poll": "1h"})
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/assignments"):
		var id int64
		fmt.Sscanf(r.URL.Path, "/api/v1/clients/%d/assignments", &id)
		sum := md5.Sum([]byte(f.body))
		gap := 30 * time.Millisecond
		a := Assignment{WatchID: 1, URL: f.page, TimeGap: gap, CrawlGap: 3 * gap, DelayToStart: time.Duration(id-1) * gap,
			Begin: f.begin, Clients: 3, Index: int(id - 1), Version: f.version, BodyHash: hex.EncodeToString(sum[:]),
			Summary: Summarize([]byte(f.body), "text/html").String()}
		json.NewEncoder(w).Encode(map[string]any{"assignments": []Assignment{a}})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reports"):
		f.reports++
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func scorePage(n int) string {
	return fmt.Sprintf(`<html><head><title>Scores</title></head><body><main><p>The score of the match is now %d to 1, in the second half.</p></main></body></html>`, n)
}

// TestClientsAskBeforeReporting: clients whose assignments name an older
// version than the one stored (the server's own check stored the
// change) ask again before reporting and do not report a change already
// stored; a change not yet stored is still reported.
func TestClientsAskBeforeReporting(t *testing.T) {
	var pageMu sync.Mutex
	page := scorePage(1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageMu.Lock()
		defer pageMu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer site.Close()
	setPage := func(s string) {
		pageMu.Lock()
		defer pageMu.Unlock()
		page = s
	}
	svc := &fakeService{page: site.URL + "/", begin: time.Now()}
	svc.store(scorePage(1))
	api := httptest.NewServer(svc)
	defer api.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	clients := make([]*Client, 3)
	for i := range clients {
		c := NewClient(api.URL, "token")
		c.Fetcher.AllowPrivate, c.HostGap = true, 0
		c.Logger = slog.New(slog.DiscardHandler)
		clients[i] = c
		wg.Go(func() {
			if err := c.Run(ctx); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
		})
	}
	// waitFetches waits until every client fetched the page n more times.
	waitFetches := func(n int64) {
		t.Helper()
		base := make([]int64, len(clients))
		for i, c := range clients {
			base[i] = c.Fetches.Load()
		}
		deadline := time.Now().Add(10 * time.Second)
		for i, c := range clients {
			for c.Fetches.Load() < base[i]+n {
				if time.Now().After(deadline) {
					t.Fatalf("client %d fetched %d times, want %d more", i, c.Fetches.Load(), n)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	waitFetches(2)

	// The page changes and the server's own check stores it at once:
	// the clients' assignments still name version 1.
	setPage(scorePage(2))
	svc.store(scorePage(2))
	waitFetches(3)
	svc.mu.Lock()
	n := svc.reports
	svc.mu.Unlock()
	if n != 0 {
		t.Errorf("%d reports of a change already stored, want none", n)
	}

	// A change the server has not stored is reported.
	setPage(scorePage(3))
	waitFetches(2)
	svc.mu.Lock()
	n = svc.reports
	svc.mu.Unlock()
	if n == 0 {
		t.Error("a change not stored was not reported")
	}
	stop()
	wg.Wait()
}
