package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// mustAdmin creates an administrator with a password.
func (e *testEnv) mustAdmin(name, password string) *changedigest.User {
	e.t.Helper()
	u := e.mustUser(name, password)
	nu, err := e.store.UpdateUser(context.Background(), u.ID, func(x *changedigest.User) error {
		x.Admin = true
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return nu
}

// wantStatus fails the test unless the response has the status.
func wantStatus(t testing.TB, what string, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d", what, resp.StatusCode, want)
	}
}

// auditActions lists the audit log's actions, oldest first, as
// "actor action target".
func (e *testEnv) auditActions() []string {
	e.t.Helper()
	es, err := e.store.Audit(context.Background(), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for i := len(es) - 1; i >= 0; i-- {
		out = append(out, strings.TrimSpace(es[i].ActorName+" "+es[i].Action+" "+es[i].TargetName))
	}
	return out
}

var linkRE = regexp.MustCompile(`value="https?://[^"]*(/(?:invite|reset)/[A-Za-z0-9_-]+)"`)

// oneTimeLink is the path of the one-time link a page shows.
func oneTimeLink(t testing.TB, page string) string {
	t.Helper()
	m := linkRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page shows no one-time link")
	}
	return m[1]
}

func TestAdminCreatesUserWhoLogsIn(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	admin := e.login("root", "root password")

	resp, page := admin.get("/admin/users")
	wantStatus(t, "users page", resp, http.StatusOK)
	mustContain(t, page, "root", "Create a user", "Invite by a link", "Registration")

	// Validation names the field and keeps what was typed.
	resp, page = admin.post("/admin/users", url.Values{"name": {"bad name!"}, "email": {"b@example.org"},
		"password": {"a good password"}, "repeat": {"a good password"}})
	wantStatus(t, "bad name", resp, http.StatusBadRequest)
	mustContain(t, page, "Name: user name", `value="b@example.org"`)
	resp, page = admin.post("/admin/users", url.Values{"name": {"bob"}, "password": {"a good password"}, "repeat": {"another one"}})
	wantStatus(t, "passwords differ", resp, http.StatusBadRequest)
	mustContain(t, page, "Password again: the two passwords differ")
	resp, page = admin.post("/admin/users", url.Values{"name": {"bob"}, "password": {"short"}, "repeat": {"short"}})
	wantStatus(t, "short password", resp, http.StatusBadRequest)
	mustContain(t, page, "Password: the password must have at least 8 characters")

	resp, _ = admin.post("/admin/users", url.Values{"name": {"bob"}, "email": {"bob@example.org"},
		"password": {"bob's password"}, "repeat": {"bob's password"}})
	wantStatus(t, "create bob", resp, http.StatusSeeOther)
	bob := e.login("bob", "bob's password")
	resp, _ = bob.get("/")
	wantStatus(t, "bob's dashboard", resp, http.StatusOK)

	resp, page = admin.post("/admin/users", url.Values{"name": {"BOB"}, "password": {"a good password"}, "repeat": {"a good password"}})
	wantStatus(t, "taken name", resp, http.StatusBadRequest)
	mustContain(t, page, "Name: the name &#34;BOB&#34; is taken")

	if got, want := e.auditActions(), []string{"root create user bob"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit log %q, want %q", got, want)
	}
}

func TestAdminPagesForbiddenToOthers(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	e.mustUser("bob", "bob's password")
	bob := e.login("bob", "bob's password")
	for _, path := range []string{"/admin/users", "/admin/audit", "/admin/users/1/delete"} {
		resp, _ := bob.get(path)
		wantStatus(t, "GET "+path, resp, http.StatusForbidden)
	}
	for _, path := range []string{"/admin/users", "/admin/invites", "/admin/registration", "/admin/users/1/disable",
		"/admin/users/1/admin", "/admin/users/1/delete", "/admin/users/1/reset"} {
		resp, _ := bob.post(path, url.Values{"name": {"eve"}, "password": {"eve's password"}, "repeat": {"eve's password"},
			"admin": {"1"}, "registration": {"open"}, "confirm": {"root"}, "how": {"password"}, "expires": {"24"}})
		wantStatus(t, "POST "+path, resp, http.StatusForbidden)
	}
	if _, err := e.store.UserByName(context.Background(), "eve"); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("a non-admin made a user: %v", err)
	}
	_, page := bob.get("/settings")
	if strings.Contains(page, "/admin/users") {
		t.Error("the navigation links the Users page for a non-admin")
	}
	// Visitors are sent to log in.
	resp, _ := e.client().get("/admin/users")
	wantStatus(t, "visitor", resp, http.StatusSeeOther)
}

