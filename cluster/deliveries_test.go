package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// TestDeliveriesAcrossNodes lists a user's deliveries from two nodes,
// each holding some, newest first, and has a delivery made pending again
// by the node that holds it, asked through the other.
func TestDeliveriesAcrossNodes(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := ln.Addr().String()
	ln.Close()
	type member struct {
		node  *Node
		store *pet.Store
	}
	start := func(cfg Config) *member {
		cfg.Dir, cfg.Shards, cfg.Logger = t.TempDir(), 2, quiet
		conn, err := Dial(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		store := pet.New(t.TempDir())
		store.Logger = quiet
		if err := store.Open(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		m := &member{store: store}
		m.node = &Node{Conn: conn, Store: store, Logger: quiet}
		// The dispatcher's Redeliver, as far as the store goes.
		m.node.Redeliver = func(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error) {
			return store.UpdateDelivery(ctx, userID, id, func(x *changedigest.Delivery) error {
				x.State, x.Attempts = changedigest.DeliveryPending, 0
				return nil
			})
		}
		subs, err := m.node.serveQuestions()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, s := range subs {
				s.Unsubscribe()
			}
		})
		data, _ := json.Marshal(NodeInfo{Name: cfg.Name, Beat: time.Now()})
		if _, err := conn.nodes.Put(ctx, cfg.Name, data); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := start(Config{Name: "a", Client: client})
	b := start(Config{Name: "b", URL: "nats://" + client})

	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	add := func(m *member, id string, userID int64, minutes int, state changedigest.DeliveryState) {
		d := &changedigest.Delivery{ID: id, UserID: userID, ChannelID: 7, WatchID: 1, Seq: minutes,
			State: state, CreatedAt: t0.Add(time.Duration(minutes) * time.Minute)}
		if err := m.store.AddDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	add(a, "a1", 1, 1, changedigest.DeliveryDelivered)
	add(b, "b2", 1, 2, changedigest.DeliveryDead)
	add(a, "a3", 1, 3, changedigest.DeliveryPending)
	add(b, "b4", 1, 4, changedigest.DeliveryDelivered)
	add(b, "b5", 2, 5, changedigest.DeliveryDead) // another user's

	ids := func(ds []changedigest.Delivery) (out []string) {
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	for _, tc := range []struct {
		f    pet.DeliveryFilter
		want []string
	}{
		{pet.DeliveryFilter{UserID: 1}, []string{"b4", "a3", "b2", "a1"}},
		{pet.DeliveryFilter{UserID: 1, Limit: 2}, []string{"b4", "a3"}},
		{pet.DeliveryFilter{UserID: 1, State: changedigest.DeliveryDead}, []string{"b2"}},
		{pet.DeliveryFilter{UserID: 2}, []string{"b5"}},
		{pet.DeliveryFilter{UserID: 3}, nil},
	} {
		for _, m := range []*member{a, b} {
			got, err := m.node.Deliveries(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(ids(got), tc.want) {
				t.Errorf("%+v through %s: %v, want %v", tc.f, m.node.Conn.Config.Name, ids(got), tc.want)
			}
		}
	}

	// b2 failed for good on b; asked through a, b sends it again.
	d, err := a.node.RedeliverAnywhere(ctx, 1, "b2")
	if err != nil || d.ID != "b2" || d.State != changedigest.DeliveryPending {
		t.Fatalf("redeliver b2 through a: %+v, %v", d, err)
	}
	if got, err := b.store.Delivery(ctx, 1, "b2"); err != nil || got.State != changedigest.DeliveryPending {
		t.Errorf("b2 in b's store: %+v, %v", got, err)
	}
	if got, err := a.store.Delivery(ctx, 1, "b2"); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("b2 in a's store: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		user int64
		id   string
	}{{1, "b5"}, {1, "nothing"}, {2, "a1"}} {
		if _, err := a.node.RedeliverAnywhere(ctx, tc.user, tc.id); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			t.Errorf("redeliver %s of user %d: %v, want not found", tc.id, tc.user, err)
		}
	}
	if got, err := b.store.Delivery(ctx, 2, "b5"); err != nil || got.State != changedigest.DeliveryDead {
		t.Errorf("another user's delivery changed: %+v, %v", got, err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
