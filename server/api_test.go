package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/profile"
	"github.com/changedigest/changedigest/segmenter"
)

// apiClient calls the JSON API with a bearer token.
type apiClient struct {
	t     testing.TB
	base  string
	token string
}

// mustToken creates an API token for u.
func (e *testEnv) mustToken(u *changedigest.User) string {
	e.t.Helper()
	secret, _, err := e.store.CreateToken(context.Background(), u.ID, fmt.Sprintf("test-%d", time.Now().UnixNano()))
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

func (e *testEnv) api(u *changedigest.User) *apiClient {
	return &apiClient{t: e.t, base: e.http.URL + "/api/v1", token: e.mustToken(u)}
}

// raw sends a request with a body of the given content type ("" for none).
func (c *apiClient) raw(method, path, ctype string, body []byte) (*http.Response, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, b
}

// call sends v as JSON (none when nil), checks the status and decodes
// the answer into out (when not nil).
func (c *apiClient) call(method, path string, v any, want int, out any) *http.Response {
	c.t.Helper()
	var body []byte
	ctype := ""
	if v != nil {
		var err error
		if s, ok := v.(string); ok {
			body = []byte(s)
		} else if body, err = json.Marshal(v); err != nil {
			c.t.Fatal(err)
		}
		ctype = "application/json"
	}
	resp, b := c.raw(method, path, ctype, body)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp
}

// apiErr is the error body of the API.
type apiErr struct {
	Error struct{ Code, Message string }
}

// callErr expects an error answer with the status, code and a message
// holding every one of wants.
func (c *apiClient) callErr(method, path, ctype string, body []byte, status int, code string, wants ...string) {
	c.t.Helper()
	resp, b := c.raw(method, path, ctype, body)
	if resp.StatusCode != status {
		c.t.Errorf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, status, b)
		return
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Errorf("%s %s: error with Content-Type %q", method, path, ct)
	}
	var e apiErr
	if err := json.Unmarshal(b, &e); err != nil {
		c.t.Errorf("%s %s: %v in %s", method, path, err, b)
		return
	}
	if e.Error.Code != code {
		c.t.Errorf("%s %s: code %q, want %q (%s)", method, path, e.Error.Code, code, e.Error.Message)
	}
	for _, w := range wants {
		if !strings.Contains(e.Error.Message, w) {
			c.t.Errorf("%s %s: message %q lacks %q", method, path, e.Error.Message, w)
		}
	}
}

