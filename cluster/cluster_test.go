package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// node is one in-process node: an embedded server alone (no port), its
// store as the view, a worker and the scheduler.
type node struct {
	conn   *cluster.Conn
	store  *pet.Store
	node   *cluster.Node
	worker *cluster.Worker
	sched  *crawl.Scheduler
	// agent is the node's page agent manager, wired as serve wires it;
	// agents the node's page agent as its server sees it.
	agent  *agent.Manager
	agents cluster.Agents
	cancel context.CancelFunc
	done   chan struct{}
}

func startNode(t testing.TB, natsDir, dataDir string) *node {
	t.Helper()
	return startNodeWith(t, cluster.Config{Name: "solo", Dir: natsDir, Shards: 4, HostGap: 10 * time.Millisecond}, dataDir)
}

func startNodeWith(t testing.TB, cfg cluster.Config, dataDir string) *node {
	t.Helper()
	return startNodeWorking(t, cfg, dataDir, true)
}

// startNodeWorking is startNodeWith; without work, the node runs no
// worker: other nodes' workers take the checks its scheduler queues.
func startNodeWorking(t testing.TB, cfg cluster.Config, dataDir string, work bool) *node {
	t.Helper()
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	cfg.Logger = quiet
	conn, err := cluster.Dial(dctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := pet.New(dataDir)
	store.Logger = quiet
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	p := crawl.NewPipeline(f, segmenter.New(), store)
	wk := &cluster.Worker{Conn: conn, Pipeline: p, Workers: 4, Logger: quiet}
	nd := &cluster.Node{Conn: conn, Store: store, Dir: dataDir, Worker: wk, Logger: quiet}
	wk.Node = nd
	sched := crawl.NewScheduler(nd, nd)
	sched.HostGap, sched.Tick = 10*time.Millisecond, 50*time.Millisecond
	sched.Logger = quiet
	ag := agent.New(store, "http://cd.example/agent/report")
	ag.Logger, ag.Due = quiet, sched.Wake
	ag.Definitions = cluster.Store{Store: store, Node: nd}
	p.OnVersion = ag.Stored
	nd.Agent = ag
	agents := cluster.Agents{Node: nd, Local: ag}
	sched.OnCheck = agents.OnCheck
	nd.Scheduler = sched
	ag.Start()
	rctx, stop := context.WithCancel(ctx)
	n := &node{conn: conn, store: store, node: nd, worker: wk, sched: sched, agent: ag, agents: agents,
		cancel: stop, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		ch := make(chan struct{}, 3)
		go func() { nd.Run(rctx); ch <- struct{}{} }()
		go func() {
			if work {
				wk.Run(rctx)
			}
			ch <- struct{}{}
		}()
		go func() { sched.Run(rctx); ch <- struct{}{} }()
		for range 3 {
			<-ch
		}
	}()
	return n
}

func (n *node) stop() {
	n.cancel()
	<-n.done
	n.agent.Stop()
	n.store.Close()
	n.conn.Close()
}

// freeAddr is a loopback address free a moment ago, for a node's
// embedded server to take client connections on.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestCheckStoredOnceAndRebuilt runs checks through the versions stream
// (a node with no other node alive runs them itself, with the queue's
// worker code), checks that each stored version reached the view, then
// opens a fresh view on the same stream: it is rebuilt whole.
func TestCheckStoredOnceAndRebuilt(t *testing.T) {
	const pages = 20
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 4, Pages: pages, Size: 2 << 10, Rate: func(int) float64 { return 0 }})
	natsDir, dataDir := t.TempDir(), filepath.Join(t.TempDir(), "view")
	n := startNode(t, natsDir, dataDir)
	ctx := context.Background()
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i)}
	}
	if err := n.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	stored := func(s *pet.Store) int {
		k := 0
		for _, w := range ws {
			if info, err := s.Track(ctx, w.ID); err == nil && info.Versions > 0 {
				k++
			}
		}
		return k
	}
	waitFor(t, "every watch's first version in the view", func() bool { return stored(n.store) == pages })
	counts, dups, err := n.conn.VersionCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dups != 0 || len(counts) != pages {
		t.Fatalf("track of record: %d watches with versions, %d due checks stored twice", len(counts), dups)
	}
	for _, w := range ws {
		if counts[w.ID] != 1 {
			t.Errorf("watch %d has %d versions in the track of record", w.ID, counts[w.ID])
		}
	}
	_, full, _ := farm.Requests()
	if full != pages {
		t.Errorf("the farm answered %d pages in full, want %d (one check each)", full, pages)
	}
	st, err := n.conn.Status(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Versions != pages || st.Watches != pages || len(st.Nodes) != 1 || st.Nodes[0].Name != "solo" {
		t.Errorf("status: %d versions, %d watches, nodes %+v", st.Versions, st.Watches, st.Nodes)
	}
	if err := n.node.Ready(); err != nil {
		t.Errorf("ready: %v", err)
	}
	// What the checks learned of the pages is the view's; the watches
	// bucket keeps what users define.
	learned := func(s *pet.Store, w *changedigest.Watch) error {
		got, err := s.Watch(ctx, pet.AnyUser, w.ID)
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("Page %d", slices.Index(ws, w)); got.Kind != changedigest.KindPage || got.Title != want {
			return fmt.Errorf("kind %q, title %q, want page, %q", got.Kind, got.Title, want)
		}
		return nil
	}
	// A view learns just after it stores the version.
	allLearned := func(s *pet.Store) bool {
		for _, w := range ws {
			if learned(s, w) != nil {
				return false
			}
		}
		return true
	}
	waitFor(t, "every page's kind and title in the view", func() bool { return allLearned(n.store) })
	for _, w := range ws {
		if def, err := n.conn.Definition(ctx, w.ID); err != nil {
			t.Errorf("watch %d in the bucket: %v", w.ID, err)
		} else if def.Kind != "" || def.Title != "" {
			t.Errorf("watch %d in the bucket: kind %q, title %q, want neither", w.ID, def.Kind, def.Title)
		}
	}
	n.stop()

	// A node with an empty store takes the same shards: its view is
	// rebuilt from the versions stream, and nothing is fetched again
	// but what is due.
	n2 := startNode(t, natsDir, filepath.Join(t.TempDir(), "fresh"))
	defer n2.stop()
	waitFor(t, "the rebuilt view", func() bool { return stored(n2.store) == pages })
	for _, w := range ws {
		snap, err := n2.store.Latest(ctx, w.ID)
		if err != nil || snap.Seq != 1 || len(snap.Segments) == 0 {
			t.Fatalf("rebuilt view of watch %d: %+v, %v", w.ID, snap, err)
		}
	}
	// The rebuilt view learns the pages from their versions.
	waitFor(t, "every page's kind and title in the rebuilt view", func() bool { return allLearned(n2.store) })
}

