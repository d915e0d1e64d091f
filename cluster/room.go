package cluster

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
)

// The embedded server's own limit on what its streams may hold: none but
// the disk's. JetStream would otherwise take three quarters of the space
// free when it starts as its limit for good, and refuse every write
// ("insufficient resources") once that is used, however much space is
// freed or added since; the room kept free on the disk (roomFor) is what
// stops the streams' writers before the disk is full.
const serverMaxStore = 1 << 50

// serverMaxMemory is the embedded server's limit on streams kept in
// memory, which the cluster has none of. Given with serverMaxStore, as
// the server takes its limits as given only when both are.
const serverMaxMemory = 64 << 20

// room is what the node knows of the space free on the disk that holds
// the embedded server's streams, read at most once a second.
type room struct {
	dir string
	mu  sync.Mutex
	at  time.Time
	// free and total are the bytes free (to this process) and in all.
	free, total uint64
	// since is when a write was first refused for want of space (zero
	// once there is room again), need the size of the last refused.
	since time.Time
	need  uint64
}

// roomEvery is how long a reading of the free space stands.
const roomEvery = time.Second

// reserve is the room kept free on a disk of total bytes: a twentieth of
// it, between 1 MiB and 1 GiB. The small writes (sessions, schedules,
// the nodes' heartbeats) go on within it; the versions stream stops
// before it.
func reserve(total uint64) uint64 {
	return min(max(total/20, 1<<20), 1<<30)
}

// errFull is the error of a write the cluster refused, or that the disk
// refused, for want of space.
var errFull = changedigest.Errorf(changedigest.EFULL, "storage is full: nothing was stored; checks store again once space is freed")

// read reads the disk's free space anew when the last reading is older
// than roomEvery. r.mu is held.
func (r *room) read(now time.Time) {
	if now.Sub(r.at) < roomEvery {
		return
	}
	f, t, err := diskSpace(r.dir)
	if err != nil {
		// Unknown: the disk's own refusal still says (storageFull).
		f, t = 1<<62, 1<<62
	}
	r.at, r.free, r.total = now, f, t
}

// take counts n bytes about to be written as taken, unless the disk
// would then be short of its reserve, which it reports with the free
// space and the reserve.
func (r *room) take(now time.Time, n int) (free, keep uint64, short bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read(now)
	keep = reserve(r.total)
	if r.free < keep+uint64(n) {
		if r.since.IsZero() {
			r.since = now
		}
		r.need = uint64(n)
		return r.free, keep, true
	}
	r.since, r.need = time.Time{}, 0
	r.free -= uint64(n) // until the next reading tells
	return r.free, keep, false
}

// full reports since when writes have been refused for want of space; it
// ends once there is room for the last one refused.
func (r *room) full(now time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.since.IsZero() {
		r.read(now)
		if r.free >= reserve(r.total)+r.need {
			r.since, r.need = time.Time{}, 0
		}
	}
	return r.since, !r.since.IsZero()
}

// refused records that the disk refused a write for want of space: it is
// full until a reading shows room again.
func (r *room) refused(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since.IsZero() {
		r.since = now
	}
	r.free, r.need = 0, max(r.need, 1)
}

// roomFor refuses a write of n bytes to the versions stream while the
// disk that holds the embedded server's streams is short of its reserve,
// or would be with it (nil for a node that reaches an external NATS
// deployment, whose disks are its own).
func (c *Conn) roomFor(n int) error {
	if c.room == nil {
		return nil
	}
	if free, keep, short := c.room.take(time.Now(), n); short {
		return fmt.Errorf("%w (%s free on the disk holding %s, which keeps %s free; this needs %s)",
			errFull, changedigest.FormatBytes(int64(free)), c.room.dir, changedigest.FormatBytes(int64(keep)), changedigest.FormatBytes(int64(n)))
	}
	return nil
}

// full wraps err, a write JetStream refused, with errFull when it was
// refused for want of space, which the node's reading of the disk then
// says until a later reading shows room again.
func (c *Conn) full(err error) error {
	if !storageFull(err) {
		return err
	}
	if c.room != nil {
		c.room.refused(time.Now())
	}
	return fmt.Errorf("%w: %w", errFull, err)
}

// StorageFull reports since when writes to the node's streams have been
// refused for want of space on their disk (until there is room again).
func (c *Conn) StorageFull() (since time.Time, full bool) {
	if c.room == nil {
		return time.Time{}, false
	}
	return c.room.full(time.Now())
}

// storageFull reports whether JetStream refused a write for want of
// space: its own limits, or the disk's.
func storageFull(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case 10023, 10047: // insufficient resources; storage resources exceeded
		return true
	case 10077: // stream store failed
		d := apiErr.Description
		return strings.Contains(d, "no space left") || strings.Contains(d, "disk quota exceeded")
	}
	return false
}
