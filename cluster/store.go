package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// Store is the node's store as the web server and the notifier see it:
// its own view, with search and the change listings of feeds and digests
// across the cluster, and watches defined, changed and deleted in the
// cluster (so that an ID is never given twice and the owner's view
// follows).
type Store struct {
	*pet.Store
	Node *Node
}

// StorageFull reports since when the node has been short of space: its
// view's store, or the disk holding its streams (whichever first).
func (s Store) StorageFull() (since time.Time, full bool) {
	since, full = s.Store.StorageFull()
	if at, short := s.Node.Conn.StorageFull(); short && (!full || at.Before(since)) {
		since, full = at, true
	}
	return since, full
}

// Search searches every node's view.
func (s Store) Search(ctx context.Context, q pet.Query) (*pet.Results, error) {
	return s.Node.Search(ctx, q)
}

// Changes lists the changes of every node's view.
func (s Store) Changes(ctx context.Context, f pet.ChangeFilter) ([]pet.Event, error) {
	return s.Node.Changes(ctx, f)
}

// Deliveries lists the user's deliveries on every node.
func (s Store) Deliveries(ctx context.Context, f pet.DeliveryFilter) ([]changedigest.Delivery, error) {
	return s.Node.Deliveries(ctx, f)
}

// Redeliver makes the user's delivery pending again on the node that
// holds it.
func (s Store) Redeliver(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error) {
	return s.Node.RedeliverAnywhere(ctx, userID, id)
}

// CreateWatch defines the watch in the cluster (its ID from the
// cluster's counter) rather than in this node's store alone, and waits a
// moment for this node's view to hold it when this node owns its shard.
// Errors: EINVALID from Watch.Validate; ECONFLICT when the user watches
// the same URL and zone.
func (s Store) CreateWatch(ctx context.Context, w *changedigest.Watch) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if err := w.CheckInput(nil); err != nil {
		return err
	}
	if ws, err := s.Watches(ctx, w.UserID, ""); err == nil {
		for _, x := range ws {
			if x.URL == w.URL && x.Zone == w.Zone {
				return changedigest.Errorf(changedigest.ECONFLICT, "you already watch %s (watch %d)", w.URL, x.ID)
			}
		}
	}
	if err := s.Node.Conn.AddWatches(ctx, []*changedigest.Watch{w}); err != nil {
		return err
	}
	s.Node.poke(w.ID)
	if s.Node.owns(w.ID) {
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if _, err := s.Store.Watch(ctx, w.UserID, w.ID); err == nil {
				break
			}
		}
	}
	return nil
}

// UpdateWatch changes the watch's definition in the cluster; the owner's
// view takes it, keeping its schedule. Errors: ENOTFOUND when the watch
// does not exist or is another user's.
func (s Store) UpdateWatch(ctx context.Context, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error) {
	w, err := s.Node.Conn.updateWatch(ctx, id, func(x *changedigest.Watch) error {
		if userID != pet.AnyUser && x.UserID != userID {
			return changedigest.Errorf(changedigest.ENOTFOUND, "watch %d not found", id)
		}
		old := *x
		old.Tags = slices.Clone(x.Tags)
		if err := fn(x); err != nil {
			return err
		}
		x.UpdatedAt = time.Now()
		if err := x.Validate(); err != nil {
			return err
		}
		return x.CheckInput(&old)
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "watch %d not found", id)
	}
	if err != nil {
		return nil, err
	}
	s.Node.poke(id)
	// The schedule state is the view's, and so is what checks learned of
	// the page (when this node's view holds the watch).
	w.ID = id
	_ = s.Store.AsStored(ctx, w) // ENOTFOUND: another node's view holds it
	return w, nil
}

// DeleteWatch removes the watch from the cluster; the owner's view drops
// it and its versions. Errors: ENOTFOUND when the watch does not exist or
// is another user's.
func (s Store) DeleteWatch(ctx context.Context, userID, id int64) error {
	c := s.Node.Conn
	key := watchKey(ShardOf(id, c.Config.Shards), id)
	e, err := c.watches.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return changedigest.Errorf(changedigest.ENOTFOUND, "watch %d not found", id)
	}
	if err != nil {
		return fmt.Errorf("cluster: read watch %d: %w", id, err)
	}
	var w changedigest.Watch
	if err := json.Unmarshal(e.Value(), &w); err != nil {
		return fmt.Errorf("cluster: watch %d: %w", id, err)
	}
	if userID != pet.AnyUser && w.UserID != userID {
		return changedigest.Errorf(changedigest.ENOTFOUND, "watch %d not found", id)
	}
	if err := c.watches.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		return fmt.Errorf("cluster: delete watch %d: %w", id, err)
	}
	s.Node.poke(id)
	// Its versions go too (a view rebuilt later skips them anyway).
	if err := c.versions.Purge(ctx, jetstream.WithPurgeSubject(versionSubject(ShardOf(id, c.Config.Shards), id))); err != nil {
		s.Node.logger().Warn("purging a deleted watch's versions", "watch", id, "err", err)
	}
	return nil
}
