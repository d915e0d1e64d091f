package pet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestTreeLoop makes a branch page of a store file lead back to itself,
// which sends bbolt's cursors down forever: opening the store says it is
// damaged at once, and Salvage copies the records the other pages hold
// without going round.
func TestTreeLoop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, dbFile)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		b := tx.Bucket(bUsers)
		for i := range 5000 {
			if err := b.Put(fmt.Appendf(nil, "user-%05d", i), []byte(strings.Repeat("x", 100))); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096
	looped := false
	for id := 2; id*pageSize+pageHeaderSize+branchElemSize <= len(data); id++ {
		p := data[id*pageSize:]
		if binary.LittleEndian.Uint64(p) == uint64(id) && binary.LittleEndian.Uint16(p[8:]) == branchPageFlag {
			// Its second child is itself.
			binary.LittleEndian.PutUint64(p[pageHeaderSize+branchElemSize+8:], uint64(id))
			looped = true
			break
		}
	}
	if !looped {
		t.Fatal("no branch page in the file")
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := checkTree(path); !errors.Is(err, errTree) || !strings.Contains(err.Error(), "reached twice") {
		t.Errorf("checkTree: %v, want a page reached twice", err)
	}
	s := New(dir)
	s.Logger, s.CheckPages = quiet, true
	if err := s.Open(context.Background()); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "changedigest repair") {
		if err == nil {
			s.Close()
		}
		t.Fatalf("open: %v, want the store damaged, with what to do", err)
	}
	fresh := filepath.Join(dir, "fresh")
	if err := os.Mkdir(fresh, 0o700); err != nil {
		t.Fatal(err)
	}
	lost, err := Salvage(path, filepath.Join(fresh, dbFile))
	if err != nil || len(lost) == 0 {
		t.Fatalf("salvage: lost %q, %v", lost, err)
	}
	db, err = bolt.Open(filepath.Join(fresh, dbFile), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bUsers).Stats().KeyN; return nil })
	if n == 0 || n >= 5000 {
		t.Errorf("salvaged %d of 5000 records, want all but a page's", n)
	}
	t.Logf("salvaged %d of 5000 records; lost: %s", n, lost)
}

// BenchmarkCheckPages times the check serve makes of pet.db as it starts
// (the page tree read from the file, then every record through bbolt),
// on a file of 64 MB: 2 buckets of 8,000 records of 4 KB and 200,000 of
// 100 bytes.
func BenchmarkCheckPages(b *testing.B) {
	path := filepath.Join(b.TempDir(), dbFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	big, small := []byte(strings.Repeat("v", 4096)), []byte(strings.Repeat("s", 100))
	for round := range 20 {
		err := db.Update(func(tx *bolt.Tx) error {
			for _, name := range []string{"big-a", "big-b"} {
				bk, err := tx.CreateBucketIfNotExists([]byte(name))
				if err != nil {
					return err
				}
				for i := range 400 {
					if err := bk.Put(fmt.Appendf(nil, "%04d-%06d", round, i), big); err != nil {
						return err
					}
				}
			}
			bk, err := tx.CreateBucketIfNotExists([]byte("small"))
			if err != nil {
				return err
			}
			for i := range 10000 {
				if err := bk.Put(fmt.Appendf(nil, "%04d-%06d", round, i), small); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	for b.Loop() {
		if err := checkPages(db, path); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTreeFirstMetaDamaged zeroes the first meta page of a whole store
// file: bbolt opens it from the second, and so does the page check.
func TestTreeFirstMetaDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), dbFile)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ann", "bob", "cy"} { // each meta page has a commit with ann
		if err == nil {
			err = db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists(bUsers)
				if err != nil {
					return err
				}
				return b.Put([]byte(name), []byte("x"))
			})
		}
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(data[:4096])
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkTree(path); err != nil {
		t.Errorf("checkTree: %v", err)
	}
	n := 0
	if _, err := walkTree(path, func(_ [][]byte, k, v []byte) error { n++; return nil }, nil); err != nil || n < 2 {
		t.Errorf("walkTree: %d records, %v", n, err)
	}
}
