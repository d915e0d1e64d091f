package pet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// TestCopies puts accounts made elsewhere under their own keys: again,
// renamed, out of order, and deleted.
func TestCopies(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u := &changedigest.User{ID: 40, Name: "carol", PasswordHash: []byte("h"), FeedToken: "ft-carol", CreatedAt: created, DigestHour: 7}
	// A profile may come before its user.
	p := &changedigest.Profile{UserID: 40, Name: "Carol", Interests: []changedigest.Interest{{Term: "rdf"}}, UpdatedAt: created}
	if err := f.s.ReplaceProfile(ctx, p, []byte("<doc/>")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.s.PutUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.s.UserByFeedToken(ctx, "ft-carol"); err != nil || got.ID != 40 || !got.CreatedAt.Equal(created) {
		t.Errorf("UserByFeedToken = %+v, %v", got, err)
	}
	if got, _, err := f.s.Profile(ctx, 40); err != nil || !got.UpdatedAt.Equal(created) || got.Interests[0].Term != "rdf" {
		t.Errorf("Profile = %+v, %v: want it as put, UpdatedAt kept", got, err)
	}
	// Renamed, with a new feed token: the old name and token are free.
	u2 := *u
	u2.Name, u2.FeedToken = "caroline", "ft-2"
	if err := f.s.PutUser(ctx, &u2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.UserByName(ctx, "carol"); !errors.Is(err, ErrNotFound) {
		t.Errorf("old name after a rename: %v", err)
	}
	if _, err := f.s.UserByFeedToken(ctx, "ft-carol"); !errors.Is(err, ErrNotFound) {
		t.Errorf("old feed token after a rename: %v", err)
	}
	if err := f.s.PutUser(ctx, &changedigest.User{ID: 41, Name: "Caroline", FeedToken: "x", DigestHour: -1}); !errors.Is(err, ErrConflict) {
		t.Errorf("another user with the name: %v, want a conflict", err)
	}
	// A user made here afterwards takes an ID above those put.
	d := &changedigest.User{Name: "dan", DigestHour: -1}
	if err := f.s.CreateUser(ctx, d); err != nil || d.ID <= 40 {
		t.Errorf("CreateUser after PutUser: ID %d, %v", d.ID, err)
	}

	// Sessions under their hash.
	now := f.clock.Now()
	r := SessionRecord{Hash: SecretHash("tok"), Session: Session{UserID: 40, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}}
	if err := f.s.PutSession(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := f.s.PutSession(ctx, SessionRecord{Hash: []byte("short")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad hash: %v", err)
	}
	if s, err := f.s.Session(ctx, "tok"); err != nil || s.UserID != 40 {
		t.Errorf("Session = %+v, %v", s, err)
	}
	if rs, err := f.s.Sessions(ctx, 40); err != nil || len(rs) != 1 || string(rs[0].Hash) != string(r.Hash) {
		t.Errorf("Sessions(40) = %+v, %v", rs, err)
	}
	if rs, _ := f.s.Sessions(ctx, f.user.ID); len(rs) != 0 {
		t.Errorf("another user's sessions: %d", len(rs))
	}
	if err := f.s.DeleteSessionHash(ctx, r.Hash); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Session(ctx, "tok"); !errors.Is(err, ErrNotFound) {
		t.Errorf("session after its deletion: %v", err)
	}

	// API tokens: put twice with a new secret, the old secret stops working.
	tok := Token{ID: 9, UserID: 40, Name: "ci", CreatedAt: now}
	if err := f.s.PutToken(ctx, tok, SecretHash("s1")); err != nil {
		t.Fatal(err)
	}
	if err := f.s.PutToken(ctx, tok, SecretHash("s2")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.s.UserByToken(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the replaced secret: %v", err)
	}
	if u, got, err := f.s.UserByToken(ctx, "s2"); err != nil || u.ID != 40 || got.ID != 9 {
		t.Errorf("UserByToken = %+v, %+v, %v", u, got, err)
	}
	if _, mine, err := f.s.CreateToken(ctx, f.user.ID, "local"); err != nil || mine.ID <= 9 {
		t.Errorf("CreateToken after PutToken: %+v, %v", mine, err)
	}

	// A channel under its own ID, moved to another user; a subscription as it is.
	ch := &changedigest.Channel{ID: 7, UserID: 40, Name: "hook", Kind: changedigest.ChannelWebhook, URL: "https://hooks.example.org/", Secret: "k", CreatedAt: created}
	if err := f.s.PutChannel(ctx, ch); err != nil {
		t.Fatal(err)
	}
	ch2 := *ch
	ch2.UserID = d.ID
	if err := f.s.PutChannel(ctx, &ch2); err != nil {
		t.Fatal(err)
	}
	if cs, _ := f.s.Channels(ctx, 40); len(cs) != 0 {
		t.Errorf("the channel's old user still lists it: %+v", cs)
	}
	if got, err := f.s.Channel(ctx, d.ID, 7); err != nil || got.Secret != "k" || !got.CreatedAt.Equal(created) {
		t.Errorf("Channel = %+v, %v", got, err)
	}
	if err := f.s.CreateChannel(ctx, &changedigest.Channel{UserID: d.ID, Name: "n", Kind: changedigest.ChannelWebhook, URL: "https://x.example.org/"}); err != nil {
		t.Fatal(err)
	}
	if cs, _ := f.s.Channels(ctx, d.ID); len(cs) != 2 || cs[1].ID <= 7 {
		t.Errorf("a channel made after PutChannel: %+v", cs)
	}
	sub := &changedigest.Subscription{Topic: "t", Callback: "c", UserID: 99, Secret: "s", CreatedAt: created}
	if err := f.s.ReplaceSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if subs, err := f.s.Subscriptions(ctx, 99); err != nil || len(subs) != 1 || subs[0].Secret != "s" || !subs[0].CreatedAt.Equal(created) {
		t.Errorf("Subscriptions = %+v, %v", subs, err)
	}
}
