package pet

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// Account administration: the registration mode, one-time tickets
// (invitations and password resets) and the audit log of administrators'
// actions.

// Ticket kinds.
const (
	// TicketInvite lets its holder create an account.
	TicketInvite = "invite"
	// TicketReset lets its holder set the password of user UserID.
	TicketReset = "reset"
)

// Ticket is a one-time link's record: an invitation or a password reset.
// Its secret is given once, by CreateTicket; the store keeps only its
// hash.
type Ticket struct {
	// Hash is SecretHash of the secret, which names the ticket.
	Hash []byte `json:"hash"`
	Kind string `json:"kind"`
	// UserID is the user whose password a reset sets (0 for an invite).
	UserID int64 `json:"user_id,omitempty"`
	// Admin makes the invited person an administrator.
	Admin     bool      `json:"admin,omitempty"`
	CreatedBy int64     `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Note is what the administrator wrote down about the invitation.
	Note string `json:"note,omitempty"`
}

// AuditEntry is one administrator's action: who did what to whom, when.
type AuditEntry struct {
	ID        int64     `json:"id"`
	Time      time.Time `json:"time"`
	ActorID   int64     `json:"actor_id"`
	ActorName string    `json:"actor_name"`
	// Action is a short verb phrase: "create user", "disable user", …
	Action     string `json:"action"`
	TargetID   int64  `json:"target_id,omitempty"`
	TargetName string `json:"target_name,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

var keyRegistration = []byte("registration")

// Registration returns the registration mode (RegistrationClosed until
// an administrator sets one).
func (s *Store) Registration(ctx context.Context) (changedigest.Registration, error) {
	mode := changedigest.RegistrationClosed
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if v := tx.Bucket(bAccountSettings).Get(keyRegistration); v != nil {
			if r, err := changedigest.ParseRegistration(string(v)); err == nil {
				mode = r
			}
		}
		return nil
	})
	if err != nil {
		return "", wrap(err, "read the registration mode")
	}
	return mode, nil
}

// SetRegistration sets the registration mode. Errors: EINVALID.
func (s *Store) SetRegistration(ctx context.Context, mode changedigest.Registration) error {
	if _, err := changedigest.ParseRegistration(string(mode)); err != nil {
		return domainErr(err)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bAccountSettings).Put(keyRegistration, []byte(mode))
	})
	return wrap(err, "set the registration mode")
}

// CreateTicket stores a one-time ticket and returns its secret, setting
// t.Hash and t.CreatedAt. Errors: EINVALID for an unknown kind, a reset
// without a user or an expiry not after now; ENOTFOUND for the unknown
// user of a reset.
func (s *Store) CreateTicket(ctx context.Context, t *Ticket) (string, error) {
	secret := NewSecret()
	err := s.update(ctx, func(tx *bolt.Tx) error {
		t.Hash, t.CreatedAt = secretHash(secret), s.now()
		if err := checkTicket(t); err != nil {
			return err
		}
		if t.Kind == TicketReset {
			if _, err := getUser(tx, t.UserID); err != nil {
				return err
			}
		}
		return putTicket(tx, t)
	})
	if err != nil {
		return "", wrap(err, "create a %s link", t.Kind)
	}
	return secret, nil
}

// checkTicket checks a ticket to store.
func checkTicket(t *Ticket) error {
	switch {
	case t.Kind != TicketInvite && t.Kind != TicketReset:
		return invalidf("ticket kind %q is not %s or %s", t.Kind, TicketInvite, TicketReset)
	case t.Kind == TicketReset && t.UserID <= 0:
		return invalidf("a password reset names no user")
	case !t.ExpiresAt.After(t.CreatedAt):
		return invalidf("the link would expire before it is made")
	case len(t.Hash) != len(secretHash("")):
		return invalidf("ticket hash of %d bytes is not a SHA-256 hash", len(t.Hash))
	case len(t.Note) > 200:
		return invalidf("the note is longer than 200 characters")
	}
	return nil
}

func putTicket(tx *bolt.Tx, t *Ticket) error {
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return tx.Bucket(bTickets).Put(t.Hash, v)
}

func getTicket(tx *bolt.Tx, hash []byte) (*Ticket, error) {
	v := tx.Bucket(bTickets).Get(hash)
	if len(hash) == 0 || v == nil {
		return nil, notFoundf("the link is not valid: it was used already, withdrawn, or never made")
	}
	var t Ticket
	if err := json.Unmarshal(v, &t); err != nil {
		return nil, corruptf("ticket: %v", err)
	}
	t.Hash = bytes.Clone(hash)
	return &t, nil
}

// PutTicket stores a ticket as it is (a copy of one kept elsewhere).
// Errors: EINVALID.
func (s *Store) PutTicket(ctx context.Context, t *Ticket) error {
	if err := checkTicket(t); err != nil {
		return err
	}
	return wrap(s.update(ctx, func(tx *bolt.Tx) error { return putTicket(tx, t) }), "put ticket")
}

// Ticket returns the live ticket of this secret. Errors: ENOTFOUND for
// an unknown, used or expired one.
func (s *Store) Ticket(ctx context.Context, secret string) (*Ticket, error) {
	var t *Ticket
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		if secret == "" {
			return notFoundf("the link is not valid")
		}
		t, err = getTicket(tx, secretHash(secret))
		if err == nil && !s.now().Before(t.ExpiresAt) {
			err = notFoundf("the link has expired")
		}
		return err
	})
	if err != nil {
		return nil, wrap(err, "find the link")
	}
	return t, nil
}

