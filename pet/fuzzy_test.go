package pet

import (
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// TestFuzzyQuery runs fuzzy queries of edit distance 1 and 2 on a scorch
// index: the automata behind them are built on first use (the vellum
// kept in third_party), not at start-up, and must work when they are.
func TestFuzzyQuery(t *testing.T) {
	idx, err := bleve.NewUsing(t.TempDir(), bleve.NewIndexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	if err := idx.Index("a", map[string]any{"text": "the municipality published its agenda"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		term      string
		fuzziness int
		hits      uint64
	}{
		{"agneda", 2, 1}, {"agend", 1, 1}, {"municipalty", 1, 1}, {"calendar", 2, 0},
	} {
		q := bleve.NewFuzzyQuery(tc.term)
		q.SetFuzziness(tc.fuzziness)
		res, err := idx.Search(bleve.NewSearchRequest(q))
		if err != nil || res.Total != tc.hits {
			t.Errorf("fuzzy %q (distance %d): %v hits, %v; want %d", tc.term, tc.fuzziness, res, err, tc.hits)
		}
	}
}
