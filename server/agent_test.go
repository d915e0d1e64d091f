package server

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
)

// withAgent gives the test server a page agent manager and a client
// coordinator, as serve does.
func withAgent(e *testEnv) *agent.Manager {
	m := agent.New(e.store, e.http.URL+"/agent/report")
	m.Logger = slog.New(slog.DiscardHandler)
	m.Start()
	e.t.Cleanup(m.Stop)
	e.srv.Agent = m
	e.srv.Clients = agent.NewCoordinator(e.store, m)
	return m
}

func TestAgentOwnerAPI(t *testing.T) {
	e := mustServer(t)
	withAgent(e)
	ann, bob := e.mustUser("ann", "correct horse"), e.mustUser("bob", "battery staple")
	w := e.mustWatch(ann, "https://shop.example/hours")
	a := e.api(ann)

	var v agentView
	a.call("GET", fmt.Sprintf("/watches/%d/agent", w.ID), nil, 200, &v)
	if v.Enabled || v.Snippet != "" || v.Threshold != "10m0s" {
		t.Errorf("before: %+v", v)
	}
	a.call("PUT", fmt.Sprintf("/watches/%d/agent", w.ID), map[string]any{"enabled": true, "threshold": "30m"}, 200, &v)
	wantSnippet := `<script async src="` + e.http.URL + `/agent.js?k=` + v.Key + `"></script>`
	if !v.Enabled || v.Snippet != wantSnippet || v.Threshold != "30m0s" || !strings.HasPrefix(v.Key, fmt.Sprint(w.ID)+"-") {
		t.Errorf("enabled: %+v", v)
	}
	old := v.Key
	a.call("PUT", fmt.Sprintf("/watches/%d/agent", w.ID), map[string]any{"new_key": true}, 200, &v)
	if v.Key == old || v.Threshold != "30m0s" {
		t.Errorf("new key: %+v", v)
	}

	// Bad input, another user's watch, no token.
	resp, body := a.raw("PUT", fmt.Sprintf("/watches/%d/agent", w.ID), "application/json", []byte(`{"threshold":"soon"}`))
	if resp.StatusCode != 400 || !strings.Contains(string(body), "not a duration") {
		t.Errorf("bad threshold: %d %s", resp.StatusCode, body)
	}
	resp, body = a.raw("PUT", fmt.Sprintf("/watches/%d/agent", w.ID), "application/json", []byte(`{"threshold":"1s"}`))
	if resp.StatusCode != 400 || !strings.Contains(string(body), "out of range") {
		t.Errorf("short threshold: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.api(bob).raw("GET", fmt.Sprintf("/watches/%d/agent", w.ID), "", nil); resp.StatusCode != 404 {
		t.Errorf("another user's watch: %d", resp.StatusCode)
	}
	if resp, _ := (&apiClient{t: t, base: e.http.URL + "/api/v1"}).raw("GET", fmt.Sprintf("/watches/%d/agent", w.ID), "", nil); resp.StatusCode != 401 {
		t.Errorf("no token: %d", resp.StatusCode)
	}

	// The watch page shows the snippet; the form turns the agent off.
	c := e.login("ann", "correct horse")
	_, page := c.get(fmt.Sprintf("/watches/%d", w.ID))
	mustContain(t, page, "Page agent and clients", "agent.js?k="+v.Key, "Agents served 0")
	resp, _ = c.post(fmt.Sprintf("/watches/%d/agent", w.ID), url.Values{"action": {"disable"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("disable: %d", resp.StatusCode)
	}
	v = agentView{}
	a.call("GET", fmt.Sprintf("/watches/%d/agent", w.ID), nil, 200, &v)
	if v.Enabled || v.Key != "" {
		t.Errorf("after disable: %+v", v)
	}
}

func TestAgentPublicRoutes(t *testing.T) {
	e := mustServer(t)
	m := withAgent(e)
	ann := e.mustUser("ann", "correct horse")
	w := e.mustWatch(ann, "https://shop.example/hours")
	page := `<html><head><title>Hours</title></head><body><main><p>Open from nine to five on weekdays.</p></main></body></html>`
	e.addVersion(w, page)
	var v agentView
	e.api(ann).call("PUT", fmt.Sprintf("/watches/%d/agent", w.ID), map[string]any{"enabled": true}, 200, &v)

	get := func(q string) (int, string, http.Header) {
		resp, err := http.Get(e.http.URL + "/agent.js" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	st, js, h := get("?k=" + url.QueryEscape(v.Key))
	if st != 200 || !strings.Contains(js, "DOMContentLoaded") || !strings.HasPrefix(h.Get("Content-Type"), "text/javascript") || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("digester: %d %s %v", st, agent.Snippet("", ""), h)
	}
	for q, want := range map[string]int{"": 400, "?k=junk": 400, "?k=99-abc": 404, "?k=" + url.QueryEscape(v.Key) + "x": 404} {
		if st, body, _ := get(q); st != want || !strings.HasPrefix(body, "/* changedigest: ") {
			t.Errorf("agent.js%s: %d %q, want %d and a comment", q, st, body, want)
		}
	}

	tok := js[strings.Index(js, `T = "`)+5:]
	tok = tok[:strings.IndexByte(tok, '"')]
	post := func(form url.Values, origin string) (int, string) {
		req, _ := http.NewRequest("POST", e.http.URL+"/agent/report", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	sum := agent.Summarize([]byte(page), "text/html").String()
	good := url.Values{"t": {tok}, "u": {"https://shop.example/hours"}, "s": {sum}}
	if st, body := post(url.Values{"t": {tok}, "u": {"https://shop.example/hours"}, "s": {"nope"}}, ""); st != 400 || !strings.Contains(body, "four parts") {
		t.Errorf("bad summary: %d %s", st, body)
	}
	if st, body := post(good, "https://evil.example"); st != 403 || !strings.Contains(body, "origin") {
		t.Errorf("other origin: %d %s", st, body)
	}
	// A browser always sends the page's origin with the digester's
	// report: none (not a browser) or "null" (a sandboxed or no-referrer
	// page posting without CORS) is refused.
	if st, body := post(good, ""); st != 403 || !strings.Contains(body, "must carry the Origin header") {
		t.Errorf("no origin: %d %s", st, body)
	}
	if st, body := post(good, "null"); st != 403 || !strings.Contains(body, `origin "null" is not from the watch's site`) {
		t.Errorf("origin null: %d %s", st, body)
	}
	if st, body := post(good, "https://shop.example"); st != 202 {
		t.Errorf("good report: %d %s", st, body)
	}
	if st, body := post(good, "https://shop.example"); st != 403 || !strings.Contains(body, "already used") {
		t.Errorf("replayed: %d %s", st, body)
	}
	if _, js, _ := get("?k=" + url.QueryEscape(v.Key)); !agent.IsVoid([]byte(js)) {
		t.Errorf("after a report: want the void agent, got %q", js[:min(len(js), 60)])
	}
	if st := m.Stats(w.ID); st.Served != 2 || st.Digester != 1 || st.Accepted != 1 || st.Refused != 5 ||
		st.RefusedInvalid != 1 || st.RefusedPage != 3 || st.RefusedToken != 1 {
		t.Errorf("stats: %+v", st)
	}
	// The watch page tells the refusals by reason.
	_, wp := e.login("ann", "correct horse").get(fmt.Sprintf("/watches/%d", w.ID))
	mustContain(t, wp, "refused 5: 1 with an expired or used token, 3 for another page or site, 1 malformed)")
}

// The digester goes gzip-encoded to clients that take gzip, plain to
// others, with its length; both carry the same script.
func TestAgentScriptEncoding(t *testing.T) {
	e := mustServer(t)
	m := withAgent(e)
	ann := e.mustUser("ann", "correct horse")
	w := e.mustWatch(ann, "https://shop.example/hours")
	e.addVersion(w, `<html><body><main><p>Open from nine to five on weekdays.</p></main></body></html>`)
	var v agentView
	e.api(ann).call("PUT", fmt.Sprintf("/watches/%d/agent", w.ID), map[string]any{"enabled": true}, 200, &v)
	// A threshold of a nanosecond: every request gets the digester.
	if _, err := e.store.UpdateWatch(context.Background(), 0, w.ID, func(x *changedigest.Watch) error {
		x.AgentThreshold = time.Nanosecond
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	m.Forget(w.ID)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(accept string) (string, http.Header) {
		req, _ := http.NewRequest("GET", e.http.URL+"/agent.js?k="+url.QueryEscape(v.Key), nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != strconv.Itoa(len(b)) || resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("Accept-Encoding %q: %d, %d bytes, headers %v", accept, resp.StatusCode, len(b), resp.Header)
		}
		return string(b), resp.Header
	}
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{
		{"gzip, deflate, br, zstd", true},
		{"br;q=1.0, gzip;q=0.8, *;q=0.1", true},
		{"*", true},
		{"", false},
		{"identity", false},
		{"gzip;q=0", false},
		{"GZIP; Q=0.000, br", false},
		{"gzip;q=0, *", false},
		{"*;q=0", false},
	} {
		body, h := get(tc.accept)
		if got := h.Get("Content-Encoding") == "gzip"; got != tc.gzip {
			t.Errorf("Accept-Encoding %q: gzip-encoded %v, want %v", tc.accept, got, tc.gzip)
			continue
		}
		if tc.gzip {
			zr, err := gzip.NewReader(strings.NewReader(body))
			if err != nil {
				t.Fatalf("Accept-Encoding %q: %v", tc.accept, err)
			}
			b, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("Accept-Encoding %q: %v", tc.accept, err)
			}
			body = string(b)
		}
		if !strings.Contains(body, "DOMContentLoaded") || !strings.Contains(body, `T = "`) {
			t.Errorf("Accept-Encoding %q: not the digester: %.80q", tc.accept, body)
		}
	}
}

// TestAgentVolatileNote: the watch page says which parts of the page's
// summary the agent learned differ on every view.
func TestAgentVolatileNote(t *testing.T) {
	e := mustServer(t)
	withAgent(e)
	ann := e.mustUser("ann", "correct horse")
	w := e.mustWatch(ann, "https://shop.example/hours")
	var v agentView
	e.api(ann).call("PUT", fmt.Sprintf("/watches/%d/agent", w.ID), map[string]any{"enabled": true}, 200, &v)
	c := e.login("ann", "correct horse")
	if _, page := c.get(fmt.Sprintf("/watches/%d", w.ID)); strings.Contains(page, "on every view") {
		t.Error("a note before anything was learned")
	}
	if _, err := e.store.UpdateWatch(context.Background(), 0, w.ID, func(x *changedigest.Watch) error {
		x.AgentVolatile = []string{"main", "footer"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, page := c.get(fmt.Sprintf("/watches/%d", w.ID))
	mustContain(t, page, "The page&#39;s main body and footer differ in browsers on every view")
	e.api(ann).call("GET", fmt.Sprintf("/watches/%d/agent", w.ID), nil, 200, &v)
	if strings.Join(v.Stats.Volatile, ",") != "main,footer" {
		t.Errorf("API: volatile %q", v.Stats.Volatile)
	}
}
