package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// TestFeedConditional checks feed readers' conditional requests in every
// format: an unchanged feed answers 304 to its tag (also in a list and
// weak), and the tag changes with a new version, with a renamed watch
// and with a new interest, so the reader gets the new feed.
func TestFeedConditional(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	w := e.mustWatch(u, "https://news.example.org/", "news")
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	e.setNow(t0)
	e.addVersion(w, "<html><body><main><p>The council meets on Monday about the harbour.</p></main></body></html>")
	e.setNow(t0.Add(time.Hour))
	e.addVersion(w, "<html><body><main><p>The council meets on Tuesday about the harbour.</p></main></body></html>")
	u, err := e.store.User(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, inm string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.http.URL+"/feeds/"+u.FeedToken+path, nil)
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
	paths := []string{"/atom.xml", "/rss.xml", "/feed.json", fmt.Sprintf("/watches/%d.xml", w.ID)}
	tags := map[string]string{}
	for _, p := range paths {
		st, tag, body := get(p, "")
		if st != http.StatusOK || tag == "" || !strings.Contains(body, "Tuesday") {
			t.Fatalf("%s: status %d, tag %q, body %.200q", p, st, tag, body)
		}
		strong := strings.TrimPrefix(tag, "W/") // weak when sent compressed
		for _, inm := range []string{tag, `"other", ` + tag, "W/" + strong, strong, "*"} {
			if st, tag2, body := get(p, inm); st != http.StatusNotModified || body != "" || tag2 != tag {
				t.Errorf("%s with If-None-Match %s: status %d, tag %q, %d bytes; want 304, the same tag, no body", p, inm, st, tag2, len(body))
			}
		}
		if st, _, _ := get(p, `"other"`); st != http.StatusOK {
			t.Errorf("%s with another tag: status %d, want 200", p, st)
		}
		tags[p] = tag
	}
	if tags["/atom.xml"] == tags["/rss.xml"] || tags["/rss.xml"] == tags["/feed.json"] {
		t.Errorf("formats share a tag: %v", tags)
	}
	changed := func(what string) {
		t.Helper()
		for _, p := range paths {
			st, tag, _ := get(p, tags[p])
			if st != http.StatusOK || tag == tags[p] {
				t.Errorf("after %s, %s: status %d, tag %s (was %s); want 200 and a new tag", what, p, st, tag, tags[p])
			}
			tags[p] = tag
		}
	}
	e.setNow(t0.Add(2 * time.Hour))
	e.addVersion(w, "<html><body><main><p>The council meets on Wednesday about the harbour.</p></main></body></html>")
	changed("a new version")
	if _, err := e.store.UpdateWatch(context.Background(), u.ID, w.ID, func(x *changedigest.Watch) error {
		x.Title = "Harbour news"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	changed("renaming the watch")
	prof := &changedigest.Profile{UserID: u.ID, Interests: []changedigest.Interest{{Term: "harbour", Source: "foaf:interest", Weight: 1}}}
	if err := e.store.PutProfile(context.Background(), prof, nil); err != nil {
		t.Fatal(err)
	}
	changed("a new interest")
}