func TestInviteLinkWorksOnceAndExpires(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	admin := e.login("root", "root password")

	// Closed registration takes no invitations.
	resp, page := admin.post("/admin/invites", url.Values{"expires": {"24"}})
	wantStatus(t, "invite while closed", resp, http.StatusBadRequest)
	mustContain(t, page, "registration is closed")
	resp, _ = admin.post("/admin/registration", url.Values{"registration": {"invite"}})
	wantStatus(t, "invite only", resp, http.StatusSeeOther)

	resp, page = admin.post("/admin/invites", url.Values{"expires": {"12"}})
	wantStatus(t, "odd expiry", resp, http.StatusBadRequest)
	mustContain(t, page, "Expires after:")
	resp, page = admin.post("/admin/invites", url.Values{"expires": {"24"}, "note": {"for carol"}})
	wantStatus(t, "invite", resp, http.StatusOK)
	link := oneTimeLink(t, page)
	_, page = admin.get("/admin/users")
	mustContain(t, page, "for carol")

	carol := e.client()
	resp, page = carol.get(link)
	wantStatus(t, "invite page", resp, http.StatusOK)
	mustContain(t, page, "Create your account")
	resp, page = carol.post(link, url.Values{"name": {"carol"}, "password": {"carol's password"}, "repeat": {"nope nope"}})
	wantStatus(t, "passwords differ", resp, http.StatusBadRequest)
	mustContain(t, page, "Password again: the two passwords differ", `value="carol"`)
	resp, _ = carol.post(link, url.Values{"name": {"carol"}, "password": {"carol's password"}, "repeat": {"carol's password"}})
	wantStatus(t, "accept", resp, http.StatusSeeOther)
	resp, _ = carol.get("/settings")
	wantStatus(t, "carol logged in", resp, http.StatusOK)
	e.login("carol", "carol's password")

	// Once only.
	dave := e.client()
	resp, _ = dave.get(link)
	wantStatus(t, "used link", resp, http.StatusNotFound)
	resp, _ = dave.post(link, url.Values{"name": {"dave"}, "password": {"dave's password"}, "repeat": {"dave's password"}})
	wantStatus(t, "used link posted", resp, http.StatusNotFound)

	// Expired.
	_, page = admin.post("/admin/invites", url.Values{"expires": {"24"}})
	link = oneTimeLink(t, page)
	e.setNow(e.clock().Add(25 * time.Hour))
	admin = e.login("root", "root password")
	resp, _ = dave.get(link)
	wantStatus(t, "expired link", resp, http.StatusNotFound)
	resp, _ = dave.post(link, url.Values{"name": {"dave"}, "password": {"dave's password"}, "repeat": {"dave's password"}})
	wantStatus(t, "expired link posted", resp, http.StatusNotFound)
	if _, err := e.store.UserByName(context.Background(), "dave"); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("an expired link made a user: %v", err)
	}

	// A withdrawn link stops working.
	_, page = admin.post("/admin/invites", url.Values{"expires": {"24"}})
	link = oneTimeLink(t, page)
	ts, err := e.store.Tickets(context.Background())
	if err != nil || len(ts) != 1 {
		t.Fatalf("tickets %v, %v", ts, err)
	}
	resp, _ = admin.post(fmt.Sprintf("/admin/invites/%x/withdraw", ts[0].Hash), nil)
	wantStatus(t, "withdraw", resp, http.StatusSeeOther)
	resp, _ = dave.get(link)
	wantStatus(t, "withdrawn link", resp, http.StatusNotFound)

	// Closing registration stops invitations.
	_, page = admin.post("/admin/invites", url.Values{"expires": {"24"}})
	link = oneTimeLink(t, page)
	admin.post("/admin/registration", url.Values{"registration": {"closed"}})
	resp, _ = dave.get(link)
	wantStatus(t, "invite while closed", resp, http.StatusForbidden)

	got := strings.Join(e.auditActions(), ", ")
	for _, want := range []string{"root set registration", "root invite", "root withdraw invitation"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit log %q lacks %q", got, want)
		}
	}
}

