package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// Two versions of a sports page: the lead story turns to a football
// match told with the word "soccer" (a profile change through WordNet),
// and the weather box changes (a general change).
const (
	sportsV1 = `<!DOCTYPE html><html><head><title>City sports</title></head><body>
<header><nav><a href="/">Home</a> <a href="/clubs">Clubs</a> <a href="/fixtures">Fixtures</a></nav></header>
<main>
<article id="lead"><h1>Council plans new cycle lanes</h1>
<p>The city council met on Monday evening to discuss the new cycle lanes along the river, which should open in the spring after two years of planning and a long public consultation.</p></article>
<aside id="weather"><h2>Weather</h2><p>Heavy rain is expected on Tuesday afternoon, with strong winds along the coast until the evening.</p></aside>
</main>
<footer><p>City Sports, 1 High Street. Contact the newsroom for corrections.</p></footer>
</body></html>`
	sportsV2 = `<!DOCTYPE html><html><head><title>City sports</title></head><body>
<header><nav><a href="/">Home</a> <a href="/clubs">Clubs</a> <a href="/fixtures">Fixtures</a></nav></header>
<main>
<article id="lead"><h1>Local club wins the cup</h1>
<p>The local soccer club won the cup final on Saturday in front of a record crowd, after a late goal from their young striker sealed a famous victory over the league champions.</p></article>
<aside id="weather"><h2>Weather</h2><p>Sunshine is expected on Tuesday afternoon, with light winds along the coast until the evening.</p></aside>
</main>
<footer><p>City Sports, 1 High Street. Contact the newsroom for corrections.</p></footer>
</body></html>`
)

// scene is a user with a profile ("football") and watches: a sports page
// with two versions whose second brings a profile change and a general
// change, and a watch whose last check failed.
type scene struct {
	e      *testEnv
	u      *changedigest.User
	c      *client
	sports *changedigest.Watch
	broken *changedigest.Watch
}

const scenePassword = "correct horse"

func mustScene(t testing.TB) *scene {
	t.Helper()
	e := mustServer(t)
	ctx := context.Background()
	sc := &scene{e: e, u: e.mustUser("ann", scenePassword)}
	if err := e.store.PutProfile(ctx, &changedigest.Profile{UserID: sc.u.ID, Name: "Ann Example", Interests: []changedigest.Interest{
		{Term: "football", URI: "http://dbpedia.org/resource/Football", Source: "foaf:interest", Weight: 1},
		{Term: "cycling", Source: changedigest.SourceManual, Weight: 1},
	}}, nil); err != nil {
		t.Fatal(err)
	}
	sc.sports = e.mustWatch(sc.u, "https://sports.example.org/", "sport", "local news")
	t0 := e.clock()
	e.setNow(t0.Add(-3 * time.Hour))
	e.addVersion(sc.sports, sportsV1)
	e.setNow(t0.Add(-1 * time.Hour))
	e.addVersion(sc.sports, sportsV2)
	e.setNow(t0)
	sc.sports = sc.setState(sc.sports.ID, func(w *changedigest.Watch) {
		w.Title, w.Kind = "City sports", changedigest.KindPage
		w.LastCheck, w.LastChange, w.NextCheck = t0.Add(-time.Hour), t0.Add(-time.Hour), t0.Add(5*time.Hour)
		w.Checks = 2
	})
	sc.broken = e.mustWatch(sc.u, "https://gone.example.net/news")
	sc.broken = sc.setState(sc.broken.ID, func(w *changedigest.Watch) {
		w.LastCheck, w.NextCheck = t0.Add(-30*time.Minute), t0.Add(30*time.Minute)
		w.LastError, w.LastErrorAt, w.ErrorCount = "fetch: 404 Not Found", t0.Add(-30*time.Minute), 1
	})
	sc.c = e.login("ann", scenePassword)
	return sc
}

// setState changes a watch in the store as the crawler would.
func (sc *scene) setState(id int64, fn func(*changedigest.Watch)) *changedigest.Watch {
	sc.e.t.Helper()
	w, err := sc.e.store.UpdateWatch(context.Background(), sc.u.ID, id, func(w *changedigest.Watch) error {
		fn(w)
		return nil
	})
	if err != nil {
		sc.e.t.Fatal(err)
	}
	return w
}

// wpath is a path under the sports watch.
func (sc *scene) wpath(format string, args ...any) string {
	return fmt.Sprintf("/watches/%d", sc.sports.ID) + fmt.Sprintf(format, args...)
}

// mustStatus fails unless resp has the status.
func mustStatus(t testing.TB, what string, resp *http.Response, body string, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d\n%s", what, resp.StatusCode, want, excerpt(body))
	}
}

