package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// TestWatchCommands drives the command line as a user would: add a watch,
// check it twice while the page changes, read its history, a version and
// its changes, search, and remove it.
func TestWatchCommands(t *testing.T) {
	var mu sync.Mutex
	page := `<html><head><title>Town news</title></head><body><main>
<article><h2>Library</h2><p>The library opens until nine on weekdays from next month.</p></article>
<article><h2>Market</h2><p>The farmers market moves into the old tram depot for winter.</p></article>
</main></body></html>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	defer srv.Close()
	data := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	out := run(0, "watch", "add", srv.URL+"/news", "--category", "news", "--tag", "town")
	if !strings.Contains(out, "watch 1: "+srv.URL+"/news") || !strings.Contains(out, "created the local user") {
		t.Errorf("watch add: %s", out)
	}
	run(2, "watch", "add", "ftp://example.org/", "--category", "news")
	run(2, "watch", "add", srv.URL+"/other", "--zone", "div[")
	run(1, "watch", "add", srv.URL+"/news") // already watched

	// Loopback is private: refused unless allowed.
	out = run(1, "check", "--all")
	if !strings.Contains(out, "refused non-public address") {
		t.Errorf("check of a loopback page without --allow-private: %s", out)
	}
	if out = run(0, "check", "1", "--allow-private"); !strings.Contains(out, "first version") {
		t.Errorf("first check: %s", out)
	}
	mu.Lock()
	page = strings.Replace(page, "until nine", "until ten", 1)
	mu.Unlock()
	if out = run(0, "check", "--all", "--allow-private"); !strings.Contains(out, "1 changed") {
		t.Errorf("second check: %s", out)
	}
	out = run(0, "watch", "list")
	for _, want := range []string{srv.URL + "/news", "page", "town"} {
		if !strings.Contains(out, want) {
			t.Errorf("watch list lacks %q:\n%s", want, out)
		}
	}
	if code, js, errs := runCmd(t, "watch", "list", "--json", "--data", data); code != 0 || !strings.Contains(js, `"url": "`+srv.URL+`/news"`) || !strings.HasPrefix(js, "[") {
		t.Errorf("watch list --json: exit %d\n%s%s", code, js, errs)
	}
	if code, _, errs := runCmd(t, "history", "999", "--data", data); code == 0 || !strings.Contains(errs, "watch 999 not found") || strings.Contains(errs, "pet:") {
		t.Errorf("history of a watch that is not there: exit %d, %q (want the message without package names)", code, errs)
	}
	for _, group := range []string{"watch", "user", "channel", "cluster"} {
		if code, help, errs := runCmd(t, group, "-h"); code != 0 || !strings.Contains(help, "usage: changedigest "+group+" SUB-COMMAND") {
			t.Errorf("%s -h: exit %d\n%s%s", group, code, help, errs)
		}
	}
	if out = run(0, "history", srv.URL+"/news"); !strings.Contains(out, "\n2 ") || !strings.Contains(out, "content") {
		t.Errorf("history:\n%s", out)
	}
	if out = run(0, "show", "1", "--changes"); !strings.Contains(out, "content update") || !strings.Contains(out, "ten") {
		t.Errorf("show --changes:\n%s", out)
	}
	if out = run(0, "show", "1", "--seq", "1"); !strings.Contains(out, "until nine") {
		t.Errorf("show --seq 1:\n%s", out)
	}
	if out = run(0, "show", "1", "--raw"); !strings.Contains(out, "until ten") || !strings.HasPrefix(out, "<html>") {
		t.Errorf("show --raw:\n%s", out)
	}
	run(1, "show", "1", "--at", "2001-01-01") // nothing that old
	run(2, "show", "1", "--at", "yesterday")
	if out = run(0, "search", "tram", "depot"); !strings.Contains(out, "2 hits") || !strings.Contains(out, "*depot*") || !strings.Contains(out, "still there") {
		t.Errorf("search:\n%s", out)
	}
	run(2, "search", "library", "--type", "colour")
	if out = run(0, "watch", "rm", "1"); !strings.Contains(out, "removed watch 1") {
		t.Errorf("watch rm: %s", out)
	}
	run(1, "history", "1")
}

func TestUserCommands(t *testing.T) {
	data := t.TempDir()
	code, out, errs := runCmdIn(t, "a good password\n", "user", "add", "ann", "--admin", "--data", data)
	if code != 0 || !strings.Contains(out, "created user ann") {
		t.Fatalf("user add: %d %s%s", code, out, errs)
	}
	if code, _, errs = runCmdIn(t, "short\n", "user", "add", "bob", "--data", data); code != 2 || !strings.Contains(errs, "at least 8") {
		t.Errorf("short password: %d %s", code, errs)
	}
	if code, _, errs = runCmdIn(t, "another password\n", "user", "add", "ann", "--data", data); code != 1 || !strings.Contains(errs, "taken") {
		t.Errorf("duplicate user: %d %s", code, errs)
	}
	if code, _, errs = runCmdIn(t, "", "user", "add", "bob", "--data", data); code != 2 || !strings.Contains(errs, "no password") {
		t.Errorf("no password: %d %s", code, errs)
	}
	if code, out, errs = runCmdIn(t, "a new password\n", "user", "passwd", "ann", "--data", data); code != 0 || !strings.Contains(out, "password of ann changed") {
		t.Errorf("passwd: %d %s%s", code, out, errs)
	}
	if code, out, _ = runCmd(t, "user", "list", "--data", data); code != 0 || !strings.Contains(out, "ann") || !strings.Contains(out, "true") {
		t.Errorf("user list: %d %s", code, out)
	}
}

// TestWatchFilter sets a watch's filters from the command line: the flags
// given change, the others stay, and bad values are refused with the
// watch left as it was.
func TestWatchFilter(t *testing.T) {
	data := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	run(0, "watch", "add", "https://news.example.org/", "--ignore", `/\d+ comments/`, "--types", "content,structural")
	out := run(0, "watch", "filter", "1", "--trigger", "sold out", "--min-significance", "0.1")
	want := `watch 1: types content,structural; ignore "/\\d+ comments/"; trigger "sold out"; min significance 0.1; noise left out`
	if !strings.Contains(out, want) {
		t.Errorf("watch filter: %s\nwant %s", out, want)
	}
	for _, bad := range [][]string{
		{"--ignore", "/a(/"}, {"--min-significance", "3"}, {"--types", "visual"}, {"--min-significance", "lots"},
	} {
		out = run(2, append([]string{"watch", "filter", "1"}, bad...)...)
		if !strings.Contains(out, strings.TrimPrefix(bad[0], "--")) && !strings.Contains(out, "regular expression") &&
			!strings.Contains(out, "significance") && !strings.Contains(out, "change type") {
			t.Errorf("%v: %s", bad, out)
		}
	}
	out = run(0, "watch", "filter", "https://news.example.org/", "--show-noise", "--types", "")
	if !strings.Contains(out, `watch 1: ignore "/\\d+ comments/"; trigger "sold out"; min significance 0.1; noise shown`) {
		t.Errorf("after bad values and a last change: %s", out)
	}
}

// TestWatchAddBrowser: watch add --browser makes a watch rendered in
// Chromium; check reports a missing Chromium on the watch, and with
// Chromium stores the text the page's script wrote.
func TestWatchAddBrowser(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<html><body><main id="m"></main><script>
document.getElementById("m").innerHTML = "<h1>Opening hours</h1><p class=hours>The pool opens at seven, the sauna at nine.</p>";
</script></body></html>`))
	}))
	defer srv.Close()
	data := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	run(2, "watch", "add", srv.URL+"/", "--wait-for", ".hours")
	run(2, "watch", "add", srv.URL+"/", "--browser", "--wait-for", "p[[")
	run(0, "watch", "add", srv.URL+"/", "--browser", "--wait-for", ".hours")
	out := run(1, "check", "--all", "--allow-private", "--chromium", "/nonexistent/chromium")
	if !strings.Contains(out, "chromium not found") || !strings.Contains(out, "/nonexistent/chromium") {
		t.Errorf("check without Chromium: %s", out)
	}
	exe := testenv.Tool(t, "chromium")
	if out = run(0, "check", "--all", "--allow-private", "--chromium", exe); !strings.Contains(out, "first version") {
		t.Fatalf("check with Chromium: %s", out)
	}
	if out = run(0, "show", "1"); !strings.Contains(out, "The pool opens at seven, the sauna at nine.") {
		t.Errorf("the stored version lacks the text the script wrote: %s", out)
	}
	if out = run(0, "watch", "list"); !strings.Contains(out, "page (browser)") {
		t.Errorf("watch list does not say the watch is rendered: %s", out)
	}
}

