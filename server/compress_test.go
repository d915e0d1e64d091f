package server

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fetch GETs url with the given request headers, without Go's own
// transparent decompression, and returns the response and its body as
// sent (still compressed when it was).
func fetch(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	return string(out)
}

// TestCompression checks that feeds and pages go gzip-compressed to a
// client that asks for it and as they are to one that does not, the
// same once decompressed, both saying Vary: Accept-Encoding; that a
// compressed feed's ETag is weak and still answers a conditional
// request with 304; and that small responses are sent as they are.
func TestCompression(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	w := e.mustWatch(u, "https://news.example.org/", "news")
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	page := "<html><body><main><p>Tickets for the rugby final are sold out.</p>"
	for i, day := range []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"} {
		e.setNow(t0.Add(time.Duration(i) * time.Hour))
		page += "<p>On " + day + " the harbour ferry runs late, and the evening boat waits for the last train from the city.</p>"
		e.addVersion(w, page+"</main></body></html>")
	}
	u, err := e.store.User(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	gz := map[string]string{"Accept-Encoding": "gzip, deflate, br"}
	for _, path := range []string{"/atom.xml", "/rss.xml", "/feed.json"} {
		url := e.http.URL + "/feeds/" + u.FeedToken + path
		plain, body := fetch(t, url, nil)
		zipped, zbody := fetch(t, url, gz)
		if plain.StatusCode != http.StatusOK || zipped.StatusCode != http.StatusOK {
			t.Fatalf("%s: statuses %d and %d", path, plain.StatusCode, zipped.StatusCode)
		}
		if plain.Header.Get("Content-Encoding") != "" || zipped.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: Content-Encoding %q without asking, %q asking for gzip", path,
				plain.Header.Get("Content-Encoding"), zipped.Header.Get("Content-Encoding"))
		}
		for _, r := range []*http.Response{plain, zipped} {
			if vs := r.Header.Values("Vary"); len(vs) != 1 || vs[0] != "Accept-Encoding" {
				t.Errorf("%s: Vary %q, want Accept-Encoding once", path, vs)
			}
		}
		if got := gunzip(t, zbody); got != string(body) {
			t.Errorf("%s: decompressed feed differs from the plain one", path)
		}
		if len(zbody)*3 > len(body) {
			t.Errorf("%s: %d bytes compressed of %d", path, len(zbody), len(body))
		}
		tag, weak := plain.Header.Get("ETag"), zipped.Header.Get("ETag")
		if weak != "W/"+tag {
			t.Errorf("%s: ETag %q compressed, %q plain: want the weak form of the same", path, weak, tag)
		}
		for _, inm := range []string{tag, weak} {
			for _, h := range []map[string]string{nil, gz} {
				hh := map[string]string{"If-None-Match": inm}
				for k, v := range h {
					hh[k] = v
				}
				if r, b := fetch(t, url, hh); r.StatusCode != http.StatusNotModified || len(b) != 0 {
					t.Errorf("%s: If-None-Match %s (gzip %v): status %d, %d bytes", path, inm, h != nil, r.StatusCode, len(b))
				}
			}
		}
		if r, b := fetch(t, url, map[string]string{"Accept-Encoding": "gzip;q=0"}); r.Header.Get("Content-Encoding") != "" || string(b) != string(body) {
			t.Errorf("%s: gzip refused with q=0, sent %q", path, r.Header.Get("Content-Encoding"))
		}
	}

	// A page the size of most: the style sheet (http.ServeContent sets a
	// Content-Length, which a compressed body must not keep).
	plain, body := fetch(t, e.http.URL+"/static/style.css", nil)
	zipped, zbody := fetch(t, e.http.URL+"/static/style.css", gz)
	if plain.StatusCode != http.StatusOK || len(body) < 4*minCompress {
		t.Fatalf("style sheet: status %d, %d bytes", plain.StatusCode, len(body))
	}
	if zipped.Header.Get("Content-Encoding") != "gzip" || plain.Header.Get("Content-Encoding") != "" {
		t.Errorf("style sheet: Content-Encoding %q asking, %q not", zipped.Header.Get("Content-Encoding"), plain.Header.Get("Content-Encoding"))
	}
	if zipped.Header.Get("Vary") != "Accept-Encoding" || plain.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("style sheet: Vary %q and %q", zipped.Header.Get("Vary"), plain.Header.Get("Vary"))
	}
	if cl := zipped.Header.Get("Content-Length"); cl != "" && cl == plain.Header.Get("Content-Length") {
		t.Errorf("style sheet: compressed response keeps the plain Content-Length %s", cl)
	}
	if got := gunzip(t, zbody); got != string(body) {
		t.Errorf("style sheet: decompressed differs from the plain one")
	}

	// A signed-in page, through a client that decompresses as browsers do.
	c := e.login("ann", "correct horse")
	if resp, page := c.get("/"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "</html>") || !resp.Uncompressed {
		t.Errorf("dashboard: status %d, whole page %v, sent compressed %v", resp.StatusCode, strings.Contains(page, "</html>"), resp.Uncompressed)
	}

	// Small: sent as it is.
	if r, b := fetch(t, e.http.URL+"/healthz", gz); r.Header.Get("Content-Encoding") != "" || string(b) != "ok\n" {
		t.Errorf("healthz: Content-Encoding %q, body %q", r.Header.Get("Content-Encoding"), b)
	}
}

// TestCompressCrossSite checks that HTML asked for by another site's
// page is sent as it is (its size would tell that site the page's CSRF
// token), while the same page asked for by this site, by a user or by a
// client without Sec-Fetch-Site is compressed; and that a 304 carries
// the weak ETag of the compressed 200 it stands for.
func TestCompressCrossSite(t *testing.T) {
	page := "<!DOCTYPE html><html><body>" + strings.Repeat("<p>the same paragraph again</p>", 200) + "</body></html>"
	h := compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") != "" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, page)
	}))
	for site, want := range map[string]string{"": "gzip", "same-origin": "gzip", "none": "gzip", "cross-site": "", "same-site": ""} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Encoding"); got != want {
			t.Errorf("Sec-Fetch-Site %q: Content-Encoding %q, want %q", site, got, want)
		}
		if want == "" && rec.Body.String() != page {
			t.Errorf("Sec-Fetch-Site %q: the page sent as it is differs", site)
		}
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("If-None-Match", `W/"v1"`)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Header().Get("ETag") != `W/"v1"` {
		t.Errorf("304: %d, ETag %q, want the weak one", rec.Code, rec.Header().Get("ETag"))
	}
}
