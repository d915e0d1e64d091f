package segmenter

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/changedigest/changedigest/internal/testenv"
	"golang.org/x/net/html"
)

func TestMainTextSmall(t *testing.T) {
	page := []byte(`<html><head><title>Title words here</title></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/a">About us</a></li><li><a href="/c">Contact</a></li></ul></nav>
<article>
<h1>Boats in winter</h1>
<p>The harbour was quiet this morning; only the ferry moved across the grey water while the gulls waited on every post for the fishing boats that would not come back before noon.</p>
<p>By noon the wind had turned and the rain came in from the sea, driving the last walkers off the pier and into the cafe by the lifeboat station, where the windows soon steamed up.</p>
</article>
<footer><p>Copyright 2024 <a href="/">Harbour notes</a> · <a href="/privacy">Privacy</a></p></footer>
</body></html>`)
	got := MainText(page)
	for _, want := range []string{"ferry moved across the grey water", "driving the last walkers off the pier"} {
		if !strings.Contains(got, want) {
			t.Errorf("main text lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"About us", "Copyright", "Privacy", "Title words"} {
		if strings.Contains(got, bad) {
			t.Errorf("main text keeps boilerplate %q:\n%s", bad, got)
		}
	}
	// A page that ends with its article keeps the last paragraph.
	noFooter := bytes.Replace(page, []byte("<footer>"), []byte("<!--"), 1)
	noFooter = bytes.Replace(noFooter, []byte("</footer>"), []byte("-->"), 1)
	if got := MainText(noFooter); !strings.Contains(got, "driving the last walkers off the pier") {
		t.Errorf("main text of a page without a footer lacks its last paragraph:\n%s", got)
	}
	for _, in := range []string{"", "\x89PNG\r\n\x1a\n", "no markup"} {
		if got := MainText([]byte(in)); in != "no markup" && got != "" {
			t.Errorf("MainText(%q) = %q", in, got)
		}
	}
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func parsedText(b []byte) string {
	root, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	var sb strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style") {
			return
		}
		if n.Type == html.TextNode {
			sb.WriteString(n.Data + " ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return sb.String()
}

// TestMainTextReadability compares MainText with the main text the
// readability test suite expects for each page (word bags: precision,
// recall), and with the whole page text as the baseline.
func TestMainTextReadability(t *testing.T) {
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	var ps, rs, bps []float64
	for _, f := range files {
		exp := mustRead(t, filepath.Join(filepath.Dir(f), "expected.html"))
		src := mustRead(t, f)
		want := words(parsedText(exp))
		if len(want) < 50 {
			continue
		}
		got := words(MainText(src))
		all := words(parsedText(src))
		p, r := overlap(got, want)
		bp, _ := overlap(all, want)
		ps, rs, bps = append(ps, p), append(rs, r), append(bps, bp)
	}
	mp, mr, mbp := median(ps), median(rs), median(bps)
	t.Logf("%d pages: median precision %.2f (whole page %.2f), median recall %.2f", len(ps), mp, mbp, mr)
	if mp < mbp+0.1 || mr < 0.8 {
		t.Errorf("main text no better than the whole page: precision %.2f (page %.2f), recall %.2f", mp, mbp, mr)
	}
}

// overlap is the precision and recall of bag got against bag want.
func overlap(got, want []string) (float64, float64) {
	if len(got) == 0 || len(want) == 0 {
		return 0, 0
	}
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	i, j, n := 0, 0, 0
	for i < len(g) && j < len(w) {
		switch {
		case g[i] == w[j]:
			n++
			i++
			j++
		case g[i] < w[j]:
			i++
		default:
			j++
		}
	}
	return float64(n) / float64(len(g)), float64(n) / float64(len(w))
}
