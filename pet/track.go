package pet

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// Limits on a snapshot's parts.
const (
	maxHash    = 256
	maxLayout  = 16 << 20
	maxSegPath = 4096
)

// AddVersion stores a new version of watch watchID: the snapshot (fetch
// metadata, segments with hashes, texts and byte ranges, layout, change
// set) and its raw body. It assigns the next sequence number of the watch
// (1, 2, …), sets snap.WatchID, snap.Seq and snap.Size (and FetchedAt,
// when zero, to Now), applies the watch's retention, and returns the
// sequence number once the version is durable in pet.db. The version is
// searchable when AddVersion returns; should the index fail meanwhile,
// the failure is logged and the index catches up on the next write,
// search or Open.
//
// Errors: ENOTFOUND when the watch does not exist; EINVALID for a nil
// snapshot, a segment without a hash, or byte ranges outside the body,
// out of order or overlapping; ETOOLARGE for a body over MaxBodySize. On
// any error nothing is stored.
func (s *Store) AddVersion(ctx context.Context, watchID int64, snap *changedigest.Snapshot, body []byte) (int, error) {
	return s.addVersion(ctx, watchID, 0, false, snap, body)
}

// AddVersionAt is AddVersion for a track kept elsewhere (a cluster's
// versions stream), whose numbers the store keeps: the version is
// number seq, which starts a track that holds no version yet (its older
// versions were not kept) or must follow the track's newest. Errors as
// AddVersion's, and ECONFLICT when seq does not follow the newest.
func (s *Store) AddVersionAt(ctx context.Context, watchID int64, seq int, snap *changedigest.Snapshot, body []byte) (int, error) {
	if seq <= 0 {
		return 0, invalidf("version number %d is not positive", seq)
	}
	return s.addVersion(ctx, watchID, seq, false, snap, body)
}

// AddVersionPast is AddVersionAt for a track kept elsewhere some of whose
// versions this store refused (over its limits, or unreadable): seq may
// be past the version after the track's newest, and the versions between
// stay missing. ECONFLICT when seq is not past the newest.
func (s *Store) AddVersionPast(ctx context.Context, watchID int64, seq int, snap *changedigest.Snapshot, body []byte) (int, error) {
	if seq <= 0 {
		return 0, invalidf("version number %d is not positive", seq)
	}
	return s.addVersion(ctx, watchID, seq, true, snap, body)
}

// addVersion stores a version as number want, or (want 0) the next; with
// gap, want may be past the next.
func (s *Store) addVersion(ctx context.Context, watchID int64, want int, gap bool, snap *changedigest.Snapshot, body []byte) (int, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	if err := s.checkSnapshot(snap, body); err != nil {
		return 0, err
	}
	pieces := split(body, snap.Segments)
	packed, layout := s.packNew(watchID, pieces, snap.Layout)
	var shotSum [16]byte
	if snap.Screenshot != nil {
		shotSum = sum16(snap.Screenshot.PNG)
	}
	fetched := snap.FetchedAt
	if fetched.IsZero() {
		fetched = s.now()
	}
	var seq int
	// Concurrent writers (the crawler's workers) share one commit and one
	// fsync (bbolt's Batch); fn may run more than once, so it sets
	// nothing outside the transaction but seq.
	err := s.db.Batch(func(tx *bolt.Tx) error {
		t, err := s.openTrack(tx, watchID)
		if err != nil {
			return err
		}
		if seq, err = t.add(want, gap, snap, body, pieces, packed, layout, fetched); err != nil {
			return err
		}
		if err := t.putShot(seq, snap.Screenshot, shotSum); err != nil {
			return err
		}
		if err := t.retain(s.now()); err != nil {
			return err
		}
		return t.finish()
	})
	if err != nil {
		return 0, wrap(s.writeErr(err), "add version to watch %d", watchID)
	}
	s.full.Store(nil)
	snap.WatchID, snap.Seq, snap.Size, snap.FetchedAt = watchID, seq, len(body), fetched
	if len(snap.Changes) > 0 && s.Notified != nil {
		s.Notified()
	}
	if snap.Screenshot != nil {
		snap.Screenshot.Hash = hex.EncodeToString(shotSum[:])
	}
	s.syncAfterWrite()
	return seq, nil
}

// wrap prefixes internal errors with the package and operation; user
// errors are already prefixed and pass through.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*userError); ok {
		return err
	}
	return fmt.Errorf("pet: "+format+": %w", append(args, err)...)
}

func (s *Store) checkSnapshot(snap *changedigest.Snapshot, body []byte) error {
	if s.MaxBodySize > 0 && len(body) > s.MaxBodySize {
		return tooLargef("body of %d bytes is over the limit of %d bytes", len(body), s.MaxBodySize)
	}
	return CheckVersion(snap, body)
}

// CheckVersion applies the limits a store puts on every version (its
// segments' texts, hashes and paths, its layout, its screenshot, the
// segments' byte ranges within body) and says which one snap breaks.
// Whatever else keeps versions on their way to a store (the cluster's
// versions stream) calls it before it keeps one, so that no version is
// kept there that a store refuses.
func CheckVersion(snap *changedigest.Snapshot, body []byte) error {
	if snap == nil {
		return invalidf("snapshot is missing")
	}
	if len(snap.Layout) > maxLayout {
		return tooLargef("segment layout of %d bytes is over the limit of %d bytes", len(snap.Layout), maxLayout)
	}
	for i, seg := range snap.Segments {
		switch {
		case seg.Hash == "":
			return invalidf("segment %d has no hash", i)
		case len(seg.Hash) > maxHash:
			return invalidf("segment %d has a hash of %d bytes (at most %d)", i, len(seg.Hash), maxHash)
		case len(seg.Text) > maxText:
			return tooLargef("%s %d has %s of text, over the limit of %s", segmentWord(snap), i, changedigest.FormatBytes(int64(len(seg.Text))), changedigest.FormatBytes(maxText))
		case len(seg.Path) > maxSegPath:
			return invalidf("segment %d has a path of %d bytes (at most %d)", i, len(seg.Path), maxSegPath)
		}
	}
	if err := checkShot(snap.Screenshot); err != nil {
		return err
	}
	return checkRanges(snap.Segments, len(body))
}

// segmentWord names a version's parts as its reader knows them: a feed's
// are items.
func segmentWord(snap *changedigest.Snapshot) string {
	if snap.Kind == changedigest.KindFeed {
		return "item"
	}
	return "segment"
}

// packed is a new piece encoded before the write transaction.
type packed struct {
	blob []byte
	base uint64 // delta base chunk, 0 for none
}

