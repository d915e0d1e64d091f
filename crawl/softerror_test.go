package crawl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/changedigest/changedigest/internal/testenv"
)

func page(title string) []byte {
	return []byte("<!DOCTYPE html><html><head><title>" + title + "</title></head><body><p>Some text.</p></body></html>")
}

func TestIsErrorPage(t *testing.T) {
	big := append(page("Page not found"), strings.Repeat("<p>more content</p>", 600)...)
	tests := []struct {
		name        string
		body        []byte
		contentType string
		want        bool
	}{
		{"404 Not Found", page("404 Not Found"), "text/html", true},
		{"bare 404", page("404"), "text/html", true},
		{"Error 404", page("Error 404"), "text/html; charset=utf-8", true},
		{"HTTP 403 Forbidden", page("HTTP 403 Forbidden"), "text/html", true},
		{"404 - Page not found", page("404 - Page not found"), "text/html", true},
		{"Error: Not Found", page("Error: Not Found"), "text/html", true},
		{"site suffix", page("Page not found | The Daily Planet"), "text/html", true},
		{"site prefix", page("The Daily Planet – Page Not Found"), "text/html", true},
		{"Access Denied", page("Access Denied"), "text/html", true},
		{"Too Many Requests", page("Too Many Requests"), "text/html", true},
		{"503 Service Unavailable", page("503 Service Unavailable"), "text/html", true},
		{"bot wall", page("Just a moment..."), "text/html", true},
		{"bare Error", page("Error"), "text/html", true},
		{"title with spaces and case", page("  NOT   FOUND  "), "text/html", true},
		{"xhtml", page("Not Found"), "application/xhtml+xml", true},
		{"no content type, html body", page("404 Not Found"), "", true},

		{"error in a longer title", page("Error handling in Go"), "text/html", false},
		{"status-like number in a title", page("404 ways to cook rice"), "text/html", false},
		{"phrase followed by more", page("Not found: my lost cat"), "text/html", false},
		{"2xx code", page("200 OK"), "text/html", false},
		{"year", page("2024"), "text/html", false},
		{"3-digit non-status", page("747 Not Found"), "text/html", false},
		{"large page", big, "text/html", false},
		{"feed", []byte(`<feed xmlns="http://www.w3.org/2005/Atom"><title>Error</title></feed>`), "application/atom+xml", false},
		{"plain text", []byte("404 Not Found"), "text/plain", false},
		{"json", []byte(`{"title":"Not Found"}`), "application/json", false},
		{"no title", []byte("<html><body><h1>404 Not Found</h1></body></html>"), "text/html", false},
		{"empty title", page(""), "text/html", false},
		{"title in a script only", []byte("<html><script>document.title='Not Found'</script></html>"), "text/html", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, got := IsErrorPage(tt.body, tt.contentType, DefaultSoftErrorMax)
			if got != tt.want {
				t.Errorf("IsErrorPage = %v (%s), want %v", got, reason, tt.want)
			}
			if got && reason == "" {
				t.Error("no reason given")
			}
		})
	}
	if _, got := IsErrorPage(page("404"), "text/html", 0); got {
		t.Error("maxBytes 0 must turn the check off")
	}
}

// memento is one entry of the EDGI corpus' mementos.json.
type memento struct {
	File          string `json:"file"`
	URL           string `json:"url"`
	Status        int    `json:"wayback_status"`
	ContentType   string `json:"content_type"`
	Bytes         int    `json:"bytes"`
	dir, fullPath string
}

func loadMementos(t *testing.T) []memento {
	t.Helper()
	root := testenv.Corpus(t, "versions", "edgi-wayback-mementos")
	manifests, _ := filepath.Glob(filepath.Join(root, "*", "mementos.json"))
	if len(manifests) == 0 {
		t.Fatalf("no mementos.json under %s", root)
	}
	var all []memento
	for _, m := range manifests {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var ms []memento
		if err := json.Unmarshal(b, &ms); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for i := range ms {
			ms[i].dir = filepath.Base(filepath.Dir(m))
			ms[i].fullPath = filepath.Join(filepath.Dir(m), ms[i].File)
		}
		all = append(all, ms...)
	}
	return all
}

