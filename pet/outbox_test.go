package pet

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

var aChange = changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: "new"}

// TestOutboxWithVersion: a version with changes leaves exactly one outbox
// entry, written in its transaction; the entry survives a restart; one
// without changes leaves none.
func TestOutboxWithVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := newClock()
	s := MustOpen(t, dir, c)
	f := &fixture{s: s, clock: c}
	f.user = f.mustUser(t, "alice")
	f.watch = f.mustWatch(t, f.user.ID, "https://example.org/")
	notified := 0
	s.Notified = func() { notified++ }
	f.add(t, f.watch.ID, "<p>first version of the page</p>")
	_, seq := f.add(t, f.watch.ID, "<p>second version of the page</p>", aChange)
	if notified != 1 {
		t.Errorf("Notified called %d times, want 1", notified)
	}
	ns, err := s.Outbox(ctx, 0)
	if err != nil || len(ns) != 1 {
		t.Fatalf("outbox %+v, %v", ns, err)
	}
	if n := ns[0]; n.UserID != f.user.ID || n.WatchID != f.watch.ID || n.Seq != seq || !n.StoredAt.Equal(c.Now()) {
		t.Errorf("entry %+v", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = MustOpen(t, dir, c)
	if ns2, err := s.Outbox(ctx, 0); err != nil || len(ns2) != 1 || ns2[0] != ns[0] {
		t.Fatalf("after a restart: %+v, %v", ns2, err)
	}

	// Fanout twice (a crash between the two): one delivery, no entry.
	d := changedigest.Delivery{ID: "w1.v2.c1", UserID: f.user.ID, ChannelID: 1, WatchID: f.watch.ID, Seq: seq, CreatedAt: ns[0].StoredAt}
	for range 2 {
		if err := s.Fanout(ctx, ns, []changedigest.Delivery{d}); err != nil {
			t.Fatal(err)
		}
	}
	if ns, _ := s.Outbox(ctx, 0); len(ns) != 0 {
		t.Errorf("outbox after fanout: %+v", ns)
	}
	ds, err := s.Deliveries(ctx, DeliveryFilter{UserID: f.user.ID})
	if err != nil || len(ds) != 1 || ds[0].State != changedigest.DeliveryPending || !ds[0].NextAttempt.Equal(d.CreatedAt) {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
}

// TestDeliveryStates: the due index follows the state and next try.
func TestDeliveryStates(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	now := f.clock.Now()
	for i, id := range []string{"a", "b", "c"} {
		d := &changedigest.Delivery{ID: id, UserID: f.user.ID, ChannelID: 1, WatchID: f.watch.ID, Seq: 1,
			NextAttempt: now.Add(time.Duration(i) * time.Minute)}
		if err := f.s.AddDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.s.AddDelivery(ctx, &changedigest.Delivery{ID: "a", UserID: f.user.ID}); changedigest.ErrorCode(err) != changedigest.ECONFLICT {
		t.Errorf("a second delivery a: %v", err)
	}
	due := func(at time.Time) string {
		ds, err := f.s.DueDeliveries(ctx, at, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		return strings.Join(ids, ",")
	}
	if got := due(now.Add(time.Minute)); got != "a,b" {
		t.Errorf("due at +1m: %q", got)
	}
	// a is delivered, b is dead, c is retried later.
	set := func(id string, fn func(*changedigest.Delivery)) {
		if _, err := f.s.UpdateDelivery(ctx, AnyUser, id, func(d *changedigest.Delivery) error { fn(d); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	set("a", func(d *changedigest.Delivery) { d.State = changedigest.DeliveryDelivered })
	set("b", func(d *changedigest.Delivery) { d.State, d.LastError = changedigest.DeliveryDead, "boom" })
	set("c", func(d *changedigest.Delivery) { d.NextAttempt = now.Add(time.Hour) })
	if got := due(now.Add(59 * time.Minute)); got != "" {
		t.Errorf("due at +59m: %q", got)
	}
	if next, _ := f.s.NextDelivery(ctx); !next.Equal(now.Add(time.Hour)) {
		t.Errorf("next delivery %v", next)
	}
	if got := due(now.Add(time.Hour)); got != "c" {
		t.Errorf("due at +1h: %q", got)
	}
	if _, err := f.s.UpdateDelivery(ctx, f.user.ID+1, "c", func(*changedigest.Delivery) error { return nil }); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's delivery: %v", err)
	}
	counts, _ := f.s.DeliveryCounts(ctx, f.user.ID)
	if counts[changedigest.DeliveryDead] != 1 || counts[changedigest.DeliveryDelivered] != 1 || counts[changedigest.DeliveryPending] != 1 {
		t.Errorf("counts %v", counts)
	}
	dead, _ := f.s.Deliveries(ctx, DeliveryFilter{UserID: f.user.ID, State: changedigest.DeliveryDead})
	if len(dead) != 1 || dead[0].LastError != "boom" {
		t.Errorf("dead %+v", dead)
	}
	// Only delivered ones are purged.
	f.clock.Add(48 * time.Hour)
	if n, err := f.s.PurgeDeliveries(ctx, f.clock.Now()); n != 1 || err != nil {
		t.Errorf("purge: %d, %v", n, err)
	}
}

func TestChannelsKeepSecretsAndOwners(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	bob := f.mustUser(t, "bob")
	c := &changedigest.Channel{UserID: f.user.ID, Kind: changedigest.ChannelWebhook, URL: "https://hooks.example.org/x", Secret: "hunter2"}
	if err := f.s.CreateChannel(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.Channel(ctx, f.user.ID, c.ID)
	if err != nil || got.Secret != "hunter2" || got.Select != changedigest.SelectAll || got.Name != "webhook" {
		t.Fatalf("channel %+v, %v", got, err)
	}
	if b, _ := json.Marshal(got); strings.Contains(string(b), "hunter2") {
		t.Errorf("the channel's JSON shows the secret: %s", b)
	}
	if _, err := f.s.Channel(ctx, bob.ID, c.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob reads alice's channel: %v", err)
	}
	// A refused update stores nothing.
	if _, err := f.s.UpdateChannel(ctx, f.user.ID, c.ID, func(x *changedigest.Channel) error { x.URL = "ftp://x"; return nil }); changedigest.ErrorCode(err) != changedigest.EINVALID {
		t.Errorf("bad URL: %v", err)
	}
	if got, _ := f.s.Channel(ctx, f.user.ID, c.ID); got.URL != c.URL {
		t.Errorf("after a refused update: %+v", got)
	}
	if err := f.s.CreateChannel(ctx, &changedigest.Channel{UserID: f.user.ID, Kind: "pager", URL: "https://x.example"}); changedigest.ErrorCode(err) != changedigest.EINVALID {
		t.Errorf("unknown kind: %v", err)
	}
	d := &changedigest.Delivery{ID: "d1", UserID: f.user.ID, ChannelID: c.ID, WatchID: f.watch.ID, Seq: 1}
	if err := f.s.AddDelivery(ctx, d); err != nil {
		t.Fatal(err)
	}
	sub := &changedigest.Subscription{Topic: "https://cd.example/feeds/t/atom.xml", Callback: "https://reader.example/cb", UserID: f.user.ID,
		Secret: "s", Lease: 60, Expires: f.clock.Now().Add(time.Minute)}
	if err := f.s.PutSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	subs, _ := f.s.Subscriptions(ctx, AnyUser)
	if len(subs) != 1 || subs[0].Secret != "s" {
		t.Fatalf("subscriptions %+v", subs)
	}
	if err := f.s.DeleteUser(ctx, f.user.ID); err != nil {
		t.Fatal(err)
	}
	if cs, _ := f.s.Channels(ctx, f.user.ID); len(cs) != 0 {
		t.Errorf("channels after DeleteUser: %+v", cs)
	}
	if _, err := f.s.Delivery(ctx, AnyUser, "d1"); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("delivery after DeleteUser: %v", err)
	}
	if subs, _ := f.s.Subscriptions(ctx, AnyUser); len(subs) != 0 {
		t.Errorf("subscriptions after DeleteUser: %+v", subs)
	}
}

func TestSubscriptionLeases(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	put := func(cb string, lease time.Duration) {
		sub := &changedigest.Subscription{Topic: "https://cd.example/feeds/t/atom.xml", Callback: cb, UserID: f.user.ID,
			Lease: int(lease / time.Second), Expires: f.clock.Now().Add(lease)}
		if err := f.s.PutSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	put("https://a.example/", time.Hour)
	put("https://b.example/", 2*time.Hour)
	f.clock.Add(90 * time.Minute)
	put("https://a.example/", time.Hour) // renewed
	f.clock.Add(45 * time.Minute)
	if n, err := f.s.ExpireSubscriptions(ctx, f.clock.Now()); n != 1 || err != nil {
		t.Fatalf("expire: %d, %v", n, err)
	}
	subs, _ := f.s.Subscriptions(ctx, f.user.ID)
	if len(subs) != 1 || subs[0].Callback != "https://a.example/" {
		t.Errorf("after expiry: %+v", subs)
	}
	if err := f.s.PutSubscription(ctx, &changedigest.Subscription{Topic: "a\x00b", Callback: "c", UserID: f.user.ID}); changedigest.ErrorCode(err) != changedigest.EINVALID {
		t.Errorf("NUL in topic: %v", err)
	}
}
