package pet

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/changedigest/changedigest"
)

// What a person is told to do about a damaged store.
const repairAdvice = "stop the service and run changedigest repair (it keeps the damaged file aside and rebuilds what can be rebuilt), or restore the data directory from a backup"

// damagedf is the error of a store file that cannot be used as it is:
// ErrCorrupt, with what was found and what to do.
func damagedf(path, format string, args ...any) error {
	return &damageError{fmt.Sprintf("pet: %s is damaged: %s: %s", path, fmt.Sprintf(format, args...), repairAdvice)}
}

// damageError is a damaged store file: its message says what to do.
type damageError struct{ msg string }

func (e *damageError) Error() string { return e.msg }
func (e *damageError) Unwrap() error { return ErrCorrupt }

// guarded runs fn with faults on the store's mapped file (a truncated
// file read past its end) and bbolt's panics on damaged pages turned
// into an error, where either would otherwise end the process.
func guarded(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = damagedf(path, "%v", r)
		}
	}()
	return fn()
}

// openFile opens the store file at path: ErrLocked when another process
// holds it past opts.Timeout, a damaged-file error (ErrCorrupt) when its
// header cannot be read.
func openFile(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	err = guarded(path, func() (err error) {
		db, err = bolt.Open(path, 0o600, opts)
		return err
	})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("pet: open %s: %w", path, ErrLocked)
	case errors.Is(err, ErrCorrupt):
		return nil, err
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrInvalidMapping), err != nil && strings.Contains(err.Error(), "file size too small"):
		return nil, damagedf(path, "%v", err)
	case err != nil:
		return nil, fmt.Errorf("pet: open %s: %w", path, err)
	}
	return db, nil
}

// checkSize compares the length of the file at path with the pages its
// header says it holds: a file cut short (a copy that did not finish, a
// full disk) would fault at the first read of a missing page.
func checkSize(db *bolt.DB, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("pet: %w", err)
	}
	var size int64
	if err := db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return damagedf(path, "%v", err)
	}
	if fi.Size() < size {
		return damagedf(path, "it holds %s where its pages reach %s (the file was cut short)",
			changedigest.FormatBytes(fi.Size()), changedigest.FormatBytes(size))
	}
	return nil
}

// damagedRecords reports whether err, from bringing a store's records up
// to date as it opens, is bbolt refusing what damaged records hold (a key
// read from a damaged page, too long to write back; a bucket where a
// value should be).
func damagedRecords(err error) bool {
	for _, e := range []error{bolterrors.ErrKeyTooLarge, bolterrors.ErrKeyRequired, bolterrors.ErrValueTooLarge,
		bolterrors.ErrIncompatibleValue, bolterrors.ErrBucketNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// checkPages checks the file's page tree (checkTree), then reads every
// bucket, key and value through bbolt: a damaged page is found here
// rather than by a read that would end the process or never return.
func checkPages(db *bolt.DB, path string) error {
	// The tree is read from the file first, with bounded work, so that
	// bbolt's cursors below only follow pages that hold together.
	if err := checkTree(path); errors.Is(err, errTree) {
		return damagedf(path, "%v", err)
	} else if err != nil {
		return fmt.Errorf("pet: check %s: %w", path, err)
	}
	return guarded(path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			// Each key takes some bytes of a page: more keys than that
			// means pages that point back at each other.
			budget := tx.Size()/8 + 1024
			var walk func(b *bolt.Bucket) error
			walk = func(b *bolt.Bucket) error {
				return b.ForEach(func(k, v []byte) error {
					if budget--; budget < 0 {
						return damagedf(path, "its pages lead round in a circle")
					}
					if v == nil {
						if sub := b.Bucket(k); sub != nil {
							return walk(sub)
						}
					}
					return nil
				})
			}
			err := tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(b) })
			if err != nil {
				return err
			}
			return nil
		})
	})
}
