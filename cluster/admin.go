package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// Account administration in the cluster: the registration mode, the
// one-time links (invitations, password resets) and the audit log live
// in the accounts bucket like the users, under these keys, and every
// node's copy follows them (applyAdmin):
//
//	setting.registration   the registration mode (a JSON string)
//	ticket.<hex of hash>   a one-time link under its secret's hash (pet.Ticket)
//	audit.<id>             an entry of the audit log (pet.AuditEntry)

const registrationKey = "setting.registration"

func ticketKey(hash []byte) string { return "ticket." + hex.EncodeToString(hash) }

func auditKey(id int64) string { return "audit." + strconv.FormatInt(id, 10) }

// applyAdmin puts a record of account administration into the node's
// store, or deletes it.
func (n *Node) applyAdmin(ctx context.Context, kind, rest string, deleted bool, data []byte) error {
	s := n.Store
	switch kind {
	case "setting":
		if rest != "registration" {
			return nil
		}
		mode := changedigest.RegistrationClosed
		if !deleted {
			if err := json.Unmarshal(data, &mode); err != nil {
				return err
			}
		}
		return s.SetRegistration(ctx, mode)
	case "ticket":
		hash, err := hex.DecodeString(rest)
		if err != nil {
			return nil
		}
		if deleted {
			return s.DeleteTicketHash(ctx, hash)
		}
		var t pet.Ticket
		if err := json.Unmarshal(data, &t); err != nil {
			return err
		}
		t.Hash = hash
		return s.PutTicket(ctx, &t)
	case "audit":
		id, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || deleted {
			return nil
		}
		var e pet.AuditEntry
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		e.ID = id
		return s.PutAudit(ctx, &e)
	}
	return nil
}

