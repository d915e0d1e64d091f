package server

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fewAttempts lowers the server's LoginAttempts to n, to spare the tests
// many bcrypt comparisons.
func (e *testEnv) fewAttempts(n int) {
	e.srv.LoginAttempts, e.srv.logins = n, nil
	e.srv.init()
}

// clientFrom is a browser whose connections come from the loopback
// address ip (any of 127.0.0.0/8), as if from another machine.
func (e *testEnv) clientFrom(ip string) *client {
	c := e.client()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c.http.Transport = &http.Transport{DialContext: d.DialContext}
	return c
}

func (c *client) tryLogin(name, password string) int {
	c.t.Helper()
	resp, _ := c.post("/login", url.Values{"name": {name}, "password": {password}})
	return resp.StatusCode
}

func TestLoginAttackersDoNotLockOutTheOwner(t *testing.T) {
	e := mustServer(t)
	e.fewAttempts(3)
	e.mustUser("ann", "correct horse")
	if st := e.clientFrom("127.0.0.2").tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Fatalf("owner's first login: %d", st)
	}
	// Attackers on three addresses guess ann's password many times.
	for _, ip := range []string{"127.0.0.10", "127.0.0.11", "127.0.0.12"} {
		a := e.clientFrom(ip)
		for range 3 * e.srv.LoginAttempts {
			if st := a.tryLogin("ann", "wrong guess"); st != http.StatusUnauthorized && st != http.StatusTooManyRequests {
				t.Fatalf("guess from %s: status %d", ip, st)
			}
		}
		if st := a.tryLogin("ann", "correct horse"); st != http.StatusTooManyRequests {
			t.Errorf("the right password from the guessing address %s: status %d, want 429", ip, st)
		}
	}
	// The owner, from the address she logged in from before, gets in.
	if st := e.clientFrom("127.0.0.2").tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Errorf("owner from her usual address during the attack: status %d, want 303", st)
	}
	// An address that never logged in to ann waits while the attack goes on.
	if st := e.clientFrom("127.0.0.20").tryLogin("ann", "correct horse"); st != http.StatusTooManyRequests {
		t.Errorf("a new address during the attack: status %d, want 429", st)
	}
	// Other names are not affected from a clean address.
	e.mustUser("bob", "battery staple")
	if st := e.clientFrom("127.0.0.21").tryLogin("bob", "battery staple"); st != http.StatusSeeOther {
		t.Errorf("another user from a clean address: status %d, want 303", st)
	}
}

func TestLoginWaitsGrow(t *testing.T) {
	e := mustServer(t)
	e.mustUser("ann", "correct horse")
	c := e.clientFrom("127.0.0.3")
	for range e.srv.LoginAttempts {
		if st := c.tryLogin("ann", "wrong guess"); st != http.StatusUnauthorized {
			t.Fatalf("a free guess: status %d", st)
		}
	}
	t0 := e.clock()
	resp, _ := c.post("/login", url.Values{"name": {"ann"}, "password": {"wrong guess"}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("after %d failures: status %d, Retry-After %q; want 429, 1", e.srv.LoginAttempts, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Each failure after the wait doubles the next wait.
	elapsed := time.Duration(0)
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		elapsed += wait - time.Millisecond
		e.setNow(t0.Add(elapsed))
		if st := c.tryLogin("ann", "wrong guess"); st != http.StatusTooManyRequests {
			t.Fatalf("step %d: a try before the wait of %s is over: status %d, want 429", i, wait, st)
		}
		elapsed += time.Millisecond
		e.setNow(t0.Add(elapsed))
		if st := c.tryLogin("ann", "wrong guess"); st != http.StatusUnauthorized {
			t.Fatalf("step %d: a try after the wait of %s: status %d, want 401", i, wait, st)
		}
	}
	// A quiet address is forgotten after LoginWindow.
	e.setNow(t0.Add(elapsed + e.srv.LoginWindow))
	if st := c.tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Errorf("after a quiet LoginWindow: status %d, want 303", st)
	}
}

func TestWrongTokensDoNotRefuseTheRightOne(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	api := e.api(u)
	c := e.clientFrom("127.0.0.4")
	for range 3 * e.srv.LoginAttempts {
		c.get("/feeds/" + strings.Repeat("x", 43) + "/atom.xml")
	}
	if resp, _ := c.get("/feeds/" + strings.Repeat("x", 43) + "/atom.xml"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a wrong feed token after many: status %d, want 429", resp.StatusCode)
	}
	if resp, _ := c.get("/feeds/" + u.FeedToken + "/atom.xml"); resp.StatusCode != http.StatusOK {
		t.Errorf("the right feed token from the guessing address: status %d, want 200", resp.StatusCode)
	}
	bad := &apiClient{t: t, base: api.base, token: "cd_" + strings.Repeat("y", 40)}
	for range 3 * e.srv.LoginAttempts {
		bad.raw("GET", "/watches", "", nil)
	}
	if resp, _ := bad.raw("GET", "/watches", "", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a wrong API token after many: status %d, want 429", resp.StatusCode)
	}
	if resp, _ := api.raw("GET", "/watches", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the right API token from the guessing address: status %d, want 200", resp.StatusCode)
	}
}

func TestLoginManyNamesFromOneAddress(t *testing.T) {
	e := mustServer(t)
	e.fewAttempts(3)
	e.mustUser("ann", "correct horse")
	a := e.clientFrom("127.0.0.5")
	for i := range 5 * e.srv.LoginAttempts {
		if st := a.tryLogin("user"+strconv.Itoa(i), "wrong guess"); st != http.StatusUnauthorized {
			t.Fatalf("guess %d: status %d, want 401", i, st)
		}
	}
	if st := a.tryLogin("ann", "correct horse"); st != http.StatusTooManyRequests {
		t.Errorf("after guessing %d names from one address: status %d, want 429", 5*e.srv.LoginAttempts, st)
	}
	if st := e.clientFrom("127.0.0.6").tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Errorf("another address: status %d, want 303", st)
	}
}

