package pet

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

func TestUsers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	alice := f.user
	if alice.ID != 1 || alice.FeedToken == "" || alice.CreatedAt.IsZero() {
		t.Errorf("created user = %+v", alice)
	}
	bob := &changedigest.User{Name: "bob", PasswordHash: []byte("hash"), Email: "bob@example.org", DigestHour: 8, Admin: true}
	if err := f.s.CreateUser(ctx, bob); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.User(ctx, bob.ID)
	if err != nil || !reflect.DeepEqual(got, bob) {
		t.Errorf("User = %+v, %v; want %+v", got, err, bob)
	}
	if got, err := f.s.UserByName(ctx, "BOB"); err != nil || got.ID != bob.ID {
		t.Errorf("UserByName(BOB) = %v, %v", got, err)
	}
	if got, err := f.s.UserByFeedToken(ctx, bob.FeedToken); err != nil || got.ID != bob.ID {
		t.Errorf("UserByFeedToken = %v, %v", got, err)
	}
	if users, err := f.s.Users(ctx); err != nil || len(users) != 2 || users[0].Name != "alice" {
		t.Errorf("Users = %v, %v", users, err)
	}

	errs := []struct {
		name string
		err  error
		code string
	}{
		{"duplicate name in another case", f.s.CreateUser(ctx, &changedigest.User{Name: "Alice"}), changedigest.ECONFLICT},
		{"bad name", f.s.CreateUser(ctx, &changedigest.User{Name: "a b"}), changedigest.EINVALID},
		{"bad digest hour", f.s.CreateUser(ctx, &changedigest.User{Name: "c", DigestHour: 24}), changedigest.EINVALID},
		{"unknown id", second(f.s.User(ctx, 99)), changedigest.ENOTFOUND},
		{"unknown name", second(f.s.UserByName(ctx, "zed")), changedigest.ENOTFOUND},
		{"empty feed token", second(f.s.UserByFeedToken(ctx, "")), changedigest.ENOTFOUND},
		{"rename onto a taken name", second(f.s.UpdateUser(ctx, bob.ID, func(u *changedigest.User) error {
			u.Name = "ALICE"
			return nil
		})), changedigest.ECONFLICT},
	}
	for _, tc := range errs {
		if code := changedigest.ErrorCode(tc.err); code != tc.code {
			t.Errorf("%s: error %v has code %q, want %q", tc.name, tc.err, code, tc.code)
		}
	}

	oldToken := bob.FeedToken
	up, err := f.s.UpdateUser(ctx, bob.ID, func(u *changedigest.User) error {
		u.Name, u.FeedToken, u.ID = "robert", "", 77
		return nil
	})
	if err != nil || up.Name != "robert" || up.ID != bob.ID || up.FeedToken == "" || up.FeedToken == oldToken {
		t.Fatalf("UpdateUser = %+v, %v", up, err)
	}
	if _, err := f.s.UserByName(ctx, "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("old name still found: %v", err)
	}
	if _, err := f.s.UserByFeedToken(ctx, oldToken); !errors.Is(err, ErrNotFound) {
		t.Errorf("old feed token still works: %v", err)
	}
	stop := errors.New("stop")
	if _, err := f.s.UpdateUser(ctx, bob.ID, func(u *changedigest.User) error { u.Name = "x"; return stop }); err != stop {
		t.Errorf("fn error = %v, want it returned as is", err)
	}
	if u, _ := f.s.User(ctx, bob.ID); u.Name != "robert" {
		t.Errorf("a failed update changed the user: %+v", u)
	}
}

func second[T any](_ T, err error) error { return err }

