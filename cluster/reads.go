package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// The web server's reads of watches and their histories: a watch of a
// shard this node serves is read from its own view, any other from the
// node serving its shard; a user's list of watches is merged from every
// node's.

// watchSubject is the subject of questions about watches.
const watchSubject = "cd.watch"

// watchQuestion asks a node about a watch, or about a user's watches.
type watchQuestion struct {
	Op     string         `json:"op"`
	UserID int64          `json:"user_id,omitempty"`
	ID     int64          `json:"id,omitempty"`
	Seq    int            `json:"seq,omitempty"`
	Before int            `json:"before,omitempty"`
	Limit  int            `json:"limit,omitempty"`
	Tag    string         `json:"tag,omitempty"`
	Page   pet.WatchQuery `json:"page,omitempty"`
}

// shot is a screenshot with its image (which the domain type keeps out
// of JSON).
type shot struct {
	Shot *changedigest.Screenshot `json:"shot"`
	PNG  []byte                   `json:"png"`
}

// serves reports whether this node keeps watch id's shard (served, or
// catching up).
func (n *Node) serves(id int64) bool {
	n.mu.Lock()
	_, ok := n.views[ShardOf(id, n.Conn.Config.Shards)]
	n.mu.Unlock()
	return ok
}

// servesAll reports whether this node serves every shard, each view
// caught up: its store then answers a question about the cluster's
// watches alone (a cluster of one's always does), with no question put
// to the nodes over NATS and no answer in JSON.
func (n *Node) servesAll() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.views) != n.Conn.Config.Shards {
		return false
	}
	for _, v := range n.views {
		if v.ready.Load() == 0 {
			return false
		}
	}
	return true
}

// answerWatch answers a question about watches from this node's view. A
// question about one watch of a shard the node serves, caught up, is
// answered for the cluster: what the view does not hold does not exist
// (servedError). Of a shard it does not serve, or whose view is catching
// up, a "not found" says only that this node does not hold it.
func (n *Node) answerWatch(ctx context.Context, data []byte) (any, error) {
	var q watchQuestion
	if err := json.Unmarshal(data, &q); err != nil {
		return nil, err
	}
	switch q.Op {
	case "watches":
		ws, err := n.Store.Watches(ctx, q.UserID, q.Tag)
		return slices.DeleteFunc(ws, func(w changedigest.Watch) bool { return !n.serves(w.ID) }), err
	case "page":
		q.Page.Keep = n.serves
		return n.Store.WatchPage(ctx, q.UserID, q.Page)
	}
	if !n.serves(q.ID) {
		return nil, fmt.Errorf("%w: watch %d is not in this node's shards", pet.ErrNotFound, q.ID)
	}
	v, err := n.readWatch(ctx, q)
	if errors.Is(err, pet.ErrNotFound) && n.owns(q.ID) {
		return nil, servedError{err}
	}
	return v, err
}

// servedError is an error of the node serving a watch's shard, its view
// caught up with the cluster's streams: a "not found" is the cluster's.
type servedError struct{ error }

func (e servedError) Unwrap() error { return e.error }

// errServedNotFound marks a "not found" that the node serving the
// watch's shard answered (servedError).
var errServedNotFound = errors.New("cluster: not found by the node serving the shard")

// missing is the error of a question about watch q.ID that no node
// serving its shard, caught up, could answer (what err says): ENOTFOUND
// when the watch is not defined in the cluster, or is another user's;
// else EBUSY (a 503 with a Retry-After), not ENOTFOUND: its shard is
// being taken over by another node, or the view serving it has not caught
// up with its definition or its versions yet.
func (n *Node) missing(ctx context.Context, q watchQuestion, err error) error {
	c := n.Conn
	notFound := changedigest.Errorf(changedigest.ENOTFOUND, "watch %d not found", q.ID)
	e, gerr := c.watches.Get(ctx, watchKey(ShardOf(q.ID, c.Config.Shards), q.ID))
	if errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted) {
		return notFound
	}
	if gerr != nil {
		return fmt.Errorf("cluster: read watch %d: %w", q.ID, unavailable(gerr))
	}
	var w changedigest.Watch
	if json.Unmarshal(e.Value(), &w) != nil || q.UserID != pet.AnyUser && w.UserID != q.UserID {
		return notFound
	}
	return fmt.Errorf("cluster: watch %d: its shard is not served yet (%v): %w", q.ID, err, errUnavailable)
}

