package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// TestScatterOverAStoppedNode asks a question of a cluster whose other
// node has a heartbeat but does not answer: once its lease runs out
// within the wait (it stopped), the answer is the others'; while it goes
// on beating without answering, the question fails with EBUSY (a 503 to
// the web server), not an internal error. An error a node answers keeps
// its code.
func TestScatterOverAStoppedNode(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	const lease = time.Second
	conn, err := Dial(ctx, Config{Name: "a", Dir: t.TempDir(), Shards: 2, Lease: lease, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	store := pet.New(t.TempDir())
	store.Logger = quiet
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	n := &Node{Conn: conn, Store: store, Logger: quiet}
	subs, err := n.serveQuestions()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range subs {
			s.Unsubscribe()
		}
	}()
	beat := func(names ...string) {
		for _, name := range names {
			data, _ := json.Marshal(NodeInfo{Name: name, Beat: time.Now()})
			if _, err := conn.nodes.Put(ctx, name, data); err != nil {
				t.Error(err) // may run in the beating goroutine
			}
		}
	}
	q := pet.Query{UserID: 1, Text: "news"}

	beat("a", "stopped")
	began := time.Now()
	if _, err := n.Search(ctx, q); err != nil {
		t.Fatalf("a node that stopped beating still fails the search: %v", err)
	}
	if took := time.Since(began); took < lease {
		t.Errorf("the search came back in %s, before the silent node's lease ran out", took)
	}

	beat("a", "silent")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(lease / 5):
			}
			beat("a", "silent")
		}
	}()
	_, err = n.Search(ctx, q)
	close(stop)
	<-done
	if changedigest.ErrorCode(err) != changedigest.EBUSY || !errors.Is(err, errUnavailable) {
		t.Errorf("a live node that does not answer: %v (code %q), want EBUSY", err, changedigest.ErrorCode(err))
	}

	time.Sleep(lease + lease/2)
	beat("a")
	_, err = n.Search(ctx, pet.Query{UserID: 1, Text: " "})
	if changedigest.ErrorCode(err) != changedigest.EINVALID {
		t.Errorf("an empty search: %v (code %q), want EINVALID from the node that answered", err, changedigest.ErrorCode(err))
	}
}
