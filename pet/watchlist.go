package pet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// A user's watch index (user_watch: uid|wid) holds a short summary of
// each watch as its value: what listing, sorting, filtering and counting
// a user's watches need. A page of a user with 10,000 watches then reads
// 10,000 summaries of some 60 bytes and decodes only the watches it
// shows, instead of decoding every watch record. Stores written before
// the summaries have empty values there, and those watches are read in
// full until their next write fills the summary in.

// WatchSort orders a list of watches.
type WatchSort string

// Orders of a watch list. Ties go by id, oldest first.
const (
	SortAdded   WatchSort = "added"   // by id: the order they were added in (the default)
	SortName    WatchSort = "name"    // by title or URL, ignoring case
	SortChanged WatchSort = "changed" // last change, newest first; never changed last
	SortChecked WatchSort = "checked" // last check, newest first; never checked last
	SortFailing WatchSort = "failing" // failing at their last check first, then as SortAdded
)

// WatchSorts are the orders ParseWatchSort accepts.
var WatchSorts = []WatchSort{SortAdded, SortName, SortChanged, SortChecked, SortFailing}

// ParseWatchSort reads an order; "" is SortAdded. Errors: EINVALID.
func ParseWatchSort(s string) (WatchSort, error) {
	if s == "" {
		return SortAdded, nil
	}
	for _, o := range WatchSorts {
		if string(o) == s {
			return o, nil
		}
	}
	shown := s
	if len(shown) > 32 {
		shown = shown[:32] + "…"
	}
	return "", changedigest.Errorf(changedigest.EINVALID, "sort: %q is not one of added, name, changed, checked, failing", shown)
}

// Limits of a page of watches.
const (
	DefaultWatchLimit = 50
	MaxWatchLimit     = 1000
)

// WatchQuery selects a page of a user's watches.
type WatchQuery struct {
	Tag    string    // only watches with this tag ("" for all)
	Sort   WatchSort // "" for SortAdded
	Offset int       // watches to skip
	Limit  int       // watches to return: DefaultWatchLimit when 0, at most MaxWatchLimit
}

// WatchPage is a page of a user's watches with what a list shows around it.
type WatchPage struct {
	Watches []changedigest.Watch
	Total   int      // watches matching the query's tag
	Failing int      // of those, how many failed at their last check
	Tags    []string // the tags of all the user's watches, sorted
	Offset  int      // the query's offset
	Limit   int      // the limit applied
}

// watchSummary is the value of a user_watch entry.
type watchSummary struct {
	id                    int64
	failing, paused       bool
	lastChange, lastCheck int64 // unix nanoseconds, 0 for never
	name                  string
	tags                  []string
}

const summaryVersion = 1

// maxSummaryName bounds the name kept for sorting.
const maxSummaryName = 200

func summaryOf(w *changedigest.Watch) []byte {
	b := []byte{summaryVersion, 0}
	if w.LastError != "" {
		b[1] |= 1
	}
	if w.Paused {
		b[1] |= 2
	}
	b = binary.AppendUvarint(b, timeKey(w.LastChange))
	b = binary.AppendUvarint(b, timeKey(w.LastCheck))
	name := w.Name()
	if len(name) > maxSummaryName {
		name = name[:maxSummaryName]
	}
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(len(w.Tags)))
	for _, t := range w.Tags {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	return b
}

// decodeSummary reads a summary; false when v is not one (an empty value
// of an older store, or another version).
func decodeSummary(id int64, v []byte) (watchSummary, bool) {
	s := watchSummary{id: id}
	if len(v) < 2 || v[0] != summaryVersion {
		return s, false
	}
	s.failing, s.paused = v[1]&1 != 0, v[1]&2 != 0
	v = v[2:]
	next := func() (uint64, bool) {
		n, k := binary.Uvarint(v)
		if k <= 0 {
			return 0, false
		}
		v = v[k:]
		return n, true
	}
	str := func() (string, bool) {
		n, ok := next()
		if !ok || n > uint64(len(v)) {
			return "", false
		}
		x := string(v[:n])
		v = v[n:]
		return x, true
	}
	lc, ok1 := next()
	lk, ok2 := next()
	name, ok3 := str()
	nt, ok4 := next()
	if !ok1 || !ok2 || !ok3 || !ok4 || nt > uint64(len(v)) {
		return s, false
	}
	s.lastChange, s.lastCheck, s.name = int64(lc), int64(lk), name
	if nt > 0 {
		s.tags = make([]string, nt)
		for i := range s.tags {
			t, ok := str()
			if !ok {
				return s, false
			}
			s.tags[i] = t
		}
	}
	return s, true
}

