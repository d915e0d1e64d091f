package pet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	bolt "go.etcd.io/bbolt"
)

// The index holds one document per distinct segment of a watch's track
// (segRec), not one per segment per version: an unchanged segment is
// indexed once however many versions hold it. A document has no stored
// fields; hits are resolved in pet.db.
//
// Times are indexed as calendar buckets (year, month, day and hour terms
// in UTC) rather than as Bleve numbers, which cost sixteen terms a value:
// a range query is the union of the fewest whole buckets covering it, so
// ranges are applied at whole hours.
const (
	fText  = "text"  // the segment text, English analysis, term vectors for phrases and snippets
	fUser  = "user"  // owner's user id, keyword
	fWatch = "watch" // watch id, keyword
	fTypes = "types" // change types that brought the segment, keywords
	fFirst = "first" // buckets of the first version holding it
	fLast  = "last"  // buckets of the last version holding it; liveTerm while live
	fSort  = "sort"  // first time as fixed-width digits, for newest-first order (indexes made before fOrder)
	// fNewest is the first time, then the document's ID (newestKey):
	// newest first with no two documents alike, so that the order needs
	// no second key. Sorting on Bleve's _id as the second key made it read
	// every hit's ID (a tenth of a search over a million segment
	// versions); the segments of a version share their first time.
	fNewest = "newest"
	// fOrder is fNewest as indexes made before it had it, with the time
	// in eight bytes (orderKey). Bleve's doc values split a term at each
	// byte 0xFF, and a search sorts by the part before the first one: a
	// document whose time held that byte (one in forty) sorted as older
	// than it was, by up to days. Open rebuilds such an index.
	fOrder = "order"
)

// liveTerm in fLast stands for "still in the latest version".
const liveTerm = "live"

func indexMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.DefaultAnalyzer = wordsAnalyzer
	im.IndexDynamic, im.StoreDynamic, im.DocValuesDynamic = false, false, false
	dm := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = wordsAnalyzer
	text.Store, text.IncludeInAll, text.IncludeTermVectors, text.DocValues = false, false, true, false
	text.SkipFreqNorm = true // hits are ordered by time, not score
	dm.AddFieldMappingsAt(fText, text)
	for _, name := range []string{fUser, fWatch, fTypes, fFirst, fLast, fNewest} {
		kw := bleve.NewKeywordFieldMapping()
		kw.Store, kw.IncludeInAll, kw.IncludeTermVectors = false, false, false
		kw.DocValues = name == fNewest
		dm.AddFieldMappingsAt(name, kw)
	}
	im.DefaultMapping = dm
	return im
}

// mergePlan is Bleve's merge policy for this store's write pattern: one
// large segment from the first checks, then small batches that replace a
// few of its documents. With Bleve's default floor of 2,000 documents an
// index of a few thousand documents has a budget of one or two segments,
// so every small batch was merged into the large segment at once,
// rewriting it (60 % of the CPU of a check pass). A floor of 100 gives
// small segments tiers of their own, so they are merged with each other
// and reach the large one only when their tier is full.
var mergePlan = map[string]any{
	"FloorSegmentSize":     100,
	"ReclaimDeletesWeight": 0.5,
}

func docID(watchID int64, segID uint64) string {
	return strconv.FormatInt(watchID, 10) + "/" + strconv.FormatUint(segID, 10)
}

func parseDocID(id string) (int64, uint64, bool) {
	w, s, ok := strings.Cut(id, "/")
	if !ok {
		return 0, 0, false
	}
	wid, err1 := strconv.ParseInt(w, 10, 64)
	sid, err2 := strconv.ParseUint(s, 10, 64)
	return wid, sid, err1 == nil && err2 == nil
}

// Bucket terms: a prefix letter and the UTC calendar fields.
const (
	yearLayout  = "y2006"
	monthLayout = "m200601"
	dayLayout   = "d20060102"
	hourLayout  = "h2006010215"
)