// excerpt is the main part of a page, for failure messages.
func excerpt(body string) string {
	if i := strings.Index(body, `<main id="main">`); i >= 0 {
		body = body[i:]
	}
	if len(body) > 3000 {
		body = body[:3000] + "…"
	}
	return body
}

// mustNotContain fails when body holds one of the strings.
func mustNotContain(t testing.TB, body string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(body, b) {
			t.Errorf("response holds %q", b)
		}
	}
}

// inOrder fails unless the strings occur in body in this order.
func inOrder(t testing.TB, body string, parts ...string) {
	t.Helper()
	pos := 0
	for _, p := range parts {
		i := strings.Index(body[pos:], p)
		if i < 0 {
			t.Errorf("%q missing or out of order (after byte %d)", p, pos)
			return
		}
		pos += i + len(p)
	}
}

// postFile sends a multipart form with one file, with the CSRF token.
func (c *client) postFile(path string, fields url.Values, field, name string, content []byte) (*http.Response, string) {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("csrf_token", c.csrf())
	for k, vs := range fields {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	if name != "" {
		fw, err := mw.CreateFormFile(field, name)
		if err != nil {
			c.t.Fatal(err)
		}
		fw.Write(content)
	}
	mw.Close()
	resp, err := c.http.Post(c.base+path, mw.FormDataContentType(), &buf)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// flashAfter follows a redirect and returns the page it leads to.
func (c *client) follow(resp *http.Response) string {
	c.t.Helper()
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("status %d, want a redirect", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		c.t.Fatal(err)
	}
	_, body := c.get(loc.RequestURI())
	return body
}

// TestPages renders every page for a logged-in user with a profile and
// a watch whose second version brings a change matching it.
func TestPages(t *testing.T) {
	sc := mustScene(t)
	token := sc.u.FeedToken
	id := sc.sports.ID
	mark := `<mark class="cd-mark" title="matches your interest football (hyponym: soccer)"><strong>soccer</strong></mark>`
	for _, tc := range []struct {
		name, path string
		wants      []string
		order      []string
	}{
		{"dashboard", "/", []string{
			`<a class="watch-name" href="/watches/` + fmt.Sprint(id) + `">City sports</a>`,
			`<a class="tag" href="/tags/sport">sport</a>`, `<a class="tag" href="/tags/local%20news">local news</a>`,
			`/feeds/` + token + `/atom.xml`, `fetch: 404 Not Found`, `check failed`,
			"1 watch failed at its last check", mark, "matches your interest football",
		}, []string{"Your watches", "City sports", "Your feed", "Recent changes", "version 2"}},
		{"watch", sc.wpath(""), []string{
			"<h1>City sports</h1>", `<svg xmlns="http://www.w3.org/2000/svg"`, "Check now", "Delete this watch and its history",
			sc.wpath("/versions/1"), sc.wpath("/versions/2"), sc.wpath("/versions/2/content"), sc.wpath("/versions/2/source"),
			sc.wpath("/versions/1/content"), sc.wpath("/versions/1/source"), `action="` + sc.wpath("/compare") + `"`,
			`name="from" type="number" min="1" max="2" value="1"`, `name="to" type="number" min="1" max="2" value="2"`,
			"★ matches", `<span class="badge badge-content">content</span>`, mark,
			"/feeds/" + token + fmt.Sprintf("/watches/%d.xml", id), `<a class="tag" href="/tags/sport">sport</a>`,
		}, []string{"<strong>#2</strong>", "<strong>#1</strong>", ">first<"}},
		{"version", sc.wpath("/versions/2"), []string{
			"Version 2:", mark, "matches your interest football", `<p class="cd-sbs-head">Before</p>`,
			`<del class="cd-del">`, "Sunshine", `rel="prev"`, sc.wpath("/versions/2/content"),
		}, []string{"Matches your interests", "soccer", "Other changes", "Sunshine"}},
		{"first version", sc.wpath("/versions/1"), []string{"first version stored", `rel="next"`}, nil},
		{"content", sc.wpath("/versions/2/content"), []string{
			"Text of version 2", "The local soccer club won the cup final", `class="segment-head"`, "Sunshine is expected",
		}, nil},
		{"compare", sc.wpath("/compare?from=1&to=2"), []string{
			"Version 1 to version 2", "% alike", mark, `value="1"`, `value="2"`,
		}, nil},
		{"compare one version", sc.wpath("/compare?from=2&to=2"), []string{"The same version.", "same content"}, nil},
		{"edit", sc.wpath("/edit"), []string{
			`action="` + sc.wpath("") + `"`, `value="https://sports.example.org/"`, `value="City sports"`, `value="sport, local news"`,
			`<option value="personal" selected>`,
		}, nil},
		{"new", "/watches/new?url=https://example.org/x", []string{`action="/watches"`, `value="https://example.org/x"`, "Start watching"}, nil},
		{"tag", "/tags/sport", []string{"Tag: sport", "City sports", "/feeds/" + token + "/tags/sport.xml"}, nil},
		{"tag with a space", "/tags/local%20news", []string{"Tag: local news", "City sports", "/feeds/" + token + "/tags/local%20news.xml"}, nil},
		{"profile", "/profile", []string{
			`<span class="interest-term">football</span>`, "foaf:interest", "soccer <small>hyponym</small>",
			`<p class="gloss">`, `action="/profile/terms/remove"`, `name="term" value="football"`, `action="/profile/foaf"`,
			`enctype="multipart/form-data"`, `action="/profile/terms"`, "Ann Example",
		}, nil},
		{"search", "/search?q=soccer", []string{
			"1 hit", `<mark>soccer</mark>`, sc.wpath("/versions/2"), ">City sports</a>", "still on the page",
		}, nil},
		{"search form", "/search", []string{`name="q"`, `type="date"`, `<option value="content">`, `>City sports</option>`}, nil},
		{"digest", "/digest", []string{"Monday 4 May 2026", "matching your interests", mark, `rel="prev"`}, []string{
			"★ Matches your interests", "City sports", "soccer", "Other changes", "City sports", "Sunshine",
		}},
		{"digest of a day", "/digest/2026-05-03", []string{"Sunday 3 May 2026", "Nothing changed that day", `href="/digest/2026-05-04"`}, nil},
		{"settings", "/settings", []string{
			"/feeds/" + token + "/atom.xml", "/feeds/" + token + "/tags/sport.xml", `action="/settings/tokens"`,
			`action="/settings/password"`, `action="/settings/feed-token"`, `href="/opml"`, `action="/opml"`,
			`<option value="-1" selected>never</option>`, "no mail set up",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := sc.c.get(tc.path)
			mustStatus(t, tc.path, resp, body, http.StatusOK)
			mustContain(t, body, tc.wants...)
			if tc.order != nil {
				inOrder(t, body[strings.Index(body, "<main"):], tc.order...)
			}
			mustNotContain(t, body, `style="`, "<script", "ZgotmplZ")
			if strings.Contains(body, `method="post"`) && !strings.Contains(body, `name="csrf_token"`) {
				t.Error("a form posts without a CSRF token")
			}
		})
	}

	t.Run("source", func(t *testing.T) {
		resp, body := sc.c.get(sc.wpath("/versions/2/source"))
		mustStatus(t, "source", resp, body, http.StatusOK)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("source served as %q", ct)
		}
		if body != sportsV2 {
			t.Error("the source is not the stored body")
		}
	})
}

// TestPagesEscapeWatchText checks that text from watched pages and user
// input is escaped on every page that shows it.
func TestPagesEscapeWatchText(t *testing.T) {
	sc := mustScene(t)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	w := sc.e.mustWatch(sc.u, "https://evil.example.org/?q=<b>", `x"><script>alert(3)</script>`)
	sc.setState(w.ID, func(w *changedigest.Watch) { w.Title, w.LastError = evil, evil })
	sc.e.addVersion(w, `<html><body><p>first `+evil+`</p><p>Stay tuned.</p></body></html>`)
	sc.e.addVersion(w, `<html><body><p>second soccer &lt;script&gt;alert(4)&lt;/script&gt;</p><p>Stay tuned.</p></body></html>`)
	for _, p := range []string{"/", fmt.Sprintf("/watches/%d", w.ID), fmt.Sprintf("/watches/%d/versions/2", w.ID),
		fmt.Sprintf("/watches/%d/versions/2/content", w.ID), fmt.Sprintf("/watches/%d/edit", w.ID), "/search?q=soccer", "/digest", "/settings"} {
		resp, body := sc.c.get(p)
		mustStatus(t, p, resp, body, http.StatusOK)
		mustNotContain(t, body, "<script>alert", "<img src=x", `"><script>`)
	}
}

// fakeChecker stands in for the crawler behind "Check now".
type fakeChecker struct {
	result crawl.Result
	err    error
	called []int64
}

func (f *fakeChecker) CheckNow(ctx context.Context, progress func(crawl.Report), ws ...*changedigest.Watch) (crawl.Summary, error) {
	for _, w := range ws {
		f.called = append(f.called, w.ID)
		progress(crawl.Report{Watch: w, Outcome: crawl.Outcome{Result: f.result}, Err: f.err})
	}
	return crawl.Summary{Checked: len(ws)}, nil
}

func TestWatchForms(t *testing.T) {
	sc := mustScene(t)
	ctx := context.Background()
	c := sc.c

	t.Run("create", func(t *testing.T) {
		resp, _ := c.post("/watches", url.Values{"url": {"https://new.example.org/page"}, "title": {"New page"},
			"zone": {"main article"}, "category": {"news"}, "tags": {"Work, later"}, "keep_versions": {"50"}})
		body := c.follow(resp)
		mustContain(t, body, "Watching https://new.example.org/page", "<h1>New page</h1>", "No version stored yet")
		ws, err := sc.e.store.Watches(ctx, sc.u.ID, "work")
		if err != nil || len(ws) != 1 {
			t.Fatalf("watches tagged work: %v %v", ws, err)
		}
		w := ws[0]
		if w.Zone != "main article" || w.Category != changedigest.CategoryNews || w.KeepVersions != 50 || strings.Join(w.Tags, ",") != "work,later" {
			t.Errorf("stored watch %+v", w)
		}
	})

	for _, tc := range []struct {
		name   string
		form   url.Values
		errMsg string
	}{
		{"bad URL", url.Values{"url": {"not a url"}, "title": {"Kept title"}}, `watch URL &#34;not a url&#34; is not an absolute http or https URL`},
		{"ftp URL", url.Values{"url": {"ftp://example.org/"}, "title": {"Kept title"}}, "is not an absolute http or https URL"},
		{"bad zone", url.Values{"url": {"https://example.org/"}, "zone": {"div["}, "title": {"Kept title"}}, "invalid zone selector &#34;div[&#34;"},
		{"bad interval", url.Values{"url": {"https://example.org/"}, "every": {"often"}, "title": {"Kept title"}}, "interval &#34;often&#34; is not a duration"},
		{"short interval", url.Values{"url": {"https://example.org/"}, "every": {"10s"}, "title": {"Kept title"}}, "shorter than one minute"},
		{"bad retention", url.Values{"url": {"https://example.org/"}, "keep_days": {"-3"}, "title": {"Kept title"}}, "days to keep"},
		{"bad category", url.Values{"url": {"https://example.org/"}, "category": {"gossip"}, "title": {"Kept title"}}, "unknown category"},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			before, _ := sc.e.store.Watches(ctx, sc.u.ID, "")
			resp, body := c.post("/watches", tc.form)
			mustStatus(t, tc.name, resp, body, http.StatusBadRequest)
			mustContain(t, body, `<div class="form-error" role="alert">`, tc.errMsg, `value="Kept title"`, `action="/watches"`)
			after, _ := sc.e.store.Watches(ctx, sc.u.ID, "")
			if len(after) != len(before) {
				t.Errorf("a bad form created a watch")
			}
		})
	}

	t.Run("edit", func(t *testing.T) {
		resp, _ := c.post(sc.wpath(""), url.Values{"url": {"https://sports.example.org/"}, "title": {"Sports (city)"},
			"category": {"academic"}, "every": {"2h"}, "tags": {"sport"}, "paused": {"1"}})
		body := c.follow(resp)
		mustContain(t, body, "Saved.", "<h1>Sports (city)</h1>", "every 2h", "paused")
		w, err := sc.e.store.Watch(ctx, sc.u.ID, sc.sports.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w.Title != "Sports (city)" || w.Interval != 2*time.Hour || !w.Paused || w.Category != changedigest.CategoryAcademic {
			t.Errorf("edited watch %+v", w)
		}
		_, form := c.get(sc.wpath("/edit"))
		mustContain(t, form, `value="2h"`, `name="paused" value="1" checked`, `<option value="academic" selected>`)
	})

	t.Run("edit bad zone", func(t *testing.T) {
		resp, body := c.post(sc.wpath(""), url.Values{"url": {"https://sports.example.org/"}, "title": {"Renamed"}, "zone": {"div["}})
		mustStatus(t, "bad zone", resp, body, http.StatusBadRequest)
		mustContain(t, body, `<div class="form-error" role="alert">`, "invalid zone selector", `value="div["`, `action="`+sc.wpath("")+`"`, "Edit the watch")
		w, _ := sc.e.store.Watch(ctx, sc.u.ID, sc.sports.ID)
		if w.Title == "Renamed" || w.Zone != "" {
			t.Errorf("a bad edit changed the watch: %+v", w)
		}
	})

	t.Run("edit bad URL", func(t *testing.T) {
		resp, body := c.post(sc.wpath(""), url.Values{"url": {"javascript:alert(1)"}})
		mustStatus(t, "bad URL", resp, body, http.StatusBadRequest)
		mustContain(t, body, "is not an absolute http or https URL")
		w, _ := sc.e.store.Watch(ctx, sc.u.ID, sc.sports.ID)
		if w.URL != "https://sports.example.org/" {
			t.Errorf("a bad edit changed the URL to %q", w.URL)
		}
	})

	t.Run("check now", func(t *testing.T) {
		fc := &fakeChecker{result: crawl.Unchanged}
		sc.e.srv.Checker = fc
		defer func() { sc.e.srv.Checker = nil }()
		resp, _ := c.post(sc.wpath("/check"), nil)
		mustContain(t, c.follow(resp), "Checked: no change.")
		fc.err = changedigest.Errorf(changedigest.EUNAVAILABLE, "connection refused")
		resp, _ = c.post(sc.wpath("/check"), nil)
		mustContain(t, c.follow(resp), `flash-error`, "The check failed", "connection refused")
		if len(fc.called) != 2 || fc.called[0] != sc.sports.ID {
			t.Errorf("checked %v", fc.called)
		}
	})

	t.Run("delete", func(t *testing.T) {
		resp, _ := c.post(fmt.Sprintf("/watches/%d/delete", sc.broken.ID), nil)
		body := c.follow(resp)
		mustContain(t, body, "Stopped watching https://gone.example.net/news")
		if _, err := sc.e.store.Watch(ctx, sc.u.ID, sc.broken.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			t.Errorf("deleted watch: %v", err)
		}
		resp, body = c.post(fmt.Sprintf("/watches/%d/delete", sc.broken.ID), nil)
		mustStatus(t, "delete again", resp, body, http.StatusNotFound)
	})
}

