package cluster

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/changedigest/changedigest"
)

// Definition reads watch id's definition from the watches bucket, for the
// tests of the package's users' view of it.
func (c *Conn) Definition(ctx context.Context, id int64) (*changedigest.Watch, error) {
	e, err := c.watches.Get(ctx, watchKey(ShardOf(id, c.Config.Shards), id))
	if err != nil {
		return nil, err
	}
	var w changedigest.Watch
	if err := json.Unmarshal(e.Value(), &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// AppendUnchecked appends a version message to the versions stream as
// version seq of watch id, past every check a version passes on its way
// there: snap and body laid out as a version (nil snap: bytes that are
// none), as a message written by an older release, or damaged, stands in
// the stream.
func (c *Conn) AppendUnchecked(ctx context.Context, id int64, seq int, snap *changedigest.Snapshot, body []byte) error {
	data := []byte("\xff not a version message")
	if snap != nil {
		snap.WatchID, snap.Seq = id, seq
		var err error
		if data, err = encodeVersion(&versionMeta{Snapshot: snap, History: [][]string{snap.Hashes()}}, body); err != nil {
			return err
		}
	}
	msg := &nats.Msg{Subject: versionSubject(ShardOf(id, c.Config.Shards), id), Data: data, Header: nats.Header{}}
	msg.Header.Set(hdrSeq, strconv.Itoa(seq))
	msg.Header.Set(hdrDue, strconv.FormatInt(time.Now().UnixNano(), 10))
	msg.Header.Set(hdrEnc, "s2")
	_, err := c.js.PublishMsg(ctx, msg)
	return err
}

// DropSchedules deletes every shard's schedules kept in the cluster, as a
// node killed before it kept them leaves them.
func (c *Conn) DropSchedules(ctx context.Context) error {
	s, err := c.js.Stream(ctx, "KV_"+schedulesBucket)
	if err != nil {
		return err
	}
	return s.Purge(ctx)
}