// Times outside [minTime, maxTime] are clamped into it for indexing.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2099, 12, 31, 23, 0, 0, 0, time.UTC)
)

func clampTime(t time.Time) time.Time {
	t = t.UTC()
	if t.Before(minTime) {
		return minTime
	}
	if t.After(maxTime) {
		return maxTime
	}
	return t
}

// buckets are the terms indexed for time t.
func buckets(t time.Time) []string {
	t = clampTime(t)
	return []string{t.Format(yearLayout), t.Format(monthLayout), t.Format(dayLayout), t.Format(hourLayout)}
}

// cover returns the fewest bucket terms whose union is the hours from
// the one holding a to the one holding b, inclusive.
func cover(a, b time.Time) []string {
	a, b = clampTime(a).Truncate(time.Hour), clampTime(b).Truncate(time.Hour)
	var terms []string
	for p := a; !p.After(b); {
		y, m, d := p.Date()
		units := []struct {
			start, next time.Time
			layout      string
		}{
			{time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC), yearLayout},
			{time.Date(y, m, 1, 0, 0, 0, 0, time.UTC), time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC), monthLayout},
			{time.Date(y, m, d, 0, 0, 0, 0, time.UTC), time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC), dayLayout},
			{p, p.Add(time.Hour), hourLayout},
		}
		for _, u := range units {
			if u.start.Equal(p) && !u.next.After(b.Add(time.Hour)) {
				terms = append(terms, p.Format(u.layout))
				p = u.next
				break
			}
		}
	}
	return terms
}

// timeSpan returns the oldest and newest fetch times ever stored, which
// bound the open ends of a search range.
func timeSpan(tx *bolt.Tx) (time.Time, time.Time) {
	m := tx.Bucket(bMeta)
	lo, hi := minTime, maxTime
	if v := m.Get(metaMinTime); v != nil {
		lo = time.Unix(0, at(v, 0)).UTC()
	}
	if v := m.Get(metaMaxTime); v != nil {
		hi = time.Unix(0, at(v, 0)).UTC()
	}
	return lo, hi
}

// widenSpan records a fetch time in the span timeSpan returns.
func widenSpan(tx *bolt.Tx, t time.Time) error {
	n := unixNano(clampTime(t))
	m := tx.Bucket(bMeta)
	if v := m.Get(metaMinTime); v == nil || n < at(v, 0) {
		if err := m.Put(metaMinTime, id64(n)); err != nil {
			return err
		}
	}
	if v := m.Get(metaMaxTime); v == nil || n > at(v, 0) {
		return m.Put(metaMaxTime, id64(n))
	}
	return nil
}

var (
	metaMinTime = []byte("min_time")
	metaMaxTime = []byte("max_time")
)

func sortKey(t time.Time) string { return fmt.Sprintf("%020d", unixNano(clampTime(t))) }

// newestKey is a document's fNewest: the time as nine bytes of seven
// bits, big-endian (which order as the time does, and none of them 0xFF,
// where Bleve's doc values split a term), then the document's ID, whose
// bytes are digits and a slash. Every hit's key is read to order the
// hits, so it is kept short: 20 digits and a separator made the search
// over a million segment versions slower than reading each hit's ID had
// been. Clamped times (1970 to 2099) are below 2⁶³, which nine bytes of
// seven bits hold.
func newestKey(t time.Time, id string) string {
	n := uint64(unixNano(clampTime(t)))
	b := make([]byte, 9, 9+len(id))
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(n & 0x7f)
		n >>= 7
	}
	return string(append(b, id...))
}

// orderKey is a document's fOrder: the time as eight bytes, big-endian,
// then the document's ID.
func orderKey(t time.Time, id string) string {
	return string(binary.BigEndian.AppendUint64(nil, uint64(unixNano(clampTime(t))))) + id
}

