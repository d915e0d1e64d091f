package browser_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/browser"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// jsShell is a page whose served HTML has no content: one script builds
// the articles from a state object as a framework would, the prices come
// from fetch(), and the "more" section loads only when scrolled into view.
const jsShell = `<!DOCTYPE html><html><head><title>Shop</title></head>
<body><div id="root"></div><div id="more"></div>
<script>
function h(tag, text, kids) {
  const el = document.createElement(tag);
  if (text) el.textContent = text;
  for (const k of kids || []) el.appendChild(k);
  return el;
}
const state = %s;
const root = document.getElementById("root");
root.appendChild(h("header", null, [h("h1", state.shop)]));
const main = h("main");
for (const a of state.articles) {
  main.appendChild(h("article", null, [h("h2", a.title), h("p", a.body)]));
}
root.appendChild(main);
fetch("/api/prices").then(r => r.json()).then(ps => {
  const t = h("table");
  for (const p of ps) t.appendChild(h("tr", null, [h("td", p.name), h("td", "Price: " + p.price)]));
  root.appendChild(h("section", null, [h("h2", "Prices"), t]));
});
new IntersectionObserver((es, obs) => {
  if (!es.some(e => e.isIntersecting)) return;
  obs.disconnect();
  fetch("/api/more").then(r => r.text()).then(t => {
    document.getElementById("more").appendChild(h("aside", null, [h("h2", "Also in stock"), h("p", t)]));
  });
}).observe(document.getElementById("more"));
</script></body></html>`

