package segmenter_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/changedigest/changedigest/internal/pdftest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/internal/textdiff"
	"github.com/changedigest/changedigest/segmenter"
)

// TestPDFOfCorpusPages: the visible text of real consecutive versions of
// a page, laid out as PDFs of many pages, is compared as the text itself
// is: the words that changed between the texts are in its changes (all
// but where two equal lines make which one changed a choice), and each
// change says on which page it is.
func TestPDFOfCorpusPages(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	dir := testenv.Corpus(t, "versions", "nltk-release-notes")
	files, _ := filepath.Glob(filepath.Join(dir, "*.html"))
	slices.Sort(files)
	if len(files) < 6 {
		t.Skipf("%s has %d versions", dir, len(files))
	}
	pairs := 0
	for i := 0; i+1 < len(files) && pairs < 5; i += max(1, len(files)/6) {
		oldText, newText := visibleLines(t, files[i]), visibleLines(t, files[i+1])
		if oldText == newText {
			continue
		}
		pairs++
		d, err := segmenter.New().Diff(pdfOf(oldText), pdfOf(newText), "")
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(files[i+1]), err)
		}
		var oldWords, newWords []string
		kinds := map[string]int{}
		for _, c := range d.Changes {
			kinds[string(c.Type)+" "+string(c.Op)]++
			if !strings.HasPrefix(c.Where, "on page ") {
				t.Errorf("%s: a change placed %q, want on a page: %+v", filepath.Base(files[i+1]), c.Where, c)
			}
			// A word that only changed a part shows as that part, with
			// the rest of it around: the words are read with it.
			if c.OldText != "" {
				oldWords = append(oldWords, strings.Fields(c.Before+c.OldText+c.After)...)
			}
			if c.NewText != "" {
				newWords = append(newWords, strings.Fields(c.Before+c.NewText+c.After)...)
			}
		}
		missed, want := 0, 0
		for _, e := range textdiff.WordDiff(oldText, newText) {
			var pool *[]string
			switch e.Op {
			case textdiff.Delete:
				pool = &oldWords
			case textdiff.Insert:
				pool = &newWords
			default:
				continue
			}
			for _, w := range strings.Fields(e.Text) {
				want++
				if !slices.ContainsFunc(*pool, func(x string) bool { return strings.Contains(x, w) }) {
					missed++
					t.Logf("missed %s %q in %q", e.Op, w, e.Text)
				}
			}
		}
		t.Logf("%s: %d changes %v, %d of %d changed words found", filepath.Base(files[i+1]),
			len(d.Changes), kinds, want-missed, want)
		// Which of two equal lines is the new one is the comparison's
		// choice (a header line added, a footer with the same words
		// told as the one that went): a few words may be told so.
		if want > 0 && missed*20 > want {
			t.Errorf("%s: %d of %d changed words not in any change", filepath.Base(files[i+1]), missed, want)
		}
	}
	if pairs == 0 {
		t.Fatal("no pair of versions with a different text")
	}
}

// pdfPageLines is the lines of text on a page of pdfOf.
const pdfPageLines = 45

// pdfOf lays text out as a PDF: lines of at most 80 characters, 45 a page.
func pdfOf(text string) []byte {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		for len(l) > 80 {
			cut := strings.LastIndexByte(l[:80], ' ')
			if cut <= 0 {
				cut = 80
			}
			lines = append(lines, l[:cut])
			l = strings.TrimLeft(l[cut:], " ")
		}
		lines = append(lines, l)
	}
	var pages []string
	for len(lines) > 0 {
		n := min(len(lines), pdfPageLines)
		pages = append(pages, strings.Join(lines[:n], "\n"))
		lines = lines[n:]
	}
	return pdftest.Pages(pages...)
}

// visibleLines is the visible text of a page, a line per block, blank
// lines between blocks, in the characters a standard PDF font draws.
func visibleLines(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	z := html.NewTokenizer(bytes.NewReader(b))
	var out, line strings.Builder
	skip := 0
	flush := func() {
		if l := strings.Join(strings.Fields(line.String()), " "); l != "" {
			out.WriteString(l)
			out.WriteString("\n\n")
		}
		line.Reset()
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			flush()
			return strings.Map(func(r rune) rune {
				if r > 0xff {
					return '?'
				}
				return r
			}, out.String())
		case html.StartTagToken, html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "head", "noscript", "template":
				if z.Token().Type == html.StartTagToken {
					skip++
				} else if skip > 0 {
					skip--
				}
			case "p", "div", "li", "dt", "dd", "h1", "h2", "h3", "h4", "tr", "br", "section", "pre":
				flush()
			}
		case html.TextToken:
			if skip == 0 {
				line.Write(z.Text())
				line.WriteByte(' ')
			}
		}
	}
}
