package pet

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// userRec is a stored user: the domain type hides its secrets from JSON.
type userRec struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	PasswordHash []byte    `json:"password_hash,omitempty"`
	Admin        bool      `json:"admin,omitempty"`
	Disabled     bool      `json:"disabled,omitempty"`
	Email        string    `json:"email,omitempty"`
	FeedToken    string    `json:"feed_token"`
	CreatedAt    time.Time `json:"created_at"`
	DigestHour   int       `json:"digest_hour"`
	DigestSent   string    `json:"digest_sent,omitempty"`
}

func (r *userRec) user() *changedigest.User {
	return &changedigest.User{ID: r.ID, Name: r.Name, PasswordHash: r.PasswordHash, Admin: r.Admin,
		Disabled: r.Disabled, Email: r.Email, FeedToken: r.FeedToken, CreatedAt: r.CreatedAt, DigestHour: r.DigestHour, DigestSent: r.DigestSent}
}

func recOf(u *changedigest.User) *userRec {
	return &userRec{ID: u.ID, Name: u.Name, PasswordHash: u.PasswordHash, Admin: u.Admin,
		Disabled: u.Disabled, Email: u.Email, FeedToken: u.FeedToken, CreatedAt: u.CreatedAt, DigestHour: u.DigestHour, DigestSent: u.DigestSent}
}

// NewSecret returns a random URL-safe secret of 256 bits, as used for
// feed tokens, sessions and API tokens.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// SecretHash is the hash under which a store keeps a secret (a session's
// token, an API token): the secret itself is never stored.
func SecretHash(s string) []byte { return secretHash(s) }

func secretHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func getUser(tx *bolt.Tx, id int64) (*changedigest.User, error) {
	v := tx.Bucket(bUsers).Get(id64(id))
	if v == nil {
		return nil, notFoundf("user %d not found", id)
	}
	var r userRec
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, corruptf("user %d: %v", id, err)
	}
	return r.user(), nil
}

func nameKey(name string) []byte { return []byte(strings.ToLower(name)) }

func checkUser(u *changedigest.User) error { return domainErr(u.Validate()) }

func putUser(tx *bolt.Tx, u, old *changedigest.User) error {
	names, tokens := tx.Bucket(bUserNames), tx.Bucket(bFeedTokens)
	if old == nil || !bytes.Equal(nameKey(old.Name), nameKey(u.Name)) {
		if id := names.Get(nameKey(u.Name)); id != nil {
			return conflictf("user name %q is taken", u.Name)
		}
		if old != nil {
			if err := names.Delete(nameKey(old.Name)); err != nil {
				return err
			}
		}
		if err := names.Put(nameKey(u.Name), id64(u.ID)); err != nil {
			return err
		}
	}
	if old == nil || old.FeedToken != u.FeedToken {
		if tokens.Get([]byte(u.FeedToken)) != nil {
			return conflictf("feed token is taken")
		}
		if old != nil {
			if err := tokens.Delete([]byte(old.FeedToken)); err != nil {
				return err
			}
		}
		if err := tokens.Put([]byte(u.FeedToken), id64(u.ID)); err != nil {
			return err
		}
	}
	v, err := json.Marshal(recOf(u))
	if err != nil {
		return err
	}
	return tx.Bucket(bUsers).Put(id64(u.ID), v)
}

// CreateUser stores a new user, setting u.ID, u.CreatedAt (when zero) and
// u.FeedToken (a fresh secret when empty). Names are unique regardless of
// case. Errors: EINVALID for a bad name, digest hour or e-mail;
// ECONFLICT when the name is taken.
func (s *Store) CreateUser(ctx context.Context, u *changedigest.User) error {
	if u == nil {
		return invalidf("user is missing")
	}
	if err := checkUser(u); err != nil {
		return err
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		id, err := tx.Bucket(bUsers).NextSequence()
		if err != nil {
			return err
		}
		nu := *u
		nu.ID = int64(id)
		if nu.CreatedAt.IsZero() {
			nu.CreatedAt = s.now()
		}
		if nu.FeedToken == "" {
			nu.FeedToken = NewSecret()
		}
		if err := putUser(tx, &nu, nil); err != nil {
			return err
		}
		*u = nu
		return nil
	})
	return wrap(err, "create user %q", u.Name)
}

// User returns user id. Errors: ENOTFOUND.
func (s *Store) User(ctx context.Context, id int64) (*changedigest.User, error) {
	var u *changedigest.User
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		u, err = getUser(tx, id)
		return err
	})
	if err != nil {
		return nil, wrap(err, "get user %d", id)
	}
	return u, nil
}

