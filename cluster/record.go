package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
)

// Headers of the messages.
const (
	hdrDue   = "Cd-Due"   // a check's due time, Unix nanoseconds (of a version: the check that stored it)
	hdrSeq   = "Cd-Seq"   // a version's number in its watch's track
	hdrReply = "Cd-Reply" // where a check's outcome goes
	hdrEnc   = "Cd-Enc"   // "s2": the version message is S2-compressed
)

// ShardOf is the shard of a watch.
func ShardOf(watchID int64, shards int) int { return int(uint64(watchID) % uint64(shards)) }

// checkSubject is the subject of the checks of a watch in the queue: one
// per watch, so that the checks of a watch waiting or running can be
// looked up (queuedCheck).
func checkSubject(shard int, watchID int64) string {
	return "cd.check." + strconv.Itoa(shard) + "." + strconv.FormatInt(watchID, 10)
}

func versionSubject(shard int, watchID int64) string {
	return "cd.ver." + strconv.Itoa(shard) + "." + strconv.FormatInt(watchID, 10)
}

func shardVersions(shard int) string { return "cd.ver." + strconv.Itoa(shard) + ".>" }

func watchKey(shard int, watchID int64) string {
	return strconv.Itoa(shard) + "." + strconv.FormatInt(watchID, 10)
}

// outcomeSubject is where a check's outcome is published.
func outcomeSubject(watchID int64, due time.Time) string {
	return "cd.outcome." + strconv.FormatInt(watchID, 10) + "." + strconv.FormatInt(due.UnixNano(), 10)
}

// outcomesOf is the subjects of the outcomes of every check of a watch.
func outcomesOf(watchID int64) string { return "cd.outcome." + strconv.FormatInt(watchID, 10) + ".*" }

// checkID identifies one due check of a watch: JetStream drops a second
// message with the same ID, and a version stored by the check carries it.
func checkID(watchID int64, due time.Time) string {
	return strconv.FormatInt(watchID, 10) + "@" + strconv.FormatInt(due.UnixNano(), 10)
}

// checkMsg is a due check as queued.
type checkMsg struct {
	Watch changedigest.Watch `json:"watch"`
	Due   time.Time          `json:"due"`
}

// reply is a check's outcome sent back to the owner of the watch.
type reply struct {
	Outcome crawl.Outcome `json:"outcome"`
	Err     string        `json:"err,omitempty"`
}

// versionMeta is what a version message holds besides the body: the
// version, and the signature matrix up to it (its own hashes first), so
// that the next check of the watch, on any node, reads one message.
type versionMeta struct {
	Snapshot *changedigest.Snapshot `json:"snapshot"`
	History  [][]string             `json:"history"`
	// Shot is the length of the screenshot's PNG, which follows the body
	// (0: none; the snapshot's JSON leaves the image out).
	Shot int `json:"shot,omitempty"`
	// Shell says whether the page's weight (which the snapshot's JSON
	// leaves out) makes it look like a shell rendering would fill
	// (crawl.ShellWeight). Nil when the version was not weighed (a feed;
	// a version imported from a store, which keeps no weight) or was
	// written before it was kept. The view that applies the version
	// learns it (learn).
	Shell *bool `json:"shell,omitempty"`
}

// version is a decoded version message.
type version struct {
	meta versionMeta
	body []byte
	// seq is the version's number in the track; due the check's due
	// time; streamSeq the message's place in the stream.
	seq       int
	due       int64
	streamSeq uint64
}

// encodeVersion lays out a version message: the metadata's length as a
// uvarint, the metadata (JSON), the body; all S2-compressed (header
// Cd-Enc: s2), which makes the message a third of its size or less for
// the stream, its replicas and every view that reads it.
func encodeVersion(meta *versionMeta, body []byte) ([]byte, error) {
	var png []byte
	if meta.Snapshot != nil && meta.Snapshot.Screenshot != nil {
		png = meta.Snapshot.Screenshot.PNG
	}
	meta.Shot = len(png)
	b := encodeBufs.Get().(*encodeBuf)
	defer b.put()
	b.js.Reset()
	if err := json.NewEncoder(&b.js).Encode(meta); err != nil {
		return nil, err
	}
	js := b.js.Bytes()
	out := binary.AppendUvarint(b.plain[:0], uint64(len(js)))
	out = append(out, js...)
	out = append(out, body...)
	out = append(out, png...)
	b.plain = out
	if n := s2.MaxEncodedLen(len(out)); cap(b.packed) < n {
		b.packed = make([]byte, n)
	}
	return bytes.Clone(s2.Encode(b.packed[:cap(b.packed)], out)), nil
}

// encodeBuf is encodeVersion's scratch space, used again by the next
// version: the metadata, the message laid out, and compressed. Only the
// compressed message, a few kilobytes for most pages, is allocated anew.
type encodeBuf struct {
	js            bytes.Buffer
	plain, packed []byte
}

var encodeBufs = sync.Pool{New: func() any { return new(encodeBuf) }}

// put gives b back, unless it grew for a large version.
func (b *encodeBuf) put() {
	if b.js.Cap()+cap(b.plain)+cap(b.packed) <= 4<<20 {
		encodeBufs.Put(b)
	}
}

var errBadVersion = errors.New("cluster: malformed version message")

// tooLargeError: a version's message is over MaxMessage.
type tooLargeError struct {
	watch int64
	size  int
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("cluster: a version of watch %d is %d bytes, over the %d the cluster stores", e.watch, e.size, MaxMessage)
}

