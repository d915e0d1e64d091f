package pet

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// CheckFile reads every page of the store file at dir's pet.db, and every
// record a read of the store decodes: its users, watches and every
// version of their tracks, body included. It changes nothing, and
// returns what it found damaged, one line each (none: the store is
// whole). The store must not be open elsewhere.
func CheckFile(ctx context.Context, dir string) (found []string, err error) {
	path := filepath.Join(dir, dbFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("pet: %w", err)
	}
	db, err := openFile(path, &bolt.Options{ReadOnly: true, Timeout: DefaultOpenTimeout})
	if errors.Is(err, ErrCorrupt) {
		return []string{err.Error()}, nil
	} else if err != nil {
		return nil, err
	}
	defer closeFile(db)
	for _, check := range []func(*bolt.DB, string) error{checkSize, checkPages} {
		if err := check(db, path); errors.Is(err, ErrCorrupt) {
			return []string{err.Error()}, nil
		} else if err != nil {
			return nil, err
		}
	}
	err = guarded(path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			found = readAll(ctx, tx, nil)
			return ctx.Err()
		})
	})
	if errors.Is(err, ErrCorrupt) {
		return append(found, err.Error()), nil
	}
	return found, err
}

// readAll decodes the users, watches and tracks in tx and returns what
// it found damaged; with damaged not nil, it also records there the
// watches whose record or track is damaged (false: the record).
func readAll(ctx context.Context, tx *bolt.Tx, damaged map[int64]bool) (found []string) {
	note := func(id int64, track bool, err error) {
		found = append(found, err.Error())
		if damaged != nil {
			damaged[id] = track
		}
	}
	_ = tx.Bucket(bUsers).ForEach(func(k, _ []byte) error {
		if _, err := getUser(tx, at(k, 0)); errors.Is(err, ErrCorrupt) {
			found = append(found, err.Error())
		}
		return nil
	})
	_ = tx.Bucket(bWatches).ForEach(func(k, _ []byte) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if len(k) != 8 {
			found = append(found, corruptf("a watch record has a key of %d bytes", len(k)).Error())
			return nil // remakeLists takes it out
		}
		id := at(k, 0)
		if w, err := getWatch(tx, id); err != nil {
			note(id, false, err)
			return nil
		} else if w.ID != id {
			note(id, false, corruptf("watch %d: its record says it is watch %d", id, w.ID))
			return nil
		}
		if _, err := readTrack(tx, id); err != nil {
			note(id, true, err)
		}
		return nil
	})
	return found
}

// readTrack reads every version of the watch's track, body included,
// and every segment record of it, and returns the number of the newest
// version it could not read (0: none; the newest version when a segment
// record cannot be read, whose versions are not known), with why.
func readTrack(tx *bolt.Tx, id int64) (int, error) {
	m, err := trackOf(tx, id)
	if err != nil {
		return max(m.Latest, 1), err
	}
	bad := 0
	var why error
	for seq := m.Oldest; m.Latest > 0 && seq <= m.Latest; seq++ {
		if err := readWhole(tx, id, seq); err != nil {
			bad, why = seq, err
		}
	}
	prefix := id64(id)
	c := tx.Bucket(bSegs).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if _, err := decodeSeg(tx, v, true); err != nil {
			return max(m.Latest, 1), corruptf("segment %d of watch %d: %v", at(k, 1), id, err)
		}
	}
	return bad, why
}

// readWhole reads version seq of the watch, its segments' texts and its
// body.
func readWhole(tx *bolt.Tx, id int64, seq int) error {
	_, rec, err := readVersion(tx, id, seq, true)
	if err == nil {
		_, err = readBody(tx, id, seq, rec)
	}
	return err
}

// Mended is what Mend did.
type Mended struct {
	// Watches and Versions count those kept whole.
	Watches, Versions int
	// Dropped says what was taken out, one line each.
	Dropped []string
}

// maxKept bounds the bytes of versions Mend keeps in memory to store
// again after a damaged one.
const maxKept = 256 << 20