func TestLoginKnownBrowserOnANewAddress(t *testing.T) {
	e := mustServer(t)
	e.fewAttempts(3)
	e.mustUser("ann", "correct horse")
	laptop := e.clientFrom("127.0.0.7")
	if st := laptop.tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Fatalf("first login: %d", st)
	}
	laptop.post("/logout", nil)
	for _, ip := range []string{"127.0.0.30", "127.0.0.31"} {
		a := e.clientFrom(ip)
		for range 5 {
			a.tryLogin("ann", "wrong guess")
		}
	}
	// The same browser on another network gets in; a new browser there waits.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.8")}}
	laptop.http.Transport = &http.Transport{DialContext: d.DialContext}
	if st := laptop.tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Errorf("the owner's browser from a new address during the attack: status %d, want 303", st)
	}
	if st := e.clientFrom("127.0.0.9").tryLogin("ann", "correct horse"); st != http.StatusTooManyRequests {
		t.Errorf("a new browser from a new address during the attack: status %d, want 429", st)
	}
	// The cookie is good for its own name only.
	e.mustUser("bob", "battery staple")
	for range 5 {
		e.clientFrom("127.0.0.32").tryLogin("bob", "wrong guess")
	}
	if st := laptop.tryLogin("bob", "battery staple"); st != http.StatusTooManyRequests {
		t.Errorf("ann's browser logging in as bob during an attack on bob: status %d, want 429", st)
	}
}

// knownCookieOf is the value of the browser's cookie that says it
// logged in to a name before.
func (c *client) knownCookieOf() string {
	u, _ := url.Parse(c.base)
	for _, k := range c.http.Jar.Cookies(u) {
		if k.Name == knownCookie {
			return k.Value
		}
	}
	return ""
}

// TestLoginKnownBrowserCookieIsPerBrowser: each login gives the browser
// a cookie of its own, new at every login; a copy does not count once it
// is a year old, nor when altered, while the browser's own still lets
// it in during an attack on its name.
func TestLoginKnownBrowserCookieIsPerBrowser(t *testing.T) {
	e := mustServer(t)
	e.fewAttempts(3)
	e.mustUser("ann", "correct horse")
	laptop, phone := e.clientFrom("127.0.0.60"), e.clientFrom("127.0.0.61")
	for _, c := range []*client{laptop, phone} {
		if st := c.tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
			t.Fatalf("login: %d", st)
		}
	}
	first, other := laptop.knownCookieOf(), phone.knownCookieOf()
	if first == "" || first == other {
		t.Fatalf("two browsers of one user got the cookies %q and %q; want two different ones", first, other)
	}
	if st := laptop.tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Fatalf("second login: %d", st)
	}
	if again := laptop.knownCookieOf(); again == first || again == "" {
		t.Errorf("a new login kept the cookie %q; want a new one", again)
	}
	// An attack on the name from elsewhere.
	for _, ip := range []string{"127.0.0.62", "127.0.0.63"} {
		a := e.clientFrom(ip)
		for range 5 {
			a.tryLogin("ann", "wrong guess")
		}
	}
	// A copy of the cookie, on a machine that never logged in: altered,
	// it does not count; as it is, it does.
	withCookie := func(ip, value string) *client {
		c := e.clientFrom(ip)
		u, _ := url.Parse(c.base)
		c.http.Jar.SetCookies(u, []*http.Cookie{{Name: knownCookie, Value: value, Path: "/"}})
		return c
	}
	altered := "A" + other[1:]
	if other[0] == 'A' {
		altered = "B" + other[1:]
	}
	if st := withCookie("127.0.0.64", altered).tryLogin("ann", "correct horse"); st != http.StatusTooManyRequests {
		t.Errorf("an altered cookie during the attack: %d, want 429", st)
	}
	if st := withCookie("127.0.0.65", other).tryLogin("ann", "correct horse"); st != http.StatusSeeOther {
		t.Errorf("the phone's cookie during the attack: %d, want 303", st)
	}
	// A year after the login that made it, the cookie no longer counts.
	e.setNow(e.clock().Add(365*24*time.Hour + time.Minute))
	for _, ip := range []string{"127.0.0.66", "127.0.0.67"} {
		a := e.clientFrom(ip)
		for range 5 {
			a.tryLogin("ann", "wrong guess")
		}
	}
	if st := withCookie("127.0.0.68", other).tryLogin("ann", "correct horse"); st != http.StatusTooManyRequests {
		t.Errorf("a cookie over a year old during an attack: %d, want 429", st)
	}
}