// shop serves jsShell with a state the test changes.
type shop struct {
	mu                    sync.Mutex
	articles, price, more string
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	articles, price, more := s.articles, s.price, s.more
	s.mu.Unlock()
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, jsShell, `{"shop":"Corner shop","articles":[`+articles+`]}`)
	case "/api/prices":
		time.Sleep(100 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"name":"Blue kettle","price":"%s"},{"name":"Red toaster with four slots and a crumb tray","price":"31.50"}]`, price)
	case "/api/more":
		fmt.Fprint(w, more)
	default:
		http.NotFound(w, r)
	}
}

func (s *shop) set(articles, price, more string) {
	s.mu.Lock()
	s.articles, s.price, s.more = articles, price, more
	s.mu.Unlock()
}

const (
	articlesV1 = `{"title":"Winter opening hours","body":"From December the shop opens at nine and closes at six on weekdays, and at four on Saturdays."},
{"title":"New espresso machines","body":"Three espresso machines from a small Italian maker are on display; ask for a cup when you visit."}`
	articlesV2 = `{"title":"Winter opening hours","body":"From December the shop opens at eight and closes at seven on weekdays, and at four on Saturdays."},
{"title":"New espresso machines","body":"Three espresso machines from a small Italian maker are on display; ask for a cup when you visit."}`
)

type env struct {
	store *pet.Store
	pipe  *crawl.Pipeline
	watch *changedigest.Watch
	shop  *shop
}

// newEnv sets up a store, a pipeline with a browser pool allowed to reach
// exactly the shop's loopback server, and a watch of the shop.
func newEnv(t *testing.T, exe string) *env {
	t.Helper()
	ctx := context.Background()
	store := pet.New(t.TempDir())
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	u := &changedigest.User{Name: "ann", DigestHour: -1}
	if err := store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	sh := &shop{}
	sh.set(articlesV1, "24.99", "Green teapots, back next week.")
	srv := httptest.NewServer(sh)
	t.Cleanup(srv.Close)
	w := &changedigest.Watch{UserID: u.ID, URL: srv.URL + "/", Render: changedigest.RenderBrowser}
	if err := store.CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	f := crawl.NewFetcher()
	f.Allow = []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}
	pool := browser.NewPool(f.DialContext)
	pool.Exec = exe
	t.Cleanup(func() { pool.Close() })
	pipe := crawl.NewPipeline(f, segmenter.New(), store)
	pipe.Renderer = pool
	return &env{store: store, pipe: pipe, watch: w, shop: sh}
}

func (e *env) body(t *testing.T) string {
	t.Helper()
	snap, err := e.store.Latest(context.Background(), e.watch.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.store.Body(context.Background(), e.watch.ID, snap.Seq)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPipelineRendersAndFindsChanges checks a JavaScript-built page
// through the real pipeline and store: the fetched page is an empty
// shell, the rendered version holds the content built by the script,
// fetched by fetch() and lazy-loaded on scroll, and edits to each are
// found and typed.
func TestPipelineRendersAndFindsChanges(t *testing.T) {
	e := newEnv(t, testenv.Tool(t, "chromium"))
	ctx := context.Background()

	// Fetched, the page has none of its content.
	plain := *e.watch
	plain.Render = changedigest.RenderFetch
	res, err := e.pipe.Fetcher.Fetch(ctx, crawl.WatchRequest(&plain))
	if err != nil {
		t.Fatal(err)
	}
	for _, rendered := range []string{"<h2>Winter opening hours</h2>", "Price: 24.99", "Green teapots"} {
		if strings.Contains(string(res.Body), rendered) {
			t.Fatalf("the served page already has %q; the test proves nothing", rendered)
		}
	}

	o, err := e.pipe.Check(ctx, e.watch)
	if err != nil {
		t.Fatal(err)
	}
	if o.Result != crawl.FirstVersion {
		t.Fatalf("first check: %v, want FirstVersion", o.Result)
	}
	body := e.body(t)
	for _, want := range []string{"<h2>Winter opening hours</h2>", "Price: 24.99", "Green teapots, back next week."} {
		if !strings.Contains(body, want) {
			t.Errorf("the rendered version lacks %q:\n%s", want, body)
		}
	}

	// Nothing changed: no change found, whatever the browser reordered.
	if o, err = e.pipe.Check(ctx, e.watch); err != nil || o.Result != crawl.Unchanged {
		t.Fatalf("second check of the same page: %v, %v; want Unchanged", o.Result, err)
	}

	// One edit in each kind of JavaScript content.
	e.shop.set(articlesV2, "19.99", "Green teapots are back in stock.")
	if o, err = e.pipe.Check(ctx, e.watch); err != nil || o.Result != crawl.Changed {
		t.Fatalf("check after the edits: %v, %v; want Changed", o.Result, err)
	}
	snap, err := e.store.Latest(ctx, e.watch.ID)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, c := range snap.Changes {
		t.Logf("%s %s: %q -> %q", c.Type, c.Op, c.OldText, c.NewText)
		if c.Type != changedigest.ChangeContent {
			continue
		}
		// A content update shows the part of a word that changed, the
		// rest in its context ("24.99" → "19.99" is "24" → "19" before
		// ".99"), and every view shows the three together.
		shown := c.Before + c.NewText + c.After
		for _, want := range []string{"eight", "19.99", "back in stock"} {
			part := strings.TrimSpace(c.NewText)
			if part != "" && strings.Contains(shown, want) && (strings.Contains(want, part) || strings.Contains(part, want)) {
				found[want] = true
			}
		}
	}
	for _, want := range []string{"eight", "19.99", "back in stock"} {
		if !found[want] {
			t.Errorf("no content change shows %q", want)
		}
	}

	// Each version has a screenshot of the rendered page, with the boxes
	// of its segments; the changed segments are among them.
	first, err := e.store.Version(ctx, e.watch.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []*changedigest.Snapshot{first, snap} {
		shot, err := e.store.Screenshot(ctx, e.watch.ID, v.Seq)
		if err != nil {
			t.Fatalf("version %d: %v", v.Seq, err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(shot.PNG))
		if err != nil {
			t.Fatalf("version %d's screenshot: %v", v.Seq, err)
		}
		if cfg.Width != browser.DefaultWidth || cfg.Width != shot.Width || cfg.Height != shot.Height || shot.Height < 200 {
			t.Errorf("version %d's screenshot is %d×%d, recorded %d×%d", v.Seq, cfg.Width, cfg.Height, shot.Width, shot.Height)
		}
		t.Logf("version %d: screenshot %d×%d, %d bytes, %d boxes for %d segments", v.Seq, shot.Width, shot.Height, len(shot.PNG), len(shot.Boxes), len(v.Segments))
		boxed, byPath := map[int]changedigest.Box{}, map[string]bool{}
		for _, b := range shot.Boxes {
			boxed[b.Segment], byPath[b.Path] = b, true
			if b.X < 0 || b.Y < 0 || b.W <= 0 || b.H <= 0 || b.X+b.W > shot.Width || b.Y+b.H > shot.Height {
				t.Errorf("version %d: box %+v is outside the %d×%d image", v.Seq, b, shot.Width, shot.Height)
			}
		}
		for _, sg := range v.Segments {
			if _, ok := boxed[sg.Index]; !ok && strings.TrimSpace(sg.Text) != "" {
				t.Errorf("version %d: segment %d (%s, %q) has no box", v.Seq, sg.Index, sg.Path, sg.Text)
			}
		}
		for _, c := range v.Changes {
			if !byPath[c.Path] && c.Type == changedigest.ChangeContent {
				t.Errorf("version %d: the changed element %s has no box", v.Seq, c.Path)
			}
		}
	}
	if s1, _ := e.store.Screenshot(ctx, e.watch.ID, 1); s1 != nil && snap.Screenshot != nil && s1.Hash == snap.Screenshot.Hash {
		t.Errorf("the page changed and its screenshot did not")
	}
}

// TestPipelineWithoutChromium: a browser watch whose Chromium is missing
// fails its check with an error that says so, promptly, and stores nothing.
func TestPipelineWithoutChromium(t *testing.T) {
	e := newEnv(t, "/nonexistent/chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := e.pipe.Check(ctx, e.watch)
	if !errors.Is(err, browser.ErrNoChromium) || !strings.Contains(err.Error(), "/nonexistent/chromium") {
		t.Fatalf("err = %v, want ErrNoChromium naming the path", err)
	}
	if snap, err := e.store.Latest(ctx, e.watch.ID); err == nil && snap != nil {
		t.Errorf("a version was stored: %+v", snap)
	}

	// A Chromium that cannot run fails promptly too (with what it said,
	// when its output arrived before it exited).
	script := filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'chromium: error while loading shared libraries: libnss3.so' >&2\nexit 127\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	broken := browser.NewPool(e.pipe.Fetcher.DialContext)
	broken.Exec = script
	defer broken.Close()
	e.pipe.Renderer = broken
	if _, err := e.pipe.Check(ctx, e.watch); !errors.Is(err, browser.ErrStart) {
		t.Errorf("a broken Chromium: err = %v, want ErrStart", err)
	} else {
		t.Log(err)
	}

	e.pipe.Renderer = nil
	if _, err := e.pipe.Check(ctx, e.watch); !errors.Is(err, crawl.ErrNoRenderer) {
		t.Errorf("no renderer: err = %v, want ErrNoRenderer", err)
	}
}

// TestPipelinePageFails: a page that answers 500 or never settles is an
// error on the watch, not a version.
func TestPipelinePageFails(t *testing.T) {
	exe := testenv.Tool(t, "chromium")
	var mode string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		m := mode
		mu.Unlock()
		switch m {
		case "500":
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
		case "hang":
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	f := crawl.NewFetcher()
	f.Allow = []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}
	pool := browser.NewPool(f.DialContext)
	pool.Exec = exe
	pool.Timeout = 3 * time.Second
	defer pool.Close()
	w := &changedigest.Watch{URL: srv.URL + "/", Render: changedigest.RenderBrowser}

	mode = "500"
	if _, err := pool.RenderWatch(context.Background(), w, nil); !errors.Is(err, browser.ErrLoad) || !strings.Contains(err.Error(), "500") {
		t.Errorf("status 500: err = %v, want ErrLoad naming the status", err)
	}
	mu.Lock()
	mode = "hang"
	mu.Unlock()
	start := time.Now()
	_, err := pool.RenderWatch(context.Background(), w, nil)
	if !errors.Is(err, browser.ErrTimeout) {
		t.Errorf("a page that never answers: err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the render took %s with a 3 s limit", d)
	}
	w.WaitFor = "#never"
	mu.Lock()
	mode = ""
	mu.Unlock()
	if _, err := pool.RenderWatch(context.Background(), w, nil); !errors.Is(err, browser.ErrTimeout) || !strings.Contains(err.Error(), "#never") {
		t.Errorf("a selector that never shows: err = %v, want ErrTimeout naming it", err)
	}
}