// minDelta is the size below which a piece is not tried as a delta: it
// deflates to a few bytes anyway.
const minDelta = 64

// deltaEnough is how many times smaller than its piece a delta must be to
// be kept without deflating the piece to compare: deflate does not shrink
// a page's text that much, and a one-word edit of a piece gives a delta
// of some tens of bytes.
const deltaEnough = 16

// smallDelta reports whether delta (nil for none) is small enough for
// data that deflating data is not worth trying (see deltaEnough).
func smallDelta(delta, data []byte) bool {
	return delta != nil && len(delta)*deltaEnough <= len(data)
}

// packNew compresses the pieces not yet stored, before the write
// transaction takes the lock. A changed piece is tried as a delta against
// the chunk at its place in the watch's latest version (by position, and
// after or before its unchanged neighbours), so an edited paragraph costs
// the edit, not the paragraph; the piece is deflated whole only when no
// delta is a sixteenth of its size (smallDelta). A piece stored meanwhile
// is compressed again inside the transaction. The layout is tried as a
// delta against the latest version's layout likewise: the boundaries of
// most segments stay the same from one version to the next.
func (s *Store) packNew(watchID int64, pieces []piece, layout []byte) ([]packed, packed) {
	out := make([]packed, len(pieces))
	var lp packed
	_ = s.db.View(func(tx *bolt.Tx) error {
		var prev []uint64
		var prevLayout uint64
		if m, err := trackOf(tx, watchID); err == nil && m.Latest > 0 {
			if _, rec, err := readVersion(tx, watchID, m.Latest, false); err == nil {
				prev, prevLayout = rec.chunks, rec.layout
			}
		}
		b, data := tx.Bucket(bChunkHash), tx.Bucket(bChunkData)
		if len(layout) > 0 && prevLayout != 0 && !hasChunk(b, layout) {
			if baseData, err := readChunk(tx, prevLayout, maxLayout); err == nil {
				if d := deltaPack(layout, prevLayout, data.Get(key(prevLayout)), baseData); d != nil {
					lp = packed{blob: d, base: prevLayout}
				}
			}
		}
		// Where each chunk of the previous version sat, to align a changed
		// piece by its unchanged neighbours when pieces were inserted or
		// removed before it.
		where := map[uint64]int{}
		for j, id := range prev {
			if _, ok := where[id]; !ok {
				where[id] = j
			}
		}
		stored := func(i int) (int, bool) {
			if i < 0 || i >= len(pieces) {
				return 0, false
			}
			v := b.Get(pieces[i].sum[:])
			if v == nil {
				return 0, false
			}
			j, ok := where[uint64(at(v, 0))]
			return j, ok
		}
		done := map[[16]byte]bool{}
		for i, p := range pieces {
			if done[p.sum] || b.Get(p.sum[:]) != nil {
				continue
			}
			done[p.sum] = true
			var best packed
			if len(prev) > 0 && len(p.data) >= minDelta {
				var cands []int
				if i < len(prev) {
					cands = append(cands, i)
				}
				if j, ok := stored(i - 1); ok && j+1 < len(prev) {
					cands = append(cands, j+1)
				}
				if j, ok := stored(i + 1); ok && j > 0 {
					cands = append(cands, j-1)
				}
				tried := map[uint64]bool{}
				for _, j := range cands {
					base := prev[j]
					if tried[base] {
						continue
					}
					tried[base] = true
					baseData, err := readChunk(tx, base, maxChunk)
					if err != nil {
						continue
					}
					if d := deltaPack(p.data, base, data.Get(key(base)), baseData); d != nil && (best.blob == nil || len(d) < len(best.blob)) {
						best = packed{blob: d, base: base}
					}
				}
			}
			if !smallDelta(best.blob, p.data) {
				if plain := pack(p.data); best.blob == nil || len(plain) <= len(best.blob) {
					best = packed{blob: plain}
				}
			}
			out[i] = best
		}
		return nil
	})
	if lp.blob != nil && !smallDelta(lp.blob, layout) {
		if plain := pack(layout); len(plain) <= len(lp.blob) {
			lp = packed{blob: plain}
		}
	}
	return out, lp
}

// trackTx is one watch's track inside a write transaction.
type trackTx struct {
	s        *Store
	tx       *bolt.Tx
	watch    changedigest.Watch
	meta     trackMeta
	versions *bolt.Bucket
	segs     *bolt.Bucket
	segHash  *bolt.Bucket
	events   *bolt.Bucket
	chunks   *chunkStore
	// touched holds the segments whose index documents must be brought
	// up to date once the transaction commits.
	touched map[uint64]bool
}

func (s *Store) openTrack(tx *bolt.Tx, watchID int64) (*trackTx, error) {
	w, err := getWatch(tx, watchID)
	if err != nil {
		return nil, err
	}
	t := &trackTx{
		s: s, tx: tx, watch: *w,
		versions: tx.Bucket(bVersions),
		segs:     tx.Bucket(bSegs),
		segHash:  tx.Bucket(bSegHash),
		events:   tx.Bucket(bEvents),
		chunks:   newChunkStore(tx),
		touched:  map[uint64]bool{},
	}
	// Keys of these grow with time: pack pages full.
	t.versions.FillPercent = 0.9
	t.segs.FillPercent = 0.9
	t.events.FillPercent = 0.9
	if v := tx.Bucket(bTracks).Get(id64(watchID)); v != nil {
		if t.meta, err = decodeTrack(v); err != nil {
			return nil, corruptf("track of watch %d: %v", watchID, err)
		}
	}
	return t, nil
}

func (t *trackTx) id() int64 { return t.watch.ID }

func (t *trackTx) segKey(id uint64) []byte { return key(uint64(t.id()), id) }

// hashKey is the seg_hash key of a segment hash: lower-case hex (an MD5,
// as the segmenter writes) is stored as its bytes, anything else as is.
func (t *trackTx) hashKey(hash string) []byte {
	k := id64(t.id())
	if b, err := hex.DecodeString(hash); err == nil && strings.ToLower(hash) == hash {
		return append(append(k, 1), b...)
	}
	return append(append(k, 0), hash...)
}

func (t *trackTx) loadSeg(id uint64, withText bool) (*segRec, error) {
	v := t.segs.Get(t.segKey(id))
	if v == nil {
		return nil, corruptf("segment %d of watch %d is missing", id, t.id())
	}
	r, err := decodeSeg(t.tx, v, withText)
	if err != nil {
		return nil, corruptf("segment %d of watch %d: %v", id, t.id(), err)
	}
	return r, nil
}

func (t *trackTx) putSeg(id uint64, r *segRec) error {
	t.touched[id] = true
	return t.segs.Put(t.segKey(id), r.encode())
}