func TestDeleteUser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	bw := f.mustWatch(t, bob.ID, "https://example.net/")
	f.add(t, f.watch.ID, page("alice's hedgehog"))
	f.add(t, bw.ID, page("bob's hedgehog"))
	tok, err := f.s.CreateSession(ctx, bob.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := f.s.CreateToken(ctx, bob.ID, "cli")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.PutProfile(ctx, &changedigest.Profile{UserID: bob.ID}, []byte("<rdf/>")); err != nil {
		t.Fatal(err)
	}
	if err := f.s.DeleteUser(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		err  error
	}{
		{"user", second(f.s.User(ctx, bob.ID))},
		{"name", second(f.s.UserByName(ctx, "bob"))},
		{"feed token", second(f.s.UserByFeedToken(ctx, bob.FeedToken))},
		{"watch", second(f.s.Watch(ctx, AnyUser, bw.ID))},
		{"session", second(f.s.Session(ctx, tok))},
		{"token", func() error { _, _, err := f.s.UserByToken(ctx, secret); return err }()},
		{"profile", func() error { _, _, err := f.s.Profile(ctx, bob.ID); return err }()},
	}
	for _, c := range checks {
		if !errors.Is(c.err, ErrNotFound) {
			t.Errorf("%s of a deleted user: %v, want ErrNotFound", c.name, c.err)
		}
	}
	res, err := f.s.Search(ctx, Query{Text: "hedgehog", UserID: AnyUser})
	if err != nil || res.Total != 1 || res.Hits[0].WatchID != f.watch.ID {
		t.Errorf("search after deleting bob: %+v, %v", res, err)
	}
	// The name is free again.
	f.mustUser(t, "bob")
}

func TestSessions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	short, err := f.s.CreateSession(ctx, f.user.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	long, err := f.s.CreateSession(ctx, f.user.ID, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(short) < 40 || short == long {
		t.Errorf("tokens %q and %q are not fresh secrets", short, long)
	}
	ss, err := f.s.Session(ctx, short)
	if err != nil || ss.UserID != f.user.ID || !ss.ExpiresAt.Equal(f.clock.Now().Add(time.Minute)) {
		t.Errorf("Session = %+v, %v", ss, err)
	}
	if _, err := f.s.CreateSession(ctx, 99, time.Hour); !errors.Is(err, ErrNotFound) {
		t.Errorf("session for an unknown user: %v", err)
	}
	if _, err := f.s.CreateSession(ctx, f.user.ID, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("session without a lifetime: %v", err)
	}
	f.clock.Add(2 * time.Minute)
	if _, err := f.s.Session(ctx, short); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired session: %v", err)
	}
	if n, err := f.s.PurgeSessions(ctx); err != nil || n != 1 {
		t.Errorf("PurgeSessions = %d, %v; want 1", n, err)
	}
	if _, err := f.s.Session(ctx, long); err != nil {
		t.Errorf("live session lost by the purge: %v", err)
	}
	if err := f.s.DeleteSession(ctx, long); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Session(ctx, long); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted session: %v", err)
	}
	a, _ := f.s.CreateSession(ctx, f.user.ID, time.Hour)
	b, _ := f.s.CreateSession(ctx, f.user.ID, time.Hour)
	bob := f.mustUser(t, "bob")
	c, _ := f.s.CreateSession(ctx, bob.ID, time.Hour)
	if err := f.s.DeleteUserSessions(ctx, f.user.ID); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{a, b} {
		if _, err := f.s.Session(ctx, tok); !errors.Is(err, ErrNotFound) {
			t.Errorf("session survived logging out everywhere: %v", err)
		}
	}
	if _, err := f.s.Session(ctx, c); err != nil {
		t.Errorf("another user's session was ended: %v", err)
	}
}

func TestTokens(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	secret, tok, err := f.s.CreateToken(ctx, f.user.ID, " laptop ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "cdt_") || tok.Name != "laptop" || tok.UserID != f.user.ID {
		t.Errorf("CreateToken = %q, %+v", secret, tok)
	}
	u, got, err := f.s.UserByToken(ctx, secret)
	if err != nil || u.ID != f.user.ID || !reflect.DeepEqual(got, tok) {
		t.Errorf("UserByToken = %+v, %+v, %v", u, got, err)
	}
	if _, _, err := f.s.CreateToken(ctx, f.user.ID, "LAPTOP"); !errors.Is(err, ErrConflict) {
		t.Errorf("duplicate token name: %v", err)
	}
	if _, _, err := f.s.CreateToken(ctx, bob.ID, "laptop"); err != nil {
		t.Errorf("another user's token of the same name: %v", err)
	}
	if _, _, err := f.s.CreateToken(ctx, f.user.ID, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty token name: %v", err)
	}
	if _, _, err := f.s.UserByToken(ctx, secret+"x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("wrong secret: %v", err)
	}
	list, err := f.s.Tokens(ctx, f.user.ID)
	if err != nil || len(list) != 1 || list[0].ID != tok.ID {
		t.Errorf("Tokens = %+v, %v", list, err)
	}
	if err := f.s.RevokeToken(ctx, bob.ID, tok.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoking another user's token: %v", err)
	}
	if err := f.s.RevokeToken(ctx, f.user.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.s.UserByToken(ctx, secret); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoked token still works: %v", err)
	}
}