// document is the index document of a segment record, whose ID is id,
// for an index ordered by the field order (orderField).
func document(id string, userID, watchID int64, r *segRec, order string) map[string]any {
	last := []string{liveTerm}
	if !r.Live {
		last = buckets(r.LastTime)
	}
	var types []string
	for _, t := range r.Types.types() {
		types = append(types, string(t))
	}
	doc := map[string]any{
		fText:  r.Text,
		fUser:  strconv.FormatInt(userID, 10),
		fWatch: strconv.FormatInt(watchID, 10),
		fTypes: types,
		fFirst: buckets(r.FirstTime),
		fLast:  last,
	}
	switch order {
	case fNewest:
		doc[fNewest] = newestKey(r.FirstTime, id)
	case fOrder:
		doc[fOrder] = orderKey(r.FirstTime, id)
	default:
		doc[fSort] = sortKey(r.FirstTime)
	}
	return doc
}

// orderField is the field by which an index made with the mapping m
// orders its documents: fNewest; fSort in indexes made before fOrder;
// fOrder in one made with it that could not be rebuilt (see openIndex).
func orderField(m mapping.IndexMapping) string {
	for _, f := range []string{fNewest, fOrder} {
		if m.FieldMappingForPath(f).Type != "" {
			return f
		}
	}
	return fSort
}

// newestFirst is the sort of a search in an index made with the mapping
// m: by its order field, then by the document ID where that field is
// fSort (the same order).
func newestFirst(m mapping.IndexMapping) []string {
	if f := orderField(m); f != fSort {
		return []string{"-" + f}
	}
	return []string{"-" + fSort, "-_id"}
}

// addPending records, in the transaction that changed them, the segments
// whose index documents must be brought up to date.
func addPending(tx *bolt.Tx, watchID int64, ids map[uint64]bool) error {
	if len(ids) == 0 {
		return nil
	}
	b := tx.Bucket(bPending)
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	var e enc
	e.uint(uint64(watchID))
	e.uint(uint64(len(ids)))
	for id := range ids {
		e.uint(id)
	}
	return b.Put(key(n), e.b)
}

func decodePending(v []byte) (int64, []uint64, error) {
	d := dec{b: v}
	wid := int64(d.uint())
	ids := make([]uint64, d.count())
	for i := range ids {
		ids[i] = d.uint()
	}
	return wid, ids, d.err
}

// syncAfterWrite schedules bringing the index up to date after a commit
// that left pending markers. The index work of the writes made within
// IndexDelay of each other is done in one batch: Bleve's cost is mostly
// per batch (a new segment, its persistence, and the merges that fold it
// into the others), not per document. A search, Check, Stats or Close
// applies what is pending first, so a search always sees every version
// stored before it.
func (s *Store) syncAfterWrite() {
	s.behind.Store(true)
	if s.DeferIndex {
		return
	}
	if s.IndexDelay < 0 {
		s.flushIndex()
		return
	}
	d := s.IndexDelay
	if d == 0 {
		d = DefaultIndexDelay
	}
	s.timerMu.Lock()
	defer s.timerMu.Unlock()
	if s.timer == nil && s.open.Load() {
		s.timer = time.AfterFunc(d, func() {
			s.timerMu.Lock()
			s.timer = nil
			s.timerMu.Unlock()
			if s.open.Load() {
				s.flushIndex()
			}
		})
	}
}

// DefaultIndexDelay is how long the index work of a write may wait to be
// batched with that of other writes (see Store.IndexDelay).
const DefaultIndexDelay = 2 * time.Second