func (t *trackTx) loadVersion(seq int) (*versionRec, error) {
	v := t.versions.Get(id64(t.id(), int64(seq)))
	if v == nil {
		return nil, corruptf("version %d of watch %d is missing", seq, t.id())
	}
	r, err := decodeVersion(v)
	if err != nil {
		return nil, corruptf("version %d of watch %d: %v", seq, t.id(), err)
	}
	return r, nil
}

// typesAt maps a segment index of the new version to the types of the
// changes located there.
func typesAt(cs []changedigest.Change) map[int]typeMask {
	m := map[int]typeMask{}
	for _, c := range cs {
		if c.Op != changedigest.OpDelete {
			m[c.Segment] |= maskOf(c.Type)
		}
	}
	return m
}

// check tells whether body is the one the header was written for.
func (h *versionHeader) check(body []byte) bool {
	if h.hasCRC {
		return crc32.Checksum(body, castagnoli) == h.CRC
	}
	if h.bodyMD5 {
		sum := md5.Sum(body)
		return hex.EncodeToString(sum[:]) == h.BodyHash
	}
	return bodySum(body) == h.Sum
}

// isHexMD5 reports whether h reads as an MD5 in lower-case hex, which a
// header keeps in its 16 bytes.
func isHexMD5(h string) bool {
	if len(h) != 2*md5.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// castagnoli is the CRC-32C table, which the CPU computes where it can:
// a check of the body read back costs a small part of an MD5 of it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func bodySum(body []byte) uint64 {
	h := sha256.Sum256(body)
	return binary.BigEndian.Uint64(h[:8])
}

// add writes version Latest+1 and returns its number.
func (t *trackTx) add(want int, gap bool, snap *changedigest.Snapshot, body []byte, pieces []piece, packed []packed, layout packed, fetched time.Time) (int, error) {
	seq := t.meta.Latest + 1
	switch {
	case want == 0 || want == seq:
	case t.meta.Latest == 0, gap && want > seq:
		seq = want
	default:
		return 0, conflictf("version %d of watch %d does not follow the newest stored, %d", want, t.watch.ID, t.meta.Latest)
	}
	rec := &versionRec{hdr: versionHeader{
		FetchedAt: unixNano(fetched), Status: snap.Status, ETag: snap.ETag,
		LastModified: snap.LastModified, ContentType: snap.ContentType, FinalURL: snap.FinalURL,
		Kind: snap.Kind, Title: snap.Title, Zone: snap.Zone, Size: len(body), BodyHash: snap.BodyHash,
		Similarity: snap.Similarity, Significance: snap.Significance, Print: snap.Print, Changes: snap.Changes,
		FeedItems: snap.FeedItems, Value: snap.Value,
	}}
	rec.hdr.CRC, rec.hdr.hasCRC = crc32.Checksum(body, castagnoli), true
	rec.hdr.bodyMD5 = isHexMD5(snap.BodyHash)
	if math.IsNaN(rec.hdr.Similarity) || math.IsInf(rec.hdr.Similarity, 0) {
		rec.hdr.Similarity = 0
	}
	if math.IsNaN(rec.hdr.Significance) || math.IsInf(rec.hdr.Significance, 0) {
		rec.hdr.Significance = 0
	}
	seen := map[[16]byte]uint64{}
	// spans maps a piece's start to its end and chunk, to find the piece
	// that is exactly a segment.
	type span struct {
		end int
		id  uint64
	}
	spans := map[int]span{}
	off := 0
	for i, p := range pieces {
		id, ok := seen[p.sum]
		if !ok {
			var err error
			if id, err = t.chunks.ref(p.sum, p.data, packed[i].blob, packed[i].base); err != nil {
				return 0, err
			}
			seen[p.sum] = id
		}
		rec.chunks = append(rec.chunks, id)
		rec.lens = append(rec.lens, len(p.data))
		spans[off] = span{off + len(p.data), id}
		off += len(p.data)
	}
	if len(snap.Layout) > 0 {
		id, err := t.chunks.ref(sum16(snap.Layout), snap.Layout, layout.blob, layout.base)
		if err != nil {
			return 0, err
		}
		rec.layout = id
	}

	var prev map[uint64]bool
	var prevTime time.Time
	if t.meta.Latest > 0 {
		p, err := t.loadVersion(t.meta.Latest)
		if err != nil {
			return 0, err
		}
		prev, prevTime = p.segIDs(), timeOf(p.hdr.FetchedAt)
	} else {
		t.meta.Oldest = seq
	}
	types := typesAt(snap.Changes)
	cur := make(map[uint64]bool, len(snap.Segments))
	for i, seg := range snap.Segments {
		var id uint64
		var r *segRec
		if v := t.segHash.Get(t.hashKey(seg.Hash)); v != nil {
			id = uint64(at(v, 0))
			var err error
			if r, err = t.loadSeg(id, false); err != nil {
				return 0, err
			}
			// The stored text, to tell whether this version's differs: its
			// dictionary is most often the segment's piece of this body,
			// stored as the same chunk, which then need not be read.
			var dict []byte
			if sp, ok := spans[seg.Start]; ok && seg.Start >= 0 && sp.id == r.Dict && sp.end == seg.End {
				dict = body[seg.Start:seg.End]
			}
			if err := r.readText(t.tx, dict); err != nil {
				return 0, corruptf("segment %d of watch %d: %v", id, t.id(), err)
			}
			if !r.Live {
				// Back after an absence (a rotating block, say).
				r.Live, r.LastSeq, r.LastTime = true, 0, time.Time{}
				if err := t.putSeg(id, r); err != nil {
					return 0, err
				}
			}
		} else {
			t.meta.NextSeg++
			id = t.meta.NextSeg
			r = &segRec{
				Live: true, FirstSeq: seq, FirstTime: fetched, FirstIndex: seg.Index,
				Types: types[seg.Index], Hash: seg.Hash, Index: seg.Index, Path: seg.Path, Text: seg.Text,
				hasText: indexable(seg.Text),
			}
			// The text is mostly runs of the segment's HTML: stored as
			// those runs when the segment is exactly one chunk.
			if sp, ok := spans[seg.Start]; ok && seg.Start >= 0 && sp.end == seg.End && seg.End > seg.Start && len(seg.Text) >= minCompress {
				if p := subPack([]byte(seg.Text), body[seg.Start:seg.End]); p != nil {
					if err := t.chunks.addRef(sp.id); err != nil {
						return 0, err
					}
					r.packed, r.Dict = p, sp.id
				}
			}
			if r.packed == nil {
				r.packed = pack([]byte(seg.Text))
			}
			if err := t.putSeg(id, r); err != nil {
				return 0, err
			}
			if err := t.segHash.Put(t.hashKey(seg.Hash), key(id)); err != nil {
				return 0, err
			}
		}
		cur[id] = true
		ref := segRef{id: id, start: seg.Start, end: seg.End, path: seg.Path, index: seg.Index, text: seg.Text}
		if seg.Start >= 0 {
			ref.flags |= refRanged
		}
		if seg.Path != r.Path {
			ref.flags |= refPath
		}
		if seg.Index != i {
			ref.flags |= refIndex
		}
		if seg.Text != r.Text {
			ref.flags |= refText
		}
		rec.segs = append(rec.segs, ref)
	}
	for id := range prev {
		if cur[id] {
			continue
		}
		r, err := t.loadSeg(id, false)
		if err != nil {
			return 0, err
		}
		r.Live, r.LastSeq, r.LastTime = false, t.meta.Latest, prevTime
		if err := t.putSeg(id, r); err != nil {
			return 0, err
		}
	}

	v, err := rec.encode()
	if err != nil {
		return 0, err
	}
	if err := t.versions.Put(id64(t.id(), int64(seq)), v); err != nil {
		return 0, err
	}
	if len(snap.Changes) > 0 {
		k := key(uint64(t.watch.UserID), timeKey(fetched), uint64(t.id()), uint64(seq))
		if err := t.events.Put(k, []byte{byte(changeMask(snap.Changes))}); err != nil {
			return 0, err
		}
		// The notification is recorded with the version (outbox.go).
		if err := putOutbox(t.tx, t.watch.UserID, t.id(), seq, t.s.now()); err != nil {
			return 0, err
		}
	}
	t.meta.Latest = seq
	return seq, widenSpan(t.tx, fetched)
}