func TestProfiles(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.s.Profile(ctx, f.user.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("no profile yet: %v", err)
	}
	p := &changedigest.Profile{UserID: f.user.ID, Name: "Alice", Interests: []changedigest.Interest{
		{Term: "semantic web", URI: "http://dbpedia.org/resource/Semantic_Web", Source: "foaf:interest", Weight: 1}}}
	doc := []byte(`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>`)
	if err := f.s.PutProfile(ctx, p, doc); err != nil {
		t.Fatal(err)
	}
	got, gotDoc, err := f.s.Profile(ctx, f.user.ID)
	if err != nil || !reflect.DeepEqual(got, p) || string(gotDoc) != string(doc) {
		t.Errorf("Profile = %+v, %q, %v; want %+v", got, gotDoc, err, p)
	}
	if err := f.s.PutProfile(ctx, &changedigest.Profile{UserID: 99}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("profile of an unknown user: %v", err)
	}
	if err := f.s.PutProfile(ctx, p, make([]byte, MaxProfileDocument+1)); changedigest.ErrorCode(err) != changedigest.ETOOLARGE {
		t.Errorf("oversized document: %v", err)
	}
	if err := f.s.DeleteProfile(ctx, f.user.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.s.Profile(ctx, f.user.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted profile: %v", err)
	}
}

func TestWatches(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	w := f.watch
	if w.ID == 0 || w.Category != changedigest.CategoryPersonal || !w.NextCheck.Equal(f.clock.Now()) {
		t.Errorf("created watch = %+v", w)
	}
	got, err := f.s.Watch(ctx, f.user.ID, w.ID)
	if err != nil || !reflect.DeepEqual(got, w) {
		t.Errorf("Watch = %+v, %v; want %+v", got, err, w)
	}
	if _, err := f.s.Watch(ctx, bob.ID, w.ID); !errors.Is(err, ErrNotFound) || changedigest.ErrorMessage(err) != "watch 1 not found" {
		t.Errorf("another user's watch: %v", err)
	}
	errs := []struct {
		name string
		w    *changedigest.Watch
		code string
	}{
		{"bad url", &changedigest.Watch{UserID: f.user.ID, URL: "ftp://x"}, changedigest.EINVALID},
		{"unknown user", &changedigest.Watch{UserID: 99, URL: "https://x.org/"}, changedigest.ENOTFOUND},
		{"duplicate", &changedigest.Watch{UserID: f.user.ID, URL: "https://example.org/"}, changedigest.ECONFLICT},
	}
	for _, tc := range errs {
		if err := f.s.CreateWatch(ctx, tc.w); changedigest.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v, want code %s", tc.name, err, tc.code)
		}
	}
	// Same URL, other zone; same URL, other user: both fine.
	zoned := &changedigest.Watch{UserID: f.user.ID, URL: "https://example.org/", Zone: "#main", Tags: []string{"News", "local"}}
	if err := f.s.CreateWatch(ctx, zoned); err != nil {
		t.Fatal(err)
	}
	bw := f.mustWatch(t, bob.ID, "https://example.org/")

	list := func(uid int64, tag string) []int64 {
		ws, err := f.s.Watches(ctx, uid, tag)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		return ids
	}
	if got := list(f.user.ID, ""); !reflect.DeepEqual(got, []int64{w.ID, zoned.ID}) {
		t.Errorf("alice's watches = %v", got)
	}
	if got := list(f.user.ID, "LOCAL"); !reflect.DeepEqual(got, []int64{zoned.ID}) {
		t.Errorf("alice's local watches = %v", got)
	}
	if got := list(AnyUser, "news"); !reflect.DeepEqual(got, []int64{w.ID, zoned.ID}) {
		t.Errorf("news watches = %v", got)
	}
	if got := list(bob.ID, ""); !reflect.DeepEqual(got, []int64{bw.ID}) {
		t.Errorf("bob's watches = %v", got)
	}

	before := w.UpdatedAt
	f.clock.Add(time.Minute)
	up, err := f.s.UpdateWatch(ctx, AnyUser, w.ID, func(w *changedigest.Watch) error {
		w.Checks++
		w.ETag = `"v2"`
		return nil
	})
	if err != nil || up.Checks != 1 || !up.UpdatedAt.Equal(before) {
		t.Errorf("schedule update = %+v, %v (UpdatedAt must not move)", up, err)
	}
	up, err = f.s.UpdateWatch(ctx, f.user.ID, w.ID, func(w *changedigest.Watch) error {
		w.Title, w.UserID = "Example", bob.ID
		return nil
	})
	if err != nil || up.Title != "Example" || up.UserID != f.user.ID || !up.UpdatedAt.Equal(f.clock.Now()) {
		t.Errorf("user update = %+v, %v", up, err)
	}
	if _, err := f.s.UpdateWatch(ctx, bob.ID, w.ID, func(*changedigest.Watch) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob updating alice's watch: %v", err)
	}
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, zoned.ID, func(w *changedigest.Watch) error { w.Zone = ""; return nil }); !errors.Is(err, ErrConflict) {
		t.Errorf("update into a duplicate: %v", err)
	}
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, w.ID, func(w *changedigest.Watch) error { w.URL = ""; return nil }); !errors.Is(err, ErrInvalid) {
		t.Errorf("update to an empty URL: %v", err)
	}
	// Moving a watch to a new URL frees the old one; deleting frees its own.
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, w.ID, func(w *changedigest.Watch) error { w.URL = "https://example.org/moved"; return nil }); err != nil {
		t.Fatal(err)
	}
	again := &changedigest.Watch{UserID: f.user.ID, URL: "https://example.org/"}
	if err := f.s.CreateWatch(ctx, again); err != nil {
		t.Errorf("watching the URL a watch moved away from: %v", err)
	}
	if err := f.s.DeleteWatch(ctx, f.user.ID, again.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.s.CreateWatch(ctx, &changedigest.Watch{UserID: f.user.ID, URL: "https://example.org/"}); err != nil {
		t.Errorf("watching a URL again after deleting its watch: %v", err)
	}
	if err := f.s.CreateWatch(ctx, &changedigest.Watch{UserID: bob.ID, URL: "https://example.org/moved"}); err != nil {
		t.Errorf("another user watching the same URL: %v", err)
	}
}