// TestSearchAndChangesAcrossNodes runs two nodes on one NATS server, each owning
// half the shards: a search on either finds the pages of both, newest
// first, and pages through them as one store would.
func TestSearchAndChangesAcrossNodes(t *testing.T) {
	const pages = 12
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 4, Pages: pages, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	client := freeAddr(t)
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer a.stop()
	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer b.stop()
	ctx := context.Background()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2
	})
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i)}
	}
	if err := a.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	local := func(n *node) int {
		k := 0
		for _, w := range ws {
			if info, err := n.store.Track(ctx, w.ID); err == nil && info.Versions > 0 {
				k++
			}
		}
		return k
	}
	waitFor(t, "every first version in one of the views", func() bool { return local(a)+local(b) == pages })
	if local(a) == 0 || local(b) == 0 {
		t.Fatalf("views hold %d and %d watches: the shards are not split", local(a), local(b))
	}
	// The view holding a watch learns its page's kind and title, whichever
	// node's worker checked it.
	waitFor(t, "every page's kind and title in the view holding it", func() bool {
		for i, w := range ws {
			got, err := a.store.Watch(ctx, pet.AnyUser, w.ID)
			if info, terr := a.store.Track(ctx, w.ID); terr != nil || info.Versions == 0 {
				got, err = b.store.Watch(ctx, pet.AnyUser, w.ID)
			}
			if err != nil || got.Kind != changedigest.KindPage || got.Title != fmt.Sprintf("Page %d", i) {
				return false
			}
		}
		return true
	})
	q := pet.Query{Text: "today", UserID: 1, Limit: 5}
	for _, n := range []*node{a, b} {
		res, err := n.node.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != pages || len(res.Hits) != 5 {
			t.Fatalf("search on one node: total %d, %d hits; want %d and 5", res.Total, len(res.Hits), pages)
		}
		seen := map[int64]bool{}
		all := res.Hits
		for off := 5; off < pages; off += 5 {
			q2 := q
			q2.Offset = off
			more, err := n.node.Search(ctx, q2)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, more.Hits...)
		}
		for i, h := range all {
			if i > 0 && h.Time.After(all[i-1].Time) {
				t.Errorf("hit %d is newer than hit %d", i, i-1)
			}
			seen[h.WatchID] = true
		}
		if len(all) != pages || len(seen) != pages {
			t.Errorf("paging through the search: %d hits of %d watches, want %d", len(all), len(seen), pages)
		}
	}
	// The web server's store searches the cluster too.
	res, err := cluster.Store{Store: a.store, Node: a.node}.Search(ctx, q)
	if err != nil || res.Total != pages {
		t.Errorf("cluster.Store search: %+v, %v", res, err)
	}

	// Every page changes and each owner checks its watches now: the
	// change listing of feeds and digests holds them all, newest first.
	for _, p := range farm.Pages {
		p.Touch()
	}
	for _, n := range []*node{a, b} {
		var mine []*changedigest.Watch
		for _, w := range ws {
			if lw, err := n.store.Watch(ctx, pet.AnyUser, w.ID); err == nil {
				mine = append(mine, lw)
			}
		}
		if _, err := n.sched.CheckNow(ctx, nil, mine...); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every second version in a view", func() bool {
		k := 0
		for _, n := range []*node{a, b} {
			for _, w := range ws {
				if info, err := n.store.Track(ctx, w.ID); err == nil && info.Versions == 2 {
					k++
				}
			}
		}
		return k == pages
	})
	evs, err := cluster.Store{Store: b.store, Node: b.node}.Changes(ctx, pet.ChangeFilter{UserID: 1, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i, ev := range evs {
		seen[ev.Watch.ID] = true
		if ev.Version.Seq != 2 || len(ev.Version.Changes) == 0 {
			t.Errorf("event %d: version %d with %d changes", i, ev.Version.Seq, len(ev.Version.Changes))
		}
		if i > 0 && ev.Version.FetchedAt.After(evs[i-1].Version.FetchedAt) {
			t.Errorf("event %d is newer than event %d", i, i-1)
		}
	}
	if len(evs) != pages || len(seen) != pages {
		t.Errorf("changes across the cluster: %d events of %d watches, want %d", len(evs), len(seen), pages)
	}
	if few, err := b.node.Changes(ctx, pet.ChangeFilter{UserID: 1, Limit: 5}); err != nil || len(few) != 5 {
		t.Errorf("changes with limit 5: %d events, %v", len(few), err)
	}
}

// TestWatchesEditedInTheCluster creates, changes and deletes a watch
// through the web server's store: the cluster holds the definition, the
// owner's view follows, and IDs are never given twice.
func TestWatchesEditedInTheCluster(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 1, Pages: 3, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	n := startNode(t, t.TempDir(), t.TempDir())
	defer n.stop()
	ctx := context.Background()
	waitFor(t, "the shards served", func() bool { return n.node.Ready() == nil && len(n.node.Info().Ready) == 4 })
	cs := cluster.Store{Store: n.store, Node: n.node}
	w := &changedigest.Watch{UserID: 1, URL: farm.URL(0)}
	if err := cs.CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := n.store.Watch(ctx, 1, w.ID); err != nil {
		t.Fatalf("the view does not hold the new watch %d: %v", w.ID, err)
	}
	if err := cs.CreateWatch(ctx, &changedigest.Watch{UserID: 1, URL: farm.URL(0)}); changedigest.ErrorCode(err) != changedigest.ECONFLICT {
		t.Errorf("the same URL again: %v, want a conflict", err)
	}
	more := []*changedigest.Watch{{UserID: 1, URL: farm.URL(1)}, {UserID: 1, URL: farm.URL(2)}}
	if err := n.conn.AddWatches(ctx, more); err != nil {
		t.Fatal(err)
	}
	if more[0].ID == w.ID || more[1].ID == w.ID {
		t.Fatalf("IDs given twice: %d, then %d and %d", w.ID, more[0].ID, more[1].ID)
	}
	if _, err := cs.UpdateWatch(ctx, 2, w.ID, func(x *changedigest.Watch) error { x.Title = "x"; return nil }); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's update: %v, want not found", err)
	}
	got, err := cs.UpdateWatch(ctx, 1, w.ID, func(x *changedigest.Watch) error { x.Title = "Renamed"; x.Tags = []string{"news"}; return nil })
	if err != nil || got.Title != "Renamed" {
		t.Fatalf("update: %+v, %v", got, err)
	}
	waitFor(t, "the view to take the new title", func() bool {
		lw, err := n.store.Watch(ctx, 1, w.ID)
		return err == nil && lw.Title == "Renamed" && len(lw.Tags) == 1
	})
	if err := cs.DeleteWatch(ctx, 2, w.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's delete: %v, want not found", err)
	}
	if err := cs.DeleteWatch(ctx, 1, w.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the view to drop the watch", func() bool {
		_, err := n.store.Watch(ctx, 1, w.ID)
		return err != nil
	})
	if err := cs.DeleteWatch(ctx, 1, w.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("deleting it again: %v, want not found", err)
	}
}