// readWatch reads one watch's data from this node's view.
func (n *Node) readWatch(ctx context.Context, q watchQuestion) (any, error) {
	s := n.Store
	switch q.Op {
	case "watch":
		return s.Watch(ctx, q.UserID, q.ID)
	case "track":
		return s.Track(ctx, q.ID)
	case "version":
		return s.Version(ctx, q.ID, q.Seq)
	case "versions":
		return s.Versions(ctx, q.ID, q.Before, q.Limit)
	case "body":
		return s.Body(ctx, q.ID, q.Seq)
	case "recent":
		return s.RecentChanges(ctx, q.ID, q.Limit)
	case "screenshot":
		sh, err := s.Screenshot(ctx, q.ID, q.Seq)
		if err != nil {
			return nil, err
		}
		return shot{Shot: sh, PNG: sh.PNG}, nil
	}
	return nil, fmt.Errorf("cluster: unknown question %q", q.Op)
}

// askServing sends data on subject, which only the node serving watch
// id's shard listens on (agent work, "check now"), and returns that
// node's answer: errUnavailable when none comes within ctx.
func (n *Node) askServing(ctx context.Context, subject string, id int64, data []byte) (*nats.Msg, error) {
	m, err := n.Conn.nc.RequestWithContext(ctx, subject, data)
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("cluster: the node serving watch %d did not answer: %w", id, errUnavailable)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: ask the node serving watch %d: %w", id, unavailable(err))
	}
	return m, nil
}

// askWatch reads one watch's data into out: from this node's view when
// it keeps the watch's shard, else from the node that does. What a view
// not caught up, or no node, holds of a watch is looked for in the
// cluster's definitions (missing): a watch that exists is never "not
// found" while its shard changes hands.
func askWatch[T any](ctx context.Context, n *Node, q watchQuestion) (T, error) {
	var out T
	if n.serves(q.ID) {
		v, err := n.readWatch(ctx, q)
		if errors.Is(err, pet.ErrNotFound) && !n.owns(q.ID) {
			return out, n.missing(ctx, q, err)
		}
		if err != nil {
			return out, err
		}
		return v.(T), nil
	}
	answers, err := n.scatter(ctx, watchSubject, q)
	if errors.Is(err, errServedNotFound) {
		return out, changedigest.Errorf(changedigest.ENOTFOUND, "watch %d not found", q.ID)
	}
	if errors.Is(err, pet.ErrNotFound) {
		return out, n.missing(ctx, q, err)
	}
	if err != nil {
		return out, err
	}
	if len(answers) == 0 {
		return out, n.missing(ctx, q, errors.New("no node serves its shard now"))
	}
	if err := json.Unmarshal(answers[0], &out); err != nil {
		return out, fmt.Errorf("cluster: read watch %d: %w", q.ID, err)
	}
	return out, nil
}

// Watch reads the watch from the node serving its shard. Errors:
// ENOTFOUND when it does not exist or is another user's; EBUSY when it
// exists and no node serves its shard, caught up, yet (a node that died
// is being replaced).
func (s Store) Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error) {
	return askWatch[*changedigest.Watch](ctx, s.Node, watchQuestion{Op: "watch", UserID: userID, ID: id})
}

// Track reads the summary of the watch's history from the node serving
// its shard.
func (s Store) Track(ctx context.Context, watchID int64) (pet.TrackInfo, error) {
	return askWatch[pet.TrackInfo](ctx, s.Node, watchQuestion{Op: "track", ID: watchID})
}

// Version reads a version from the node serving the watch's shard.
func (s Store) Version(ctx context.Context, watchID int64, seq int) (*changedigest.Snapshot, error) {
	return askWatch[*changedigest.Snapshot](ctx, s.Node, watchQuestion{Op: "version", ID: watchID, Seq: seq})
}

