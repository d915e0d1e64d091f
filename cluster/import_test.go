package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	pngenc "image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// singleStore is a store as a single serve leaves it: a user with a
// session, an API token, a profile, a channel and a WebSub subscription,
// and three watches checked four times over pages that changed between
// the checks (the third keeps two versions only).
type singleStore struct {
	dir            string
	user           changedigest.User
	session, token string
	watches        []*changedigest.Watch
	// bodies[watch][seq] is what the store holds.
	bodies map[int64]map[int][]byte
	tracks map[int64]pet.TrackInfo
	// shot is the PNG of the second watch's fifth version.
	shot []byte
}

func makeSingleStore(t *testing.T) *singleStore {
	t.Helper()
	ctx := context.Background()
	var round atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><h1>Page %s</h1><p>Edition %d of the page, with news of the day.</p><p>Unchanged text.</p></body></html>", r.URL.Path, round.Load())
	}))
	defer site.Close()
	ss := &singleStore{dir: t.TempDir(), bodies: map[int64]map[int][]byte{}, tracks: map[int64]pet.TrackInfo{}}
	st := pet.New(ss.dir)
	st.Logger = slog.New(slog.DiscardHandler)
	st.Matrix = 2 // for retention to keep two versions
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ss.user = changedigest.User{Name: "ann", PasswordHash: []byte("hash-ann"), DigestHour: -1}
	if err := st.CreateUser(ctx, &ss.user); err != nil {
		t.Fatal(err)
	}
	var err error
	if ss.session, err = st.CreateSession(ctx, ss.user.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	if ss.token, _, err = st.CreateToken(ctx, ss.user.ID, "reader"); err != nil {
		t.Fatal(err)
	}
	p := &changedigest.Profile{UserID: ss.user.ID, Name: "Ann", Interests: []changedigest.Interest{{Term: "semantic web"}}}
	if err := st.PutProfile(ctx, p, []byte("<rdf:RDF/>")); err != nil {
		t.Fatal(err)
	}
	ch := &changedigest.Channel{UserID: ss.user.ID, Name: "hook", Kind: changedigest.ChannelWebhook, URL: "https://hooks.example.org/x", Secret: "s3cret"}
	if err := st.CreateChannel(ctx, ch); err != nil {
		t.Fatal(err)
	}
	sub := &changedigest.Subscription{Topic: "https://cd.example.org/feeds/x/atom.xml", Callback: "https://reader.example.org/cb", UserID: ss.user.ID, Secret: "hub", Lease: 3600, Expires: time.Now().Add(time.Hour)}
	if err := st.PutSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w := &changedigest.Watch{UserID: ss.user.ID, URL: fmt.Sprintf("%s/p%d", site.URL, i), NextCheck: time.Now().Add(time.Hour)}
		if i == 2 {
			w.KeepVersions = 2
		}
		if err := st.CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
		ss.watches = append(ss.watches, w)
	}
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	pl := crawl.NewPipeline(f, segmenter.New(), st)
	for r := range 4 {
		round.Store(int32(r))
		for _, w := range ss.watches {
			if _, err := pl.Check(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A fifth version of the second watch, as a browser drew it: with a
	// screenshot.
	w1 := ss.watches[1]
	snap, err := st.Latest(ctx, w1.ID)
	if err != nil {
		t.Fatal(err)
	}
	body, err := st.Body(ctx, w1.ID, snap.Seq)
	if err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var png bytes.Buffer
	if err := pngenc.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	ss.shot = png.Bytes()
	snap.FetchedAt = snap.FetchedAt.Add(time.Second)
	snap.Screenshot = &changedigest.Screenshot{PNG: ss.shot, Width: 40, Height: 30}
	if _, err := st.AddVersion(ctx, w1.ID, snap, body); err != nil {
		t.Fatal(err)
	}
	for _, w := range ss.watches {
		info, err := st.Track(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		ss.tracks[w.ID] = info
		ss.bodies[w.ID] = map[int][]byte{}
		for seq := info.Oldest; seq <= info.Latest; seq++ {
			if ss.bodies[w.ID][seq], err = st.Body(ctx, w.ID, seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ss.tracks[ss.watches[0].ID].Versions != 4 || ss.tracks[ss.watches[1].ID].Versions != 5 || ss.tracks[ss.watches[2].ID].Oldest != 3 {
		t.Fatalf("the single store's tracks: %+v", ss.tracks)
	}
	return ss
}

// TestImportAStoreOfASingleNode: a single serve's store is imported into
// the cluster its node starts, becomes that node's view unchanged, and a
// node with an empty store that takes the shards over rebuilds it whole
// from the cluster: versions (a trimmed track keeps its numbers), users,
// sessions, tokens, profiles, channels and subscriptions. Imported again,
// nothing is written twice; a store whose IDs the cluster holds for other
// records is refused, and nothing of it written.
func TestImportAStoreOfASingleNode(t *testing.T) {
	ss := makeSingleStore(t)
	ctx := context.Background()
	natsDir := t.TempDir()
	cfg := cluster.Config{Name: "solo", Dir: natsDir, Shards: 4, HostGap: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	if cluster.IsView(ss.dir) {
		t.Fatal("a single serve's store is taken for a cluster view")
	}
	conn, err := cluster.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := pet.New(ss.dir)
	st.Logger = cfg.Logger
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	im, err := conn.Import(ctx, st, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := cluster.Imported{Users: 1, Sessions: 1, Tokens: 1, Profiles: 1, Channels: 1, Subscriptions: 1, Watches: 3, Versions: 4 + 5 + 2}
	if im != want {
		t.Errorf("imported %s, want %s", im, want)
	}
	again, err := conn.Import(ctx, st, 5, nil)
	if err != nil || again.Versions != 0 || again.Watches != 0 || again.Users != 0 || again.Held != 9+11 {
		t.Errorf("imported again: %s, %v; want nothing new, 20 held", again, err)
	}

	// Another single store, whose user 1 is someone else, is refused.
	other := t.TempDir()
	ost := pet.New(other)
	ost.Logger = cfg.Logger
	if err := ost.Open(ctx); err != nil {
		t.Fatal(err)
	}
	bob := &changedigest.User{Name: "bob", PasswordHash: []byte("hash-bob"), DigestHour: -1}
	if err := ost.CreateUser(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if err := ost.CreateWatch(ctx, &changedigest.Watch{UserID: bob.ID, URL: "https://example.org/bob"}); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Import(ctx, ost, 5, nil)
	if changedigest.ErrorCode(err) != changedigest.ECONFLICT {
		t.Errorf("a store with other records under the cluster's IDs: %v, want a conflict", err)
	}
	t.Logf("refused: %v", err)
	ost.Close()
	st.Close()
	conn.Close()

	// The store goes on as the first node's view, as it was.
	a := startNodeWith(t, cfg, ss.dir)
	waitFor(t, "a serving every shard", func() bool { return len(a.node.Info().Ready) == 4 })
	if !cluster.IsView(ss.dir) {
		t.Error("the first node's store is not marked as a view")
	}
	for _, w := range ss.watches {
		if info, err := a.store.Track(ctx, w.ID); err != nil || info != ss.tracks[w.ID] {
			t.Errorf("the first node's view of watch %d: %+v, %v; want %+v", w.ID, info, err, ss.tracks[w.ID])
		}
	}
	counts, dups, err := a.conn.VersionCounts(ctx)
	if err != nil || dups != 0 || counts[ss.watches[0].ID] != 4 || counts[ss.watches[1].ID] != 5 || counts[ss.watches[2].ID] != 2 {
		t.Errorf("the versions stream: %v, %d stored twice, %v", counts, dups, err)
	}
	// New IDs come after the store's.
	nw := &changedigest.Watch{UserID: ss.user.ID, URL: "https://example.org/new", NextCheck: time.Now().Add(time.Hour)}
	if err := a.conn.AddWatches(ctx, []*changedigest.Watch{nw}); err != nil || nw.ID != ss.watches[2].ID+1 {
		t.Errorf("a watch defined after the import has ID %d (%v), want %d", nw.ID, err, ss.watches[2].ID+1)
	}
	a.stop()

	// A node with an empty store takes the shards over: all of it is
	// rebuilt from the cluster.
	b := startNodeWith(t, cfg, filepath.Join(t.TempDir(), "fresh"))
	defer b.stop()
	waitFor(t, "the rebuilt view", func() bool {
		for _, w := range ss.watches {
			if info, err := b.store.Track(ctx, w.ID); err != nil || info != ss.tracks[w.ID] {
				return false
			}
		}
		return true
	})
	for _, w := range ss.watches {
		for seq, body := range ss.bodies[w.ID] {
			if got, err := b.store.Body(ctx, w.ID, seq); err != nil || !bytes.Equal(got, body) {
				t.Errorf("rebuilt version %d of watch %d: %q, %v; want %q", seq, w.ID, got, err, body)
			}
		}
		snap, err := b.store.Latest(ctx, w.ID)
		if err != nil || len(snap.Changes) == 0 {
			t.Errorf("rebuilt newest version of watch %d: %+v, %v; want its changes", w.ID, snap, err)
		}
	}
	if sh, err := b.store.Screenshot(ctx, ss.watches[1].ID, 5); err != nil || !bytes.Equal(sh.PNG, ss.shot) || sh.Width != 40 {
		t.Errorf("rebuilt screenshot: %v; want the %d bytes imported", err, len(ss.shot))
	}
	cs := cluster.Store{Store: b.store, Node: b.node}
	if u, err := cs.UserByName(ctx, "ann"); err != nil || u.ID != ss.user.ID || string(u.PasswordHash) != "hash-ann" || u.FeedToken != ss.user.FeedToken {
		t.Errorf("user: %+v, %v", u, err)
	}
	if s, err := cs.Session(ctx, ss.session); err != nil || s.UserID != ss.user.ID {
		t.Errorf("session: %+v, %v", s, err)
	}
	if u, _, err := cs.UserByToken(ctx, ss.token); err != nil || u.ID != ss.user.ID {
		t.Errorf("API token: %+v, %v", u, err)
	}
	waitFor(t, "the profile, channel and subscription", func() bool {
		p, doc, perr := b.store.Profile(ctx, ss.user.ID)
		chs, cerr := b.store.Channels(ctx, ss.user.ID)
		subs, serr := b.store.Subscriptions(ctx, ss.user.ID)
		return perr == nil && p.Name == "Ann" && string(doc) == "<rdf:RDF/>" &&
			cerr == nil && len(chs) == 1 && chs[0].Secret == "s3cret" &&
			serr == nil && len(subs) == 1 && subs[0].Secret == "hub"
	})
}