// TestAccountsAcrossNodes: a user, a login session, an API token and a
// profile made through one node's web store are at once valid on the
// other node; a password change, a log-out everywhere and a revoked token
// are too; each user's digest is mailed by exactly one node.
func TestAccountsAcrossNodes(t *testing.T) {
	client := freeAddr(t)
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer a.stop()
	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer b.stop()
	ctx := context.Background()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2 && a.node.Ready() == nil && b.node.Ready() == nil
	})
	sa, sb := cluster.Store{Store: a.store, Node: a.node}, cluster.Store{Store: b.store, Node: b.node}

	var users []*changedigest.User
	for _, name := range []string{"ann", "bob", "cy", "dee"} {
		u := &changedigest.User{Name: name, PasswordHash: []byte("hash-" + name), DigestHour: -1}
		if err := a.conn.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	// b's web store finds a user made a moment ago (for a login).
	if u, err := sb.UserByName(ctx, "DEE"); err != nil || u.ID != users[3].ID || string(u.PasswordHash) != "hash-dee" {
		t.Errorf("b's store finding dee at once: %+v, %v", u, err)
	}
	if err := b.conn.CreateUser(ctx, &changedigest.User{Name: "ANN", DigestHour: -1}); changedigest.ErrorCode(err) != changedigest.ECONFLICT {
		t.Errorf("a second ann: %v, want a conflict", err)
	}
	if ids := []int64{users[0].ID, users[1].ID, users[2].ID, users[3].ID}; ids[0] == ids[1] || ids[2] != ids[1]+1 {
		t.Errorf("user IDs %v are not given one by one", ids)
	}
	ann := users[0]
	waitFor(t, "ann in b's copy", func() bool {
		u, err := b.store.UserByName(ctx, "ann")
		return err == nil && u.ID == ann.ID && string(u.PasswordHash) == "hash-ann" && u.FeedToken == ann.FeedToken
	})

	// A session made on a is valid on b, at once for a, soon for b.
	token, err := sa.CreateSession(ctx, ann.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Session(ctx, token); err != nil {
		t.Fatalf("a's own copy does not hold the session it made: %v", err)
	}
	// b's web store knows it at once (from the cluster if not yet from its copy).
	if s, err := sb.Session(ctx, token); err != nil || s.UserID != ann.ID {
		t.Errorf("b's store, at once: %+v, %v", s, err)
	}
	waitFor(t, "the session on b", func() bool {
		s, err := b.store.Session(ctx, token)
		return err == nil && s.UserID == ann.ID
	})
	// An API token made on b works on a.
	secret, tok, err := sb.CreateToken(ctx, ann.ID, "ci")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sb.CreateToken(ctx, ann.ID, "CI"); changedigest.ErrorCode(err) != changedigest.ECONFLICT {
		t.Errorf("a second token named ci: %v, want a conflict", err)
	}
	if u, got, err := sa.UserByToken(ctx, secret); err != nil || u.ID != ann.ID || got.ID != tok.ID {
		t.Errorf("a's web store, at once: %+v, %+v, %v", u, got, err)
	}
	waitFor(t, "the API token on a", func() bool {
		u, got, err := a.store.UserByToken(ctx, secret)
		return err == nil && u.ID == ann.ID && got.ID == tok.ID
	})
	// A profile put on a is read on b.
	p := &changedigest.Profile{UserID: ann.ID, Name: "Ann", Interests: []changedigest.Interest{{Term: "semantic web"}}}
	if err := sa.PutProfile(ctx, p, []byte("<rdf:RDF/>")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the profile on b", func() bool {
		got, doc, err := b.store.Profile(ctx, ann.ID)
		return err == nil && len(got.Interests) == 1 && got.Interests[0].Term == "semantic web" && string(doc) == "<rdf:RDF/>" && got.UpdatedAt.Equal(p.UpdatedAt)
	})
	// A new password set on b, and every session ended: a sees both.
	if _, err := sb.UpdateUser(ctx, ann.ID, func(u *changedigest.User) error {
		u.PasswordHash = []byte("new")
		u.Email = "ann@example.org"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := sb.DeleteUserSessions(ctx, ann.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Session(ctx, token); err == nil {
		t.Error("b's copy still holds the session it ended")
	}
	waitFor(t, "the new password and no session on a", func() bool {
		u, err := a.store.User(ctx, ann.ID)
		_, serr := a.store.Session(ctx, token)
		return err == nil && string(u.PasswordHash) == "new" && u.Email == "ann@example.org" && serr != nil
	})
	if _, err := sa.Session(ctx, token); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("an ended session on a's web store: %v, want not found", err)
	}
	if _, err := sa.UpdateUser(ctx, ann.ID, func(u *changedigest.User) error { u.Name = "bob"; return nil }); changedigest.ErrorCode(err) != changedigest.ECONFLICT {
		t.Errorf("renaming ann to bob: %v, want a conflict", err)
	}
	// A token revoked on a stops working on b; another user cannot revoke it.
	if err := sa.RevokeToken(ctx, users[1].ID, tok.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob revoking ann's token: %v, want not found", err)
	}
	if err := sa.RevokeToken(ctx, ann.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the token revoked on b", func() bool {
		_, _, err := b.store.UserByToken(ctx, secret)
		return err != nil
	})
	if _, _, err := sb.UserByToken(ctx, secret); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("a revoked token on b's web store: %v, want not found", err)
	}

	// A notification channel made on a is b's too (the node serving a
	// watch's shard pushes its versions), secret included; edits and a
	// deletion follow.
	ch := &changedigest.Channel{UserID: ann.ID, Name: "hook", Kind: changedigest.ChannelWebhook, URL: "https://hooks.example.org/x", Secret: "s3cret"}
	if err := sa.CreateChannel(ctx, ch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the channel on b", func() bool {
		got, err := b.store.Channel(ctx, ann.ID, ch.ID)
		return err == nil && got.Secret == "s3cret" && got.URL == ch.URL
	})
	if _, err := sb.UpdateChannel(ctx, users[1].ID, ch.ID, func(c *changedigest.Channel) error { return nil }); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob editing ann's channel: %v, want not found", err)
	}
	if _, err := sb.UpdateChannel(ctx, ann.ID, ch.ID, func(c *changedigest.Channel) error { c.Name = "renamed"; return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the renamed channel on a", func() bool {
		got, err := a.store.Channel(ctx, ann.ID, ch.ID)
		return err == nil && got.Name == "renamed" && got.Secret == "s3cret"
	})
	sub := &changedigest.Subscription{Topic: "https://cd.example.org/feeds/x/atom.xml", Callback: "https://reader.example.org/cb", UserID: ann.ID, Secret: "hub", Lease: 3600, Expires: time.Now().Add(time.Hour)}
	if err := sa.PutSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the subscription on b", func() bool {
		subs, err := b.store.Subscriptions(ctx, ann.ID)
		return err == nil && len(subs) == 1 && subs[0].Secret == "hub" && subs[0].Callback == sub.Callback
	})
	if err := sb.DeleteSubscription(ctx, sub.Topic, sub.Callback); err != nil {
		t.Fatal(err)
	}
	if err := sb.DeleteChannel(ctx, ann.ID, ch.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the subscription and the channel gone from a", func() bool {
		subs, _ := a.store.Subscriptions(ctx, ann.ID)
		_, err := a.store.Channel(ctx, ann.ID, ch.ID)
		return len(subs) == 0 && err != nil
	})

	// Each user's digest goes out from one node.
	da, err := cluster.DigestStore{Store: sa}.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db, err := cluster.DigestStore{Store: sb}.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mailers := map[int64]int{}
	for _, u := range append(da, db...) {
		mailers[u.ID]++
	}
	for _, u := range users {
		if mailers[u.ID] != 1 {
			t.Errorf("user %s's digest is mailed by %d nodes, want 1", u.Name, mailers[u.ID])
		}
	}
	if len(da) == 0 || len(db) == 0 {
		t.Errorf("digests: a mails %d users, b %d: the users are not split", len(da), len(db))
	}

	// A node that joins later (or rebuilds its store) copies them all.
	c := startNodeWith(t, cluster.Config{Name: "c", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer c.stop()
	waitFor(t, "c's copy of the accounts", func() bool {
		us, err := c.store.Users(ctx)
		_, _, perr := c.store.Profile(ctx, ann.ID)
		return err == nil && len(us) == len(users) && perr == nil
	})
	if u, err := c.store.UserByName(ctx, "ann"); err != nil || string(u.PasswordHash) != "new" {
		t.Errorf("c's ann: %+v, %v", u, err)
	}
}

// TestShardsMoveAndReadsFollow: a node joins a node that served every
// shard; the shards it takes leave the first node's store, and the web
// store of either node lists, searches and reads every watch once.
func TestShardsMoveAndReadsFollow(t *testing.T) {
	const pages = 12
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 4, Pages: pages, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	client := freeAddr(t)
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer a.stop()
	ctx := context.Background()
	waitFor(t, "a serving every shard", func() bool { return len(a.node.Info().Ready) == 4 })
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i), Tags: []string{"t" + strconv.Itoa(i%2)}}
	}
	if err := a.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	versions := func(n *node) int {
		k := 0
		for _, w := range ws {
			if info, err := n.store.Track(ctx, w.ID); err == nil && info.Versions > 0 {
				k++
			}
		}
		return k
	}
	waitFor(t, "every first version in a's store", func() bool { return versions(a) == pages })

	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer b.stop()
	waitFor(t, "two shards each, and a's store holding only its own", func() bool {
		if len(a.node.Info().Ready) != 2 || len(b.node.Info().Ready) != 2 {
			return false
		}
		all, err := a.store.Watches(ctx, pet.AnyUser, "")
		return err == nil && len(all) < pages && versions(a)+versions(b) == pages
	})
	for name, n := range map[string]*node{"a": a, "b": b} {
		cs := cluster.Store{Store: n.store, Node: n.node}
		page, err := cs.WatchPage(ctx, 1, pet.WatchQuery{Limit: 5, Offset: 5})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != pages || len(page.Watches) != 5 || page.Watches[0].ID != ws[5].ID || page.Watches[4].ID != ws[9].ID {
			t.Errorf("%s: page 2 of the dashboard: total %d, %d watches, want %d and watches %d to %d", name, page.Total, len(page.Watches), pages, ws[5].ID, ws[9].ID)
		}
		if page.Tags == nil || len(page.Tags) != 2 {
			t.Errorf("%s: the dashboard's tags: %v", name, page.Tags)
		}
		tagged, err := cs.WatchPage(ctx, 1, pet.WatchQuery{Tag: "t1", Sort: pet.SortName, Limit: 100})
		if err != nil || tagged.Total != pages/2 || len(tagged.Watches) != pages/2 {
			t.Errorf("%s: the watches tagged t1 by name: %+v, %v", name, tagged, err)
		}
		list, err := cs.Watches(ctx, 1, "")
		if err != nil || len(list) != pages {
			t.Errorf("%s: Watches: %d, %v", name, len(list), err)
		}
		res, err := cs.Search(ctx, pet.Query{Text: "today", UserID: 1, Limit: 100})
		if err != nil || res.Total != pages || len(res.Hits) != pages {
			t.Errorf("%s: search across the nodes: %+v, %v; want %d hits once each", name, res, err, pages)
		}
		for _, w := range ws {
			got, err := cs.Watch(ctx, 1, w.ID)
			if err != nil || got.URL != w.URL {
				t.Errorf("%s: watch %d: %+v, %v", name, w.ID, got, err)
				continue
			}
			if _, err := cs.Watch(ctx, 2, w.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
				t.Errorf("%s: another user's watch %d: %v, want not found", name, w.ID, err)
			}
			info, err := cs.Track(ctx, w.ID)
			if err != nil || info.Versions != 1 {
				t.Errorf("%s: track of watch %d: %+v, %v", name, w.ID, info, err)
			}
			vs, err := cs.Versions(ctx, w.ID, 0, 10)
			if err != nil || len(vs) != 1 {
				t.Errorf("%s: versions of watch %d: %d, %v", name, w.ID, len(vs), err)
			}
			body, err := cs.Body(ctx, w.ID, 1)
			if err != nil || len(body) == 0 {
				t.Errorf("%s: body of watch %d: %d bytes, %v", name, w.ID, len(body), err)
			}
		}
		if _, err := cs.Watch(ctx, 1, 999999); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			t.Errorf("%s: an unknown watch: %v, want not found", name, err)
		}
	}
}

