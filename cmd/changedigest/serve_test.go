package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/testenv"
)

// mustDemo runs the service with its demo site, as `serve --demo` does,
// on a free port with a fast-changing site, and returns it with the demo
// feed URL.
func mustDemo(t *testing.T, options ...func(*Main)) (*Main, string) {
	t.Helper()
	m := NewMain()
	var out bytes.Buffer
	m.Stdout = &out
	m.Logger = slogDiscard()
	m.Config.data = t.TempDir()
	m.Config.Addr = "127.0.0.1:0"
	m.Config.Demo = true
	m.Config.DemoPeriod = 400 * time.Millisecond
	for _, o := range options {
		o(m)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	feed := regexp.MustCompile(`demo feed: (\S+)`).FindStringSubmatch(out.String())
	for _, want := range []string{"demo login: demo / demo-password", "changedigest is running at http://127.0.0.1:"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("start-up output lacks %q:\n%s", want, out.String())
		}
	}
	if feed == nil {
		t.Fatalf("no demo feed line:\n%s", out.String())
	}
	return m, feed[1]
}

// checkDemo checks the demo watches now, twice, a few site steps apart,
// so each has a first version and a changed one.
func checkDemo(t *testing.T, m *Main) {
	t.Helper()
	ctx := context.Background()
	u, err := m.Store.UserByName(ctx, demoUser)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		ws, err := m.Store.Watches(ctx, u.ID, "demo")
		if err != nil || len(ws) != 3 {
			t.Fatalf("demo watches: %d, %v", len(ws), err)
		}
		var ptrs []*changedigest.Watch
		for i := range ws {
			ptrs = append(ptrs, &ws[i])
		}
		sum, err := m.Scheduler.CheckNow(ctx, nil, ptrs...)
		if err != nil || sum.Failed > 0 {
			t.Fatalf("check: %+v, %v", sum, err)
		}
		time.Sleep(11 * m.Config.DemoPeriod) // past two club-page steps and a banner colour
	}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type atomFeed struct {
	Entries []struct {
		ID      string `xml:"id"`
		Title   string `xml:"title"`
		Content string `xml:"content"`
	} `xml:"entry"`
}

