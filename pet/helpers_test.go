package pet

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// MustOpen opens a store in dir with the test clock and no fsync. Its
// log is discarded unless PETLOG is set in the environment.
func MustOpen(tb testing.TB, dir string, c *clock, knobs ...func(*Store)) *Store {
	tb.Helper()
	s := New(dir)
	s.NoSync = true
	s.Logger = quiet
	if os.Getenv("PETLOG") != "" {
		s.Logger = slog.Default()
	}
	if c != nil {
		s.Now = c.Now
	}
	for _, k := range knobs {
		k(s)
	}
	if err := s.Open(context.Background()); err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// fixture is a store with one user and one watch.
type fixture struct {
	s     *Store
	clock *clock
	user  *changedigest.User
	watch *changedigest.Watch
}

func newFixture(tb testing.TB, knobs ...func(*Store)) *fixture {
	tb.Helper()
	c := newClock()
	s := MustOpen(tb, tb.TempDir(), c, knobs...)
	f := &fixture{s: s, clock: c}
	f.user = f.mustUser(tb, "alice")
	f.watch = f.mustWatch(tb, f.user.ID, "https://example.org/", "news")
	return f
}

func (f *fixture) mustUser(tb testing.TB, name string) *changedigest.User {
	tb.Helper()
	u := &changedigest.User{Name: name, DigestHour: -1}
	if err := f.s.CreateUser(context.Background(), u); err != nil {
		tb.Fatalf("create user %s: %v", name, err)
	}
	return u
}

func (f *fixture) mustWatch(tb testing.TB, userID int64, url string, tags ...string) *changedigest.Watch {
	tb.Helper()
	w := &changedigest.Watch{UserID: userID, URL: url, Tags: tags}
	if err := f.s.CreateWatch(context.Background(), w); err != nil {
		tb.Fatalf("create watch %s: %v", url, err)
	}
	return w
}

// add stores body as the next version of the watch, one hour after the
// previous one, with the changes given.
func (f *fixture) add(tb testing.TB, watchID int64, body string, changes ...changedigest.Change) (*changedigest.Snapshot, int) {
	tb.Helper()
	snap := snapshotOf([]byte(body))
	snap.FetchedAt = f.clock.Add(time.Hour)
	snap.Changes = changes
	seq, err := f.s.AddVersion(context.Background(), watchID, snap, []byte(body))
	if err != nil {
		tb.Fatalf("add version: %v", err)
	}
	return snap, seq
}

var (
	paraRE = regexp.MustCompile(`(?s)<p[ >].*?</p>`)
	tagRE  = regexp.MustCompile(`(?s)<[^>]*>`)
	wsRE   = regexp.MustCompile(`\s+`)
)

// textOf strips tags and collapses white space.
func textOf(html []byte) string {
	t := tagRE.ReplaceAllString(string(html), " ")
	t = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&nbsp;", " ").Replace(t)
	return strings.TrimSpace(wsRE.ReplaceAllString(t, " "))
}

func md5hex(p []byte) string {
	h := md5.Sum(p)
	return hex.EncodeToString(h[:])
}

// snapshotOf segments a small hand-written body: every <p>…</p> is a
// segment, the rest are gaps. It stands in for the segmenter.
func snapshotOf(body []byte) *changedigest.Snapshot {
	snap := &changedigest.Snapshot{Status: 200, ContentType: "text/html; charset=utf-8", Kind: changedigest.KindPage,
		Size: len(body), BodyHash: md5hex(body)}
	for i, r := range paraRE.FindAllIndex(body, -1) {
		seg := body[r[0]:r[1]]
		snap.Segments = append(snap.Segments, changedigest.Segment{
			Index: i, Hash: md5hex(seg), Path: "html|body|p[" + strconv.Itoa(i) + "]",
			Text: textOf(seg), Start: r[0], End: r[1],
		})
	}
	return snap
}

// blockRE finds the start of block-level elements in real pages.
var blockRE = regexp.MustCompile(`(?i)<(p|div|li|h[1-6]|article|section|header|footer|nav|ul|ol|table|tr|blockquote|pre|form|aside|main)[\s>]`)

// splitPage is the simple splitter for real pages: a segment starts at a
// block element and runs to the next one, merged until it has at least
// minSeg bytes; the text before the first block is a gap.
func splitPage(body []byte, minSeg int) *changedigest.Snapshot {
	snap := &changedigest.Snapshot{Status: 200, Kind: changedigest.KindPage, Size: len(body), BodyHash: md5hex(body)}
	locs := blockRE.FindAllIndex(body, -1)
	var starts []int
	for _, l := range locs {
		if len(starts) == 0 || l[0]-starts[len(starts)-1] >= minSeg {
			starts = append(starts, l[0])
		}
	}
	for i, st := range starts {
		end := len(body)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		seg := body[st:end]
		snap.Segments = append(snap.Segments, changedigest.Segment{
			Index: i, Hash: md5hex(seg), Path: "block[" + strconv.Itoa(i) + "]", Text: textOf(seg), Start: st, End: end,
		})
	}
	return snap
}

// ingestReport is what storing a sequence of versions cost.
type ingestReport struct {
	Versions    int
	RawBytes    int64 // sum of body sizes
	StoredBytes int64 // growth of pet.db in use plus the index segments in use
	DBBytes     int64
	IndexBytes  int64
	ChunkBytes  int64
	Elapsed     time.Duration
}

// PerVersion is the stored bytes per version and their share of the
// average raw version.
func (r ingestReport) PerVersion() (bytes float64, share float64) {
	if r.Versions == 0 || r.RawBytes == 0 {
		return 0, 0
	}
	bytes = float64(r.StoredBytes) / float64(r.Versions)
	return bytes, bytes / (float64(r.RawBytes) / float64(r.Versions))
}

// segmentFunc turns a body into a snapshot, given what the track holds:
// the latest version, its body and the signature matrix (as Prior returns
// them; nil for the first version). The segmenter fits here.
type segmentFunc func(body []byte, prev *changedigest.Snapshot, prevBody []byte, history [][]string) (*changedigest.Snapshot, error)

// ingest stores the bodies as versions of a new watch, segmenting each
// against the track as the crawler will (Prior, segment, AddVersion), and
// measures the disk they take: the hook for the real ingest benchmark
// once the segmenter lands. The first skip versions are stored and not
// counted (to measure the steady state). The index is compacted before
// both measurements, as after Bleve's own merges; between merges it
// holds more.
func ingest(tb testing.TB, s *Store, userID int64, bodies [][]byte, segment segmentFunc, skip int) ingestReport {
	tb.Helper()
	ctx := context.Background()
	w := &changedigest.Watch{UserID: userID, URL: "https://ingest.example/" + strconv.Itoa(int(time.Now().UnixNano()%1e9))}
	if err := s.CreateWatch(ctx, w); err != nil {
		tb.Fatal(err)
	}
	// measure compacts the index and reads the disk in use.
	measure := func() (db, index, chunks int64) {
		if err := s.Compact(ctx); err != nil {
			tb.Fatal(err)
		}
		st, err := s.Stats(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		return st.DBBytes, st.IndexLiveBytes, st.ChunkBytes
	}
	var db0, index0, chunks0 int64
	var rep ingestReport
	start := time.Now()
	for i, body := range bodies {
		if i == skip {
			db0, index0, chunks0 = measure()
			start = time.Now()
		}
		prev, prevBody, history, err := s.Prior(ctx, w.ID, 0)
		if err != nil {
			tb.Fatal(err)
		}
		snap, err := segment(body, prev, prevBody, history)
		if err != nil {
			tb.Fatalf("segment version %d: %v", i, err)
		}
		if _, err := s.AddVersion(ctx, w.ID, snap, body); err != nil {
			tb.Fatalf("version %d: %v", i, err)
		}
		if i >= skip {
			rep.Versions++
			rep.RawBytes += int64(len(body))
		}
	}
	rep.Elapsed = time.Since(start)
	db1, index1, chunks1 := measure()
	rep.DBBytes, rep.IndexBytes, rep.ChunkBytes = db1-db0, index1-index0, chunks1-chunks0
	rep.StoredBytes = rep.DBBytes + rep.IndexBytes
	return rep
}
