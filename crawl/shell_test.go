package crawl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/segmenter"
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
	seg := segmenter.New()
	for _, tc := range tests {
		if got := crawl.LooksLikeShell([]byte(tc.body), tc.ctype); got != tc.want {
			t.Errorf("%s: LooksLikeShell = %v, want %v", tc.name, got, tc.want)
		}
		if !strings.HasPrefix(tc.ctype, "text/html") {
			continue
		}
		// The segmenter's reading of the page, which the pipeline uses,
		// tells the same.
		snap, err := seg.DetectPage(segmenter.Input{Body: []byte(tc.body)})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Weight == nil || crawl.ShellWeight(*snap.Weight) != tc.want {
			t.Errorf("%s: the segmenter's weight %+v does not tell %v", tc.name, snap.Weight, tc.want)
		}
	}
}

// TestSegmenterWeighsAsPageWeight: the weight the segmenter finds as it
// scans a page (what the pipeline tells shells by) is the one PageWeight
// reads, on every real page of the corpus and on pages made to try the
// rules' corners.
func TestSegmenterWeighsAsPageWeight(t *testing.T) {
	bodies := map[string][]byte{
		"script then text":     []byte(`<script>var a = "<p>x</p>";</script><p>seen text</p>`),
		"empty script":         []byte(`<script></script><p>after</p><script src=" "></script><script src=a.js>x</script>`),
		"self-closed script":   []byte(`<script src="a.js"/><p>text</p><style>p{}</style>`),
		"unseen tags":          []byte(`<title>T i t l e</title><noscript><p>enable scripts</p></noscript><template><p>later</p></template><style>b{}</style><p>s e e n</p></noscript></noscript><p>more</p>`),
		"entities and spaces":  []byte("<p>&amp; &nbsp; caf&eacute;\t\u00a0x</p><textarea> in a box </textarea><iframe>fallback</iframe>"),
		"svg title and script": []byte(`<svg><title>icon</title><script>go()</script></svg><p>after svg</p>`),
		"unclosed script":      []byte(`<p>before</p><script>never closed`),
		"uppercase":            []byte(`<SCRIPT SRC="x.js"></SCRIPT><TITLE>t</TITLE><P>Text</P>`),
	}
	for _, dir := range []string{
		testenv.Corpus(t, "pages", "readability", "pages"),
		testenv.Corpus(t, "versions"),
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*", "*.html"))
		if err != nil {
			t.Fatal(err)
		}
		more, _ := filepath.Glob(filepath.Join(dir, "*", "versions", "*.html"))
		for i, f := range append(files, more...) {
			if i%4 != 0 && strings.Contains(f, "versions") {
				continue // a quarter of the versions: their pages repeat
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if utf8.Valid(b) {
				bodies[f] = b
			}
		}
	}
	if len(bodies) < 100 {
		t.Fatalf("only %d pages to weigh", len(bodies))
	}
	t.Logf("weighing %d pages", len(bodies))
	seg := segmenter.New()
	for name, b := range bodies {
		snap, err := seg.DetectPage(segmenter.Input{Body: b})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := crawl.PageWeight(b); snap.Weight == nil || *snap.Weight != want {
			t.Errorf("%s: the segmenter weighs %+v, PageWeight %+v", name, snap.Weight, want)
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
