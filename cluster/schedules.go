package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// Schedules across owners. A watch's schedule state (next check, last
// check, the learnt change rate, validators) lives in the store of the
// node serving its shard, written at every check. The serving node also
// keeps a copy of each of its shards' states in the schedules bucket,
// every ScheduleEvery, when it gives a shard up and when it stops; a node
// that takes a shard over gives the watches it defines in its new view
// their state from there, so a taken-over shard's watches are checked
// when they were due, not all at once.

// schedulesBucket holds each shard's watches' schedule state, in chunks
// (scheduleKey, shardSchedules), JSON and S2-compressed.
const schedulesBucket = "cd_schedules"

// keepSchedules writes the schedule state of the shards this node serves
// every ScheduleEvery until ctx ends.
func (n *Node) keepSchedules(ctx context.Context) {
	tick := time.NewTicker(n.Conn.Config.ScheduleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n.keepSchedulesNow(ctx)
	}
}

// keepSchedulesNow writes the schedules that changed (writeSchedules),
// logging a failure: the next write tries again.
func (n *Node) keepSchedulesNow(ctx context.Context) {
	if err := n.writeSchedules(ctx); err != nil && !errors.Is(err, context.Canceled) {
		n.logger().Warn("keeping the shards' schedules", "err", err)
	}
}

// writeSchedules writes the schedule state of each shard this node serves
// and holds whole (its view caught up with the stream once) whose
// schedules changed since it last did. A cluster of one that no other
// node can reach (Config.NewestOnly) writes none: no node will take its
// shards over, and its store keeps the schedules.
func (n *Node) writeSchedules(ctx context.Context) error {
	c := n.Conn
	if c.schedules == nil || c.Config.NewestOnly {
		return nil
	}
	n.mu.Lock()
	changed := map[int]*view{}
	for s, v := range n.views {
		if v.ready.Load() != 0 && !n.dropping[s] && v.schedChanged.Swap(false) {
			changed[s] = v
		}
	}
	n.mu.Unlock()
	if len(changed) == 0 {
		return nil
	}
	// What is not written is written next time.
	written := map[int]bool{}
	defer func() {
		for s, v := range changed {
			if !written[s] {
				v.schedChanged.Store(true)
			}
		}
	}()
	ws, err := n.Store.Watches(ctx, pet.AnyUser, "")
	if err != nil {
		return err
	}
	// Each watch's ID and schedule state alone (CopySchedule's fields).
	by := map[int][]changedigest.Watch{}
	for i := range ws {
		s := ShardOf(ws[i].ID, c.Config.Shards)
		if changed[s] == nil {
			continue
		}
		x := changedigest.Watch{ID: ws[i].ID}
		x.CopySchedule(&ws[i])
		by[s] = append(by[s], x)
	}
	var errs []error
	for s := range changed {
		if err := n.writeShardSchedules(ctx, s, by[s]); err != nil {
			errs = append(errs, err)
			continue
		}
		written[s] = true
	}
	return errors.Join(errs...)
}

// scheduleChunk is how many watches' schedules one value of the bucket
// holds: some 4 MB S2-compressed with 64 change samples each (about
// 430 bytes a watch), under MaxMessage.
var scheduleChunk = 10_000

// scheduleKey is the key of chunk k of shard s's schedules.
func scheduleKey(s, k int) string { return strconv.Itoa(s) + "." + strconv.Itoa(k) }

// shardSchedules is one chunk of a shard's schedules: the chunks written
// together have one generation.
type shardSchedules struct {
	Gen     int64                `json:"gen"`
	Watches []changedigest.Watch `json:"watches"`
}

// writeShardSchedules writes shard s's schedules in chunks of
// scheduleChunk watches, then deletes the chunks a larger shard left.
func (n *Node) writeShardSchedules(ctx context.Context, s int, ws []changedigest.Watch) error {
	kv := n.Conn.schedules
	gen := n.now().UnixNano()
	k := 0
	for first := true; first || len(ws) > 0; first = false {
		part := ws[:min(len(ws), scheduleChunk)]
		ws = ws[len(part):]
		data, err := json.Marshal(shardSchedules{Gen: gen, Watches: part})
		if err != nil {
			return err
		}
		if data = s2.Encode(nil, data); len(data) > MaxMessage {
			return fmt.Errorf("the schedules of shard %d take %d bytes in one chunk, over the %d a message may", s, len(data), MaxMessage)
		}
		if _, err := kv.Put(ctx, scheduleKey(s, k), data); err != nil {
			return fmt.Errorf("write the schedules of shard %d: %w", s, unavailable(err))
		}
		k++
	}
	for ; ; k++ {
		if _, err := kv.Get(ctx, scheduleKey(s, k)); err != nil {
			return nil // none left (or the next write tidies)
		}
		if err := kv.Delete(ctx, scheduleKey(s, k)); err != nil {
			return nil
		}
	}
}

// readSchedules reads the schedule state kept for shard s, by watch (none
// when nothing was kept, or it cannot be read: the watches are then due
// at once, as they were before).
func (n *Node) readSchedules(ctx context.Context, s int) map[int64]*changedigest.Watch {
	c := n.Conn
	if c.schedules == nil {
		return nil
	}
	var (
		ws  []changedigest.Watch
		gen int64
	)
	for k := 0; ; k++ {
		e, err := c.schedules.Get(ctx, scheduleKey(s, k))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		if err != nil {
			n.logger().Warn("reading a shard's schedules", "shard", s, "err", err)
			break
		}
		var part shardSchedules
		plain, err := inflate(e.Value(), 8*MaxMessage)
		if err == nil {
			err = json.Unmarshal(plain, &part)
		}
		if err != nil {
			n.logger().Warn("skipping a shard's schedules", "shard", s, "chunk", k, "err", err)
			break
		}
		if k == 0 {
			gen = part.Gen
		} else if part.Gen != gen {
			break // left by an earlier, larger write
		}
		ws = append(ws, part.Watches...)
	}
	out := make(map[int64]*changedigest.Watch, len(ws))
	for i := range ws {
		out[ws[i].ID] = &ws[i]
	}
	return out
}
