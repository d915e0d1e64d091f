package server

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/secret"
)

// The plain secrets the tests give; none may be stored or shown.
const (
	testAPIKey   = "api-key-7f3e9c1a2b"
	testCookie   = "cookie-5d8e0f77aa"
	testPassword = "password-0b1c2d3e4f"
)

// storedBytes is every file of the store's directory but the key, as on disk.
func storedBytes(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == secret.KeyFile {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			all = append(all, b...)
		}
		return nil
	})
	if len(all) == 0 {
		t.Fatal("nothing stored")
	}
	return all
}

func noPlainSecrets(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, s := range []string{testAPIKey, testCookie, testPassword} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds the secret %q in clear", where, s)
		}
	}
}

func TestAPIRequestOptions(t *testing.T) {
	dir := t.TempDir()
	e := mustServerIn(t, dir)
	u := e.mustUser("ann", "a good password")
	c := e.api(u)

	// The page the watch asks for records what arrives.
	var got *http.Request
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		b := new(bytes.Buffer)
		b.ReadFrom(r.Body)
		gotBody = b.String()
		fmt.Fprint(w, "<html><body><p>members only</p></body></html>")
	}))
	t.Cleanup(srv.Close)
	site := srv.URL

	in := map[string]any{
		"url": site + "/members", "method": "POST", "body": "q=kettle",
		"headers":    map[string]string{"X-Api-Key": testAPIKey, "Accept-Language": "fr"},
		"cookies":    map[string]string{"sid": testCookie},
		"basic_auth": map[string]string{"user": "ann", "password": testPassword},
	}
	var a apiWatch
	c.call("POST", "/watches", in, http.StatusCreated, &a)
	if a.Method != "POST" || a.Body != "q=kettle" || a.Headers["Accept-Language"] != "fr" ||
		a.Headers["X-Api-Key"] != "••••1a2b" || a.Cookies["sid"] != "••••77aa" ||
		a.BasicAuth == nil || a.BasicAuth.User != "ann" || a.BasicAuth.Password != "••••3e4f" {
		t.Errorf("created watch shows %+v %+v", a, a.BasicAuth)
	}
	_, raw := c.raw("GET", fmt.Sprintf("/watches/%d", a.ID), "", nil)
	noPlainSecrets(t, "GET /watches/{id}", raw)
	_, raw = c.raw("GET", "/watches", "", nil)
	noPlainSecrets(t, "GET /watches", raw)
	noPlainSecrets(t, "the store", storedBytes(t, dir))

	// The stored watch, fetched with the data directory's key, sends everything.
	w, err := e.store.Watch(context.Background(), u.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	f := crawl.NewFetcher()
	f.AllowPrivate, f.Secrets = true, secret.NewBox(filepath.Join(dir, secret.KeyFile))
	if _, err := f.Fetch(t.Context(), crawl.WatchRequest(w)); err != nil {
		t.Fatal(err)
	}
	user, pass, _ := got.BasicAuth()
	ck, _ := got.Cookie("sid")
	if got.Method != "POST" || gotBody != "q=kettle" || got.Header.Get("X-Api-Key") != testAPIKey ||
		got.Header.Get("Accept-Language") != "fr" || ck == nil || ck.Value != testCookie || user != "ann" || pass != testPassword {
		t.Errorf("the page got %s %q %v", got.Method, gotBody, got.Header)
	}
	sealed := w.Request.Clone()

	// An edit that does not give the secrets again keeps them; one that
	// sends back the hints too.
	c.call("PATCH", fmt.Sprintf("/watches/%d", a.ID), map[string]any{"title": "Members"}, http.StatusOK, &a)
	c.call("PATCH", fmt.Sprintf("/watches/%d", a.ID), map[string]any{
		"headers":    a.Headers,
		"cookies":    a.Cookies,
		"basic_auth": map[string]string{"user": "ann", "password": ""},
	}, http.StatusOK, &a)
	w, _ = e.store.Watch(context.Background(), u.ID, a.ID)
	if !w.Request.Equal(sealed) {
		t.Errorf("secrets not kept:\n%+v\nwant\n%+v", w.Request, sealed)
	}
	// A new value replaces one; null removes basic auth.
	id := a.ID
	a = apiWatch{}
	c.call("PATCH", fmt.Sprintf("/watches/%d", id), map[string]any{
		"cookies": map[string]string{"sid": "new-cookie-value-99zz"}, "basic_auth": nil, "method": "GET", "body": "",
	}, http.StatusOK, &a)
	if a.Cookies["sid"] != "••••99zz" || a.BasicAuth != nil || a.Method != "GET" || a.Body != "" || a.Headers["X-Api-Key"] != "••••1a2b" {
		t.Errorf("after the edit: %+v", a)
	}

	// Bad input is refused, naming the field.
	bad := []struct {
		in    string
		wants []string
	}{
		{`{"url":"https://example.org/a","method":"PUT"}`, []string{"method", "PUT"}},
		{`{"url":"https://example.org/a","body":"x"}`, []string{"body", "POST"}},
		{`{"url":"https://example.org/a","headers":{"Host":"evil.example"}}`, []string{"headers", "Host"}},
		{`{"url":"https://example.org/a","headers":{"Content-Length":"3"}}`, []string{"headers", "Content-Length"}},
		{`{"url":"https://example.org/a","headers":{"X-A":"a\r\nHost: evil"}}`, []string{"headers", "X-A", "line break"}},
		{`{"url":"https://example.org/a","headers":{"X A":"b"}}`, []string{"headers", "X A"}},
		{`{"url":"https://example.org/a","headers":["X-A: b"]}`, []string{"headers", "object"}},
		{`{"url":"https://example.org/a","cookies":{"sid":"a;b"}}`, []string{"cookies", "sid"}},
		{`{"url":"https://example.org/a","basic_auth":{"user":"a:b","password":"x"}}`, []string{"basic_auth", "colon"}},
		{`{"url":"https://example.org/a","basic_auth":{"user":"ann"}}`, []string{"basic_auth", "password"}},
		{`{"url":"https://example.org/a","method":"POST","body":"` + strings.Repeat("x", changedigest.MaxRequestBody+1) + `"}`, []string{"body", "64 KiB"}},
		{`{"url":"https://example.org/a","render":"browser","headers":{"X-A":"b"}}`, []string{"request options", "browser"}},
		{`{"url":"https://example.org/a","zone":"//div["}`, []string{"XPath", "//div["}},
		{`{"url":"https://example.org/a","zone":"xpath:count(//p)"}`, []string{"XPath", "elements"}},
	}
	for _, b := range bad {
		c.callErr("POST", "/watches", "application/json", []byte(b.in), http.StatusBadRequest, changedigest.EINVALID, b.wants...)
	}
	// An XPath zone is taken.
	c.call("POST", "/watches", map[string]any{"url": "https://example.org/x", "zone": "//div[@id='price']"}, http.StatusCreated, &a)
	if a.Zone != "//div[@id='price']" {
		t.Errorf("zone = %q", a.Zone)
	}
}

