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

// FuzzMarksAsIndexLocations checks marks against the index's own term
// locations for any text and any search of words and phrases; pick, when
// not zero, also adds words of the text to the search, as a phrase or
// not, so that most inputs have a hit.
func FuzzMarksAsIndexLocations(f *testing.F) {
	f.Add("The bridge reopened after repairs to the river wall", `"repairs to the river" bridge`, uint16(0))
	f.Add("wall river wall river wall", `"wall river wall"`, uint16(0))
	f.Add("Évolution du pont — the river's bridge, 5 < 6", `"river's bridge" évolution`, uint16(0))
	f.Add("a.b c_d e'f 3.14 x-y", `"c_d e'f" 3.14`, uint16(0))
	f.Add("Pacific islands, the South Island's west coast", "", uint16(0x8123))
	f.Fuzz(func(t *testing.T, text, search string, pick uint16) {
		if len(text) > 2000 || len(search) > 200 {
			return
		}
		if w := strings.Fields(text); pick != 0 && len(w) > 0 {
			k := int(pick&0xff) % len(w)
			n := min(len(w)-k, 1+int(pick>>8&3))
			words := strings.ReplaceAll(strings.Join(w[k:k+n], " "), `"`, "")
			if pick&0x8000 != 0 {
				words = `"` + words + `"`
			}
			search += " " + words
		}
		if strings.TrimSpace(search) == "" {
			return
		}
		texts := []string{text}
		idx, a := marksIndex(t, texts)
		compareMarks(t, idx, a, texts, search)
	})
}
