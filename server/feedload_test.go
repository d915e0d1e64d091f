package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
)

// countingStore is the store as the notifier sees it, counting the
// versions it hands out with their changes: what a feed or dashboard
// request costs beyond the list of its events.
type countingStore struct {
	notify.Store
	mu       sync.Mutex
	versions int
}

func (c *countingStore) Changes(ctx context.Context, f pet.ChangeFilter) ([]pet.Event, error) {
	evs, err := c.Store.Changes(ctx, f)
	n := 0
	for _, ev := range evs {
		if len(ev.Version.Changes) > 0 {
			n++
		}
	}
	c.mu.Lock()
	c.versions += n
	c.mu.Unlock()
	return evs, err
}

func (c *countingStore) read() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.versions
}

// TestPollsReadEachVersionOnce checks that feed readers' polls and looks
// at the dashboard do no work per version: a version is read from the
// store (and matched against the profile, told and rendered) when it is
// first shown, not at every request. Before, every poll of a feed read,
// decoded and matched each of its versions (a hundred-entry feed of real
// pages took seconds of CPU), and every dashboard its five newest.
func TestPollsReadEachVersionOnce(t *testing.T) {
	e, feedURL := feedFixture(t, 30)
	cs := &countingStore{Store: e.srv.Notify.Store}
	e.srv.Notify.Store = cs
	get := func(url, inm string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("ETag"), string(b)
	}
	st, tag, first := get(feedURL, "")
	if st != http.StatusOK || strings.Count(first, "<entry>") < 30 {
		t.Fatalf("feed: status %d, %d entries", st, strings.Count(first, "<entry>"))
	}
	read := cs.read()
	if read == 0 {
		t.Fatal("the first request read no version")
	}
	for range 5 {
		if st, tag2, body := get(feedURL, ""); st != http.StatusOK || tag2 != tag || body != first {
			t.Fatalf("a poll: status %d, tag %s (was %s), same body %v", st, tag2, tag, body == first)
		}
		if st, _, _ := get(feedURL, tag); st != http.StatusNotModified {
			t.Fatalf("a conditional poll: status %d, want 304", st)
		}
	}
	if n := cs.read() - read; n != 0 {
		t.Errorf("10 polls of an unchanged feed read %d versions from the store, want 0", n)
	}

	// A new version is read once for itself (worked out and rendered),
	// not with the feed's other versions.
	ws, err := e.store.Watches(context.Background(), pet.AnyUser, "")
	if err != nil {
		t.Fatal(err)
	}
	read = cs.read()
	e.setNow(e.clock().Add(24 * time.Hour))
	e.addVersion(&ws[0], "<html><head><title>News</title></head><body><main><article><h2>Story 0</h2><p>The soccer club opens a new ground on Sunday.</p></article></main></body></html>")
	st, tag2, body := get(feedURL, tag)
	if st != http.StatusOK || tag2 == tag || !strings.Contains(body, "new ground") {
		t.Fatalf("after a new version: status %d, tag %s (was %s), new version shown %v", st, tag2, tag, strings.Contains(body, "new ground"))
	}
	for range 3 {
		get(feedURL, "")
		get(feedURL, tag2)
	}
	if n := cs.read() - read; n != 1 {
		t.Errorf("a new version and 7 polls read %d versions from the store, want 1 (the new one)", n)
	}

	// The dashboard shows the newest versions, read when they are new.
	c := e.login("ann", "correct horse")
	if resp, body := c.get("/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "new ground") {
		t.Fatalf("dashboard: status %d, newest change shown %v", resp.StatusCode, strings.Contains(body, "new ground"))
	}
	read = cs.read()
	for range 5 {
		c.get("/")
	}
	if n := cs.read() - read; n != 0 {
		t.Errorf("5 looks at the dashboard read %d versions from the store, want 0", n)
	}
}

// TestFeedFollowsWatchAndProfile checks that entries worked out once
// follow what they are made of: a renamed watch, changed filters and a
// changed profile give entries made anew, in every format.
func TestFeedFollowsWatchAndProfile(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	w := e.mustWatch(u, "https://news.example.org/", "news")
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	page := "<html><body><main><p>Tickets for the rugby final are sold out.</p>"
	for i, day := range []string{"Monday", "Tuesday", "Wednesday"} {
		e.setNow(t0.Add(time.Duration(i) * time.Hour))
		page += "<p>On " + day + " the harbour ferry runs late.</p>"
		e.addVersion(w, page+"</main></body></html>")
	}
	u, err := e.store.User(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	feeds := []string{"/atom.xml", "/rss.xml", "/feed.json", fmt.Sprintf("/watches/%d.xml", w.ID)}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(e.http.URL + "/feeds/" + u.FeedToken + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	each := func(what string, ok func(body string) bool) {
		t.Helper()
		for _, p := range feeds {
			if body := get(p); !ok(body) {
				t.Errorf("%s: %s: %.600s", what, p, body)
			}
		}
	}
	each("before", func(b string) bool {
		return strings.Contains(b, "Wednesday") && !strings.Contains(b, "Harbour news") && !strings.Contains(b, "★")
	})

	update := func(fn func(*changedigest.Watch)) {
		t.Helper()
		if _, err := e.store.UpdateWatch(context.Background(), u.ID, w.ID, func(x *changedigest.Watch) error {
			fn(x)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(x *changedigest.Watch) { x.Title = "Harbour news" })
	each("renamed", func(b string) bool { return strings.Contains(b, "Harbour news") })

	// Ignoring the days leaves nothing to tell: the feeds are empty.
	update(func(x *changedigest.Watch) { x.IgnoreText = []string{"/On \\w+day the harbour ferry runs late\\./"} })
	each("ignoring the days", func(b string) bool { return !strings.Contains(b, "Wednesday") && !strings.Contains(b, "Tuesday") })
	update(func(x *changedigest.Watch) { x.IgnoreText = nil })
	each("no longer ignoring them", func(b string) bool { return strings.Contains(b, "Wednesday") })

	// A new interest is marked in the entries that mention it.
	prof := &changedigest.Profile{UserID: u.ID, Interests: []changedigest.Interest{{Term: "harbour", Source: "foaf:interest", Weight: 1}}}
	if err := e.store.PutProfile(context.Background(), prof, nil); err != nil {
		t.Fatal(err)
	}
	each("a new interest", func(b string) bool { return strings.Contains(b, "★ harbour") })
}