// TestBadRequests checks that bad addresses and inputs give clear error
// pages with the right status.
func TestBadRequests(t *testing.T) {
	sc := mustScene(t)
	for _, tc := range []struct {
		path   string
		status int
		msg    string
	}{
		{"/watches/999", 404, "Not found"},
		{"/watches/abc", 404, "is not a valid id"},
		{"/watches/0/edit", 404, "is not a valid id"},
		{"/watches/999/versions/1", 404, "Not found"},
		{sc.wpath("/versions/9"), 404, "Not found"},
		{sc.wpath("/versions/0"), 404, "is not a version number"},
		{sc.wpath("/versions/x/content"), 404, "is not a version number"},
		{sc.wpath("/versions/9/content"), 404, "Not found"},
		{sc.wpath("/versions/9/source"), 404, "Not found"},
		{sc.wpath("/compare?from=abc"), 400, "from: &#34;abc&#34; is not a version number"},
		{sc.wpath("/compare?from=1&to=99"), 404, "Not found"},
		{fmt.Sprintf("/watches/%d/compare", sc.broken.ID), 404, "has no stored version yet"},
		{"/search?q=soccer&since=yesterday", 400, "since: &#34;yesterday&#34; is not a date"},
		{"/search?q=soccer&type=funny", 400, "unknown change type"},
		{"/search?q=soccer&offset=-1", 400, "offset"},
		{"/digest/2026-13-45", 400, "is not a day"},
		{"/no/such/page", 404, "there is no page at /no/such/page"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := sc.c.get(tc.path)
			mustStatus(t, tc.path, resp, body, tc.status)
			mustContain(t, body, tc.msg)
		})
	}
	// A search error keeps the form filled in.
	_, body := sc.c.get("/search?q=soccer&since=yesterday")
	mustContain(t, body, `value="soccer"`, `<div class="form-error" role="alert">`)
}

