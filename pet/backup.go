package pet

import (
	"context"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// DBFile is the name of the store's database file in its directory: what
// a backup copies (Backup). The search index beside it is derived from it
// and rebuilt by Open when missing.
const DBFile = dbFile

// Backup writes a consistent copy of pet.db as of one moment, while the
// store goes on serving: it reads the file in one read transaction, so
// writes committed after it began are not in the copy and writes still
// running wait for nothing (bbolt may have to wait for the copy to end
// only when the file must grow). start is called first with the size of
// the copy, in the transaction, and returns where the bytes go. It
// returns the number of bytes written. Errors: ErrClosed; start's error;
// an error writing.
func (s *Store) Backup(ctx context.Context, start func(size int64) (io.Writer, error)) (int64, error) {
	var n int64
	err := s.view(ctx, func(tx *bolt.Tx) error {
		w, err := start(tx.Size())
		if err != nil {
			return err
		}
		n, err = tx.WriteTo(ctxWriter{ctx, w})
		return err
	})
	if err != nil {
		return n, fmt.Errorf("pet: back up %s: %w", dbFile, err)
	}
	return n, nil
}

// ctxWriter stops a long copy when its context ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// OpenIndex opens the search index now rather than at the first search,
// building it from pet.db when it is missing (as after a restore, whose
// backup holds no index) or does not agree with it.
func (s *Store) OpenIndex(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.ensureIndex(ctx)
}
