package pet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// The notification outbox. AddVersion writes an outbox entry in the same
// transaction as a version that brought changes, so a stored version is
// never without its notification and a notification never without its
// version. The notification centre turns each entry into deliveries (one
// per routed channel or WebSub subscriber) and removes the entry in one
// transaction (Fanout); deliveries carry their state (pending, delivered,
// dead) and the time of their next try, indexed for DueDeliveries.
var (
	bOutbox     = []byte("outbox")     // n → outboxRec
	bChannels   = []byte("channels")   // cid → channelRec JSON
	bUserChans  = []byte("user_chans") // uid|cid → ""
	bDeliveries = []byte("deliveries") // id → Delivery JSON (with state)
	bDelivDue   = []byte("deliv_due")  // next attempt|id → "" (pending only)
	bUserDeliv  = []byte("user_deliv") // uid|created|id → ""
	bWebSub     = []byte("websub")     // topic \x00 callback → subscriptionRec JSON
)

// MaxChannels is how many notification channels a user may have.
const MaxChannels = 100

// Notification is an outbox entry: a stored version that brought changes,
// waiting to be routed to its user's channels.
type Notification struct {
	ID      uint64
	UserID  int64
	WatchID int64
	Seq     int
	// StoredAt is when the version was committed.
	StoredAt time.Time
}

// putOutbox records the notification of a new version inside the version's
// transaction.
func putOutbox(tx *bolt.Tx, userID, watchID int64, seq int, now time.Time) error {
	b := tx.Bucket(bOutbox)
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	var e enc
	e.int(userID)
	e.int(watchID)
	e.int(int64(seq))
	e.time(now)
	return b.Put(key(n), e.b)
}

func decodeOutbox(k, v []byte) (Notification, error) {
	d := dec{b: v}
	n := Notification{ID: uint64(at(k, 0)), UserID: d.int(), WatchID: d.int(), Seq: int(d.int()), StoredAt: d.time()}
	if d.err != nil {
		return n, corruptf("outbox entry %x: %v", k, d.err)
	}
	return n, nil
}

// Outbox returns up to limit notifications waiting to be routed, oldest
// first.
func (s *Store) Outbox(ctx context.Context, limit int) ([]Notification, error) {
	limit = clampLimit(limit, 100, 10000)
	var out []Notification
	err := s.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bOutbox).Cursor()
		for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
			n, err := decodeOutbox(k, v)
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		return nil
	})
	return out, wrap(err, "read the outbox")
}

// Fanout replaces notifications ns by their deliveries ds in one
// transaction. Deliveries whose ID is already stored are left as they
// are, so running Fanout again for the same notifications (after a
// crash) adds nothing. A notification that is already gone is not an
// error.
func (s *Store) Fanout(ctx context.Context, ns []Notification, ds []changedigest.Delivery) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		for i := range ds {
			if err := addDelivery(tx, &ds[i], s.now()); err != nil {
				return err
			}
		}
		for _, n := range ns {
			if err := tx.Bucket(bOutbox).Delete(key(n.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap(err, "route %d notifications", len(ns))
}

// AddDelivery stores a new pending delivery (a test message, say).
// Errors: ECONFLICT when the ID is taken.
func (s *Store) AddDelivery(ctx context.Context, d *changedigest.Delivery) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bDeliveries).Get([]byte(d.ID)) != nil {
			return conflictf("delivery %s already exists", d.ID)
		}
		return addDelivery(tx, d, s.now())
	})
	return wrap(err, "add delivery")
}

func addDelivery(tx *bolt.Tx, d *changedigest.Delivery, now time.Time) error {
	if d.ID == "" || len(d.ID) > 200 {
		return invalidf("delivery id %q is empty or too long", d.ID)
	}
	b := tx.Bucket(bDeliveries)
	if b.Get([]byte(d.ID)) != nil {
		return nil
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = now
	}
	if d.State == "" {
		d.State = changedigest.DeliveryPending
	}
	if d.NextAttempt.IsZero() {
		d.NextAttempt = d.CreatedAt
	}
	if err := tx.Bucket(bUserDeliv).Put(userDelivKey(d), nil); err != nil {
		return err
	}
	return putDelivery(tx, d, nil)
}

