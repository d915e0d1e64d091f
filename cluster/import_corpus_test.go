package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// TestImportRealHistories: a single store made by checking the corpus's
// real page histories (up to 20 versions each; all with
// CHANGEDIGEST_IMPORT_ALL=1) is imported into a cluster, and a node with
// an empty store rebuilds it from the cluster alone: every version's body
// byte for byte, its changes and its significance.
func TestImportRealHistories(t *testing.T) {
	root := testenv.Corpus(t, "versions")
	limit := 20
	if os.Getenv("CHANGEDIGEST_IMPORT_ALL") != "" {
		limit = 1 << 20
	}
	var histories [][]string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.html"))
		if len(files) >= 2 {
			sort.Strings(files)
			histories = append(histories, files[:min(len(files), limit)])
		}
		return nil
	})
	if len(histories) == 0 {
		t.Fatalf("no histories in %s", root)
	}
	var mu sync.Mutex
	current := make([][]byte, len(histories))
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.URL.Path[1:])
		mu.Lock()
		defer mu.Unlock()
		if err != nil || i < 0 || i >= len(current) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write(current[i])
	}))
	defer site.Close()

	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	st := pet.New(dir)
	st.Logger = quiet
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	u := &changedigest.User{Name: "ann", PasswordHash: []byte("hash-ann"), DigestHour: -1}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	ws := make([]*changedigest.Watch, len(histories))
	for i := range histories {
		ws[i] = &changedigest.Watch{UserID: u.ID, URL: fmt.Sprintf("%s/%d", site.URL, i), NextCheck: time.Now().Add(time.Hour)}
		if err := st.CreateWatch(ctx, ws[i]); err != nil {
			t.Fatal(err)
		}
	}
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	pl := crawl.NewPipeline(f, segmenter.New(), st)
	steps, refused := 0, 0
	for _, h := range histories {
		steps = max(steps, len(h))
	}
	for k := range steps {
		for i, h := range histories {
			if k >= len(h) {
				continue
			}
			b, err := os.ReadFile(h[k])
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			current[i] = b
			mu.Unlock()
			if _, err := pl.Check(ctx, ws[i]); err != nil {
				refused++ // an error page kept in the history, as checks refuse it
			}
		}
	}
	type version struct {
		body    []byte
		changes int
		sig     float64
	}
	want := map[int64]map[int]version{}
	tracks := map[int64]pet.TrackInfo{}
	total := 0
	for _, w := range ws {
		info, err := st.Track(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		tracks[w.ID] = info
		want[w.ID] = map[int]version{}
		for seq := info.Oldest; seq <= info.Latest; seq++ {
			snap, err := st.Version(ctx, w.ID, seq)
			if err != nil {
				t.Fatal(err)
			}
			body, err := st.Body(ctx, w.ID, seq)
			if err != nil {
				t.Fatal(err)
			}
			want[w.ID][seq] = version{body, len(snap.Changes), snap.Significance}
			total++
		}
	}

	natsDir := t.TempDir()
	cfg := cluster.Config{Name: "solo", Dir: natsDir, Shards: 4, HostGap: 10 * time.Millisecond, Logger: quiet}
	conn, err := cluster.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	im, err := conn.Import(ctx, st, pl.Matrix, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %d histories of real pages (%d of their versions refused by the checks): %s in %s", len(histories), refused, im, time.Since(start).Round(time.Millisecond))
	t.Logf("on disk: the store's pet.db %.1f MB and index %.1f MB; the NATS server's files %.1f MB",
		mb(filepath.Join(dir, "pet.db")), mb(filepath.Join(dir, "index.bleve")), mb(natsDir))
	if im.Watches != len(ws) || im.Versions != total || im.TooLarge != 0 {
		t.Errorf("imported %s; want %d watches, %d versions", im, len(ws), total)
	}
	conn.Close()

	// A cluster of one's stream keeps each watch's newest version only.
	newest := cfg
	newest.Dir, newest.NewestOnly = t.TempDir(), true
	if conn, err = cluster.Dial(ctx, newest); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Import(ctx, st, pl.Matrix, nil); err != nil {
		t.Fatal(err)
	}
	counts, _, err := conn.VersionCounts(ctx)
	if err != nil || len(counts) != len(ws) {
		t.Errorf("the newest-only stream holds versions of %d watches, want %d (%v)", len(counts), len(ws), err)
	}
	for id, k := range counts {
		if k != 1 {
			t.Errorf("the newest-only stream holds %d versions of watch %d", k, id)
		}
	}
	conn.Close()
	t.Logf("a newest-only stream (a cluster of one's) of the same store: %.1f MB", mb(newest.Dir))
	st.Close()

	b := startNodeWith(t, cfg, filepath.Join(t.TempDir(), "fresh"))
	defer b.stop()
	start = time.Now()
	waitFor(t, "the rebuilt view", func() bool {
		for _, w := range ws {
			if info, err := b.store.Track(ctx, w.ID); err != nil || info != tracks[w.ID] {
				return false
			}
		}
		return true
	})
	t.Logf("a fresh node rebuilt the %d versions in %s", total, time.Since(start).Round(time.Millisecond))
	bad := 0
	for _, w := range ws {
		seqs := slices.Sorted(func(yield func(int) bool) {
			for s := range want[w.ID] {
				if !yield(s) {
					return
				}
			}
		})
		for _, seq := range seqs {
			v := want[w.ID][seq]
			snap, err := b.store.Version(ctx, w.ID, seq)
			body, berr := b.store.Body(ctx, w.ID, seq)
			if err != nil || berr != nil || !bytes.Equal(body, v.body) || len(snap.Changes) != v.changes || snap.Significance != v.sig {
				if bad++; bad <= 5 {
					t.Errorf("%s version %d rebuilt: %d bytes (want %d), %d changes (want %d), significance %.3f (want %.3f), %v %v",
						w.URL, seq, len(body), len(v.body), len(snap.Changes), v.changes, snap.Significance, v.sig, err, berr)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d versions differ once rebuilt", bad, total)
	}
}

// mb is the size of the files under path, in MB.
func mb(path string) float64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return float64(n) / (1 << 20)
}