// stopTimer cancels a scheduled index update (Close applies it instead).
func (s *Store) stopTimer() {
	s.timerMu.Lock()
	defer s.timerMu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// catchUp opens the index and applies pending index updates before a
// read that must see them.
func (s *Store) catchUp(ctx context.Context) error {
	if err := s.ensureIndex(ctx); err != nil {
		return err
	}
	if s.behind.Load() {
		s.flushIndex()
	}
	return nil
}

// flushIndex brings the index up to date now; a failure is logged and
// retried by the next write, search or Open.
func (s *Store) flushIndex() {
	if err := s.ensureIndex(context.Background()); err != nil {
		s.Logger.Error("search index cannot be opened; will retry", "err", err)
		return
	}
	if err := s.syncIndex(); errors.Is(err, errIndexReadOnly) {
		s.Logger.Debug("search index is behind while read-only", "err", err)
	} else if err != nil {
		s.Logger.Error("search index is behind; will retry", "err", err)
	}
}

// syncIndex applies the pending markers: each listed segment's document
// is set to what pet.db holds now (deleted when the record is gone), so
// replaying a marker twice, or out of order, is harmless. Markers are
// deleted only after the index has persisted the batch.
func (s *Store) syncIndex() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if err := s.recoverIndex(); err != nil {
		return err
	}
	if s.idx == nil {
		return fmt.Errorf("pet: index is closed")
	}
	// Cleared before reading the markers: a write committed after this
	// point sets it again.
	s.behind.Store(false)
	for {
		more, err := s.syncSome()
		if err != nil {
			s.behind.Store(true)
			return err
		}
		if !more {
			return nil
		}
	}
}

// syncBudget and syncBytes bound one index batch, in documents and in
// bytes of documents: Bleve holds every token of a batch (with its
// positions, for highlighting) until the batch is a segment, some 25
// times the text. Catching up with a long run of writes (a week of checks
// by commands that leave their index work to the next search) is done in
// many such batches. On checkbench's 10,000 new pages, 3 MB batches gave a
// lower peak (293 against 298 MB) and less CPU (3.7–4.0 against 4.3–4.8 ms
// a check) than 4 MB, and 2 MB ones left Bleve merging so often that 230
// MB of index files stayed mapped.
const (
	syncBudget = 5000
	syncBytes  = 3 << 20
)

// syncSome applies pending markers, oldest first, until the batch
// reaches syncBudget documents or syncBytes, and reports whether markers
// remain. The caller holds syncMu.
func (s *Store) syncSome() (more bool, err error) {
	var done [][]byte
	batch := s.idx.NewBatch()
	order := orderField(s.idx.Mapping())
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bPending).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if batch.Size() >= syncBudget || batch.TotalDocsSize() >= syncBytes {
				more = true
				break
			}
			wid, ids, err := decodePending(v)
			if err != nil {
				return corruptf("pending index marker %x: %v", k, err)
			}
			set := make(map[uint64]bool, len(ids))
			for _, id := range ids {
				set[id] = true
			}
			if err := s.batchWatch(tx, batch, wid, set, order); err != nil {
				return err
			}
			done = append(done, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("pet: read pending index updates: %w", err)
	}
	if len(done) == 0 {
		return false, nil
	}
	if err := s.batch(batch); err != nil {
		return false, fmt.Errorf("pet: update index: %w", err)
	}
	if err := s.clearPending(done); err != nil {
		return false, fmt.Errorf("pet: clear pending index updates: %w", err)
	}
	return more, nil
}