func userDelivKey(d *changedigest.Delivery) []byte {
	return append(key(uint64(d.UserID), timeKey(d.CreatedAt)), d.ID...)
}

func dueKeyOf(d *changedigest.Delivery) []byte { return append(key(timeKey(d.NextAttempt)), d.ID...) }

// putDelivery writes d and keeps the due index in step with old.
func putDelivery(tx *bolt.Tx, d, old *changedigest.Delivery) error {
	due := tx.Bucket(bDelivDue)
	if old != nil && old.State == changedigest.DeliveryPending {
		if err := due.Delete(dueKeyOf(old)); err != nil {
			return err
		}
	}
	if d.State == changedigest.DeliveryPending {
		if err := due.Put(dueKeyOf(d), nil); err != nil {
			return err
		}
	}
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return tx.Bucket(bDeliveries).Put([]byte(d.ID), v)
}

func getDelivery(tx *bolt.Tx, id string) (*changedigest.Delivery, error) {
	v := tx.Bucket(bDeliveries).Get([]byte(id))
	if v == nil {
		return nil, notFoundf("delivery %q not found", id)
	}
	var d changedigest.Delivery
	if err := json.Unmarshal(v, &d); err != nil {
		return nil, corruptf("delivery %q: %v", id, err)
	}
	return &d, nil
}

// DueDeliveries returns up to limit pending deliveries whose next try is
// at or before now, earliest first.
func (s *Store) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]changedigest.Delivery, error) {
	limit = clampLimit(limit, 100, 10000)
	end := timeKey(now)
	var out []changedigest.Delivery
	err := s.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bDelivDue).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if uint64(at(k, 0)) > end {
				break
			}
			d, err := getDelivery(tx, string(k[8:]))
			if err != nil {
				return err
			}
			out = append(out, *d)
		}
		return nil
	})
	return out, wrap(err, "list due deliveries")
}

// NextDelivery returns the time of the earliest pending try, zero when
// nothing is pending.
func (s *Store) NextDelivery(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bDelivDue).Cursor().First(); k != nil {
			t = timeOf(at(k, 0))
		}
		return nil
	})
	return t, wrap(err, "next delivery")
}

// UpdateDelivery applies fn to the stored delivery id and saves it, in
// one transaction. userID limits it to the user's deliveries (AnyUser for
// the dispatcher). Errors: ENOTFOUND.
func (s *Store) UpdateDelivery(ctx context.Context, userID int64, id string, fn func(*changedigest.Delivery) error) (*changedigest.Delivery, error) {
	var out *changedigest.Delivery
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	// The dispatcher's workers share commits.
	err := s.db.Batch(func(tx *bolt.Tx) error {
		old, err := getDelivery(tx, id)
		if err != nil {
			return err
		}
		if userID != AnyUser && old.UserID != userID {
			return notFoundf("delivery %q not found", id)
		}
		d := *old
		if err := fn(&d); err != nil {
			return err
		}
		d.ID, d.UserID, d.CreatedAt = old.ID, old.UserID, old.CreatedAt
		if err := putDelivery(tx, &d, old); err != nil {
			return err
		}
		out = &d
		return nil
	})
	return out, wrap(err, "update delivery %q", id)
}

// Delivery returns one of the user's deliveries. Errors: ENOTFOUND.
func (s *Store) Delivery(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error) {
	var d *changedigest.Delivery
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		d, err = getDelivery(tx, id)
		if err == nil && userID != AnyUser && d.UserID != userID {
			err = notFoundf("delivery %q not found", id)
		}
		return err
	})
	return d, wrap(err, "read delivery")
}

// DeliveryFilter selects a user's deliveries; zero fields do not filter.
type DeliveryFilter struct {
	UserID    int64
	ChannelID int64
	State     changedigest.DeliveryState
	// Limit defaults to 50, at most 1000.
	Limit int
}

