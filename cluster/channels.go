package cluster

import (
	"context"
	"crypto/sha256"
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

// A user's notification channels and the WebSub subscriptions to their
// feeds are the cluster's too, kept in the accounts bucket beside the
// users: the node serving a watch's shard is the one that pushes its
// versions, to the channels and subscribers made on any node. The
// deliveries (the outbox) stay with the node that sends them.

func channelKey(id int64) string { return "channel." + strconv.FormatInt(id, 10) }

func subscriptionKey(topic, callback string) string {
	h := sha256.Sum256([]byte(topic + "\x00" + callback))
	return "websub." + hex.EncodeToString(h[:])
}

type channelRecord struct {
	changedigest.Channel
	Secret string `json:"secret,omitempty"`
}

type subscriptionRecord struct {
	changedigest.Subscription
	Secret string `json:"secret,omitempty"`
}

// applyChannel puts a channel into the node's store, or deletes it.
func (n *Node) applyChannel(ctx context.Context, id int64, deleted bool, data []byte) error {
	if deleted {
		return n.Store.DeleteChannel(ctx, pet.AnyUser, id)
	}
	var r channelRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	c := r.Channel
	c.ID, c.Secret = id, r.Secret
	return n.Store.PutChannel(ctx, &c)
}

// applySubscription puts a subscription into the node's store. A deleted
// one's topic and callback are not in its key: the node's store finds it
// by the key's hash.
func (n *Node) applySubscription(ctx context.Context, key string, deleted bool, data []byte) error {
	if !deleted {
		var r subscriptionRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		sub := r.Subscription
		sub.Secret = r.Secret
		return n.Store.ReplaceSubscription(ctx, &sub)
	}
	subs, err := n.Store.Subscriptions(ctx, pet.AnyUser)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if subscriptionKey(s.Topic, s.Callback) == key {
			return n.Store.DeleteSubscription(ctx, s.Topic, s.Callback)
		}
	}
	return nil
}

// channel reads channel id of the user (any user's for pet.AnyUser) and
// its revision from the bucket. Errors: ENOTFOUND.
func (c *Conn) channel(ctx context.Context, userID, id int64) (*changedigest.Channel, uint64, error) {
	e, err := c.accounts.Get(ctx, channelKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, changedigest.Errorf(changedigest.ENOTFOUND, "channel %d not found", id)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: read channel %d: %w", id, unavailable(err))
	}
	var r channelRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, fmt.Errorf("cluster: channel %d: %w", id, err)
	}
	if userID != pet.AnyUser && r.UserID != userID {
		return nil, 0, changedigest.Errorf(changedigest.ENOTFOUND, "channel %d not found", id)
	}
	ch := r.Channel
	ch.Secret = r.Secret
	return &ch, e.Revision(), nil
}

