package server

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/profile"
	"github.com/changedigest/changedigest/render"
	"github.com/changedigest/changedigest/secret"
	"github.com/changedigest/changedigest/segmenter"
)

var (
	wnOnce sync.Once
	wn     *expand.WordNet
	wnErr  error
)

func wordNet(tb testing.TB) *expand.WordNet {
	wnOnce.Do(func() { wn, wnErr = expand.Load() })
	if wnErr != nil {
		tb.Fatal(wnErr)
	}
	return wn
}

// testEnv is a server on an httptest listener with a real store.
type testEnv struct {
	t     testing.TB
	srv   *Server
	http  *httptest.Server
	store *pet.Store
	seg   *segmenter.Segmenter
	now   time.Time
	mu    sync.Mutex
}

func (e *testEnv) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// setNow moves the test clock.
func (e *testEnv) setNow(t time.Time) {
	e.mu.Lock()
	e.now = t
	e.mu.Unlock()
}

// mustServer starts a server whose site URL is the httptest server's.
func mustServer(tb testing.TB) *testEnv {
	tb.Helper()
	return mustServerIn(tb, tb.TempDir())
}

// mustServerIn is mustServer with the store in dir.
func mustServerIn(tb testing.TB, dir string) *testEnv {
	tb.Helper()
	e := &testEnv{t: tb, now: time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)}
	e.store = pet.New(dir)
	e.store.Now = e.clock
	if err := e.store.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.store.Close() })

	s := New()
	e.http = httptest.NewUnstartedServer(nil)
	eng, err := render.NewEngine("http://" + e.http.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	ex := expand.NewExpander(wordNet(tb))
	n := notify.New(e.store, ex, eng)
	n.Location, n.Now = time.UTC, e.clock
	e.seg = segmenter.New()
	s.Store, s.Render, s.Notify, s.Segmenter, s.Expander = e.store, eng, n, e.seg, ex
	s.Profiles = profile.NewBuilder()
	s.Now = e.clock
	s.Secrets = secret.NewBox(filepath.Join(dir, secret.KeyFile))
	s.Logger = discardLogger()
	e.srv = s
	e.http.Config.Handler = s.Handler()
	e.http.Start()
	tb.Cleanup(e.http.Close)
	return e
}

// mustUser creates a user with a password.
func (e *testEnv) mustUser(name, password string) *changedigest.User {
	e.t.Helper()
	hash, err := HashPassword(password)
	if err != nil {
		e.t.Fatal(err)
	}
	u := &changedigest.User{Name: name, PasswordHash: hash, DigestHour: -1}
	if err := e.store.CreateUser(context.Background(), u); err != nil {
		e.t.Fatal(err)
	}
	return u
}

// client is a browser: it keeps cookies and does not follow redirects.
type client struct {
	t    testing.TB
	base string
	http *http.Client
}

func (e *testEnv) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: e.t, base: e.http.URL, http: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// login logs the client in, failing the test otherwise.
func (e *testEnv) login(name, password string) *client {
	e.t.Helper()
	c := e.client()
	resp, _ := c.post("/login", url.Values{"name": {name}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login as %s: status %d", name, resp.StatusCode)
	}
	return c
}

// get fetches a path and returns the response and its body.
func (c *client) get(path string) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf returns the client's CSRF token, as a page of the site shows it
// in its forms: the login form's for a visitor, the logout form's (on
// the settings page) for a logged-in user.
func (c *client) csrf() string {
	c.t.Helper()
	resp, page := c.get("/login")
	if resp.StatusCode == http.StatusSeeOther { // logged in
		_, page = c.get("/settings")
	}
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		c.t.Fatalf("no CSRF token on the login or settings page")
	}
	return m[1]
}

// post sends a form with the client's CSRF token.
func (c *client) post(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", c.csrf())
	resp, err := c.http.PostForm(c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// mustWatch creates a watch of u directly in the store.
func (e *testEnv) mustWatch(u *changedigest.User, rawURL string, tags ...string) *changedigest.Watch {
	e.t.Helper()
	w := &changedigest.Watch{UserID: u.ID, URL: rawURL, Tags: tags}
	if err := e.store.CreateWatch(context.Background(), w); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// addVersion segments body against the watch's newest version and stores
// it at the test clock, as the check pipeline would.
func (e *testEnv) addVersion(w *changedigest.Watch, body string) *changedigest.Snapshot {
	e.t.Helper()
	ctx := context.Background()
	in := segmenter.Input{Body: []byte(body), Zone: w.Zone}
	if prev, err := e.store.Latest(ctx, w.ID); err == nil {
		in.Prev = prev
		if in.PrevBody, err = e.store.Body(ctx, w.ID, prev.Seq); err != nil {
			e.t.Fatal(err)
		}
		if in.History, err = e.store.History(ctx, w.ID, 5); err != nil {
			e.t.Fatal(err)
		}
	}
	snap, err := e.seg.Detect(in)
	if err != nil {
		e.t.Fatal(err)
	}
	snap.FetchedAt, snap.Status = e.clock(), 200
	snap.Value = crawl.ReadValue(w, []byte(body), in.Prev)
	if _, err := e.store.AddVersion(ctx, w.ID, snap, []byte(body)); err != nil {
		e.t.Fatal(err)
	}
	return snap
}

func mustContain(t testing.TB, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("response lacks %q", w)
		}
	}
}
