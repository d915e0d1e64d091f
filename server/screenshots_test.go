package server

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

var screenshots = flag.String("screenshots", "", "take headless Chromium screenshots of the pages at desktop and phone widths into this directory")

// gazette returns version i of a local news page whose headlines slide
// by one story a version and whose weather box changes.
func gazette(i int) string {
	stories := []string{
		"Bridge repairs finish a week early", "New library opens in the old post office", "Farmers market moves to Saturdays",
		"Rugby club celebrates its hundredth season", "School choir wins the regional prize", "Council approves the harbour plan",
		"Bus timetable changes from Monday", "Football ground gets new floodlights", "Volunteers plant five hundred trees",
		"Museum shows the town's oldest map", "Cycle path along the canal reopens", "Theatre announces its winter season",
		"Record turnout at the local election", "Hospital car park to double in size", "Swimming pool closes for repairs",
	}
	weather := []string{"Sunny, 21 °C", "Cloudy, 17 °C", "Showers, 14 °C", "Windy, 16 °C", "Fog in the morning, 12 °C"}
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>Riverside Gazette</title></head><body><header><h1>Riverside Gazette</h1></header><main><section id="news"><h2>Latest news</h2><ul>`)
	for k := 0; k < 5; k++ {
		s := stories[(i+k)%len(stories)]
		fmt.Fprintf(&b, `<li><a href="/story/%d">%s</a><p>%s: the full story, with comments from people who live here and what happens next.</p></li>`, (i+k)%len(stories), s, s)
	}
	fmt.Fprintf(&b, `</ul></section><aside id="weather"><h2>Weather</h2><p>%s</p></aside></main><footer><p>Riverside Gazette, Quay Street.</p></footer></body></html>`, weather[i%len(weather)])
	return b.String()
}

// mustRichScene is the scene of TestPages with a longer history, a FOAF
// profile, settings and a token, for pictures that look like real use.
func mustRichScene(t *testing.T) *scene {
	sc := mustScene(t)
	e := sc.e
	t0 := e.clock()
	g := e.mustWatch(sc.u, "https://riverside-gazette.example.com/", "local news")
	for i := 0; i < 24; i++ {
		e.setNow(t0.Add(-time.Duration(24-i) * 14 * time.Hour))
		e.addVersion(g, gazette(i/2+i%2*(i/3)))
	}
	e.setNow(t0)
	sc.setState(g.ID, func(w *changedigest.Watch) {
		w.Title, w.Kind, w.Category = "Riverside Gazette", changedigest.KindPage, changedigest.CategoryNews
		w.LastCheck, w.LastChange, w.NextCheck, w.Checks = t0.Add(-14*time.Hour), t0.Add(-14*time.Hour), t0.Add(time.Hour), 31
	})
	paused := e.mustWatch(sc.u, "https://university.example.edu/department/research/publications?year=2026&sort=date", "work")
	sc.setState(paused.ID, func(w *changedigest.Watch) {
		w.Paused, w.Category, w.Kind = true, changedigest.CategoryAcademic, changedigest.KindPage
		w.LastCheck = t0.Add(-72 * time.Hour)
	})
	doc, err := os.ReadFile(filepath.Join("..", "demo", "profile.ttl"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := sc.c.postFile("/profile/foaf", nil, "foaf", "profile.ttl", doc); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("FOAF upload: %d\n%s", resp.StatusCode, excerpt(body))
	}
	sc.c.post("/profile/terms/remove", url.Values{"term": {"semantic web"}})
	sc.c.post("/settings", url.Values{"email": {"ann@example.org"}, "digest_hour": {"7"}})
	if _, _, err := e.store.CreateToken(context.Background(), sc.u.ID, "backup script"); err != nil {
		t.Fatal(err)
	}
	sc.channels(t, e, paused.ID)
	return sc
}

// sessionOf is the session cookie of a logged-in client.
func sessionOf(t *testing.T, c *client) string {
	t.Helper()
	base, _ := url.Parse(c.base)
	for _, ck := range c.http.Jar.Cookies(base) {
		if ck.Name == sessionCookie {
			return ck.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// TestScreenshots serves the pages of a logged-in user to headless
// Chromium and takes screenshots at 1200 and 400 px wide. Chromium cannot
// log in, so a front server adds the session cookie to every request.
// Run with -screenshots DIR; the HTML of each page is saved next to its
// pictures.
func TestScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("run with -screenshots DIR to take screenshots")
	}
	chromium := testenv.Tool(t, "chromium")
	sc := mustRichScene(t)
	session := sessionOf(t, sc.c)
	// A new user with nothing yet, for the empty dashboard (?as=new).
	sc.e.mustUser("newcomer", scenePassword)
	newcomer := sessionOf(t, sc.e.login("newcomer", scenePassword))
	// Answers to form posts, served from /shot/NAME.
	posted := map[string]string{}
	_, posted["watch-form-error"] = sc.c.post("/watches", url.Values{"url": {"https://example.org/"}, "title": {"Example"}, "zone": {"div["}})
	_, posted["profile-error"] = sc.c.postFile("/profile/foaf", nil, "foaf", "broken.ttl", []byte("@prefix foaf: <http://xmlns.com/foaf/0.1/ ."))
	_, posted["settings-token"] = sc.c.post("/settings/tokens", url.Values{"name": {"laptop"}})
	handler := sc.e.http.Config.Handler
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/shot/"); ok {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(posted[name]))
			return
		}
		if r.URL.Query().Get("as") == "new" {
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: newcomer})
		} else {
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
		}
		handler.ServeHTTP(w, r)
	}))
	defer front.Close()

	ws, err := sc.e.store.Watches(context.Background(), sc.u.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	var gazetteID int64
	for _, w := range ws {
		if w.Title == "Riverside Gazette" {
			gazetteID = w.ID
		}
	}
	pages := []struct{ name, path string }{
		{"dashboard", "/"},
		{"dashboard-empty", "/?as=new"},
		{"watch", fmt.Sprintf("/watches/%d", gazetteID)},
		{"watch-sports", sc.wpath("")},
		{"version", sc.wpath("/versions/2")},
		{"content", sc.wpath("/versions/2/content")},
		{"compare", fmt.Sprintf("/watches/%d/compare?from=1&to=24", gazetteID)},
		{"watch-form", sc.wpath("/edit")},
		{"tag", "/tags/local%20news"},
		{"profile", "/profile"},
		{"search", "/search?q=club"},
		{"settings", "/settings"},
		{"digest", "/digest"},
		{"watch-form-error", "/shot/watch-form-error"},
		{"profile-error", "/shot/profile-error"},
		{"settings-token", "/shot/settings-token"},
		{"channels", "/settings/channels"},
	}
	if err := os.MkdirAll(*screenshots, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		resp, err := front.Client().Get(front.URL + p.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		mustStatus(t, p.path, resp, body, http.StatusOK)
		if err := os.WriteFile(filepath.Join(*screenshots, p.name+".html"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, size := range []struct{ label, window string }{{"desktop", "1200,4200"}, {"phone", "400,7000"}} {
			out := filepath.Join(*screenshots, fmt.Sprintf("%s-%s.png", p.name, size.label))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
				"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
				"--hide-scrollbars", "--user-data-dir="+t.TempDir(), "--screenshot="+out, "--window-size="+size.window,
				front.URL+p.path)
			b, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("chromium %s: %v\n%s", p.name, err, b)
			}
			t.Logf("wrote %s", out)
		}
	}
}

// channels gives the user notification channels, one of them with a
// delivery that failed for good.
func (sc *scene) channels(t *testing.T, e *testEnv, watchID int64) {
	ctx := context.Background()
	for _, c := range []changedigest.Channel{
		{Name: "Phone", Kind: changedigest.ChannelNtfy, URL: "https://ntfy.sh/ann-changes-3f9a", Priority: 4, NtfyTags: []string{"bell"}, Select: changedigest.SelectInterests},
		{Name: "Team room", Kind: changedigest.ChannelMatrix, URL: "https://matrix.example.org", Room: "!news:example.org", Secret: "syt_YW5uLXRva2VuLTEyMzQ1Njc4OQ", Tags: []string{"work"}},
		{Name: "Archive", Kind: changedigest.ChannelWebhook, URL: "https://archive.example.net/hooks/changedigest", Secret: "whsec-0123456789abcdef-7788"},
	} {
		c.UserID = sc.u.ID
		if err := e.store.CreateChannel(ctx, &c); err != nil {
			t.Fatal(err)
		}
		if c.Kind != changedigest.ChannelWebhook {
			continue
		}
		d := &changedigest.Delivery{ID: "shot-1", UserID: sc.u.ID, ChannelID: c.ID, WatchID: watchID, Seq: 1}
		if err := e.store.AddDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.UpdateDelivery(ctx, sc.u.ID, d.ID, func(x *changedigest.Delivery) error {
			x.State, x.Attempts, x.LastStatus = changedigest.DeliveryDead, 8, 503
			x.LastError = "the receiver answered 503 Service Unavailable"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
