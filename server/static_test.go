package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestStaticFiles: the style sheets are served; the directory they are
// in is not listed, and nothing else is there.
func TestStaticFiles(t *testing.T) {
	e := mustServer(t)
	c := e.client()
	if resp, body := c.get("/static/style.css"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || body == "" {
		t.Errorf("style.css: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, path := range []string{"/static/", "/static", "/static/.", "/static//", "/static/nothing.css", "/static/style.css/", "/static/../routes.go"} {
		resp, body := c.get(path)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, `href="style.css"`) {
			t.Errorf("%s: %d, want 404 and no listing:\n%.300s", path, resp.StatusCode, body)
		}
	}
}
