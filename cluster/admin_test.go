package cluster_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/pet"
)

// TestAccountAdminAcrossNodes: what an administrator does on one node
// (registration mode, one-time links, the audit log, disabling, ending a
// session, deleting a user with their watches) holds on the other, and a
// one-time link works once in the whole cluster.
func TestAccountAdminAcrossNodes(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html><body><p>a page</p></body></html>"))
	}))
	defer page.Close()
	client := freeAddr(t)
	a := startNodeWith(t, cluster.Config{Name: "a", Dir: t.TempDir(), Client: client, Shards: 4, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer a.stop()
	b := startNodeWith(t, cluster.Config{Name: "b", URL: "nats://" + client, HostGap: 10 * time.Millisecond, Lease: 2 * time.Second}, t.TempDir())
	defer b.stop()
	ctx := context.Background()
	waitFor(t, "two shards each", func() bool {
		return len(a.node.Info().Ready) == 2 && len(b.node.Info().Ready) == 2 && a.node.Ready() == nil && b.node.Ready() == nil
	})
	sa, sb := cluster.Store{Store: a.store, Node: a.node}, cluster.Store{Store: b.store, Node: b.node}

	bob := &changedigest.User{Name: "bob", PasswordHash: []byte("hash"), DigestHour: -1}
	if err := sa.CreateUser(ctx, bob); err != nil {
		t.Fatal(err)
	}
	var watches []int64
	for _, p := range []string{"/1", "/2", "/3", "/4"} {
		w := &changedigest.Watch{UserID: bob.ID, URL: page.URL + p}
		if err := sa.CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
		watches = append(watches, w.ID)
	}

	// The registration mode.
	if err := sa.SetRegistration(ctx, changedigest.RegistrationOpen); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "open registration on b", func() bool {
		mode, err := b.store.Registration(ctx)
		return err == nil && mode == changedigest.RegistrationOpen
	})

	// An invitation made on a is taken on b, once.
	secret, err := sa.CreateTicket(ctx, &pet.Ticket{Kind: pet.TicketInvite, CreatedBy: bob.ID, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if tk, err := sb.Ticket(ctx, secret); err != nil || tk.Kind != pet.TicketInvite {
		t.Fatalf("the invitation on b at once: %+v, %v", tk, err)
	}
	if _, err := sb.UseTicket(ctx, secret); err != nil {
		t.Fatalf("using the invitation on b: %v", err)
	}
	if _, err := sa.UseTicket(ctx, secret); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("using the invitation again on a: %v, want not found", err)
	}
	waitFor(t, "the invitation gone from a's copy", func() bool {
		_, err := a.store.Ticket(ctx, secret)
		return changedigest.ErrorCode(err) == changedigest.ENOTFOUND
	})

	// The audit log.
	if err := sa.AddAudit(ctx, &pet.AuditEntry{ActorID: bob.ID, ActorName: "bob", Action: "set registration", Detail: "open"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the audit entry on b", func() bool {
		es, err := b.store.Audit(ctx, 10)
		return err == nil && len(es) == 1 && es[0].Action == "set registration" && es[0].ID > 0
	})

	// Sessions: the last use and the browser follow; one ended on b
	// ends on a.
	token, err := sa.CreateSession(ctx, bob.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.TouchSession(ctx, token, "Mozilla/5.0 Firefox/120.0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session's browser on b", func() bool {
		rs, err := b.store.Sessions(ctx, bob.ID)
		return err == nil && len(rs) == 1 && rs[0].UserAgent == "Mozilla/5.0 Firefox/120.0" && !rs[0].LastSeen.IsZero()
	})
	if err := sb.EndSession(ctx, bob.ID+1, pet.SecretHash(token)); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user ending bob's session: %v", err)
	}
	if err := sb.EndSession(ctx, bob.ID, pet.SecretHash(token)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session ended on a", func() bool {
		_, err := sa.Session(ctx, token)
		return changedigest.ErrorCode(err) == changedigest.ENOTFOUND
	})

	// Disabled on a, disabled on b.
	if _, err := sa.UpdateUser(ctx, bob.ID, func(u *changedigest.User) error { u.Disabled = true; return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob disabled on b", func() bool {
		u, err := b.store.User(ctx, bob.ID)
		return err == nil && u.Disabled
	})

	// Deleted on b with their watches, gone everywhere.
	if _, err := sa.CreateTicket(ctx, &pet.Ticket{Kind: pet.TicketReset, UserID: bob.ID, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := sb.DeleteUser(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob and his watches gone from both nodes", func() bool {
		for _, s := range []cluster.Store{sa, sb} {
			if _, err := s.Store.User(ctx, bob.ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
				return false
			}
			if ws, err := s.Watches(ctx, bob.ID, ""); err != nil || len(ws) != 0 {
				return false
			}
			for _, id := range watches {
				if _, err := s.Store.Watch(ctx, pet.AnyUser, id); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
					return false
				}
			}
			if ts, err := s.Store.Tickets(ctx); err != nil || len(ts) != 0 {
				return false
			}
		}
		return true
	})
	if _, err := sa.UserByName(ctx, "bob"); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob by name after deletion: %v", err)
	}
	if us, err := a.conn.Users(ctx); err != nil || len(us) != 0 {
		t.Errorf("the cluster's users after deletion: %v, %v", us, err)
	}
	// The name is free again.
	if err := sb.CreateUser(ctx, &changedigest.User{Name: "bob", DigestHour: -1}); err != nil {
		t.Errorf("a new bob: %v", err)
	}
}

// TestImportKeepsAccountAdmin: a single node's registration mode, live
// one-time links and audit log go into the cluster with its users, and
// the cluster's audit entries follow the imported ones.
func TestImportKeepsAccountAdmin(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	st := pet.New(dir)
	st.Logger = quiet
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	ann := &changedigest.User{Name: "ann", PasswordHash: []byte("hash"), Admin: true, DigestHour: -1}
	if err := st.CreateUser(ctx, ann); err != nil {
		t.Fatal(err)
	}
	if err := st.SetRegistration(ctx, changedigest.RegistrationInvite); err != nil {
		t.Fatal(err)
	}
	secret, err := st.CreateTicket(ctx, &pet.Ticket{Kind: pet.TicketInvite, CreatedBy: ann.ID, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := st.AddAudit(ctx, &pet.AuditEntry{ActorID: ann.ID, ActorName: "ann", Action: "invite"}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := cluster.Config{Name: "solo", Dir: t.TempDir(), Shards: 4, HostGap: 10 * time.Millisecond, Logger: quiet}
	conn, err := cluster.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Import(ctx, st, 5, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	conn.Close()

	// A node with a store of its own copies them from the cluster.
	a := startNodeWith(t, cfg, t.TempDir())
	defer a.stop()
	waitFor(t, "the imported account administration in a fresh copy", func() bool {
		mode, _ := a.store.Registration(ctx)
		_, terr := a.store.Ticket(ctx, secret)
		es, _ := a.store.Audit(ctx, 0)
		return mode == changedigest.RegistrationInvite && terr == nil && len(es) == 3
	})
	sa := cluster.Store{Store: a.store, Node: a.node}
	e := &pet.AuditEntry{ActorID: ann.ID, ActorName: "ann", Action: "set registration"}
	if err := sa.AddAudit(ctx, e); err != nil || e.ID != 4 {
		t.Errorf("an entry after the imported ones: ID %d, %v; want 4", e.ID, err)
	}
}
