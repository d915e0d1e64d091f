package pet

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/segmenter"
)

// sameTokens fails the test when wordTokenizer and Bleve's unicode
// tokenizer do not give the same tokens for text.
func sameTokens(t testing.TB, text string) {
	t.Helper()
	in := []byte(text)
	want := unicode.NewUnicodeTokenizer().Tokenize(in)
	got := (&wordTokenizer{unicode: unicode.NewUnicodeTokenizer()}).Tokenize(in)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	deref := func(ts analysis.TokenStream) []analysis.Token {
		out := make([]analysis.Token, len(ts))
		for i, tk := range ts {
			out[i] = *tk
		}
		return out
	}
	if g, w := deref(got), deref(want); !reflect.DeepEqual(g, w) {
		for i := range min(len(g), len(w)) {
			if !reflect.DeepEqual(g[i], w[i]) {
				t.Fatalf("%q: token %d is %+v (%q), Bleve's %+v (%q)", clipText(text), i, g[i], g[i].Term, w[i], w[i].Term)
			}
		}
		t.Fatalf("%q: %d tokens, Bleve's %d", clipText(text), len(g), len(w))
	}
}

func clipText(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func TestWordTokenizer(t *testing.T) {
	for _, s := range []string{
		"", " ", "a", "_", "__", "1", "a1", "1a", "a.b", "a.1", "1.a", "1.5", "1,000.50", "a:b", "1:2", "a,b", "can't", "'a'", "a'", "3'4",
		"e.g.", "U.S.A.", "x_1", "_x_", "a_.b", "a._b", "1_000", "a__b", "foo-bar", "foo--bar", "a;b", "1;2", "...", "a..b", "1..2",
		"The quick brown fox, 3.14 times: don't_stop; v1.2.3-beta (see #42) @user email@example.com http://x.org/a_b?c=1&d=2",
		"tab\tsep\nline\r\nwin\vvt\fff", "café au lait", "naïve's co-op", "“quoted” — dash", "日本語のテキスト", "emoji 👍🏽 ok", "a\u0301b", " \u0301x", "ZWJ \u200d👍 x",
		"1\u00a0000", "x\u2019s", "\u05d0\"\u05d1", "mixed ascii and ünïcödé runs 12,5 € and 3.5%",
	} {
		sameTokens(t, s)
	}
}

// TestWordTokenizerRandom compares the tokenizers on random strings of
// characters from every word class, ASCII and not.
func TestWordTokenizerRandom(t *testing.T) {
	alphabet := []string{"a", "Z", "q", "0", "7", "_", ":", ",", ";", ".", "'", "\"", "-", " ", "\t", "\n", "\r", "!", "/", "é", "ß", "\u2019", "\u00a0", "\u0301", "日", "ア", "👍", "\u200d", "٣", "\u05d0", "\u2018"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(24) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		sameTokens(t, b.String())
	}
}

// TestWordTokenizerCorpus compares the tokenizers on the segment texts of
// real pages.
func TestWordTokenizerCorpus(t *testing.T) {
	texts := segmentTexts(t, 0)
	for _, text := range texts {
		sameTokens(t, string(text))
	}
	t.Logf("%d segment texts", len(texts))
}

// segmentTexts returns the segment texts of the first n readability pages
// of the corpus (of all of them when n <= 0), as the segmenter cuts them.
func segmentTexts(tb testing.TB, n int) [][]byte {
	tb.Helper()
	dir := testenv.Corpus(tb, "pages", "readability", "pages")
	files, err := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no pages in %s: %v", dir, err)
	}
	if n > 0 {
		files = files[:min(n, len(files))]
	}
	seg := segmenter.New()
	var texts [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		if snap, err := seg.Detect(segmenter.Input{Body: b}); err == nil {
			for _, s := range snap.Segments {
				texts = append(texts, []byte(s.Text))
			}
		}
	}
	return texts
}

func FuzzWordTokenizer(f *testing.F) {
	for _, s := range []string{"can't stop 3.14", "a_.b 1,000", "café’s naïve", "x\u0301y z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { sameTokens(t, s) })
}

// BenchmarkWordTokenizer tokenizes the segment texts of a real page with
// wordTokenizer and with Bleve's unicode tokenizer.
func BenchmarkWordTokenizer(b *testing.B) {
	body, err := os.ReadFile(testenv.Corpus(b, "pages", "readability", "pages", "002", "source.html"))
	if err != nil {
		b.Fatal(err)
	}
	snap, err := segmenter.New().Detect(segmenter.Input{Body: body})
	if err != nil {
		b.Fatal(err)
	}
	var texts [][]byte
	size := 0
	for _, s := range snap.Segments {
		texts = append(texts, []byte(s.Text))
		size += len(s.Text)
	}
	for _, tc := range []struct {
		name string
		tok  analysis.Tokenizer
	}{
		{"words", &wordTokenizer{unicode: unicode.NewUnicodeTokenizer()}},
		{"bleve-unicode", unicode.NewUnicodeTokenizer()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, t := range texts {
					tc.tok.Tokenize(t)
				}
			}
		})
	}
}

// TestWordsAnalyzer: the index's analyzer gives the terms of Bleve's
// English analyzer on the segment texts of real pages, read by four
// goroutines at once, the second time from remembered stems.
func TestWordsAnalyzer(t *testing.T) {
	texts := segmentTexts(t, 40)
	cache := registry.NewCache()
	ours, err := cache.AnalyzerNamed(wordsAnalyzer)
	if err != nil {
		t.Fatal(err)
	}
	bleves, err := cache.AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		t.Fatal(err)
	}
	terms := func(ts analysis.TokenStream) []analysis.Token {
		out := make([]analysis.Token, len(ts))
		for i, tk := range ts {
			out[i] = *tk
		}
		return out
	}
	for round := range 2 {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < len(texts); i += 4 {
					got, want := terms(ours.Analyze(texts[i])), terms(bleves.Analyze(texts[i]))
					if !reflect.DeepEqual(got, want) {
						t.Errorf("round %d, text %q: %d tokens differ from Bleve's %d", round, clipText(string(texts[i])), len(got), len(want))
						return
					}
				}
			})
		}
		wg.Wait()
	}
	t.Logf("%d segment texts", len(texts))
}
