package notify

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDelivery stores n changed versions spread over 20 watches of one
// user with one signed webhook channel on loopback and measures, for each,
// the time from the version's commit to the receiver's answer being
// recorded. With live set, versions are stored one by one while the
// dispatcher runs (latency); without, they are all stored first and the
// dispatcher then delivers the backlog (throughput).
func benchDelivery(b *testing.B, n int, live bool) {
	ctx := context.Background()
	store := pet.New(b.TempDir())
	store.Logger = slog.New(slog.DiscardHandler)
	if err := store.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	u := &changedigest.User{Name: "ann", DigestHour: -1}
	if err := store.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	var ws []*changedigest.Watch
	for i := range 20 {
		w := &changedigest.Watch{UserID: u.ID, URL: fmt.Sprintf("http://example.org/%d", i)}
		if err := store.CreateWatch(ctx, w); err != nil {
			b.Fatal(err)
		}
		ws = append(ws, w)
	}
	var received sync.WaitGroup
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer recv.Close()
	if err := store.CreateChannel(ctx, &changedigest.Channel{UserID: u.ID, Kind: changedigest.ChannelWebhook, URL: recv.URL, Secret: "s"}); err != nil {
		b.Fatal(err)
	}
	d := NewDispatcher(store, nil, nil)
	d.Logger = slog.New(slog.DiscardHandler)
	if w := os.Getenv("BENCH_WORKERS"); w != "" {
		d.Workers, _ = strconv.Atoi(w)
	}
	var mu sync.Mutex
	var lat []time.Duration
	d.Delivered = func(_ *changedigest.Delivery, since time.Duration) {
		mu.Lock()
		lat = append(lat, since)
		mu.Unlock()
		received.Done()
	}
	store.Notified = d.Wake
	received.Add(n)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	start := func() { go func() { done <- d.Run(runCtx) }() }
	if live {
		start()
	}
	add := func(i int) {
		w := ws[i%len(ws)]
		text := fmt.Sprintf("Version %d of the page says something new.", i)
		snap := &changedigest.Snapshot{FetchedAt: time.Now(), Status: 200, Kind: changedigest.KindPage,
			Segments: []changedigest.Segment{{Index: 0, Hash: fmt.Sprintf("%032x", i+1), Text: text, End: len(text)}},
			Changes:  []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: text}}}
		if _, err := store.AddVersion(ctx, w.ID, snap, []byte(text)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu0, t0 := cpuTime(), time.Now()
	for i := range n {
		add(i)
		if live {
			time.Sleep(5 * time.Millisecond) // versions come one at a time
		}
	}
	var t1 time.Time
	if !live {
		t1, cpu0 = time.Now(), cpuTime()
		start()
	}
	received.Wait()
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	cancel()
	<-done
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	if live {
		b.ReportMetric(q(0.5), "p50_ms")
		b.ReportMetric(q(0.99), "p99_ms")
	} else {
		b.ReportMetric(float64(n)/time.Since(t1).Seconds(), "deliveries/s")
	}
	b.ReportMetric(float64(cpu)/float64(n)/1e3, "cpu_us/op")
	b.Logf("%d deliveries in %s (live=%v), CPU %s", n, elapsed.Round(time.Millisecond), live, cpu.Round(time.Millisecond))
}

// BenchmarkDeliveryLatency: go test ./notify -run XXX -bench DeliveryLatency -benchtime 1x
func BenchmarkDeliveryLatency(b *testing.B) {
	for b.Loop() {
		benchDelivery(b, 300, true)
	}
}

// BenchmarkDeliveryBacklog: go test ./notify -run XXX -bench DeliveryBacklog -benchtime 1x
func BenchmarkDeliveryBacklog(b *testing.B) {
	for b.Loop() {
		benchDelivery(b, 1000, false)
	}
}