func (s *watchSummary) hasTag(t string) bool { return slices.Contains(s.tags, t) }

// compareSummaries orders two summaries by o, then by id.
func compareSummaries(o WatchSort) func(a, b watchSummary) int {
	byID := func(a, b watchSummary) int { return cmp.Compare(a.id, b.id) }
	switch o {
	case SortName:
		return func(a, b watchSummary) int {
			if c := compareFold(a.name, b.name); c != 0 {
				return c
			}
			return byID(a, b)
		}
	case SortChanged:
		return func(a, b watchSummary) int {
			if c := cmp.Compare(b.lastChange, a.lastChange); c != 0 {
				return c
			}
			return byID(a, b)
		}
	case SortChecked:
		return func(a, b watchSummary) int {
			if c := cmp.Compare(b.lastCheck, a.lastCheck); c != 0 {
				return c
			}
			return byID(a, b)
		}
	case SortFailing:
		return func(a, b watchSummary) int {
			if a.failing != b.failing {
				if a.failing {
					return -1
				}
				return 1
			}
			return byID(a, b)
		}
	}
	return byID
}

// compareFold compares two names ignoring case, then as they are.
func compareFold(a, b string) int {
	if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// WatchPage returns a page of the user's watches in the query's order,
// with the count of watches that match, how many of those are failing,
// and the user's tags. The cost is one pass over the user's short
// summaries and a read of the watches on the page. Errors: EINVALID for
// a negative offset or limit or an unknown order.
func (s *Store) WatchPage(ctx context.Context, userID int64, q WatchQuery) (*WatchPage, error) {
	if q.Offset < 0 || q.Limit < 0 {
		return nil, invalidf("offset and limit must not be negative")
	}
	if q.Limit == 0 {
		q.Limit = DefaultWatchLimit
	}
	q.Limit = min(q.Limit, MaxWatchLimit)
	order, err := ParseWatchSort(string(q.Sort))
	if err != nil {
		return nil, err
	}
	tag := ""
	if q.Tag != "" {
		if t := changedigest.NormaliseTags([]string{q.Tag}); len(t) > 0 {
			tag = t[0]
		}
	}
	out := &WatchPage{Offset: q.Offset, Limit: q.Limit}
	err = s.view(ctx, func(tx *bolt.Tx) error {
		var sums []watchSummary
		tags := map[string]bool{}
		prefix := id64(userID)
		c := tx.Bucket(bUserWatch).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			id := at(k, 1)
			sum, ok := decodeSummary(id, v)
			if !ok {
				w, err := getWatch(tx, id)
				if err != nil {
					return err
				}
				sum, _ = decodeSummary(id, summaryOf(w))
			}
			for _, t := range sum.tags {
				tags[t] = true
			}
			if tag != "" && !sum.hasTag(tag) {
				continue
			}
			if sum.failing {
				out.Failing++
			}
			sums = append(sums, sum)
		}
		out.Total = len(sums)
		for t := range tags {
			out.Tags = append(out.Tags, t)
		}
		slices.Sort(out.Tags)
		if order != SortAdded { // the index is in id order already
			slices.SortFunc(sums, compareSummaries(order))
		}
		if q.Offset >= len(sums) {
			return nil
		}
		page := sums[q.Offset:min(len(sums), q.Offset+q.Limit)]
		out.Watches = make([]changedigest.Watch, 0, len(page))
		for _, sum := range page {
			w, err := getWatch(tx, sum.id)
			if err != nil {
				return err
			}
			out.Watches = append(out.Watches, *w)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "list watches")
	}
	return out, nil
}
