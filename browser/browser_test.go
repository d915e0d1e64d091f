package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/testenv"
)

// newTestPool returns a pool whose guard allows exactly the given servers
// (the tests' pages are on loopback, which the guard refuses otherwise).
func newTestPool(t testing.TB, allow ...*httptest.Server) *Pool {
	t.Helper()
	exe := testenv.Tool(t, "chromium")
	f := crawl.NewFetcher()
	for _, s := range allow {
		f.Allow = append(f.Allow, netip.MustParseAddrPort(s.Listener.Addr().String()))
	}
	p := NewPool(f.DialContext)
	p.Exec = exe
	p.Timeout = 20 * time.Second
	t.Cleanup(func() { p.Close() })
	return p
}

// counter is a loopback server that must never be reached.
func counter(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		t.Logf("forbidden server reached: %s %s", r.Method, r.URL)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprint(w, "secret")
	}))
	t.Cleanup(s.Close)
	return s, &hits
}

const fetchPage = `<!DOCTYPE html><html><head><title>Prices</title></head><body><div id="app">Loading</div>
<script>
fetch("/data.json").then(r => r.json()).then(d => {
  const app = document.getElementById("app");
  app.textContent = "";
  for (const p of d.items) {
    const s = document.createElement("section");
    const h = document.createElement("h2"); h.textContent = p.name; s.appendChild(h);
    const para = document.createElement("p"); para.textContent = "Price: " + p.price; s.appendChild(para);
    app.appendChild(s);
  }
  const done = document.createElement("div"); done.className = "ready"; app.appendChild(done);
});
</script></body></html>`

func TestRenderFetchedContent(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, fetchPage)
		case "/data.json":
			time.Sleep(200 * time.Millisecond)
			fmt.Fprint(w, `{"items":[{"name":"Blue kettle","price":"24.99"},{"name":"Red toaster","price":"31.50"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	p := newTestPool(t, site)
	pg, err := p.Render(context.Background(), Request{URL: site.URL, WaitFor: ".ready", Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	html := string(pg.HTML)
	for _, want := range []string{"Blue kettle", "Price: 31.50", `class="ready"`} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered DOM lacks %q:\n%s", want, html)
		}
	}
	if pg.Title != "Prices" || pg.Status != 200 {
		t.Errorf("title %q status %d", pg.Title, pg.Status)
	}
	if len(pg.Screenshot) < 100 || string(pg.Screenshot[1:4]) != "PNG" {
		t.Errorf("screenshot is not a PNG (%d bytes)", len(pg.Screenshot))
	}
	if len(pg.Refused) > 0 {
		t.Errorf("refused: %v", pg.Refused)
	}
}

// hostilePage tries every way a page has to make the browser reach
// another address: subresources, fetch, XHR, an iframe, a form, a
// WebSocket, a service worker, a redirect, a navigation, a pop-up, and
// names for loopback.
func hostilePage(forbidden string, port string) string {
	targets := []string{
		forbidden,
		"http://localhost:" + port,
		"http://[::1]:" + port,
		"http://0.0.0.0:" + port,
		"http://2130706433:" + port, // 127.0.0.1 as one number
		"http://127.1:" + port,
	}
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>hostile</title>`)
	fmt.Fprintf(&b, `<link rel="stylesheet" href="%s/css"><link rel="prefetch" href="%s/prefetch"><link rel="dns-prefetch" href="%s">`, forbidden, forbidden, forbidden)
	b.WriteString(`</head><body><p id="text">A page that tries to reach a private address.</p>`)
	for i, u := range targets {
		fmt.Fprintf(&b, `<img src="%s/img%d"><script src="%s/js%d"></script>`, u, i, u, i)
	}
	fmt.Fprintf(&b, `<iframe src="%s/frame"></iframe><iframe src="/redirect"></iframe>`, forbidden)
	fmt.Fprintf(&b, `<form id="f" method="post" action="%s/form" target="sink"><input name="a" value="b"></form><iframe name="sink"></iframe>`, forbidden)
	b.WriteString(`<script>const targets = [`)
	for _, u := range targets {
		fmt.Fprintf(&b, "%q,", u)
	}
	b.WriteString(`];
for (const u of targets) {
  fetch(u + "/fetch").catch(() => {});
  fetch(u + "/nocors", {mode: "no-cors"}).catch(() => {});
  const x = new XMLHttpRequest(); x.open("GET", u + "/xhr"); x.send();
  try { new WebSocket(u.replace("http", "ws") + "/ws"); } catch (e) {}
  navigator.sendBeacon && navigator.sendBeacon(u + "/beacon", "x");
  new Image().src = u + "/image";
}
window.open(targets[0] + "/popup");
document.getElementById("f").submit();
if (navigator.serviceWorker) navigator.serviceWorker.register("/sw.js").catch(() => {});
fetch("/redirect").catch(() => {});
setTimeout(() => { const a = document.createElement("a"); a.href = "/download"; a.download = "x"; document.body.appendChild(a); a.click(); }, 50);
</script></body></html>`)
	return b.String()
}