// cookieWall is a page whose articles show only once its cookie banner is
// accepted, and whose third article loads only with "Load more".
const cookieWall = `<!DOCTYPE html><html><head><title>Notices</title></head><body>
<div id="wall"><p>We use cookies.</p><button id="accept">Accept</button></div>
<main id="news" hidden><article class="item-1">Bridge closed on Sunday for repairs.</article>
<article class="item-2">Market moves to the harbour in May.</article>
<button id="more">Load more</button></main>
<script>
document.getElementById("accept").onclick = () => {
  document.getElementById("wall").remove();
  document.getElementById("news").hidden = false;
};
document.getElementById("more").onclick = () => setTimeout(() => {
  const a = document.createElement("article");
  a.className = "item-3";
  a.textContent = "Library opens late on Thursdays.";
  document.getElementById("news").append(a);
}, 200);
</script></body></html>`

// TestWatchAddSteps: watch add --step runs steps before the page is read:
// the cookie wall is accepted and "Load more" clicked, so the stored
// version has the third article.
func TestWatchAddSteps(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(cookieWall))
	}))
	defer srv.Close()
	data := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	for _, bad := range []struct{ args []string }{
		{[]string{"--step", "click #accept"}},
		{[]string{"--browser", "--step", "press #accept"}},
		{[]string{"--browser", "--step", "click #accept", "--step", "click p[["}},
		{[]string{"--browser", "--step", "type #q"}},
	} {
		out := run(2, append([]string{"watch", "add", srv.URL + "/"}, bad.args...)...)
		if !strings.Contains(out, "step") {
			t.Errorf("%v: %s", bad.args, out)
		}
	}
	if out := run(0, "watch", "list"); strings.Contains(out, srv.URL) {
		t.Fatalf("a refused watch was stored: %s", out)
	}
	run(0, "watch", "add", srv.URL+"/", "--browser", "--step", "click #accept", "--step", "click #more", "--step", "wait .item-3")
	exe := testenv.Tool(t, "chromium")
	if out := run(0, "check", "--all", "--allow-private", "--chromium", exe); !strings.Contains(out, "first version") {
		t.Fatalf("check: %s", out)
	}
	out := run(0, "show", "1", "--raw")
	for _, want := range []string{"Library opens late on Thursdays.", `<main id="news">`} {
		if !strings.Contains(out, want) {
			t.Errorf("the stored version lacks %q: %s", want, out)
		}
	}
	if strings.Contains(out, "We use cookies") {
		t.Errorf("the cookie wall is still in the stored version")
	}
}

