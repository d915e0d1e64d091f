package pet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// A user's watch index (user_watch: uid|wid) holds a short summary of
// each watch as its value: what listing, sorting, filtering and counting
// a user's watches need. A page of a user with 10,000 watches then reads
// 10,000 summaries of some 60 bytes and decodes only the watches it
// shows, instead of decoding every watch record. Stores written before
// the summaries have empty values there: Open fills them in
// (fillWatchSummaries), and a list reads the watch itself for any still
// missing.

// fillWatchSummaries writes the summaries missing from user_watch, in a
// store written before they existed. Keys are collected first: a bucket
// must not be written while a cursor walks it.
func fillWatchSummaries(tx *bolt.Tx) error {
	b := tx.Bucket(bUserWatch)
	var missing [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if _, ok := decodeSummary(at(k, 1), v); !ok {
			missing = append(missing, bytes.Clone(k))
		}
	}
	for _, k := range missing {
		w, err := getWatch(tx, at(k, 1))
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			continue // a damaged store's: lists pass it over; see Mend
		}
		if err != nil {
			return err
		}
		if err := b.Put(k, summaryOf(w)); err != nil {
			return err
		}
	}
	return nil
}

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
	Tag    string    `json:"tag,omitempty"`    // only watches with this tag ("" for all)
	Sort   WatchSort `json:"sort,omitempty"`   // "" for SortAdded
	Offset int       `json:"offset,omitempty"` // watches to skip
	Limit  int       `json:"limit,omitempty"`  // watches to return: DefaultWatchLimit when 0, at most MaxWatchLimit
	// Keep, when set, leaves out the watches it refuses (from the page
	// and the counts, not from Tags).
	Keep func(watchID int64) bool `json:"-"`
}

// WatchPage is a page of a user's watches with what a list shows around it.
type WatchPage struct {
	// Watches may share their slices with other calls: read them, do not
	// change them.
	Watches []changedigest.Watch
	Total   int      // watches matching the query's tag
	Failing int      // of those, how many failed at their last check
	Tags    []string // the tags of all the user's watches, sorted
	Offset  int      // the query's offset
	Limit   int      // the limit applied
}

// watchSummary is the value of a user_watch entry, decoded without
// copying: name and tags point into the bytes it was decoded from (which
// readUserList copies out of the transaction).
type watchSummary struct {
	id                    int64
	failing, paused       bool
	lastChange, lastCheck int64  // unix nanoseconds, 0 for never
	name                  []byte // title or URL, at most maxSummaryName bytes
	tags                  []byte // the encoded tags: each a length and its bytes
	ntags                 int
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

// summaryNumber reads a number from the front of *v.
func summaryNumber(v *[]byte) (uint64, bool) {
	n, k := binary.Uvarint(*v)
	if k <= 0 {
		return 0, false
	}
	*v = (*v)[k:]
	return n, true
}

// summaryField reads a length and that many bytes from the front of *v.
func summaryField(v *[]byte) ([]byte, bool) {
	n, ok := summaryNumber(v)
	if !ok || n > uint64(len(*v)) {
		return nil, false
	}
	b := (*v)[:n]
	*v = (*v)[n:]
	return b, true
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
	lc, ok1 := summaryNumber(&v)
	lk, ok2 := summaryNumber(&v)
	name, ok3 := summaryField(&v)
	nt, ok4 := summaryNumber(&v)
	if !ok1 || !ok2 || !ok3 || !ok4 || nt > uint64(len(v)) {
		return s, false
	}
	s.lastChange, s.lastCheck, s.name, s.tags, s.ntags = int64(lc), int64(lk), name, v, int(nt)
	// Check the tags now, so that eachTag need not.
	for range nt {
		if _, ok := summaryField(&v); !ok {
			return s, false
		}
	}
	return s, true
}

// eachTag calls fn with each tag, the bytes pointing into the summary.
func (s *watchSummary) eachTag(fn func(t []byte) bool) {
	v := s.tags
	for range s.ntags {
		t, _ := summaryField(&v)
		if !fn(t) {
			return
		}
	}
}

func (s *watchSummary) hasTag(tag string) bool {
	found := false
	s.eachTag(func(t []byte) bool {
		found = string(t) == tag
		return !found
	})
	return found
}

// CompareWatches orders two watches as a WatchPage of order o lists them
// (o must be one of WatchSorts), for merging pages of several stores.
func CompareWatches(o WatchSort) func(a, b *changedigest.Watch) int {
	by := compareSummaries(o)
	return func(a, b *changedigest.Watch) int {
		sa, _ := decodeSummary(a.ID, summaryOf(a))
		sb, _ := decodeSummary(b.ID, summaryOf(b))
		return by(sa, sb)
	}
}

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

// compareFold compares two names ignoring case (simple folding to lower
// case, rune by rune), then as they are. It allocates nothing: sorting
// calls it some n·log n times.
func compareFold(a, b []byte) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ra, rb := rune(a[i]), rune(b[j])
		na, nb := 1, 1
		if ra >= utf8.RuneSelf {
			ra, na = utf8.DecodeRune(a[i:])
		}
		if rb >= utf8.RuneSelf {
			rb, nb = utf8.DecodeRune(b[j:])
		}
		if ra != rb {
			la, lb := unicode.ToLower(ra), unicode.ToLower(rb)
			if la != lb {
				return cmp.Compare(la, lb)
			}
		}
		i, j = i+na, j+nb
	}
	if c := cmp.Compare(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return bytes.Compare(a, b)
}