// retention returns the version and day limits of the watch.
func (t *trackTx) retention() (versions, days int) {
	versions, days = t.watch.KeepVersions, t.watch.KeepDays
	if versions == 0 {
		versions = t.s.KeepVersions
	}
	if days == 0 {
		days = t.s.KeepDays
	}
	return versions, days
}

// retain removes the oldest versions beyond the watch's limits, never
// one of the newest Matrix versions.
func (t *trackTx) retain(now time.Time) error {
	keepN, keepD := t.retention()
	if keepN <= 0 && keepD <= 0 {
		return nil
	}
	if keepN > 0 {
		keepN = max(keepN, t.s.Matrix)
	}
	var cutoff int64 = math.MinInt64
	if keepD > 0 {
		cutoff = now.Add(-time.Duration(keepD) * 24 * time.Hour).UnixNano()
	}
	needFirst := map[uint64]*segRec{}
	for t.meta.count() > t.s.Matrix {
		seq := t.meta.Oldest
		rec, err := t.loadVersion(seq)
		if err != nil {
			return err
		}
		tooMany := keepN > 0 && t.meta.Latest-seq >= keepN
		tooOld := keepD > 0 && rec.hdr.FetchedAt < cutoff
		if !tooMany && !tooOld {
			break
		}
		if err := t.drop(seq, rec, needFirst); err != nil {
			return err
		}
	}
	return t.moveFirst(needFirst)
}

// drop deletes the oldest version seq. Segments it held that no later
// version holds go; those it introduced that live on go to needFirst.
func (t *trackTx) drop(seq int, rec *versionRec, needFirst map[uint64]*segRec) error {
	if err := t.unrefChunks(rec); err != nil {
		return err
	}
	for id := range rec.segIDs() {
		r, ok := needFirst[id]
		if !ok {
			var err error
			if r, err = t.loadSeg(id, false); err != nil {
				return err
			}
		}
		switch {
		case !r.Live && r.LastSeq <= seq:
			delete(needFirst, id)
			t.touched[id] = true
			if r.Dict != 0 {
				if err := t.chunks.unref(r.Dict); err != nil {
					return err
				}
			}
			if err := t.segs.Delete(t.segKey(id)); err != nil {
				return err
			}
			if err := t.segHash.Delete(t.hashKey(r.Hash)); err != nil {
				return err
			}
		case r.FirstSeq <= seq:
			needFirst[id] = r
		}
	}
	if len(rec.hdr.Changes) > 0 {
		k := key(uint64(t.watch.UserID), timeKey(timeOf(rec.hdr.FetchedAt)), uint64(t.id()), uint64(seq))
		if err := t.events.Delete(k); err != nil {
			return err
		}
	}
	if err := t.dropShot(seq); err != nil {
		return err
	}
	if err := t.versions.Delete(id64(t.id(), int64(seq))); err != nil {
		return err
	}
	t.meta.Oldest = seq + 1
	return nil
}

func (t *trackTx) unrefChunks(rec *versionRec) error {
	done := map[uint64]bool{}
	for _, id := range rec.chunks {
		if done[id] {
			continue
		}
		done[id] = true
		if err := t.chunks.unref(id); err != nil {
			return err
		}
	}
	if rec.layout != 0 {
		return t.chunks.unref(rec.layout)
	}
	return nil
}

// moveFirst points segments whose first version was removed at the
// oldest stored version that holds them.
func (t *trackTx) moveFirst(need map[uint64]*segRec) error {
	for seq := t.meta.Oldest; len(need) > 0 && seq <= t.meta.Latest; seq++ {
		rec, err := t.loadVersion(seq)
		if err != nil {
			return err
		}
		var types map[int]typeMask
		for _, ref := range rec.segs {
			r, ok := need[ref.id]
			if !ok {
				continue
			}
			if types == nil {
				types = typesAt(rec.hdr.Changes)
			}
			r.FirstSeq, r.FirstTime, r.FirstIndex = seq, timeOf(rec.hdr.FetchedAt), ref.index
			r.FirstPath, r.Types = "", types[ref.index]
			if ref.flags&refPath != 0 && ref.path != r.Path {
				r.FirstPath = ref.path
			}
			if err := t.putSeg(ref.id, r); err != nil {
				return err
			}
			delete(need, ref.id)
		}
	}
	if len(need) > 0 {
		return corruptf("watch %d: %d segments are in no stored version", t.id(), len(need))
	}
	return nil
}

// finish stores the track state and the pending index marker.
func (t *trackTx) finish() error {
	if err := t.tx.Bucket(bTracks).Put(id64(t.id()), t.meta.encode()); err != nil {
		return err
	}
	return addPending(t.tx, t.id(), t.touched)
}