// TestStreamKeepsWhatTheStoreKeeps: a watch that keeps few versions has
// its older versions dropped from the versions stream once its owner's
// store dropped them, and a view rebuilt from the stream numbers the
// versions it still has as the track of record does.
func TestStreamKeepsWhatTheStoreKeeps(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 1, Pages: 1, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	natsDir := t.TempDir()
	n := startNode(t, natsDir, t.TempDir())
	ctx := context.Background()
	waitFor(t, "the shards served", func() bool { return n.node.Ready() == nil && len(n.node.Info().Ready) == 4 })
	// The signature matrix keeps 5 versions whatever the limit.
	w := &changedigest.Watch{UserID: 1, URL: farm.URL(0), KeepVersions: 2}
	if err := n.conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		t.Fatal(err)
	}
	const checks = 8
	for v := 1; v <= checks; v++ {
		waitFor(t, "the watch in the view", func() bool {
			_, err := n.store.Watch(ctx, pet.AnyUser, w.ID)
			return err == nil
		})
		if v > 1 {
			farm.Pages[0].Touch()
		}
		lw, _ := n.store.Watch(ctx, pet.AnyUser, w.ID)
		if _, err := n.sched.CheckNow(ctx, nil, lw); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the version in the view", func() bool {
			info, err := n.store.Track(ctx, w.ID)
			return err == nil && info.Latest == v
		})
	}
	info, _ := n.store.Track(ctx, w.ID)
	if info.Oldest != checks-4 || info.Versions != 5 {
		t.Fatalf("the store keeps %+v, want the last 5", info)
	}
	counts, _, err := n.conn.VersionCounts(ctx)
	if err != nil || counts[w.ID] != checks {
		t.Fatalf("before trimming the stream holds %d versions, %v; want %d", counts[w.ID], err, checks)
	}
	removed, err := n.node.TrimStream(ctx)
	if err != nil || removed != checks-5 {
		t.Errorf("TrimStream = %d, %v; want %d", removed, err, checks-5)
	}
	if again, err := n.node.TrimStream(ctx); err != nil || again != 0 {
		t.Errorf("TrimStream again = %d, %v", again, err)
	}
	if counts, _, _ = n.conn.VersionCounts(ctx); counts[w.ID] != 5 {
		t.Errorf("after trimming the stream holds %d versions, want 5", counts[w.ID])
	}
	n.stop()

	n2 := startNode(t, natsDir, t.TempDir())
	defer n2.stop()
	waitFor(t, "the rebuilt view", func() bool {
		info, err := n2.store.Track(ctx, w.ID)
		return err == nil && info.Latest == checks
	})
	if info, _ := n2.store.Track(ctx, w.ID); info.Oldest != checks-4 || info.Versions != 5 {
		t.Errorf("rebuilt view %+v, want versions %d to %d", info, checks-4, checks)
	}
	// The next check is number 9 in the stream and in the view.
	farm.Pages[0].Touch()
	lw, _ := n2.store.Watch(ctx, pet.AnyUser, w.ID)
	if _, err := n2.sched.CheckNow(ctx, nil, lw); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "version 9 in the rebuilt view", func() bool {
		snap, err := n2.store.Latest(ctx, w.ID)
		return err == nil && snap.Seq == checks+1
	})
}