// Deliveries lists a user's deliveries, newest first.
func (s *Store) Deliveries(ctx context.Context, f DeliveryFilter) ([]changedigest.Delivery, error) {
	limit := clampLimit(f.Limit, 50, 1000)
	var out []changedigest.Delivery
	err := s.view(ctx, func(tx *bolt.Tx) error {
		prefix := id64(f.UserID)
		c := tx.Bucket(bUserDeliv).Cursor()
		k, _ := c.Seek(key(uint64(f.UserID)+1, 0))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
			d, err := getDelivery(tx, string(k[16:]))
			if err != nil {
				return err
			}
			if f.ChannelID != 0 && d.ChannelID != f.ChannelID || f.State != "" && d.State != f.State {
				continue
			}
			out = append(out, *d)
		}
		return nil
	})
	return out, wrap(err, "list deliveries")
}

// DeliveryCounts returns how many of the user's deliveries are in each state.
func (s *Store) DeliveryCounts(ctx context.Context, userID int64) (map[changedigest.DeliveryState]int, error) {
	out := map[changedigest.DeliveryState]int{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		prefix := id64(userID)
		c := tx.Bucket(bUserDeliv).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			d, err := getDelivery(tx, string(k[16:]))
			if err != nil {
				return err
			}
			out[d.State]++
		}
		return nil
	})
	return out, wrap(err, "count deliveries")
}

// PurgeDeliveries removes delivered deliveries created before t; pending
// and dead ones stay until they are delivered or their channel goes.
func (s *Store) PurgeDeliveries(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bolt.Tx) error {
		var drop [][]byte
		c := tx.Bucket(bUserDeliv).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if uint64(at(k, 1)) >= timeKey(before) {
				continue
			}
			d, err := getDelivery(tx, string(k[16:]))
			if err != nil {
				return err
			}
			if d.State == changedigest.DeliveryDelivered {
				drop = append(drop, bytes.Clone(k))
			}
		}
		for _, k := range drop {
			if err := tx.Bucket(bUserDeliv).Delete(k); err != nil {
				return err
			}
			if err := tx.Bucket(bDeliveries).Delete(k[16:]); err != nil {
				return err
			}
		}
		n = len(drop)
		return nil
	})
	return n, wrap(err, "purge deliveries")
}

// deleteDeliveries removes the deliveries of a user for which drop is true.
func deleteDeliveries(tx *bolt.Tx, userID int64, drop func(*changedigest.Delivery) bool) error {
	prefix := id64(userID)
	c := tx.Bucket(bUserDeliv).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); {
		d, err := getDelivery(tx, string(k[16:]))
		if err != nil {
			return err
		}
		if !drop(d) {
			k, _ = c.Next()
			continue
		}
		k = bytes.Clone(k)
		if err := c.Delete(); err != nil {
			return err
		}
		if d.State == changedigest.DeliveryPending {
			if err := tx.Bucket(bDelivDue).Delete(dueKeyOf(d)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bDeliveries).Delete([]byte(d.ID)); err != nil {
			return err
		}
		k, _ = c.Seek(k)
	}
	return nil
}

// channelRec is a stored channel: the domain type hides its secret from JSON.
type channelRec struct {
	changedigest.Channel
	Secret string `json:"secret,omitempty"`
}

func getChannel(tx *bolt.Tx, userID, id int64) (*changedigest.Channel, error) {
	v := tx.Bucket(bChannels).Get(id64(id))
	if v == nil {
		return nil, notFoundf("channel %d not found", id)
	}
	var r channelRec
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, corruptf("channel %d: %v", id, err)
	}
	if userID != AnyUser && r.UserID != userID {
		return nil, notFoundf("channel %d not found", id)
	}
	c := r.Channel
	c.Secret = r.Secret
	return &c, nil
}

func putChannel(tx *bolt.Tx, c *changedigest.Channel) error {
	v, err := json.Marshal(channelRec{Channel: *c, Secret: c.Secret})
	if err != nil {
		return err
	}
	if err := tx.Bucket(bUserChans).Put(id64(c.UserID, c.ID), nil); err != nil {
		return err
	}
	return tx.Bucket(bChannels).Put(id64(c.ID), v)
}

