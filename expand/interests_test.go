package expand_test

import (
	"os"
	"testing"

	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/internal/senseeval"
)

// TestInterestSenses measures the sense chosen for common interest terms
// (testdata/interests.tsv), each alone and within its profile, on the
// half of the list the prior was designed on and on the held-out half.
func TestInterestSenses(t *testing.T) {
	if testing.Short() {
		t.Skip("loads WordNet")
	}
	wn, err := expand.Load()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/interests.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := senseeval.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := senseeval.Run(expand.NewExpander(wn), cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, half := range []struct {
		name      string
		held      bool
		alone     float64
		inContext float64
	}{
		{"designed on", false, 0.95, 0.95},
		{"held out", true, 0.92, 0.93},
	} {
		alone, ctx, n := senseeval.Share(rs, func(r senseeval.Result) bool { return r.HeldOut() == half.held })
		t.Logf("%s: %d terms, right alone %.1f%%, with their profile %.1f%%", half.name, n, 100*alone, 100*ctx)
		if alone < half.alone || ctx < half.inContext {
			for _, r := range rs {
				if r.HeldOut() == half.held && (!r.AloneRight || !r.ContextRight) {
					t.Logf("  %s %q: alone %s, in context %s, want one of %v", r.Profile, r.Term, r.Alone, r.InContext, r.Right)
				}
			}
			t.Errorf("%s: right alone %.3f (want ≥ %.2f), with context %.3f (want ≥ %.2f)", half.name, alone, half.alone, ctx, half.inContext)
		}
	}
	// The frequency prior, as before the interest prior, for comparison.
	e := expand.NewExpander(wn)
	e.Prior, e.Context = nil, 1.8
	old, err := senseeval.Run(e, cases)
	if err != nil {
		t.Fatal(err)
	}
	alone, ctx, _ := senseeval.Share(old, nil)
	t.Logf("frequency prior: right alone %.1f%%, with their profile %.1f%%", 100*alone, 100*ctx)
	if newAlone, _, _ := senseeval.Share(rs, nil); newAlone <= alone {
		t.Errorf("the interest prior (%.3f) is no better than frequencies alone (%.3f)", newAlone, alone)
	}
}
