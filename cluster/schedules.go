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
// every ScheduleEvery and when it stops; a node that takes a shard over
// gives the watches it defines in its new view their state from there,
// so a taken-over shard's watches are checked when they were due, not
// all at once.

// schedulesBucket holds, under each shard's number, its watches' schedule
// state: JSON of the watches, S2-compressed.
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
		if err := n.writeSchedules(ctx); err != nil && ctx.Err() == nil {
			n.logger().Warn("keeping the shards' schedules", "err", err)
		}
	}
}

// writeSchedules writes the schedule state of each shard this node serves
// and holds whole (its view caught up with the stream once) whose
// schedules changed since it last did.
func (n *Node) writeSchedules(ctx context.Context) error {
	c := n.Conn
	if c.schedules == nil {
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
		data, err := json.Marshal(by[s])
		if err != nil {
			return err
		}
		data = s2.Encode(nil, data)
		if len(data) > MaxMessage {
			// Too many watches in one shard: its watches are due at once
			// on the node that takes it over.
			errs = append(errs, fmt.Errorf("the schedules of shard %d take %d bytes, over the %d a message may", s, len(data), MaxMessage))
			written[s] = true
			continue
		}
		if _, err := c.schedules.Put(ctx, strconv.Itoa(s), data); err != nil {
			errs = append(errs, fmt.Errorf("write the schedules of shard %d: %w", s, unavailable(err)))
			continue
		}
		written[s] = true
	}
	return errors.Join(errs...)
}

// readSchedules reads the schedule state kept for shard s, by watch (none
// when nothing was kept, or it cannot be read: the watches are then due
// at once, as they were before).
func (n *Node) readSchedules(ctx context.Context, s int) map[int64]*changedigest.Watch {
	c := n.Conn
	if c.schedules == nil {
		return nil
	}
	e, err := c.schedules.Get(ctx, strconv.Itoa(s))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		n.logger().Warn("reading a shard's schedules", "shard", s, "err", err)
		return nil
	}
	var ws []changedigest.Watch
	if size, err := s2.DecodedLen(e.Value()); err != nil || size > 8*MaxMessage {
		n.logger().Warn("skipping a shard's schedules", "shard", s, "bytes", size, "err", err)
		return nil
	}
	plain, err := s2.Decode(nil, e.Value())
	if err == nil {
		err = json.Unmarshal(plain, &ws)
	}
	if err != nil {
		n.logger().Warn("skipping a shard's schedules", "shard", s, "err", err)
		return nil
	}
	out := make(map[int64]*changedigest.Watch, len(ws))
	for i := range ws {
		out[ws[i].ID] = &ws[i]
	}
	return out
}
