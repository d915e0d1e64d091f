package pet

import (
	"context"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

func TestRegistrationMode(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if mode, err := f.s.Registration(ctx); err != nil || mode != changedigest.RegistrationClosed {
		t.Errorf("the first mode: %q, %v; want closed", mode, err)
	}
	if err := f.s.SetRegistration(ctx, changedigest.RegistrationInvite); err != nil {
		t.Fatal(err)
	}
	if mode, err := f.s.Registration(ctx); err != nil || mode != changedigest.RegistrationInvite {
		t.Errorf("mode %q, %v; want invite", mode, err)
	}
	if err := f.s.SetRegistration(ctx, "everyone"); changedigest.ErrorCode(err) != changedigest.EINVALID {
		t.Errorf("a bad mode: %v", err)
	}
}

func TestTicketsWorkOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := f.clock.Now()
	invite := &Ticket{Kind: TicketInvite, CreatedBy: f.user.ID, ExpiresAt: now.Add(time.Hour)}
	secret, err := f.s.CreateTicket(ctx, invite)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.s.Ticket(ctx, secret); err != nil || got.Kind != TicketInvite || string(got.Hash) != string(SecretHash(secret)) {
		t.Errorf("Ticket = %+v, %v", got, err)
	}
	if ts, err := f.s.Tickets(ctx); err != nil || len(ts) != 1 {
		t.Errorf("Tickets = %v, %v", ts, err)
	}
	if _, err := f.s.UseTicket(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"Ticket", "UseTicket"} {
		var err error
		if what == "Ticket" {
			_, err = f.s.Ticket(ctx, secret)
		} else {
			_, err = f.s.UseTicket(ctx, secret)
		}
		if changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			t.Errorf("%s of a used ticket: %v", what, err)
		}
	}

	reset := &Ticket{Kind: TicketReset, UserID: f.user.ID, ExpiresAt: now.Add(time.Hour)}
	secret, err = f.s.CreateTicket(ctx, reset)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Add(2 * time.Hour)
	if _, err := f.s.Ticket(ctx, secret); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("an expired ticket: %v", err)
	}
	if _, err := f.s.UseTicket(ctx, secret); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("using an expired ticket: %v", err)
	}

	for name, tk := range map[string]*Ticket{
		"unknown kind":    {Kind: "party", ExpiresAt: f.clock.Now().Add(time.Hour)},
		"reset nobody":    {Kind: TicketReset, ExpiresAt: f.clock.Now().Add(time.Hour)},
		"expired at once": {Kind: TicketInvite, ExpiresAt: f.clock.Now()},
	} {
		if _, err := f.s.CreateTicket(ctx, tk); changedigest.ErrorCode(err) != changedigest.EINVALID {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if _, err := f.s.CreateTicket(ctx, &Ticket{Kind: TicketReset, UserID: 99, ExpiresAt: f.clock.Now().Add(time.Hour)}); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("a reset of an unknown user: %v", err)
	}

	// Deleting a user deletes their reset links.
	if _, err := f.s.CreateTicket(ctx, &Ticket{Kind: TicketReset, UserID: f.user.ID, ExpiresAt: f.clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.DeleteUser(ctx, f.user.ID); err != nil {
		t.Fatal(err)
	}
	if ts, err := f.s.Tickets(ctx); err != nil || len(ts) != 0 {
		t.Errorf("tickets after deleting their user: %v, %v", ts, err)
	}
}

func TestAuditLog(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, action := range []string{"create user", "disable user", "delete user"} {
		if err := f.s.AddAudit(ctx, &AuditEntry{ActorID: 1, ActorName: "alice", Action: action, TargetID: 2, TargetName: "bob"}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := f.s.Audit(ctx, 2)
	if err != nil || len(es) != 2 || es[0].Action != "delete user" || es[0].ID != 3 || es[1].Action != "disable user" || es[0].Time.IsZero() {
		t.Errorf("Audit(2) = %+v, %v", es, err)
	}
	if err := f.s.PutAudit(ctx, &AuditEntry{ID: 10, Action: "copied"}); err != nil {
		t.Fatal(err)
	}
	e := &AuditEntry{Action: "after the copy"}
	if err := f.s.AddAudit(ctx, e); err != nil || e.ID != 11 {
		t.Errorf("an entry after a copied one: ID %d, %v", e.ID, err)
	}
}

func TestSessionTouchAndEnd(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bob := f.mustUser(t, "bob")
	token, err := f.s.CreateSession(ctx, f.user.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Add(time.Minute)
	if err := f.s.TouchSession(ctx, token, "Firefox"); err != nil {
		t.Fatal(err)
	}
	ss, err := f.s.Session(ctx, token)
	if err != nil || ss.UserAgent != "Firefox" || !ss.LastSeen.Equal(f.clock.Now()) {
		t.Errorf("touched session %+v, %v", ss, err)
	}
	if err := f.s.TouchSession(ctx, "unknown", ""); err != nil {
		t.Errorf("touching an unknown session: %v", err)
	}
	if err := f.s.EndSession(ctx, bob.ID, SecretHash(token)); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("bob ending alice's session: %v", err)
	}
	if err := f.s.EndSession(ctx, f.user.ID, SecretHash(token)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Session(ctx, token); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("an ended session: %v", err)
	}
}

func TestDisabledKept(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.s.UpdateUser(ctx, f.user.ID, func(u *changedigest.User) error { u.Disabled = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if u, err := f.s.User(ctx, f.user.ID); err != nil || !u.Disabled {
		t.Errorf("User after disabling: %+v, %v", u, err)
	}
}
