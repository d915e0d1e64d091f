package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/render"
)

func TestLoginRequiredAndWorks(t *testing.T) {
	e := mustServer(t)
	e.mustUser("ann", "correct horse")
	c := e.client()
	resp, _ := c.get("/")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("visitor on /: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := c.post("/login", url.Values{"name": {"ann"}, "password": {"wrong password"}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "wrong") {
		t.Fatalf("bad password: %d", resp.StatusCode)
	}
	c = e.login("ann", "correct horse")
	resp, _ = c.get("/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard after login: %d", resp.StatusCode)
	}
}

func TestLoginRateLimit(t *testing.T) {
	e := mustServer(t)
	e.mustUser("ann", "correct horse")
	c := e.client()
	for i := 0; i < e.srv.LoginAttempts; i++ {
		c.post("/login", url.Values{"name": {"ann"}, "password": {"nope nope"}})
	}
	resp, _ := c.post("/login", url.Values{"name": {"ann"}, "password": {"correct horse"}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after %d failures: status %d, Retry-After %q", e.srv.LoginAttempts, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestCSRFRequired(t *testing.T) {
	e := mustServer(t)
	e.mustUser("ann", "correct horse")
	c := e.login("ann", "correct horse")
	resp, err := c.http.PostForm(c.base+"/watches", url.Values{"url": {"http://example.org/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("post without CSRF token: %d", resp.StatusCode)
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := mustServer(t)
	resp, _ := e.client().get("/login")
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("missing %s", h)
		}
	}
}

func TestHSTSWhenHTTPS(t *testing.T) {
	for _, tc := range []struct {
		base string
		want bool
	}{
		{"https://changes.example", true},
		{"https://changes.example/app", true},
		{"http://changes.example", false},
	} {
		s := New()
		eng, err := render.NewEngine(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		s.Render = eng
		h := s.Handler()
		for _, path := range []string{"/healthz", "/no-such-page"} {
			u, _ := url.Parse(tc.base)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", u.Path+path, nil))
			got := rec.Header().Get("Strict-Transport-Security")
			if tc.want && !strings.HasPrefix(got, "max-age=") || !tc.want && got != "" {
				t.Errorf("%s%s: Strict-Transport-Security %q, want it %v", tc.base, path, got, tc.want)
			}
		}
	}
}

func TestCSRFBoundToSession(t *testing.T) {
	e := mustServer(t)
	e.mustUser("ann", "correct horse")
	e.mustUser("bob", "battery staple")
	visitor := e.client()
	visitorToken := visitor.csrf()
	a1 := e.login("ann", "correct horse")
	a2 := e.login("ann", "correct horse")
	b := e.login("bob", "battery staple")
	form := func(tok string) url.Values {
		return url.Values{"csrf_token": {tok}, "url": {"http://example.org/"}}
	}
	postRaw := func(c *client, v url.Values) int {
		resp, err := c.http.PostForm(c.base+"/watches", v)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tokA1 := a1.csrf()
	if tokA1 == a2.csrf() {
		t.Fatal("two sessions of one user have the same CSRF token")
	}
	for name, tc := range map[string]struct {
		c   *client
		tok string
	}{
		"another session of the same user": {a2, tokA1},
		"another user's session":           {b, tokA1},
		"a visitor's token":                {a1, visitorToken},
	} {
		if st := postRaw(tc.c, form(tc.tok)); st != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, st)
		}
	}
	// The old double-submit forgery: a cookie set by another party and
	// the same value in the form.
	base, _ := url.Parse(e.http.URL)
	a2.http.Jar.SetCookies(base, []*http.Cookie{{Name: csrfCookie, Value: strings.Repeat("x", 43), Path: "/"}})
	if st := postRaw(a2, form(strings.Repeat("x", 43))); st != http.StatusForbidden {
		t.Errorf("planted cookie and matching form value: status %d, want 403", st)
	}
	if st := postRaw(a1, form(tokA1)); st != http.StatusSeeOther {
		t.Errorf("the session's own token: status %d, want 303", st)
	}
}

func TestHostCookiesOverHTTPS(t *testing.T) {
	e := mustServer(t)
	e.mustUser("ann", "correct horse")
	s := New()
	eng, err := render.NewEngine("https://changes.example")
	if err != nil {
		t.Fatal(err)
	}
	s.Store, s.Render, s.Notify, s.Segmenter, s.Logger = e.store, eng, e.srv.Notify, e.srv.Segmenter, discardLogger()
	h := s.Handler()
	do := func(req *http.Request, cookies []*http.Cookie) *http.Response {
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	resp := do(httptest.NewRequest("GET", "https://changes.example/login", nil), nil)
	body, _ := io.ReadAll(resp.Body)
	m := csrfRE.FindStringSubmatch(string(body))
	if m == nil {
		t.Fatal("no CSRF token on the login page")
	}
	cookies := resp.Cookies()
	checkHost := func(cs []*http.Cookie, name string) {
		t.Helper()
		for _, c := range cs {
			if c.Name == name {
				if !c.Secure || c.Path != "/" || c.Domain != "" {
					t.Errorf("%s: Secure %v, Path %q, Domain %q", name, c.Secure, c.Path, c.Domain)
				}
				return
			}
		}
		t.Errorf("no cookie %s among %v", name, cs)
	}
	checkHost(cookies, "__Host-"+csrfCookie)
	req := httptest.NewRequest("POST", "https://changes.example/login",
		strings.NewReader(url.Values{"csrf_token": {m[1]}, "name": {"ann"}, "password": {"correct horse"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp = do(req, cookies)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login over https: status %d", resp.StatusCode)
	}
	checkHost(resp.Cookies(), "__Host-"+sessionCookie)
	// A session cookie without the prefix, as another site of the domain
	// could set it, is not read.
	var sess string
	for _, c := range resp.Cookies() {
		if c.Name == "__Host-"+sessionCookie {
			sess = c.Value
		}
	}
	resp = do(httptest.NewRequest("GET", "https://changes.example/", nil), []*http.Cookie{{Name: sessionCookie, Value: sess}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("dashboard with an unprefixed session cookie: status %d, want 303 to the login form", resp.StatusCode)
	}
	resp = do(httptest.NewRequest("GET", "https://changes.example/", nil), []*http.Cookie{{Name: "__Host-" + sessionCookie, Value: sess}})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("dashboard with the session cookie: status %d, want 200", resp.StatusCode)
	}
}
