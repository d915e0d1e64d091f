package pet

import (
	"context"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bolt "go.etcd.io/bbolt"
)

// Newest first, without ordering every hit. To order hits the index
// reads each one's order key from its doc values, which it keeps in
// compressed chunks: for a word on a hundred thousand segments that is
// most of the search. A search with many hits is first counted (the
// count reads no doc values), then ordered within a window of the
// newest hours of the store's span, a window expected to hold a few
// times the hits a page needs; the window is widened when it holds too
// few. The window is a set of first-seen bucket terms (fFirst), so
// every hit outside it is older than every hit inside, and the page is
// what ordering all hits would give.

const (
	// windowedHits is the hit count from which a search is ordered
	// within a window: below it, ordering every hit costs less than a
	// second query. Hits spread over the index are each in a chunk of
	// their own, a chunk inflated for every hit.
	windowedHits = 200
	// windowSlack is how many times the page's hits a window is
	// expected to hold, if hits were spread evenly over the span.
	windowSlack = 4
	// windowGrowth is how much a window too small is widened.
	windowGrowth = 8
)

// searchNewest runs the conjunction conj, with the segments first seen at
// or before until when it is not zero, newest first. It gives the hits
// from..from+size, the count of all hits and the analyzer of the text
// field.
func (s *Store) searchNewest(ctx context.Context, conj []query.Query, until time.Time, from, size int) (search.DocumentMatchCollection, uint64, analysis.Analyzer, error) {
	lo, last := s.timeSpan()
	// and asks for the hits of conj and q, newest first: size of them
	// from from (none: a count).
	and := func(q query.Query, from, size int) (*bleve.SearchResult, analysis.Analyzer, error) {
		qs := conj
		if q != nil {
			qs = append(conj[:len(conj):len(conj)], q)
		}
		req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(qs...), size, from, false)
		req.Score = bleve.ScoreNone
		return s.searchIndex(ctx, req)
	}
	var first query.Query // first seen at or before until
	if !until.IsZero() {
		first = anyTerm(fFirst, cover(lo, until))
	}
	full := func() (search.DocumentMatchCollection, uint64, analysis.Analyzer, error) {
		res, a, err := and(first, from, size)
		if err != nil {
			return nil, 0, nil, err
		}
		return res.Hits, res.Total, a, nil
	}
	res, _, err := and(first, 0, 0)
	if err != nil {
		return nil, 0, nil, err
	}
	total := res.Total
	need := uint64(from + size)
	if total < windowedHits || total <= windowSlack*need {
		return full()
	}
	hi := last
	if !until.IsZero() && until.Before(hi) {
		hi = until
	}
	span := hi.Sub(lo)
	width := time.Duration(float64(span) * float64(windowSlack*need) / float64(total))
	for width < span/2 {
		// The hours from the one holding hi-width to the one holding hi,
		// which are within until's: the window is asked in place of until.
		res, a, err := and(anyTerm(fFirst, cover(hi.Add(-width), hi)), from, size)
		if err != nil {
			return nil, 0, nil, err
		}
		if res.Total >= need {
			// Every hit stored since is in the window when the span's end
			// did not move past its last hour: a version is in the store,
			// and its time in the span, before it is in the index.
			if _, now := s.timeSpan(); hi.Before(last) || now.Before(hi.Truncate(time.Hour).Add(time.Hour)) {
				s.windowed.Add(1)
				return res.Hits, max(total, res.Total), a, nil
			}
			break
		}
		// Wider by what the window held, as if hits were spread evenly
		// over it.
		grow := float64(windowGrowth)
		if res.Total > 0 {
			grow = min(max(2, float64(windowSlack*need)/float64(res.Total)), 4*windowGrowth)
		}
		width = time.Duration(float64(width) * grow)
	}
	return full()
}

// timeSpan returns the oldest and newest fetch times ever stored.
func (s *Store) timeSpan() (lo, hi time.Time) {
	s.db.View(func(tx *bolt.Tx) error {
		lo, hi = timeSpan(tx)
		return nil
	})
	return lo, hi
}
