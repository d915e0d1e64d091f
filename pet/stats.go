package pet

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Stats describes what the store holds and the disk it takes.
type Stats struct {
	Users, Watches, Versions int
	// Segments is the number of distinct segments over all tracks, each
	// stored (and indexed, when it has text) once.
	Segments int
	// Chunks and ChunkBytes are the stored body chunks and their
	// compressed size.
	Chunks     int
	ChunkBytes int64
	// DBBytes is the part of pet.db in use (pages not free); FileBytes the
	// size of the file, which bbolt grows ahead of need and never shrinks.
	DBBytes, FileBytes int64
	// IndexBytes is the size of the search index directory; IndexLiveBytes
	// the part of it in the index segments in use (not Bleve's metadata
	// file, nor segments merged away and awaiting removal); IndexDocs its
	// number of documents.
	IndexBytes, IndexLiveBytes int64
	IndexDocs                  uint64
}

// Stats counts the store's contents and measures its disk use. It walks
// every record: for administration and benchmarks, not the request path.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.view(ctx, func(tx *bolt.Tx) error {
		st.Users = tx.Bucket(bUsers).Stats().KeyN
		st.Watches = tx.Bucket(bWatches).Stats().KeyN
		st.Segments = tx.Bucket(bSegs).Stats().KeyN
		if err := tx.Bucket(bTracks).ForEach(func(k, v []byte) error {
			m, err := decodeTrack(v)
			if err != nil {
				return corruptf("track %x: %v", k, err)
			}
			st.Versions += m.count()
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bChunkData).ForEach(func(_, v []byte) error {
			st.Chunks++
			st.ChunkBytes += int64(len(v))
			return nil
		}); err != nil {
			return err
		}
		dbs := s.db.Stats()
		st.DBBytes = tx.Size() - int64(dbs.FreePageN+dbs.PendingPageN)*int64(s.db.Info().PageSize)
		return nil
	})
	if err != nil {
		return Stats{}, wrap(err, "stats")
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, dbFile)); err == nil {
		st.FileBytes = fi.Size()
	}
	s.catchUp(ctx) // without the index, its figures stay zero
	st.IndexBytes = dirSize(filepath.Join(s.Dir, indexDir))
	s.idxMu.RLock()
	if s.idx != nil {
		st.IndexDocs, _ = s.idx.DocCount()
		if m, ok := s.idx.StatsMap()["index"].(map[string]any); ok {
			if n, ok := m["num_bytes_used_disk_by_root"].(uint64); ok {
				st.IndexLiveBytes = int64(n)
			}
		}
	}
	s.idxMu.RUnlock()
	return st, nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
