package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// webClient is a web client of a running serve that keeps its cookies and
// does not follow redirects.
type webClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *webClient {
	jar, _ := cookiejar.New(nil)
	return &webClient{t: t, base: base, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *webClient) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var formToken = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// post sends a form with the CSRF token of the page at from.
func (b *webClient) post(from, path string, form url.Values) (int, string) {
	b.t.Helper()
	_, page := b.get(from)
	m := formToken.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no form token on %s", from)
	}
	form.Set("csrf_token", m[1])
	resp, err := b.c.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *webClient) login(name, password string) {
	b.t.Helper()
	if code, _ := b.post("/login", "/login", url.Values{"name": {name}, "password": {password}}); code != http.StatusSeeOther {
		b.t.Fatalf("login as %s: %d", name, code)
	}
}

// TestServeAccountsOnTheWeb: on a running serve (a cluster of one), an
// administrator makes a user who logs in at once, invites another by a
// link that works once, disables and deletes a user with their watches,
// and each step is in the audit log.
func TestServeAccountsOnTheWeb(t *testing.T) {
	m := NewMain()
	var out bytes.Buffer
	m.Stdout = &out
	m.Logger = slogDiscard()
	m.Config.data = t.TempDir()
	m.Config.Addr = "127.0.0.1:0"
	ctx := context.Background()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	pw := regexp.MustCompile(`log in as admin with password (\S+)`).FindStringSubmatch(out.String())
	if pw == nil {
		t.Fatalf("no administrator password in the start-up output:\n%s", out.String())
	}
	base := strings.TrimSuffix(m.Server.Render.Site(), "/")
	admin := newBrowser(t, base)
	admin.login("admin", pw[1])

	code, _ := admin.post("/admin/users", "/admin/users", url.Values{"name": {"bob"}, "password": {"bob's password"}, "repeat": {"bob's password"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create bob: %d", code)
	}
	bob := newBrowser(t, base)
	bob.login("bob", "bob's password")
	if code, _ := bob.get("/settings"); code != http.StatusOK {
		t.Fatalf("bob's settings: %d", code)
	}
	if code, _ := bob.get("/admin/users"); code != http.StatusForbidden {
		t.Errorf("bob on the users page: %d, want 403", code)
	}

	// An invitation, once.
	if code, _ := admin.post("/admin/users", "/admin/registration", url.Values{"registration": {"invite"}}); code != http.StatusSeeOther {
		t.Fatalf("registration: %d", code)
	}
	_, page := admin.post("/admin/users", "/admin/invites", url.Values{"expires": {"24"}})
	link := regexp.MustCompile(`value="https?://[^"]*(/invite/[A-Za-z0-9_-]+)"`).FindStringSubmatch(page)
	if link == nil {
		t.Fatal("no invitation link")
	}
	carol := newBrowser(t, base)
	if code, _ := carol.post(link[1], link[1], url.Values{"name": {"carol"}, "password": {"carol's password"}, "repeat": {"carol's password"}}); code != http.StatusSeeOther {
		t.Fatalf("carol accepting: %d", code)
	}
	if code, _ := carol.get("/settings"); code != http.StatusOK {
		t.Errorf("carol after joining: %d", code)
	}
	if code, _ := newBrowser(t, base).get(link[1]); code != http.StatusNotFound {
		t.Errorf("the invitation again: %d, want 404", code)
	}

	// Disabled: bob's session ends.
	bu, err := m.clusterStore().UserByName(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	w := &changedigest.Watch{UserID: bu.ID, URL: "http://127.0.0.1:9/bob", Paused: true}
	if err := m.clusterStore().CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	if code, _ := admin.post("/admin/users", fmt.Sprintf("/admin/users/%d/disable", bu.ID), url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("disable bob: %d", code)
	}
	if code, _ := bob.get("/settings"); code != http.StatusSeeOther {
		t.Errorf("bob's session after disabling: %d, want a redirect to log in", code)
	}

	// Deleted with his watch.
	if code, _ := admin.post("/admin/users", fmt.Sprintf("/admin/users/%d/delete", bu.ID), url.Values{"confirm": {"bob"}}); code != http.StatusSeeOther {
		t.Fatalf("delete bob: %d", code)
	}
	if _, err := m.clusterStore().Watch(ctx, pet.AnyUser, w.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob's watch after deleting him: %v", err)
	}
	if _, err := m.clusterStore().UserByName(ctx, "bob"); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob after deletion: %v", err)
	}

	_, page = admin.get("/admin/audit")
	for _, want := range []string{"create user", "set registration", "invite", "disable user", "delete user"} {
		if !strings.Contains(page, want) {
			t.Errorf("the audit log lacks %q", want)
		}
	}
}
