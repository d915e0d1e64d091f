package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/internal/smtptest"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
)

type fixture struct {
	store *pet.Store
	n     *Notifier
	user  *changedigest.User
	watch *changedigest.Watch
	now   time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{now: time.Date(2026, 3, 10, 9, 30, 0, 0, time.UTC)}
	f.store = pet.New(t.TempDir())
	f.store.Now = func() time.Time { return f.now }
	if err := f.store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.store.Close() })
	f.user = &changedigest.User{Name: "ann", Email: "ann@example.org", DigestHour: 7}
	if err := f.store.CreateUser(ctx, f.user); err != nil {
		t.Fatal(err)
	}
	prof := &changedigest.Profile{UserID: f.user.ID, Interests: []changedigest.Interest{{Term: "football", Source: "foaf:interest", Weight: 1}}}
	if err := f.store.PutProfile(ctx, prof, nil); err != nil {
		t.Fatal(err)
	}
	f.watch = &changedigest.Watch{UserID: f.user.ID, URL: "http://example.org/news", Title: "News"}
	if err := f.store.CreateWatch(ctx, f.watch); err != nil {
		t.Fatal(err)
	}
	wn, err := expand.Load()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := render.NewEngine("http://cd.example.org/")
	if err != nil {
		t.Fatal(err)
	}
	f.n = New(f.store, expand.NewExpander(wn), eng)
	f.n.Location = time.UTC
	f.n.Now = func() time.Time { return f.now }
	return f
}

// addVersion stores a version whose segment texts are texts, with the
// given changes.
func (f *fixture) addVersion(t *testing.T, at time.Time, texts []string, changes []changedigest.Change) {
	t.Helper()
	f.now = at
	var body strings.Builder
	snap := &changedigest.Snapshot{FetchedAt: at, Status: 200, Kind: changedigest.KindPage, Changes: changes}
	for i, tx := range texts {
		start := body.Len()
		body.WriteString("<p>" + tx + "</p>")
		snap.Segments = append(snap.Segments, changedigest.Segment{Index: i, Hash: strings.Repeat("0", 31) + string(rune('a'+i+len(texts))), Text: tx, Start: start, End: body.Len(), Path: "p"})
	}
	if _, err := f.store.AddVersion(context.Background(), f.watch.ID, snap, []byte(body.String())); err != nil {
		t.Fatal(err)
	}
}