// versionMsg lays out snap (its WatchID and Seq set) and body as the
// versions stream keeps them: the message on the watch's subject of
// shard, with the signature matrix of the version's hashes followed by
// prior's newest rows, matrix rows in all, and due, the due time of the
// check that stored it. It returns the message and that matrix; a
// *tooLargeError when the message is over MaxMessage, and the store's
// own error when snap is over its limits (pet.CheckVersion).
func versionMsg(shard int, snap *changedigest.Snapshot, prior [][]string, matrix int, body []byte, due time.Time) (*nats.Msg, [][]string, error) {
	// A version the views' stores would refuse is never kept: it would
	// stand in the stream for good, ahead of the watch's later versions.
	if err := pet.CheckVersion(snap, body); err != nil {
		return nil, nil, err
	}
	history := append([][]string{snap.Hashes()}, prior[:min(len(prior), max(matrix, 1)-1)]...)
	meta := &versionMeta{Snapshot: snap, History: history}
	if snap.Weight != nil {
		shell := crawl.ShellWeight(*snap.Weight)
		meta.Shell = &shell
	}
	data, err := encodeVersion(meta, body)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: encode a version of watch %d: %w", snap.WatchID, err)
	}
	if len(data) > MaxMessage {
		return nil, nil, &tooLargeError{snap.WatchID, len(data)}
	}
	msg := &nats.Msg{Subject: versionSubject(shard, snap.WatchID), Data: data, Header: nats.Header{}}
	msg.Header.Set(hdrSeq, strconv.Itoa(snap.Seq))
	msg.Header.Set(hdrDue, strconv.FormatInt(due.UnixNano(), 10))
	msg.Header.Set(hdrEnc, "s2")
	return msg, history, nil
}

// inflate decompresses S2 data of at most limit bytes once decompressed.
func inflate(data []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, fmt.Errorf("compressed length: %w", err)
	}
	if n > limit {
		return nil, fmt.Errorf("%d bytes decompressed, over %d", n, limit)
	}
	return s2.Decode(nil, data)
}

func decodeVersion(data []byte, h nats.Header, streamSeq uint64) (*version, error) {
	if h.Get(hdrEnc) == "s2" {
		plain, err := inflate(data, 4*MaxMessage)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errBadVersion, err)
		}
		data = plain
	}
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)-k) {
		return nil, errBadVersion
	}
	v := &version{body: data[k+int(n):], streamSeq: streamSeq}
	if err := json.Unmarshal(data[k:k+int(n)], &v.meta); err != nil || v.meta.Snapshot == nil {
		return nil, fmt.Errorf("%w: %v", errBadVersion, err)
	}
	if shot := v.meta.Shot; shot > 0 {
		if shot > len(v.body) || v.meta.Snapshot.Screenshot == nil {
			return nil, fmt.Errorf("%w: screenshot of %d bytes", errBadVersion, shot)
		}
		end := len(v.body) - shot
		v.meta.Snapshot.Screenshot.PNG = v.body[end:]
		v.body = v.body[:end:end]
	}
	var err error
	if v.seq, err = strconv.Atoi(h.Get(hdrSeq)); err != nil || v.seq <= 0 {
		return nil, fmt.Errorf("%w: sequence %q", errBadVersion, h.Get(hdrSeq))
	}
	v.due, _ = strconv.ParseInt(h.Get(hdrDue), 10, 64)
	v.meta.Snapshot.Seq = v.seq
	return v, nil
}

// versionOf reads a version message's watch and version number from its
// subject and headers, without decoding it.
func versionOf(m *jetstream.RawStreamMsg) (id int64, seq int, ok bool) {
	i := strings.LastIndexByte(m.Subject, '.')
	id, err := strconv.ParseInt(m.Subject[i+1:], 10, 64)
	if err != nil || id <= 0 {
		return 0, 0, false
	}
	seq, err = strconv.Atoi(m.Header.Get(hdrSeq))
	if err != nil || seq <= 0 {
		return 0, 0, false
	}
	return id, seq, true
}

func decodeRaw(m *jetstream.RawStreamMsg) (*version, error) {
	return decodeVersion(m.Data, m.Header, m.Sequence)
}

// conflict reports whether JetStream refused a write because the stream
// or key moved on since it was read (compare-and-set lost).
func conflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == 10164)
}

// transient reports whether a JetStream request failed for want of an
// answer (a stream electing its leader after a server died): worth again.
func transient(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// kvDeleted reports whether a message of a bucket's stream marks its key
// deleted (or purged).
func kvDeleted(m *jetstream.RawStreamMsg) bool {
	op := m.Header.Get("KV-Operation")
	return op == "DEL" || op == "PURGE"
}

// scan calls fn with each message of the stream on subject (wildcards
// allowed), oldest first. It reads them one by one with direct gets,
// which any current replica answers: no consumer is made, so a scan goes
// on while the cluster replaces a server that died.
func scan(ctx context.Context, s jetstream.Stream, subject string, fn func(*jetstream.RawStreamMsg) error) error {
	for seq := uint64(1); ; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		seq = m.Sequence + 1
	}
}

// again calls fn until it does not fail for want of an answer, for at
// most half a minute (a stream or bucket just made, or whose leader died,
// answers some seconds later).
func again(ctx context.Context, fn func() error) error {
	end := time.Now().Add(30 * time.Second)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := fn()
		if err == nil || !transient(err) || ctx.Err() != nil || time.Now().After(end) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// publish publishes to a stream, again after transient failures, until
// ctx ends; the message ID makes a repeat harmless. It refuses while the
// disk holding the streams is short of the room kept free (roomFor), and
// a refusal for want of space is an errFull.
func (c *Conn) publish(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if err := c.roomFor(len(msg.Data)); err != nil {
		return nil, err
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ack, err := c.js.PublishMsg(actx, msg, opts...)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return ack, c.full(err)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// hostKey is a host's key in the hosts bucket (keys allow few characters).
func hostKey(host string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(host) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "_%x", r)
		}
	}
	return b.String()
}
