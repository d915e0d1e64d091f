package render

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
)

// entryCache keeps rendered feed entries. A stored version never changes,
// so an entry depends only on its event: the watch's name, address and
// tags, the version, and the profile matches. Feed readers poll the same
// entries over and over, and rendering them is most of a feed's cost.
type entryCache struct {
	mu    sync.Mutex
	max   int
	size  int
	byKey map[uint64]*list.Element
	lru   list.List // of *cacheItem, most recent first
}

type cacheItem struct {
	key   uint64
	entry []byte // the encoded <entry> element
	size  int
}

// eventKey fingerprints everything an entry is rendered from.
func eventKey(ev Event) uint64 {
	h := fnv.New64a()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(strconv.FormatInt(ev.Watch.ID, 10))
	w(strconv.Itoa(ev.Snapshot.Seq))
	w(strconv.FormatInt(ev.Snapshot.FetchedAt.UnixNano(), 10))
	w(strconv.FormatInt(ev.Watch.CreatedAt.UnixNano(), 10))
	w(ev.Watch.Name())
	w(ev.Watch.URL)
	for _, t := range ev.Watch.Tags {
		w(t)
	}
	w(strconv.Itoa(len(ev.Snapshot.Changes)))
	// Which changes are told depends on the watch's filters.
	for _, c := range ev.Snapshot.Changes {
		w(c.Path + "\x01" + string(c.Type) + "\x01" + string(c.Op) + "\x01" + c.Noise)
	}
	w(strconv.FormatFloat(ev.Snapshot.Significance, 'g', -1, 64))
	w(fmt.Sprint(ev.Watch.IgnoreText, ev.Watch.TriggerText, ev.Watch.MinSignificance, ev.Watch.NotifyTypes,
		ev.Watch.OnlyInterests, ev.Watch.ShowNoise))
	for i, ms := range ev.Matches {
		w("#" + strconv.Itoa(i))
		for _, m := range ms {
			w(matchKey(m))
		}
	}
	return h.Sum64()
}

func matchKey(m changedigest.Match) string {
	return m.Interest + "\x01" + m.Term + "\x01" + m.Relation + "\x01" + strconv.Itoa(m.Start) + "\x01" + strconv.Itoa(m.End) +
		"\x01" + strconv.FormatFloat(m.Weight, 'g', -1, 64) + "\x01" + m.Unit + "\x01" + m.Context
}

func (c *entryCache) get(key uint64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheItem).entry, true
}

func (c *entryCache) put(key uint64, e []byte) {
	size := len(e) + 64
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max <= 0 || size > c.max/4 {
		return
	}
	if c.byKey == nil {
		c.byKey = map[uint64]*list.Element{}
	}
	if el, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(el)
		return
	}
	c.byKey[key] = c.lru.PushFront(&cacheItem{key: key, entry: e, size: size})
	c.size += size
	for c.size > c.max {
		last := c.lru.Back()
		it := last.Value.(*cacheItem)
		c.lru.Remove(last)
		delete(c.byKey, it.key)
		c.size -= it.size
	}
}

// FeedTag is an entity tag of the feed that Atom, RSS or JSONFeed
// (format "atom", "rss" or "json") would write for feed and events,
// computed without writing it: from the feed's fields and the event keys
// that the entry cache already trusts to fingerprint an entry. A server
// answers a feed reader's conditional request with it before rendering.
// It includes a salt drawn when the process starts, so a restart, which
// may bring other templates or settings, gives every feed a new tag.
func (e *Engine) FeedTag(format string, feed FeedInfo, events []Event) (string, error) {
	evs, err := e.feedEvents(feed, events)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h.Write(tagSalt[:])
	put(format)
	put(feed.ID)
	put(feed.Title)
	put(feed.Subtitle)
	put(feed.SelfURL)
	put(feed.PageURL)
	put(feed.Updated.UTC().Format(time.RFC3339Nano))
	put(feed.Author)
	put(feed.RSSURL)
	put(feed.JSONURL)
	put(feed.HubURL)
	for _, ev := range evs {
		binary.BigEndian.PutUint64(n[:], eventKey(ev))
		h.Write(n[:])
	}
	sum := h.Sum(nil)
	return `"` + hex.EncodeToString(sum[:12]) + `"`, nil
}

// tagSalt is FeedTag's salt, drawn when the process starts.
var tagSalt = func() (b [16]byte) {
	rand.Read(b[:])
	return b
}()