// clearPending deletes the pending index markers whose updates the index
// has persisted.
func (s *Store) clearPending(done [][]byte) error {
	return s.db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(bPending)
		for _, k := range done {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// batchWatch adds to batch the current state of the watch's segments ids,
// documents of an index ordered by order.
func (s *Store) batchWatch(tx *bolt.Tx, batch *bleve.Batch, wid int64, ids map[uint64]bool, order string) error {
	var uid int64 = -1
	if w, err := getWatch(tx, wid); err == nil {
		uid = w.UserID
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	segs := tx.Bucket(bSegs)
	for id := range ids {
		v := segs.Get(key(uint64(wid), id))
		if uid < 0 || v == nil || len(v) == 0 || v[0]&segIndexable == 0 {
			batch.Delete(docID(wid, id))
			continue
		}
		r, err := decodeSeg(tx, v, true)
		if err != nil {
			return corruptf("segment %d of watch %d: %v", id, wid, err)
		}
		did := docID(wid, id)
		if err := batch.Index(did, document(did, uid, wid, r, order)); err != nil {
			return err
		}
	}
	return nil
}

// openIndex opens index.bleve, replays pending markers and checks that
// the index holds one document per indexable segment of pet.db; when the
// index is missing, unreadable or disagrees, it is rebuilt from pet.db.
func (s *Store) openIndex(ctx context.Context) error {
	path := filepath.Join(s.Dir, indexDir)
	idx, err := s.openIndexAt(path, false)
	rebuild := false
	switch {
	case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
		// A new store's index: its pending markers cover every version, so
		// replaying them fills it in place, without a second copy on disk.
		// The count check below rebuilds it if they do not.
		idx, err = s.newIndex(path, indexMapping())
	case err != nil:
		s.Logger.Warn("search index is unreadable; rebuilding it from the store", "path", path, "err", err)
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("pet: remove broken index: %w", err)
		}
		idx, err = s.newIndex(path, indexMapping())
		rebuild = true
	}
	if err != nil {
		return fmt.Errorf("pet: create index %s: %w", path, err)
	}
	s.idx = idx
	if rebuild {
		want, _, err := s.indexableCount()
		if err != nil {
			return err
		}
		if want == 0 {
			return s.syncIndex()
		}
	} else {
		if orderField(idx.Mapping()) == fOrder {
			s.Logger.Warn("search index orders some hits by a wrong time; rebuilding it from the store", "path", path)
			err := s.rebuildIndex(ctx)
			if err == nil || s.idx == nil {
				return err
			}
			// Still the old index: searched as it is, and rebuilt at the
			// next opening.
			s.Logger.Error("search index could not be rebuilt; searching it as it is", "err", err)
		}
		if n := s.pendingCount(); n > 0 {
			s.Logger.Info("replaying pending index updates", "markers", n)
		}
		if err := s.syncIndex(); err != nil {
			if f, _ := s.currentFault(); f != nil {
				// The index failed while catching up (a full disk): it is
				// open read-only, and recoverIndex retries later.
				return nil
			}
			s.Logger.Warn("replaying pending index updates failed; rebuilding the index", "err", err)
			rebuild = true
		} else {
			if s.afterOpenSync != nil {
				s.afterOpenSync()
			}
			agree, err := s.indexAgrees(idx)
			if err != nil {
				return err
			}
			rebuild = !agree
		}
	}
	if rebuild {
		return s.rebuildIndex(ctx)
	}
	return nil
}

// indexAgrees reports whether idx holds one document per indexable
// segment of pet.db, give or take the segments of markers not yet
// replayed: the checks of a running service go on storing versions while
// its index is opened, and their markers are replayed by the next batch.
func (s *Store) indexAgrees(idx bleve.Index) (bool, error) {
	want, slack, err := s.indexableCount()
	if err != nil {
		return false, err
	}
	n, err := idx.DocCount()
	if err != nil || n+slack < want || n > want+slack {
		s.Logger.Warn("search index disagrees with the store; rebuilding it", "documents", n, "segments", want, "pending", slack, "err", err)
		return false, nil
	}
	return true, nil
}

// pendingCount counts the pending index markers.
func (s *Store) pendingCount() int {
	n := 0
	s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bPending).Stats().KeyN
		return nil
	})
	return n
}

// indexableCount counts the segment records that have an index document,
// and, in the same snapshot, the segments named by pending markers. Writes
// go on while the index is opened, so the index may hold or lack a
// document for each of those; every other segment must have exactly one.
func (s *Store) indexableCount() (want, pending uint64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bSegs).ForEach(func(_, v []byte) error {
			if len(v) > 0 && v[0]&segIndexable != 0 {
				want++
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bPending).ForEach(func(k, v []byte) error {
			_, ids, err := decodePending(v)
			if err != nil {
				return corruptf("pending index marker %x: %v", k, err)
			}
			pending += uint64(len(ids))
			return nil
		})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("pet: count segments: %w", err)
	}
	return want, pending, nil
}