func TestProfileForms(t *testing.T) {
	sc := mustScene(t)
	ctx := context.Background()
	c := sc.c
	profile := func() *changedigest.Profile {
		t.Helper()
		p, _, err := sc.e.store.Profile(ctx, sc.u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	terms := func(p *changedigest.Profile) string {
		var out []string
		for _, in := range p.Interests {
			out = append(out, in.Term)
		}
		return strings.Join(out, ",")
	}

	t.Run("add term", func(t *testing.T) {
		resp, _ := c.post("/profile/terms", url.Values{"term": {"  election  "}})
		body := c.follow(resp)
		mustContain(t, body, "Added election.", `<span class="interest-term">election</span>`)
		if got := terms(profile()); got != "football,cycling,election" {
			t.Errorf("terms %q", got)
		}
	})
	t.Run("add empty term", func(t *testing.T) {
		resp, body := c.post("/profile/terms", url.Values{"term": {"   "}})
		mustStatus(t, "empty term", resp, body, http.StatusBadRequest)
		mustContain(t, body, `<div class="form-error" role="alert">`, `<span class="interest-term">football</span>`)
	})
	t.Run("remove term", func(t *testing.T) {
		resp, _ := c.post("/profile/terms/remove", url.Values{"term": {"cycling"}})
		body := c.follow(resp)
		mustContain(t, body, "Removed cycling", "Removed terms", `aria-label="Add cycling again"`)
		p := profile()
		if got := terms(p); got != "football,election" || strings.Join(p.Excluded, ",") != "cycling" {
			t.Errorf("terms %q, excluded %q", got, p.Excluded)
		}
	})
	t.Run("remove unknown term", func(t *testing.T) {
		resp, body := c.post("/profile/terms/remove", url.Values{"term": {"knitting"}})
		mustStatus(t, "unknown term", resp, body, http.StatusBadRequest)
		mustContain(t, body, "&#34;knitting&#34; is not one of your interests")
		if p := profile(); len(p.Excluded) != 1 {
			t.Errorf("excluded %q after a failed removal", p.Excluded)
		}
	})
	t.Run("upload FOAF", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join("..", "demo", "profile.ttl"))
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := c.postFile("/profile/foaf", nil, "foaf", "profile.ttl", doc)
		body := c.follow(resp)
		mustContain(t, body, "Profile updated", "Demo Reader", "A FOAF document is stored",
			`<span class="interest-term">semantic web</span>`, `<span class="interest-term">election</span>`, "foaf:interest")
		// cycling, removed by hand above, stays out although the
		// document names it, until the user adds it back.
		p := profile()
		if got := terms(p); got != "football,semantic web,election" || strings.Join(p.Excluded, ",") != "cycling" {
			t.Errorf("after the upload: terms %q, excluded %q", got, p.Excluded)
		}
		resp, _ = c.post("/profile/terms", url.Values{"term": {"cycling"}})
		mustContain(t, c.follow(resp), `<span class="interest-term">cycling</span>`)
		if p := profile(); len(p.Excluded) != 0 || !strings.HasSuffix(terms(p), ",cycling") {
			t.Errorf("cycling added back: terms %q, excluded %q", terms(p), p.Excluded)
		}
	})
	t.Run("paste FOAF", func(t *testing.T) {
		doc := `@prefix foaf: <http://xmlns.com/foaf/0.1/> .
<#me> a foaf:Person ; foaf:name "Pasted Person" ; foaf:topic_interest [ foaf:name "chess" ] .`
		resp, _ := c.postFile("/profile/foaf", url.Values{"foaf_text": {doc}}, "", "", nil)
		body := c.follow(resp)
		mustContain(t, body, "Profile updated", `<span class="interest-term">chess</span>`)
	})
	t.Run("malformed FOAF", func(t *testing.T) {
		before := terms(profile())
		resp, body := c.postFile("/profile/foaf", nil, "foaf", "broken.ttl", []byte("@prefix foaf: <http://xmlns.com/foaf/0.1/ .\n<#me> foaf:interest"))
		mustStatus(t, "malformed", resp, body, http.StatusBadRequest)
		mustContain(t, body, `<div class="form-error" role="alert">`, "broken.ttl: Turtle syntax error at line 1")
		if after := terms(profile()); after != before {
			t.Errorf("a malformed upload changed the terms: %q → %q", before, after)
		}
	})
	t.Run("entity bomb", func(t *testing.T) {
		before := terms(profile())
		bomb := []byte(mustReadFile(t, "../profile/testdata/bomb/laughs10.rdf"))
		resp, body := c.postFile("/profile/foaf", nil, "foaf", "laughs.rdf", bomb)
		mustStatus(t, "entity bomb", resp, body, http.StatusBadRequest)
		mustContain(t, body, `<div class="form-error" role="alert">`, "laughs.rdf: RDF/XML syntax error at line 10: entity expansion refused")
		if after := terms(profile()); after != before {
			t.Errorf("the upload changed the terms: %q → %q", before, after)
		}
	})
	t.Run("empty upload", func(t *testing.T) {
		resp, body := c.postFile("/profile/foaf", nil, "", "", nil)
		mustStatus(t, "empty", resp, body, http.StatusBadRequest)
		mustContain(t, body, "choose a FOAF file or paste one")
	})
	t.Run("upload too large", func(t *testing.T) {
		old := sc.e.srv.MaxUpload
		sc.e.srv.MaxUpload = 16 << 10
		defer func() { sc.e.srv.MaxUpload = old }()
		big := bytes.Repeat([]byte("# padding line of a very large FOAF file\n"), 1000)
		resp, body := c.postFile("/profile/foaf", nil, "foaf", "big.ttl", big)
		mustStatus(t, "too large", resp, body, http.StatusRequestEntityTooLarge)
		mustContain(t, body, "Too large", "larger than 16384 bytes")
	})
}