// TestFetchWaybackMementos serves the real captures of the EDGI corpus
// with the status they were captured with: the 403, 404 and 429 captures
// (and the 301s, served without Location) must be errors, never versions;
// the 200 pages must come through, none mistaken for an error page.
func TestFetchWaybackMementos(t *testing.T) {
	ms := loadMementos(t)
	byPath := map[string]memento{}
	for i, m := range ms {
		byPath[fmt.Sprintf("/m/%d", i)] = m
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		m, ok := byPath[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		body, err := os.ReadFile(m.fullPath)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", m.ContentType)
		w.WriteHeader(m.Status)
		w.Write(body)
	})
	f := testFetcher(t)
	counts := map[int]int{}
	for i, m := range ms {
		name := m.dir + "/" + m.File
		counts[m.Status]++
		res, err := f.Fetch(t.Context(), Request{URL: fmt.Sprintf("%s/m/%d", srv.URL, i)})
		switch {
		case m.Status >= 300:
			var he *HTTPError
			if !errors.As(err, &he) || he.StatusCode != m.Status {
				t.Errorf("%s (status %d): err = %v, want *HTTPError %d", name, m.Status, err, m.Status)
			}
			if he != nil && he.Throttled() != (m.Status == 429) {
				t.Errorf("%s: Throttled() = %v", name, he.Throttled())
			}
		case m.Bytes == 0:
			if !errors.Is(err, ErrEmptyBody) {
				t.Errorf("%s: empty capture: err = %v, want ErrEmptyBody", name, err)
			}
		default:
			if err != nil {
				t.Errorf("%s (status 200): %v", name, err)
				continue
			}
			if len(res.Raw) != m.Bytes || !utf8.Valid(res.Body) {
				t.Errorf("%s: Raw %d bytes (want %d), Body valid UTF-8: %v", name, len(res.Raw), m.Bytes, utf8.Valid(res.Body))
			}
		}
	}
	for _, code := range []int{403, 404, 429} {
		if counts[code] == 0 {
			t.Errorf("corpus has no %d capture any more", code)
		}
	}
	t.Logf("served %d captures by status: %v", len(ms), counts)
}

// TestWaybackErrorBodiesServedAs200 serves the error captures' bodies
// with status 200, as a misconfigured server would. The small stock error
// pages must be caught as soft errors; the large, site-styled 404 pages
// are beyond the conservative size rule and get through (on purpose).
func TestWaybackErrorBodiesServedAs200(t *testing.T) {
	caught, passed := 0, 0
	for _, m := range loadMementos(t) {
		if m.Status < 400 {
			continue
		}
		body, err := os.ReadFile(m.fullPath)
		if err != nil {
			t.Fatal(err)
		}
		reason, isErr := IsErrorPage(body, m.ContentType, DefaultSoftErrorMax)
		small := len(body) <= DefaultSoftErrorMax
		if small && !isErr {
			t.Errorf("%s/%s (%d bytes, was %d): not recognised as an error page", m.dir, m.File, len(body), m.Status)
		}
		if !small && isErr {
			t.Errorf("%s/%s: %d bytes is over the limit but judged an error page", m.dir, m.File, len(body))
		}
		if isErr {
			caught++
			t.Logf("caught %s (%d): %s", m.File, m.Status, reason)
		} else {
			passed++
		}
	}
	if caught == 0 {
		t.Error("no error capture was caught")
	}
	t.Logf("%d small error pages caught, %d large ones let through", caught, passed)
}

// TestIsErrorPageRealPages checks the rules against real pages: none of
// the readability corpus' pages or the 200 mementos is an error page.
func TestIsErrorPageRealPages(t *testing.T) {
	root := testenv.Corpus(t, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(root, "*", "source.html"))
	if len(files) == 0 {
		t.Fatalf("no pages under %s", root)
	}
	for _, m := range loadMementos(t) {
		if m.Status == 200 {
			files = append(files, m.fullPath)
		}
	}
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if reason, bad := IsErrorPage(body, "text/html", DefaultSoftErrorMax); bad {
			t.Errorf("%s judged an error page: %s", file, reason)
		}
	}
	t.Logf("%d real pages, none judged an error page", len(files))
}