// Compact merges the search index into one segment, dropping the space
// of deleted and replaced documents; searches and writes go on meanwhile.
// Bleve merges by itself as segments accumulate; Compact is for after
// deleting many watches, and for measuring the index.
func (s *Store) Compact(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := s.ensureIndex(ctx); err != nil {
		return err
	}
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	adv, err := s.idx.Advanced()
	if err != nil {
		return fmt.Errorf("pet: compact index: %w", err)
	}
	m, ok := adv.(interface {
		ForceMerge(context.Context, *mergeplan.MergePlanOptions) error
		StatsMap() map[string]any
	})
	if !ok {
		return fmt.Errorf("pet: compact index: %T cannot merge", adv)
	}
	// A merge running in the background when the forced one starts keeps
	// its segments out of it: go again until one segment is left.
	for range 10 {
		if err := m.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions); err != nil {
			return fmt.Errorf("pet: compact index: %w", err)
		}
		st := m.StatsMap()
		files, _ := st["TotFileSegmentsAtRoot"].(uint64)
		mem, _ := st["TotMemorySegmentsAtRoot"].(uint64)
		if files+mem <= 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pet: compact index: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Reindex rebuilds the search index from pet.db into a new directory and
// swaps it in; searches keep using the old index meanwhile. Open does this
// by itself when the index is missing or disagrees with the store.
func (s *Store) Reindex(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := s.ensureIndex(ctx); err != nil {
		return err
	}
	return s.rebuildIndex(ctx)
}

func (s *Store) rebuildIndex(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	path := filepath.Join(s.Dir, indexDir)
	tmp := path + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("pet: rebuild index: %w", err)
	}
	idx, err := bleve.New(tmp, indexMapping())
	if err != nil {
		return fmt.Errorf("pet: rebuild index: %w", err)
	}
	var done [][]byte
	n := 0
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bPending).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			done = append(done, bytes.Clone(k))
		}
		users := map[int64]int64{}
		batch := idx.NewBatch()
		sc := tx.Bucket(bSegs).Cursor()
		for k, v := sc.First(); k != nil; k, v = sc.Next() {
			if len(v) == 0 || v[0]&segIndexable == 0 {
				continue
			}
			wid, id := at(k, 0), uint64(at(k, 1))
			uid, ok := users[wid]
			if !ok {
				w, err := getWatch(tx, wid)
				if err != nil {
					return err
				}
				uid, users[wid] = w.UserID, w.UserID
			}
			r, err := decodeSeg(tx, v, true)
			if err != nil {
				return corruptf("segment %d of watch %d: %v", id, wid, err)
			}
			did := docID(wid, id)
			if err := batch.Index(did, document(did, uid, wid, r, fNewest)); err != nil {
				return err
			}
			// Batches bounded as syncSome's: of 2,000 documents, the
			// rebuild of 10,000 pages of 32 KB under serve's soft memory
			// limit took 46 s of wall time and a 671 MB peak, against 13 s
			// and 370 MB.
			if n++; batch.Size() >= syncBudget || batch.TotalDocsSize() >= syncBytes {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := idx.Batch(batch); err != nil {
					return err
				}
				batch.Reset()
			}
		}
		return idx.Batch(batch)
	})
	if cerr := idx.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("pet: rebuild index: %w", err)
	}
	s.idxMu.Lock()
	if s.idx != nil {
		closeIndex(s.idx)
		s.idx = nil
	}
	err = os.RemoveAll(path)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		s.idx, err = s.openIndexAt(path, false)
	}
	s.idxMu.Unlock()
	if err != nil {
		return fmt.Errorf("pet: swap in rebuilt index: %w", err)
	}
	if err := s.clearPending(done); err != nil {
		return fmt.Errorf("pet: clear pending index updates: %w", err)
	}
	s.behind.Store(false)
	s.Logger.Info("search index rebuilt", "documents", n)
	return nil
}