// UseTicket takes the live ticket of this secret: it returns it and
// deletes it, so that the link works once. Errors: ENOTFOUND as Ticket's.
func (s *Store) UseTicket(ctx context.Context, secret string) (*Ticket, error) {
	var t *Ticket
	err := s.update(ctx, func(tx *bolt.Tx) (err error) {
		if secret == "" {
			return notFoundf("the link is not valid")
		}
		if t, err = getTicket(tx, secretHash(secret)); err != nil {
			return err
		}
		if err := tx.Bucket(bTickets).Delete(t.Hash); err != nil {
			return err
		}
		if !s.now().Before(t.ExpiresAt) {
			t = nil
		}
		return nil
	})
	if err == nil && t == nil {
		err = notFoundf("the link has expired")
	}
	if err != nil {
		return nil, wrap(err, "use the link")
	}
	return t, nil
}

// DeleteTicketHash withdraws the ticket of this hash; none is not an error.
func (s *Store) DeleteTicketHash(ctx context.Context, hash []byte) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if len(hash) == 0 {
			return nil
		}
		return tx.Bucket(bTickets).Delete(hash)
	})
	return wrap(err, "withdraw the link")
}

// Tickets lists the live tickets, oldest first.
func (s *Store) Tickets(ctx context.Context) ([]Ticket, error) {
	var out []Ticket
	err := s.view(ctx, func(tx *bolt.Tx) error {
		now := s.now()
		return tx.Bucket(bTickets).ForEach(func(k, _ []byte) error {
			t, err := getTicket(tx, k)
			if err == nil && now.Before(t.ExpiresAt) {
				out = append(out, *t)
			}
			return nil
		})
	})
	if err != nil {
		return nil, wrap(err, "list links")
	}
	slices.SortStableFunc(out, func(a, b Ticket) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// AddAudit appends an entry to the audit log, setting e.ID and e.Time
// (when zero).
func (s *Store) AddAudit(ctx context.Context, e *AuditEntry) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		id, err := tx.Bucket(bAudit).NextSequence()
		if err != nil {
			return err
		}
		ne := *e
		ne.ID = int64(id)
		if ne.Time.IsZero() {
			ne.Time = s.now()
		}
		if err := putAudit(tx, &ne); err != nil {
			return err
		}
		*e = ne
		return nil
	})
	return wrap(err, "write the audit log")
}

func putAudit(tx *bolt.Tx, e *AuditEntry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b := tx.Bucket(bAudit)
	if uint64(e.ID) > b.Sequence() {
		if err := b.SetSequence(uint64(e.ID)); err != nil {
			return err
		}
	}
	return b.Put(id64(e.ID), v)
}

// PutAudit stores an audit entry under its own ID (a copy of one kept
// elsewhere). Errors: EINVALID for a zero ID.
func (s *Store) PutAudit(ctx context.Context, e *AuditEntry) error {
	if e.ID <= 0 {
		return invalidf("audit entry to put has no ID")
	}
	return wrap(s.update(ctx, func(tx *bolt.Tx) error { return putAudit(tx, e) }), "put audit entry")
}

// Audit lists the newest limit entries of the audit log, newest first.
func (s *Store) Audit(ctx context.Context, limit int) ([]AuditEntry, error) {
	var out []AuditEntry
	err := s.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bAudit).Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			var e AuditEntry
			if json.Unmarshal(v, &e) == nil {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "read the audit log")
	}
	return out, nil
}

// TouchSession records that the session of this token was used now,
// and, when agent is not empty, the browser's User-Agent. An unknown
// token is not an error.
func (s *Store) TouchSession(ctx context.Context, token, agent string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bSessions)
		k := secretHash(token)
		v := b.Get(k)
		if token == "" || v == nil {
			return nil
		}
		var ss Session
		if err := json.Unmarshal(v, &ss); err != nil {
			return corruptf("session: %v", err)
		}
		ss.LastSeen = s.now()
		if agent != "" {
			ss.UserAgent = clipAgent(agent)
		}
		nv, err := json.Marshal(ss)
		if err != nil {
			return err
		}
		return b.Put(k, nv)
	})
	return wrap(err, "touch session")
}

// clipAgent bounds a User-Agent kept with a session.
func clipAgent(agent string) string {
	const most = 256
	if len(agent) > most {
		agent = agent[:most]
	}
	return agent
}

// ClipAgent is clipAgent for a copy of the store kept elsewhere.
func ClipAgent(agent string) string { return clipAgent(agent) }

// EndSession ends the user's session stored under this hash. Errors:
// ENOTFOUND when there is none, or it is another user's.
func (s *Store) EndSession(ctx context.Context, userID int64, hash []byte) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bSessions)
		v := b.Get(hash)
		var ss Session
		if len(hash) == 0 || v == nil || json.Unmarshal(v, &ss) != nil || ss.UserID != userID {
			return notFoundf("session not found")
		}
		return b.Delete(hash)
	})
	return wrap(err, "end session")
}

// deleteUserTickets deletes the password reset links of the user.
func deleteUserTickets(tx *bolt.Tx, userID int64) error {
	c := tx.Bucket(bTickets).Cursor()
	for k, v := c.First(); k != nil; {
		var t Ticket
		if json.Unmarshal(v, &t) != nil || t.UserID != userID {
			k, v = c.Next()
			continue
		}
		if err := c.Delete(); err != nil {
			return err
		}
		k, v = c.Seek(k)
	}
	return nil
}