// mustReadFile returns the text of a test file.
func mustReadFile(tb testing.TB, name string) string {
	tb.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// addTypedVersion stores body as the next version of w with a
// Content-Type, as the check pipeline does.
func (e *testEnv) addTypedVersion(w *changedigest.Watch, body []byte, ctype string) *changedigest.Snapshot {
	e.t.Helper()
	ctx := context.Background()
	snap, err := e.seg.Detect(segmenterInput(e, w, crawl.ToUTF8(body, ctype)))
	if err != nil {
		e.t.Fatal(err)
	}
	snap.FetchedAt, snap.Status, snap.ContentType = e.clock(), 200, ctype
	if !bytes.Equal(body, crawl.ToUTF8(body, ctype)) {
		for i := range snap.Segments {
			snap.Segments[i].Start, snap.Segments[i].End = -1, -1
		}
	}
	if _, err := e.store.AddVersion(ctx, w.ID, snap, body); err != nil {
		e.t.Fatal(err)
	}
	return snap
}

// segmenterInput is the input of the next version of w, as addVersion builds it.
func segmenterInput(e *testEnv, w *changedigest.Watch, body []byte) segmenter.Input {
	e.t.Helper()
	ctx := context.Background()
	in := segmenter.Input{Body: body, Zone: w.Zone}
	if prev, err := e.store.Latest(ctx, w.ID); err == nil {
		in.Prev = prev
		raw, err := e.store.Body(ctx, w.ID, prev.Seq)
		if err != nil {
			e.t.Fatal(err)
		}
		in.PrevBody = crawl.ToUTF8(raw, prev.ContentType)
		if in.History, err = e.store.History(ctx, w.ID, 5); err != nil {
			e.t.Fatal(err)
		}
	}
	return in
}

// setKind records the kind of a watch, as the first check does.
func (e *testEnv) setKind(w *changedigest.Watch, k changedigest.Kind) {
	e.t.Helper()
	if _, err := e.store.UpdateWatch(context.Background(), w.UserID, w.ID, func(x *changedigest.Watch) error {
		x.Kind = k
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
}

func TestAPIAuth(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	good := e.api(ann)
	revoked := e.api(ann)
	toks, err := e.store.Tokens(context.Background(), ann.ID)
	if err != nil || len(toks) != 2 {
		t.Fatalf("tokens: %v %v", toks, err)
	}
	if err := e.store.RevokeToken(context.Background(), ann.ID, toks[1].ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, header string
	}{
		{"no header", ""},
		{"basic auth", "Basic YW5uOmNvcnJlY3QgaG9yc2U="},
		{"empty bearer", "Bearer "},
		{"unknown token", "Bearer cd_notarealtoken"},
		{"revoked token", "Bearer " + revoked.token},
		{"session cookie value", "Bearer " + strings.Repeat("x", 43)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", good.base+"/watches", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
			var ae apiErr
			if json.Unmarshal(b, &ae) != nil || ae.Error.Code != changedigest.EUNAUTHORIZED || ae.Error.Message == "" {
				t.Errorf("body %s", b)
			}
		})
	}
	var out struct{ Watches []apiWatch }
	good.call("GET", "/watches", nil, http.StatusOK, &out)
	if out.Watches == nil {
		t.Errorf("an empty list should be [], got null")
	}
	// A logged-in browser session is not an API credential.
	c := e.login("ann", "correct horse")
	resp, _ := c.get("/api/v1/watches")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("session cookie on the API: status %d", resp.StatusCode)
	}
}

func TestAPIWatches(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)

	var w apiWatch
	resp := c.call("POST", "/watches", map[string]any{
		"url": " https://example.org/news ", "title": "Example news", "zone": "main article", "category": "news",
		"every": "2h", "tags": []string{"News", "work, local"}, "keep_versions": 30,
	}, http.StatusCreated, &w)
	if loc := resp.Header.Get("Location"); loc != fmt.Sprintf("/api/v1/watches/%d", w.ID) {
		t.Errorf("Location %q for watch %d", loc, w.ID)
	}
	want := apiWatch{ID: w.ID, URL: "https://example.org/news", Title: "Example news", Zone: "main article",
		Category: changedigest.CategoryNews, Every: "2h", Tags: []string{"news", "work", "local"}, KeepVersions: 30}
	if w.URL != want.URL || w.Title != want.Title || w.Zone != want.Zone || w.Category != want.Category ||
		w.Every != want.Every || !reflect.DeepEqual(w.Tags, want.Tags) || w.KeepVersions != 30 || w.Paused {
		t.Errorf("created %+v\nwant %+v", w, want)
	}
	if !w.NextCheck.Equal(e.clock()) {
		t.Errorf("next check %v, want now (%v)", w.NextCheck, e.clock())
	}
	if !strings.HasSuffix(w.FeedURL, fmt.Sprintf("/watches/%d.xml", w.ID)) {
		t.Errorf("feed URL %q", w.FeedURL)
	}
	var w2 apiWatch
	c.call("POST", "/watches", map[string]any{"url": "https://example.org/blog", "every": 86400, "paused": true}, http.StatusCreated, &w2)
	if w2.Every != "1d" || !w2.Paused || w2.Category != changedigest.CategoryPersonal || len(w2.Tags) != 0 {
		t.Errorf("second watch %+v", w2)
	}

	var list struct{ Watches []apiWatch }
	c.call("GET", "/watches", nil, http.StatusOK, &list)
	if len(list.Watches) != 2 {
		t.Fatalf("list: %+v", list)
	}
	c.call("GET", "/watches?tag=Local", nil, http.StatusOK, &list)
	if len(list.Watches) != 1 || list.Watches[0].ID != w.ID {
		t.Errorf("list by tag: %+v", list)
	}
	var got apiWatch
	c.call("GET", fmt.Sprintf("/watches/%d", w.ID), nil, http.StatusOK, &got)
	if !reflect.DeepEqual(got, w) {
		t.Errorf("get %+v\nwant %+v", got, w)
	}

	// PATCH changes what it names and nothing else.
	e.setNow(e.clock().Add(time.Minute))
	var p apiWatch
	c.call("PATCH", fmt.Sprintf("/watches/%d", w.ID), map[string]any{"title": "Renamed", "every": nil, "tags": []string{"x"}}, http.StatusOK, &p)
	if p.Title != "Renamed" || p.Every != "" || !reflect.DeepEqual(p.Tags, []string{"x"}) ||
		p.URL != w.URL || p.Zone != w.Zone || p.Category != w.Category || p.KeepVersions != 30 {
		t.Errorf("patched %+v", p)
	}
	c.call("PATCH", fmt.Sprintf("/watches/%d", w.ID), map[string]any{"every": 5400, "keep_versions": 0, "paused": true}, http.StatusOK, &p)
	if p.Every != "90m" || p.KeepVersions != 0 || !p.Paused || p.Title != "Renamed" {
		t.Errorf("patched again %+v", p)
	}

	big := `{"url":"https://example.org/` + strings.Repeat("a", int(e.srv.MaxUpload)) + `"}`
	id := fmt.Sprintf("/watches/%d", w.ID)
	tests := []struct {
		name, method, path, ctype string
		body                      []byte
		status                    int
		code                      string
		wants                     []string
	}{
		{"bad URL", "POST", "/watches", "application/json", mustJSON(map[string]any{"url": "ftp://example.org/"}), 400, "invalid", []string{"URL", "ftp://example.org/"}},
		{"no URL", "POST", "/watches", "application/json", []byte(`{"title":"x"}`), 400, "invalid", []string{"URL is required"}},
		{"unknown field", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","colour":"red"}`), 400, "invalid", []string{`unknown field "colour"`}},
		{"wrong type", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","tags":"a,b"}`), 400, "invalid", []string{`"tags"`, "list of strings"}},
		{"wrong type number", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","keep_days":"ten"}`), 400, "invalid", []string{`"keep_days"`, "whole number"}},
		{"bad every", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","every":"soon"}`), 400, "invalid", []string{"every", "soon"}},
		{"every too short", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","every":30}`), 400, "invalid", []string{"shorter than one minute"}},
		{"every fraction", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","every":90.5}`), 400, "invalid", []string{"every", "90.5"}},
		{"every bool", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","every":true}`), 400, "invalid", []string{"every"}},
		{"bad zone", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","zone":"div[["}`), 400, "invalid", []string{"zone", "div[["}},
		{"bad category", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","category":"sports"}`), 400, "invalid", []string{"category", "sports"}},
		{"negative retention", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","keep_days":-1}`), 400, "invalid", []string{"keep_days"}},
		{"long tag", "POST", "/watches", "application/json", mustJSON(map[string]any{"url": "https://a.example/", "tags": []string{strings.Repeat("t", 65)}}), 400, "invalid", []string{"tag", "longer than 64"}},
		{"empty body", "POST", "/watches", "application/json", nil, 400, "invalid", []string{"empty"}},
		{"syntax error", "POST", "/watches", "application/json", []byte(`{"url": "https://a.example/",}`), 400, "invalid", []string{"not valid at byte"}},
		{"truncated", "POST", "/watches", "application/json", []byte(`{"url": "https://a.exa`), 400, "invalid", []string{"ends too early"}},
		{"two values", "POST", "/watches", "application/json", []byte(`{"url":"https://a.example/"} {}`), 400, "invalid", []string{"more than one value"}},
		{"array body", "POST", "/watches", "application/json", []byte(`[{"url":"https://a.example/"}]`), 400, "invalid", []string{"JSON object"}},
		{"duplicate", "POST", "/watches", "application/json", []byte(`{"url":"https://example.org/blog"}`), 409, "conflict", nil},
		{"form content type", "POST", "/watches", "application/x-www-form-urlencoded", []byte(`url=https://a.example/`), 415, "invalid", []string{"application/json", "application/x-www-form-urlencoded"}},
		{"no content type", "POST", "/watches", "", []byte(`{"url":"https://a.example/"}`), 415, "invalid", []string{"application/json", "none"}},
		{"too large", "POST", "/watches", "application/json", []byte(big), 413, "too_large", []string{"larger than"}},
		{"unknown id", "GET", "/watches/999", "", nil, 404, "not_found", []string{"999"}},
		{"id not a number", "GET", "/watches/abc", "", nil, 404, "not_found", []string{"abc"}},
		{"patch unknown id", "PATCH", "/watches/999", "application/json", []byte(`{"title":"x"}`), 404, "not_found", nil},
		{"patch bad URL", "PATCH", id, "application/json", []byte(`{"url":"not a url"}`), 400, "invalid", []string{"not a url"}},
		{"patch unknown field", "PATCH", id, "application/json", []byte(`{"id":7}`), 400, "invalid", []string{`"id"`}},
		{"patch duplicate", "PATCH", id, "application/json", []byte(`{"url":"https://example.org/blog","zone":""}`), 409, "conflict", nil},
		{"patch wrong type", "PATCH", id, "text/plain", []byte(`{"title":"x"}`), 415, "invalid", []string{"text/plain"}},
		{"delete unknown", "DELETE", "/watches/999", "", nil, 404, "not_found", nil},
		{"method not allowed", "PUT", "/watches", "application/json", []byte(`{}`), 405, "invalid", []string{"PUT"}},
		{"unknown endpoint", "GET", "/nothing-here", "", nil, 404, "not_found", []string{"/nothing-here"}},
		{"bad tag filter", "GET", "/watches?tag=,", "", nil, 400, "invalid", []string{"tag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = e.t }()
			c.callErr(tt.method, tt.path, tt.ctype, tt.body, tt.status, tt.code, tt.wants...)
		})
	}
	// Failed PATCHes left the watch as it was.
	var after apiWatch
	c.call("GET", id, nil, http.StatusOK, &after)
	if !reflect.DeepEqual(after, p) {
		t.Errorf("after failed patches %+v\nwant %+v", after, p)
	}

	// PATCH of the URL starts a fresh conditional GET.
	if _, err := e.store.UpdateWatch(context.Background(), ann.ID, w2.ID, func(x *changedigest.Watch) error {
		x.ETag, x.LastModified = `"v1"`, "Mon, 04 May 2026 10:00:00 GMT"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.call("PATCH", fmt.Sprintf("/watches/%d", w2.ID), map[string]any{"url": "https://example.org/blog2"}, http.StatusOK, nil)
	stored, err := e.store.Watch(context.Background(), ann.ID, w2.ID)
	if err != nil || stored.ETag != "" || stored.LastModified != "" || stored.URL != "https://example.org/blog2" {
		t.Errorf("after a URL change: %+v %v", stored, err)
	}

	resp = c.call("DELETE", id, nil, http.StatusNoContent, nil)
	c.callErr("GET", id, "", nil, 404, "not_found")
	c.call("GET", "/watches", nil, http.StatusOK, &list)
	if len(list.Watches) != 1 || list.Watches[0].ID != w2.ID {
		t.Errorf("after delete: %+v", list)
	}
}

// townPage is a page of a few blocks big enough to be segments of their
// own; extra, when set, is a paragraph added to the news block.
func townPage(extra string) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>Town hall</title></head><body>
<ul id="nav">`)
	for _, n := range []string{"Home", "News", "Events", "Library", "Council", "Parking", "Schools", "Contact"} {
		fmt.Fprintf(&b, `<li><a href="/%s">%s</a></li>`, strings.ToLower(n), n)
	}
	b.WriteString(`</ul>
<div id="hours"><h2>Opening hours</h2>
<p>The <em>library</em> opens at nine on weekdays and at ten on <b>Saturdays</b>, as it has for years.</p>
<p>The <em>swimming pool</em> opens at seven; the <b>sauna</b> at noon.</p>
<p>The <em>museum</em> is closed on <b>Mondays</b> and open late on Thursdays.</p>
<p>The <em>town hall</em> desk answers from eight to four, <b>Friday</b> to two.</p>
<p>The <em>recycling yard</em> takes glass and paper on <b>Wednesdays</b>.</p></div>
<div id="news"><h2>News</h2>
<p>The <em>council</em> meets on the first <b>Monday</b> of every month in the large hall.</p>
<p>The <em>market</em> moves to the <b>harbour</b> for the summer months.</p>
<p>The <em>bridge</em> on Mill Street is <b>closed</b> for repairs until June.</p>
<p>The <em>choir</em> looks for <b>tenors</b> for its winter concert.</p>`)
	if extra != "" {
		b.WriteString("\n<p>" + extra + "</p>")
	}
	b.WriteString(`</div>
<div id="footer"><p>Contact the <em>town hall</em> by <b>letter</b> or in person at the front desk.</p>
<p>Town hall, 1 Main Street. <a href="/privacy">Privacy</a> <a href="/imprint">Imprint</a> <a href="/access">Accessibility</a></p></div>
</body></html>`)
	return b.String()
}

var (
	pageV1 = townPage("")
	pageV2 = townPage("The soccer club won the regional cup and the lighthouse keeper retired after forty years.")
)

func TestAPIVersions(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	w := e.mustWatch(ann, "https://town.example/")
	// A Latin-1 body: the API gives it back byte for byte.
	v1 := []byte(strings.Replace(pageV1, "front desk", "caf\xe9 desk", 1))
	e.addTypedVersion(w, v1, "text/html; charset=ISO-8859-1")
	e.setNow(e.clock().Add(time.Hour))
	e.addVersion(w, pageV2)
	e.setNow(e.clock().Add(time.Hour))
	e.addVersion(w, strings.Replace(pageV2, "forty", "fifty", 1))

	var list struct {
		Versions   []apiVersionRow
		Total      int
		NextBefore int `json:"next_before"`
	}
	c.call("GET", fmt.Sprintf("/watches/%d/versions", w.ID), nil, http.StatusOK, &list)
	if len(list.Versions) != 3 || list.Total != 3 || list.NextBefore != 0 {
		t.Fatalf("versions: %+v", list)
	}
	if list.Versions[0].Seq != 3 || list.Versions[2].Seq != 1 || list.Versions[2].ContentType != "text/html; charset=ISO-8859-1" ||
		list.Versions[2].Size != len(v1) || list.Versions[1].Changes == 0 || len(list.Versions[1].Types) == 0 || list.Versions[1].Segments == 0 {
		t.Errorf("version rows: %+v", list.Versions)
	}
	// Paging.
	c.call("GET", fmt.Sprintf("/watches/%d/versions?limit=2", w.ID), nil, http.StatusOK, &list)
	if len(list.Versions) != 2 || list.NextBefore != 2 {
		t.Fatalf("first page: %+v", list)
	}
	next := list.NextBefore
	list.NextBefore = 0
	c.call("GET", fmt.Sprintf("/watches/%d/versions?limit=2&before=%d", w.ID, next), nil, http.StatusOK, &list)
	if len(list.Versions) != 1 || list.Versions[0].Seq != 1 || list.NextBefore != 0 {
		t.Fatalf("second page: %+v", list)
	}

	var v apiVersion
	c.call("GET", fmt.Sprintf("/watches/%d/versions/2", w.ID), nil, http.StatusOK, &v)
	if v.Seq != 2 || v.Previous != 1 || v.Next != 3 || v.Kind != changedigest.KindPage || len(v.Segments) == 0 {
		t.Fatalf("version 2: %+v", v)
	}
	text := ""
	for _, s := range v.Segments {
		text += s.Text + "\n"
	}
	if !strings.Contains(text, "lighthouse keeper") {
		t.Errorf("segment texts lack the new paragraph: %q", text)
	}
	found := false
	for _, ch := range v.Changes {
		found = found || strings.Contains(ch.NewText, "soccer club")
		if ch.Matches == nil {
			t.Errorf("matches of %v are null, want []", ch.Change)
		}
	}
	if !found {
		t.Errorf("changes of version 2 lack the new paragraph: %+v", v.Changes)
	}

	// The stored body, byte for byte, as a sandboxed download.
	resp, body := c.raw("GET", fmt.Sprintf("/watches/%d/versions/1/body", w.ID), "", nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, v1) {
		t.Fatalf("body: status %d, %d bytes (want %d)", resp.StatusCode, len(body), len(v1))
	}
	h := resp.Header
	for k, want := range map[string]string{
		"Content-Type":           "text/html; charset=ISO-8859-1",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := h.Get(k); !strings.EqualFold(got, want) {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("CSP %q", h.Get("Content-Security-Policy"))
	}
	if cd := h.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, fmt.Sprintf("watch-%d-version-1.html", w.ID)) {
		t.Errorf("Content-Disposition %q", cd)
	}
	// A version stored without a Content-Type is served as bytes.
	resp, body = c.raw("GET", fmt.Sprintf("/watches/%d/versions/2/body", w.ID), "", nil)
	if resp.StatusCode != 200 || string(body) != pageV2 || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("body 2: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	base := fmt.Sprintf("/watches/%d", w.ID)
	tests := []struct {
		name, path string
		status     int
		wants      []string
	}{
		{"unknown version", base + "/versions/9", 404, []string{"9"}},
		{"version not a number", base + "/versions/x", 404, []string{"x"}},
		{"unknown body", base + "/versions/9/body", 404, nil},
		{"bad limit", base + "/versions?limit=0", 400, []string{"limit"}},
		{"limit too large", base + "/versions?limit=5000", 400, []string{"limit", "1000"}},
		{"bad before", base + "/versions?before=-3", 400, []string{"before"}},
		{"unknown watch", "/watches/999/versions", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = e.t }()
			code := "not_found"
			if tt.status == 400 {
				code = "invalid"
			}
			c.callErr("GET", tt.path, "", nil, tt.status, code, tt.wants...)
		})
	}
}

func TestAPIDiff(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	w := e.mustWatch(ann, "https://town.example/")
	e.addVersion(w, pageV1)
	e.addVersion(w, pageV2)

	path := fmt.Sprintf("/watches/%d/diff?from=1&to=2", w.ID)
	resp, body := c.raw("GET", path, "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("diff: %d %s", resp.StatusCode, body)
	}
	// The contract of DESIGN.md, key for key.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kind", "old", "new", "changed_segments", "similarity", "changes"} {
		if _, ok := top[k]; !ok {
			t.Errorf("diff lacks %q: %s", k, body)
		}
	}
	var d changedigest.Diff
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	if d.Kind != changedigest.KindPage || d.Old.Bytes != len(pageV1) || d.New.Bytes != len(pageV2) ||
		d.Old.Segments == 0 || d.New.Segments == 0 || d.ChangedSegments == 0 || d.Similarity <= 0 || d.Similarity >= 1 {
		t.Errorf("diff header %+v", d)
	}
	found := false
	for _, ch := range d.Changes {
		if ch.Type == changedigest.ChangeContent && (ch.Op == changedigest.OpInsert || ch.Op == changedigest.OpUpdate) &&
			strings.Contains(ch.NewText, "soccer club won the regional cup") {
			found = true
		}
	}
	if !found {
		t.Errorf("no content change with the new paragraph: %+v", d.Changes)
	}
	var changes []map[string]json.RawMessage
	if err := json.Unmarshal(top["changes"], &changes); err != nil || len(changes) == 0 {
		t.Fatalf("changes: %v %s", err, top["changes"])
	}
	for _, k := range []string{"segment", "path", "type", "op", "old_text", "new_text"} {
		if _, ok := changes[0][k]; !ok {
			t.Errorf("change lacks %q: %s", k, top["changes"])
		}
	}

	// Defaults: the newest version against the one before it.
	var def changedigest.Diff
	c.call("GET", fmt.Sprintf("/watches/%d/diff", w.ID), nil, http.StatusOK, &def)
	if !reflect.DeepEqual(def, d) {
		t.Errorf("default diff differs from 1→2:\n%+v\n%+v", def, d)
	}
	// A version with itself: no change, and [] rather than null.
	resp, body = c.raw("GET", fmt.Sprintf("/watches/%d/diff?from=2&to=2", w.ID), "", nil)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"changes": []`)) {
		t.Errorf("self diff: %d %s", resp.StatusCode, body)
	}
	// Backwards: the paragraph is deleted.
	var back changedigest.Diff
	c.call("GET", fmt.Sprintf("/watches/%d/diff?from=2&to=1", w.ID), nil, http.StatusOK, &back)
	deleted := false
	for _, ch := range back.Changes {
		deleted = deleted || (ch.Op == changedigest.OpDelete || ch.Op == changedigest.OpUpdate) && strings.Contains(ch.OldText, "soccer club")
	}
	if !deleted {
		t.Errorf("2→1 lacks the deletion: %+v", back.Changes)
	}

	// A feed's diff carries the feed fields.
	f := e.mustWatch(ann, "https://town.example/feed.xml")
	e.addVersion(f, rssFeed("Town feed", "https://town.example/", []rssItem{{"Library hours", "https://town.example/a", "The library opens at nine."}}))
	e.addVersion(f, rssFeed("Town feed", "https://town.example/", []rssItem{{"Library hours", "https://town.example/a", "The library opens at nine."},
		{"Cup final", "https://town.example/b", "The soccer club won the cup."}}))
	var fd changedigest.Diff
	c.call("GET", fmt.Sprintf("/watches/%d/diff", f.ID), nil, http.StatusOK, &fd)
	if fd.Kind != changedigest.KindFeed || len(fd.Changes) != 1 || fd.Changes[0].Op != changedigest.OpInsert ||
		fd.Changes[0].OldItem == nil || *fd.Changes[0].OldItem != -1 || fd.Changes[0].NewItem == nil || fd.Changes[0].Title != "Cup final" {
		t.Errorf("feed diff %+v", fd)
	}

	empty := e.mustWatch(ann, "https://town.example/empty")
	base := fmt.Sprintf("/watches/%d/diff", w.ID)
	tests := []struct {
		name, path string
		status     int
		wants      []string
	}{
		{"from not a number", base + "?from=abc&to=2", 400, []string{"from", "abc"}},
		{"to zero", base + "?from=1&to=0", 400, []string{"to"}},
		{"unknown to", base + "?from=1&to=9", 404, []string{"9"}},
		{"unknown from", base + "?from=7&to=2", 404, []string{"7"}},
		{"no versions", fmt.Sprintf("/watches/%d/diff", empty.ID), 404, []string{"no stored version"}},
		{"unknown watch", "/watches/999/diff", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = e.t }()
			code := "not_found"
			if tt.status == 400 {
				code = "invalid"
			}
			c.callErr("GET", tt.path, "", nil, tt.status, code, tt.wants...)
		})
	}
}

type rssItem struct{ title, link, desc string }

func rssFeed(title, link string, items []rssItem) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>%s</title><link>%s</link><description>d</description>`, title, link)
	for _, it := range items {
		fmt.Fprintf(&b, `<item><title>%s</title><link>%s</link><guid>%s</guid><description>%s</description></item>`, it.title, it.link, it.link, it.desc)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

const footballFOAF = `@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<#me> a foaf:Person ;
  foaf:name "Ann Example" ;
  foaf:nick "ann" ;
  foaf:topic_interest [ rdfs:label "football" ] .
`

func TestAPIProfile(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)

	var p apiProfile
	c.call("GET", "/profile", nil, http.StatusOK, &p)
	if p.Profile == nil || len(p.Profile.Interests) != 0 || p.HasFOAF || p.Expansions == nil {
		t.Fatalf("empty profile: %+v", p)
	}
	c.call("POST", "/profile/terms", map[string]string{"term": "chess"}, http.StatusOK, &p)
	if len(p.Profile.Interests) != 1 || p.Profile.Interests[0].Source != changedigest.SourceManual {
		t.Fatalf("after adding chess: %+v", p.Profile)
	}
	resp, body := c.raw("PUT", "/profile", "text/turtle", []byte(footballFOAF))
	if resp.StatusCode != 200 {
		t.Fatalf("PUT profile: %d %s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	terms := map[string]string{}
	for _, in := range p.Profile.Interests {
		terms[in.Term] = in.Source
	}
	if terms["football"] == "" || terms["chess"] != changedigest.SourceManual || p.Profile.Name != "Ann Example" || !p.HasFOAF {
		t.Errorf("after PUT: %+v", p.Profile)
	}
	soccer := false
	for _, x := range p.Expansions {
		for _, term := range x.Terms {
			soccer = soccer || x.Interest.Term == "football" && term.Text == "soccer"
		}
	}
	if !soccer {
		t.Errorf("football is not expanded to soccer: %+v", p.Expansions)
	}
	_, doc, err := e.store.Profile(context.Background(), ann.ID)
	if err != nil || string(doc) != footballFOAF {
		t.Errorf("stored document %q, %v", doc, err)
	}

	c.call("POST", "/profile/terms", map[string]string{"term": "semantic web"}, http.StatusOK, nil)
	c.call("DELETE", "/profile/terms/semantic%20web", nil, http.StatusNoContent, nil)
	c.call("DELETE", "/profile/terms/chess", nil, http.StatusNoContent, nil)
	c.call("GET", "/profile", nil, http.StatusOK, &p)
	for _, in := range p.Profile.Interests {
		if in.Term == "chess" || in.Term == "semantic web" {
			t.Errorf("%q still in the profile", in.Term)
		}
	}

	tests := []struct {
		name, method, path, ctype string
		body                      string
		status                    int
		code                      string
		wants                     []string
	}{
		{"remove unknown term", "DELETE", "/profile/terms/knitting", "", "", 404, "not_found", []string{"knitting"}},
		{"add empty term", "POST", "/profile/terms", "application/json", `{"term":"  "}`, 400, "invalid", nil},
		{"add no term", "POST", "/profile/terms", "application/json", `{}`, 400, "invalid", []string{"term"}},
		{"add term wrong field", "POST", "/profile/terms", "application/json", `{"terms":"x"}`, 400, "invalid", []string{`"terms"`}},
		{"add term as form", "POST", "/profile/terms", "application/x-www-form-urlencoded", `term=x`, 415, "invalid", nil},
		{"FOAF as JSON", "PUT", "/profile", "application/json", `{}`, 415, "invalid", []string{"text/turtle", "application/rdf+xml"}},
		{"FOAF without type", "PUT", "/profile", "", footballFOAF, 415, "invalid", nil},
		{"malformed Turtle", "PUT", "/profile", "text/turtle", "<#me> a foaf:Person", 400, "invalid", nil},
		{"no person", "PUT", "/profile", "text/turtle", "<#x> <http://example.org/p> \"o\" .", 400, "invalid", []string{"no person"}},
		{"empty FOAF", "PUT", "/profile", "application/rdf+xml", "  ", 400, "invalid", []string{"empty"}},
		{"too many interests", "PUT", "/profile", "text/turtle", manyInterestsFOAF(profile.MaxInterests + 1), 400, "invalid",
			[]string{fmt.Sprintf("names %d interests", profile.MaxInterests+1), fmt.Sprintf("at most %d", profile.MaxInterests)}},
		// Nine levels of nested entities would expand to 3 GB.
		{"entity bomb", "PUT", "/profile", "application/rdf+xml", mustReadFile(t, "../profile/testdata/bomb/laughs9.rdf"), 400, "invalid",
			[]string{"entity expansion refused", `"lol6"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = e.t }()
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			c.callErr(tt.method, tt.path, tt.ctype, body, tt.status, tt.code, tt.wants...)
		})
	}
	// The failed uploads kept the profile.
	var after apiProfile
	c.call("GET", "/profile", nil, http.StatusOK, &after)
	if !reflect.DeepEqual(after.Profile, p.Profile) {
		t.Errorf("profile changed by failed requests:\n%+v\n%+v", after.Profile, p.Profile)
	}
}

// manyInterestsFOAF is a FOAF document in Turtle of a person with n
// interests.
func manyInterestsFOAF(n int) string {
	var b strings.Builder
	b.WriteString("@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n<#me> a foaf:Person ; foaf:name \"Ann\"")
	for i := range n {
		fmt.Fprintf(&b, " ;\n  foaf:topic_interest [ foaf:name \"topic %d\" ]", i)
	}
	b.WriteString(" .\n")
	return b.String()
}

// TestAPIWatchSizeLimits: a watch's tags, name and URL are bounded, on
// creation and on edits, with an error naming the limit; a watch stored
// over a limit before it was set is still edited in its other fields.
func TestAPIWatchSizeLimits(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	body := func(v map[string]any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var tags []string
	for i := range changedigest.MaxTags + 1 {
		tags = append(tags, fmt.Sprintf("tag%d", i))
	}
	c.callErr("POST", "/watches", "application/json", body(map[string]any{"url": "https://example.org/", "tags": tags}),
		400, "invalid", fmt.Sprintf("%d tags is more than the %d", changedigest.MaxTags+1, changedigest.MaxTags))
	c.callErr("POST", "/watches", "application/json", body(map[string]any{"url": "https://example.org/", "title": strings.Repeat("é", changedigest.MaxTitleLen+1)}),
		400, "invalid", fmt.Sprintf("watch name of %d characters is longer than %d", changedigest.MaxTitleLen+1, changedigest.MaxTitleLen))
	c.callErr("POST", "/watches", "application/json", body(map[string]any{"url": "https://example.org/" + strings.Repeat("a", changedigest.MaxURLLen)}),
		400, "invalid", "watch URL of")
	var w apiWatch
	c.call("POST", "/watches", map[string]any{"url": "https://example.org/", "tags": tags[:changedigest.MaxTags]}, http.StatusCreated, &w)
	c.callErr("PATCH", fmt.Sprintf("/watches/%d", w.ID), "application/json", body(map[string]any{"tags": tags}), 400, "invalid", "tags is more than")
	// A watch stored over the limit before it was set (as a view puts
	// it): its other fields are still edited.
	stored, err := e.store.Watch(context.Background(), ann.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored.Tags = append(tags, "one-more")
	if err := e.store.PutWatch(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	c.call("PATCH", fmt.Sprintf("/watches/%d", w.ID), map[string]any{"paused": true}, http.StatusOK, &w)
	if !w.Paused || len(w.Tags) != changedigest.MaxTags+2 {
		t.Errorf("after pausing: %+v", w)
	}
}

func TestAPIChanges(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	c.call("PUT", "/profile", footballFOAF, http.StatusUnsupportedMediaType, nil) // JSON is not FOAF
	if resp, b := c.raw("PUT", "/profile", "text/turtle", []byte(footballFOAF)); resp.StatusCode != 200 {
		t.Fatalf("PUT profile: %d %s", resp.StatusCode, b)
	}
	w := e.mustWatch(ann, "https://town.example/", "town")
	other := e.mustWatch(ann, "https://other.example/")
	day := e.clock()
	e.addVersion(w, pageV1)
	e.addVersion(other, pageV1)
	e.setNow(day.Add(time.Hour))
	e.addVersion(w, pageV2)
	e.setNow(day.Add(2 * time.Hour))
	e.addVersion(other, strings.Replace(pageV1, "nine", "eight", 1))

	var out struct {
		Events    []apiEvent
		NextUntil string `json:"next_until"`
	}
	c.call("GET", "/changes", nil, http.StatusOK, &out)
	if len(out.Events) != 2 || out.NextUntil != "" {
		t.Fatalf("events: %+v", out)
	}
	if out.Events[0].Watch.ID != other.ID || out.Events[1].Watch.ID != w.ID {
		t.Errorf("events not newest first: %+v", out.Events)
	}
	ev := out.Events[1]
	if ev.Seq != 2 || !ev.Detected.Equal(day.Add(time.Hour)) || ev.Watch.URL != w.URL || ev.Watch.Title != "Town hall" || !ev.Profile {
		t.Errorf("event %+v", ev)
	}
	var match *changedigest.Match
	for _, ch := range ev.Changes {
		for i, m := range ch.Matches {
			if m.Interest == "football" && m.Term == "soccer" {
				match = &ch.Matches[i]
				text := ch.NewText
				if got := strings.ToLower(text[m.Start:m.End]); got != "soccer" {
					t.Errorf("match span %d-%d is %q", m.Start, m.End, got)
				}
			}
		}
	}
	if match == nil || match.Relation == "" {
		t.Fatalf("no football match for soccer in %+v", ev.Changes)
	}
	if out.Events[0].Profile {
		t.Errorf("the library hours change matched the profile: %+v", out.Events[0])
	}

	// Filters.
	check := func(query string, want ...int64) {
		t.Helper()
		c.call("GET", "/changes"+query, nil, http.StatusOK, &out)
		var got []int64
		for _, ev := range out.Events {
			got = append(got, ev.Watch.ID)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: watches %v, want %v", query, got, want)
		}
	}
	check("?watch="+fmt.Sprint(w.ID), w.ID)
	check("?tag=Town", w.ID)
	check("?since="+url.QueryEscape(day.Add(90*time.Minute).Format(time.RFC3339)), other.ID)
	check("?until="+url.QueryEscape(day.Add(90*time.Minute).Format(time.RFC3339)), w.ID)
	check("?type=behavioural")
	check("?type=cosmetic,content", other.ID, w.ID)
	out.NextUntil = ""
	check("?limit=1", other.ID)
	if out.NextUntil == "" {
		t.Fatalf("a full page has no next_until")
	}
	check("?limit=1&until="+url.QueryEscape(out.NextUntil), w.ID)

	tests := []struct {
		name, query string
		status      int
		wants       []string
	}{
		{"bad since", "?since=yesterday", 400, []string{"since", "yesterday"}},
		{"bad until", "?until=2026-13-01", 400, []string{"until"}},
		{"bad type", "?type=sporty", 400, []string{"type", "sporty"}},
		{"bad watch", "?watch=x", 400, []string{"watch"}},
		{"bad limit", "?limit=1001", 400, []string{"limit"}},
		{"unknown watch", "?watch=999", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = e.t }()
			code := "invalid"
			if tt.status == 404 {
				code = "not_found"
			}
			c.callErr("GET", "/changes"+tt.query, "", nil, tt.status, code, tt.wants...)
		})
	}
}

func TestAPISearch(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	w := e.mustWatch(ann, "https://town.example/")
	e.addVersion(w, pageV1)
	e.setNow(e.clock().Add(time.Hour))
	e.addVersion(w, pageV2)

	var res struct {
		Total, Offset, Limit int
		Hits                 []apiHit
	}
	c.call("GET", "/search?q=lighthouse", nil, http.StatusOK, &res)
	if res.Total != 1 || len(res.Hits) != 1 || res.Limit != 20 {
		t.Fatalf("search: %+v", res)
	}
	h := res.Hits[0]
	if h.WatchID != w.ID || h.WatchURL != w.URL || h.Seq != 2 || len(h.Snippet.Matches) == 0 || len(h.Types) == 0 {
		t.Errorf("hit %+v", h)
	}
	for _, m := range h.Snippet.Matches {
		if got := strings.ToLower(h.Snippet.Text[m.Start:m.End]); got != "lighthouse" {
			t.Errorf("match span %d-%d is %q in %q", m.Start, m.End, got, h.Snippet.Text)
		}
	}
	c.call("GET", "/search?q=library&type=content", nil, http.StatusOK, &res)
	if res.Total != 0 {
		t.Errorf("library was there from the first version, yet a content change brought it: %+v", res)
	}
	c.call("GET", "/search?q=library&limit=5&watch="+fmt.Sprint(w.ID), nil, http.StatusOK, &res)
	if res.Total != 2 || res.Limit != 5 || res.Hits[0].Seq != 1 || res.Hits[1].Seq != 1 {
		t.Errorf("library (in the menu and the opening hours since version 1): %+v", res)
	}
	for _, tt := range []struct {
		name, query string
		status      int
		wants       []string
	}{
		{"no text", "?q=", 400, []string{"q"}},
		{"bad type", "?q=x&type=loud", 400, []string{"loud"}},
		{"bad since", "?q=x&since=soon", 400, []string{"since"}},
		{"bad limit", "?q=x&limit=500", 400, []string{"limit"}},
		{"bad offset", "?q=x&offset=-1", 400, []string{"offset"}},
		{"unknown watch", "?q=x&watch=999", 404, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = e.t }()
			code := "invalid"
			if tt.status == 404 {
				code = "not_found"
			}
			c.callErr("GET", "/search"+tt.query, "", nil, tt.status, code, tt.wants...)
		})
	}
}

func TestAPICheck(t *testing.T) {
	var mu sync.Mutex
	page, status := pageV1, 200
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, page)
	}))
	defer origin.Close()
	set := func(p string, st int) {
		mu.Lock()
		page, status = p, st
		mu.Unlock()
	}

	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	w := e.mustWatch(ann, origin.URL+"/town")
	c.callErr("POST", fmt.Sprintf("/watches/%d/check", w.ID), "", nil, http.StatusBadGateway, changedigest.EUNAVAILABLE, "not running")

	fetcher := crawl.NewFetcher()
	fetcher.AllowPrivate = true
	sched := crawl.NewScheduler(e.store, crawl.NewPipeline(fetcher, e.seg, e.store))
	sched.Logger = discardLogger()
	e.srv.Checker = sched

	var out apiCheck
	c.call("POST", fmt.Sprintf("/watches/%d/check", w.ID), nil, http.StatusOK, &out)
	if out.Result != "first version" || out.Latest != 1 || out.Watch.Kind != changedigest.KindPage || out.Watch.Checks != 1 || out.Watch.Title != "Town hall" {
		t.Fatalf("first check: %+v", out)
	}
	set(pageV2, 200)
	c.call("POST", fmt.Sprintf("/watches/%d/check", w.ID), nil, http.StatusOK, &out)
	if out.Result != "changed" || out.Latest != 2 || out.Watch.ChangeChecks != 1 {
		t.Fatalf("second check: %+v", out)
	}
	c.call("POST", fmt.Sprintf("/watches/%d/check", w.ID), nil, http.StatusOK, &out)
	if out.Result != "unchanged" || out.Latest != 2 {
		t.Fatalf("third check: %+v", out)
	}
	set("gone", 404)
	c.call("POST", fmt.Sprintf("/watches/%d/check", w.ID), nil, http.StatusOK, &out)
	if out.Result != "failed" || out.Error == "" || out.Watch.LastError == "" || out.Latest != 2 {
		t.Fatalf("failed check: %+v", out)
	}
	c.callErr("POST", "/watches/999/check", "", nil, 404, "not_found")
}

// TestAPIIsolation checks that a token of one user reaches none of
// another user's records, and changes none.
func TestAPIIsolation(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	bob := e.mustUser("bob", "battery staple")
	a := e.api(ann)
	b := e.api(bob)
	e.srv.Checker = crawl.NewScheduler(e.store, crawl.CheckFunc(func(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
		t.Errorf("a check of watch %d ran", w.ID)
		return crawl.Outcome{Result: crawl.Unchanged}, nil
	}))
	if resp, body := b.raw("PUT", "/profile", "text/turtle", []byte(footballFOAF)); resp.StatusCode != 200 {
		t.Fatalf("bob's profile: %d %s", resp.StatusCode, body)
	}
	bw := e.mustWatch(bob, "https://bob.example/", "private")
	e.addVersion(bw, pageV1)
	e.addVersion(bw, pageV2)
	aw := e.mustWatch(ann, "https://ann.example/")
	e.addVersion(aw, pageV1)

	before, err := e.store.Watch(context.Background(), bob.ID, bw.ID)
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("/watches/%d", bw.ID)
	for _, tt := range []struct{ method, path, body string }{
		{"GET", id, ""},
		{"PATCH", id, `{"title":"mine now","paused":true}`},
		{"DELETE", id, ""},
		{"POST", id + "/check", ""},
		{"GET", id + "/versions", ""},
		{"GET", id + "/versions/1", ""},
		{"GET", id + "/versions/2", ""},
		{"GET", id + "/versions/1/body", ""},
		{"GET", id + "/diff", ""},
		{"GET", id + "/diff?from=1&to=2", ""},
		{"GET", "/changes?watch=" + fmt.Sprint(bw.ID), ""},
		{"GET", "/search?q=library&watch=" + fmt.Sprint(bw.ID), ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			a.t = t
			defer func() { a.t = e.t }()
			ctype := ""
			var body []byte
			if tt.body != "" {
				ctype, body = "application/json", []byte(tt.body)
			}
			a.callErr(tt.method, tt.path, ctype, body, http.StatusNotFound, changedigest.ENOTFOUND)
		})
	}
	// Ann's lists hold nothing of Bob's.
	var list struct{ Watches []apiWatch }
	a.call("GET", "/watches", nil, http.StatusOK, &list)
	if len(list.Watches) != 1 || list.Watches[0].ID != aw.ID {
		t.Errorf("ann's watches: %+v", list.Watches)
	}
	a.call("GET", "/watches?tag=private", nil, http.StatusOK, &list)
	if len(list.Watches) != 0 {
		t.Errorf("ann's watches tagged private: %+v", list.Watches)
	}
	var ch struct{ Events []apiEvent }
	a.call("GET", "/changes", nil, http.StatusOK, &ch)
	if len(ch.Events) != 0 {
		t.Errorf("ann sees events: %+v", ch.Events)
	}
	var res struct{ Total int }
	a.call("GET", "/search?q=soccer", nil, http.StatusOK, &res)
	if res.Total != 0 {
		t.Errorf("ann finds bob's text: %+v", res)
	}
	var p apiProfile
	a.call("GET", "/profile", nil, http.StatusOK, &p)
	if len(p.Profile.Interests) != 0 || p.Profile.UserID != ann.ID {
		t.Errorf("ann's profile: %+v", p.Profile)
	}
	a.callErr("DELETE", "/profile/terms/football", "", nil, 404, "not_found")

	// Bob's data is as it was.
	after, err := e.store.Watch(context.Background(), bob.ID, bw.ID)
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("bob's watch changed: %+v\n%+v (%v)", after, before, err)
	}
	info, err := e.store.Track(context.Background(), bw.ID)
	if err != nil || info.Versions != 2 {
		t.Errorf("bob's track: %+v %v", info, err)
	}
	b.call("GET", "/profile", nil, http.StatusOK, &p)
	if len(p.Profile.Interests) != 1 || p.Profile.Interests[0].Term != "football" {
		t.Errorf("bob's profile: %+v", p.Profile)
	}
	b.call("GET", id+"/versions/2", nil, http.StatusOK, nil)
}
