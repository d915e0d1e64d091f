package pet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// damagedStore is a closed store of one user with n watches of three
// versions each, in its directory.
func damagedStore(t *testing.T, n int) (dir string, ids []int64) {
	t.Helper()
	dir = t.TempDir()
	c := newClock()
	s := MustOpen(t, dir, c)
	f := &fixture{s: s, clock: c}
	f.user = f.mustUser(t, "alice")
	for i := range n {
		w := f.mustWatch(t, f.user.ID, fmt.Sprintf("https://example.org/%d", i))
		for v := range 3 {
			f.add(t, w.ID, fmt.Sprintf("<p>Page %d, version %d: %s</p><p>The same text of page %d.</p>", i, v, strings.Repeat("word ", 50+v), i))
		}
		ids = append(ids, w.ID)
	}
	s.Close()
	return dir, ids
}

// spoil writes v as the value of key in bucket of the store file in dir.
func spoil(t *testing.T, dir string, bucket, key, v []byte) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, v) }); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedWatchRecordPassedOver: a watch whose record cannot be read
// is passed over by the scheduler's list, logged, and listed to its user
// as damaged with what to do; the other watches are listed and due as
// before.
func TestDamagedWatchRecordPassedOver(t *testing.T) {
	dir, ids := damagedStore(t, 3)
	spoil(t, dir, bWatches, id64(ids[1]), []byte(`{"id":2,"url":"ht`))
	s := MustOpen(t, dir, nil)
	ctx := context.Background()
	due, err := s.DueWatches(ctx, time.Now().Add(1000*time.Hour), 100)
	if err != nil {
		t.Fatalf("due watches with one damaged: %v", err)
	}
	if len(due) != 2 || due[0].ID == ids[1] || due[1].ID == ids[1] {
		t.Errorf("due: %d watches", len(due))
	}
	for _, list := range []func() ([]changedigest.Watch, error){
		func() ([]changedigest.Watch, error) { return s.Watches(ctx, 1, "") },
		func() ([]changedigest.Watch, error) {
			p, err := s.WatchPage(ctx, 1, WatchQuery{})
			if err != nil {
				return nil, err
			}
			return p.Watches, nil
		},
	} {
		ws, err := list()
		if err != nil {
			t.Fatalf("list with one damaged: %v", err)
		}
		if len(ws) != 3 {
			t.Fatalf("listed %d watches", len(ws))
		}
		for _, w := range ws {
			damaged := strings.Contains(w.LastError, "stored record damaged") && strings.Contains(w.LastError, "changedigest repair")
			if damaged != (w.ID == ids[1]) {
				t.Errorf("watch %d: last error %q", w.ID, w.LastError)
			}
		}
	}
}

// TestTruncatedStoreFile: a store file cut short is a clear error at
// opening, with what to do, where reading it would end the process.
func TestTruncatedStoreFile(t *testing.T) {
	dir, _ := damagedStore(t, 20)
	path := filepath.Join(dir, dbFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{fi.Size() / 2, 5000, 100} {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		s := New(dir)
		s.Logger = quiet
		err := s.Open(context.Background())
		if err == nil {
			s.Close()
			t.Fatalf("a store file cut to %d bytes opened", size)
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "changedigest repair") {
			t.Errorf("cut to %d bytes: %v", size, err)
		}
	}
}

// TestDamagedPagesNeverCrash flips bytes in the pages of a store file,
// as a failing disk would: every opening that reads every page (as the
// service does) either finds the store whole or says it is damaged, and
// what it says is damaged is repaired: what Salvage and Mend leave reads
// whole, and the watches not damaged keep their versions.
func TestDamagedPagesNeverCrash(t *testing.T) {
	clean, ids := damagedStore(t, 40)
	data, err := os.ReadFile(filepath.Join(clean, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	damaged, kept := 0, 0
	for seed := range uint64(30) {
		dir := t.TempDir()
		spoilt := append([]byte(nil), data...)
		rng := rand.New(rand.NewPCG(seed, 3))
		for range 64 {
			spoilt[8192+rng.IntN(len(spoilt)-8192)] ^= 0xff // the meta pages whole
		}
		if err := os.WriteFile(filepath.Join(dir, dbFile), spoilt, 0o600); err != nil {
			t.Fatal(err)
		}
		s := New(dir)
		s.Logger, s.CheckPages = quiet, true
		openErr := s.Open(ctx)
		if openErr == nil {
			s.Close()
		} else if !errors.Is(openErr, ErrCorrupt) {
			t.Fatalf("seed %d: %v", seed, openErr)
		}
		found, err := CheckFile(ctx, dir)
		if err != nil {
			t.Fatalf("seed %d: check: %v", seed, err)
		}
		if openErr != nil && len(found) == 0 {
			t.Errorf("seed %d: the opening failed (%v) but the check finds nothing", seed, openErr)
		}
		if len(found) == 0 {
			continue
		}
		damaged++
		fresh := filepath.Join(dir, "fresh")
		if err := os.Mkdir(fresh, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := Salvage(filepath.Join(dir, dbFile), filepath.Join(fresh, dbFile)); err != nil {
			t.Fatalf("seed %d: salvage: %v", seed, err)
		}
		s = New(fresh)
		s.Logger = quiet
		if err := s.Open(ctx); err != nil {
			t.Fatalf("seed %d: open the salvaged store: %v", seed, err)
		}
		// The versions of tracks that read whole before Mend.
		whole := 0
		err = s.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bWatches).ForEach(func(k, _ []byte) error {
				w, err := getWatch(tx, at(k, 0))
				if err != nil || w.ID != at(k, 0) {
					return nil
				}
				if bad, err := readTrack(tx, w.ID); bad == 0 && err == nil {
					m, _ := trackOf(tx, w.ID)
					whole += m.count()
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.Mend(ctx)
		s.Close()
		if err != nil {
			t.Fatalf("seed %d: mend: %v", seed, err)
		}
		if again, err := CheckFile(ctx, fresh); err != nil || len(again) > 0 {
			t.Errorf("seed %d: after repair: %v %v", seed, again, err)
		}
		// The whole check: references counted, segments held, the index
		// rebuilt from the store.
		s = New(fresh)
		s.Logger = quiet
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(ctx); err != nil {
			t.Errorf("seed %d: the repaired store: %v", seed, err)
		}
		s.Close()
		if m.Versions < whole {
			t.Errorf("seed %d: repair kept %d versions, where %d read whole", seed, m.Versions, whole)
		}
		kept += m.Versions
	}
	if damaged < 10 {
		t.Errorf("only %d of 30 spoilt files were found damaged", damaged)
	}
	t.Logf("%d of 30 spoilt files found damaged; their repairs kept %d versions of %d", damaged, kept, 3*len(ids)*damaged)
}