const serviceWorker = `self.addEventListener("install", e => { fetch(%q + "/sw-install").catch(() => {}); self.skipWaiting(); });
self.addEventListener("activate", e => { fetch(%q + "/sw-activate").catch(() => {}); });`

// udpCounter is a loopback UDP socket that must never receive a packet
// (WebRTC's STUN and TURN traffic would bypass any HTTP proxy).
func udpCounter(t *testing.T) (string, *atomic.Int64) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var n atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	return c.LocalAddr().String(), &n
}

const webRTC = `<script>
try {
  const pc = new RTCPeerConnection({iceServers: [{urls: "stun:%[1]s"}, {urls: "turn:%[1]s?transport=udp", username: "u", credential: "p"}]});
  pc.createDataChannel("x");
  pc.createOffer().then(o => pc.setLocalDescription(o));
} catch (e) {}
</script>`

func TestHostilePageCannotReachLoopback(t *testing.T) {
	forbidden, hits := counter(t)
	udpAddr, packets := udpCounter(t)
	port := forbidden.URL[strings.LastIndex(forbidden.URL, ":")+1:]
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, hostilePage(forbidden.URL, port))
			fmt.Fprintf(w, webRTC, udpAddr)
		case "/redirect":
			http.Redirect(w, r, forbidden.URL+"/redirected", http.StatusFound)
		case "/download":
			w.Header().Set("Content-Disposition", `attachment; filename="x.bin"`)
			fmt.Fprint(w, "payload")
		case "/local":
			fmt.Fprint(w, `<p>local files</p><iframe src="file:///etc/passwd"></iframe><script>
fetch("file:///etc/passwd").then(r => r.text()).then(t => document.body.append(t)).catch(() => {});
setTimeout(() => { location.href = "file:///etc/passwd" }, 10);
</script>`)
		case "/leave":
			fmt.Fprintf(w, `<p>leaving</p><script>setTimeout(() => { location.href = %q }, 10)</script>`, forbidden.URL+"/away")
		case "/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, serviceWorker, forbidden.URL, forbidden.URL)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	p := newTestPool(t, site)
	pg, err := p.Render(context.Background(), Request{URL: site.URL, Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(pg.HTML), "tries to reach a private address") {
		t.Errorf("the page itself was not rendered: %s", pg.HTML)
	}
	time.Sleep(300 * time.Millisecond)
	if n := hits.Load(); n != 0 {
		t.Errorf("the forbidden loopback server was reached %d times", n)
	}
	if n := packets.Load(); n != 0 {
		t.Errorf("WebRTC sent %d UDP packets to loopback", n)
	}
	if len(pg.Refused) == 0 {
		t.Errorf("the guard refused nothing; requests: %d", pg.Requests)
	}
	t.Logf("%d requests, %d refused, e.g. %v", pg.Requests, len(pg.Refused), pg.Refused[:min(3, len(pg.Refused))])

	// A document redirecting to the forbidden server is refused as a whole.
	_, err = p.Render(context.Background(), Request{URL: site.URL + "/redirect"})
	if !errors.Is(err, ErrRefused) {
		t.Errorf("redirect to a forbidden address: err = %v, want ErrRefused", err)
	}
	// File URLs: neither a watch's address nor anything a page asks for.
	if _, err := p.Render(context.Background(), Request{URL: "file:///etc/passwd"}); !errors.Is(err, ErrLoad) {
		t.Errorf("file URL: err = %v, want ErrLoad", err)
	}
	pg, err = p.Render(context.Background(), Request{URL: site.URL + "/local"})
	if err == nil && strings.Contains(string(pg.HTML), "root:") {
		t.Errorf("a page read a local file: %s", pg.HTML)
	}
	t.Logf("a page asking for local files: err = %v", err)
	// And one that sends itself there with a script.
	_, err = p.Render(context.Background(), Request{URL: site.URL + "/leave"})
	if !errors.Is(err, ErrRefused) {
		t.Errorf("navigation to a forbidden address: err = %v, want ErrRefused", err)
	}
	// So is a document on it.
	_, err = p.Render(context.Background(), Request{URL: forbidden.URL + "/page"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "non-public") {
		t.Errorf("forbidden document: err = %v, want ErrRefused naming the reason", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the forbidden loopback server was reached %d times", n)
	}
}

// TestAllowedServerIsReached is the control of the test above: with the
// second server allowed too, the same page does reach it, so it is the
// guard, not Chromium, that keeps it out.
func TestAllowedServerIsReached(t *testing.T) {
	other, hits := counter(t)
	port := other.URL[strings.LastIndex(other.URL, ":")+1:]
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, hostilePage(other.URL, port))
	}))
	defer site.Close()
	p := newTestPool(t, site, other)
	if _, err := p.Render(context.Background(), Request{URL: site.URL}); err != nil {
		t.Fatal(err)
	}
	if hits.Load() == 0 {
		t.Error("an allowed server was never reached: the test above proves nothing")
	}
}

