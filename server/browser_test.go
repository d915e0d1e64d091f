package server

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/browser"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/testenv"
)

func TestAPIWatchRender(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)

	var w apiWatch
	c.call("POST", "/watches", map[string]any{"url": "https://app.example.org/", "render": "browser", "wait_for": " #prices tr "}, http.StatusCreated, &w)
	if w.Render != "browser" || w.WaitFor != "#prices tr" {
		t.Errorf("created %+v", w)
	}
	stored, err := e.store.Watch(t.Context(), ann.ID, w.ID)
	if err != nil || stored.Render != changedigest.RenderBrowser || stored.WaitFor != "#prices tr" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	var p, back apiWatch
	c.call("PATCH", fmt.Sprintf("/watches/%d", w.ID), map[string]any{"title": "App"}, http.StatusOK, &p)
	if p.Render != "browser" || p.WaitFor != "#prices tr" {
		t.Errorf("a PATCH of the title changed the rendering: %+v", p)
	}
	c.call("PATCH", fmt.Sprintf("/watches/%d", w.ID), map[string]any{"render": "fetch", "wait_for": ""}, http.StatusOK, &back)
	if back.Render != "fetch" || back.WaitFor != "" {
		t.Errorf("back to fetch: %+v", back)
	}
	c.callErr("POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","render":"firefox"}`), 400, "invalid", "render mode", "firefox")
	c.callErr("POST", "/watches", "application/json", []byte(`{"url":"https://a.example/","render":"browser","wait_for":"div[["}`), 400, "invalid", "wait-for selector", "div[[")
	c.callErr("PATCH", fmt.Sprintf("/watches/%d", w.ID), "application/json", []byte(`{"render":7}`), 400, "invalid", "render")
	after, err := e.store.Watch(t.Context(), ann.ID, w.ID)
	if err != nil || after.Render != changedigest.RenderFetch || after.Title != "App" {
		t.Errorf("a bad PATCH changed the watch: %+v, %v", after, err)
	}
}

// appPage is a page whose text exists only once its script, appJS, has run.
const appPage = `<!DOCTYPE html><html><head><title>Timetable</title><script src="/app.js" defer></script></head><body><div id="app"></div></body></html>`

const appJS = `
fetch("/departures.json").then(r => r.json()).then(d => {
  const ul = document.createElement("ul");
  ul.id = "departures";
  for (const x of d) { const li = document.createElement("li"); li.textContent = x; ul.appendChild(li); }
  const h = document.createElement("h1"); h.textContent = "Departures from the harbour";
  document.getElementById("app").append(h, ul);
});
`

// TestBrowserWatchThroughTheWeb adds a browser watch with the web form,
// checks it with the real scheduler, pipeline and Chromium, and sees the
// rendered text and then its change on the watch's pages.
func TestBrowserWatchThroughTheWeb(t *testing.T) {
	exe := testenv.Tool(t, "chromium")
	var mu sync.Mutex
	departures := `["08:15 ferry to the island, quay 2", "09:40 ferry to the mainland, quay 1"]`
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d := departures
		mu.Unlock()
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, appPage)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, appJS)
		case "/departures.json":
			fmt.Fprint(w, d)
		default:
			http.NotFound(w, r)
		}
	}))
	defer origin.Close()

	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	fetcher := crawl.NewFetcher()
	fetcher.Allow = []netip.AddrPort{netip.MustParseAddrPort(origin.Listener.Addr().String())}
	pool := browser.NewPool(fetcher.DialContext)
	pool.Exec = exe
	defer pool.Close()
	pipe := crawl.NewPipeline(fetcher, e.seg, e.store)
	pipe.Renderer = pool
	sched := crawl.NewScheduler(e.store, pipe)
	sched.Logger = discardLogger()
	e.srv.Checker = sched

	c := e.login("ann", "correct horse")
	// Added as a plain page, it is an empty shell, and the watch page says so.
	resp, _ := c.post("/watches", url.Values{"url": {origin.URL + "/"}, "category": {"news"}})
	path := resp.Header.Get("Location")
	if !strings.HasPrefix(path, "/watches/") {
		t.Fatalf("created watch at %q", path)
	}
	c.follow(resp)
	resp, _ = c.post(path+"/check", nil)
	body := c.follow(resp)
	mustContain(t, body, "This page looks empty without its scripts", "Render with a browser")
	if strings.Contains(body, "08:15 ferry") {
		t.Fatalf("the fetched shell already has the departures")
	}

	// Switched to a browser, it is read as a visitor sees it.
	resp, _ = c.post(path, url.Values{"url": {origin.URL + "/"}, "category": {"news"},
		"render": {"browser"}, "wait_for": {"#departures li"}})
	body = c.follow(resp)
	mustContain(t, body, "rendered in a browser", "<code>#departures li</code>")
	if strings.Contains(body, "looks empty without its scripts") {
		t.Errorf("the suggestion is still shown for a browser watch")
	}
	_, edit := c.get(path + "/edit")
	mustContain(t, edit, `name="render" value="browser" checked`, `value="#departures li"`)

	resp, _ = c.post(path+"/check", nil)
	body = c.follow(resp)
	if strings.Contains(body, "The check failed") {
		t.Fatalf("the check failed:\n%s", body)
	}
	_, text := c.get(path + "/versions/2/content")
	mustContain(t, text, "Departures from the harbour", "08:15 ferry to the island, quay 2")

	mu.Lock()
	departures = `["08:15 ferry to the island, quay 2", "09:55 ferry to the mainland, quay 3"]`
	mu.Unlock()
	resp, _ = c.post(path+"/check", nil)
	body = c.follow(resp)
	mustContain(t, body, "Checked: changes found.", `09:<del class="cd-del"><span class="cd-mk">[-</span>40<span class="cd-mk">-]</span></del><ins class="cd-ins"><span class="cd-mk">{+</span>55<span class="cd-mk">+}</span></ins> ferry to`)

	// The version page shows both screenshots, the changed departure
	// outlined on each, and the overlay of the pixels that differ.
	_, page := c.get(path + "/versions/3")
	mustContain(t, page, "Screenshots", `src="`+path+`/versions/2/screenshot.png"`, `src="`+path+`/versions/3/screenshot.png"`,
		`src="`+path+`/versions/3/overlay.png"`, `<rect class="shot-box shot-content"`, "1 changed element outlined")
	shot := func(c *client, p string) (int, image.Config) {
		t.Helper()
		resp, b := c.get(p)
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, image.Config{}
		}
		if ct := resp.Header.Get("Content-Type"); ct != "image/png" {
			t.Errorf("%s: Content-Type %q", p, ct)
		}
		cfg, err := png.DecodeConfig(strings.NewReader(b))
		if err != nil {
			t.Fatalf("%s is not a PNG: %v", p, err)
		}
		return resp.StatusCode, cfg
	}
	_, s2 := shot(c, path+"/versions/2/screenshot.png")
	_, s3 := shot(c, path+"/versions/3/screenshot.png")
	_, ov := shot(c, path+"/versions/3/overlay.png")
	if s2.Width != browser.DefaultWidth || s3.Width != browser.DefaultWidth || s2.Height < browser.DefaultHeight {
		t.Errorf("screenshots are %dx%d and %dx%d, want %d wide", s2.Width, s2.Height, s3.Width, s3.Height, browser.DefaultWidth)
	}
	if ov.Width != max(s2.Width, s3.Width) || ov.Height != max(s2.Height, s3.Height) {
		t.Errorf("overlay is %dx%d for screenshots %dx%d and %dx%d", ov.Width, ov.Height, s2.Width, s2.Height, s3.Width, s3.Height)
	}
	// The overlay shows differing pixels inside the box of the changed
	// departure, and none far from it.
	v3, err := e.store.Version(t.Context(), 1, 3)
	if err != nil || v3.Screenshot == nil || len(v3.Changes) == 0 {
		t.Fatalf("version 3: %+v, %v", v3, err)
	}
	var box changedigest.Box
	for _, b := range v3.Screenshot.Boxes {
		if b.Path == v3.Changes[0].Path {
			box = b
		}
	}
	if box.W == 0 {
		t.Fatalf("no box for the changed element %s in %+v", v3.Changes[0].Path, v3.Screenshot.Boxes)
	}
	_, ovBody := c.get(path + "/versions/3/overlay.png")
	ovImg, err := png.Decode(strings.NewReader(ovBody))
	if err != nil {
		t.Fatal(err)
	}
	inside, outside := 0, 0
	for y := range ovImg.Bounds().Dy() {
		for x := range ovImg.Bounds().Dx() {
			if r, g, _, _ := ovImg.At(x, y).RGBA(); r > 0xc000 && g < 0x1000 {
				if image.Pt(x, y).In(image.Rect(box.X, box.Y, box.X+box.W, box.Y+box.H)) {
					inside++
				} else {
					outside++
				}
			}
		}
	}
	t.Logf("changed element %s at %+v: %d differing pixels inside, %d outside", v3.Changes[0].Path, box, inside, outside)
	if inside == 0 || outside > inside {
		t.Errorf("the overlay has %d differing pixels inside the changed element's box and %d outside", inside, outside)
	}
	if dir := os.Getenv("SHOTS_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "version.html"), []byte(page), 0o644)
		os.WriteFile(filepath.Join(dir, "overlay.png"), []byte(ovBody), 0o644)
		for _, n := range []string{"2", "3"} {
			_, b := c.get(path + "/versions/" + n + "/screenshot.png")
			os.WriteFile(filepath.Join(dir, "v"+n+".png"), []byte(b), 0o644)
		}
		// The version page as a browser shows it, logged in by a front server.
		session := sessionOf(t, c)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
			e.http.Config.Handler.ServeHTTP(w, r)
		}))
		defer front.Close()
		out, err := exec.Command(exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--user-data-dir="+t.TempDir(), "--screenshot="+filepath.Join(dir, "version-page.png"),
			"--window-size=1200,1400", front.URL+path+"/versions/3").CombinedOutput()
		if err != nil {
			t.Errorf("chromium: %v\n%s", err, out)
		}
	}
	// The feed entry of the change links to the version page and says it
	// has screenshots.
	u, err := e.store.User(t.Context(), ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, feed := e.client().get("/feeds/" + u.FeedToken + "/atom.xml")
	mustContain(t, feed, `href="`+e.http.URL+path+`/versions/3"`, "Screenshots before and after&lt;/a&gt;")
	// A fetched version has none; another user and a visitor see nothing.
	if st, _ := shot(c, path+"/versions/1/screenshot.png"); st != http.StatusNotFound {
		t.Errorf("screenshot of the fetched version: status %d, want 404", st)
	}
	if st, _ := shot(c, path+"/versions/2/overlay.png"); st != http.StatusNotFound {
		t.Errorf("overlay against a version without a screenshot: status %d, want 404", st)
	}
	// The API serves the same images to the owner's token only.
	for _, p := range []string{"/versions/3/screenshot.png", "/versions/3/overlay.png"} {
		resp, b := e.api(ann).raw("GET", path+p, "", nil)
		if _, err := png.DecodeConfig(bytes.NewReader(b)); resp.StatusCode != http.StatusOK || err != nil {
			t.Errorf("API %s: status %d, %v", p, resp.StatusCode, err)
		}
	}
	bobUser := e.mustUser("bob", "battery staple")
	if resp, _ := e.api(bobUser).raw("GET", path+"/versions/3/screenshot.png", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("API: bob gets ann's screenshot: status %d", resp.StatusCode)
	}
	bob := e.login("bob", "battery staple")
	for _, p := range []string{"/versions/3/screenshot.png", "/versions/3/overlay.png"} {
		if st, _ := shot(bob, path+p); st != http.StatusNotFound {
			t.Errorf("bob gets %s of ann's watch: status %d, want 404", p, st)
		}
		if st, _ := shot(e.client(), path+p); st != http.StatusSeeOther {
			t.Errorf("a visitor gets %s: status %d, want a redirect to the login", p, st)
		}
	}
}

func TestWatchSteps(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.login("ann", "correct horse")

	// The form: one step a line; a bad line is named and nothing changes.
	resp, body := c.post("/watches", url.Values{"url": {"https://shop.example/"}, "category": {"news"}, "render": {"browser"},
		"steps": {"click #accept\r\n\r\n# the list\r\ntype \"form input\" red kettle\r\nwait .results"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: status %d\n%s", resp.StatusCode, body)
	}
	path := resp.Header.Get("Location")
	w, err := e.store.Watch(t.Context(), ann.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []changedigest.Step{{Action: "click", Selector: "#accept"}, {Action: "type", Selector: "form input", Value: "red kettle"}, {Action: "wait", Selector: ".results"}}
	if fmt.Sprint(w.Steps) != fmt.Sprint(want) {
		t.Errorf("stored steps %+v, want %+v", w.Steps, want)
	}
	_, page := c.get(path)
	mustContain(t, page, "after 3 steps:", "<code>click #accept</code>", "<code>type &#34;form input&#34; red kettle</code>")
	_, edit := c.get(path + "/edit")
	mustContain(t, edit, `name="steps"`, "click #accept\ntype &#34;form input&#34; red kettle\nwait .results</textarea>")
	for _, bad := range []struct{ steps, render, msg string }{
		{"click #accept\npress #ok", "browser", "steps, line 2: unknown action"},
		{"wait div[[", "browser", "invalid selector"},
		{"click #accept", "", "steps need the page to be rendered in a browser"},
		{strings.Repeat("wait p\n", 11), "browser", "more than 10"},
	} {
		resp, body := c.post(path, url.Values{"url": {"https://shop.example/"}, "category": {"news"}, "render": {bad.render}, "steps": {bad.steps}})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, bad.msg) {
			t.Errorf("steps %q: status %d, want 400 with %q", bad.steps, resp.StatusCode, bad.msg)
		}
	}
	if w2, _ := e.store.Watch(t.Context(), ann.ID, 1); fmt.Sprint(w2.Steps) != fmt.Sprint(want) {
		t.Errorf("a refused form changed the steps: %+v", w2.Steps)
	}

	// The API: steps as objects; PATCH replaces or clears them.
	api := e.api(ann)
	var got apiWatch
	api.call("GET", "/watches/1", nil, http.StatusOK, &got)
	if fmt.Sprint(got.Steps) != fmt.Sprint(want) {
		t.Errorf("API steps %+v", got.Steps)
	}
	api.call("PATCH", "/watches/1", map[string]any{"steps": []map[string]string{{"action": "click", "selector": "button.more"}}}, http.StatusOK, &got)
	if len(got.Steps) != 1 || got.Steps[0].Selector != "button.more" {
		t.Errorf("after PATCH: %+v", got.Steps)
	}
	api.callErr("PATCH", "/watches/1", "application/json", []byte(`{"steps":[{"action":"wait","selector":"p","value":"x"}]}`), 400, "invalid", "steps[0]", "wait takes no text")
	api.callErr("POST", "/watches", "application/json", []byte(`{"url":"https://b.example/","steps":[{"action":"click","selector":"#a"}]}`), 400, "invalid", "rendered in a browser")
	var cleared apiWatch
	api.call("PATCH", "/watches/1", map[string]any{"steps": []any{}}, http.StatusOK, &cleared)
	if len(cleared.Steps) != 0 || cleared.Render != "browser" {
		t.Errorf("steps not cleared: %+v", cleared)
	}
}
