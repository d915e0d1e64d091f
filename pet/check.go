package pet

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// Check verifies the whole store: every stored version decodes and its
// body rebuilds to its checksum; every chunk's reference count equals the
// references to it (versions, layouts, delta chunks, segment texts);
// every segment record is held by a stored version and found by its hash;
// and the index holds one document per segment with text. It returns all
// problems found, joined, each wrapping ErrCorrupt; nil when the store is
// sound. It reads everything: for tests and administration.
func (s *Store) Check(ctx context.Context) error {
	var problems []error
	bad := func(format string, args ...any) {
		problems = append(problems, corruptf(format, args...))
	}
	var indexable uint64
	err := s.view(ctx, func(tx *bolt.Tx) error {
		refs := map[uint64]uint64{}
		held := map[[2]uint64]bool{} // watch, segment id
		err := tx.Bucket(bTracks).ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			wid := at(k, 0)
			m, err := decodeTrack(v)
			if err != nil {
				bad("track of watch %d: %v", wid, err)
				return nil
			}
			if _, err := getWatch(tx, wid); err != nil {
				bad("track of missing watch %d", wid)
			}
			n := 0
			prefix := id64(wid)
			c := tx.Bucket(bVersions).Cursor()
			for vk, _ := c.Seek(prefix); vk != nil && bytes.HasPrefix(vk, prefix); vk, _ = c.Next() {
				n++
				seq := int(at(vk, 1))
				if seq < m.Oldest || seq > m.Latest {
					bad("watch %d: version %d outside the track %d..%d", wid, seq, m.Oldest, m.Latest)
				}
			}
			if n != m.count() {
				bad("watch %d: %d versions stored, the track says %d", wid, n, m.count())
			}
			for seq := m.Oldest; m.Latest > 0 && seq <= m.Latest; seq++ {
				_, rec, err := readVersion(tx, wid, seq, false)
				if err != nil {
					bad("watch %d version %d: %v", wid, seq, err)
					continue
				}
				distinct := map[uint64]bool{}
				body := make([]byte, 0, rec.hdr.Size)
				for _, id := range rec.chunks {
					if !distinct[id] {
						distinct[id] = true
						refs[id]++
					}
					p, err := readStoredChunk(tx, id, maxChunk)
					if err != nil {
						bad("watch %d version %d: %v", wid, seq, err)
						break
					}
					body = append(body, p...)
				}
				if len(body) != rec.hdr.Size || !rec.hdr.check(body) {
					bad("watch %d version %d: body does not match its checksum", wid, seq)
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
		hashes := tx.Bucket(bSegHash)
		err = tx.Bucket(bSegs).ForEach(func(k, v []byte) error {
			wid, id := at(k, 0), uint64(at(k, 1))
			r, err := decodeSeg(tx, v, true)
			if err != nil {
				bad("segment %d of watch %d: %v", id, wid, err)
				return nil
			}
			if r.hasText {
				indexable++
			}
			if r.Dict != 0 {
				refs[r.Dict]++
			}
			if !held[[2]uint64{uint64(wid), id}] {
				bad("segment %d of watch %d is in no stored version", id, wid)
			}
			t := trackTx{watch: watchOf(wid)}
			if hv := hashes.Get(t.hashKey(r.Hash)); hv == nil || uint64(at(hv, 0)) != id {
				bad("segment %d of watch %d is not found by its hash", id, wid)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n, m := tx.Bucket(bSegHash).Stats().KeyN, tx.Bucket(bSegs).Stats().KeyN; n != m {
			bad("%d segment hashes for %d segments", n, m)
		}
		if err := shotRefs(tx, refs, bad); err != nil {
			return err
		}
		data := tx.Bucket(bChunkData)
		err = data.ForEach(func(k, v []byte) error {
			if _, base, _ := deltaHeader(v); base != 0 {
				refs[base]++
			}
			return nil
		})
		if err != nil {
			return err
		}
		chunkHash := tx.Bucket(bChunkHash)
		err = tx.Bucket(bChunkRefs).ForEach(func(k, v []byte) error {
			id := uint64(at(k, 0))
			n, w := uvarint(v)
			if w <= 0 || len(v) != w+16 {
				bad("chunk %d: bad reference record", id)
				return nil
			}
			if n != refs[id] {
				bad("chunk %d has %d references counted, %d found", id, n, refs[id])
			}
			if hv := chunkHash.Get(v[w:]); hv == nil || uint64(at(hv, 0)) != id {
				bad("chunk %d is not found by its hash", id)
			}
			if data.Get(k) == nil {
				bad("chunk %d has no data", id)
			}
			delete(refs, id)
			return nil
		})
		if err != nil {
			return err
		}
		for id := range refs {
			bad("chunk %d is referenced but not stored", id)
		}
		if n, m := chunkHash.Stats().KeyN, data.Stats().KeyN; n != m {
			bad("%d chunk hashes for %d chunks", n, m)
		}
		return nil
	})
	if err != nil {
		return wrap(err, "check")
	}
	if err := s.catchUp(ctx); err != nil {
		bad("search index: %v", err)
	} else if s.pendingCount() == 0 {
		s.idxMu.RLock()
		n, err := s.idx.DocCount()
		s.idxMu.RUnlock()
		if err != nil {
			return fmt.Errorf("pet: check: count index documents: %w", err)
		}
		if n != indexable {
			bad("index holds %d documents for %d segments with text", n, indexable)
		}
	}
	return errors.Join(problems...)
}

// watchOf is a watch value with only its id, for key helpers.
func watchOf(id int64) (w changedigest.Watch) {
	w.ID = id
	return w
}
