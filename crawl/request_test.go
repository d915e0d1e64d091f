package crawl

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/secret"
)

// seen is what a test server saw of one request.
type seen struct {
	method, path, body, auth, apiKey, lang, ctype string
	user, pass                                    string
	cookies                                       map[string]string
}

type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) record(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s := seen{method: r.Method, path: r.URL.Path, body: string(b), auth: r.Header.Get("Authorization"),
		apiKey: r.Header.Get("X-Api-Key"), lang: r.Header.Get("Accept-Language"), ctype: r.Header.Get("Content-Type"),
		cookies: map[string]string{}}
	s.user, s.pass, _ = r.BasicAuth()
	for _, c := range r.Cookies() {
		s.cookies[c.Name] = c.Value
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, s)
	rc.mu.Unlock()
}

func (rc *recorder) all() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

// sealedOptions returns request options with every secret sealed by box.
func sealedOptions(t *testing.T, box *secret.Box, method, body string) *changedigest.RequestOptions {
	t.Helper()
	o := &changedigest.RequestOptions{
		Method: method, Body: body,
		Headers:   []changedigest.RequestHeader{{Name: "x-api-key", Value: "key-0123456789"}, {Name: "Accept-Language", Value: "fr"}},
		Cookies:   []changedigest.RequestCookie{{Name: "sid", Value: changedigest.Secret{Plain: "cookie-value-42"}}},
		BasicAuth: &changedigest.BasicAuth{User: "ann", Password: changedigest.Secret{Plain: "pass word:1"}},
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Seal(box); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestFetchRequestOptions(t *testing.T) {
	box := secret.NewBox(filepath.Join(t.TempDir(), secret.KeyFile))
	var rc recorder
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		rc.record(r)
		if r.URL.Path == "/hop" { // a redirect on the same host keeps everything
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		fmt.Fprint(w, "<html><body><p>hello</p></body></html>")
	})
	f := testFetcher(t)
	f.Secrets = box

	t.Run("GET", func(t *testing.T) {
		rc.reqs = nil
		mustFetch(t, f, Request{URL: srv.URL + "/hop", ETag: `"e1"`, Options: sealedOptions(t, box, "", "")})
		got := rc.all()
		if len(got) != 2 {
			t.Fatalf("%d requests, want 2", len(got))
		}
		for _, s := range got {
			if s.method != "GET" || s.user != "ann" || s.pass != "pass word:1" || s.apiKey != "key-0123456789" ||
				s.lang != "fr" || s.cookies["sid"] != "cookie-value-42" {
				t.Errorf("%s saw %+v", s.path, s)
			}
		}
	})
	t.Run("POST", func(t *testing.T) {
		rc.reqs = nil
		o := sealedOptions(t, box, "POST", "q=kettle&page=2")
		mustFetch(t, f, Request{URL: srv.URL + "/search", ETag: `"e1"`, Options: o})
		got := rc.all()
		if len(got) != 1 || got[0].method != "POST" || got[0].body != "q=kettle&page=2" ||
			got[0].ctype != "application/x-www-form-urlencoded" || got[0].user != "ann" {
			t.Errorf("saw %+v", got)
		}
		o.Headers = append(o.Headers, changedigest.RequestHeader{Name: "Content-Type", Value: "application/json"})
		o.Body = `{"q":"kettle"}`
		rc.reqs = nil
		mustFetch(t, f, Request{URL: srv.URL + "/search", Options: o})
		if got := rc.all(); len(got) != 1 || got[0].ctype != "application/json" || got[0].body != `{"q":"kettle"}` {
			t.Errorf("saw %+v", got)
		}
	})
	t.Run("no key", func(t *testing.T) {
		g := testFetcher(t)
		_, err := g.Fetch(t.Context(), Request{URL: srv.URL, Options: sealedOptions(t, box, "", "")})
		if !errors.Is(err, ErrSecrets) || strings.Contains(err.Error(), "pass word") {
			t.Errorf("err = %v, want ErrSecrets", err)
		}
		g.Secrets = secret.NewBox(filepath.Join(t.TempDir(), "other.key"))
		_, err = g.Fetch(t.Context(), Request{URL: srv.URL, Options: sealedOptions(t, box, "", "")})
		if !errors.Is(err, ErrSecrets) {
			t.Errorf("another key: err = %v, want ErrSecrets", err)
		}
	})
	t.Run("private address still refused", func(t *testing.T) {
		g := testFetcher(t)
		g.AllowPrivate, g.Secrets = false, box
		rc.reqs = nil
		_, err := g.Fetch(t.Context(), Request{URL: srv.URL, Options: sealedOptions(t, box, "POST", "a=1")})
		if !errors.Is(err, ErrPrivateAddress) || len(rc.all()) != 0 {
			t.Errorf("err = %v, %d requests; want ErrPrivateAddress and none", err, len(rc.all()))
		}
	})
}

// TestFetchRedirectDropsCredentials: a redirect to another host gets
// neither the basic auth, nor the secret headers, nor the cookies, nor a
// POST body.
func TestFetchRedirectDropsCredentials(t *testing.T) {
	box := secret.NewBox(filepath.Join(t.TempDir(), secret.KeyFile))
	var other recorder
	elsewhere := serve(t, func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		fmt.Fprint(w, "<html><body><p>elsewhere</p></body></html>")
	})
	var home recorder
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		home.record(r)
		code := http.StatusFound
		switch r.URL.Path {
		case "/307":
			code = http.StatusTemporaryRedirect
		case "/303":
			code = http.StatusSeeOther
		}
		http.Redirect(w, r, elsewhere.URL+"/landing", code)
	})
	f := testFetcher(t)
	f.Secrets = box
	for _, path := range []string{"/302", "/303"} {
		t.Run("GET "+path, func(t *testing.T) {
			other.reqs, home.reqs = nil, nil
			res := mustFetch(t, f, Request{URL: srv.URL + path, Options: sealedOptions(t, box, "", "")})
			if res.FinalURL != elsewhere.URL+"/landing" {
				t.Errorf("FinalURL = %s", res.FinalURL)
			}
			if h := home.all(); len(h) != 1 || h[0].user != "ann" || h[0].cookies["sid"] == "" {
				t.Errorf("the watch's host saw %+v, want the credentials", h)
			}
			o := other.all()
			if len(o) != 1 || o[0].auth != "" || o[0].apiKey != "" || len(o[0].cookies) != 0 {
				t.Errorf("the other host saw %+v, want no credentials", o)
			}
			if o[0].lang != "fr" {
				t.Errorf("a header that is no secret was dropped: %+v", o[0])
			}
		})
	}
	t.Run("POST 303 becomes a GET without the body", func(t *testing.T) {
		other.reqs = nil
		mustFetch(t, f, Request{URL: srv.URL + "/303", Options: sealedOptions(t, box, "POST", "user=ann&pw=x")})
		if o := other.all(); len(o) != 1 || o[0].method != "GET" || o[0].body != "" || o[0].auth != "" {
			t.Errorf("the other host saw %+v", o)
		}
	})
	t.Run("POST 307 to another host refused", func(t *testing.T) {
		other.reqs = nil
		_, err := f.Fetch(t.Context(), Request{URL: srv.URL + "/307", Options: sealedOptions(t, box, "POST", "user=ann&pw=x")})
		if !errors.Is(err, ErrRedirectBody) {
			t.Errorf("err = %v, want ErrRedirectBody", err)
		}
		if o := other.all(); len(o) != 0 {
			t.Errorf("the other host saw %+v", o)
		}
	})
}
