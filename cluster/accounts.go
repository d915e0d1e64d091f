package cluster

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// Accounts (users, login sessions, API tokens, profiles) are the
// cluster's, kept in the accounts bucket; every node keeps a copy of them
// all in its store, since any node serves any user. A write goes to the
// bucket and returns once this node's copy has it, so that the next
// request (the page after a login) finds it.
//
// Keys:
//
//	user.<id>                  the user, secrets included (userRecord)
//	name.<hex of lower name>   the user ID that has this name
//	session.<user id>.<hash>   a login session under its token's hash
//	token.<id>.<hash>          an API token under its secret's hash
//	profile.<user id>          a profile with its FOAF document
//	channel.<id>               a notification channel with its secret
//	websub.<hash>              a WebSub subscription (channels.go)
//	secret.web-key             the key that signs the web forms' tokens
//	setting.*, ticket.*, audit.*  account administration (admin.go)

const accountsSubjects = "$KV." + accountsBucket + ".>"

func userKey(id int64) string { return "user." + strconv.FormatInt(id, 10) }

func nameKey(name string) string {
	return "name." + hex.EncodeToString([]byte(strings.ToLower(name)))
}

func sessionKey(userID int64, hash []byte) string {
	return "session." + strconv.FormatInt(userID, 10) + "." + hex.EncodeToString(hash)
}

func tokenKey(id int64, hash []byte) string {
	return "token." + strconv.FormatInt(id, 10) + "." + hex.EncodeToString(hash)
}

func profileKey(userID int64) string { return "profile." + strconv.FormatInt(userID, 10) }

// userRecord is a user as the bucket keeps it: the domain type keeps its
// secrets out of JSON.
type userRecord struct {
	changedigest.User
	PasswordHash []byte `json:"password_hash,omitempty"`
	FeedToken    string `json:"feed_token"`
}

func recordOf(u *changedigest.User) userRecord {
	return userRecord{User: *u, PasswordHash: u.PasswordHash, FeedToken: u.FeedToken}
}

func (r *userRecord) user() *changedigest.User {
	u := r.User
	u.PasswordHash, u.FeedToken = r.PasswordHash, r.FeedToken
	return &u
}

type tokenRecord struct {
	Token pet.Token `json:"token"`
	Hash  []byte    `json:"hash"`
}

type profileRecord struct {
	Profile  changedigest.Profile `json:"profile"`
	Document []byte               `json:"document,omitempty"`
}

// CreateUser defines a new user in the cluster, setting u.ID (from the
// cluster's counter), u.CreatedAt and u.FeedToken (when empty). Names are
// unique regardless of case. Errors: EINVALID from User.Validate;
// ECONFLICT when the name is taken.
func (c *Conn) CreateUser(ctx context.Context, u *changedigest.User) error {
	_, err := c.createUser(ctx, u)
	return err
}

func (c *Conn) createUser(ctx context.Context, u *changedigest.User) (uint64, error) {
	nu := *u
	if nu.FeedToken == "" {
		nu.FeedToken = pet.NewSecret()
	}
	if nu.CreatedAt.IsZero() {
		nu.CreatedAt = time.Now()
	}
	if err := nu.Validate(); err != nil {
		return 0, err
	}
	id, err := c.nextID(ctx, "user", 1)
	if err != nil {
		return 0, err
	}
	nu.ID = id
	if _, err := c.accounts.Create(ctx, nameKey(nu.Name), []byte(strconv.FormatInt(id, 10))); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, changedigest.Errorf(changedigest.ECONFLICT, "user name %q is taken", nu.Name)
		}
		return 0, fmt.Errorf("cluster: create user %q: %w", nu.Name, unavailable(err))
	}
	data, err := json.Marshal(recordOf(&nu))
	if err != nil {
		return 0, err
	}
	rev, err := c.accounts.Create(ctx, userKey(id), data)
	if err != nil {
		c.accounts.Delete(ctx, nameKey(nu.Name))
		return 0, fmt.Errorf("cluster: create user %q: %w", nu.Name, unavailable(err))
	}
	*u = nu
	return rev, nil
}

