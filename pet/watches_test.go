package pet

import (
	"context"
	"slices"
	"testing"

	"github.com/changedigest/changedigest"
)

// TestPutWatchKeepsWhatChecksLearned: a definition put from elsewhere (a
// cluster's watches bucket, which holds what users define) leaves the
// page's kind, title and shell flag the checks learned here; a title the
// user gives is taken, and one the user clears is cleared.
func TestPutWatchKeepsWhatChecksLearned(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	id := f.watch.ID
	body := []byte("<p>one</p>")
	snap := snapshotOf(body)
	snap.Title = "The page"
	if _, err := f.s.AddVersion(ctx, id, snap, body); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.UpdateWatch(ctx, AnyUser, id, func(w *changedigest.Watch) error {
		w.Kind, w.Title, w.LooksLikeShell = changedigest.KindPage, snap.Title, true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	put := func(title string) *changedigest.Watch {
		t.Helper()
		def := &changedigest.Watch{ID: id, UserID: f.user.ID, URL: f.watch.URL, Title: title, Tags: []string{"news", "sport"}}
		if err := f.s.PutWatch(ctx, def); err != nil {
			t.Fatal(err)
		}
		w, err := f.s.Watch(ctx, AnyUser, id)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := put("")
	if w.Kind != changedigest.KindPage || w.Title != "The page" || !w.LooksLikeShell || !slices.Equal(w.Tags, []string{"news", "sport"}) {
		t.Errorf("a definition without what was learned: kind %q, title %q, shell %v, tags %v; want page, %q, true, [news sport]",
			w.Kind, w.Title, w.LooksLikeShell, w.Tags, snap.Title)
	}
	if w := put("Mine"); w.Title != "Mine" || w.Kind != changedigest.KindPage {
		t.Errorf("the user's title: %q (kind %q), want Mine", w.Title, w.Kind)
	}
	if w := put(""); w.Title != "" {
		t.Errorf("the user's title cleared: %q, want none (the next check takes the page's)", w.Title)
	}
}