// TestShardTakenOverKeepsSchedules: a node that takes shards over gives
// their watches the schedule state the node serving them kept in the
// cluster, so watches checked a moment ago are not checked again at once
// (each is due in an hour): kept every ScheduleEvery, or when the node
// gives the shard up (ScheduleEvery an hour).
func TestShardTakenOverKeepsSchedules(t *testing.T) {
	t.Run("kept every 200ms", func(t *testing.T) { testShardTakenOverKeepsSchedules(t, 200*time.Millisecond) })
	t.Run("kept when given up", func(t *testing.T) { testShardTakenOverKeepsSchedules(t, time.Hour) })
}

func testShardTakenOverKeepsSchedules(t *testing.T, every time.Duration) {
	const pages = 12
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 4, Pages: pages, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	client := freeAddr(t)
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond,
		Lease: 2 * time.Second, ScheduleEvery: every}, t.TempDir())
	defer a.stop()
	ctx := context.Background()
	waitFor(t, "a serving every shard", func() bool { return len(a.node.Info().Ready) == 4 })
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i), Interval: time.Hour}
	}
	if err := a.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	checked := func(n *node) int {
		k := 0
		for _, w := range ws {
			if x, err := n.store.Watch(ctx, pet.AnyUser, w.ID); err == nil && x.Checks > 0 {
				k++
			}
		}
		return k
	}
	waitFor(t, "every watch checked once on a", func() bool { return checked(a) == pages })
	if every < time.Second {
		time.Sleep(3 * every) // a keeps the schedules in the cluster
	}
	before, _, _ := farm.Requests()

	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second,
		ScheduleEvery: every}, t.TempDir())
	defer b.stop()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2
	})
	taken := 0
	for _, w := range ws {
		x, err := b.store.Watch(ctx, pet.AnyUser, w.ID)
		if err != nil {
			continue // one of a's
		}
		taken++
		if x.Checks != 1 || x.NextCheck.Before(time.Now().Add(30*time.Minute)) {
			t.Errorf("watch %d taken over by b: %d checks, next at %v; want 1 and in about an hour", w.ID, x.Checks, x.NextCheck)
		}
	}
	if taken == 0 {
		t.Fatal("b took no watch over")
	}
	time.Sleep(time.Second) // the schedulers' ticks
	if after, _, _ := farm.Requests(); after != before {
		t.Errorf("the farm was asked %d more times after b took %d watches over, want none", after-before, taken)
	}
}

