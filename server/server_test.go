package server

import (
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
