package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// TestMain lets the crash test run this test binary as the service:
// with CHANGEDIGEST_TEST_MAIN set, it is changedigest with those arguments.
func TestMain(m *testing.M) {
	if os.Getenv("CHANGEDIGEST_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKillDuringDelivery stores 300 changed versions with a webhook
// channel, starts the service, kills it with SIGKILL while deliveries
// are in flight, and starts it again: the receiver sees every
// notification, and the only ones it sees twice are the few that were in
// flight at the kill, with the same idempotency key, so a receiver that
// keeps the keys it has handled handles each once.
func TestKillDuringDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the service twice")
	}
	const versions = 300
	var mu sync.Mutex
	seen := map[string]int{}
	requests := 0
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond) // a receiver that takes its time
		mu.Lock()
		seen[r.Header.Get("Idempotency-Key")]++
		requests++
		mu.Unlock()
	}))
	defer hook.Close()
	count := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen), requests
	}

	data := t.TempDir()
	ctx := context.Background()
	store := pet.New(data)
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	u := &changedigest.User{Name: "admin", Admin: true, DigestHour: -1}
	if err := store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateChannel(ctx, &changedigest.Channel{UserID: u.ID, Kind: changedigest.ChannelWebhook, URL: hook.URL, Secret: "k"}); err != nil {
		t.Fatal(err)
	}
	var ws []*changedigest.Watch
	for i := range 10 {
		w := &changedigest.Watch{UserID: u.ID, URL: fmt.Sprintf("http://example.org/%d", i), Paused: true}
		if err := store.CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for i := range versions {
		text := fmt.Sprintf("Version %d of the page.", i)
		snap := &changedigest.Snapshot{FetchedAt: time.Now(), Status: 200, Kind: changedigest.KindPage,
			Segments: []changedigest.Segment{{Hash: fmt.Sprintf("%032x", i+1), Text: text, End: len(text)}},
			Changes:  []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: text}}}
		if _, err := store.AddVersion(ctx, ws[i%len(ws)].ID, snap, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	serve := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "serve", "--data", data, "--addr", "127.0.0.1:0", "--allow-private", "--log-level", "error")
		cmd.Env = append(os.Environ(), "CHANGEDIGEST_TEST_MAIN=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	first := serve()
	wait("the first deliveries", func() bool { _, n := count(); return n >= versions/3 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	keysAtKill, reqsAtKill := count()
	t.Logf("killed after %d requests (%d keys)", reqsAtKill, keysAtKill)

	second := serve()
	wait("every notification", func() bool { k, _ := count(); return k == versions })
	time.Sleep(300 * time.Millisecond) // anything more would come now
	second.Process.Signal(syscall.SIGTERM)
	second.Wait()

	keys, reqs := count()
	twice := 0
	mu.Lock()
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	mu.Unlock()
	t.Logf("%d keys, %d requests, %d keys seen twice", keys, reqs, twice)
	if keys != versions {
		t.Errorf("the receiver saw %d of %d notifications", keys, versions)
	}
	// At most the dispatcher's workers (16) were in flight at the kill.
	if twice > 16 || reqs-keys != twice {
		t.Errorf("%d keys seen more than once (%d extra requests): more than the deliveries in flight", twice, reqs-keys)
	}

	store = pet.New(data)
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	counts, err := store.DeliveryCounts(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts[changedigest.DeliveryDelivered] != versions || len(counts) != 1 {
		t.Errorf("delivery states after the restart: %v", counts)
	}
}
