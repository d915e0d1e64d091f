package pet

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// TestFullDisk fills a real 2 MB filesystem: the store must refuse
// versions with a clear error, keep answering reads and searches, never
// write to a failed index (Bleve panics when it is), and resume by itself
// once there is space again, losing nothing it acknowledged.
func TestFullDisk(t *testing.T) {
	dir := testenv.SmallFS(t, 2<<20)
	c := newClock()
	s := MustOpen(t, dir, c, func(s *Store) { s.IndexRetry = time.Minute })
	f := &fixture{s: s, clock: c}
	f.user = f.mustUser(t, "alice")
	f.watch = f.mustWatch(t, f.user.ID, "https://example.org/", "news")
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))

	page := func(i int) string {
		var b strings.Builder
		for j := range 60 {
			fmt.Fprintf(&b, "<p>version%d paragraph %d %x %x %x %x</p>\n", i, j, rng.Int63(), rng.Int63(), rng.Int63(), rng.Int63())
		}
		return b.String()
	}
	add := func(i int) (int, error) {
		body := page(i)
		snap := snapshotOf([]byte(body))
		snap.FetchedAt = c.Now().Add(time.Duration(i) * time.Minute)
		seq, err := s.AddVersion(ctx, f.watch.ID, snap, []byte(body))
		// What the crawler does after every check, successful or not.
		w, werr := s.Watch(ctx, AnyUser, f.watch.ID)
		if werr != nil {
			t.Fatalf("read the watch after version %d: %v", i, werr)
		}
		w.Checks++
		if err != nil {
			w.LastError = err.Error()
		}
		if serr := s.SaveSchedule(ctx, w); serr != nil && !errors.Is(serr, ErrNoSpace) {
			t.Fatalf("save schedule after version %d: %v", i, serr)
		}
		return seq, err
	}
	searchFor := func(word string) int {
		t.Helper()
		res, err := s.Search(ctx, Query{Text: word, UserID: f.user.ID})
		if err != nil {
			t.Fatalf("search %q: %v", word, err)
		}
		return res.Total
	}

	stored := map[int]int{} // seq → version number i
	full := -1
	for i := range 2000 {
		seq, err := add(i)
		if err == nil {
			stored[seq] = i
			if i == 3 {
				// A search applies the pending index work: the first
				// versions are on disk in the index long before it fills,
				// as on any service that has run a while.
				if n := searchFor("version0"); n == 0 {
					t.Fatal("search finds nothing of the first version")
				}
			}
			continue
		}
		if !errors.Is(err, ErrNoSpace) || changedigest.ErrorCode(err) != changedigest.EFULL {
			t.Fatalf("version %d: want a storage-full error, got %v", i, err)
		}
		if !strings.Contains(err.Error(), "storage is full") {
			t.Errorf("the error does not say what is wrong: %v", err)
		}
		full = i
		break
	}
	if full < 0 {
		t.Fatal("2000 versions fitted in 2 MB: the test no longer fills the disk")
	}
	t.Logf("disk full at version %d (%d stored); index failure: %v", full, len(stored), s.IndexFailure())
	if _, ok := s.StorageFull(); !ok {
		t.Error("StorageFull does not report the full disk")
	}
	// More checks on the full disk: errors, never a panic.
	for i := full + 1; i < full+10; i++ {
		if seq, err := add(i); err == nil {
			stored[seq] = i
		}
	}
	// Reads and searches go on.
	if n := searchFor("version0"); n == 0 {
		t.Error("search finds nothing of the first version while the disk is full")
	}
	for seq := range stored {
		if _, err := s.Body(ctx, f.watch.ID, seq); err != nil {
			t.Fatalf("read version %d while the disk is full: %v", seq, err)
		}
	}
	w, err := s.Watch(ctx, AnyUser, f.watch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.LastError, "storage is full") {
		t.Errorf("the watch's last error is %q, want the storage-full error", w.LastError)
	}

	// Space comes back; after IndexRetry everything resumes by itself.
	testenv.ResizeFS(t, dir, 64<<20)
	c.Add(2 * time.Minute)
	last := full + 100
	seq, err := add(last)
	if err != nil {
		t.Fatalf("add a version after space came back: %v", err)
	}
	stored[seq] = last
	if _, ok := s.StorageFull(); ok {
		t.Error("StorageFull still reports a full disk after a version was stored")
	}
	if n := searchFor(fmt.Sprintf("version%d", last)); n == 0 {
		t.Error("the version stored after space came back is not searchable")
	}
	if err := s.IndexFailure(); err != nil {
		t.Errorf("the index is still failed after space came back: %v", err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("store check after the full disk: %v", err)
	}
	// Every acknowledged version is searchable and intact after a restart.
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s = MustOpen(t, dir, c)
	f.s = s
	for seq, i := range stored {
		if _, err := s.Body(ctx, f.watch.ID, seq); err != nil {
			t.Fatalf("version %d after reopening: %v", seq, err)
		}
		if n := searchFor(fmt.Sprintf("version%d", i)); n == 0 {
			t.Errorf("version %d (seq %d) is not searchable after reopening", i, seq)
		}
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("store check after reopening: %v", err)
	}
}