// CreateChannel validates and stores a new channel of c.UserID, setting
// its ID and times. Errors: EINVALID from Channel.Validate or when the
// user has too many channels; ENOTFOUND when the user does not exist.
func (s *Store) CreateChannel(ctx context.Context, c *changedigest.Channel) error {
	if c == nil {
		return invalidf("channel is missing")
	}
	if err := c.Validate(); err != nil {
		return domainErr(err)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if _, err := getUser(tx, c.UserID); err != nil {
			return err
		}
		n := 0
		prefix := id64(c.UserID)
		cur := tx.Bucket(bUserChans).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			n++
		}
		if n >= MaxChannels {
			return invalidf("a user may have at most %d channels", MaxChannels)
		}
		id, err := tx.Bucket(bChannels).NextSequence()
		if err != nil {
			return err
		}
		nc := *c
		nc.ID = int64(id)
		nc.CreatedAt, nc.UpdatedAt = s.now(), s.now()
		if err := putChannel(tx, &nc); err != nil {
			return err
		}
		*c = nc
		return nil
	})
	return wrap(err, "create channel")
}

// Channel returns the channel if it is userID's (any user's for AnyUser),
// with its secret. Errors: ENOTFOUND.
func (s *Store) Channel(ctx context.Context, userID, id int64) (*changedigest.Channel, error) {
	var c *changedigest.Channel
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		c, err = getChannel(tx, userID, id)
		return err
	})
	return c, wrap(err, "read channel %d", id)
}

// Channels lists the user's channels, oldest first, with their secrets.
func (s *Store) Channels(ctx context.Context, userID int64) ([]changedigest.Channel, error) {
	var out []changedigest.Channel
	err := s.view(ctx, func(tx *bolt.Tx) error {
		prefix := id64(userID)
		cur := tx.Bucket(bUserChans).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			c, err := getChannel(tx, userID, at(k, 1))
			if err != nil {
				return err
			}
			out = append(out, *c)
		}
		return nil
	})
	return out, wrap(err, "list channels")
}

// UpdateChannel applies fn to the stored channel and saves it after
// validation. Errors: ENOTFOUND; EINVALID from Channel.Validate.
func (s *Store) UpdateChannel(ctx context.Context, userID, id int64, fn func(*changedigest.Channel) error) (*changedigest.Channel, error) {
	var out *changedigest.Channel
	err := s.update(ctx, func(tx *bolt.Tx) error {
		old, err := getChannel(tx, userID, id)
		if err != nil {
			return err
		}
		c := *old
		if err := fn(&c); err != nil {
			return err
		}
		if err := c.Validate(); err != nil {
			return domainErr(err)
		}
		c.ID, c.UserID, c.CreatedAt, c.UpdatedAt = old.ID, old.UserID, old.CreatedAt, s.now()
		if err := putChannel(tx, &c); err != nil {
			return err
		}
		out = &c
		return nil
	})
	return out, wrap(err, "update channel %d", id)
}

// DeleteChannel removes the channel and its deliveries. Errors: ENOTFOUND.
func (s *Store) DeleteChannel(ctx context.Context, userID, id int64) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		c, err := getChannel(tx, userID, id)
		if err != nil {
			return err
		}
		if err := deleteDeliveries(tx, c.UserID, func(d *changedigest.Delivery) bool { return d.ChannelID == c.ID }); err != nil {
			return err
		}
		if err := tx.Bucket(bUserChans).Delete(id64(c.UserID, c.ID)); err != nil {
			return err
		}
		return tx.Bucket(bChannels).Delete(id64(c.ID))
	})
	return wrap(err, "delete channel %d", id)
}