// TestServeDemoEndToEnd: the demo user's watches detect changes, which
// reach the Atom feed (profile matches marked apart), the digest and search.
func TestServeDemoEndToEnd(t *testing.T) {
	m, feedURL := mustDemo(t)
	checkDemo(t, m)
	base := m.Server.Render.Site()

	code, body := get(t, http.DefaultClient, feedURL)
	if code != 200 {
		t.Fatalf("feed: %d %s", code, body)
	}
	var f atomFeed
	if err := xml.Unmarshal([]byte(body), &f); err != nil {
		t.Fatalf("feed is not XML: %v", err)
	}
	if len(f.Entries) == 0 {
		t.Fatal("no entries in the demo feed")
	}
	profile := false
	for _, e := range f.Entries {
		if strings.Contains(e.Content, "<mark") && strings.Contains(e.Content, "matches your interest") {
			profile = true
		}
	}
	if !profile {
		t.Error("no feed entry marks a profile match")
	}
	if code, _ := get(t, http.DefaultClient, strings.Replace(feedURL, "/feeds/", "/feeds/x", 1)); code != 404 {
		t.Errorf("a wrong feed token gives %d, want 404", code)
	}

	// Log in as the demo user.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	_, page := get(t, c, base+"/login")
	tok := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page)
	if tok == nil {
		t.Fatal("no CSRF token on the login page")
	}
	resp, err := c.PostForm(base+"/login", url.Values{"csrf_token": {tok[1]}, "name": {demoUser}, "password": {demoPassword}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	code, body = get(t, c, base+"/")
	if code != 200 || !strings.Contains(body, "Riverside Daily") {
		t.Fatalf("dashboard: %d", code)
	}
	code, body = get(t, c, base+"/digest")
	if code != 200 || !strings.Contains(body, "matches your interest") {
		t.Errorf("digest: %d, profile match shown: %v", code, strings.Contains(body, "matches your interest"))
	}
	// The demo site is the only loopback address the demo may fetch.
	u, err := m.Store.UserByName(context.Background(), demoUser)
	if err != nil {
		t.Fatal(err)
	}
	// Paused: checked here, never by the scheduler first.
	w := &changedigest.Watch{UserID: u.ID, URL: "http://127.0.0.1:9/private", Paused: true}
	if err := m.clusterStore().CreateWatch(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	var rep error
	m.Scheduler.CheckNow(context.Background(), func(r crawl.Report) { rep = r.Err }, w)
	if rep == nil || !strings.Contains(rep.Error(), "non-public address") {
		t.Errorf("a watch on another loopback address: %v, want a refused non-public address", rep)
	}
	// Search for a word of a story that slid onto the news page.
	code, body = get(t, c, base+"/search?q=library")
	if code != 200 || !strings.Contains(body, "<mark>") {
		t.Errorf("search: %d, hit marked: %v", code, strings.Contains(body, "<mark>"))
	}
}

// TestServeFeedReaders reads the demo feed with real feed readers:
// feedparser (no bozo error, entries, ids stable across fetches, marks
// kept) and newsboat.
func TestServeFeedReaders(t *testing.T) {
	py := testenv.Python(t, "feedparser")
	m, feedURL := mustDemo(t)
	checkDemo(t, m)

	script := `
import feedparser, json, sys
d = feedparser.parse(sys.argv[1])
json.dump({"bozo": bool(d.bozo), "exc": str(d.get("bozo_exception", "")), "status": d.get("status", 0),
  "ids": [e.id for e in d.entries],
  "marked": sum(1 for e in d.entries if e.get("content") and "matches your interest" in e.content[0].value and "<strong" in e.content[0].value)}, sys.stdout)
`
	read := func() (r struct {
		Bozo   bool
		Exc    string
		Status int
		IDs    []string
		Marked int
	}) {
		out, err := exec.Command(py, "-c", script, feedURL).Output()
		if err != nil {
			t.Fatalf("feedparser: %v", err)
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("feedparser output %s: %v", out, err)
		}
		return r
	}
	first := read()
	if first.Bozo || first.Status != 200 || len(first.IDs) == 0 || first.Marked == 0 {
		t.Fatalf("feedparser: %+v", first)
	}
	second := read()
	if strings.Join(first.IDs, " ") != strings.Join(second.IDs, " ") {
		t.Errorf("entry ids changed between fetches:\n%v\n%v", first.IDs, second.IDs)
	}

	nb := testenv.Tool(t, "newsboat")
	dir := t.TempDir()
	urls, conf, cache := filepath.Join(dir, "urls"), filepath.Join(dir, "config"), filepath.Join(dir, "cache.db")
	os.WriteFile(urls, []byte(feedURL+"\n"), 0o600)
	os.WriteFile(conf, nil, 0o600)
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, nb, append([]string{"-u", urls, "-C", conf, "-c", cache}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("newsboat %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("-x", "reload")
	out := run("-x", "print-unread")
	if !regexp.MustCompile(`[1-9]\d* unread articles?`).MatchString(out) {
		t.Errorf("newsboat print-unread: %q", out)
	}
}

// TestServeBrowserWatch: serve checks a browser watch with its own pool
// (the demo site on loopback is allowed for the browser as for the
// fetcher), and Close stops Chromium.
func TestServeBrowserWatch(t *testing.T) {
	testenv.Tool(t, "chromium")
	var pid int
	t.Cleanup(func() { // runs after the service closed
		if pid == 0 {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err != nil {
				return
			}
			if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); strings.Contains(string(b), ") Z ") {
				return // exited, not yet reaped
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("Chromium (pid %d) still runs after Close", pid)
	})
	m, _ := mustDemo(t)
	ctx := context.Background()
	u, err := m.Store.UserByName(ctx, demoUser)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Store.Watches(ctx, u.ID, "demo")
	if err != nil || len(ws) == 0 {
		t.Fatalf("demo watches: %v, %v", ws, err)
	}
	// Paused: checked here, never by the scheduler first.
	w := &changedigest.Watch{UserID: u.ID, URL: ws[0].URL + "#rendered", Render: changedigest.RenderBrowser, Paused: true}
	if err := m.clusterStore().CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	sum, err := m.Scheduler.CheckNow(ctx, func(r crawl.Report) {
		if r.Err != nil {
			t.Errorf("check of %s: %v", r.Watch.URL, r.Err)
		}
	}, w)
	if err != nil || sum.FirstVersion != 1 {
		t.Fatalf("check: %+v, %v", sum, err)
	}
	if pid = m.Browser.Stats().PID; pid == 0 {
		t.Error("no Chromium process after a browser check")
	}
}

func TestTrustedProxyFlag(t *testing.T) {
	var l prefixList
	for _, v := range []string{"10.0.0.0/8, 192.0.2.1", "2001:db8::/32", "::1"} {
		if err := l.Set(v); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
	}
	if got, want := l.String(), "10.0.0.0/8,192.0.2.1/32,2001:db8::/32,::1/128"; got != want {
		t.Errorf("prefixes %s, want %s", got, want)
	}
	if err := l.Set("proxy.example"); err == nil {
		t.Error("a host name was taken")
	}
}

// TestServeMetrics scrapes /metrics on its own listener after the demo's
// checks and a feed read: checks by result, their durations, feed
// requests by format and status, the queue depth and the store's size,
// in the Prometheus text format.
func TestServeMetrics(t *testing.T) {
	m, feedURL := mustDemo(t, func(m *Main) { m.Config.MetricsAddr = "127.0.0.1:0" })
	checkDemo(t, m)
	if code, _ := get(t, http.DefaultClient, feedURL); code != 200 {
		t.Fatalf("feed: %d", code)
	}
	if m.MetricsURL == "" {
		t.Fatal("no metrics address")
	}
	code, body := get(t, http.DefaultClient, m.MetricsURL)
	if code != 200 {
		t.Fatalf("metrics: %d %s", code, body)
	}
	value := func(series string) float64 {
		t.Helper()
		for _, line := range strings.Split(body, "\n") {
			if rest, ok := strings.CutPrefix(line, series+" "); ok {
				v, err := strconv.ParseFloat(rest, 64)
				if err != nil {
					t.Fatalf("%s: %q is not a number", series, rest)
				}
				return v
			}
		}
		t.Errorf("no series %s in:\n%s", series, body)
		return 0
	}
	if v := value(`changedigest_checks_total{result="first_version"}`); v < 3 {
		t.Errorf("first versions: %v, want the 3 demo watches", v)
	}
	checks := value(`changedigest_check_duration_seconds_count`)
	if n := value(`changedigest_check_duration_seconds_bucket{le="+Inf"}`); checks < 6 || n != checks {
		t.Errorf("check durations: count %v, +Inf bucket %v, want the 6 checks made or more", checks, n)
	}
	if v := value(`changedigest_feed_requests_total{format="atom",status="200"}`); v < 1 {
		t.Errorf("feed requests: %v", v)
	}
	if v := value(`changedigest_store_bytes`); v < 1<<10 {
		t.Errorf("store bytes: %v", v)
	}
	value(`changedigest_check_queue_depth`)
	for _, want := range []string{"# TYPE changedigest_checks_total counter", "# TYPE changedigest_check_duration_seconds histogram", "# TYPE changedigest_store_bytes gauge"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Not on the web server.
	if code, _ := get(t, http.DefaultClient, m.Server.Render.Site()+"/metrics"); code != 404 {
		t.Errorf("/metrics on the web server: %d, want 404", code)
	}
}
