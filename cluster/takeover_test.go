package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// What a node that stops answering leaves behind, and how the others
// treat it while they take its shards over: its hosts, the reads of its
// watches, its line in the status.

// runNode runs a node of conn with a store of its own until the test ends.
func runNode(t *testing.T, conn *Conn) *Node {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	store := pet.New(t.TempDir())
	store.Logger = quiet
	if err := store.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := &Node{Conn: conn, Store: store, Dir: t.TempDir(), Logger: quiet}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		store.Close()
	})
	return n
}

// beating writes a heartbeat of the named node every tenth of the lease
// until the returned function is called: a node alive, as the others
// see it, that does nothing else.
func beating(t *testing.T, c *Conn, name string) (stop func()) {
	t.Helper()
	quit, done := make(chan struct{}), make(chan struct{})
	beat := func() {
		data, _ := json.Marshal(NodeInfo{Name: name, Started: time.Now(), Beat: time.Now()})
		if _, err := c.nodes.Put(context.Background(), name, data); err != nil {
			t.Log(err)
		}
	}
	beat()
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(c.Config.Lease / 10):
			}
			beat()
		}
	}()
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			close(quit)
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func loopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func dialTest(t *testing.T, cfg Config) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHostOfANodeThatDiedIsFreed: a worker that takes a host and dies
// (kill -9: it never frees it) holds the host while its node is alive,
// and no longer once its heartbeat is older than the lease; before, the
// host stayed taken for AckWait (2 minutes by default), and every check
// of it on the other nodes was put back again and again meanwhile.
func TestHostOfANodeThatDiedIsFreed(t *testing.T) {
	ctx := context.Background()
	const lease = time.Second
	client := loopback(t)
	yc := dialTest(t, Config{Name: "y", Dir: t.TempDir(), Client: client, Shards: 2, Lease: lease, AckWait: time.Minute})
	y := runNode(t, yc)
	xc := dialTest(t, Config{Name: "x", URL: "nats://" + client, Lease: lease, AckWait: time.Minute})
	kill := beating(t, xc, "x")
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if live, err := liveNodes(ctx, yc, time.Now()); err == nil && live["x"] {
			time.Sleep(lease / 2) // y's next look at the heartbeats sees x too
			break
		}
		if time.Now().After(end) {
			t.Fatal("y does not see x alive")
		}
	}
	xw, yw := &Worker{Conn: xc}, &Worker{Conn: yc, Node: y}
	const host = "pages.example"
	if ok, _, err := xw.takeHost(ctx, host, false); !ok || err != nil {
		t.Fatalf("x takes a free host: %v, %v", ok, err)
	}
	// x is alive: its request runs, however long it takes.
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok, _, err := yw.takeHost(ctx, host, false); ok || err != nil {
			t.Fatalf("y took the host x is asking: %v, %v", ok, err)
		}
	}
	kill()
	killed := time.Now()
	for {
		ok, _, err := yw.takeHost(ctx, host, false)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Since(killed) > 10*lease {
			t.Fatalf("the host of a node that died is still taken %s later (AckWait %s)", time.Since(killed).Round(time.Millisecond), yc.Config.AckWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the host of the node that died was free again %s after its last heartbeat", time.Since(killed).Round(time.Millisecond))
	e, err := yc.hosts.Get(ctx, hostKey(host))
	if err != nil || string(e.Value()) != "busy y" {
		t.Errorf("the host's entry: %q, %v; want busy y", e.Value(), err)
	}
}

// TestReadsWhileAShardChangesHands: the watches of a shard whose node
// stops answering, then dies, are read as busy (a 503 with a
// Retry-After) until a node serves the shard again, caught up, and never
// as not found; a watch that does not exist, or another user's, is not
// found all along. Before, a read that asked while the dead node still
// had its lease, and the reads while the new owner's view caught up,
// answered "watch N not found" (a 404).
func TestReadsWhileAShardChangesHands(t *testing.T) {
	ctx := context.Background()
	const lease = time.Second
	c := dialTest(t, Config{Name: "a", Dir: t.TempDir(), Shards: 2, Lease: lease})
	a := runNode(t, c)
	cs := Store{Store: a.Store, Node: a}
	for end := time.Now().Add(10 * time.Second); !a.servesAll(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a does not serve every shard")
		}
	}
	ws := make([]*changedigest.Watch, 40)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: "http://pages.example/" + strconv.Itoa(i), Paused: true}
	}
	if err := c.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	var moved []*changedigest.Watch
	for _, w := range ws {
		if ShardOf(w.ID, 2) == 1 {
			moved = append(moved, w)
		}
	}
	held := func() bool {
		for _, w := range moved {
			if _, err := a.Store.Watch(ctx, 1, w.ID); err != nil {
				return false
			}
		}
		return true
	}
	for end := time.Now().Add(10 * time.Second); !held(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a's view does not hold the watches")
		}
	}

	// A node takes shard 1, and does not answer questions.
	kill := beating(t, c, "ghost")
	if _, err := c.shards.Put(ctx, "1", []byte("ghost")); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); a.serves(moved[0].ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a still serves the shard the other node took")
		}
	}
	if _, err := cs.Watch(ctx, 1, moved[0].ID); changedigest.ErrorCode(err) != changedigest.EBUSY {
		t.Errorf("a watch of the shard of a node alive that does not answer: %v, want EBUSY", err)
	}

	// It dies while a read waits for it; the reads go on until a serves
	// the shard again.
	type result struct {
		err  error
		took time.Duration
	}
	results := make(chan result, 1000)
	readsDone := make(chan struct{})
	go func() {
		defer close(readsDone)
		for i := 0; ; i++ {
			w := moved[i%len(moved)]
			began := time.Now()
			got, err := cs.Watch(ctx, 1, w.ID)
			if err == nil && got.ID != w.ID {
				err = changedigest.Errorf(changedigest.EINTERNAL, "read watch %d, got %d", w.ID, got.ID)
			}
			if err == nil {
				_, err = cs.Track(ctx, w.ID)
			}
			results <- result{err, time.Since(began)}
			if err == nil {
				return
			}
			if time.Since(began) < 5*time.Millisecond {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	time.Sleep(lease / 2)
	kill()
	codes := map[string]int{}
	end := time.After(20 * time.Second)
	for done := false; !done; {
		select {
		case r := <-results:
			code := changedigest.ErrorCode(r.err)
			if r.err == nil {
				code = "ok"
			}
			codes[code]++
			if code != "ok" && code != changedigest.EBUSY {
				t.Errorf("a watch of the shard changing hands: %v (code %q, after %s)", r.err, code, r.took.Round(time.Millisecond))
			}
		case <-readsDone:
			done = len(results) == 0
		case <-end:
			t.Fatalf("the watches of the dead node's shard are not read again within 20 s: %v", codes)
		}
	}
	t.Logf("reads of the shard changing hands: %v", codes)
	if codes["ok"] != 1 {
		t.Errorf("no read of the shard came back once a served it again: %v", codes)
	}
	if _, err := cs.Watch(ctx, 2, moved[0].ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's watch: %v, want ENOTFOUND", err)
	}
	if _, err := cs.Watch(ctx, 1, 999_999); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("a watch that does not exist: %v, want ENOTFOUND", err)
	}
}

// TestStatusOfANodeThatStopped: a node whose heartbeat is older than the
// lease is down, serves no shard, has no lag; its counts of checks are
// its last heartbeat's. Before, the status kept the shards it served.
func TestStatusOfANodeThatStopped(t *testing.T) {
	ctx := context.Background()
	c := dialTest(t, Config{Name: "a", Dir: t.TempDir(), Shards: 2, Lease: time.Second})
	now := time.Now()
	for _, info := range []NodeInfo{
		{Name: "a", Started: now.Add(-time.Minute), Beat: now, Shards: []int{0}, Ready: []int{0}, Checks: 3},
		{Name: "gone", Started: now.Add(-time.Hour), Beat: now.Add(-10 * time.Second), Shards: []int{0, 1}, Ready: []int{0, 1}, Lag: 5, Checks: 7},
	} {
		data, _ := json.Marshal(info)
		if _, err := c.nodes.Put(ctx, info.Name, data); err != nil {
			t.Fatal(err)
		}
	}
	infos, _, err := c.Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(infos, func(n NodeInfo) bool { return n.Name == "gone" })
	if i < 0 {
		t.Fatalf("the node that stopped is not listed: %+v", infos)
	}
	if g := infos[i]; !g.Down || len(g.Shards) != 0 || len(g.Ready) != 0 || g.Lag != 0 || g.Checks != 7 {
		t.Errorf("the node that stopped: down %v, shards %v, served %v, lag %d, checks %d; want down, none, none, 0, 7", g.Down, g.Shards, g.Ready, g.Lag, g.Checks)
	}
	if a := infos[1-i]; a.Down || len(a.Shards) != 1 || len(a.Ready) != 1 {
		t.Errorf("the node alive: down %v, shards %v, served %v", a.Down, a.Shards, a.Ready)
	}
}