// SetRegistration sets the registration mode of the cluster. Errors:
// EINVALID.
func (s Store) SetRegistration(ctx context.Context, mode changedigest.Registration) error {
	if _, err := changedigest.ParseRegistration(string(mode)); err != nil {
		return err
	}
	data, err := json.Marshal(mode)
	if err != nil {
		return err
	}
	rev, err := s.Node.Conn.accounts.Put(ctx, registrationKey, data)
	if err != nil {
		return fmt.Errorf("cluster: set the registration mode: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	return nil
}

// CreateTicket stores a one-time link valid on every node and returns its
// secret. Errors as pet.Store.CreateTicket's.
func (s Store) CreateTicket(ctx context.Context, t *pet.Ticket) (string, error) {
	secret := pet.NewSecret()
	t.Hash, t.CreatedAt = pet.SecretHash(secret), time.Now()
	switch {
	case t.Kind != pet.TicketInvite && t.Kind != pet.TicketReset:
		return "", changedigest.Errorf(changedigest.EINVALID, "ticket kind %q is not %s or %s", t.Kind, pet.TicketInvite, pet.TicketReset)
	case !t.ExpiresAt.After(t.CreatedAt):
		return "", changedigest.Errorf(changedigest.EINVALID, "the link would expire before it is made")
	case len(t.Note) > 200:
		return "", changedigest.Errorf(changedigest.EINVALID, "the note is longer than 200 characters")
	}
	if t.Kind == pet.TicketReset {
		if _, _, err := s.Node.Conn.user(ctx, t.UserID); err != nil {
			return "", err
		}
	}
	data, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	rev, err := s.Node.Conn.accounts.Create(ctx, ticketKey(t.Hash), data)
	if err != nil {
		return "", fmt.Errorf("cluster: create a %s link: %w", t.Kind, unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	return secret, nil
}

// Ticket returns the live one-time link of this secret: from this node's
// copy, or from the cluster when the copy does not hold it yet. Errors:
// ENOTFOUND.
func (s Store) Ticket(ctx context.Context, secret string) (*pet.Ticket, error) {
	t, err := s.Store.Ticket(ctx, secret)
	if err == nil || secret == "" || !errors.Is(err, pet.ErrNotFound) {
		return t, err
	}
	ct, _, cerr := s.ticket(ctx, pet.SecretHash(secret))
	if cerr != nil || !time.Now().Before(ct.ExpiresAt) {
		return nil, err
	}
	return ct, nil
}

// ticket reads a one-time link and its revision from the bucket. Errors:
// ENOTFOUND.
func (s Store) ticket(ctx context.Context, hash []byte) (*pet.Ticket, uint64, error) {
	var e jetstream.KeyValueEntry
	err := again(ctx, func() (err error) {
		e, err = s.Node.Conn.accounts.Get(ctx, ticketKey(hash))
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, changedigest.Errorf(changedigest.ENOTFOUND, "the link is not valid: it was used already, withdrawn, or never made")
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: read a link: %w", unavailable(err))
	}
	var t pet.Ticket
	if err := json.Unmarshal(e.Value(), &t); err != nil {
		return nil, 0, fmt.Errorf("cluster: a link: %w", err)
	}
	t.Hash = hash
	return &t, e.Revision(), nil
}

// UseTicket takes the one-time link of this secret in the cluster: of
// two nodes taking it at once, one gets it. Errors: ENOTFOUND for an
// unknown, used or expired link.
func (s Store) UseTicket(ctx context.Context, secret string) (*pet.Ticket, error) {
	if secret == "" {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "the link is not valid")
	}
	t, rev, err := s.ticket(ctx, pet.SecretHash(secret))
	if err != nil {
		return nil, err
	}
	drev, err := s.Node.Conn.deleteAccount(ctx, ticketKey(t.Hash), rev)
	if conflict(err) {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "the link was used already")
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: use a link: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, drev)
	if !time.Now().Before(t.ExpiresAt) {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "the link has expired")
	}
	return t, nil
}

// DeleteTicketHash withdraws a one-time link on every node.
func (s Store) DeleteTicketHash(ctx context.Context, hash []byte) error {
	rev, err := s.Node.Conn.deleteAccount(ctx, ticketKey(hash), 0)
	if err != nil {
		return fmt.Errorf("cluster: withdraw a link: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	return nil
}

// AddAudit appends an entry to the cluster's audit log, setting e.ID
// (from the cluster's counter) and e.Time (when zero).
func (s Store) AddAudit(ctx context.Context, e *pet.AuditEntry) error {
	id, err := s.Node.Conn.nextID(ctx, "audit", 1)
	if err != nil {
		return err
	}
	ne := *e
	ne.ID = id
	if ne.Time.IsZero() {
		ne.Time = time.Now()
	}
	data, err := json.Marshal(ne)
	if err != nil {
		return err
	}
	rev, err := s.Node.Conn.accounts.Create(ctx, auditKey(id), data)
	if err != nil {
		return fmt.Errorf("cluster: write the audit log: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	*e = ne
	return nil
}

// TouchSession records in the cluster that the session of this token was
// used now (and the browser's User-Agent, when agent is not empty). A
// session ended meanwhile stays ended; an unknown token is not an error.
func (s Store) TouchSession(ctx context.Context, token, agent string) error {
	ss, err := s.Store.Session(ctx, token)
	if err != nil {
		return nil
	}
	key := sessionKey(ss.UserID, pet.SecretHash(token))
	e, err := s.Node.Conn.accounts.Get(ctx, key)
	if err != nil {
		return nil // ended, or held in memory alone
	}
	var cur pet.Session
	if err := json.Unmarshal(e.Value(), &cur); err != nil {
		return nil
	}
	cur.LastSeen = time.Now()
	if agent != "" {
		cur.UserAgent = pet.ClipAgent(agent)
	}
	data, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	if _, err := s.Node.Conn.accounts.Update(ctx, key, data, e.Revision()); err != nil && !conflict(err) {
		return fmt.Errorf("cluster: touch session: %w", unavailable(err))
	}
	return nil
}

// EndSession ends the user's session of this hash on every node. Errors:
// ENOTFOUND when there is none, or it is another user's.
func (s Store) EndSession(ctx context.Context, userID int64, hash []byte) error {
	rs, err := s.Store.Sessions(ctx, userID)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if string(r.Hash) == string(hash) {
			return s.deleteSessions(ctx, []pet.SessionRecord{r})
		}
	}
	return changedigest.Errorf(changedigest.ENOTFOUND, "session not found")
}

// DeleteUser deletes the user from the cluster with everything they own:
// their watches (and their versions), notification channels, WebSub
// subscriptions, API tokens, sessions, profile and password reset links;
// each node's copy then drops the rest (deliveries). Errors: ENOTFOUND.
func (s Store) DeleteUser(ctx context.Context, id int64) error {
	c := s.Node.Conn
	u, _, err := c.user(ctx, id)
	if err != nil {
		return err
	}
	ws, err := s.Watches(ctx, id, "")
	if err != nil {
		return err
	}
	for _, w := range ws {
		if err := s.DeleteWatch(ctx, pet.AnyUser, w.ID); err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			return err
		}
	}
	chans, err := s.Store.Channels(ctx, id)
	if err != nil {
		return err
	}
	for _, ch := range chans {
		if err := s.DeleteChannel(ctx, id, ch.ID); err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			return err
		}
	}
	subs, err := s.Store.Subscriptions(ctx, id)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if err := s.DeleteSubscription(ctx, sub.Topic, sub.Callback); err != nil {
			return err
		}
	}
	toks, err := s.Store.Tokens(ctx, id)
	if err != nil {
		return err
	}
	for _, t := range toks {
		if err := s.RevokeToken(ctx, id, t.ID); err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			return err
		}
	}
	if err := s.DeleteUserSessions(ctx, id); err != nil {
		return err
	}
	tickets, err := s.Store.Tickets(ctx)
	if err != nil {
		return err
	}
	for _, t := range tickets {
		if t.UserID == id {
			if err := s.DeleteTicketHash(ctx, t.Hash); err != nil {
				return err
			}
		}
	}
	if _, err := c.deleteAccount(ctx, profileKey(id), 0); err != nil {
		return fmt.Errorf("cluster: delete the profile of user %d: %w", id, unavailable(err))
	}
	rev, err := c.deleteAccount(ctx, userKey(id), 0)
	if err != nil {
		return fmt.Errorf("cluster: delete user %d: %w", id, unavailable(err))
	}
	if _, err := c.deleteAccount(ctx, nameKey(u.Name), 0); err != nil {
		return fmt.Errorf("cluster: delete the name of user %d: %w", id, unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	return nil
}