func TestEventsCarryProfileMatches(t *testing.T) {
	f := newFixture(t)
	day := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	f.addVersion(t, day.Add(8*time.Hour), []string{"Library hours"}, nil)
	f.addVersion(t, day.Add(10*time.Hour), []string{"The soccer club won", "Library hours"}, []changedigest.Change{
		{Segment: 0, Path: "p", Type: changedigest.ChangeContent, Op: changedigest.OpInsert, NewText: "The soccer club won"},
		{Segment: 1, Path: "p", Type: changedigest.ChangeContent, Op: changedigest.OpDelete, OldText: "Bakery closed"},
	})
	evs, err := f.n.Events(context.Background(), pet.ChangeFilter{UserID: f.user.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || len(evs[0].Matches) != 2 {
		t.Fatalf("events %+v", evs)
	}
	m := evs[0].Matches[0]
	if len(m) != 1 || m[0].Interest != "football" || m[0].Term != "soccer" || m[0].Relation != "hyponym" {
		t.Errorf("matches of the soccer change: %+v", m)
	}
	if len(evs[0].Matches[1]) != 0 {
		t.Errorf("the bakery change matched %+v", evs[0].Matches[1])
	}
}

func TestSendDueDigest(t *testing.T) {
	f := newFixture(t)
	srv := smtptest.New(t)
	mailer, err := NewMailer(srv.Addr, "changedigest <digest@cd.example.org>")
	if err != nil {
		t.Fatal(err)
	}
	f.n.Mail = mailer
	day := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	f.addVersion(t, day.Add(8*time.Hour), []string{"Library hours"}, nil)
	f.addVersion(t, day.Add(10*time.Hour), []string{"Rugby final moved"}, []changedigest.Change{
		{Segment: 0, Path: "p", Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "Library hours", NewText: "Rugby final moved"},
	})
	ctx := context.Background()

	f.now = time.Date(2026, 3, 10, 6, 59, 0, 0, time.UTC) // before the hour
	if n, err := f.n.SendDue(ctx); err != nil || n != 0 {
		t.Fatalf("before the digest hour: sent %d, %v", n, err)
	}
	f.now = time.Date(2026, 3, 10, 7, 0, 0, 0, time.UTC)
	if n, err := f.n.SendDue(ctx); err != nil || n != 1 {
		t.Fatalf("at the digest hour: sent %d, %v", n, err)
	}
	if n, err := f.n.SendDue(ctx); err != nil || n != 0 {
		t.Fatalf("a second time the same day: sent %d, %v", n, err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if m.From != "digest@cd.example.org" || len(m.To) != 1 || m.To[0] != "ann@example.org" {
		t.Errorf("envelope %q -> %q", m.From, m.To)
	}
	for _, want := range []string{"Subject:", "multipart/alternative", "text/plain", "text/html", "Rugby"} {
		if !strings.Contains(m.Data, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	u, err := f.store.User(ctx, f.user.ID)
	if err != nil || u.DigestSent != "2026-03-09" {
		t.Errorf("digest day not recorded: %+v %v", u, err)
	}
}

func TestSendDigestNeedsAddress(t *testing.T) {
	f := newFixture(t)
	f.n.Mail = &Mailer{Addr: "127.0.0.1:1"}
	u := *f.user
	u.Email = ""
	err := f.n.SendDigest(context.Background(), &u, f.now)
	if changedigest.ErrorCode(err) != changedigest.EINVALID {
		t.Errorf("err = %v", err)
	}
}

// TestTold keeps what Notable lets through, with the matches of the kept
// changes, and drops events left with nothing; the stored snapshot is
// not changed.
func TestTold(t *testing.T) {
	w := &changedigest.Watch{ID: 1, NotifyTypes: []changedigest.ChangeType{changedigest.ChangeContent}}
	snap := &changedigest.Snapshot{Seq: 2, Changes: []changedigest.Change{
		{Type: changedigest.ChangeBehavioural, Op: changedigest.OpUpdate, Noise: "generated value"},
		{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "a", NewText: "b"},
		{Type: changedigest.ChangeCosmetic, Op: changedigest.OpUpdate},
	}}
	m := changedigest.Match{Interest: "x"}
	onlyNoise := &changedigest.Snapshot{Seq: 3, Changes: []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Noise: "volatile location"}}}
	evs := Told([]render.Event{
		{Watch: w, Snapshot: snap, Matches: [][]changedigest.Match{nil, {m}, nil}},
		{Watch: w, Snapshot: onlyNoise},
	})
	if len(evs) != 1 || len(evs[0].Snapshot.Changes) != 1 || evs[0].Snapshot.Changes[0].NewText != "b" ||
		len(evs[0].Matches) != 1 || len(evs[0].Matches[0]) != 1 {
		t.Fatalf("told: %+v", evs)
	}
	if len(snap.Changes) != 3 {
		t.Errorf("Told changed the stored snapshot: %d changes", len(snap.Changes))
	}
}

// TestLazyEvents checks that FeedEvents and LazyEvents give the events
// of ToldEvents and Events (their keys, and the whole events from Load),
// that a poll with nothing new works nothing out again, and that what is
// kept follows the profile and the watch's filters.
func TestLazyEvents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	day := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	f.addVersion(t, day.Add(8*time.Hour), []string{"Library hours"}, nil)
	f.addVersion(t, day.Add(9*time.Hour), []string{"The soccer club won", "Library hours"}, []changedigest.Change{
		{Segment: 0, Path: "p", Type: changedigest.ChangeContent, Op: changedigest.OpInsert, NewText: "The soccer club won"},
		{Segment: 1, Path: "p", Type: changedigest.ChangeContent, Op: changedigest.OpDelete, OldText: "Bakery closed", Noise: "volatile location"},
	})
	f.addVersion(t, day.Add(10*time.Hour), []string{"The soccer club won", "Library closed"}, []changedigest.Change{
		{Segment: 1, Path: "p", Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "hours", NewText: "closed", Before: "Library "},
	})
	f.addVersion(t, day.Add(11*time.Hour), []string{"The soccer club won", "Library closed"}, []changedigest.Change{
		{Segment: 1, Path: "p", Type: changedigest.ChangeCosmetic, Op: changedigest.OpUpdate, Noise: "generated value"},
	})
	filter := pet.ChangeFilter{UserID: f.user.ID, Limit: 10}
	same := func(what string, lazy, whole []render.Event) {
		t.Helper()
		if len(lazy) != len(whole) {
			t.Fatalf("%s: %d events, want %d", what, len(lazy), len(whole))
		}
		for i := range lazy {
			ev, err := lazy[i].Load()
			if err != nil {
				t.Fatal(err)
			}
			if lazy[i].Key != whole[i].Key || lazy[i].Key != render.EventKey(ev) || lazy[i].Key != render.EventKey(whole[i]) ||
				ev.Snapshot.Seq != whole[i].Snapshot.Seq || len(ev.Snapshot.Changes) != len(whole[i].Snapshot.Changes) ||
				len(lazy[i].Snapshot.Changes) != 0 {
				t.Errorf("%s: event %d: key %x, loaded %x (version %d, %d changes), want %x (version %d, %d changes)", what, i,
					lazy[i].Key, render.EventKey(ev), ev.Snapshot.Seq, len(ev.Snapshot.Changes),
					whole[i].Key, whole[i].Snapshot.Seq, len(whole[i].Snapshot.Changes))
			}
		}
	}
	check := func(what string, told int) {
		t.Helper()
		feed, err := f.n.FeedEvents(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		toldEvs, err := f.n.ToldEvents(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		if len(toldEvs) != told {
			t.Errorf("%s: %d events told, want %d", what, len(toldEvs), told)
		}
		same(what+", told", feed, toldEvs)
		lazy, err := f.n.LazyEvents(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		all, err := f.n.Events(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		same(what+", all", lazy, all)
	}
	check("first", 2)
	made := f.n.kept.Made()
	if made != 3 {
		t.Errorf("3 versions with changes: %d worked out", made)
	}
	for range 3 {
		if _, err := f.n.FeedEvents(ctx, filter); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.n.kept.Made() - made; n != 0 {
		t.Errorf("3 polls worked out %d events again", n)
	}
	// Noise shown and cosmetic changes asked for: the cosmetic change
	// marked as noise is told too.
	if _, err := f.store.UpdateWatch(ctx, f.user.ID, f.watch.ID, func(w *changedigest.Watch) error {
		w.ShowNoise = true
		w.NotifyTypes = []changedigest.ChangeType{changedigest.ChangeContent, changedigest.ChangeCosmetic}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("noise shown", 3)
	// Only interests: the soccer version alone.
	if _, err := f.store.UpdateWatch(ctx, f.user.ID, f.watch.ID, func(w *changedigest.Watch) error {
		w.OnlyInterests = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("only interests", 1)
	// A profile without football: nothing matches, nothing is told.
	if err := f.store.PutProfile(ctx, &changedigest.Profile{UserID: f.user.ID, UpdatedAt: f.now.Add(time.Minute),
		Interests: []changedigest.Interest{{Term: "opera", Source: "foaf:interest", Weight: 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	check("another profile", 0)
}