// TestLikelyNewVersions counts the watches never checked and those whose
// last check found a change, not those that have been quiet since.
func TestLikelyNewVersions(t *testing.T) {
	changed := changedigest.CheckSample{Interval: time.Hour, Changed: true}
	quiet := changedigest.CheckSample{Interval: time.Hour}
	ws := []*changedigest.Watch{
		{}, // never checked
		{Samples: []changedigest.CheckSample{quiet, changed}}, // changed last time
		{Samples: []changedigest.CheckSample{changed, quiet}}, // quiet since
		{Samples: []changedigest.CheckSample{quiet}},
	}
	if n := likelyNewVersions(ws); n != 2 {
		t.Errorf("likelyNewVersions = %d, want 2", n)
	}
}

func TestCheckProcs(t *testing.T) {
	watches := func(urls ...string) []*changedigest.Watch {
		var ws []*changedigest.Watch
		for _, u := range urls {
			ws = append(ws, &changedigest.Watch{URL: u})
		}
		return ws
	}
	for _, tc := range []struct {
		name    string
		ws      []*changedigest.Watch
		workers int
		want    int
	}{
		{"one host, many pages", watches("http://a.example/1", "http://a.example/2", "https://A.example/3", "http://a.example:80/4"), 8, 1},
		{"one host and port", watches("http://127.0.0.1:8080/1", "http://127.0.0.1:8080/2"), 8, 1},
		{"ports are hosts", watches("http://127.0.0.1:8080/1", "http://127.0.0.1:8081/2", "http://127.0.0.2:8080/3"), 8, 3},
		{"fewer workers", watches("http://a.example/", "http://b.example/", "http://c.example/"), 2, 2},
		{"no watches", nil, 8, 1},
		{"no workers", watches("http://a.example/", "http://b.example/"), 0, 1},
	} {
		if got := checkProcs(tc.ws, tc.workers); got != tc.want {
			t.Errorf("%s: checkProcs = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestWatchJQZone: watch add and watch filter take a jq program as zone
// and refuse an invalid one, saying why.
func TestWatchJQZone(t *testing.T) {
	data := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	if out := run(2, "watch", "add", "https://api.example.org/prices", "--zone", "jq:.items[] | {name, price"); !strings.Contains(out, `invalid jq zone "jq:.items[] | {name, price"`) {
		t.Errorf("watch add, bad program: %s", out)
	}
	run(0, "watch", "add", "https://api.example.org/prices", "--zone", "jq:.items[] | {name, price}")
	if out := run(2, "watch", "filter", "1", "--zone", "jq:.items | nosuch"); !strings.Contains(out, "invalid jq zone") || !strings.Contains(out, "nosuch") {
		t.Errorf("watch filter, bad program: %s", out)
	}
	if out := run(0, "watch", "filter", "1", "--zone", "jq:[.items[].price]"); !strings.Contains(out, `zone "jq:[.items[].price]"`) {
		t.Errorf("watch filter: %s", out)
	}
}
