package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// clockReport is a view of pageV1 whose scripts wrote the time i into
// its main body.
func clockReport(i int) string {
	return strings.Replace(pageV1, "closed on Sundays", fmt.Sprintf("closed on Sundays (%d)", i), 1)
}

// verify runs the check a report made due, if any: the page is as
// stored (stored false) or a new version (stored true).
func (f *fixture) verify(t *testing.T, stored bool) (checked bool) {
	t.Helper()
	f.drain(t)
	if f.store.watch(1).NextCheck.After(f.now) {
		return false
	}
	if stored {
		w := f.store.watch(1)
		f.m.Stored(&w, &changedigest.Snapshot{WatchID: 1, Seq: f.store.seqs[1]})
	}
	f.m.CheckedAt(1, f.now, false)
	f.store.UpdateWatch(context.Background(), 0, 1, func(w *changedigest.Watch) error {
		w.NextCheck = f.now.Add(24 * time.Hour)
		return nil
	})
	return true
}

// TestSummaryThatNeverMatchesIsNotForgery: reports of a page whose
// scripts write the time into its main body never match the stored
// version. Refuted, they teach that the main body is volatile, and
// count against no one: the visitor's later reports, of this page or
// another, are taken. Differences there are no longer verified; other
// parts still are; what was learned is kept with the watch and
// outlives the manager; views that show the part as stored again, a
// few in a row, make it trusted again. A forger on the same page, whose
// report differs where views match, is still ignored after two.
func TestSummaryThatNeverMatchesIsNotForgery(t *testing.T) {
	f := newFixture(t)
	visitor := "127.0.0.1"
	for i := range 2 {
		if err := f.report(t, f.token(t), clockReport(i), visitor); err != nil {
			t.Fatalf("view %d: %v", i, err)
		}
		if !f.verify(t, false) {
			t.Fatalf("view %d was not verified", i)
		}
		f.now = f.now.Add(DefaultThreshold)
	}
	st := f.m.Stats(1)
	if st.Refuted != 2 || !slices.Equal(st.Volatile, []string{"main"}) {
		t.Fatalf("after two refuted views: %+v, want main volatile", st)
	}
	f.drain(t)
	if w := f.store.watch(1); !slices.Equal(w.AgentVolatile, []string{"main"}) {
		t.Errorf("the watch keeps %q", w.AgentVolatile)
	}
	if err := f.report(t, f.token(t), clockReport(3), visitor); err != nil {
		t.Fatalf("the visitor is refused: %v", err)
	}
	if f.verify(t, false) {
		t.Error("a view that differs only in the volatile part was verified")
	}
	// A new manager (a restart) knows the part is volatile.
	f.m = New(f.store, f.m.Endpoint)
	f.m.Now, f.m.Logger = f.clock, discard
	f.now = f.now.Add(DefaultThreshold)
	if err := f.report(t, f.token(t), clockReport(4), visitor); err != nil {
		t.Fatal(err)
	}
	if f.verify(t, false) {
		t.Error("after a restart, a view that differs only in the volatile part was verified")
	}
	// A change of the title is verified, and stored.
	retitled := strings.Replace(pageV1, "<title>Shop</title>", "<title>Shop: closed today</title>", 1)
	if err := f.report(t, f.token(t), strings.Replace(clockReport(5), "<title>Shop</title>", "<title>Shop: closed today</title>", 1), visitor); err != nil {
		t.Fatal(err)
	}
	f.store.put(1, retitled)
	if !f.verify(t, true) {
		t.Fatal("a change of the title was not verified")
	}
	// A forger: its reports differ in the title, which views show as
	// stored; refuted twice, it is ignored.
	f.now = f.now.Add(DefaultThreshold)
	f.report(t, f.token(t), strings.Replace(clockReport(6), "<title>Shop</title>", "<title>Shop: closed today</title>", 1), visitor)
	f.drain(t)
	for i := range 2 {
		f.now = f.now.Add(DefaultThreshold)
		if err := f.report(t, f.token(t), strings.Replace(clockReport(10+i), "Shop", fmt.Sprintf("Closed %d", i), 1), "198.51.100.9"); err != nil {
			t.Fatal(err)
		}
		if !f.verify(t, false) {
			t.Fatalf("forged report %d was not verified", i)
		}
	}
	if err := f.report(t, f.token(t), retitled, "198.51.100.9"); code(err) != changedigest.EFORBIDDEN {
		t.Errorf("the forger is not ignored: %v", err)
	}
	if err := f.report(t, f.token(t), retitled, visitor); err != nil {
		t.Errorf("the visitor is refused: %v", err)
	}
	f.drain(t)
	// Counted since the restart.
	if st := f.m.Stats(1); st.Confirmed != 1 || st.Refuted != 2 || st.RefusedIgnored != 1 || !slices.Equal(st.Volatile, []string{"main"}) {
		t.Errorf("stats %+v", st)
	}
	// Views that show the main body as stored again.
	for range f.m.TrustAgain - 1 {
		f.report(t, f.token(t), retitled, visitor)
		f.drain(t)
	}
	if st := f.m.Stats(1); len(st.Volatile) != 0 {
		t.Errorf("after %d views matching the main body: volatile %q", f.m.TrustAgain, st.Volatile)
	}
	if w := f.store.watch(1); len(w.AgentVolatile) != 0 {
		t.Errorf("the watch keeps %q", w.AgentVolatile)
	}
}