// secretRE finds an API token secret on a page.
var secretRE = regexp.MustCompile(`cdt_[A-Za-z0-9_-]+`)

func TestSettingsForms(t *testing.T) {
	sc := mustScene(t)
	ctx := context.Background()
	c := sc.c
	user := func() *changedigest.User {
		t.Helper()
		u, err := sc.e.store.User(ctx, sc.u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}

	t.Run("save", func(t *testing.T) {
		resp, _ := c.post("/settings", url.Values{"email": {" ann@example.org "}, "digest_hour": {"7"}})
		body := c.follow(resp)
		mustContain(t, body, "Settings saved.", `value="ann@example.org"`, `<option value="7" selected>every day at 07:00</option>`)
		if u := user(); u.Email != "ann@example.org" || u.DigestHour != 7 {
			t.Errorf("user %+v", u)
		}
	})
	for _, tc := range []struct {
		name string
		form url.Values
		msg  string
	}{
		{"bad e-mail", url.Values{"email": {"ann at example"}, "digest_hour": {"7"}}, "is not an e-mail address"},
		{"named e-mail", url.Values{"email": {"Ann <ann@example.org>"}, "digest_hour": {"7"}}, "is not an e-mail address"},
		{"bad hour", url.Values{"email": {""}, "digest_hour": {"25"}}, "choose a digest hour"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := c.post("/settings", tc.form)
			mustStatus(t, tc.name, resp, body, http.StatusBadRequest)
			mustContain(t, body, `<div class="form-error" role="alert">`, tc.msg)
			if u := user(); u.Email != "ann@example.org" || u.DigestHour != 7 {
				t.Errorf("a bad form changed the user: %+v", u)
			}
		})
	}

	t.Run("tokens", func(t *testing.T) {
		resp, body := c.post("/settings/tokens", url.Values{"name": {"backup script"}})
		mustStatus(t, "create token", resp, body, http.StatusOK)
		mustContain(t, body, "Your new API token", "shown only this once", "<strong>backup script</strong>")
		secret := secretRE.FindString(body)
		if secret == "" {
			t.Fatal("no token secret on the page")
		}
		if u, tok, err := sc.e.store.UserByToken(ctx, secret); err != nil || u.ID != sc.u.ID || tok.Name != "backup script" {
			t.Fatalf("the secret shown does not work: %v", err)
		}
		_, again := c.get("/settings")
		mustNotContain(t, again, secret, "Your new API token")
		mustContain(t, again, "<strong>backup script</strong>")

		resp, body = c.post("/settings/tokens", url.Values{"name": {"backup script"}})
		mustStatus(t, "duplicate token", resp, body, http.StatusBadRequest)
		mustContain(t, body, "already have a token named")

		toks, _ := sc.e.store.Tokens(ctx, sc.u.ID)
		if len(toks) != 1 {
			t.Fatalf("tokens %v", toks)
		}
		resp, _ = c.post(fmt.Sprintf("/settings/tokens/%d/revoke", toks[0].ID), nil)
		mustContain(t, c.follow(resp), fmt.Sprintf("Token %d revoked.", toks[0].ID), "You have no API token.")
		if _, _, err := sc.e.store.UserByToken(ctx, secret); err == nil {
			t.Error("a revoked token still works")
		}
		resp, body = c.post(fmt.Sprintf("/settings/tokens/%d/revoke", toks[0].ID), nil)
		mustStatus(t, "revoke again", resp, body, http.StatusNotFound)
	})

	t.Run("rotate feed token", func(t *testing.T) {
		old := user().FeedToken
		resp, body := c.get("/feeds/" + old + "/atom.xml")
		mustStatus(t, "feed", resp, body, http.StatusOK)
		resp, _ = c.post("/settings/feed-token", nil)
		page := c.follow(resp)
		fresh := user().FeedToken
		if fresh == old || fresh == "" {
			t.Fatal("the feed token did not change")
		}
		mustContain(t, page, "new addresses", "/feeds/"+fresh+"/atom.xml")
		mustNotContain(t, page, old)
		resp, body = c.get("/feeds/" + old + "/atom.xml")
		mustStatus(t, "old feed", resp, body, http.StatusNotFound)
	})

	t.Run("password", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			form url.Values
			msg  string
		}{
			{"wrong current", url.Values{"current": {"wrong one"}, "new": {"a new secret"}, "repeat": {"a new secret"}}, "the current password is wrong"},
			{"mismatch", url.Values{"current": {scenePassword}, "new": {"a new secret"}, "repeat": {"a new secreT"}}, "the two new passwords differ"},
			{"too short", url.Values{"current": {scenePassword}, "new": {"short"}, "repeat": {"short"}}, "at least 8 characters"},
		} {
			resp, body := c.post("/settings/password", tc.form)
			mustStatus(t, tc.name, resp, body, http.StatusBadRequest)
			mustContain(t, body, tc.msg)
		}
		other := sc.e.login("ann", scenePassword) // a second browser
		resp, _ := c.post("/settings/password", url.Values{"current": {scenePassword}, "new": {"a new secret"}, "repeat": {"a new secret"}})
		mustContain(t, c.follow(resp), "Password changed. Please log in again.")
		for _, cl := range []*client{c, other} {
			if resp, _ := cl.get("/"); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("a session outlived the password change: %d", resp.StatusCode)
			}
		}
		resp, _ = sc.e.client().post("/login", url.Values{"name": {"ann"}, "password": {scenePassword}})
		mustStatus(t, "old password", resp, "", http.StatusUnauthorized)
		sc.e.login("ann", "a new secret")
	})
}