// UserByName returns the user with this name, in any case. Errors: ENOTFOUND.
func (s *Store) UserByName(ctx context.Context, name string) (*changedigest.User, error) {
	return s.userBy(ctx, bUserNames, nameKey(name), "user %q not found", name)
}

// UserByFeedToken returns the user whose feed token this is. Errors:
// ENOTFOUND (also for an empty token).
func (s *Store) UserByFeedToken(ctx context.Context, token string) (*changedigest.User, error) {
	return s.userBy(ctx, bFeedTokens, []byte(token), "no user has this feed token")
}

func (s *Store) userBy(ctx context.Context, index, k []byte, format string, args ...any) (*changedigest.User, error) {
	var u *changedigest.User
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		v := tx.Bucket(index).Get(k)
		if len(k) == 0 || v == nil {
			return notFoundf(format, args...)
		}
		u, err = getUser(tx, at(v, 0))
		return err
	})
	if err != nil {
		return nil, wrap(err, "find user")
	}
	return u, nil
}

// Users lists all users by id.
func (s *Store) Users(ctx context.Context) ([]changedigest.User, error) {
	var out []changedigest.User
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bUsers).ForEach(func(k, _ []byte) error {
			u, err := getUser(tx, at(k, 0))
			if err == nil {
				out = append(out, *u)
			}
			return err
		})
	})
	if err != nil {
		return nil, wrap(err, "list users")
	}
	return out, nil
}

// UpdateUser changes user id atomically: fn edits a copy, which is then
// checked and stored. ID and CreatedAt cannot change; an empty FeedToken
// gets a fresh secret (the way to revoke feed URLs). Errors: ENOTFOUND;
// EINVALID; ECONFLICT for a taken name; fn's own error, returned as is,
// leaves the user unchanged.
func (s *Store) UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error) {
	var out *changedigest.User
	var fnErr error
	err := s.update(ctx, func(tx *bolt.Tx) error {
		old, err := getUser(tx, id)
		if err != nil {
			return err
		}
		u := *old
		u.PasswordHash = slices.Clone(old.PasswordHash)
		if err := fn(&u); err != nil {
			fnErr = err
			return err
		}
		u.ID, u.CreatedAt = old.ID, old.CreatedAt
		if u.FeedToken == "" {
			u.FeedToken = NewSecret()
		}
		if err := checkUser(&u); err != nil {
			return err
		}
		if err := putUser(tx, &u, old); err != nil {
			return err
		}
		out = &u
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, wrap(err, "update user %d", id)
	}
	return out, nil
}

// DeleteUser deletes the user with everything they own: watches and
// their histories, sessions, API tokens, profile, notification channels,
// deliveries, WebSub subscriptions and password reset links. Errors:
// ENOTFOUND.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		u, err := getUser(tx, id)
		if err != nil {
			return err
		}
		prefix := id64(id)
		c := tx.Bucket(bUserWatch).Cursor()
		var wids []int64
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			wids = append(wids, at(k, 1))
		}
		for _, wid := range wids {
			w, err := getWatch(tx, wid)
			if err != nil {
				return err
			}
			if err := deleteWatch(s, tx, w); err != nil {
				return err
			}
		}
		if err := deleteSessions(tx, id); err != nil {
			return err
		}
		if err := deleteUserNotifications(tx, id); err != nil {
			return err
		}
		toks, err := userTokens(tx, id)
		if err != nil {
			return err
		}
		for _, t := range toks {
			if err := deleteToken(tx, t); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bProfiles).Delete(prefix); err != nil {
			return err
		}
		if err := deleteUserTickets(tx, id); err != nil {
			return err
		}
		if err := tx.Bucket(bUserNames).Delete(nameKey(u.Name)); err != nil {
			return err
		}
		if err := tx.Bucket(bFeedTokens).Delete([]byte(u.FeedToken)); err != nil {
			return err
		}
		return tx.Bucket(bUsers).Delete(prefix)
	})
	if err != nil {
		return wrap(err, "delete user %d", id)
	}
	s.syncAfterWrite()
	return nil
}

