package pet

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
)

// indexMarks runs text as a search over texts in an index of their own,
// asking the index for its term locations, and gives each hit's spans
// as the index places them.
func indexMarks(t testing.TB, idx bleve.Index, text string, n int) map[string][]Span {
	t.Helper()
	req := bleve.NewSearchRequestOptions(textQuery(text), n, 0, false)
	req.IncludeLocations = true
	res, err := idx.Search(req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Span{}
	for _, h := range res.Hits {
		var spans []Span
		for _, locs := range h.Locations[fText] {
			for _, l := range locs {
				spans = append(spans, Span{int(l.Start), int(l.End)})
			}
		}
		slices.SortFunc(spans, func(a, b Span) int { return a.Start - b.Start })
		out[h.ID] = slices.Compact(spans)
	}
	return out
}

func marksIndex(t testing.TB, texts []string) (bleve.Index, analysis.Analyzer) {
	t.Helper()
	idx, err := bleve.NewMemOnly(indexMapping())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	b := idx.NewBatch()
	for i, s := range texts {
		if err := b.Index(fmt.Sprint(i), map[string]any{fText: s}); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Batch(b); err != nil {
		t.Fatal(err)
	}
	m := idx.Mapping()
	return idx, m.AnalyzerNamed(m.AnalyzerNameForPath(fText))
}

// compareMarks checks that marks gives every hit of text the spans the
// index gives it.
func compareMarks(t *testing.T, idx bleve.Index, a analysis.Analyzer, texts []string, text string) int {
	t.Helper()
	want := indexMarks(t, idx, text, len(texts))
	m := newMarks(a, text)
	for id, spans := range want {
		var i int
		fmt.Sscan(id, &i)
		if got := m.spans(a, texts[i]); !reflect.DeepEqual(got, spans) {
			t.Errorf("search %q in %q:\nmarks %v\nindex %v", text, texts[i], got, spans)
		}
	}
	return len(want)
}

func TestMarks(t *testing.T) {
	texts := []string{
		"The bridge reopened after repairs to the river wall",
		"The river, the river wall and the river's bridge",
		"Repairs: the wall by the river; river walls repaired",
		"Évolution du pont — the bridge over the Seine, 5 < 6",
		"wall river wall river wall",
	}
	idx, a := marksIndex(t, texts)
	for _, q := range []string{
		"bridge", "river wall", `"river wall"`, `"repairs to the river"`, `"the river"`,
		`bridge "river wall"`, `"wall river" wall`, "évolution pont", `"river's bridge"`,
		`"wall river wall"`, "repaired", "the of",
	} {
		compareMarks(t, idx, a, texts, q)
	}
	got := newMarks(a, `"repairs to the river"`).spans(a, texts[0])
	if want := []Span{{26, 33}, {41, 46}}; !reflect.DeepEqual(got, want) {
		t.Errorf("phrase across stop words marks %v, want %v", got, want)
	}
}

// TestMarksAsIndexLocations compares the marks with the index's own term
// locations over real sentences, for words, several words and phrases.
func TestMarksAsIndexLocations(t *testing.T) {
	sentences := corpusSentences(t)
	r := rand.New(rand.NewPCG(3, 3))
	texts := make([]string, 0, 3000)
	for range cap(texts) {
		texts = append(texts, sentences[r.IntN(len(sentences))])
	}
	idx, a := marksIndex(t, texts)
	hits := 0
	for i := range 600 {
		f := strings.Fields(texts[r.IntN(len(texts))])
		word := func() string { return f[r.IntN(len(f))] }
		phrase := func() string {
			n := min(len(f), 2+r.IntN(3))
			k := r.IntN(len(f) - n + 1)
			return `"` + strings.ReplaceAll(strings.Join(f[k:k+n], " "), `"`, "") + `"`
		}
		var q string
		switch i % 4 {
		case 0:
			q = word()
		case 1:
			q = word() + " " + word()
		case 2:
			q = phrase()
		case 3:
			q = phrase() + " " + word()
		}
		hits += compareMarks(t, idx, a, texts, q)
	}
	if hits < 1000 {
		t.Errorf("only %d hits compared", hits)
	}
	t.Logf("%d hits compared", hits)
}
