package render

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/changedigest/changedigest"
)

// WatchKey fingerprints the fields of w that the rendering of its events
// reads: its id, creation time, name, address, kind and tags, and the
// filters that decide which changes are told (changedigest.Notable),
// its value selector and condition among them.
// Callers that keep what they work out of an event (see Event.Key) key
// it by this and the version.
func WatchKey(w *changedigest.Watch) uint64 {
	h := fnv.New64a()
	var buf [512]byte
	b := buf[:0]
	str := func(s string) {
		b = append(b, s...)
		b = append(b, 0)
	}
	b = strconv.AppendInt(b, w.ID, 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, w.CreatedAt.UnixNano(), 10)
	b = append(b, 0)
	str(w.Name())
	str(w.URL)
	str(string(w.Kind))
	for _, t := range w.Tags {
		str(t)
	}
	b = append(b, 1)
	for _, t := range w.IgnoreText {
		str(t)
	}
	b = append(b, 1)
	for _, t := range w.TriggerText {
		str(t)
	}
	b = append(b, 1)
	for _, t := range w.NotifyTypes {
		str(string(t))
	}
	b = append(b, 1)
	b = strconv.AppendFloat(b, w.MinSignificance, 'g', -1, 64)
	b = strconv.AppendBool(b, w.OnlyInterests)
	b = strconv.AppendBool(b, w.ShowNoise)
	str(w.ValueSelector)
	str(w.When)
	h.Write(b)
	return h.Sum64()
}

// EventKey fingerprints everything the feed entry and the views of ev
// are rendered from: its watch (WatchKey), its version (number, time,
// significance, screenshot and changes) and the profile matches. Events
// with the same key render the same; the entry cache and feed tags go by
// it. It does not read ev.Key.
func EventKey(ev Event) uint64 {
	h := fnv.New64a()
	b := make([]byte, 0, 256)
	b = binary.BigEndian.AppendUint64(b, WatchKey(ev.Watch))
	s := ev.Snapshot
	b = strconv.AppendInt(b, int64(s.Seq), 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, s.FetchedAt.UnixNano(), 10)
	b = append(b, 0)
	b = strconv.AppendFloat(b, s.Significance, 'g', -1, 64)
	b = append(b, 0)
	b = append(b, s.Kind...)
	b = strconv.AppendBool(b, s.Screenshot != nil)
	if s.Value != nil {
		// What the watch's condition weighs (changedigest.Notable).
		b = append(b, s.Value.String()...)
	}
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(len(s.Changes)), 10)
	b = append(b, 0)
	// The changes are stored with their version and never change: their
	// place and type stand for them.
	for i := range s.Changes {
		c := &s.Changes[i]
		b = append(b, c.Path...)
		b = append(b, 1)
		b = append(b, c.Type...)
		b = append(b, 1)
		b = append(b, c.Op...)
		b = append(b, 1)
		b = append(b, c.Noise...)
		b = append(b, 0)
		if len(b) > 4096 {
			h.Write(b)
			b = b[:0]
		}
	}
	for i, ms := range ev.Matches {
		b = append(b, '#')
		b = strconv.AppendInt(b, int64(i), 10)
		for _, m := range ms {
			b = append(b, 0)
			b = append(b, matchKey(m)...)
		}
		if len(b) > 4096 {
			h.Write(b)
			b = b[:0]
		}
	}
	h.Write(b)
	return h.Sum64()
}

// keyOf is ev.Key, or EventKey(ev) when the caller did not set it.
func keyOf(ev Event) uint64 {
	if ev.Key != 0 {
		return ev.Key
	}
	return EventKey(ev)
}

func matchKey(m changedigest.Match) string {
	return m.Interest + "\x01" + m.Term + "\x01" + m.Relation + "\x01" + strconv.Itoa(m.Start) + "\x01" + strconv.Itoa(m.End) +
		"\x01" + strconv.FormatFloat(m.Weight, 'g', -1, 64) + "\x01" + m.Unit + "\x01" + m.Context
}

// FeedTag is an entity tag of the feed that Atom, RSS or JSONFeed
// (format "atom", "rss" or "json") would write for feed and events,
// computed without writing it: from the feed's fields and the event keys
// (Event.Key or EventKey) that the entry cache trusts to fingerprint an
// entry. A server
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
		binary.BigEndian.PutUint64(n[:], keyOf(ev))
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