func TestDisabledUserCannotLogIn(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	bob := e.mustUser("bob", "bob's password")
	admin := e.login("root", "root password")
	bobBrowser := e.login("bob", "bob's password")
	secret, _, err := e.store.CreateToken(context.Background(), bob.ID, "script")
	if err != nil {
		t.Fatal(err)
	}

	resp, _ := admin.post(fmt.Sprintf("/admin/users/%d/disable", bob.ID), nil)
	wantStatus(t, "disable", resp, http.StatusSeeOther)
	resp, _ = bobBrowser.get("/settings")
	wantStatus(t, "bob's old session", resp, http.StatusSeeOther)
	if rs, _ := e.store.Sessions(context.Background(), bob.ID); len(rs) != 0 {
		t.Errorf("bob has %d sessions after being disabled", len(rs))
	}
	resp, page := e.client().post("/login", url.Values{"name": {"bob"}, "password": {"bob's password"}})
	wantStatus(t, "disabled login", resp, http.StatusForbidden)
	mustContain(t, page, "disabled")
	req, _ := http.NewRequest("GET", e.http.URL+"/api/v1/watches", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	aresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	aresp.Body.Close()
	wantStatus(t, "disabled API token", aresp, http.StatusForbidden)

	// Not yourself, nor the last admin.
	resp, page = admin.post("/admin/users/1/disable", nil)
	wantStatus(t, "disable self", resp, http.StatusBadRequest)
	mustContain(t, page, "your own account")

	resp, _ = admin.post(fmt.Sprintf("/admin/users/%d/enable", bob.ID), nil)
	wantStatus(t, "enable", resp, http.StatusSeeOther)
	e.login("bob", "bob's password")
	if got, want := e.auditActions(), []string{"root disable user bob", "root enable user bob"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit log %q, want %q", got, want)
	}
}

func TestDeleteUserRemovesTheirData(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	bob := e.mustUser("bob", "bob's password")
	w1 := e.mustWatch(bob, "http://example.org/a")
	w2 := e.mustWatch(bob, "http://example.org/b")
	admin := e.login("root", "root password")
	e.login("bob", "bob's password")

	path := fmt.Sprintf("/admin/users/%d/delete", bob.ID)
	resp, page := admin.get(path)
	wantStatus(t, "confirm page", resp, http.StatusOK)
	mustContain(t, page, "Delete bob?", "2 watches")
	resp, page = admin.post(path, url.Values{"confirm": {"bo"}})
	wantStatus(t, "wrong confirmation", resp, http.StatusBadRequest)
	mustContain(t, page, "Type the name bob to confirm")
	if _, err := e.store.User(context.Background(), bob.ID); err != nil {
		t.Fatalf("bob is gone before the confirmation: %v", err)
	}
	resp, _ = admin.post(path, url.Values{"confirm": {"bob"}})
	wantStatus(t, "delete", resp, http.StatusSeeOther)

	ctx := context.Background()
	if _, err := e.store.User(ctx, bob.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob after deletion: %v", err)
	}
	for _, w := range []*changedigest.Watch{w1, w2} {
		if _, err := e.store.Watch(ctx, pet.AnyUser, w.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			t.Errorf("watch %d after deleting its user: %v", w.ID, err)
		}
	}
	if rs, _ := e.store.Sessions(ctx, bob.ID); len(rs) != 0 {
		t.Errorf("bob has %d sessions after deletion", len(rs))
	}
	resp, _ = e.client().post("/login", url.Values{"name": {"bob"}, "password": {"bob's password"}})
	wantStatus(t, "deleted login", resp, http.StatusUnauthorized)

	// The last administrator stays.
	resp, page = admin.post("/admin/users/1/admin", url.Values{"admin": {"0"}})
	wantStatus(t, "unmake the last admin", resp, http.StatusBadRequest)
	mustContain(t, page, "root is the last administrator")
	if got, want := e.auditActions(), []string{"root delete user bob"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit log %q, want %q", got, want)
	}
}

func TestMakeAndUnmakeAdmin(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	bob := e.mustUser("bob", "bob's password")
	admin := e.login("root", "root password")
	resp, _ := admin.post(fmt.Sprintf("/admin/users/%d/admin", bob.ID), url.Values{"admin": {"1"}})
	wantStatus(t, "make admin", resp, http.StatusSeeOther)
	b := e.login("bob", "bob's password")
	resp, _ = b.get("/admin/users")
	wantStatus(t, "bob on the users page", resp, http.StatusOK)
	// With two admins, root may step down; then bob is the last.
	resp, _ = admin.post("/admin/users/1/admin", url.Values{"admin": {"0"}})
	wantStatus(t, "root steps down", resp, http.StatusSeeOther)
	resp, _ = admin.get("/admin/users")
	wantStatus(t, "root on the users page", resp, http.StatusForbidden)
	resp, _ = b.post(fmt.Sprintf("/admin/users/%d/admin", bob.ID), url.Values{"admin": {"0"}})
	wantStatus(t, "unmake the last admin", resp, http.StatusBadRequest)
	if got, want := e.auditActions(), []string{"root make admin bob", "root unmake admin root"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit log %q, want %q", got, want)
	}
}

func TestResetPassword(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	bob := e.mustUser("bob", "bob's password")
	admin := e.login("root", "root password")
	old := e.login("bob", "bob's password")

	resp, page := admin.post(fmt.Sprintf("/admin/users/%d/reset", bob.ID), url.Values{"how": {"link"}})
	wantStatus(t, "reset link", resp, http.StatusOK)
	link := oneTimeLink(t, page)
	v := e.client()
	resp, page = v.get(link)
	wantStatus(t, "reset page", resp, http.StatusOK)
	mustContain(t, page, "bob")
	resp, page = v.post(link, url.Values{"password": {"short"}, "repeat": {"short"}})
	wantStatus(t, "short", resp, http.StatusBadRequest)
	mustContain(t, page, "Password: the password must have at least 8 characters")
	resp, _ = v.post(link, url.Values{"password": {"bob's new password"}, "repeat": {"bob's new password"}})
	wantStatus(t, "set", resp, http.StatusSeeOther)
	resp, _ = old.get("/settings")
	wantStatus(t, "old session", resp, http.StatusSeeOther)
	e.login("bob", "bob's new password")
	resp, _ = v.get(link)
	wantStatus(t, "used reset link", resp, http.StatusNotFound)

	resp, page = admin.post(fmt.Sprintf("/admin/users/%d/reset", bob.ID), url.Values{"how": {"password"}})
	wantStatus(t, "temporary password", resp, http.StatusOK)
	m := regexp.MustCompile(`Password <input class="copy" type="text" readonly value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no temporary password shown")
	}
	e.login("bob", m[1])
	if got, want := e.auditActions(), []string{"root reset password bob", "root reset password bob"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit log %q, want %q", got, want)
	}
}

func TestPasswordChangeNeedsTheCurrentOne(t *testing.T) {
	e := mustServer(t)
	e.mustUser("bob", "bob's password")
	c := e.login("bob", "bob's password")
	resp, page := c.post("/settings/password", url.Values{"current": {"wrong password"}, "new": {"a new password"}, "repeat": {"a new password"}})
	wantStatus(t, "wrong current", resp, http.StatusBadRequest)
	mustContain(t, page, "the current password is wrong")
	resp, _ = c.post("/settings/password", url.Values{"new": {"a new password"}, "repeat": {"a new password"}})
	wantStatus(t, "no current", resp, http.StatusBadRequest)
	e.login("bob", "bob's password")
	resp, _ = c.post("/settings/password", url.Values{"current": {"bob's password"}, "new": {"a new password"}, "repeat": {"a new password"}})
	wantStatus(t, "change", resp, http.StatusSeeOther)
	resp, _ = e.client().post("/login", url.Values{"name": {"bob"}, "password": {"bob's password"}})
	wantStatus(t, "old password", resp, http.StatusUnauthorized)
	e.login("bob", "a new password")
}

func TestSessionsListAndSignOut(t *testing.T) {
	e := mustServer(t)
	bob := e.mustUser("bob", "bob's password")
	c1 := e.login("bob", "bob's password")
	c2 := e.login("bob", "bob's password")
	c3 := e.login("bob", "bob's password")
	e.mustUser("carol", "carol's password")
	carol := e.login("carol", "carol's password")

	resp, page := c1.get("/settings")
	wantStatus(t, "settings", resp, http.StatusOK)
	mustContain(t, page, "Sessions", "this browser", "Go program", "Sign out everywhere else")
	if n := strings.Count(page, "/settings/sessions/") - 1; n != 3 {
		t.Errorf("settings list %d sessions, want 3", n)
	}

	// One session: c2's, which its own settings page lists first.
	_, before := c2.get("/settings")
	m := regexp.MustCompile(`/settings/sessions/([0-9a-f]{64})/end`).FindStringSubmatch(before)
	if m == nil {
		t.Fatal("no session listed")
	}
	c2ID := m[1]
	if rs, _ := e.store.Sessions(context.Background(), bob.ID); len(rs) != 3 {
		t.Fatalf("bob has %d sessions, want 3", len(rs))
	}
	// Another user cannot end it.
	resp, _ = carol.post("/settings/sessions/"+c2ID+"/end", nil)
	wantStatus(t, "carol ends bob's session", resp, http.StatusNotFound)
	resp, _ = c1.post("/settings/sessions/"+c2ID+"/end", nil)
	wantStatus(t, "end c2", resp, http.StatusSeeOther)
	resp, _ = c2.get("/settings")
	wantStatus(t, "c2 after its end", resp, http.StatusSeeOther)
	resp, _ = c3.get("/settings")
	wantStatus(t, "c3 still in", resp, http.StatusOK)

	// Everywhere else.
	c4 := e.login("bob", "bob's password")
	resp, page = c1.post("/settings/sessions/end-others", nil)
	wantStatus(t, "end others", resp, http.StatusSeeOther)
	for _, c := range []*client{c3, c4} {
		resp, _ = c.get("/settings")
		wantStatus(t, "other session", resp, http.StatusSeeOther)
	}
	resp, _ = c1.get("/settings")
	wantStatus(t, "this session", resp, http.StatusOK)
	resp, _ = carol.get("/settings")
	wantStatus(t, "carol's session", resp, http.StatusOK)
	_ = page
}

func TestRegistrationSwitch(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	admin := e.login("root", "root password")
	v := e.client()
	form := url.Values{"name": {"dora"}, "password": {"dora's password"}, "repeat": {"dora's password"}}

	// Closed (the default).
	_, page := v.get("/login")
	if strings.Contains(page, "Create an account") {
		t.Error("the login page offers an account while registration is closed")
	}
	resp, _ := v.get("/register")
	wantStatus(t, "register while closed", resp, http.StatusForbidden)
	resp, _ = v.post("/register", form)
	wantStatus(t, "register post while closed", resp, http.StatusForbidden)

	resp, page = admin.post("/admin/registration", url.Values{"registration": {"wide open"}})
	wantStatus(t, "bad mode", resp, http.StatusBadRequest)
	mustContain(t, page, "Registration: choose closed, invite only or open")

	admin.post("/admin/registration", url.Values{"registration": {"invite"}})
	resp, _ = v.get("/register")
	wantStatus(t, "register while invite only", resp, http.StatusForbidden)

	admin.post("/admin/registration", url.Values{"registration": {"open"}})
	_, page = v.get("/login")
	mustContain(t, page, "Create an account", `href="/register"`)
	resp, _ = v.get("/register")
	wantStatus(t, "register page", resp, http.StatusOK)
	resp, page = v.post("/register", url.Values{"name": {"root"}, "password": {"a password!"}, "repeat": {"a password!"}})
	wantStatus(t, "taken name", resp, http.StatusBadRequest)
	mustContain(t, page, "Name: the name &#34;root&#34; is taken")
	resp, _ = v.post("/register", form)
	wantStatus(t, "register", resp, http.StatusSeeOther)
	resp, _ = v.get("/settings")
	wantStatus(t, "registered user logged in", resp, http.StatusOK)
	u, err := e.store.UserByName(context.Background(), "dora")
	if err != nil || u.Admin {
		t.Fatalf("dora: %+v, %v", u, err)
	}
	if got := strings.Join(e.auditActions(), ", "); !strings.Contains(got, "root set registration") {
		t.Errorf("audit log %q", got)
	}
	es, _ := e.store.Audit(context.Background(), 1)
	if len(es) != 1 || es[0].Detail != "open" || !es[0].Time.Equal(e.clock()) {
		t.Errorf("newest audit entry %+v", es)
	}
}

func TestJoinFormsAreRateLimited(t *testing.T) {
	e := mustServer(t)
	e.mustAdmin("root", "root password")
	e.store.SetRegistration(context.Background(), changedigest.RegistrationOpen)
	v := e.client()
	last := 0
	for i := range 8 {
		resp, _ := v.post("/register", url.Values{"name": {fmt.Sprintf("u%d", i)}, "password": {"x"}, "repeat": {"x"}})
		last = resp.StatusCode
		if last == http.StatusTooManyRequests {
			if i < 5 {
				t.Errorf("held back after %d tries", i)
			}
			if resp.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
			break
		}
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("8 registrations from one address in a moment: last status %d", last)
	}
}

func TestDescribeAgent(t *testing.T) {
	for ua, want := range map[string]string{
		"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0":                                                                  "Firefox on Linux",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 Edg/120.0":                   "Edge on Windows",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1": "Safari on iPhone",
		"":          "Unknown browser",
		"something": "something",
	} {
		if got := describeAgent(ua); got != want {
			t.Errorf("describeAgent(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestLinkSecretsStayOutOfTheLog(t *testing.T) {
	for path, want := range map[string]string{
		"/invite/abcDEF_-123":   "/invite/…",
		"/cd/reset/abcDEF_-123": "/cd/reset/…",
		"/settings":             "/settings",
		"/watches/3/versions/2": "/watches/3/versions/2",
	} {
		if got := hideLinkSecret(path); got != want {
			t.Errorf("hideLinkSecret(%q) = %q, want %q", path, got, want)
		}
	}
}