// deleteAll removes the whole track of the watch.
func (t *trackTx) deleteAll() error {
	for seq := t.meta.Oldest; t.meta.Latest > 0 && seq <= t.meta.Latest; seq++ {
		rec, err := t.loadVersion(seq)
		if err != nil {
			return err
		}
		if err := t.unrefChunks(rec); err != nil {
			return err
		}
		if err := t.dropShot(seq); err != nil {
			return err
		}
		if len(rec.hdr.Changes) > 0 {
			k := key(uint64(t.watch.UserID), timeKey(timeOf(rec.hdr.FetchedAt)), uint64(t.id()), uint64(seq))
			if err := t.events.Delete(k); err != nil {
				return err
			}
		}
	}
	prefix := id64(t.id())
	for _, b := range []*bolt.Bucket{t.versions, t.segs, t.segHash} {
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Seek(prefix) {
			if b == t.segs {
				t.touched[uint64(at(k, 1))] = true
				r, err := decodeSeg(t.tx, v, false)
				if err != nil {
					return corruptf("segment %d of watch %d: %v", at(k, 1), t.id(), err)
				}
				if r.Dict != 0 {
					if err := t.chunks.unref(r.Dict); err != nil {
						return err
					}
				}
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	if err := t.tx.Bucket(bTracks).Delete(prefix); err != nil {
		return err
	}
	return addPending(t.tx, t.id(), t.touched)
}

// Latest returns the newest stored version of the watch, with segment
// texts and layout. Errors: ENOTFOUND when the watch does not exist or
// has no version yet. The caller checks that the watch is the user's.
func (s *Store) Latest(ctx context.Context, watchID int64) (*changedigest.Snapshot, error) {
	var snap *changedigest.Snapshot
	err := s.view(ctx, func(tx *bolt.Tx) error {
		m, err := trackOf(tx, watchID)
		if err != nil {
			return err
		}
		if m.Latest == 0 {
			return notFoundf("watch %d has no stored version yet", watchID)
		}
		snap, _, err = readVersion(tx, watchID, m.Latest, true)
		return err
	})
	if err != nil {
		return nil, wrap(err, "latest version of watch %d", watchID)
	}
	return snap, nil
}

// Version returns version seq of the watch, with segment texts and
// layout. Errors: ENOTFOUND when the watch or the version does not exist
// (or was removed by retention).
func (s *Store) Version(ctx context.Context, watchID int64, seq int) (*changedigest.Snapshot, error) {
	var snap *changedigest.Snapshot
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if _, err := trackOf(tx, watchID); err != nil {
			return err
		}
		var err error
		snap, _, err = readVersion(tx, watchID, seq, true)
		return err
	})
	if err != nil {
		return nil, wrap(err, "version %d of watch %d", seq, watchID)
	}
	return snap, nil
}

// Versions lists the watch's versions newest first, as light rows:
// segments carry hash, path and range but no text, and there is no
// layout. Paging: before is 0 for the newest page, else the Seq of the
// last row of the previous page; limit defaults to 50, at most 1000.
// Errors: ENOTFOUND when the watch does not exist.
func (s *Store) Versions(ctx context.Context, watchID int64, before, limit int) ([]changedigest.Snapshot, error) {
	limit = clampLimit(limit, 50, 1000)
	var out []changedigest.Snapshot
	err := s.view(ctx, func(tx *bolt.Tx) error {
		m, err := trackOf(tx, watchID)
		if err != nil {
			return err
		}
		start := m.Latest
		if before > 0 && before-1 < start {
			start = before - 1
		}
		for seq := start; seq >= m.Oldest && seq > 0 && len(out) < limit; seq-- {
			snap, _, err := readVersion(tx, watchID, seq, false)
			if err != nil {
				return err
			}
			out = append(out, *snap)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "list versions of watch %d", watchID)
	}
	return out, nil
}

// RecentChanges returns the changes of the watch's last n versions,
// newest first: what the volatility of a page's locations is learnt from.
// It reads the version headers alone, not their segments. Errors:
// ENOTFOUND when the watch does not exist.
func (s *Store) RecentChanges(ctx context.Context, watchID int64, n int) ([][]changedigest.Change, error) {
	n = clampLimit(n, 20, 1000)
	var out [][]changedigest.Change
	err := s.view(ctx, func(tx *bolt.Tx) error {
		m, err := trackOf(tx, watchID)
		if err != nil {
			return err
		}
		b := tx.Bucket(bVersions)
		for seq := m.Latest; seq >= m.Oldest && seq > 0 && len(out) < n; seq-- {
			v := b.Get(id64(watchID, int64(seq)))
			if v == nil {
				return corruptf("version %d of watch %d is missing", seq, watchID)
			}
			h, err := decodeHeader(v)
			if err != nil {
				return corruptf("version %d of watch %d: %v", seq, watchID, err)
			}
			out = append(out, h.Changes)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "recent changes of watch %d", watchID)
	}
	return out, nil
}

// TrackInfo summarises a watch's stored history.
type TrackInfo struct {
	WatchID int64
	// Versions is the number of stored versions, Oldest..Latest (0 when none).
	Versions       int
	Oldest, Latest int
}

// Track returns the summary of the watch's history. Errors: ENOTFOUND
// when the watch does not exist.
func (s *Store) Track(ctx context.Context, watchID int64) (TrackInfo, error) {
	var info TrackInfo
	err := s.view(ctx, func(tx *bolt.Tx) error {
		m, err := trackOf(tx, watchID)
		if err != nil {
			return err
		}
		info = TrackInfo{WatchID: watchID, Versions: m.count()}
		if m.Latest > 0 {
			info.Oldest, info.Latest = m.Oldest, m.Latest
		}
		return nil
	})
	if err != nil {
		return TrackInfo{}, wrap(err, "track of watch %d", watchID)
	}
	return info, nil
}

// Body returns the raw body of version seq, byte for byte as stored.
// Errors: ENOTFOUND when the watch or version does not exist; ErrCorrupt
// when the stored chunks do not rebuild the body.
func (s *Store) Body(ctx context.Context, watchID int64, seq int) ([]byte, error) {
	var body []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if _, err := trackOf(tx, watchID); err != nil {
			return err
		}
		_, rec, err := readVersion(tx, watchID, seq, false)
		if err != nil {
			return err
		}
		body, err = readBody(tx, watchID, seq, rec)
		return err
	})
	if err != nil {
		return nil, wrap(err, "body of version %d of watch %d", seq, watchID)
	}
	return body, nil
}

func readBody(tx *bolt.Tx, watchID int64, seq int, rec *versionRec) ([]byte, error) {
	body := make([]byte, 0, rec.hdr.Size)
	for _, id := range rec.chunks {
		p, err := readChunk(tx, id, rec.hdr.Size-len(body))
		if err != nil {
			return nil, err
		}
		body = append(body, p...)
	}
	if len(body) != rec.hdr.Size || !rec.hdr.check(body) {
		return nil, corruptf("body of version %d of watch %d does not match its checksum", seq, watchID)
	}
	return body, nil
}

// Prior returns what segmenting the watch's next version needs, read in
// one transaction: the latest version (with texts and layout; nil for a
// watch without versions), its body, and the signature matrix of the
// last m versions (m <= 0: Matrix), newest first. Errors: ENOTFOUND when
// the watch does not exist.
func (s *Store) Prior(ctx context.Context, watchID int64, m int) (*changedigest.Snapshot, []byte, [][]string, error) {
	if m <= 0 {
		m = s.Matrix
	}
	var (
		snap *changedigest.Snapshot
		body []byte
		rows [][]string
	)
	err := s.view(ctx, func(tx *bolt.Tx) error {
		meta, err := trackOf(tx, watchID)
		if err != nil || meta.Latest == 0 {
			return err
		}
		var rec *versionRec
		if snap, rec, err = readVersion(tx, watchID, meta.Latest, true); err != nil {
			return err
		}
		if body, err = readBody(tx, watchID, meta.Latest, rec); err != nil {
			return err
		}
		rows, err = matrix(tx, watchID, meta, m, snap)
		return err
	})
	if err != nil {
		return nil, nil, nil, wrap(err, "prior version of watch %d", watchID)
	}
	return snap, body, rows, nil
}

// PriorParts is Prior without the body and the segment texts: the
// snapshot's segments come without text, and the returned parts read
// texts and stretches of the body when asked, so that a check reads the
// parts of the previous version its comparison needs rather than all of
// it. Each read is a transaction of its own: a stored version does not
// change, and a watch deleted meanwhile gives ENOTFOUND. A byte range of
// a version stored before chunk lengths were recorded reads the whole
// body once. parts is nil for a watch without versions; it is not safe
// for concurrent use. Errors as Prior.
func (s *Store) PriorParts(ctx context.Context, watchID int64, m int) (*changedigest.Snapshot, changedigest.VersionParts, [][]string, error) {
	if m <= 0 {
		m = s.Matrix
	}
	var (
		snap *changedigest.Snapshot
		rec  *versionRec
		rows [][]string
	)
	err := s.view(ctx, func(tx *bolt.Tx) error {
		meta, err := trackOf(tx, watchID)
		if err != nil || meta.Latest == 0 {
			return err
		}
		if snap, rec, err = readVersion(tx, watchID, meta.Latest, false); err != nil {
			return err
		}
		if rec.layout != 0 {
			if snap.Layout, err = readChunk(tx, rec.layout, maxLayout); err != nil {
				return err
			}
		}
		rows, err = matrix(tx, watchID, meta, m, snap)
		return err
	})
	if err != nil {
		return nil, nil, nil, wrap(err, "prior version of watch %d", watchID)
	}
	if snap == nil {
		return nil, nil, nil, nil
	}
	return snap, newVersionParts(ctx, s, watchID, snap.Seq, rec), rows, nil
}

// versionParts reads a stored version's segment texts and body on demand
// (Store.PriorParts).
type versionParts struct {
	ctx     context.Context
	s       *Store
	watchID int64
	seq     int
	rec     *versionRec
	offs    []int // where each chunk starts in the body; nil without lengths
	body    []byte
	texts   map[uint64]string
}

func newVersionParts(ctx context.Context, s *Store, watchID int64, seq int, rec *versionRec) *versionParts {
	p := &versionParts{ctx: ctx, s: s, watchID: watchID, seq: seq, rec: rec, texts: map[uint64]string{}}
	if len(rec.lens) == len(rec.chunks) && len(rec.lens) > 0 {
		p.offs = make([]int, len(rec.lens)+1)
		for i, n := range rec.lens {
			p.offs[i+1] = p.offs[i] + n
		}
	}
	return p
}

// view runs fn in a read transaction of its own, once the watch is known
// to be there still: ENOTFOUND when it was deleted since PriorParts.
func (p *versionParts) view(fn func(tx *bolt.Tx) error) error {
	return p.s.view(p.ctx, func(tx *bolt.Tx) error {
		if _, err := trackOf(tx, p.watchID); err != nil {
			return err
		}
		return fn(tx)
	})
}

// SegmentText returns the text of segment i.
func (p *versionParts) SegmentText(i int) (string, error) {
	if i < 0 || i >= len(p.rec.segs) {
		return "", invalidf("segment %d of version %d of watch %d: out of range", i, p.seq, p.watchID)
	}
	ref := p.rec.segs[i]
	if ref.flags&refText != 0 {
		return ref.text, nil
	}
	if t, ok := p.texts[ref.id]; ok {
		return t, nil
	}
	var text string
	err := p.view(func(tx *bolt.Tx) error {
		r, err := readSeg(tx, p.watchID, ref.id, true)
		if err == nil {
			text = r.Text
		}
		return err
	})
	if err != nil {
		return "", wrap(err, "text of segment %d of version %d of watch %d", i, p.seq, p.watchID)
	}
	p.texts[ref.id] = text
	return text, nil
}

// Body returns the whole body, byte for byte as stored, checked against
// its checksum.
func (p *versionParts) Body() ([]byte, error) {
	if p.body != nil {
		return p.body, nil
	}
	var body []byte
	err := p.view(func(tx *bolt.Tx) error {
		var err error
		body, err = readBody(tx, p.watchID, p.seq, p.rec)
		return err
	})
	if err != nil {
		return nil, wrap(err, "body of version %d of watch %d", p.seq, p.watchID)
	}
	p.body = body
	return body, nil
}

// BodyRange returns bytes [start, end) of the body, reading only the
// chunks that hold them. The stretch is not checked against the body's
// checksum, which covers the whole body.
func (p *versionParts) BodyRange(start, end int) ([]byte, error) {
	if start < 0 || end < start || end > p.rec.hdr.Size {
		return nil, invalidf("bytes %d to %d of version %d of watch %d: outside its %d bytes", start, end, p.seq, p.watchID, p.rec.hdr.Size)
	}
	if p.body != nil || p.offs == nil {
		body, err := p.Body()
		if err != nil {
			return nil, err
		}
		return body[start:end], nil
	}
	out := make([]byte, 0, end-start)
	first := sort.Search(len(p.rec.chunks), func(k int) bool { return p.offs[k+1] > start })
	err := p.view(func(tx *bolt.Tx) error {
		for k := first; k < len(p.rec.chunks) && p.offs[k] < end; k++ {
			c, err := readChunk(tx, p.rec.chunks[k], p.rec.lens[k])
			if err != nil {
				return err
			}
			if len(c) != p.rec.lens[k] {
				return corruptf("chunk %d of version %d of watch %d has %d bytes, not %d", k, p.seq, p.watchID, len(c), p.rec.lens[k])
			}
			out = append(out, c[max(start-p.offs[k], 0):min(end-p.offs[k], len(c))]...)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "bytes %d to %d of version %d of watch %d", start, end, p.seq, p.watchID)
	}
	return out, nil
}

// History returns the signature matrix of the watch: the segment hashes
// of its last m versions (m <= 0: Matrix), newest first. It has fewer rows
// when fewer versions are stored, none for a new watch. Errors:
// ENOTFOUND when the watch does not exist.
func (s *Store) History(ctx context.Context, watchID int64, m int) ([][]string, error) {
	if m <= 0 {
		m = s.Matrix
	}
	var rows [][]string
	err := s.view(ctx, func(tx *bolt.Tx) error {
		meta, err := trackOf(tx, watchID)
		if err != nil {
			return err
		}
		rows, err = matrix(tx, watchID, meta, m, nil)
		return err
	})
	if err != nil {
		return nil, wrap(err, "signature matrix of watch %d", watchID)
	}
	return rows, nil
}

// matrix reads the segment hashes of the last m versions, newest first.
// latest, when not nil, is the newest version already read: its row is
// taken from it rather than read again. A segment is read once for all
// the rows: most are in every version.
func matrix(tx *bolt.Tx, watchID int64, meta trackMeta, m int, latest *changedigest.Snapshot) ([][]string, error) {
	var rows [][]string
	hashes := map[uint64]string{}
	for seq := meta.Latest; seq >= meta.Oldest && seq > 0 && len(rows) < m; seq-- {
		if latest != nil && seq == latest.Seq {
			rows = append(rows, latest.Hashes())
			continue
		}
		rec, err := versionRecord(tx, watchID, seq)
		if err != nil {
			return nil, err
		}
		row := make([]string, len(rec.segs))
		for i, ref := range rec.segs {
			h, ok := hashes[ref.id]
			if !ok {
				r, err := readSeg(tx, watchID, ref.id, false)
				if err != nil {
					return nil, err
				}
				h = r.Hash
				hashes[ref.id] = h
			}
			row[i] = h
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// readSeg decodes segment id of a watch, with its text when withText.
func readSeg(tx *bolt.Tx, watchID int64, id uint64, withText bool) (*segRec, error) {
	sv := tx.Bucket(bSegs).Get(key(uint64(watchID), id))
	if sv == nil {
		return nil, corruptf("segment %d of watch %d is missing", id, watchID)
	}
	r, err := decodeSeg(tx, sv, withText)
	if err != nil {
		return nil, corruptf("segment %d of watch %d: %v", id, watchID, err)
	}
	return r, nil
}

// trackOf returns the track state of an existing watch.
func trackOf(tx *bolt.Tx, watchID int64) (trackMeta, error) {
	if tx.Bucket(bWatches).Get(id64(watchID)) == nil {
		return trackMeta{}, notFoundf("watch %d not found", watchID)
	}
	v := tx.Bucket(bTracks).Get(id64(watchID))
	if v == nil {
		return trackMeta{}, nil
	}
	m, err := decodeTrack(v)
	if err != nil {
		return trackMeta{}, corruptf("track of watch %d: %v", watchID, err)
	}
	return m, nil
}

// newestTitle is the title of the watch's newest stored version ("" when
// it has none).
func newestTitle(tx *bolt.Tx, watchID int64) (string, error) {
	m, err := trackOf(tx, watchID)
	if err != nil || m.Latest == 0 {
		return "", err
	}
	rec, err := versionRecord(tx, watchID, m.Latest)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return rec.hdr.Title, nil
}

// versionRecord decodes the stored record of version seq. Errors:
// ENOTFOUND when it is not stored; a corrupt record.
func versionRecord(tx *bolt.Tx, watchID int64, seq int) (*versionRec, error) {
	v := tx.Bucket(bVersions).Get(id64(watchID, int64(seq)))
	if v == nil {
		return nil, notFoundf("version %d of watch %d not found", seq, watchID)
	}
	rec, err := decodeVersion(v)
	if err != nil {
		return nil, corruptf("version %d of watch %d: %v", seq, watchID, err)
	}
	return rec, nil
}

// readVersion decodes a stored version; full adds segment texts and layout.
func readVersion(tx *bolt.Tx, watchID int64, seq int, full bool) (*changedigest.Snapshot, *versionRec, error) {
	rec, err := versionRecord(tx, watchID, seq)
	if err != nil {
		return nil, nil, err
	}
	h := &rec.hdr
	snap := h.snapshot(watchID, seq)
	cache := map[uint64]*segRec{}
	if len(rec.segs) > 0 {
		snap.Segments = make([]changedigest.Segment, len(rec.segs))
	}
	for i, ref := range rec.segs {
		r, ok := cache[ref.id]
		if !ok {
			if r, err = readSeg(tx, watchID, ref.id, full); err != nil {
				return nil, nil, err
			}
			cache[ref.id] = r
		}
		seg := changedigest.Segment{Index: ref.index, Hash: r.Hash, Path: r.Path, Start: ref.start, End: ref.end}
		if ref.flags&refPath != 0 {
			seg.Path = ref.path
		}
		if full {
			seg.Text = r.Text
			if ref.flags&refText != 0 {
				seg.Text = ref.text
			}
		}
		snap.Segments[i] = seg
	}
	if full && rec.layout != 0 {
		if snap.Layout, err = readChunk(tx, rec.layout, maxLayout); err != nil {
			return nil, nil, err
		}
	}
	// The screenshot's size and hash; its boxes with the full version.
	shot, err := shotOf(tx, watchID, seq, full)
	if err != nil {
		return nil, nil, err
	}
	if shot != nil {
		snap.Screenshot = shot.screenshot()
	}
	return snap, rec, nil
}

func clampLimit(n, def, most int) int {
	if n <= 0 {
		return def
	}
	return min(n, most)
}

// ChangeFilter selects change events; zero fields do not filter.
type ChangeFilter struct {
	// UserID restricts events to the user's watches; AnyUser for all.
	UserID int64
	// WatchID restricts events to one watch; with a UserID it must be the
	// user's, else ENOTFOUND.
	WatchID int64
	// Tag restricts events to watches carrying the tag.
	Tag string
	// Since and Until bound the fetch time, both inclusive.
	Since, Until time.Time
	// Types keeps versions with at least one change of these types, and
	// only those changes.
	Types []changedigest.ChangeType
	// Limit defaults to 50, at most 1000.
	Limit int
	// Refs leaves the versions out: each event's Version holds only
	// WatchID, Seq and FetchedAt, from the event's key, and no version is
	// read. For a caller that keeps what it works out of versions: it
	// reads those it lacks with a filter on their watch and time. A
	// listing with Refs (and no Types) is kept for the snapshot of the
	// store it was read in: until the next write, the same filter gets
	// the same events, shared (read only), as feed readers poll.
	Refs bool
}

// Event is a version that brought changes, with its watch.
type Event struct {
	Watch changedigest.Watch
	// Version is the light row of the version: no segments, no layout;
	// its Changes are those of the filter's Types when it has any. Its
	// Changes, Print and Screenshot, and the slices of Watch, may be
	// shared with other events: read them, do not change them.
	Version changedigest.Snapshot
}

// Changes lists the versions that brought changes, newest first, for
// feeds and digests. The rows of the versions are kept between calls
// (DefaultEventCacheBytes of them): a version's record is read and
// decoded once while its row stays in memory, however often it is
// listed. Errors: ENOTFOUND when f.WatchID names a watch that
// does not exist or is not f.UserID's.
func (s *Store) Changes(ctx context.Context, f ChangeFilter) ([]Event, error) {
	limit := clampLimit(f.Limit, 50, 1000)
	want := masks(f.Types)
	tag := ""
	if f.Tag != "" {
		if tags := changedigest.NormaliseTags([]string{f.Tag}); len(tags) > 0 {
			tag = tags[0]
		}
	}
	var out []Event
	q, keep := refQueryOf(f, limit)
	txid, kept := 0, false
	err := s.view(ctx, func(tx *bolt.Tx) error {
		txid = tx.ID()
		if keep {
			if l, ok := s.refs.Get(q); ok && l.txid == txid {
				out, kept = l.evs, true
				return nil
			}
		}
		uid := f.UserID
		if f.WatchID != 0 {
			w, err := getUserWatch(tx, f.UserID, f.WatchID)
			if err != nil {
				return err
			}
			uid = w.UserID
		}
		watches := map[int64]*changedigest.Watch{}
		match := func(k, v []byte) (bool, error) {
			if len(k) != 32 || len(v) != 1 {
				return false, corruptf("bad change event key")
			}
			wid := at(k, 2)
			if f.WatchID != 0 && wid != f.WatchID ||
				!f.Since.IsZero() && binary.BigEndian.Uint64(k[8:]) < timeKey(f.Since) ||
				want != 0 && typeMask(v[0])&want == 0 {
				return false, nil
			}
			w, ok := watches[wid]
			if !ok {
				var err error
				if w, err = s.keptWatch(tx, wid); err != nil {
					return false, err
				}
				watches[wid] = w
			}
			return tag == "" || w.HasTag(tag), nil
		}
		var keys [][]byte
		c := tx.Bucket(bEvents).Cursor()
		if uid != AnyUser {
			until := uint64(math.MaxUint64)
			if !f.Until.IsZero() {
				until = timeKey(f.Until)
			}
			upper := key(uint64(uid), until, math.MaxUint64, math.MaxUint64)
			prefix := id64(uid)
			k, v := c.Seek(upper)
			if k == nil {
				k, v = c.Last()
			} else if bytes.Compare(k, upper) > 0 {
				k, v = c.Prev()
			}
			for ; k != nil && bytes.HasPrefix(k, prefix) && len(keys) < limit; k, v = c.Prev() {
				if !f.Since.IsZero() && binary.BigEndian.Uint64(k[8:]) < timeKey(f.Since) {
					break
				}
				ok, err := match(k, v)
				if err != nil {
					return err
				}
				if ok {
					keys = append(keys, bytes.Clone(k))
				}
			}
		} else {
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if !f.Until.IsZero() && binary.BigEndian.Uint64(k[8:]) > timeKey(f.Until) {
					continue
				}
				ok, err := match(k, v)
				if err != nil {
					return err
				}
				if ok {
					keys = append(keys, bytes.Clone(k))
				}
			}
			sort.SliceStable(keys, func(i, j int) bool { return bytes.Compare(keys[i][8:], keys[j][8:]) > 0 })
			keys = keys[:min(len(keys), limit)]
		}
		out = make([]Event, 0, len(keys))
		for _, k := range keys {
			wid, seq := at(k, 2), int(at(k, 3))
			fetched := int64(binary.BigEndian.Uint64(k[8:]))
			if f.Refs {
				out = append(out, Event{Watch: *watches[wid],
					Version: changedigest.Snapshot{WatchID: wid, Seq: seq, FetchedAt: timeOf(fetched)}})
				continue
			}
			snap, err := s.eventVersion(tx, wid, seq, fetched)
			if err != nil {
				return err
			}
			ev := Event{Watch: *watches[wid], Version: *snap}
			if want != 0 {
				var cs []changedigest.Change
				for _, c := range snap.Changes {
					if maskOf(c.Type)&want != 0 {
						cs = append(cs, c)
					}
				}
				ev.Version.Changes = cs
			}
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "list changes")
	}
	if keep && !kept {
		s.refs.Put(q, refList{txid: txid, evs: out}, len(out)*eventSize)
	}
	return out, nil
}

// CompareEvents orders events as Changes lists them: newest first, then
// by watch ID and version number, both descending. Merging the lists of
// several stores by it gives the list one store holding them all would.
func CompareEvents(a, b Event) int {
	return cmp.Or(
		cmp.Compare(timeKey(b.Version.FetchedAt), timeKey(a.Version.FetchedAt)),
		cmp.Compare(b.Watch.ID, a.Watch.ID),
		cmp.Compare(b.Version.Seq, a.Version.Seq))
}

// Prune applies retention to every watch and returns how many versions it
// removed. AddVersion applies it to the watch it writes to; Prune is for
// day limits, which move with the clock when no version is added.
func (s *Store) Prune(ctx context.Context) (int, error) {
	var ids []int64
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bTracks).ForEach(func(k, _ []byte) error {
			ids = append(ids, at(k, 0))
			return nil
		})
	})
	if err != nil {
		return 0, wrap(err, "prune")
	}
	removed := 0
	for _, id := range ids {
		n := 0
		err := s.update(ctx, func(tx *bolt.Tx) error {
			t, err := s.openTrack(tx, id)
			if err != nil {
				return err
			}
			before := t.meta.count()
			if err := t.retain(s.now()); err != nil {
				return err
			}
			n = before - t.meta.count()
			return t.finish()
		})
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		removed += n
		if err != nil {
			return removed, wrap(err, "prune watch %d", id)
		}
	}
	s.syncAfterWrite()
	return removed, nil
}
