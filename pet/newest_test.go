package pet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/changedigest/changedigest"
)

// TestSearchNewestInAWindow checks that a search ordered within a window
// of the newest hours gives the page, and the count, that ordering every
// hit gives: for words spread evenly, words whose hits thin out or stop
// in the recent hours, on any page, for all users and for one.
func TestSearchNewestInAWindow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	watches := []*changedigest.Watch{f.watch, f.mustWatch(t, bob.ID, "https://example.com/")}
	const versions, perVersion = 48, 100
	for v := range versions {
		// Forty versions over most of a year, then eight within hours.
		step := 7 * 24 * time.Hour
		if v >= 40 {
			step = 25 * time.Minute
		}
		snap := &changedigest.Snapshot{Status: 200, Kind: changedigest.KindPage, FetchedAt: f.clock.Add(step)}
		var body strings.Builder
		for i := range perVersion {
			words := []string{"alpha", fmt.Sprintf("v%dp%d", v, i)}
			if v < 40 || i == 0 {
				words = append(words, "beta") // thins out to one a version
			}
			if v < 30 {
				words = append(words, "gamma") // stops
			}
			if i%50 == 7 {
				words = append(words, "delta") // few
			}
			text := strings.Join(words, " ")
			st := body.Len()
			fmt.Fprintf(&body, "<p>%s</p>\n", text)
			snap.Segments = append(snap.Segments, changedigest.Segment{Index: i, Hash: md5hex([]byte(text)),
				Path: fmt.Sprintf("p[%d]", i), Text: text, Start: st, End: body.Len() - 1})
		}
		if _, err := f.s.AddVersion(ctx, watches[v%2].ID, snap, []byte(body.String())); err != nil {
			t.Fatal(err)
		}
	}
	// A search opens the index and brings it up to date.
	if res, err := f.s.Search(ctx, Query{Text: "alpha", UserID: AnyUser}); err != nil || res.Total != versions*perVersion {
		t.Fatalf("%+v, %v", res, err)
	}
	// Every hit ordered, as a reference.
	all := func(conj []query.Query, from, size int) ([]string, uint64) {
		req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(conj...), size, from, false)
		res, _, err := f.s.searchIndex(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		return ids, res.Total
	}
	lo, hi := f.s.timeSpan()
	for _, word := range []string{"alpha", "beta", "gamma", "delta", `"alpha beta"`} {
		for _, user := range []int64{AnyUser, bob.ID} {
			for _, until := range []time.Time{{}, hi.Add(-time.Hour), lo.Add(20 * 7 * 24 * time.Hour)} {
				for _, page := range [][2]int{{0, 20}, {20, 20}, {0, 100}, {180, 20}, {2390, 20}, {4790, 20}} {
					conj := []query.Query{textQuery(word)}
					if user != AnyUser {
						tq := bleve.NewTermQuery(fmt.Sprint(user))
						tq.SetField(fUser)
						conj = append(conj, tq)
					}
					if !until.IsZero() {
						var dis []query.Query
						for _, term := range cover(lo, until) {
							tq := bleve.NewTermQuery(term)
							tq.SetField(fFirst)
							dis = append(dis, tq)
						}
						conj = append(conj, bleve.NewDisjunctionQuery(dis...))
					}
					want, wantTotal := all(conj, page[0], page[1])
					hits, total, _, err := f.s.searchNewest(ctx, conj, until, page[0], page[1])
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, h := range hits {
						got = append(got, h.ID)
					}
					if strings.Join(got, " ") != strings.Join(want, " ") || total != wantTotal {
						t.Errorf("%s, user %d, until %v, hits %d+%d: got %d hits of %d\n%v\nwant %d of %d\n%v",
							word, user, until, page[0], page[1], len(got), total, got, len(want), wantTotal, want)
					}
				}
			}
		}
	}
	if n := f.s.windowed.Load(); n < 10 {
		t.Errorf("%d searches were ordered within a window", n)
	}
	t.Logf("%d searches ordered within a window", f.s.windowed.Load())
}
