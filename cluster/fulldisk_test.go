package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/pet"
)

// TestStreamsFollowTheDisk runs a node whose streams are on a small,
// nearly full disk: versions are refused with a storage-full error (not
// the page's) once the disk is short of the room kept free, logins go on,
// and once space is freed versions are stored again without a restart,
// past the three quarters of the space free at start that JetStream takes
// as its limit for good unless told otherwise.
func TestStreamsFollowTheDisk(t *testing.T) {
	const size = 24 << 20
	disk := testenv.SmallFS(t, size)
	filler := filepath.Join(disk, "filler")
	fill := func(leave int64) {
		t.Helper()
		os.Remove(filler)
		free := testenv.FreeSpace(t, disk)
		if err := os.WriteFile(filler, make([]byte, max(free-leave, 0)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fill(3 << 20) // 3 MiB free at start
	var k atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 600 KB of text that compresses little, new at every request.
		rng := rand.New(rand.NewPCG(uint64(k.Add(1)), 1))
		var b strings.Builder
		b.WriteString("<html><body>")
		for i := range 3000 {
			fmt.Fprintf(&b, "<p>%d %x %x %x</p>", i, rng.Uint64(), rng.Uint64(), rng.Uint64())
		}
		b.WriteString("</body></html>")
		fmt.Fprint(w, b.String())
	}))
	defer srv.Close()

	n := startNode(t, filepath.Join(disk, "nats"), filepath.Join(t.TempDir(), "view"))
	defer n.stop()
	ctx := context.Background()
	store := cluster.Store{Store: n.store, Node: n.node}
	u := &changedigest.User{Name: "ann", PasswordHash: []byte("hash-ann"), DigestHour: -1}
	if err := store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	w := &changedigest.Watch{UserID: u.ID, URL: srv.URL, Paused: true}
	if err := n.conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch in the view", func() bool {
		_, err := n.store.Watch(ctx, pet.AnyUser, w.ID)
		return err == nil
	})
	check := func() error {
		t.Helper()
		cur, err := n.store.Watch(ctx, pet.AnyUser, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		cur.NextCheck = time.Now().Add(time.Duration(k.Load()) * time.Second) // a due check of its own
		_, err = n.node.Check(ctx, cur)
		return err
	}
	var refused error
	stored := 0
	for range 10 {
		if refused = check(); refused != nil {
			break
		}
		stored++
	}
	if changedigest.ErrorCode(refused) != changedigest.EFULL || !strings.Contains(refused.Error(), "storage is full") {
		t.Fatalf("after %d versions on a disk with 3 MiB free: %v, want storage full", stored, refused)
	}
	if _, full := store.StorageFull(); !full {
		t.Error("the store does not say it is full")
	}
	t.Logf("%d versions stored with 3 MiB free at start, then: %v", stored, refused)
	if _, err := store.CreateSession(ctx, u.ID, time.Hour); err != nil {
		t.Errorf("a login on a disk short of its reserve: %v", err)
	}
	// Not a byte left: a login is held in the node's memory.
	fill(0)
	token, err := store.CreateSession(ctx, u.ID, time.Hour)
	if err != nil {
		t.Fatalf("a login on a disk with no space left: %v", err)
	}
	if ss, err := store.Session(ctx, token); err != nil || ss.UserID != u.ID {
		t.Errorf("the session of a login on a full disk: %+v, %v", ss, err)
	}
	if err := store.DeleteSession(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Session(ctx, token); err == nil {
		t.Error("a session held in memory outlived its logout")
	}

	fill(12 << 20) // room made, the node running on
	waitFor(t, "the room made seen", func() bool {
		_, full := store.StorageFull()
		return !full
	})
	more := 0
	for range 6 {
		if err := check(); err != nil {
			t.Fatalf("after %d more versions with 12 MiB free: %v", more, err)
		}
		more++
	}
	if _, full := store.StorageFull(); full {
		t.Error("the store still says it is full")
	}
	counts, _, err := n.conn.VersionCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts[w.ID] != stored+more {
		t.Errorf("the stream holds %d versions, want %d", counts[w.ID], stored+more)
	}
}