// Session is a login session. Its token is given once, by CreateSession;
// the store keeps only its hash.
type Session struct {
	UserID    int64     `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// LastSeen is when the session was last used (see TouchSession),
	// to the precision the server keeps it; UserAgent is the browser's
	// User-Agent at login.
	LastSeen  time.Time `json:"last_seen,omitzero"`
	UserAgent string    `json:"user_agent,omitempty"`
}

// CreateSession starts a session for the user lasting ttl and returns its
// secret token. Errors: EINVALID for ttl <= 0; ENOTFOUND for an unknown user.
func (s *Store) CreateSession(ctx context.Context, userID int64, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", invalidf("session lifetime %s is not positive", ttl)
	}
	token := NewSecret()
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if _, err := getUser(tx, userID); err != nil {
			return err
		}
		now := s.now()
		v, err := json.Marshal(Session{UserID: userID, CreatedAt: now, ExpiresAt: now.Add(ttl)})
		if err != nil {
			return err
		}
		return tx.Bucket(bSessions).Put(secretHash(token), v)
	})
	if err != nil {
		return "", wrap(err, "create session")
	}
	return token, nil
}

// Session returns the live session of this token. Errors: ENOTFOUND for
// an unknown or expired token.
func (s *Store) Session(ctx context.Context, token string) (*Session, error) {
	var out Session
	err := s.view(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bSessions).Get(secretHash(token))
		if token == "" || v == nil {
			return notFoundf("session not found")
		}
		if err := json.Unmarshal(v, &out); err != nil {
			return corruptf("session: %v", err)
		}
		if !s.now().Before(out.ExpiresAt) {
			return notFoundf("session has expired")
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "get session")
	}
	return &out, nil
}

// DeleteSession ends the session of this token; an unknown token is not an error.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bSessions).Delete(secretHash(token))
	})
	return wrap(err, "delete session")
}

// DeleteUserSessions ends every session of the user (log out everywhere).
func (s *Store) DeleteUserSessions(ctx context.Context, userID int64) error {
	err := s.update(ctx, func(tx *bolt.Tx) error { return deleteSessions(tx, userID) })
	return wrap(err, "delete sessions of user %d", userID)
}

// PurgeSessions deletes expired sessions and returns how many.
func (s *Store) PurgeSessions(ctx context.Context) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bSessions)
		now := s.now()
		c := b.Cursor()
		for k, v := c.First(); k != nil; {
			var ss Session
			if json.Unmarshal(v, &ss) == nil && now.Before(ss.ExpiresAt) {
				k, v = c.Next()
				continue
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n++
			k, v = c.Seek(k)
		}
		return nil
	})
	if err != nil {
		return 0, wrap(err, "purge sessions")
	}
	return n, nil
}

// deleteSessions deletes the user's sessions.
func deleteSessions(tx *bolt.Tx, userID int64) error {
	c := tx.Bucket(bSessions).Cursor()
	for k, v := c.First(); k != nil; {
		var ss Session
		if err := json.Unmarshal(v, &ss); err == nil && ss.UserID != userID {
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

// Token is a named API token. Its secret is given once, by CreateToken;
// the store keeps only its hash.
type Token struct {
	ID        int64     `json:"id"`
	UserID    int64     `json:"user_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// TokenRecord is an API token with the hash of its secret, as the store
// keeps it.
type TokenRecord struct {
	Token
	Hash []byte `json:"hash"`
}

type tokenRec = TokenRecord

// TokenPrefix marks API token secrets, so that a leaked one is recognisable.
const TokenPrefix = "cdt_"

// CreateToken creates a named API token for the user and returns its
// secret, which cannot be read again. Errors: EINVALID for an empty name
// or one over 64 characters; ENOTFOUND for an unknown user; ECONFLICT
// when the user has a token of that name.
func (s *Store) CreateToken(ctx context.Context, userID int64, name string) (string, *Token, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 64 {
		return "", nil, invalidf("token name must be 1 to 64 characters")
	}
	secret := TokenPrefix + NewSecret()
	var tok Token
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if _, err := getUser(tx, userID); err != nil {
			return err
		}
		toks, err := userTokens(tx, userID)
		if err != nil {
			return err
		}
		for _, t := range toks {
			if strings.EqualFold(t.Name, name) {
				return conflictf("you already have a token named %q", name)
			}
		}
		id, err := tx.Bucket(bTokens).NextSequence()
		if err != nil {
			return err
		}
		tok = Token{ID: int64(id), UserID: userID, Name: name, CreatedAt: s.now()}
		v, err := json.Marshal(tokenRec{Token: tok, Hash: secretHash(secret)})
		if err != nil {
			return err
		}
		if err := tx.Bucket(bTokens).Put(id64(tok.ID), v); err != nil {
			return err
		}
		return tx.Bucket(bTokenHash).Put(secretHash(secret), id64(tok.ID))
	})
	if err != nil {
		return "", nil, wrap(err, "create token")
	}
	return secret, &tok, nil
}

// UserByToken returns the user an API token secret belongs to, and the
// token. Errors: ENOTFOUND for an unknown or revoked secret.
func (s *Store) UserByToken(ctx context.Context, secret string) (*changedigest.User, *Token, error) {
	var u *changedigest.User
	var tok *Token
	err := s.view(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bTokenHash).Get(secretHash(secret))
		if secret == "" || v == nil {
			return notFoundf("API token not found")
		}
		var err error
		r, err := getToken(tx, at(v, 0))
		if err != nil {
			return err
		}
		tok = &r.Token
		u, err = getUser(tx, tok.UserID)
		return err
	})
	if err != nil {
		return nil, nil, wrap(err, "find token")
	}
	return u, tok, nil
}

