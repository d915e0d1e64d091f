package profile

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

func terms(in []changedigest.Interest) []string {
	out := make([]string, len(in))
	for i, t := range in {
		out[i] = t.Term
	}
	return out
}

func TestKeyTerms(t *testing.T) {
	climbing := `Rock climbing in the Peak District. We went rock climbing at Stanage Edge on Saturday:
		gritstone routes, cams and nuts. Rock climbing on gritstone needs good friction; the gritstone was dry.
		Belay devices, ropes and harnesses were checked. Click here to read more. Posted in Climbing.`
	compilers := `Compilers translate source code. A compiler front end parses the source code into a syntax
		tree; the back end emits machine code. Register allocation and instruction selection are classic
		compiler problems. Optimising compilers use static single assignment form.`
	tests := []struct {
		name  string
		texts []string
		n     int
		want  []string // must be among the terms
		not   []string // must not be
	}{
		{"phrases recur", []string{climbing}, 8, []string{"rock climbing", "gritstone"}, []string{"click", "read", "posted", "the", "rock"}},
		{"plurals fold", []string{compilers}, 8, []string{"compiler", "source code"}, []string{"compilers"}},
		{"two texts", []string{climbing, compilers}, 10, []string{"rock climbing", "compiler"}, nil},
		{"stop words only", []string{"The and of to in that it is was for on are with as."}, 5, nil, []string{"the", "and"}},
		{"empty", []string{"", "   "}, 5, nil, nil},
		{"no texts", nil, 5, nil, nil},
		{"n is zero", []string{climbing}, 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := KeyTerms(tt.texts, tt.n)
			t.Logf("%v", got)
			if len(got) > tt.n {
				t.Errorf("%d terms, want at most %d", len(got), tt.n)
			}
			set := map[string]bool{}
			for i, k := range got {
				set[k.Term] = true
				if k.Source != changedigest.SourcePage || k.Weight <= 0 || k.Weight >= 1 || k.URI != "" {
					t.Errorf("term %+v: want Source page, 0 < Weight < 1, no URI", k)
				}
				if i > 0 && got[i-1].Weight < k.Weight {
					t.Errorf("terms not in order of weight: %v", got)
				}
				for _, w := range strings.Fields(k.Term) {
					if stopWords()[w] {
						t.Errorf("term %q holds the stop word %q", k.Term, w)
					}
				}
			}
			for _, w := range tt.want {
				if !set[w] {
					t.Errorf("%q missing from %v", w, terms(got))
				}
			}
			for _, w := range tt.not {
				if set[w] {
					t.Errorf("%q should not be a key term: %v", w, terms(got))
				}
			}
		})
	}
}

func TestKeyTermsCommonWordsRankLow(t *testing.T) {
	// "people" and "water" are common in the glosses, "photosynthesis"
	// and "chlorophyll" rare: at equal counts the rare words win.
	text := strings.Repeat("people. water. photosynthesis. chlorophyll. ", 3)
	got := terms(KeyTerms([]string{text}, 4))
	if len(got) != 4 {
		t.Fatalf("got %v", got)
	}
	rank := map[string]int{}
	for i, w := range got {
		rank[w] = i
	}
	for _, rare := range []string{"photosynthesis", "chlorophyll"} {
		for _, common := range []string{"people", "water"} {
			if rank[rare] > rank[common] {
				t.Errorf("%q ranks below %q: %v", rare, common, got)
			}
		}
	}
}

var tagRE = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)

// corpusTexts returns the text of the readability corpus's extracted
// articles (expected.html with tags removed), up to about limit bytes.
func corpusTexts(tb testing.TB, limit int) []string {
	tb.Helper()
	dir := testenv.Corpus(tb, "pages", "readability", "pages")
	files, err := filepath.Glob(filepath.Join(dir, "*", "expected.html"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no articles in %s: %v", dir, err)
	}
	sort.Strings(files)
	var texts []string
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		text := strings.Join(strings.Fields(tagRE.ReplaceAllString(string(data), " ")), " ")
		texts = append(texts, text)
		total += len(text)
		if total >= limit {
			break
		}
	}
	return texts
}

// TestKeyTermsOnArticles prints the key terms of a few real articles.
func TestKeyTermsOnArticles(t *testing.T) {
	for i, text := range corpusTexts(t, 40000) {
		got := KeyTerms([]string{text}, 8)
		if len(text) > 2000 && len(got) == 0 {
			t.Errorf("article %d (%d bytes): no key terms", i, len(text))
		}
		var parts []string
		for _, k := range got {
			parts = append(parts, k.Term)
		}
		t.Logf("article %d (%d bytes, %.40q…): %s", i, len(text), text, strings.Join(parts, ", "))
	}
}

func BenchmarkKeyTerms100KB(b *testing.B) {
	texts := corpusTexts(b, 100<<10)
	size := 0
	for _, t := range texts {
		size += len(t)
	}
	b.SetBytes(int64(size))
	loadBackground()
	b.ReportAllocs()
	for b.Loop() {
		KeyTerms(texts, 20)
	}
}

func TestPluralFolds(t *testing.T) {
	words := []string{"bees", "physics", "boxes", "series", "parsers", "news", "technologies", "graphs", "churches", "glass", "gas", "kubernetes", "mites", "notes"}
	inText := func(w string) bool { return w == "note" }
	got := pluralFolds(inText, words, loadBackground())
	want := map[string]string{"bees": "bee", "boxes": "box", "parsers": "parser", "technologies": "technology",
		"graphs": "graph", "churches": "church", "mites": "mite", "notes": "note"}
	for _, w := range words {
		if got[w] != want[w] {
			t.Errorf("%q folds to %q, want %q", w, got[w], want[w])
		}
	}
}