// TestViewStartedAgainReadsOnlyWhatChanged: a node started again on its
// store reads the watch definitions written since it stopped (its place
// in the watches bucket is kept with its place in the versions stream):
// a watch renamed, one deleted and one added meanwhile, through a node
// that served the shards in between, are its view's.
func TestViewStartedAgainReadsOnlyWhatChanged(t *testing.T) {
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 1, Pages: 3, Size: 1 << 10, Rate: func(int) float64 { return 0 }})
	natsDir, dataDir := t.TempDir(), t.TempDir()
	ctx := context.Background()
	served := func(n *node) {
		t.Helper()
		waitFor(t, "the shards served", func() bool { return n.node.Ready() == nil && len(n.node.Info().Ready) == 4 })
	}
	n := startNode(t, natsDir, dataDir)
	served(n)
	cs := cluster.Store{Store: n.store, Node: n.node}
	ws := []*changedigest.Watch{{UserID: 1, URL: farm.URL(0), Paused: true}, {UserID: 1, URL: farm.URL(1), Paused: true}}
	for _, w := range ws {
		if err := cs.CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	n.stop()

	other := startNode(t, natsDir, t.TempDir())
	served(other)
	ocs := cluster.Store{Store: other.store, Node: other.node}
	if _, err := ocs.UpdateWatch(ctx, 1, ws[0].ID, func(x *changedigest.Watch) error { x.Title = "Renamed"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := ocs.DeleteWatch(ctx, 1, ws[1].ID); err != nil {
		t.Fatal(err)
	}
	added := &changedigest.Watch{UserID: 1, URL: farm.URL(2), Paused: true}
	if err := ocs.CreateWatch(ctx, added); err != nil {
		t.Fatal(err)
	}
	other.stop()

	n = startNode(t, natsDir, dataDir)
	defer n.stop()
	served(n)
	if w, err := n.store.Watch(ctx, 1, ws[0].ID); err != nil || w.Title != "Renamed" {
		t.Errorf("the watch renamed meanwhile: %+v, %v", w, err)
	}
	if _, err := n.store.Watch(ctx, 1, ws[1].ID); err == nil {
		t.Error("the watch deleted meanwhile is still in the view")
	}
	if _, err := n.store.Watch(ctx, 1, added.ID); err != nil {
		t.Errorf("the watch added meanwhile: %v", err)
	}
}
