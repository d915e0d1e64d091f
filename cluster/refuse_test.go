package cluster_test

import (
	"context"
	"crypto/md5"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/pet"
)

// bigItemFeed is an RSS feed one of whose items has more text than a
// store keeps of a segment.
func bigItemFeed(words int) string {
	return `<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title><link>http://x/</link><description>d</description>
<item><title>Huge</title><link>http://x/1</link><guid>1</guid><description>` + strings.Repeat("word ", words) + `</description></item>
<item><title>Small</title><link>http://x/2</link><guid>2</guid><description>a small item</description></item>
</channel></rss>`
}

// TestVersionOverTheLimitsNeverAppended: a feed with an item over the
// store's limit on a segment's text fails its check with the limit named
// on the watch, and nothing is appended to the versions stream (where it
// would stand for good, ahead of the watch's later versions).
func TestVersionOverTheLimitsNeverAppended(t *testing.T) {
	feed := bigItemFeed(1 << 20) // 5 MiB of text in one item
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, feed)
	}))
	defer srv.Close()
	n := startNode(t, t.TempDir(), filepath.Join(t.TempDir(), "view"))
	defer n.stop()
	ctx := context.Background()
	w := &changedigest.Watch{UserID: 1, URL: srv.URL + "/feed.xml"}
	if err := n.conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		t.Fatal(err)
	}
	var got *changedigest.Watch
	waitFor(t, "the check's error on the watch", func() bool {
		got, _ = n.store.Watch(ctx, pet.AnyUser, w.ID)
		return got != nil && got.LastError != ""
	})
	if !strings.Contains(got.LastError, "item 0 has 5.0 MiB of text, over the limit of 4 MiB") {
		t.Errorf("the watch's error: %q", got.LastError)
	}
	counts, _, err := n.conn.VersionCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts[w.ID] != 0 {
		t.Errorf("the stream holds %d versions of the watch, want none", counts[w.ID])
	}
	if err := n.node.Ready(); err != nil {
		t.Errorf("ready: %v", err)
	}
}

// TestViewPassesVersionsItCannotStore: versions in the stream that the
// view cannot store (one over the store's limits, as an older release
// appended it; one made unreadable) are passed, each recorded on its
// watch, and hold up neither the node's start nor the shard's other
// watches; the view keeps the stream's numbering, so the watches' later
// versions are stored.
func TestViewPassesVersionsItCannotStore(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><head><title>Page %s</title></head><body><p>The text of page %s.</p></body></html>", r.URL.Path, r.URL.Path)
	}))
	defer srv.Close()
	natsDir, dataDir := t.TempDir(), filepath.Join(t.TempDir(), "view")
	ctx := context.Background()
	n := startNode(t, natsDir, dataDir)
	// Four shards: watches 4, 8 and 12 share one.
	var ws []*changedigest.Watch
	for i := range 12 {
		ws = append(ws, &changedigest.Watch{UserID: 1, URL: fmt.Sprintf("%s/%d", srv.URL, i), Paused: i%4 != 3})
	}
	if err := n.conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	big, bad, good := ws[3], ws[7], ws[11]
	for _, w := range []*changedigest.Watch{big, bad, good} {
		waitFor(t, "the first versions", func() bool {
			info, err := n.store.Track(ctx, w.ID)
			return err == nil && info.Latest == 1
		})
	}
	n.stop()

	snap := func(text string) *changedigest.Snapshot {
		return &changedigest.Snapshot{Kind: changedigest.KindPage,
			Segments: []changedigest.Segment{{Path: "html|body|p", Hash: fmt.Sprintf("%x", md5.Sum([]byte(text))), Text: text, Start: -1, End: -1}}}
	}
	// The stream alone, as the next start finds it.
	conn, err := cluster.Dial(ctx, cluster.Config{Name: "solo", Dir: natsDir, Shards: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("word ", 1<<20)
	if err := conn.AppendUnchecked(ctx, big.ID, 2, snap(huge), nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.AppendUnchecked(ctx, bad.ID, 2, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.AppendUnchecked(ctx, good.ID, 2, snap("The text"), nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*changedigest.Watch{big, bad, good} {
		if err := conn.AppendUnchecked(ctx, w.ID, 3, snap("The text, changed"), nil); err != nil {
			t.Fatal(err)
		}
	}

	conn.Close()

	n2 := startNode(t, natsDir, dataDir)
	defer n2.stop()
	waitFor(t, "the node serving its shards", func() bool { return n2.node.Ready() == nil })
	for _, w := range []*changedigest.Watch{big, bad, good} {
		waitFor(t, fmt.Sprintf("version 3 of watch %d in the view", w.ID), func() bool {
			info, err := n2.store.Track(ctx, w.ID)
			return err == nil && info.Latest == 3
		})
		latest, err := n2.store.Latest(ctx, w.ID)
		if err != nil || latest.Segments[0].Text != "The text, changed" {
			t.Errorf("watch %d: newest version %+v, %v", w.ID, latest, err)
		}
	}
	for w, want := range map[*changedigest.Watch]string{
		big: "version 2 was not stored: segment 0 has 5 MiB of text, over the limit of 4 MiB",
		bad: "version 2 was not stored: it is unreadable in the cluster's stream",
	} {
		got, err := n2.store.Watch(ctx, pet.AnyUser, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastError != want {
			info, _ := n2.store.Track(ctx, w.ID)
			t.Errorf("watch %d: last error %q, want %q; %+v %+v", w.ID, got.LastError, want, got, info)
		}
		// Version 2 holds version 1's text in its place, with no changes.
		v1, err1 := n2.store.Version(ctx, w.ID, 1)
		v2, err2 := n2.store.Version(ctx, w.ID, 2)
		if err1 != nil || err2 != nil || v2.BodyHash != v1.BodyHash || len(v2.Changes) != 0 {
			t.Errorf("watch %d: version 2 in the view %+v (%v), version 1 %+v (%v)", w.ID, v2, err2, v1, err1)
		}
	}
}
