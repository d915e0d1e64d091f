package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
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
	e.mustUser("ann", "correct horse")
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
	mustContain(t, body, "Checked: changes found.", "Text changed", `09:<del class="cd-del">40</del><ins class="cd-ins">55</ins> ferry to the mainland`)
}
