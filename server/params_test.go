package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink the server's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBadPathParams sends overlong and malformed values in every path
// parameter: each gets 400 or 404 with a short message, never a 500, and
// the log says so in short lines, never at ERROR.
func TestBadPathParams(t *testing.T) {
	sc := mustScene(t)
	var logs lockedBuffer
	sc.e.srv.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	long := strings.Repeat("a", 5000)
	tok := sc.u.FeedToken
	api := sc.e.api(sc.u)
	type req struct {
		method, path string
		api          bool
	}
	reqs := []req{
		{"GET", "/feeds/" + tok + "/tags/" + long + ".xml", false},
		{"GET", "/feeds/" + tok + "/tags/" + strings.Repeat("x", 65) + ".xml", false},
		{"GET", "/feeds/" + tok + "/tags/" + strings.Repeat("%E2%82%AC", 2000) + ".xml", false},
		{"GET", "/feeds/" + long + "/atom.xml", false},
		{"GET", "/feeds/" + tok + "/watches/" + long + ".xml", false},
		{"GET", "/feeds/" + tok + "/watches/99999999999999999999999.xml", false},
		{"GET", "/tags/" + long, false},
		{"GET", "/tags/" + strings.Repeat("%E2%82%AC", 2000), false},
		{"GET", "/watches/" + long, false},
		{"GET", "/watches/" + long + "/edit", false},
		{"GET", sc.wpath("/versions/%s", long), false},
		{"GET", sc.wpath("/versions/%s/source", long), false},
		{"GET", sc.wpath("/versions/99999999999999999999"), false},
		{"GET", sc.wpath("/versions/-1"), false},
		{"GET", "/digest/" + long, false},
		{"GET", "/digest/99999-01-01", false},
		{"GET", "/digest/0001-01-01", false},
		{"GET", "/digest/9999-12-31", false},
		{"GET", "/" + long, false},
		{"POST", "/settings/tokens/" + long + "/revoke", false},
		{"GET", "/api/v1/watches/" + long, true},
		{"GET", "/api/v1/watches/1/versions/" + long, true},
		{"GET", "/api/v1/watches/1/versions/" + long + "/body", true},
		{"DELETE", "/api/v1/profile/terms/" + long, true},
		{"GET", "/api/v1/watches?tag=" + long, true},
		{"GET", "/api/v1/opml?tag=" + long, true},
		{"GET", "/api/v1/" + long, true},
	}
	for _, rq := range reqs {
		var resp *http.Response
		var body string
		switch {
		case rq.api:
			r, b := api.raw(rq.method, strings.TrimPrefix(rq.path, "/api/v1"), "", nil)
			resp, body = r, string(b)
		case rq.method == "POST":
			resp, body = sc.c.post(rq.path, nil)
		default:
			resp, body = sc.c.get(rq.path)
		}
		shown := rq.path
		if len(shown) > 60 {
			shown = shown[:60] + "…"
		}
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 400 or 404", rq.method, shown, resp.StatusCode)
		}
		if strings.Contains(body, strings.Repeat("a", 200)) {
			t.Errorf("%s %s: the answer repeats the whole parameter", rq.method, shown)
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if len(line) > 2000 {
			t.Errorf("log line of %d bytes: %.120s…", len(line), line)
		}
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("bad input logged as an error: %.200s…", line)
		}
	}
}
