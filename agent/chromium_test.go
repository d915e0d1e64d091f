package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest/internal/testenv"
)

// runChromium opens url in headless Chromium and waits for it to load
// and idle (the digester runs then).
func runChromium(t *testing.T, bin, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=10000", "--dump-dom", url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, clip(string(out)))
	}
}

// chromiumPages serves pages from the corpus with the digester agent in
// them and the pages' own scripts blocked (as in Go, the summary is of
// the page as served), and returns the summaries the agent reported.
type chromiumSite struct {
	srv     *httptest.Server
	pages   map[string][]byte
	reports chan [2]string
}

func newChromiumSite(t *testing.T, pages map[string][]byte) *chromiumSite {
	s := &chromiumSite{pages: pages, reports: make(chan [2]string, 16)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/agent.js":
			w.Header().Set("Content-Type", "text/javascript")
			w.Write(digesterAgent(s.srv.URL+"/report", "tok"))
		case r.URL.Path == "/report" && r.Method == http.MethodPost:
			r.ParseForm()
			s.reports <- [2]string{r.PostForm.Get("u"), r.PostForm.Get("s")}
			w.WriteHeader(http.StatusAccepted)
		case s.pages[r.URL.Path] != nil:
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Security-Policy", "default-src 'none'; connect-src 'self'; script-src "+s.srv.URL+"/agent.js")
			body := s.pages[r.URL.Path]
			w.Write(body)
			w.Write([]byte(`<script async src="` + s.srv.URL + `/agent.js"></script>`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *chromiumSite) summary(t *testing.T, bin, path string) (Summary, bool) {
	t.Helper()
	runChromium(t, bin, s.srv.URL+path)
	select {
	case r := <-s.reports:
		if r[0] != s.srv.URL+path {
			t.Errorf("%s: the agent reported URL %q", path, r[0])
		}
		sum, err := ParseSummary(r[1])
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return sum, true
	case <-time.After(5 * time.Second):
		return Summary{}, false
	}
}

// TestDigestsEqualInChromium runs the digester agent in headless Chromium
// on corpus pages and checks it reports the summary Summarize computes
// in Go. CHANGEDIGEST_AGENT_ALL=1 runs every page (else a sample of 12).
func TestDigestsEqualInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs Chromium")
	}
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	bin := testenv.Tool(t, "chromium")
	names, err := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no corpus pages in %s: %v", dir, err)
	}
	sort.Strings(names)
	if os.Getenv("CHANGEDIGEST_AGENT_ALL") == "" {
		var some []string
		for i := 0; i < len(names); i += len(names) / 12 {
			some = append(some, names[i])
		}
		names = some
	}
	pages := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		pages["/"+filepath.Base(filepath.Dir(n))] = b
	}
	site := newChromiumSite(t, pages)
	var bad []string
	skipped := 0
	for _, n := range names {
		path := "/" + filepath.Base(filepath.Dir(n))
		js, ok := site.summary(t, bin, path)
		if !ok {
			t.Errorf("%s: the agent sent no report", path)
			continue
		}
		// Where a page's bytes are not valid in its declared encoding, Go's
		// decoders and Chromium's map the invalid sequences differently
		// (U+FFFD against private-use characters): such pages are left out.
		if decoded, _ := io.ReadAll(decode(pages[path], "text/html")); bytes.Count(decoded, []byte("\uFFFD")) > bytes.Count(pages[path], []byte("\uFFFD")) {
			t.Logf("%s: not valid in its declared encoding; left out", path)
			skipped++
			continue
		}
		// The agent's own script element is skipped, so it does not count.
		goSum := Summarize(pages[path], "text/html")
		if js != goSum {
			bad = append(bad, fmt.Sprintf("%s differs in %s", path, strings.Join(js.Parts(goSum), ", ")))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d pages: Chromium and Go summaries differ:\n%s", len(bad), len(names), strings.Join(bad, "\n"))
	}
	t.Logf("%d pages: %d with equal summaries, %d differ, %d left out", len(names), len(names)-len(bad)-skipped, len(bad), skipped)
}
