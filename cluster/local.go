package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"
)

// A single `serve` runs as a cluster of one: its own embedded NATS server
// (no port), the same buckets, streams, workers and views as a node of
// many. Its data directory stays a single node's: the command line may
// still write its store between two runs (watch add, check, user passwd
// …), and the store is then the truth the cluster is rebuilt from. The
// local file says whether the cluster's copy (the server's files and the
// views' places) still agrees with the store:
//
//   - a serve that started the cluster from the store marks it in sync;
//   - a command that writes the store marks it out of sync;
//   - a serve that finds it out of sync (or missing) drops the cluster's
//     copy and imports the store again.
//
// A serve that dies leaves it in sync: the store then lags the cluster
// by the writes in flight at most, which the view takes again from the
// stream, as any node's does after a restart.
//
// A cluster of one that opens no port is the only node it will ever have:
// its versions stream keeps each watch's newest version only (what a
// check appends on top of), the store keeping the history. The local
// file records which, and a serve started the other way (--nats-listen,
// through which others may join) imports the store again.

// localFile names the file that makes a data directory a cluster of one.
const localFile = "local.json"

type localState struct {
	// InSync: the cluster's copy holds everything the store holds.
	InSync bool `json:"in_sync"`
	// NewestOnly: its versions stream keeps each watch's newest version
	// only (Config.NewestOnly).
	NewestOnly bool `json:"newest_only,omitempty"`
}

func localPath(dir string) string { return filepath.Join(dir, localFile) }

// IsLocal reports whether the data directory in dir is a single serve's,
// run as a cluster of one.
func IsLocal(dir string) bool {
	_, err := os.Stat(localPath(dir))
	return err == nil
}

func readLocal(dir string) (localState, error) {
	var st localState
	b, err := os.ReadFile(localPath(dir))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return localState{}, nil // unreadable: out of sync
	}
	return st, nil
}

func writeLocal(dir string, st localState) error {
	b, _ := json.Marshal(st)
	tmp := localPath(dir) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("cluster: mark the data directory %s: %w", dir, err)
	}
	if err := os.Rename(tmp, localPath(dir)); err != nil {
		return fmt.Errorf("cluster: mark the data directory %s: %w", dir, err)
	}
	return nil
}

// StoreWritten records that the store in dir was written outside the
// cluster of one (by a command): the next serve imports it again. It does
// nothing in a directory that is not a cluster of one's.
func StoreWritten(dir string) error {
	st, err := readLocal(dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !st.InSync {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", localPath(dir), err)
	}
	return writeLocal(dir, localState{InSync: false, NewestOnly: st.NewestOnly})
}

// PrepareLocal readies dir for a serve run as a cluster of one, before
// its server starts, whose versions stream keeps each watch's newest
// version only when newestOnly (Config.NewestOnly: the store is the track
// of record, and a server no one else reaches keeps no second copy of
// it). When the cluster's copy agrees with the store, and was made the
// same way, it keeps it, and reports false; otherwise it drops that copy (the server's
// files and the views' places; never the store) and reports true: the
// store is to be imported (Import), then marked (Conn.MarkInSync).
func PrepareLocal(dir string, newestOnly bool) (bool, error) {
	st, err := readLocal(dir)
	if err == nil && st.InSync && st.NewestOnly == newestOnly {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("cluster: read %s: %w", localPath(dir), err)
	}
	if errors.Is(err, fs.ErrNotExist) && IsView(dir) {
		// A node of a cluster of several: its store is the cluster's
		// copy, not a store to rebuild a cluster from.
		return false, fmt.Errorf("cluster: the data directory %s is a cluster node's", dir)
	}
	return true, ResetLocal(dir, newestOnly)
}

// ResetLocal drops the cluster of one's copy in dir (ForgetCluster) and
// marks it out of sync, for the store to be imported into a new one
// (Import, then Conn.MarkInSync).
func ResetLocal(dir string, newestOnly bool) error {
	if err := ForgetCluster(dir); err != nil {
		return err
	}
	return writeLocal(dir, localState{InSync: false, NewestOnly: newestOnly})
}

// MarkInSync records that the cluster of one in dir holds its store, which
// Import has just copied into it: the views start at the ends of the
// streams (the store holds what they hold, and nothing else writes them
// before the node runs), rather than reading back every record and
// version imported.
func (c *Conn) MarkInSync(ctx context.Context, dir string) error {
	ends, err := c.positionEnds(ctx)
	if err != nil {
		return err
	}
	(&Node{Dir: dir}).editPositions(func(p map[int]uint64) { maps.Copy(p, ends) })
	return writeLocal(dir, localState{InSync: true, NewestOnly: c.Config.NewestOnly})
}

// LostSince reports whether the cluster of one in dir lost what its views
// had read: a stream or bucket whose last sequence is below a view's
// place in it (its files damaged, and the stream made anew by the server,
// or taken out by hand). The store is then the whole truth: drop the
// cluster's copy and import the store again (see PrepareLocal).
func (c *Conn) LostSince(ctx context.Context, dir string) (bool, error) {
	ends, err := c.positionEnds(ctx)
	if err != nil {
		return false, err
	}
	for k, p := range (&Node{Dir: dir}).readPositions() {
		if end, ok := ends[k]; ok && p > end {
			return true, nil
		}
	}
	return false, nil
}

// positionEnds maps each place a node keeps in the positions file (each
// shard's in the versions stream and in the watches bucket, and the
// accounts') to the last sequence of its stream.
func (c *Conn) positionEnds(ctx context.Context) (map[int]uint64, error) {
	ends := map[int]uint64{}
	for _, x := range []struct {
		st   jetstream.Stream
		keys []int
	}{
		{c.versions, shardKeys(c.Config.Shards, func(s int) int { return s })},
		{c.watchesStream, shardKeys(c.Config.Shards, watchesPosition)},
		{c.accountsStream, []int{accountsPosition}},
	} {
		var info *jetstream.StreamInfo
		err := again(ctx, func() (err error) {
			info, err = x.st.Info(ctx)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: read the ends of the streams: %w", unavailable(err))
		}
		for _, k := range x.keys {
			ends[k] = info.State.LastSeq
		}
	}
	return ends, nil
}

func shardKeys(shards int, key func(int) int) []int {
	keys := make([]int, shards)
	for s := range keys {
		keys[s] = key(s)
	}
	return keys
}

// ForgetCluster drops a cluster of one's copy in dir (the embedded
// server's files, the views' places and the local file), keeping the
// store: started with --cluster, the directory's store is imported into
// the cluster it joins, as a single serve's is.
func ForgetCluster(dir string) error {
	for _, p := range []string{DataDir(dir), (&Node{Dir: dir}).positionFile(), localPath(dir)} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("cluster: drop the copy of a cluster of one: %w", err)
		}
	}
	return nil
}