// TestTagLinks follows the tag links of the dashboard for tags holding
// characters that mean something in a path or URL.
func TestTagLinks(t *testing.T) {
	sc := mustScene(t)
	tags := []string{"c#/net", "100%", "a?b", "local news"}
	w := sc.e.mustWatch(sc.u, "https://odd.example.org/", tags...)
	sc.setState(w.ID, func(w *changedigest.Watch) { w.Title = "Odd tags" })
	_, dash := sc.c.get("/")
	links := regexp.MustCompile(`<a class="tag" href="([^"]+)">([^<]+)</a>`).FindAllStringSubmatch(dash, -1)
	seen := map[string]bool{}
	for _, m := range links {
		name := strings.ReplaceAll(m[2], "&#34;", `"`)
		if seen[name] {
			continue
		}
		seen[name] = true
		resp, body := sc.c.get(m[1])
		mustStatus(t, m[1], resp, body, http.StatusOK)
		if !strings.Contains(body, "Tag: "+m[2]+"</h1>") || (slices.Contains(tags, name) && !strings.Contains(body, ">Odd tags</a>")) {
			t.Errorf("%s: not the page of tag %q with its watch", m[1], name)
		}
		feed := regexp.MustCompile(`/feeds/[^"]+\.xml`).FindString(body)
		if resp, body := sc.c.get(feed); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<feed") {
			t.Errorf("%s: feed %s: status %d", m[1], feed, resp.StatusCode)
		}
	}
	for _, tag := range tags {
		if !seen[tag] {
			t.Errorf("no link for tag %q on the dashboard", tag)
		}
	}
}