func TestWatchFormRequestOptions(t *testing.T) {
	dir := t.TempDir()
	e := mustServerIn(t, dir)
	u := e.mustUser("ann", "a good password")
	c := e.login("ann", "a good password")
	form := url.Values{"url": {"https://example.org/members"}, "method": {"POST"}, "body": {"a=1"},
		"headers":   {"X-Api-Key: " + testAPIKey + "\r\nAccept-Language: fr"},
		"cookies":   {"sid=" + testCookie},
		"auth_user": {"ann"}, "auth_password": {testPassword}}
	resp, page := c.post("/watches", form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: status %d: %s", resp.StatusCode, page)
	}
	ws, _ := e.store.Watches(context.Background(), u.ID, "")
	if len(ws) != 1 {
		t.Fatalf("%d watches", len(ws))
	}
	w := ws[0]
	sealed := w.Request.Clone()
	noPlainSecrets(t, "the store", storedBytes(t, dir))

	_, page = c.get(fmt.Sprintf("/watches/%d", w.ID))
	noPlainSecrets(t, "the watch page", []byte(page))
	mustContain(t, page, "POST, a body of 3 bytes, 2 headers, 1 cookie, basic auth as ann")
	_, page = c.get(fmt.Sprintf("/watches/%d/edit", w.ID))
	noPlainSecrets(t, "the edit form", []byte(page))
	mustContain(t, page, "X-Api-Key: ••••1a2b", "sid=••••77aa", `value="ann"`, "••••3e4f (empty keeps it)", `<option value="POST" selected>`)

	// Sent back as shown, with no password: the secrets are kept.
	edit := url.Values{"url": {w.URL}, "title": {"Members"}, "method": {"POST"}, "body": {"a=2"},
		"headers": {"X-Api-Key: ••••1a2b\nAccept-Language: de"}, "cookies": {"sid=••••77aa"}, "auth_user": {"ann"}}
	resp, page = c.post(fmt.Sprintf("/watches/%d", w.ID), edit)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: status %d: %s", resp.StatusCode, page)
	}
	got, _ := e.store.Watch(context.Background(), u.ID, w.ID)
	if got.Request.Headers[0].Secret != sealed.Headers[0].Secret || got.Request.Cookies[0].Value != sealed.Cookies[0].Value ||
		got.Request.BasicAuth.Password != sealed.BasicAuth.Password || got.Request.Body != "a=2" || got.Request.Headers[1].Value != "de" {
		t.Errorf("after the edit %+v", got.Request)
	}

	// Bad input shows the form again with the error.
	edit.Set("headers", "Host: evil.example")
	resp, page = c.post(fmt.Sprintf("/watches/%d", w.ID), edit)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "Host may not be set") {
		t.Errorf("forbidden header: status %d", resp.StatusCode)
	}
	edit.Set("headers", "")
	edit.Set("zone", "//p[")
	resp, page = c.post(fmt.Sprintf("/watches/%d", w.ID), edit)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "invalid zone XPath") {
		t.Errorf("invalid XPath: status %d", resp.StatusCode)
	}
}