// Mend takes out of the open store what cannot be read, so that the rest
// reads whole: chunks whose data is damaged, a watch whose record is
// damaged (with its track), and the versions of a track up to its newest
// damaged one (the newer versions are stored again, as a track whose
// older versions were not kept). It then counts the references to every
// chunk anew, drops what nothing refers to, and makes the records drawn
// from others (the lists of a user's watches, the due list, the names)
// anew, so that the store passes Store.Check. The search index is to be
// rebuilt after (Open rebuilds a missing one).
func (s *Store) Mend(ctx context.Context) (*Mended, error) {
	out := &Mended{}
	if err := s.update(ctx, func(tx *bolt.Tx) error { return mendChunks(tx, out) }); err != nil {
		return nil, err
	}
	// A version stored again may show damage it hid behind (its chunks
	// are read anew): a second round takes that out.
	for round := 0; round < 3; round++ {
		damaged := map[int64]bool{}
		err := guarded(s.db.Path(), func() error {
			return s.db.View(func(tx *bolt.Tx) error {
				readAll(ctx, tx, damaged)
				return ctx.Err()
			})
		})
		if err != nil {
			return nil, err
		}
		if len(damaged) == 0 {
			break
		}
		for id, track := range damaged {
			if !track {
				if err := s.update(ctx, func(tx *bolt.Tx) error { return dropWatchRaw(tx, id) }); err != nil {
					return nil, err
				}
				out.Dropped = append(out.Dropped, fmt.Sprintf("watch %d: its record is damaged; it and its versions were taken out (add it again)", id))
				continue
			}
			line, err := s.mendTrack(ctx, id)
			if err != nil {
				return nil, err
			}
			out.Dropped = append(out.Dropped, line)
		}
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if err := dropOrphans(tx); err != nil {
			return err
		}
		if err := recount(tx); err != nil {
			return err
		}
		return remakeLists(tx, out)
	})
	return out, err
}

