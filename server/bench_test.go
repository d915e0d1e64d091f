package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// feedFixture fills a user's track with change events (a profile match
// in some) and returns the user's feed URL.
func feedFixture(b testing.TB, events int) (*testEnv, string) {
	e := mustServer(b)
	u := e.mustUser("ann", "correct horse")
	prof := &changedigest.Profile{UserID: u.ID, Interests: []changedigest.Interest{
		{Term: "football", Source: "foaf:interest", Weight: 1}, {Term: "election", Source: "foaf:interest", Weight: 1}}}
	if err := e.store.PutProfile(context.Background(), prof, nil); err != nil {
		b.Fatal(err)
	}
	var ws []*changedigest.Watch
	for i := range 5 {
		ws = append(ws, e.mustWatch(u, fmt.Sprintf("https://news%d.example.org/", i), "news"))
	}
	words := []string{"soccer", "primary", "library", "bakery", "council", "rugby", "museum", "harbour"}
	page := func(v int) string {
		var sb strings.Builder
		sb.WriteString("<html><head><title>News</title></head><body><main>")
		for s := 0; s < 12; s++ {
			fmt.Fprintf(&sb, "<article><h2>Story %d</h2><p>Today the %s report number %d says the %s will open again on Saturday after the works.</p></article>",
				s, words[(s+v)%len(words)], v*31+s, words[(s*3+v)%len(words)])
		}
		sb.WriteString("</main></body></html>")
		return sb.String()
	}
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for v := 0; v <= events/len(ws); v++ {
		for i, w := range ws {
			e.setNow(t0.Add(time.Duration(v*len(ws)+i) * time.Minute))
			e.addVersion(w, page(v+i))
		}
	}
	u, err := e.store.User(context.Background(), u.ID)
	if err != nil {
		b.Fatal(err)
	}
	return e, e.http.URL + "/feeds/" + u.FeedToken + "/atom.xml"
}

// BenchmarkFeedEndpoint measures one feed request end to end (store
// query, matching, rendering, HTTP) for a user with 100 change events.
func BenchmarkFeedEndpoint(b *testing.B) {
	_, url := feedFixture(b, 100)
	get := func() int {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return int(n)
	}
	b.SetBytes(int64(get()))
	for b.Loop() {
		get()
	}
}

// BenchmarkFeedEndpointNotModified measures a feed reader's conditional
// request for the same feed when nothing changed (answered 304).
func BenchmarkFeedEndpointNotModified(b *testing.B) {
	_, url := feedFixture(b, 100)
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	tag := resp.Header.Get("ETag")
	for b.Loop() {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("If-None-Match", tag)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			b.Fatalf("status %d, want 304", resp.StatusCode)
		}
	}
}

// BenchmarkFeedEndpointLoad runs 16 concurrent feed readers for the
// benchmark time and reports the latency percentiles and throughput.
func BenchmarkFeedEndpointLoad(b *testing.B) {
	_, url := feedFixture(b, 100)
	const clients = 16
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var mu sync.Mutex
	var lat []time.Duration
	start := time.Now()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := max(b.N/clients, 1)
	for range clients {
		wg.Go(func() {
			var mine []time.Duration
			for range per {
				t := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
}