// userList is the list of a user's watches as of one snapshot of the
// store: the summaries in id order, copied out of the transaction, with
// the aggregates a page shows and the orders computed so far.
type userList struct {
	txid    int // the bolt transaction the list was read in
	sums    []watchSummary
	tags    []string
	failing int
	used    atomic.Int64 // when it was last used, on the cache's counter

	mu     sync.Mutex
	orders map[WatchSort][]int32 // positions in sums
}

// readUserList reads the user's summaries in tx, decoding the records of
// watches that have none yet.
func readUserList(tx *bolt.Tx, userID int64) (*userList, error) {
	l := &userList{txid: tx.ID(), orders: map[WatchSort][]int32{}}
	var arena []byte // the summaries' bytes, copied out of the transaction
	tags := map[string]bool{}
	prefix := id64(userID)
	c := tx.Bucket(bUserWatch).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		id := at(k, 1)
		if _, ok := decodeSummary(id, v); !ok {
			w, err := getWatch(tx, id)
			if errors.Is(err, ErrCorrupt) {
				d := damagedWatch(userID, id, nil, err)
				w = &d
			} else if err != nil {
				return nil, err
			}
			v = summaryOf(w)
		}
		// Earlier summaries keep pointing into the old array when append
		// moves the arena: its bytes stay as they were.
		start := len(arena)
		arena = append(arena, v...)
		sum, _ := decodeSummary(id, arena[start:len(arena):len(arena)])
		sum.eachTag(func(t []byte) bool {
			if !tags[string(t)] {
				tags[string(t)] = true
			}
			return true
		})
		if sum.failing {
			l.failing++
		}
		l.sums = append(l.sums, sum)
	}
	for t := range tags {
		l.tags = append(l.tags, t)
	}
	slices.Sort(l.tags)
	return l, nil
}

// order returns the positions of the summaries in order o, sorting them
// the first time o is asked for.
func (l *userList) order(o WatchSort) []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if idx, ok := l.orders[o]; ok {
		return idx
	}
	idx := make([]int32, len(l.sums))
	for i := range idx {
		idx[i] = int32(i)
	}
	if o != SortAdded { // sums are in id order already
		cmpSum := compareSummaries(o)
		slices.SortFunc(idx, func(a, b int32) int { return cmpSum(l.sums[a], l.sums[b]) })
	}
	l.orders[o] = idx
	return idx
}

// listCache keeps the lists of the users who looked at their watches
// lately. A list is good for the snapshot it was read in: a read
// transaction with another id (any write since) reads the list again, so
// a list is never stale, and the users who page through many watches
// read them once per write rather than once per page.
type listCache struct {
	mu    sync.Mutex
	users map[int64]*userList
	clock atomic.Int64
}

// listCacheUsers bounds the lists kept.
const listCacheUsers = 16

func (c *listCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users = nil
}

func (c *listCache) get(userID int64, txid int) *userList {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.users[userID]
	if l == nil || l.txid != txid {
		return nil
	}
	l.used.Store(c.clock.Add(1))
	return l
}

func (c *listCache) put(userID int64, l *userList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.users == nil {
		c.users = map[int64]*userList{}
	}
	if old := c.users[userID]; old != nil && old.txid > l.txid {
		return // a newer list is there already
	}
	if _, ok := c.users[userID]; !ok && len(c.users) >= listCacheUsers {
		var lru int64
		var lruUsed int64 = -1
		for id, x := range c.users {
			if u := x.used.Load(); lruUsed < 0 || u < lruUsed {
				lru, lruUsed = id, u
			}
		}
		delete(c.users, lru)
	}
	l.used.Store(c.clock.Add(1))
	c.users[userID] = l
}

// WatchPage returns a page of the user's watches in the query's order,
// with the count of watches that match, how many of those are failing,
// and the user's tags. The cost is one pass over the user's short
// summaries and a read of the watches on the page; the summaries are kept
// for a few users until the store's next write (see listCache), so that
// paging through a long list costs the page. Errors: EINVALID for
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
		l := s.lists.get(userID, tx.ID())
		if l == nil {
			var err error
			if l, err = readUserList(tx, userID); err != nil {
				return err
			}
			s.lists.put(userID, l)
		}
		out.Tags = slices.Clone(l.tags)
		idx := l.order(order)
		out.Total, out.Failing = len(idx), l.failing
		if tag != "" || q.Keep != nil {
			var kept []int32
			out.Failing = 0
			for _, i := range idx {
				if sum := &l.sums[i]; (tag == "" || sum.hasTag(tag)) && (q.Keep == nil || q.Keep(sum.id)) {
					kept = append(kept, i)
					if sum.failing {
						out.Failing++
					}
				}
			}
			idx, out.Total = kept, len(kept)
		}
		if q.Offset >= len(idx) {
			return nil
		}
		page := idx[q.Offset:min(len(idx), q.Offset+q.Limit)]
		out.Watches = make([]changedigest.Watch, 0, len(page))
		for _, i := range page {
			w, err := s.keptWatch(tx, l.sums[i].id)
			if errors.Is(err, ErrCorrupt) {
				// Listed as damaged, the others as they are.
				s.noteDamaged("watch", l.sums[i].id, err)
				d := damagedWatch(userID, l.sums[i].id, &l.sums[i], err)
				w = &d
			} else if err != nil {
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
