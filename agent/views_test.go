package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// viewSite is a page agent as visitors' browsers meet it: a site on
// loopback serving a page with the snippet, and the manager behind
// loopback routes for the agent script and reports, on a clock the test
// moves. The page is what page returns; the stored version is set with
// store.
type viewSite struct {
	t       *testing.T
	f       *fixture
	bin     string
	page    atomic.Value // func() string
	site    *httptest.Server
	service *httptest.Server
	mu      sync.Mutex
	results []error // the manager's answer to each report, in order
	scripts int     // digesters served
	voids   int
}

func newViewSite(t *testing.T) *viewSite {
	t.Helper()
	if testing.Short() {
		t.Skip("slow: runs Chromium")
	}
	v := &viewSite{t: t, bin: testenv.Tool(t, "chromium")}
	v.service = httptest.NewServer(http.HandlerFunc(v.serveAgent))
	t.Cleanup(v.service.Close)
	v.site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/page" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		body := v.page.Load().(func() string)()
		body = strings.Replace(body, "</body>", Snippet(v.service.URL+"/agent.js", v.f.key)+"</body>", 1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(v.site.Close)

	v.f = &fixture{store: newMemStore(), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	v.f.key = NewKey(1)
	v.f.store.watches[1] = &changedigest.Watch{ID: 1, UserID: 7, URL: v.site.URL + "/page", AgentKey: v.f.key,
		NextCheck: v.f.now.Add(24 * time.Hour)}
	v.f.m = New(v.f.store, v.service.URL+"/agent/report")
	v.f.m.Now = v.f.clock
	v.f.m.Logger = discard
	return v
}

func (v *viewSite) serveAgent(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	switch r.URL.Path {
	case "/agent.js":
		js, _, err := v.f.m.ScriptEncoded(WithClient(r.Context(), host), r.URL.Query().Get("k"), false)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		v.mu.Lock()
		if IsVoid(js) {
			v.voids++
		} else {
			v.scripts++
		}
		v.mu.Unlock()
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(js)
	case "/agent/report":
		w.Header().Set("Access-Control-Allow-Origin", "*")
		r.ParseForm()
		err := v.f.m.Report(r.Context(), ReportIn{Token: r.PostForm.Get("t"), URL: r.PostForm.Get("u"),
			Summary: r.PostForm.Get("s"), Origin: r.Header.Get("Origin"), Addr: host})
		v.mu.Lock()
		v.results = append(v.results, err)
		v.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		http.NotFound(w, r)
	}
}

// store makes body the stored version of the page, as the server's own
// fetch would have stored it.
func (v *viewSite) store(body string) {
	v.f.store.put(1, body)
	w := v.f.store.watch(1)
	v.f.m.Stored(&w, &changedigest.Snapshot{WatchID: 1, Seq: v.f.store.seqs[1]})
}

// view opens the page in headless Chromium. With idle, Chromium is given
// time after the load (as a reader who stays); without, it ends the
// view at the load event, as a reader who leaves at once. It returns the
// manager's answers to the reports the view sent.
func (v *viewSite) view(idle bool) []error {
	v.t.Helper()
	v.mu.Lock()
	n := len(v.results)
	v.mu.Unlock()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--disable-background-networking", "--user-data-dir=" + v.t.TempDir()}
	if idle {
		args = append(args, "--virtual-time-budget=10000")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, v.bin, append(args, "--dump-dom", v.site.URL+"/page")...).CombinedOutput()
	if err != nil {
		v.t.Fatalf("chromium: %v\n%s", err, clip(string(out)))
	}
	// A report sent as the page closed is in flight still: the loopback
	// server has it within moments, or never had it.
	deadline := time.Now().Add(2 * time.Second)
	for {
		v.mu.Lock()
		got := append([]error(nil), v.results[n:]...)
		v.mu.Unlock()
		if len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// check runs the server's verifying check of a page whose served HTML is
// body: a new version when it differs from the stored one.
func (v *viewSite) check(body string) {
	v.f.drain(v.t)
	w := v.f.store.watch(1)
	if w.NextCheck.After(v.f.now) {
		return // nothing made it due
	}
	if Summarize([]byte(body), "text/html") != Summarize(v.f.store.bodies[1], "text/html") {
		v.store(body)
	}
	v.f.m.CheckedAt(1, v.f.now, false)
	v.f.store.UpdateWatch(context.Background(), 0, 1, func(w *changedigest.Watch) error {
		w.NextCheck = v.f.now.Add(24 * time.Hour)
		return nil
	})
}

// TestShortViewsReport: a reader who leaves as soon as the page has
// loaded still sends the page's summary: the digester reports before the
// load event, not in idle time after it. (The threshold counts from the
// digester sent, so a digester that never reports leaves the page
// unsummarised for a whole threshold.)
func TestShortViewsReport(t *testing.T) {
	v := newViewSite(t)
	page := `<!doctype html><html><head><title>Club news</title></head><body>
<header><h1>The chess club</h1></header>
<main><p>The next meeting is on Tuesday at the library, with a simultaneous exhibition.</p></main>
<footer>Contact the secretary</footer></body></html>`
	v.page.Store(func() string { return page })
	v.store(page)
	const views = 20
	reported := 0
	for range views {
		errs := v.view(false)
		for _, err := range errs {
			if err != nil {
				t.Errorf("report refused: %v", err)
			}
		}
		if len(errs) > 0 {
			reported++
		}
		v.f.drain(t)
		v.f.now = v.f.now.Add(DefaultThreshold)
	}
	t.Logf("%d of %d views that ended at the load event reported", reported, views)
	if v.scripts != views {
		t.Errorf("%d digesters served for %d views a threshold apart", v.scripts, views)
	}
	if reported < views {
		t.Errorf("%d of %d views that ended at the load event reported, want all", reported, views)
	}
}

// clockPage is a page whose script writes the time into its text: its
// summary in a browser differs on every view, and from the served HTML.
func clockPage(title string) string {
	return `<!doctype html><html><head><title>` + title + `</title></head><body>
<header><h1>Town hall</h1></header>
<main><p>Opening hours: 9 to 5 every weekday, closed on Sundays and public holidays.</p>
<p>Page generated at <span id="t">now</span>.</p>
<script>document.getElementById('t').textContent = String(Date.now() + Math.random());</script></main>
<footer>Contact the town hall</footer></body></html>`
}

// TestHonestVisitorsOfAVolatilePage: a page whose script writes the time
// into its text, viewed in Chromium. Its reports never match the stored
// version, and verification refutes them; that is learned of the page
// (its main body is not trusted, and said so), not held against the
// visitors, so a real change of its title viewed next from the same
// address is taken and verified.
func TestHonestVisitorsOfAVolatilePage(t *testing.T) {
	v := newViewSite(t)
	page := clockPage("Town hall")
	v.page.Store(func() string { return page })
	v.store(page)
	for i := range 3 {
		errs := v.view(true)
		if len(errs) != 1 || errs[0] != nil {
			t.Fatalf("view %d: reports %v, want one accepted", i+1, errs)
		}
		v.check(page)
		v.f.now = v.f.now.Add(DefaultThreshold)
	}
	st := v.f.m.Stats(1)
	t.Logf("after three views: %+v", st)
	if st.Refuted > 2 {
		t.Errorf("%d reports of the page were verified and refuted, want at most 2 before it is learned", st.Refuted)
	}
	if !slices.Equal(st.Volatile, []string{"main"}) {
		t.Errorf("volatile parts = %q, want [main]", st.Volatile)
	}
	if w := v.f.store.watch(1); !slices.Equal(w.AgentVolatile, []string{"main"}) {
		t.Errorf("the watch keeps volatile parts %q, want [main]", w.AgentVolatile)
	}
	// A real change, viewed from the same address.
	changed := clockPage("Town hall: closed on Friday")
	v.page.Store(func() string { return changed })
	errs := v.view(true)
	if len(errs) != 1 || errs[0] != nil {
		t.Fatalf("the view of a real change: reports %v, want one accepted", errs)
	}
	v.check(changed)
	if st := v.f.m.Stats(1); st.Confirmed != 1 {
		t.Errorf("the real change was not confirmed: %+v", st)
	}
}