// WebKey returns the key that signs the web forms' tokens on every node,
// so that a form served by one node may be sent to another: the first
// node's key, which it gives as key.
func (c *Conn) WebKey(ctx context.Context, key []byte) ([]byte, error) {
	var e jetstream.KeyValueEntry
	err := again(ctx, func() error {
		_, err := c.accounts.Create(ctx, "secret.web-key", key)
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err = c.accounts.Get(ctx, "secret.web-key")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: the web key: %w", unavailable(err))
	}
	if e == nil {
		return key, nil
	}
	if len(e.Value()) < 32 {
		return nil, fmt.Errorf("cluster: the web key holds %d bytes, want at least 32", len(e.Value()))
	}
	return e.Value(), nil
}

// UserByName reads a user from the bucket. Errors: ENOTFOUND.
func (c *Conn) UserByName(ctx context.Context, name string) (*changedigest.User, error) {
	var e jetstream.KeyValueEntry
	err := again(ctx, func() (err error) {
		e, err = c.accounts.Get(ctx, nameKey(name))
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "user %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: find user %q: %w", name, unavailable(err))
	}
	id, err := strconv.ParseInt(string(e.Value()), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("cluster: user name %q names %q, not an ID", name, e.Value())
	}
	u, _, err := c.user(ctx, id)
	return u, err
}

// Users lists the cluster's users by ID.
func (c *Conn) Users(ctx context.Context) ([]changedigest.User, error) {
	var out []changedigest.User
	err := again(ctx, func() error {
		out = out[:0]
		return scan(ctx, c.accountsStream, "$KV."+accountsBucket+".user.*", func(m *jetstream.RawStreamMsg) error {
			var r userRecord
			if !kvDeleted(m) && json.Unmarshal(m.Data, &r) == nil {
				out = append(out, *r.user())
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: list users: %w", unavailable(err))
	}
	slices.SortFunc(out, func(a, b changedigest.User) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// user reads user id and its revision from the bucket. Errors: ENOTFOUND.
func (c *Conn) user(ctx context.Context, id int64) (*changedigest.User, uint64, error) {
	var e jetstream.KeyValueEntry
	err := again(ctx, func() (err error) {
		e, err = c.accounts.Get(ctx, userKey(id))
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, changedigest.Errorf(changedigest.ENOTFOUND, "user %d not found", id)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: read user %d: %w", id, unavailable(err))
	}
	var r userRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, fmt.Errorf("cluster: user %d: %w", id, err)
	}
	return r.user(), e.Revision(), nil
}

// UpdateUser changes user id in the bucket as pet.Store.UpdateUser does
// in a store: fn edits a copy; ID and CreatedAt cannot change; an empty
// FeedToken gets a fresh secret. Errors: ENOTFOUND; EINVALID; ECONFLICT
// for a taken name; fn's own error, as is.
func (c *Conn) UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error) {
	u, _, err := c.updateUser(ctx, id, fn)
	return u, err
}

func (c *Conn) updateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, uint64, error) {
	for range 5 {
		old, rev, err := c.user(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		u := *old
		u.PasswordHash = append([]byte(nil), old.PasswordHash...)
		if err := fn(&u); err != nil {
			return nil, 0, err
		}
		u.ID, u.CreatedAt = old.ID, old.CreatedAt
		if u.FeedToken == "" {
			u.FeedToken = pet.NewSecret()
		}
		if err := u.Validate(); err != nil {
			return nil, 0, err
		}
		renamed := !strings.EqualFold(u.Name, old.Name)
		if renamed {
			if _, err := c.accounts.Create(ctx, nameKey(u.Name), []byte(strconv.FormatInt(id, 10))); errors.Is(err, jetstream.ErrKeyExists) {
				return nil, 0, changedigest.Errorf(changedigest.ECONFLICT, "user name %q is taken", u.Name)
			} else if err != nil {
				return nil, 0, fmt.Errorf("cluster: rename user %d: %w", id, unavailable(err))
			}
		}
		data, err := json.Marshal(recordOf(&u))
		if err != nil {
			return nil, 0, err
		}
		nrev, err := c.accounts.Update(ctx, userKey(id), data, rev)
		if err == nil {
			if renamed {
				c.accounts.Delete(ctx, nameKey(old.Name))
			}
			return &u, nrev, nil
		}
		if renamed {
			c.accounts.Delete(ctx, nameKey(u.Name))
		}
		if !conflict(err) {
			return nil, 0, fmt.Errorf("cluster: write user %d: %w", id, unavailable(err))
		}
	}
	return nil, 0, fmt.Errorf("cluster: user %d changed under five writes in a row", id)
}

// accountsView is a node's copy of the accounts bucket: how far it has
// read, and a signal for writers waiting to read their own write.
type accountsView struct {
	once  sync.Once
	pos   atomic.Uint64
	ready atomic.Bool
	kick  chan struct{}
	mu    sync.Mutex
	moved chan struct{} // closed (and replaced) when pos advances
}

// accountCopy is the node's copy of the accounts, from where it was left.
func (n *Node) accountCopy() *accountsView {
	a := &n.accounts
	a.once.Do(func() {
		a.pos.Store(n.position(accountsPosition))
		a.kick = make(chan struct{}, 1)
		a.moved = make(chan struct{})
	})
	return a
}

// accountsPosition is the accounts' place among the shards' in the
// positions file.
const accountsPosition = -1

// advance records that everything up to seq is applied.
func (a *accountsView) advance(seq uint64) {
	a.pos.Store(seq)
	a.mu.Lock()
	close(a.moved)
	a.moved = make(chan struct{})
	a.mu.Unlock()
}

// followAccounts keeps this node's copy of the accounts until ctx ends,
// reading the bucket's stream message by message as the shard views do.
func (n *Node) followAccounts(ctx context.Context) {
	for ctx.Err() == nil {
		err := n.followAccountsOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		n.logger().Warn("accounts", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (n *Node) followAccountsOnce(ctx context.Context) error {
	a := n.accountCopy()
	idle := 0
	for {
		got := 0
		for range 1000 {
			m, err := n.Conn.accountsStream.GetMsg(ctx, a.pos.Load()+1, jetstream.WithGetMsgSubject(accountsSubjects))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				a.ready.Store(true)
				break
			}
			if err != nil {
				return err
			}
			if err := n.applyAccount(ctx, m); err != nil {
				return err
			}
			a.advance(m.Sequence)
			got++
		}
		if got > 0 {
			idle = 0
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.kick:
			idle = 0
		case <-time.After(pollWait(&idle, n.pollMost())):
		}
	}
}

// applyAccount puts an account record into the node's store, or deletes
// it. A record the store refuses is logged and skipped.
func (n *Node) applyAccount(ctx context.Context, m *jetstream.RawStreamMsg) error {
	key := strings.TrimPrefix(m.Subject, "$KV."+accountsBucket+".")
	kind, rest, _ := strings.Cut(key, ".")
	deleted := kvDeleted(m)
	s := n.Store
	var err error
	switch kind {
	case "user":
		id, perr := strconv.ParseInt(rest, 10, 64)
		if perr != nil {
			break
		}
		if deleted {
			err = s.DeleteUser(ctx, id)
			break
		}
		var r userRecord
		if err = json.Unmarshal(m.Data, &r); err == nil {
			u := r.user()
			u.ID = id
			err = s.PutUser(ctx, u)
		}
	case "session":
		_, hashText, _ := strings.Cut(rest, ".")
		hash, herr := hex.DecodeString(hashText)
		if herr != nil {
			break
		}
		if deleted {
			err = s.DeleteSessionHash(ctx, hash)
			break
		}
		r := pet.SessionRecord{Hash: hash}
		if err = json.Unmarshal(m.Data, &r.Session); err == nil {
			err = s.PutSession(ctx, r)
		}
	case "token":
		idText, _, _ := strings.Cut(rest, ".")
		id, perr := strconv.ParseInt(idText, 10, 64)
		if perr != nil {
			break
		}
		if deleted {
			err = s.RevokeToken(ctx, pet.AnyUser, id)
			break
		}
		var r tokenRecord
		if err = json.Unmarshal(m.Data, &r); err == nil {
			r.Token.ID = id
			err = s.PutToken(ctx, r.Token, r.Hash)
		}
	case "channel":
		id, perr := strconv.ParseInt(rest, 10, 64)
		if perr == nil {
			err = n.applyChannel(ctx, id, deleted, m.Data)
		}
	case "websub":
		err = n.applySubscription(ctx, key, deleted, m.Data)
	case "setting", "ticket", "audit":
		err = n.applyAdmin(ctx, kind, rest, deleted, m.Data)
	case "profile":
		id, perr := strconv.ParseInt(rest, 10, 64)
		if perr != nil {
			break
		}
		if deleted {
			err = s.DeleteProfile(ctx, id)
			break
		}
		var r profileRecord
		if err = json.Unmarshal(m.Data, &r); err == nil {
			r.Profile.UserID = id
			err = s.ReplaceProfile(ctx, &r.Profile, r.Document)
		}
	}
	var syntax *json.SyntaxError
	switch {
	case err == nil, errors.Is(err, pet.ErrNotFound):
		return nil
	case errors.Is(err, pet.ErrInvalid), errors.Is(err, pet.ErrConflict), errors.Is(err, pet.ErrTooLarge), errors.As(err, &syntax):
		n.logger().Error("skipping an account record", "key", key, "err", err)
		return nil
	}
	return fmt.Errorf("apply %s: %w", key, err)
}

// awaitAccounts waits until this node's copy of the accounts holds the
// write of revision rev (at most a few seconds: the write is the
// cluster's either way).
func (n *Node) awaitAccounts(ctx context.Context, rev uint64) {
	a := n.accountCopy()
	select {
	case a.kick <- struct{}{}:
	default:
	}
	deadline := time.After(5 * time.Second)
	for a.pos.Load() < rev {
		a.mu.Lock()
		moved := a.moved
		a.mu.Unlock()
		if a.pos.Load() >= rev {
			return
		}
		select {
		case <-moved:
		case <-deadline:
			n.logger().Warn("this node's copy of the accounts is behind", "at", a.pos.Load(), "want", rev)
			return
		case <-ctx.Done():
			return
		}
	}
}

// The account methods of the web server's store: writes go to the
// accounts bucket; reads are the node's copy (pet.Store's, embedded).

// CreateUser defines a new user in the cluster (see Conn.CreateUser) and
// returns once this node's copy holds it.
func (s Store) CreateUser(ctx context.Context, u *changedigest.User) error {
	rev, err := s.Node.Conn.createUser(ctx, u)
	if err != nil {
		return err
	}
	s.Node.awaitAccounts(ctx, rev)
	return nil
}

// UpdateUser changes the user in the cluster (see Conn.UpdateUser).
func (s Store) UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error) {
	u, rev, err := s.Node.Conn.updateUser(ctx, id, fn)
	if err != nil {
		return nil, err
	}
	s.Node.awaitAccounts(ctx, rev)
	return u, nil
}

// CreateSession starts a login session valid on every node. Errors:
// EINVALID for ttl <= 0; ENOTFOUND for an unknown user.
func (s Store) CreateSession(ctx context.Context, userID int64, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", changedigest.Errorf(changedigest.EINVALID, "session lifetime %s is not positive", ttl)
	}
	if _, _, err := s.Node.Conn.user(ctx, userID); err != nil {
		return "", err
	}
	token := pet.NewSecret()
	now := time.Now()
	data, err := json.Marshal(pet.Session{UserID: userID, CreatedAt: now, ExpiresAt: now.Add(ttl)})
	if err != nil {
		return "", err
	}
	rev, err := s.Node.Conn.accounts.Put(ctx, sessionKey(userID, pet.SecretHash(token)), data)
	if err != nil {
		err = unavailable(err)
		if errors.Is(err, errFull) && s.Node.holdSession(token, pet.Session{UserID: userID, CreatedAt: now, ExpiresAt: now.Add(ttl)}) {
			// A login goes on while storage is full: the session lives
			// in this node's memory until it ends or the node stops.
			s.Node.logger().Warn("a login session is kept in memory alone: storage is full", "user", userID)
			return token, nil
		}
		return "", fmt.Errorf("cluster: create session: %w", err)
	}
	s.Node.awaitAccounts(ctx, rev)
	return token, nil
}

// maxHeldSessions bounds the sessions a node holds in memory alone.
const maxHeldSessions = 10000

// heldSessions are the login sessions a node could not store (its
// storage full), by the hash of their token.
type heldSessions struct {
	mu sync.Mutex
	m  map[string]pet.Session
}

// holdSession keeps a session in the node's memory alone; false when the
// node holds too many already.
func (n *Node) holdSession(token string, ss pet.Session) bool {
	h := &n.held
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]pet.Session{}
	}
	now := time.Now()
	for k, x := range h.m {
		if !now.Before(x.ExpiresAt) {
			delete(h.m, k)
		}
	}
	if len(h.m) >= maxHeldSessions {
		return false
	}
	h.m[string(pet.SecretHash(token))] = ss
	return true
}

// heldSession returns the live session of this token the node holds in
// memory alone (nil for none); with end, it ends it too.
func (n *Node) heldSession(token string, end bool) *pet.Session {
	h := &n.held
	h.mu.Lock()
	defer h.mu.Unlock()
	k := string(pet.SecretHash(token))
	ss, ok := h.m[k]
	if end {
		delete(h.m, k)
	}
	if !ok || !time.Now().Before(ss.ExpiresAt) {
		return nil
	}
	return &ss
}

// UserByName returns the user with this name: from this node's copy, or
// from the cluster when the copy does not hold it yet (a user made a
// moment ago). Errors: ENOTFOUND.
func (s Store) UserByName(ctx context.Context, name string) (*changedigest.User, error) {
	u, err := s.Store.UserByName(ctx, name)
	if errors.Is(err, pet.ErrNotFound) {
		if cu, cerr := s.Node.Conn.UserByName(ctx, name); cerr == nil {
			return cu, nil
		}
		if s.Node.catchUpAccounts(ctx) {
			return s.Store.UserByName(ctx, name)
		}
	}
	return u, err
}

// Session returns the live session of this token: from this node's copy,
// or, when the copy does not hold it (a login on another node a moment
// ago), from the cluster. Errors: ENOTFOUND for an unknown or expired
// token; EBUSY when the cluster does not answer.
func (s Store) Session(ctx context.Context, token string) (*pet.Session, error) {
	ss, err := s.Store.Session(ctx, token)
	if err == nil || token == "" || !errors.Is(err, pet.ErrNotFound) {
		return ss, err
	}
	if held := s.Node.heldSession(token, false); held != nil {
		return held, nil
	}
	m, ferr := s.Node.Conn.findAccount(ctx, "session.*."+hex.EncodeToString(pet.SecretHash(token)))
	if transient(ferr) {
		return nil, fmt.Errorf("cluster: find session: %w", unavailable(ferr))
	}
	var got pet.Session
	if ferr != nil || m == nil || json.Unmarshal(m.Data, &got) != nil || !time.Now().Before(got.ExpiresAt) {
		if s.Node.catchUpAccounts(ctx) {
			return s.Store.Session(ctx, token)
		}
		return nil, err
	}
	return &got, nil
}

// catchUpAccounts waits, up to five seconds, until this node's copy of
// the accounts holds every write the accounts bucket has acknowledged
// (its last sequence, from the bucket's leader): the direct gets that
// look a record up may be answered by a replica that has not received a
// write made on another node a moment ago, which the copy then applies.
// False when the copy held them all already, or they could not be read.
func (n *Node) catchUpAccounts(ctx context.Context) bool {
	ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
	info, err := n.Conn.accountsStream.Info(ictx)
	cancel()
	if err != nil || n.accountCopy().pos.Load() >= info.State.LastSeq {
		return false
	}
	n.awaitAccounts(ctx, info.State.LastSeq)
	return true
}

// DeleteSession ends the session of this token on every node; an unknown
// token is not an error.
func (s Store) DeleteSession(ctx context.Context, token string) error {
	if s.Node.heldSession(token, true) != nil {
		return nil
	}
	ss, err := s.Store.Session(ctx, token)
	if err != nil {
		return nil
	}
	return s.deleteSessions(ctx, []pet.SessionRecord{{Hash: pet.SecretHash(token), Session: *ss}})
}

// DeleteUserSessions ends every session of the user on every node.
func (s Store) DeleteUserSessions(ctx context.Context, userID int64) error {
	_, rev, err := s.Node.Conn.deleteUserSessions(ctx, userID)
	if err == nil {
		s.Node.awaitAccounts(ctx, rev)
	}
	return err
}

func (s Store) deleteSessions(ctx context.Context, rs []pet.SessionRecord) error {
	var last uint64
	for _, r := range rs {
		rev, err := s.Node.Conn.deleteAccount(ctx, sessionKey(r.UserID, r.Hash), 0)
		if err != nil {
			return fmt.Errorf("cluster: delete session: %w", unavailable(err))
		}
		last = rev
	}
	s.Node.awaitAccounts(ctx, last)
	return nil
}

// DeleteUserSessions ends every login session of the user in the cluster
// and returns how many there were.
func (c *Conn) DeleteUserSessions(ctx context.Context, userID int64) (int, error) {
	n, _, err := c.deleteUserSessions(ctx, userID)
	return n, err
}

// deleteUserSessions also returns the revision of the last deletion.
func (c *Conn) deleteUserSessions(ctx context.Context, userID int64) (int, uint64, error) {
	keys, err := c.accountKeys(ctx, "session."+strconv.FormatInt(userID, 10)+".*")
	if err != nil {
		return 0, 0, err
	}
	var last uint64
	for _, k := range keys {
		if last, err = c.deleteAccount(ctx, k, 0); err != nil {
			return 0, 0, fmt.Errorf("cluster: delete the sessions of user %d: %w", userID, unavailable(err))
		}
	}
	return len(keys), last, nil
}

// accountKeys lists the live keys of the accounts bucket that match the
// filter, reading the bucket's stream message by message.
func (c *Conn) accountKeys(ctx context.Context, filter string) ([]string, error) {
	prefix := "$KV." + accountsBucket + "."
	var keys []string
	err := again(ctx, func() error {
		keys = keys[:0]
		return scan(ctx, c.accountsStream, prefix+filter, func(m *jetstream.RawStreamMsg) error {
			if !kvDeleted(m) {
				keys = append(keys, strings.TrimPrefix(m.Subject, prefix))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: read the accounts: %w", unavailable(err))
	}
	return keys, nil
}

// deleteAccount deletes a key of the accounts bucket, as the bucket's
// Delete does (only from revision rev, when not 0), and returns the
// revision of the deletion.
func (c *Conn) deleteAccount(ctx context.Context, key string, rev uint64) (uint64, error) {
	msg := nats.NewMsg("$KV." + accountsBucket + "." + key)
	msg.Header.Set("KV-Operation", "DEL")
	var opts []jetstream.PublishOpt
	if rev > 0 {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(rev))
	}
	ack, err := c.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// PurgeSessions deletes the expired sessions from the cluster and from
// this node's copy, and returns how many.
func (s Store) PurgeSessions(ctx context.Context) (int, error) {
	rs, err := s.Store.Sessions(ctx, pet.AnyUser)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	n := 0
	for _, r := range rs {
		if now.Before(r.ExpiresAt) {
			continue
		}
		if _, err := s.Node.Conn.deleteAccount(ctx, sessionKey(r.UserID, r.Hash), 0); err != nil {
			return n, fmt.Errorf("cluster: purge sessions: %w", unavailable(err))
		}
		n++
	}
	_, err = s.Store.PurgeSessions(ctx)
	return n, err
}

// CreateToken creates a named API token valid on every node and returns
// its secret. Errors as pet.Store.CreateToken's.
func (s Store) CreateToken(ctx context.Context, userID int64, name string) (string, *pet.Token, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 64 {
		return "", nil, changedigest.Errorf(changedigest.EINVALID, "token name must be 1 to 64 characters")
	}
	if _, _, err := s.Node.Conn.user(ctx, userID); err != nil {
		return "", nil, err
	}
	toks, err := s.Store.Tokens(ctx, userID)
	if err != nil {
		return "", nil, err
	}
	for _, t := range toks {
		if strings.EqualFold(t.Name, name) {
			return "", nil, changedigest.Errorf(changedigest.ECONFLICT, "you already have a token named %q", name)
		}
	}
	c := s.Node.Conn
	id, err := c.nextID(ctx, "token", 1)
	if err != nil {
		return "", nil, err
	}
	secret := pet.TokenPrefix + pet.NewSecret()
	tok := pet.Token{ID: id, UserID: userID, Name: name, CreatedAt: time.Now()}
	data, err := json.Marshal(tokenRecord{Token: tok, Hash: pet.SecretHash(secret)})
	if err != nil {
		return "", nil, err
	}
	rev, err := c.accounts.Create(ctx, tokenKey(id, pet.SecretHash(secret)), data)
	if err != nil {
		return "", nil, fmt.Errorf("cluster: create token: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	return secret, &tok, nil
}

// RevokeToken deletes the user's API token on every node. Errors:
// ENOTFOUND when it does not exist or is another user's.
func (s Store) RevokeToken(ctx context.Context, userID, id int64) error {
	c := s.Node.Conn
	m, err := c.findAccount(ctx, "token."+strconv.FormatInt(id, 10)+".*")
	if err != nil {
		return fmt.Errorf("cluster: read token %d: %w", id, unavailable(err))
	}
	var r tokenRecord
	if m == nil || json.Unmarshal(m.Data, &r) != nil || userID != pet.AnyUser && r.Token.UserID != userID {
		return changedigest.Errorf(changedigest.ENOTFOUND, "token %d not found", id)
	}
	rev, err := c.deleteAccount(ctx, tokenKey(id, r.Hash), m.Sequence)
	if err != nil {
		return fmt.Errorf("cluster: revoke token %d: %w", id, unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	return nil
}

// UserByToken returns the user of an API token secret and the token: from
// this node's copy, or from the cluster when the copy does not hold it
// yet (a token made on another node a moment ago). Errors: ENOTFOUND.
func (s Store) UserByToken(ctx context.Context, secret string) (*changedigest.User, *pet.Token, error) {
	u, tok, err := s.Store.UserByToken(ctx, secret)
	if err == nil || secret == "" || !errors.Is(err, pet.ErrNotFound) {
		return u, tok, err
	}
	m, ferr := s.Node.Conn.findAccount(ctx, "token.*."+hex.EncodeToString(pet.SecretHash(secret)))
	var r tokenRecord
	if ferr != nil || m == nil || json.Unmarshal(m.Data, &r) != nil {
		if s.Node.catchUpAccounts(ctx) {
			return s.Store.UserByToken(ctx, secret)
		}
		return nil, nil, err
	}
	cu, _, uerr := s.Node.Conn.user(ctx, r.Token.UserID)
	if uerr != nil {
		return nil, nil, err
	}
	return cu, &r.Token, nil
}

// findAccount reads the live record of the one key that matches the
// filter (nil when there is none, or it was deleted).
func (c *Conn) findAccount(ctx context.Context, filter string) (*jetstream.RawStreamMsg, error) {
	var m *jetstream.RawStreamMsg
	err := again(ctx, func() (err error) {
		m, err = c.accountsStream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject("$KV."+accountsBucket+"."+filter))
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if kvDeleted(m) {
		return nil, nil
	}
	return m, nil
}

// PutProfile stores the user's profile and FOAF document in the cluster,
// setting p.UpdatedAt. Errors as pet.Store.PutProfile's.
func (s Store) PutProfile(ctx context.Context, p *changedigest.Profile, document []byte) error {
	if p == nil {
		return changedigest.Errorf(changedigest.EINVALID, "profile is missing")
	}
	if len(document) > pet.MaxProfileDocument {
		return changedigest.Errorf(changedigest.ETOOLARGE, "profile document of %d bytes is over the limit of %d bytes", len(document), pet.MaxProfileDocument)
	}
	if _, _, err := s.Node.Conn.user(ctx, p.UserID); err != nil {
		return err
	}
	np := *p
	np.UpdatedAt = time.Now()
	data, err := json.Marshal(profileRecord{Profile: np, Document: document})
	if err != nil {
		return err
	}
	rev, err := s.Node.Conn.accounts.Put(ctx, profileKey(p.UserID), data)
	if err != nil {
		return fmt.Errorf("cluster: store profile of user %d: %w", p.UserID, unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	p.UpdatedAt = np.UpdatedAt
	return nil
}

// DigestStore is the store the node's digest mailer reads: the cluster's
// changes, and only the users whose digest this node sends (those whose
// ID falls in a shard it serves), so that each user gets one mail.
type DigestStore struct{ Store }

// Users lists the users whose digest this node sends.
func (s DigestStore) Users(ctx context.Context) ([]changedigest.User, error) {
	us, err := s.Store.Store.Users(ctx)
	if err != nil {
		return nil, err
	}
	out := us[:0]
	for _, u := range us {
		if s.Node.owns(u.ID) {
			out = append(out, u)
		}
	}
	return out, nil
}