// CreateChannel defines a notification channel of c.UserID in the
// cluster, setting its ID (from the cluster's counter) and times. Errors:
// EINVALID from Channel.Validate or when the user has too many channels;
// ENOTFOUND when the user does not exist.
func (s Store) CreateChannel(ctx context.Context, c *changedigest.Channel) error {
	if c == nil {
		return changedigest.Errorf(changedigest.EINVALID, "channel is missing")
	}
	if err := c.Validate(); err != nil {
		return err
	}
	conn := s.Node.Conn
	if _, _, err := conn.user(ctx, c.UserID); err != nil {
		return err
	}
	if have, err := s.Store.Channels(ctx, c.UserID); err != nil {
		return err
	} else if len(have) >= pet.MaxChannels {
		return changedigest.Errorf(changedigest.EINVALID, "a user may have at most %d channels", pet.MaxChannels)
	}
	id, err := conn.nextID(ctx, "channel", 1)
	if err != nil {
		return err
	}
	nc := *c
	nc.ID = id
	nc.CreatedAt = time.Now()
	nc.UpdatedAt = nc.CreatedAt
	data, err := json.Marshal(channelRecord{Channel: nc, Secret: nc.Secret})
	if err != nil {
		return err
	}
	rev, err := conn.accounts.Create(ctx, channelKey(id), data)
	if err != nil {
		return fmt.Errorf("cluster: create channel: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	*c = nc
	return nil
}

// UpdateChannel changes the user's channel in the cluster: fn edits a
// copy, which is then checked and stored. Errors: ENOTFOUND; EINVALID
// from Channel.Validate; fn's own error, as is.
func (s Store) UpdateChannel(ctx context.Context, userID, id int64, fn func(*changedigest.Channel) error) (*changedigest.Channel, error) {
	conn := s.Node.Conn
	for range 5 {
		old, rev, err := conn.channel(ctx, userID, id)
		if err != nil {
			return nil, err
		}
		c := *old
		if err := fn(&c); err != nil {
			return nil, err
		}
		if err := c.Validate(); err != nil {
			return nil, err
		}
		c.ID, c.UserID, c.CreatedAt, c.UpdatedAt = old.ID, old.UserID, old.CreatedAt, time.Now()
		data, err := json.Marshal(channelRecord{Channel: c, Secret: c.Secret})
		if err != nil {
			return nil, err
		}
		nrev, err := conn.accounts.Update(ctx, channelKey(id), data, rev)
		if err == nil {
			s.Node.awaitAccounts(ctx, nrev)
			return &c, nil
		}
		if !conflict(err) {
			return nil, fmt.Errorf("cluster: write channel %d: %w", id, unavailable(err))
		}
	}
	return nil, fmt.Errorf("cluster: channel %d changed under five writes in a row", id)
}

// DeleteChannel removes the user's channel from the cluster (each node's
// copy drops its deliveries with it). Errors: ENOTFOUND.
func (s Store) DeleteChannel(ctx context.Context, userID, id int64) error {
	conn := s.Node.Conn
	_, rev, err := conn.channel(ctx, userID, id)
	if err != nil {
		return err
	}
	drev, err := conn.deleteAccount(ctx, channelKey(id), rev)
	if err != nil {
		return fmt.Errorf("cluster: delete channel %d: %w", id, unavailable(err))
	}
	s.Node.awaitAccounts(ctx, drev)
	return nil
}

// PutSubscription stores or renews a verified WebSub subscription in the
// cluster (one per topic and callback; a renewal keeps its CreatedAt).
func (s Store) PutSubscription(ctx context.Context, sub *changedigest.Subscription) error {
	conn := s.Node.Conn
	key := subscriptionKey(sub.Topic, sub.Callback)
	ns := *sub
	if e, err := conn.accounts.Get(ctx, key); err == nil {
		var old subscriptionRecord
		if json.Unmarshal(e.Value(), &old) == nil {
			ns.CreatedAt = old.CreatedAt
		}
	}
	if ns.CreatedAt.IsZero() {
		ns.CreatedAt = time.Now()
	}
	data, err := json.Marshal(subscriptionRecord{Subscription: ns, Secret: ns.Secret})
	if err != nil {
		return err
	}
	rev, err := conn.accounts.Put(ctx, key, data)
	if err != nil {
		return fmt.Errorf("cluster: store subscription: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	*sub = ns
	return nil
}

// DeleteSubscription removes a subscription from the cluster; a missing
// one is not an error.
func (s Store) DeleteSubscription(ctx context.Context, topic, callback string) error {
	rev, err := s.Node.Conn.deleteAccount(ctx, subscriptionKey(topic, callback), 0)
	if err != nil {
		return fmt.Errorf("cluster: delete subscription: %w", unavailable(err))
	}
	s.Node.awaitAccounts(ctx, rev)
	return nil
}

// ExpireSubscriptions deletes the subscriptions whose lease ended before
// now from the cluster and this node's copy, and returns how many.
func (s Store) ExpireSubscriptions(ctx context.Context, now time.Time) (int, error) {
	subs, err := s.Store.Subscriptions(ctx, pet.AnyUser)
	if err != nil {
		return 0, err
	}
	for _, sub := range subs {
		if !sub.Expires.IsZero() && sub.Expires.Before(now) {
			if _, err := s.Node.Conn.deleteAccount(ctx, subscriptionKey(sub.Topic, sub.Callback), 0); err != nil {
				return 0, fmt.Errorf("cluster: expire subscriptions: %w", unavailable(err))
			}
		}
	}
	return s.Store.ExpireSubscriptions(ctx, now)
}
