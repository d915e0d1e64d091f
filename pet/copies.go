package pet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// A store can hold a copy of accounts kept elsewhere (a cluster keeps
// users, sessions, API tokens and profiles in replicated buckets): the
// functions here put records back under their own keys, as they were
// made, and are safe to apply more than once and in any order.

// PutUser stores u under its own ID, replacing the user of that ID (its
// name and feed token move with it). Errors: EINVALID for a zero ID or a
// field User.Validate refuses; ECONFLICT when another user of this store
// has the name or the feed token.
func (s *Store) PutUser(ctx context.Context, u *changedigest.User) error {
	if u == nil || u.ID <= 0 {
		return invalidf("user to put has no ID")
	}
	if err := checkUser(u); err != nil {
		return err
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		old, err := getUser(tx, u.ID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		nu := *u
		if err := putUser(tx, &nu, old); err != nil {
			return err
		}
		b := tx.Bucket(bUsers)
		if uint64(u.ID) > b.Sequence() {
			return b.SetSequence(uint64(u.ID))
		}
		return nil
	})
	return wrap(err, "put user %d", u.ID)
}

// SessionRecord is a stored session with the hash of its token (see
// SecretHash).
type SessionRecord struct {
	Hash []byte `json:"hash"`
	Session
}

// PutSession stores a session under its token's hash, replacing any.
// Errors: EINVALID for a hash that is not one SecretHash gives.
func (s *Store) PutSession(ctx context.Context, r SessionRecord) error {
	if len(r.Hash) != len(secretHash("")) {
		return invalidf("session hash of %d bytes is not a SHA-256 hash", len(r.Hash))
	}
	v, err := json.Marshal(r.Session)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bSessions).Put(r.Hash, v) })
	return wrap(err, "put session")
}

// DeleteSessionHash ends the session stored under this hash; none is not
// an error.
func (s *Store) DeleteSessionHash(ctx context.Context, hash []byte) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if len(hash) == 0 {
			return nil
		}
		return tx.Bucket(bSessions).Delete(hash)
	})
	return wrap(err, "delete session")
}

// Sessions lists the stored sessions of the user (AnyUser: of everyone),
// expired ones included.
func (s *Store) Sessions(ctx context.Context, userID int64) ([]SessionRecord, error) {
	var out []SessionRecord
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bSessions).ForEach(func(k, v []byte) error {
			var r SessionRecord
			if json.Unmarshal(v, &r.Session) != nil || userID != AnyUser && r.UserID != userID {
				return nil
			}
			r.Hash = bytes.Clone(k)
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, wrap(err, "list sessions")
	}
	return out, nil
}

// PutToken stores an API token under its own ID with the hash of its
// secret, replacing the token of that ID. Errors: EINVALID for a zero ID
// or a hash that is not one SecretHash gives.
func (s *Store) PutToken(ctx context.Context, t Token, hash []byte) error {
	if t.ID <= 0 || len(hash) != len(secretHash("")) {
		return invalidf("API token to put has no ID or no hash")
	}
	v, err := json.Marshal(tokenRec{Token: t, Hash: hash})
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx *bolt.Tx) error {
		if old, err := getToken(tx, t.ID); err == nil {
			if err := deleteToken(tx, old); err != nil {
				return err
			}
		}
		b := tx.Bucket(bTokens)
		if err := b.Put(id64(t.ID), v); err != nil {
			return err
		}
		if uint64(t.ID) > b.Sequence() {
			if err := b.SetSequence(uint64(t.ID)); err != nil {
				return err
			}
		}
		return tx.Bucket(bTokenHash).Put(hash, id64(t.ID))
	})
	return wrap(err, "put API token %d", t.ID)
}

// ReplaceProfile stores the user's profile and FOAF document as they are,
// UpdatedAt included (PutProfile sets it), whether or not the user is in
// this store yet. Errors: ETOOLARGE for a document over
// MaxProfileDocument.
func (s *Store) ReplaceProfile(ctx context.Context, p *changedigest.Profile, document []byte) error {
	if p == nil || p.UserID <= 0 {
		return invalidf("profile to put has no user")
	}
	if len(document) > MaxProfileDocument {
		return tooLargef("profile document of %d bytes is over the limit of %d bytes", len(document), MaxProfileDocument)
	}
	v, err := json.Marshal(profileRec{Profile: *p, Document: document})
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bProfiles).Put(id64(p.UserID), v) })
	return wrap(err, "put profile of user %d", p.UserID)
}

// PutChannel stores a notification channel under its own ID, secret and
// times as they are, replacing the channel of that ID. Errors: EINVALID
// for a zero ID or user, or from Channel.Validate.
func (s *Store) PutChannel(ctx context.Context, c *changedigest.Channel) error {
	if c == nil || c.ID <= 0 || c.UserID <= 0 {
		return invalidf("channel to put has no ID or no user")
	}
	if err := c.Validate(); err != nil {
		return domainErr(err)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if old, err := getChannel(tx, AnyUser, c.ID); err == nil && old.UserID != c.UserID {
			if err := tx.Bucket(bUserChans).Delete(id64(old.UserID, old.ID)); err != nil {
				return err
			}
		}
		if err := putChannel(tx, c); err != nil {
			return err
		}
		b := tx.Bucket(bChannels)
		if uint64(c.ID) > b.Sequence() {
			return b.SetSequence(uint64(c.ID))
		}
		return nil
	})
	return wrap(err, "put channel %d", c.ID)
}

// ReplaceSubscription stores a WebSub subscription as it is (secret and
// times included), whether or not its user is in this store yet.
func (s *Store) ReplaceSubscription(ctx context.Context, sub *changedigest.Subscription) error {
	if strings.ContainsRune(sub.Topic, 0) || strings.ContainsRune(sub.Callback, 0) {
		return invalidf("topic and callback must not hold NUL")
	}
	v, err := json.Marshal(subscriptionRec{Subscription: *sub, Secret: sub.Secret})
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bWebSub).Put(subKey(sub.Topic, sub.Callback), v) })
	return wrap(err, "put subscription")
}

// IDs holds the last ID the store gave to each kind of record: a copy of
// the store kept elsewhere (a cluster's counters) starts past them, so
// that an ID given to a record since deleted is not given again.
type IDs struct {
	Users, Tokens, Channels, Watches int64
}

// LastIDs returns the last ID given to each kind of record.
func (s *Store) LastIDs(ctx context.Context) (IDs, error) {
	var ids IDs
	err := s.view(ctx, func(tx *bolt.Tx) error {
		ids.Users = int64(tx.Bucket(bUsers).Sequence())
		ids.Tokens = int64(tx.Bucket(bTokens).Sequence())
		ids.Channels = int64(tx.Bucket(bChannels).Sequence())
		ids.Watches = int64(tx.Bucket(bWatches).Sequence())
		return nil
	})
	return ids, wrap(err, "read the last IDs")
}
