package server

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/render"
)

// nextCases are post-login redirects a browser would follow to another
// site, or that are not plain paths of this one.
var nextCases = []string{
	"/\t/evil.example/",
	"/%09/evil.example/",
	"/%0a/evil.example/",
	"/%0D%0A/evil.example/",
	"/\n/evil.example/",
	"/\r/evil.example/",
	"\t//evil.example/",
	"//evil.example/",
	"///evil.example/",
	"/\\evil.example/",
	"/%5cevil.example/",
	"/%5Cevil.example/",
	"/%2f/evil.example/",
	"/%2F%2Fevil.example/",
	"\\\\evil.example/",
	"https://evil.example/",
	"http:/evil.example/",
	"javascript:alert(1)",
	"evil.example",
	"/ok/../\\evil.example",
	"/a\x00b",
	"/a%00b",
	"/a\x7fb",
	"/a\u0085b",
	"/%zz",
	"/" + strings.Repeat("a", maxNext),
}

func TestLoginNextStaysOnSite(t *testing.T) {
	e := mustServer(t)
	e.mustUser("ann", "correct horse")
	for _, next := range nextCases {
		c := e.client()
		resp, _ := c.post("/login", url.Values{"name": {"ann"}, "password": {"correct horse"}, "next": {next}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Errorf("login with next=%q: status %d, Location %q; want 303 to /", next, resp.StatusCode, resp.Header.Get("Location"))
		}
		// A logged-in visitor of the login form is sent on at once.
		resp, _ = c.get("/login?next=" + url.QueryEscape(next))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Errorf("GET /login?next=%q: status %d, Location %q; want 303 to /", next, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// The raw query of the report: a tab encoded in the URL.
	c := e.login("ann", "correct horse")
	resp, _ := c.get("/login?next=/%09/evil.example/")
	if loc := resp.Header.Get("Location"); loc != "/" {
		t.Errorf("GET /login?next=/%%09/evil.example/: Location %q, want /", loc)
	}
	for _, next := range []string{"/", "/watches/3", "/tags/caf%C3%A9?page=2&sort=name", "/search?q=a+b&type=content", "/tags/my%20tag"} {
		c := e.client()
		resp, _ := c.post("/login", url.Values{"name": {"ann"}, "password": {"correct horse"}, "next": {next}})
		if loc := resp.Header.Get("Location"); loc != next {
			t.Errorf("login with next=%q: Location %q, want it kept", next, loc)
		}
	}
}

// browserPath is what a browser makes of a Location value before it
// resolves it: tabs and newlines stripped, backslashes read as slashes,
// leading spaces and control characters trimmed.
func browserPath(loc string) string {
	loc = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, loc)
	return strings.TrimLeft(loc, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
}

func FuzzSafeNext(f *testing.F) {
	for _, c := range nextCases {
		f.Add(c)
	}
	f.Add("/watches/1?page=2")
	f.Add("/")
	s := New()
	eng, err := render.NewEngine("https://changes.example/app")
	if err != nil {
		f.Fatal(err)
	}
	s.Render = eng
	f.Fuzz(func(t *testing.T, next string) {
		got := s.safeNext(next)
		for _, v := range []string{got, browserPath(got)} {
			if !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
				t.Fatalf("safeNext(%q) = %q: not a plain same-site path (a browser reads %q)", next, got, browserPath(got))
			}
			u, err := url.Parse(v)
			if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
				t.Fatalf("safeNext(%q) = %q: a browser reads %q, which names a site (%v)", next, got, v, err)
			}
			// u.Path is decoded once, as a browser and the router decode
			// it ("/%25" is the path "/%", not an escape to decode again).
			if d := u.Path; strings.HasPrefix(d, "//") || strings.ContainsAny(d, "\\\t\r\n") {
				t.Fatalf("safeNext(%q) = %q: decoded path %q is not plain", next, got, d)
			}
		}
		if browserPath(got) != got {
			t.Fatalf("safeNext(%q) = %q: a browser changes it to %q", next, got, browserPath(got))
		}
		if got != next && got != s.Render.Path("/") {
			t.Fatalf("safeNext(%q) = %q: neither the input nor the dashboard", next, got)
		}
	})
}

// TestTaggingAuthorityKept: the host entry ids are minted under is the
// first base URL's, kept in the data directory, so that moving the
// service to another address keeps every entry id.
func TestTaggingAuthorityKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tag-authority")
	a, err := LoadAuthority(path, "changes.example.org")
	if err != nil || a != "changes.example.org" {
		t.Fatalf("first: %q, %v", a, err)
	}
	a, err = LoadAuthority(path, "new-host.example.net")
	if err != nil || a != "changes.example.org" {
		t.Errorf("after a move: %q, %v", a, err)
	}
}
