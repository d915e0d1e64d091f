package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Status is the cluster as `changedigest cluster status` shows it.
type Status struct {
	Nodes []NodeInfo `json:"nodes"`
	// Owners names each shard's owner ("" when none).
	Owners []string `json:"owners"`
	// Queued is the checks waiting in the work queue; Running the ones
	// a worker has taken and not yet acknowledged.
	Queued  uint64 `json:"queued"`
	Running int    `json:"running"`
	// Versions is the versions in the track of record.
	Versions uint64 `json:"versions"`
	Watches  int    `json:"watches"`
	Replicas int    `json:"replicas"`
	// Streams tells where each stream and bucket is kept: its leader and
	// replicas, and which replicas are current.
	Streams []StreamState `json:"streams"`
}

// StreamState is a stream's (or bucket's) leader and replicas.
type StreamState struct {
	Name     string   `json:"name"`
	Leader   string   `json:"leader"`
	Current  []string `json:"current"`
	Behind   []string `json:"behind,omitempty"`
	Messages uint64   `json:"messages"`
	Bytes    uint64   `json:"bytes"`
}

// Shards reads the nodes' last heartbeats and each shard's owner: the
// part of Status that answers while a stream whose leader died elects
// another. A node whose heartbeat is older than the lease is Down: it
// serves nothing, whatever its last heartbeat said (its shards, served
// or not, and their lag are left out; its counts of checks are those of
// its last heartbeat).
func (c *Conn) Shards(ctx context.Context) ([]NodeInfo, []string, error) {
	infos, err := nodeInfos(ctx, c.nodesStream)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: list nodes: %w", err)
	}
	for i := range infos {
		if n := &infos[i]; time.Since(n.Beat) >= c.Config.Lease {
			n.Down = true
			n.Shards, n.Ready, n.Lag = nil, nil, 0
		}
	}
	owners := make([]string, c.Config.Shards)
	for s := range c.Config.Shards {
		if e, err := c.shards.Get(ctx, strconv.Itoa(s)); err == nil {
			owners[s] = string(e.Value())
		}
	}
	return infos, owners, nil
}

// Status reads the cluster's state; detail adds each stream's replicas
// (a request each).
func (c *Conn) Status(ctx context.Context, detail bool) (*Status, error) {
	nodes, owners, err := c.Shards(ctx)
	if err != nil {
		return nil, err
	}
	st := &Status{Nodes: nodes, Owners: owners}
	ci, err := c.checks.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: the checks queue: %w", err)
	}
	st.Queued = ci.State.Msgs
	st.Replicas = ci.Config.Replicas
	if cons, err := c.checks.Consumer(ctx, workerDurable); err == nil {
		if info, err := cons.Info(ctx); err == nil {
			st.Running = info.NumAckPending
			st.Queued = info.NumPending
		}
	}
	vi, err := c.versions.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: the versions stream: %w", err)
	}
	st.Versions = vi.State.Msgs
	if !detail {
		if ks, err := c.watches.Status(ctx); err == nil {
			st.Watches = int(ks.Values())
		}
		return st, nil
	}
	names := c.js.StreamNames(ctx)
	for name := range names.Name() {
		si, err := c.js.Stream(ctx, name)
		if err != nil {
			continue
		}
		info, err := si.Info(ctx)
		if err != nil {
			st.Streams = append(st.Streams, StreamState{Name: name, Leader: "? " + err.Error()})
			continue
		}
		ss := StreamState{Name: name, Messages: info.State.Msgs, Bytes: info.State.Bytes}
		if cl := info.Cluster; cl != nil {
			ss.Leader = cl.Leader
			ss.Current = append(ss.Current, cl.Leader)
			for _, r := range cl.Replicas {
				if r.Current && !r.Offline {
					ss.Current = append(ss.Current, r.Name)
				} else {
					ss.Behind = append(ss.Behind, r.Name)
				}
			}
		}
		st.Streams = append(st.Streams, ss)
	}
	if ks, err := c.watches.Status(ctx); err == nil {
		st.Watches = int(ks.Values())
	}
	return st, nil
}

// VersionCounts reads, for every watch with versions in the track of
// record, its number of versions, and counts the due checks that stored
// more than one. It reads every version: for tests and audits.
func (c *Conn) VersionCounts(ctx context.Context) (counts map[int64]int, dups int, err error) {
	counts = map[int64]int{}
	seen := map[string]bool{}
	err = scan(ctx, c.versions, "cd.ver.>", func(m *jetstream.RawStreamMsg) error {
		v, err := decodeRaw(m)
		if err != nil {
			return err
		}
		id := v.meta.Snapshot.WatchID
		key := strconv.FormatInt(id, 10) + "@" + strconv.FormatInt(v.due, 10)
		if seen[key] {
			dups++
		}
		seen[key] = true
		counts[id]++
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return counts, dups, nil
}