// TestPoolRestartsAndRecycles: a browser that dies is replaced at the
// next page, and one that has rendered PagesPerBrowser pages is retired.
func TestPoolRestartsAndRecycles(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<p id="x"></p><script>document.getElementById("x").textContent = "built " + (1 + 1)</script>`)
	}))
	defer site.Close()
	p := newTestPool(t, site)
	p.PagesPerBrowser = 2
	render := func() {
		t.Helper()
		pg, err := p.Render(context.Background(), Request{URL: site.URL})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(pg.HTML), "built 2") {
			t.Fatalf("not rendered: %s", pg.HTML)
		}
	}
	render()
	pid := p.Stats().PID
	if pid == 0 {
		t.Fatal("no browser process after a page")
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().PID != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	render()
	if s := p.Stats(); s.Starts != 2 || s.PID == pid {
		t.Errorf("after the browser was killed: %+v (old pid %d), want a second start", s, pid)
	}
	render() // the second page of the second browser
	render() // a third browser
	if s := p.Stats(); s.Starts != 3 {
		t.Errorf("after 2 pages per browser: %d starts, want 3", s.Starts)
	}

	// An idle browser is stopped, and started again for the next page.
	p.IdleClose = 300 * time.Millisecond
	render() // the second page of the third browser
	if s := p.Stats(); s.Starts != 3 || s.PID == 0 {
		t.Fatalf("after the second page of the third browser: %+v", s)
	}
	deadline = time.Now().Add(5 * time.Second)
	for p.Stats().PID != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if s := p.Stats(); s.PID != 0 {
		t.Errorf("the browser still runs after %s idle: %+v", p.IdleClose, s)
	}
	render()
	if s := p.Stats(); s.Starts != 4 {
		t.Errorf("after the idle stop: %d starts, want 4", s.Starts)
	}
}

// TestPoolBoundsTabsAndBytes: no more than Tabs pages load at once, and a
// page that reads more than MaxBytes fails with ErrTooLarge.
func TestPoolBoundsTabsAndBytes(t *testing.T) {
	var cur, peak atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			n := cur.Add(1)
			defer cur.Add(-1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(300 * time.Millisecond)
			fmt.Fprint(w, `<p>slow page</p>`)
		case "/big":
			fmt.Fprint(w, `<p>big page</p><script>fetch("/blob").then(r => r.text()).then(t => document.body.append(t.length))</script>`)
		case "/blob":
			chunk := strings.Repeat("x", 64<<10)
			for range 64 { // 4 MB
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		}
	}))
	defer site.Close()
	p := newTestPool(t, site)
	p.Tabs = 2
	p.MaxBytes = 1 << 20
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := p.Render(context.Background(), Request{URL: site.URL})
			errs <- err
		}()
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := peak.Load(); n > 2 || n == 0 {
		t.Errorf("%d pages loaded at once with Tabs = 2", n)
	}
	_, err := p.Render(context.Background(), Request{URL: site.URL + "/big"})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("a page reading 4 MB with a 1 MB limit: err = %v, want ErrTooLarge", err)
	}
}

// TestSteps: steps run before the page is read: a cookie wall is
// accepted, a search typed, and a "load more" button clicked; a step
// whose element never shows fails within its own time limit.
func TestSteps(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<div id="wall"><button id="accept">Accept</button></div><input name="q"><ul id="list"><li>first item</li></ul>
<button id="more" hidden>Load more</button>
<script>
document.getElementById("accept").onclick = () => { document.getElementById("wall").remove(); document.getElementById("more").hidden = false; };
document.getElementById("more").onclick = () => setTimeout(() => {
  const li = document.createElement("li"); li.className = "late";
  li.textContent = "second item for " + document.querySelector("input[name=q]").value;
  document.getElementById("list").appendChild(li);
}, 200);
</script>`)
	}))
	defer site.Close()
	p := newTestPool(t, site)
	pg, err := p.Render(context.Background(), Request{URL: site.URL, Steps: []Step{
		{Action: "click", Selector: "#accept"},
		{Action: "type", Selector: "input[name=q]", Text: "kettles"},
		{Action: "click", Selector: "#more"},
		{Action: "wait", Selector: "li.late"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if html := string(pg.HTML); !strings.Contains(html, "second item for kettles") || strings.Contains(html, `id="wall"`) {
		t.Errorf("the steps did not run: %s", html)
	}
	start := time.Now()
	_, err = p.Render(context.Background(), Request{URL: site.URL, Steps: []Step{{Action: "click", Selector: "#absent", Timeout: time.Second}}})
	if !errors.Is(err, ErrStep) || !strings.Contains(err.Error(), "#absent") {
		t.Errorf("a step on a missing element: err = %v, want ErrStep naming it", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the failing step took %s with a 1 s limit", d)
	}
}

// TestDocumentErrors: a document the guard refuses is ErrRefused, over
// TLS too; one whose server is down is ErrLoad saying so, not a refusal.
func TestDocumentErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nothing listens there any more
	tlsSite := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the forbidden TLS server was reached: %s", r.URL)
	}))
	defer tlsSite.Close()

	p := newTestPool(t)
	p.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		f := crawl.NewFetcher()
		f.Allow = []netip.AddrPort{netip.MustParseAddrPort(down)}
		return f.DialContext(ctx, network, addr)
	}
	_, err = p.Render(context.Background(), Request{URL: "http://" + down + "/"})
	if !errors.Is(err, ErrLoad) || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("server down: err = %v, want ErrLoad saying the connection was refused", err)
	}
	_, err = p.Render(context.Background(), Request{URL: tlsSite.URL + "/"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "non-public") {
		t.Errorf("TLS document on loopback: err = %v, want ErrRefused naming the reason", err)
	}
}
