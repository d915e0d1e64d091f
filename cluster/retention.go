package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest/pet"
)

// TrimStream drops from the versions stream the versions that the
// owner's store no longer keeps (its retention limits, KeepVersions and
// KeepDays, applied when a version is stored and by Store.Prune), so
// that the stream keeps what the stores keep. It looks at the watches of
// the shards this node serves whose oldest kept version is not their
// first, and returns how many versions left the stream. A stream that
// keeps each watch's newest version only (Config.NewestOnly) has nothing
// to trim, and is not looked at.
func (n *Node) TrimStream(ctx context.Context) (int, error) {
	if n.Conn.Config.NewestOnly {
		return 0, nil
	}
	ws, err := n.Store.Watches(ctx, pet.AnyUser, "")
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, w := range ws {
		if ctx.Err() != nil {
			return removed, ctx.Err()
		}
		if !n.owns(w.ID) {
			continue
		}
		info, err := n.Store.Track(ctx, w.ID)
		if err != nil || info.Oldest <= 1 || n.trimmed(w.ID) == info.Oldest {
			continue
		}
		k, err := n.trimWatch(ctx, w.ID, info)
		if err != nil {
			return removed, err
		}
		removed += k
	}
	return removed, nil
}

// trimmed is the oldest version watch id's stream was last trimmed to
// (0: not since this process started).
func (n *Node) trimmed(id int64) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.trimmedTo[id]
}

// trimWatch purges the watch's versions older than the store's oldest,
// keeping those the store has not applied yet.
func (n *Node) trimWatch(ctx context.Context, id int64, info pet.TrackInfo) (int, error) {
	c := n.Conn
	subject := versionSubject(ShardOf(id, c.Config.Shards), id)
	last, err := c.versions.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: trim the versions of watch %d: %w", id, unavailable(err))
	}
	lastSeq, err := strconv.Atoi(last.Header.Get(hdrSeq))
	if err != nil || lastSeq < info.Latest {
		return 0, nil // not a version message, or the view is ahead (cannot be)
	}
	keep := info.Versions + (lastSeq - info.Latest)
	before, err := c.countVersions(ctx, subject)
	if err != nil {
		return 0, err
	}
	if before <= keep {
		n.noteTrimmed(id, info.Oldest)
		return 0, nil
	}
	if err := c.versions.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeKeep(uint64(keep))); err != nil {
		return 0, fmt.Errorf("cluster: trim the versions of watch %d: %w", id, unavailable(err))
	}
	n.noteTrimmed(id, info.Oldest)
	return before - keep, nil
}

func (n *Node) noteTrimmed(id int64, oldest int) {
	n.mu.Lock()
	if n.trimmedTo == nil {
		n.trimmedTo = map[int64]int{}
	}
	n.trimmedTo[id] = oldest
	n.mu.Unlock()
}

// countVersions counts the messages of one watch's subject, message by
// message (a watch keeps few).
func (c *Conn) countVersions(ctx context.Context, subject string) (int, error) {
	k := 0
	err := scan(ctx, c.versions, subject, func(*jetstream.RawStreamMsg) error {
		k++
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cluster: count the versions of %s: %w", subject, unavailable(err))
	}
	return k, nil
}