// deleteUserNotifications removes a user's channels, deliveries and
// WebSub subscriptions (DeleteUser).
func deleteUserNotifications(tx *bolt.Tx, userID int64) error {
	if err := deleteDeliveries(tx, userID, func(*changedigest.Delivery) bool { return true }); err != nil {
		return err
	}
	prefix := id64(userID)
	cur := tx.Bucket(bUserChans).Cursor()
	var chans [][]byte
	for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
		chans = append(chans, bytes.Clone(k))
	}
	for _, k := range chans {
		if err := tx.Bucket(bChannels).Delete(id64(at(k, 1))); err != nil {
			return err
		}
		if err := tx.Bucket(bUserChans).Delete(k); err != nil {
			return err
		}
	}
	subs := tx.Bucket(bWebSub)
	var drop [][]byte
	err := subs.ForEach(func(k, v []byte) error {
		var r subscriptionRec
		if err := json.Unmarshal(v, &r); err != nil {
			return corruptf("subscription %q: %v", k, err)
		}
		if r.UserID == userID {
			drop = append(drop, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range drop {
		if err := subs.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// subscriptionRec is a stored WebSub subscription with its secret.
type subscriptionRec struct {
	changedigest.Subscription
	Secret string `json:"secret,omitempty"`
}

func subKey(topic, callback string) []byte { return []byte(topic + "\x00" + callback) }

// PutSubscription stores or renews a verified WebSub subscription (one per
// topic and callback).
func (s *Store) PutSubscription(ctx context.Context, sub *changedigest.Subscription) error {
	if strings.ContainsRune(sub.Topic, 0) || strings.ContainsRune(sub.Callback, 0) {
		return invalidf("topic and callback must not hold NUL")
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if _, err := getUser(tx, sub.UserID); err != nil {
			return err
		}
		b := tx.Bucket(bWebSub)
		k := subKey(sub.Topic, sub.Callback)
		ns := *sub
		if v := b.Get(k); v != nil {
			var old subscriptionRec
			if json.Unmarshal(v, &old) == nil {
				ns.CreatedAt = old.CreatedAt
			}
		}
		if ns.CreatedAt.IsZero() {
			ns.CreatedAt = s.now()
		}
		v, err := json.Marshal(subscriptionRec{Subscription: ns, Secret: ns.Secret})
		if err != nil {
			return err
		}
		*sub = ns
		return b.Put(k, v)
	})
	return wrap(err, "store subscription")
}

// DeleteSubscription removes a subscription; a missing one is not an error.
func (s *Store) DeleteSubscription(ctx context.Context, topic, callback string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bWebSub).Delete(subKey(topic, callback))
	})
	return wrap(err, "delete subscription")
}

// Subscriptions lists the subscriptions of a user's feeds (AnyUser: all),
// with their secrets, expired ones included.
func (s *Store) Subscriptions(ctx context.Context, userID int64) ([]changedigest.Subscription, error) {
	var out []changedigest.Subscription
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bWebSub).ForEach(func(k, v []byte) error {
			var r subscriptionRec
			if err := json.Unmarshal(v, &r); err != nil {
				return corruptf("subscription %q: %v", k, err)
			}
			if userID == AnyUser || r.UserID == userID {
				sub := r.Subscription
				sub.Secret = r.Secret
				out = append(out, sub)
			}
			return nil
		})
	})
	return out, wrap(err, "list subscriptions")
}

// ExpireSubscriptions removes the subscriptions whose lease ended before now.
func (s *Store) ExpireSubscriptions(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bWebSub).Cursor()
		for k, v := c.First(); k != nil; {
			var r subscriptionRec
			if err := json.Unmarshal(v, &r); err != nil {
				return corruptf("subscription %q: %v", k, err)
			}
			if r.Expires.IsZero() || !r.Expires.Before(now) {
				k, v = c.Next()
				continue
			}
			k = bytes.Clone(k)
			if err := c.Delete(); err != nil {
				return err
			}
			n++
			k, v = c.Seek(k)
		}
		return nil
	})
	return n, wrap(err, "expire subscriptions")
}

// String describes a notification for logs.
func (n Notification) String() string {
	return fmt.Sprintf("notification %d (watch %d version %d)", n.ID, n.WatchID, n.Seq)
}