// mendChunks drops the chunks whose data cannot be read (or whose base,
// for a delta, cannot), and gives every chunk left its hash entry and a
// reference record (counted anew by recount).
func mendChunks(tx *bolt.Tx, out *Mended) error {
	data := tx.Bucket(bChunkData)
	var gone [][]byte
	plain := map[uint64][16]byte{}
	err := data.ForEach(func(k, _ []byte) error {
		id := uint64(at(k, 0))
		p, err := readStoredChunk(tx, id, maxChunk)
		if err != nil {
			gone = append(gone, bytes.Clone(k))
			return nil
		}
		plain[id] = sum16(p)
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range gone {
		if err := data.Delete(k); err != nil {
			return err
		}
	}
	if len(gone) > 0 {
		out.Dropped = append(out.Dropped, fmt.Sprintf("%d stored pieces of pages could not be read and were taken out", len(gone)))
	}
	for _, name := range [][]byte{bChunkHash, bChunkRefs} {
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	hash, refs := tx.Bucket(bChunkHash), tx.Bucket(bChunkRefs)
	for id, sum := range plain {
		if err := hash.Put(sum[:], key(id)); err != nil {
			return err
		}
		if err := refs.Put(key(id), append(putUvarint(nil, 1), sum[:]...)); err != nil {
			return err
		}
	}
	return nil
}

// recount counts the references to every chunk (versions' bodies and
// layouts, segments' dictionaries, screenshots, deltas' bases) and to
// every segment (the versions that hold it), writes the counts, and
// drops what nothing refers to.
func recount(tx *bolt.Tx) error {
	refs := map[uint64]uint64{}
	held := map[[2]uint64]bool{}
	err := tx.Bucket(bTracks).ForEach(func(k, v []byte) error {
		wid := at(k, 0)
		m, err := decodeTrack(v)
		if err != nil {
			return err
		}
		for seq := m.Oldest; m.Latest > 0 && seq <= m.Latest; seq++ {
			rec, err := versionRecord(tx, wid, seq)
			if err != nil {
				return err
			}
			distinct := map[uint64]bool{}
			for _, id := range rec.chunks {
				if !distinct[id] {
					distinct[id] = true
					refs[id]++
				}
			}
			if rec.layout != 0 {
				refs[rec.layout]++
			}
			for _, ref := range rec.segs {
				held[[2]uint64{uint64(wid), ref.id}] = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Segments no version holds go, with their hash entries.
	segs := tx.Bucket(bSegs)
	var loose [][]byte
	err = segs.ForEach(func(k, v []byte) error {
		wid, id := at(k, 0), uint64(at(k, 1))
		r, err := decodeSeg(tx, v, false)
		if err != nil || !held[[2]uint64{uint64(wid), id}] {
			loose = append(loose, bytes.Clone(k))
			return nil
		}
		if r.Dict != 0 {
			refs[r.Dict]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range loose {
		if err := segs.Delete(k); err != nil {
			return err
		}
	}
	if err := tx.DeleteBucket(bSegHash); err != nil {
		return err
	}
	hashes, err := tx.CreateBucket(bSegHash)
	if err != nil {
		return err
	}
	err = segs.ForEach(func(k, v []byte) error {
		r, err := decodeSeg(tx, v, false)
		if err != nil {
			return err
		}
		t := trackTx{watch: watchOf(at(k, 0))}
		return hashes.Put(t.hashKey(r.Hash), key(uint64(at(k, 1))))
	})
	if err != nil {
		return err
	}
	if err := shotRefs(tx, refs, func(string, ...any) {}); err != nil {
		return err
	}
	// A delta's base is referred to by the delta, for as long as the
	// delta is: bases of unreferenced deltas are counted down below.
	data := tx.Bucket(bChunkData)
	base := map[uint64]uint64{}
	if err := data.ForEach(func(k, v []byte) error {
		if _, b, _ := deltaHeader(v); b != 0 {
			base[uint64(at(k, 0))] = b
			refs[b]++
		}
		return nil
	}); err != nil {
		return err
	}
	chunkRefs, chunkHash := tx.Bucket(bChunkRefs), tx.Bucket(bChunkHash)
	var ids []uint64
	if err := chunkRefs.ForEach(func(k, _ []byte) error {
		ids = append(ids, uint64(at(k, 0)))
		return nil
	}); err != nil {
		return err
	}
	// Drop the unreferenced, then the bases only they referred to.
	for changed := true; changed; {
		changed = false
		for _, id := range ids {
			k := key(id)
			v := chunkRefs.Get(k)
			if v == nil || refs[id] > 0 {
				continue
			}
			_, w := uvarint(v)
			if err := chunkHash.Delete(v[w:]); err != nil {
				return err
			}
			for _, name := range [][]byte{bChunkRefs, bChunkData} {
				if err := tx.Bucket(name).Delete(k); err != nil {
					return err
				}
			}
			if b := base[id]; b != 0 {
				refs[b]--
				changed = true
			}
		}
	}
	for _, id := range ids {
		k := key(id)
		if v := chunkRefs.Get(k); v != nil {
			_, w := uvarint(v)
			if err := chunkRefs.Put(k, append(putUvarint(nil, refs[id]), v[w:]...)); err != nil {
				return err
			}
		}
	}
	return nil
}

// remakeLists makes anew the records drawn from others: the lists of a
// user's watches, the due list, the URL index, the user names and feed
// tokens, the change events of versions that are gone; and drops users
// whose record is damaged. It counts what is kept into out.
func remakeLists(tx *bolt.Tx, out *Mended) error {
	// The index is rebuilt whole: the markers of its pending work go.
	for _, name := range [][]byte{bPending, bUserWatch, bDue, bWatchKeys, bUserNames, bFeedTokens} {
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	var bad [][]byte
	err := tx.Bucket(bUsers).ForEach(func(k, _ []byte) error {
		u, err := getUser(tx, at(k, 0))
		if err != nil {
			bad = append(bad, bytes.Clone(k))
			out.Dropped = append(out.Dropped, fmt.Sprintf("user %d: its record is damaged (%v); it was taken out (add it again)", at(k, 0), err))
			return nil
		}
		return putUser(tx, u, nil)
	})
	if err != nil {
		return err
	}
	for _, k := range bad {
		if err := tx.Bucket(bUsers).Delete(k); err != nil {
			return err
		}
	}
	if err := deleteWhere(tx.Bucket(bWatches), func(k, _ []byte) bool { return len(k) != 8 }); err != nil {
		return err
	}
	err = tx.Bucket(bWatches).ForEach(func(k, _ []byte) error {
		w, err := getWatch(tx, at(k, 0))
		if err != nil {
			return err
		}
		if err := putWatch(tx, w, nil); err != nil {
			return err
		}
		out.Watches++
		m, err := trackOf(tx, w.ID)
		out.Versions += m.count()
		return err
	})
	if err != nil {
		return err
	}
	// Events: user, time, watch, version.
	versions := tx.Bucket(bVersions)
	return deleteWhere(tx.Bucket(bEvents), func(k, _ []byte) bool {
		return len(k) < 32 || versions.Get(id64(at(k, 2), at(k, 3))) == nil
	})
}

// mendTrack keeps the newest versions of the watch's track that read
// whole, from the newest down to the first that does not, drops the
// track, and stores them again.
func (s *Store) mendTrack(ctx context.Context, id int64) (string, error) {
	type kept struct {
		snap *changedigest.Snapshot
		body []byte
	}
	var (
		again  []kept
		size   int
		why    error
		bad    int
		wholes int // versions kept as one segment
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		m, err := trackOf(tx, id)
		if err != nil {
			bad, why = 1, err
			return nil
		}
		for seq := m.Latest; seq >= m.Oldest && seq > 0; seq-- {
			snap, rec, err := readVersion(tx, id, seq, true)
			var body []byte
			if err == nil {
				body, err = readBody(tx, id, seq, rec)
			}
			if err != nil {
				// Its segments lost, a version whose record and body read
				// is kept byte for byte, as one segment.
				snap, body, err = bodyOnly(tx, id, seq)
				if err == nil {
					wholes++
				}
			}
			if err != nil || size >= maxKept {
				bad, why = seq, err
				if err == nil {
					why = errors.New("older versions were not kept in memory")
				}
				break
			}
			again = append(again, kept{snap, body})
			size += len(body)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if err := s.update(ctx, func(tx *bolt.Tx) error { return dropTrackRaw(tx, id) }); err != nil {
		return "", err
	}
	for i := len(again) - 1; i >= 0; i-- {
		k := again[i]
		if _, err := s.AddVersionAt(ctx, id, k.snap.Seq, k.snap, k.body); err != nil {
			return "", fmt.Errorf("pet: store version %d of watch %d again: %w", k.snap.Seq, id, err)
		}
	}
	told := fmt.Sprintf("%d versions were stored again, without their screenshots", len(again))
	if wholes > 0 {
		told += fmt.Sprintf(" (%d of them, whose segments were lost, as one segment each)", wholes)
	}
	if bad == 0 {
		return fmt.Sprintf("watch %d: a record of its track was damaged; its %s", id, told), nil
	}
	return fmt.Sprintf("watch %d: versions up to %d were taken out (%v); the newer %s", id, bad, why, told), nil
}

// bodyOnly reads version seq of the watch without its segments: its
// header and its body, which it gives as one segment.
func bodyOnly(tx *bolt.Tx, id int64, seq int) (*changedigest.Snapshot, []byte, error) {
	snap, rec, err := readVersion(tx, id, seq, false)
	if err != nil {
		return nil, nil, err
	}
	body, err := readBody(tx, id, seq, rec)
	if err != nil {
		return nil, nil, err
	}
	sum := md5.Sum(body)
	snap.Segments = []changedigest.Segment{{Path: "html", Hash: hex.EncodeToString(sum[:]), Start: 0, End: len(body)}}
	snap.Layout = nil
	return snap, body, nil
}

// dropOrphans takes out the records of tracks whose watch is not stored.
func dropOrphans(tx *bolt.Tx) error {
	watches := tx.Bucket(bWatches)
	orphan := func(k, _ []byte) bool { return len(k) < 8 || watches.Get(k[:8]) == nil }
	for _, name := range [][]byte{bTracks, bVersions, bSegs, bSegHash, bShots} {
		if err := deleteWhere(tx.Bucket(name), orphan); err != nil {
			return err
		}
	}
	// Versions outside their track's span, and their screenshots.
	for _, name := range [][]byte{bVersions, bShots} {
		err := deleteWhere(tx.Bucket(name), func(k, _ []byte) bool {
			m, err := trackOf(tx, at(k, 0))
			seq := int(at(k, 1))
			return len(k) != 16 || err != nil || m.Latest == 0 || seq < m.Oldest || seq > m.Latest
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// dropWatchRaw takes out a watch whose record cannot be read: its record,
// the entries that point at it, and its track.
func dropWatchRaw(tx *bolt.Tx, id int64) error {
	if err := tx.Bucket(bWatches).Delete(id64(id)); err != nil {
		return err
	}
	for _, name := range [][]byte{bUserWatch, bDue} {
		// Keys end with the watch's ID (user or due time first).
		if err := deleteWhere(tx.Bucket(name), func(k, _ []byte) bool { return len(k) == 16 && at(k, 1) == id }); err != nil {
			return err
		}
	}
	if err := deleteWhere(tx.Bucket(bWatchKeys), func(_, v []byte) bool { return len(v) == 8 && at(v, 0) == id }); err != nil {
		return err
	}
	return dropTrackRaw(tx, id)
}

// dropTrackRaw takes out every record of the watch's track without
// reading them (the chunks they referred to stay, unreferenced by them).
func dropTrackRaw(tx *bolt.Tx, id int64) error {
	prefix := id64(id)
	for _, name := range [][]byte{bTracks, bVersions, bSegs, bSegHash, bShots} {
		if err := deleteWhere(tx.Bucket(name), func(k, _ []byte) bool { return bytes.HasPrefix(k, prefix) }); err != nil {
			return err
		}
	}
	// Events: user, time, watch, version.
	return deleteWhere(tx.Bucket(bEvents), func(k, _ []byte) bool { return len(k) >= 24 && at(k, 2) == id })
}

// deleteWhere deletes the keys of b that match.
func deleteWhere(b *bolt.Bucket, match func(k, v []byte) bool) error {
	var keys [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		if match(k, v) {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Salvage copies into a new store file at dst every bucket, key and
// value of the store file at src that can be read, and says what could
// not be (a damaged page takes its records, and the pages only it leads
// to, with it). It reads src's pages itself, each once, so that no
// damage can send it round in a circle or outside the file.
func Salvage(src, dst string) (lost []string, err error) {
	if _, err := os.Stat(dst); err == nil {
		return nil, fmt.Errorf("pet: %s exists already", dst)
	}
	to, err := bolt.Open(dst, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("pet: create %s: %w", dst, err)
	}
	defer to.Close()
	if err := to.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, name := range allBuckets {
		if !bytes.Equal(name, bPending) { // the index is rebuilt whole
			known[string(name)] = true
		}
	}
	// The file's pages are read with the page walker, not with bbolt's
	// cursors, which trust them: each page is read once, a damaged one
	// passed over, and the records of the pages that read are copied in
	// batches.
	type kv struct{ bucket, k, v []byte }
	var batch []kv
	size, badKeys := 0, map[string]int{}
	seqs := map[string]uint64{}
	flush := func() error {
		err := to.Update(func(tx *bolt.Tx) error {
			for _, r := range batch {
				b := tx.Bucket(r.bucket)
				b.FillPercent = 0.9
				if err := b.Put(r.k, r.v); err != nil {
					return err
				}
			}
			return nil
		})
		batch, size = batch[:0], 0
		if err != nil {
			return fmt.Errorf("pet: write %s: %w", dst, err)
		}
		return nil
	}
	problems, err := walkTree(src, func(path [][]byte, k, v []byte) error {
		if len(path) != 1 || !known[string(path[0])] {
			return nil // a store has no nested buckets
		}
		if len(k) == 0 || len(k) > bolt.MaxKeySize || len(v) > bolt.MaxValueSize {
			badKeys[string(path[0])]++ // a damaged key
			return nil
		}
		batch = append(batch, kv{path[0], bytes.Clone(k), bytes.Clone(v)})
		if size += len(k) + len(v); size >= 16<<20 || len(batch) >= 1<<16 {
			return flush()
		}
		return nil
	}, func(path [][]byte, seq uint64) error {
		if len(path) == 1 {
			seqs[string(path[0])] = seq
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return lost, err
	}
	for _, p := range problems {
		lost = append(lost, "the records of a damaged page were lost: "+p)
	}
	for name, n := range badKeys {
		lost = append(lost, fmt.Sprintf("bucket %s: %d records with damaged keys were left out", name, n))
	}
	if err := to.Update(func(tx *bolt.Tx) error {
		for name, seq := range seqs {
			if b := tx.Bucket([]byte(name)); b != nil && known[name] {
				if err := b.SetSequence(max(b.Sequence(), seq)); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return lost, err
	}
	return lost, to.Sync()
}

// closeFile closes a store file opened without a Store, and forgets the
// chunks read from it (another file opened later may take its place in
// memory, and the chunk cache knows a file by that).
func closeFile(db *bolt.DB) error {
	recent.forget(db)
	return db.Close()
}