// Versions reads a page of versions from the node serving the watch's shard.
func (s Store) Versions(ctx context.Context, watchID int64, before, limit int) ([]changedigest.Snapshot, error) {
	return askWatch[[]changedigest.Snapshot](ctx, s.Node, watchQuestion{Op: "versions", ID: watchID, Before: before, Limit: limit})
}

// Body reads a version's page from the node serving the watch's shard.
func (s Store) Body(ctx context.Context, watchID int64, seq int) ([]byte, error) {
	return askWatch[[]byte](ctx, s.Node, watchQuestion{Op: "body", ID: watchID, Seq: seq})
}

// Screenshot reads a version's screenshot from the node serving the
// watch's shard.
func (s Store) Screenshot(ctx context.Context, watchID int64, seq int) (*changedigest.Screenshot, error) {
	if s.Node.owns(watchID) {
		return s.Store.Screenshot(ctx, watchID, seq)
	}
	sh, err := askWatch[shot](ctx, s.Node, watchQuestion{Op: "screenshot", ID: watchID, Seq: seq})
	if err != nil {
		return nil, err
	}
	sh.Shot.PNG = sh.PNG
	return sh.Shot, nil
}

// Watches lists the user's watches (with the tag, when not "") across
// every node, by ID.
func (s Store) Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error) {
	var out []changedigest.Watch
	if s.Node.servesAll() {
		var err error
		if out, err = s.Store.Watches(ctx, userID, tag); err != nil {
			return nil, err
		}
	} else {
		parts, err := s.Node.ask(ctx, watchQuestion{Op: "watches", UserID: userID, Tag: tag})
		if err != nil {
			return nil, err
		}
		if out, err = gather[changedigest.Watch](parts, "list watches"); err != nil {
			return nil, err
		}
	}
	by := pet.CompareWatches(pet.SortAdded)
	slices.SortFunc(out, func(a, b changedigest.Watch) int { return by(&a, &b) })
	return out, nil
}

// WatchPage lists a page of the user's watches across every node, in the
// query's order: each node gives its first Offset+Limit, and the page is
// cut from the merged list (so pages reach at most MaxWatchLimit deep
// past the offset's first: a node answers at most MaxWatchLimit).
func (s Store) WatchPage(ctx context.Context, userID int64, q pet.WatchQuery) (*pet.WatchPage, error) {
	if s.Node.servesAll() {
		return s.Store.WatchPage(ctx, userID, q)
	}
	if q.Offset < 0 || q.Limit < 0 {
		return nil, changedigest.Errorf(changedigest.EINVALID, "offset and limit must not be negative")
	}
	order, err := pet.ParseWatchSort(string(q.Sort))
	if err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = pet.DefaultWatchLimit
	}
	q.Limit = min(q.Limit, pet.MaxWatchLimit)
	sub := q
	sub.Offset, sub.Limit = 0, min(q.Offset+q.Limit, pet.MaxWatchLimit)
	parts, err := s.Node.ask(ctx, watchQuestion{Op: "page", UserID: userID, Page: sub})
	if err != nil {
		return nil, err
	}
	out := &pet.WatchPage{Offset: q.Offset, Limit: q.Limit}
	var all []changedigest.Watch
	for _, p := range parts {
		var wp pet.WatchPage
		if err := json.Unmarshal(p, &wp); err != nil {
			return nil, fmt.Errorf("cluster: list watches: %w", err)
		}
		out.Total += wp.Total
		out.Failing += wp.Failing
		out.Tags = append(out.Tags, wp.Tags...)
		all = append(all, wp.Watches...)
	}
	slices.Sort(out.Tags)
	out.Tags = slices.Compact(out.Tags)
	by := pet.CompareWatches(order)
	slices.SortFunc(all, func(a, b changedigest.Watch) int { return by(&a, &b) })
	if q.Offset < len(all) {
		out.Watches = all[q.Offset:min(len(all), q.Offset+q.Limit)]
	}
	return out, nil
}

// ask puts a question about watches to every live node.
func (n *Node) ask(ctx context.Context, q watchQuestion) ([]json.RawMessage, error) {
	answers, err := n.scatter(ctx, watchSubject, q)
	if errors.Is(err, pet.ErrNotFound) {
		return nil, nil
	}
	return answers, err
}
