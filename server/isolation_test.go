package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// bobsWorld is what user B owns; A must see none of it and change none of it.
type bobsWorld struct {
	u       *changedigest.User
	c       *client
	w       *changedigest.Watch
	tokenID int64
	secret  string
	// secrets are strings only B's data holds.
	secrets []string
}

func mustBob(t *testing.T, e *testEnv) *bobsWorld {
	t.Helper()
	ctx := context.Background()
	b := &bobsWorld{u: e.mustUser("bob", "bobs password")}
	if err := e.store.PutProfile(ctx, &changedigest.Profile{UserID: b.u.ID, Interests: []changedigest.Interest{
		{Term: "astronomy", Source: changedigest.SourceManual, Weight: 1},
	}}, []byte("bob's foaf")); err != nil {
		t.Fatal(err)
	}
	b.w = e.mustWatch(b.u, "https://bob.example.org/private", "bobstag")
	if _, err := e.store.UpdateWatch(ctx, b.u.ID, b.w.ID, func(w *changedigest.Watch) error {
		w.Title = "Bob's private page"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.addVersion(b.w, `<html><body><article><p>The observatory opened its doors to the public on Friday night.</p></article></body></html>`)
	e.addVersion(b.w, `<html><body><article><p>A zeppelin flew over the observatory and the telescope on Friday night.</p></article></body></html>`)
	secret, tok, err := e.store.CreateToken(ctx, b.u.ID, "bobs script")
	if err != nil {
		t.Fatal(err)
	}
	b.secret, b.tokenID = secret, tok.ID
	b.c = e.login("bob", "bobs password")
	b.secrets = []string{"bob.example.org", "Bob&#39;s private page", "Bob's private page", "zeppelin", "observatory",
		"astronomy", "bobstag", "bobs script", b.u.FeedToken, secret}
	return b
}

// state is everything of B's the store holds, to compare before and after.
func (b *bobsWorld) state(t *testing.T, e *testEnv) string {
	t.Helper()
	ctx := context.Background()
	w, err := e.store.Watch(ctx, b.u.ID, b.w.ID)
	if err != nil {
		t.Fatalf("B's watch: %v", err)
	}
	vs, err := e.store.Versions(ctx, b.w.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	p, doc, err := e.store.Profile(ctx, b.u.ID)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := e.store.Tokens(ctx, b.u.ID)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.store.User(ctx, b.u.ID)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal([]any{w, len(vs), p, string(doc), toks, u, u.FeedToken})
	return string(out)
}

// TestIsolation checks that user A can neither read nor change what
// user B owns, whatever ids or feed tokens A puts in the address.
func TestIsolation(t *testing.T) {
	sc := mustScene(t) // A: ann, with watches and a profile of her own
	e := sc.e
	fc := &fakeChecker{result: crawl.Changed}
	e.srv.Checker = fc
	bob := mustBob(t, e)
	a := sc.c
	bw := fmt.Sprintf("/watches/%d", bob.w.ID)
	before := bob.state(t, e)

	// B's own pages work, so A's 404s below are not for want of data.
	for _, p := range []string{bw, bw + "/edit", bw + "/versions/2", bw + "/versions/2/content", bw + "/versions/2/source", bw + "/compare?from=1&to=2"} {
		if resp, body := bob.c.get(p); resp.StatusCode != http.StatusOK || !strings.Contains(body, "zeppelin") && !strings.Contains(body, "bob.example.org") {
			t.Fatalf("B's own %s: %d", p, resp.StatusCode)
		}
	}
	if resp, body := bob.c.get("/feeds/" + bob.u.FeedToken + fmt.Sprintf("/watches/%d.xml", bob.w.ID)); resp.StatusCode != http.StatusOK || !strings.Contains(body, "zeppelin") {
		t.Fatalf("B's own watch feed: %d", resp.StatusCode)
	}

	t.Run("reads by id", func(t *testing.T) {
		for _, p := range []string{
			bw, bw + "/", bw + "/edit", bw + "/versions/1", bw + "/versions/2", bw + "/versions/2/content",
			bw + "/versions/1/content", bw + "/versions/2/source", bw + "/versions/1/source",
			bw + "/compare", bw + "/compare?from=1&to=2",
			"/feeds/" + sc.u.FeedToken + fmt.Sprintf("/watches/%d.xml", bob.w.ID),
		} {
			resp, body := a.get(p)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("A GET %s: status %d, want 404", p, resp.StatusCode)
			}
			mustNotContain(t, body, bob.secrets...)
		}
	})

	t.Run("A's own pages", func(t *testing.T) {
		for _, tc := range []struct {
			path   string
			status int
			echo   []string // A's own input, shown back
		}{
			{"/", 200, nil}, {"/tags/bobstag", 200, []string{"bobstag"}}, {"/profile", 200, nil}, {"/settings", 200, nil},
			{"/digest", 200, nil}, {"/search", 200, nil},
			{"/search?q=zeppelin", 200, []string{"zeppelin"}},
			{"/search?q=observatory+friday", 200, []string{"observatory"}},
			{fmt.Sprintf("/search?q=zeppelin&watch=%d", bob.w.ID), 404, []string{"zeppelin"}},
		} {
			resp, body := a.get(tc.path)
			if resp.StatusCode != tc.status {
				t.Errorf("A GET %s: status %d, want %d", tc.path, resp.StatusCode, tc.status)
			}
			main := body[strings.Index(body, "<main"):]
			for _, echo := range tc.echo {
				main = strings.ReplaceAll(main, echo, "")
			}
			mustNotContain(t, main, bob.secrets...)
			if strings.Contains(tc.path, "q=") && tc.status == 200 && !strings.Contains(main, "Nothing found") {
				t.Errorf("A's search %s found something", tc.path)
			}
		}
		// A's own feeds never carry B's changes.
		for _, p := range []string{"/atom.xml", "/tags/bobstag.xml"} {
			resp, body := e.client().get("/feeds/" + sc.u.FeedToken + p)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("A's feed %s: status %d", p, resp.StatusCode)
			}
			mustNotContain(t, strings.ReplaceAll(body, "bobstag", ""), bob.secrets...)
		}
	})

	t.Run("feed tokens", func(t *testing.T) {
		// Wrong tokens are not found; after LoginAttempts of them the
		// address is refused for a while, whatever the token.
		limited := false
		for _, tok := range []string{
			sc.u.FeedToken + "x", bob.u.FeedToken[:len(bob.u.FeedToken)-1], strings.ToUpper(bob.u.FeedToken),
			sc.u.FeedToken[:8] + bob.u.FeedToken[8:], "", "..", "%2e%2e",
		} {
			for _, p := range []string{"/atom.xml", fmt.Sprintf("/watches/%d.xml", bob.w.ID), "/tags/bobstag.xml"} {
				resp, body := e.client().get("/feeds/" + tok + p)
				switch resp.StatusCode {
				case http.StatusNotFound:
					if limited {
						t.Errorf("GET /feeds/%s%s: 404 after a 429", tok, p)
					}
				case http.StatusTooManyRequests:
					limited = true
				default:
					t.Errorf("GET /feeds/%s%s: status %d, want 404 or 429", tok, p, resp.StatusCode)
				}
				mustNotContain(t, body, bob.secrets...)
			}
		}
		if !limited {
			t.Error("guessing feed tokens is not rate limited")
		}
	})

	t.Run("writes by id", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			form url.Values
		}{
			{bw, url.Values{"url": {"https://ann.example.org/stolen"}, "title": {"Mine now"}}},
			{bw + "/", url.Values{"url": {"https://ann.example.org/stolen"}, "title": {"Mine now"}}},
			{bw + "/delete", nil},
			{bw + "/check", nil},
			{fmt.Sprintf("/settings/tokens/%d/revoke", bob.tokenID), nil},
		} {
			resp, body := a.post(tc.path, tc.form)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("A POST %s: status %d, want 404", tc.path, resp.StatusCode)
			}
			mustNotContain(t, body, bob.secrets...)
		}
		if len(fc.called) != 0 {
			t.Errorf("A's check ran on watches %v", fc.called)
		}
		if u, _, err := e.store.UserByToken(context.Background(), bob.secret); err != nil || u.ID != bob.u.ID {
			t.Errorf("B's token after A's revoke: %v", err)
		}
	})

	t.Run("profile", func(t *testing.T) {
		resp, body := a.post("/profile/terms/remove", url.Values{"term": {"astronomy"}})
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("A removing B's term: status %d", resp.StatusCode)
		}
		// The error names the term A sent; the rest of the page is A's.
		mustContain(t, body, "&#34;astronomy&#34; is not one of your interests")
		main := regexp.MustCompile(`(?s)<div class="form-error".*?</div>`).ReplaceAllString(body[strings.Index(body, "<main"):], "")
		mustNotContain(t, main, bob.secrets...)
		a.post("/profile/terms", url.Values{"term": {"gardening"}})
		a.post("/settings", url.Values{"email": {"ann@example.org"}, "digest_hour": {"6"}})
		a.post("/settings/feed-token", nil)
		a.post("/settings/tokens", url.Values{"name": {"anns script"}})
	})

	if after := bob.state(t, e); after != before {
		t.Errorf("B's data changed through A's requests:\nbefore %s\nafter  %s", before, after)
	}
	// And A's requests did reach A's own data.
	p, _, _ := e.store.Profile(context.Background(), sc.u.ID)
	if !strings.Contains(fmt.Sprint(p.Interests), "gardening") || strings.Contains(fmt.Sprint(p.Excluded), "astronomy") {
		t.Errorf("A's profile: %+v", p)
	}
}