func getToken(tx *bolt.Tx, id int64) (*tokenRec, error) {
	v := tx.Bucket(bTokens).Get(id64(id))
	if v == nil {
		return nil, notFoundf("token %d not found", id)
	}
	var r tokenRec
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, corruptf("token %d: %v", id, err)
	}
	return &r, nil
}

func userTokens(tx *bolt.Tx, userID int64) ([]*tokenRec, error) {
	var out []*tokenRec
	err := tx.Bucket(bTokens).ForEach(func(k, _ []byte) error {
		t, err := getToken(tx, at(k, 0))
		if err == nil && t.UserID == userID {
			out = append(out, t)
		}
		return err
	})
	return out, err
}

func deleteToken(tx *bolt.Tx, t *tokenRec) error {
	if err := tx.Bucket(bTokenHash).Delete(t.Hash); err != nil {
		return err
	}
	return tx.Bucket(bTokens).Delete(id64(t.ID))
}

// Tokens lists the user's API tokens by id (without secrets).
func (s *Store) Tokens(ctx context.Context, userID int64) ([]Token, error) {
	var out []Token
	err := s.view(ctx, func(tx *bolt.Tx) error {
		toks, err := userTokens(tx, userID)
		for _, t := range toks {
			out = append(out, t.Token)
		}
		return err
	})
	if err != nil {
		return nil, wrap(err, "list tokens")
	}
	return out, nil
}

// TokenRecords lists the user's API tokens by id with their secrets'
// hashes, for a copy of the store kept elsewhere (PutToken takes them).
func (s *Store) TokenRecords(ctx context.Context, userID int64) ([]TokenRecord, error) {
	var out []TokenRecord
	err := s.view(ctx, func(tx *bolt.Tx) error {
		toks, err := userTokens(tx, userID)
		for _, t := range toks {
			out = append(out, *t)
		}
		return err
	})
	if err != nil {
		return nil, wrap(err, "list tokens")
	}
	return out, nil
}

// RevokeToken deletes the user's API token id. Errors: ENOTFOUND when it
// does not exist or is another user's.
func (s *Store) RevokeToken(ctx context.Context, userID, id int64) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		t, err := getToken(tx, id)
		if err != nil {
			return err
		}
		if userID != AnyUser && t.UserID != userID {
			return notFoundf("token %d not found", id)
		}
		return deleteToken(tx, t)
	})
	return wrap(err, "revoke token %d", id)
}

type profileRec struct {
	Profile  changedigest.Profile `json:"profile"`
	Document []byte               `json:"document,omitempty"`
}

// PutProfile stores the user's profile (p.UserID) and the FOAF document
// it was read from (nil when there is none), replacing both, and sets
// p.UpdatedAt. Errors: ENOTFOUND for an unknown user; ETOOLARGE for a
// document over MaxProfileDocument.
func (s *Store) PutProfile(ctx context.Context, p *changedigest.Profile, document []byte) error {
	if p == nil {
		return invalidf("profile is missing")
	}
	if len(document) > MaxProfileDocument {
		return tooLargef("profile document of %d bytes is over the limit of %d bytes", len(document), MaxProfileDocument)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if _, err := getUser(tx, p.UserID); err != nil {
			return err
		}
		np := *p
		np.UpdatedAt = s.now()
		v, err := json.Marshal(profileRec{Profile: np, Document: document})
		if err != nil {
			return err
		}
		if err := tx.Bucket(bProfiles).Put(id64(p.UserID), v); err != nil {
			return err
		}
		p.UpdatedAt = np.UpdatedAt
		return nil
	})
	return wrap(err, "store profile of user %d", p.UserID)
}

// Profile returns the user's profile and FOAF document (nil when none
// was stored with it). Errors: ENOTFOUND when the user has no profile.
func (s *Store) Profile(ctx context.Context, userID int64) (*changedigest.Profile, []byte, error) {
	var r profileRec
	err := s.view(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bProfiles).Get(id64(userID))
		if v == nil {
			return notFoundf("user %d has no profile", userID)
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return corruptf("profile of user %d: %v", userID, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, wrap(err, "get profile of user %d", userID)
	}
	return &r.Profile, r.Document, nil
}

// DeleteProfile deletes the user's profile and document; none is not an error.
func (s *Store) DeleteProfile(ctx context.Context, userID int64) error {
	err := s.update(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bProfiles).Delete(id64(userID)) })
	return wrap(err, "delete profile of user %d", userID)
}
