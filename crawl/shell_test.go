package crawl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/testenv"
)

func TestLooksLikeShell(t *testing.T) {
	bundle := strings.Repeat("function f(a){return a+1};", 200) // 5 KB
	tests := []struct {
		name, ctype, body string
		want              bool
	}{
		{"single-page app with an external bundle", "text/html", `<!DOCTYPE html><html><head><title>Shop</title><script src="/app.js" defer></script></head><body><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript></body></html>`, true},
		{"inline bundle", "text/html; charset=utf-8", `<html><body><div id="app">Loading…</div><script>` + bundle + `</script></body></html>`, true},
		{"page with its text", "text/html", `<html><body><div id="app"><h1>Opening hours</h1><p>` + strings.Repeat("The pool opens at seven and closes at nine. ", 10) + `</p></div><script src="/app.js"></script></body></html>`, false},
		{"short page without scripts", "text/html", `<html><body><p>Coming soon.</p></body></html>`, false},
		{"short page with a small tracker", "text/html", `<html><body><p>Coming soon.</p><script>window.dataLayer=[];</script></body></html>`, false},
		{"feed", "application/atom+xml", `<feed xmlns="http://www.w3.org/2005/Atom"><script src="/x.js"></script></feed>`, false},
		{"no body tag, text after scripts", "text/html", `<script src="/a.js"></script><script src="/b.js"></script>` + strings.Repeat("<p>Real text of the page, enough of it to read. </p>", 10), false},
	}
	for _, tc := range tests {
		if got := crawl.LooksLikeShell([]byte(tc.body), tc.ctype); got != tc.want {
			t.Errorf("%s: LooksLikeShell = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLooksLikeShellCorpus: none of the real pages of the corpus, all of
// which show their text without scripts, is taken for a shell.
func TestLooksLikeShellCorpus(t *testing.T) {
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	files, err := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pages in %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if crawl.LooksLikeShell(b, "text/html") {
			t.Errorf("%s is taken for a shell", filepath.Base(filepath.Dir(f)))
		}
	}
}