func TestDueWatches(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := f.clock.Now()
	at := func(d time.Duration, paused bool) *changedigest.Watch {
		w := &changedigest.Watch{UserID: f.user.ID, URL: "https://due.example/" + d.String(), NextCheck: now.Add(d), Paused: paused}
		if err := f.s.CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	later := at(2*time.Hour, false)
	soon := at(30*time.Minute, false)
	at(10*time.Minute, true) // paused
	old := at(-48*time.Hour, false)
	ids := func(ws []*changedigest.Watch) []int64 {
		var out []int64
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	tests := []struct {
		name  string
		now   time.Time
		limit int
		want  []int64
	}{
		{"now", now, 0, []int64{old.ID, f.watch.ID}},
		{"in an hour", now.Add(time.Hour), 0, []int64{old.ID, f.watch.ID, soon.ID}},
		{"limit", now.Add(3 * time.Hour), 2, []int64{old.ID, f.watch.ID}},
		{"all", now.Add(3 * time.Hour), 0, []int64{old.ID, f.watch.ID, soon.ID, later.ID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			due, err := f.s.DueWatches(ctx, tc.now, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(due); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("due = %v, want %v", got, tc.want)
			}
		})
	}
	// Skipped watches (being checked) are not read and not counted.
	skip := func(id int64) bool { return id == old.ID }
	if due, err := f.s.DueWatchesSkipping(ctx, now.Add(3*time.Hour), 2, skip); err != nil || !reflect.DeepEqual(ids(due), []int64{f.watch.ID, soon.ID}) {
		t.Errorf("skipping the oldest, limit 2: %v, %v", ids(due), err)
	}
	// Rescheduling moves a watch; pausing takes it out; deleting too.
	if _, err := f.s.UpdateWatch(ctx, AnyUser, old.ID, func(w *changedigest.Watch) error {
		w.NextCheck = now.Add(90 * time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.UpdateWatch(ctx, f.user.ID, f.watch.ID, func(w *changedigest.Watch) error {
		w.Paused = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.DeleteWatch(ctx, f.user.ID, soon.ID); err != nil {
		t.Fatal(err)
	}
	due, err := f.s.DueWatches(ctx, now.Add(3*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(due); !reflect.DeepEqual(got, []int64{old.ID, later.ID}) {
		t.Errorf("due after changes = %v, want %v", got, []int64{old.ID, later.ID})
	}
}