// TestSearchPaging pages through more hits than fit on one page.
func TestSearchPaging(t *testing.T) {
	sc := mustScene(t)
	w := sc.e.mustWatch(sc.u, "https://matches.example.org/")
	t0 := sc.e.clock()
	for i := 1; i <= searchPageSize+5; i++ {
		sc.e.setNow(t0.Add(time.Duration(i) * time.Hour))
		sc.e.addVersion(w, fmt.Sprintf(`<html><body><p>Matchday %d: the derby ended %d to %d after extra time.</p></body></html>`, i, i, i+1))
	}
	resp, body := sc.c.get("/search?q=derby")
	mustStatus(t, "page 1", resp, body, http.StatusOK)
	mustContain(t, body, fmt.Sprintf("%d hits", searchPageSize+5), `rel="next"`)
	mustNotContain(t, body, `rel="prev"`)
	if n := strings.Count(body, `<li class="hit">`); n != searchPageSize {
		t.Errorf("page 1 has %d hits", n)
	}
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(body)
	if next == nil {
		t.Fatal("no link to the next page")
	}
	resp, body = sc.c.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	mustStatus(t, "page 2", resp, body, http.StatusOK)
	mustContain(t, body, `rel="prev"`, `value="derby"`)
	mustNotContain(t, body, `rel="next"`)
	if n := strings.Count(body, `<li class="hit">`); n != 5 {
		t.Errorf("page 2 has %d hits", n)
	}
}
