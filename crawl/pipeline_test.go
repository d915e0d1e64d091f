package crawl_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// site serves one document whose body the test sets, with an ETag, and
// can be told to fail.
type site struct {
	mu     sync.Mutex
	body   []byte
	ctype  string
	status int
	delay  time.Duration
	full   int // 200 responses sent
}

func (s *site) set(body []byte) {
	s.mu.Lock()
	s.body, s.status, s.delay = body, 200, 0
	s.mu.Unlock()
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, status, delay, ctype := s.body, s.status, s.delay, s.ctype
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != 200 {
		http.Error(w, "server trouble", status)
		return
	}
	etag := fmt.Sprintf(`"%x"`, md5.Sum(body))
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", ctype)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.mu.Lock()
	s.full++
	s.mu.Unlock()
	w.Write(body)
}

type trackEnv struct {
	store    *pet.Store
	pipeline *crawl.Pipeline
	watch    *changedigest.Watch
	site     *site
	srv      *httptest.Server
}

func newTrackEnv(t *testing.T, ctype string) *trackEnv {
	t.Helper()
	ctx := context.Background()
	store := pet.New(t.TempDir())
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	u := &changedigest.User{Name: "ann", DigestHour: -1}
	if err := store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	st := &site{ctype: ctype, status: 200}
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	w := &changedigest.Watch{UserID: u.ID, URL: srv.URL + "/doc"}
	if err := store.CreateWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	f.Timeout = 2 * time.Second
	f.HeaderTimeout = 2 * time.Second
	return &trackEnv{store: store, pipeline: crawl.NewPipeline(f, segmenter.New(), store), watch: w, site: st, srv: srv}
}

// check runs the pipeline and keeps the watch's validators, as the
// scheduler does.
func (e *trackEnv) check(t *testing.T) (crawl.Outcome, error) {
	t.Helper()
	o, err := e.pipeline.Check(context.Background(), e.watch)
	if err == nil {
		e.watch.ETag, e.watch.LastModified = o.ETag, o.LastModified
	}
	return o, err
}

func readVersions(t *testing.T, dir string, n int) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if len(names) > n {
		names = names[:n]
	}
	var out [][]byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestTrackRealHistories serves successive real versions and checks what
// the track keeps: one version per distinct body, byte-exact read-back,
// change texts that really differ, 304s that store nothing, and search.
func TestTrackRealHistories(t *testing.T) {
	cases := []struct {
		name, dir, ctype string
		n                int
		kind             changedigest.Kind
	}{
		{"pandasthumb home page", "versions/pandasthumb-homepage/versions", "text/html; charset=utf-8", 40, changedigest.KindPage},
		{"pandasthumb feed", "feeds/history/pandasthumb-atom/versions_first40", "application/atom+xml", 40, changedigest.KindFeed},
		{"christian daily reporter", "versions/christian-daily-reporter-homepage/versions_first100", "text/html", 40, changedigest.KindPage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bodies := readVersions(t, testenv.Corpus(t, tc.dir), tc.n)
			e := newTrackEnv(t, tc.ctype)
			ctx := context.Background()
			stored := 0
			var lastBody []byte
			changed := 0
			for i, body := range bodies {
				e.site.set(body)
				o, err := e.check(t)
				if err != nil {
					t.Fatalf("version %d: %v", i, err)
				}
				switch {
				case i == 0 && o.Result != crawl.FirstVersion:
					t.Fatalf("version 0: %v, want a first version", o.Result)
				case i > 0 && bytes.Equal(body, lastBody) && o.Result != crawl.NotModified:
					t.Fatalf("version %d repeats the previous one but gave %v", i, o.Result)
				}
				if !bytes.Equal(body, lastBody) {
					stored++
				}
				if o.Result == crawl.Changed {
					changed++
				}
				lastBody = body
				// A second check of the same body is a 304 and stores nothing.
				if o2, err := e.check(t); err != nil || o2.Result != crawl.NotModified {
					t.Fatalf("version %d again: %v, %v; want not modified", i, o2.Result, err)
				}
			}
			info, err := e.store.Track(ctx, e.watch.ID)
			if err != nil {
				t.Fatal(err)
			}
			if info.Versions != stored {
				t.Fatalf("%d versions stored, want %d", info.Versions, stored)
			}
			if changed == 0 {
				t.Fatalf("no version brought a change")
			}
			// Byte-exact read-back, kinds, and change texts.
			distinct := [][]byte{}
			for i, b := range bodies {
				if i == 0 || !bytes.Equal(b, bodies[i-1]) {
					distinct = append(distinct, b)
				}
			}
			var word string
			for seq := 1; seq <= info.Latest; seq++ {
				got, err := e.store.Body(ctx, e.watch.ID, seq)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, distinct[seq-1]) {
					t.Fatalf("version %d does not read back byte for byte", seq)
				}
				v, err := e.store.Version(ctx, e.watch.ID, seq)
				if err != nil {
					t.Fatal(err)
				}
				if v.Kind != tc.kind {
					t.Fatalf("version %d is a %s, want %s", seq, v.Kind, tc.kind)
				}
				for _, c := range v.Changes {
					if c.Op == changedigest.OpUpdate && c.OldText == c.NewText && c.Type == changedigest.ChangeContent {
						t.Errorf("version %d: content update with equal texts %q", seq, c.NewText)
					}
					if word == "" && c.Op == changedigest.OpInsert && c.Type == changedigest.ChangeContent {
						word = longestWord(c.NewText)
					}
				}
			}
			if word == "" {
				t.Fatal("no inserted text to search for")
			}
			res, err := e.store.Search(ctx, pet.Query{Text: word, UserID: e.watch.UserID})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total == 0 {
				t.Errorf("search for %q, a word of an inserted segment, found nothing", word)
			}
			t.Logf("%d bodies, %d versions stored, %d with changes; search %q: %d hits", len(bodies), stored, changed, word, res.Total)
		})
	}
}

// longestWord picks a distinctive word of s for a search.
func longestWord(s string) string {
	best := ""
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) {
		if len(w) > len(best) && len(w) < 20 {
			best = w
		}
	}
	return best
}

// TestFailedFetchStoresNothing: error statuses and timeouts are errors
// for the watch, never a version or a change.
func TestFailedFetchStoresNothing(t *testing.T) {
	e := newTrackEnv(t, "text/html")
	e.site.set([]byte("<html><body><p>First words of the page, long enough to count.</p></body></html>"))
	if _, err := e.check(t); err != nil {
		t.Fatal(err)
	}
	e.watch.ETag = "" // force full responses
	for _, tc := range []struct {
		name   string
		status int
		delay  time.Duration
	}{
		{"server error", 500, 0},
		{"not found", 404, 0},
		{"too many requests", 429, 0},
		{"timeout", 200, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.site.mu.Lock()
			e.site.status, e.site.delay = tc.status, tc.delay
			e.site.body = []byte("<html><body><p>Something else entirely.</p></body></html>")
			e.site.mu.Unlock()
			if _, err := e.pipeline.Check(context.Background(), e.watch); err == nil {
				t.Fatal("no error")
			}
			info, err := e.store.Track(context.Background(), e.watch.ID)
			if err != nil || info.Versions != 1 {
				t.Fatalf("versions after a failed fetch: %d, %v", info.Versions, err)
			}
		})
	}
}

// TestSchedulerRecordsErrors runs a failing check through the scheduler:
// the error lands on the watch, not in the track.
func TestSchedulerRecordsErrors(t *testing.T) {
	e := newTrackEnv(t, "text/html")
	e.site.mu.Lock()
	e.site.status = 503
	e.site.mu.Unlock()
	sched := crawl.NewScheduler(e.store, e.pipeline)
	sum, err := sched.CheckNow(context.Background(), nil, e.watch)
	if err != nil || sum.Failed != 1 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	w, err := e.store.Watch(context.Background(), e.watch.UserID, e.watch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.LastError == "" || w.ErrorCount != 1 || !w.NextCheck.After(time.Now()) {
		t.Errorf("watch after a 503: error %q, count %d, next %v", w.LastError, w.ErrorCount, w.NextCheck)
	}
	if info, _ := e.store.Track(context.Background(), e.watch.ID); info.Versions != 0 {
		t.Errorf("%d versions stored after a failed check", info.Versions)
	}
}

// TestVolatileLocation checks a page whose view counter moves at every
// check: once the track has seen it change at most checks, the counter is
// stored as noise with its reason, while an edit of the story is not.
func TestVolatileLocation(t *testing.T) {
	e := newTrackEnv(t, "text/html; charset=utf-8")
	page := func(views int, story string) []byte {
		return []byte(fmt.Sprintf(`<html><body><main><h1>Harbour</h1><p>%s</p>
<p>The ferry to the islands leaves from the north pier every hour until midnight in summer.</p></main>
<aside><p>Tickets left: %d</p></aside></body></html>`, story, views))
	}
	story := "The harbour festival opens on Friday with music on the quay."
	var last *changedigest.Snapshot
	for i := range segmenter.NoiseVolatileMin + 3 {
		e.site.set(page(100+i, story))
		if _, err := e.check(t); err != nil {
			t.Fatal(err)
		}
		var err error
		if last, err = e.store.Latest(context.Background(), e.watch.ID); err != nil {
			t.Fatal(err)
		}
		if i < segmenter.NoiseVolatileMin && last.Seq > 1 && last.Changes[0].Noise != "" {
			t.Fatalf("check %d: noise %q before the location could be known as volatile", i, last.Changes[0].Noise)
		}
	}
	if len(last.Changes) != 1 || !strings.HasPrefix(last.Changes[0].Noise, "volatile location: changes at") {
		t.Fatalf("the counter after %d checks: %+v", segmenter.NoiseVolatileMin+3, last.Changes)
	}
	if last.Significance != 0 {
		t.Errorf("a version with only noise has significance %v, want 0", last.Significance)
	}
	e.site.set(page(200, "The harbour festival is cancelled because of the storm."))
	if _, err := e.check(t); err != nil {
		t.Fatal(err)
	}
	last, _ = e.store.Latest(context.Background(), e.watch.ID)
	told := 0
	for _, c := range last.Changes {
		if c.Noise == "" {
			told++
			if !strings.Contains(c.NewText, "cancelled") {
				t.Errorf("told change %+v, want the story", c)
			}
		}
	}
	if told != 1 || last.Significance <= 0 {
		t.Errorf("the story edit: %d changes told, significance %v; changes %+v", told, last.Significance, last.Changes)
	}
}

// fakeRenderer serves a fixed document with a screenshot unless the
// pipeline says the document is already stored.
type fakeRenderer struct {
	html  string
	shots int
}

func (f *fakeRenderer) RenderWatch(ctx context.Context, w *changedigest.Watch, known func([]byte) bool) (*crawl.Response, error) {
	raw := []byte(f.html)
	res := &crawl.Response{Status: 200, Raw: raw, Body: raw, ContentType: "text/html; charset=utf-8", FinalURL: w.URL}
	if known == nil || !known(raw) {
		f.shots++
		res.Screenshot = &changedigest.Screenshot{PNG: []byte("\x89PNG\r\n\x1a\nnot really"), Width: 10, Height: 10,
			Boxes: []changedigest.Box{{Segment: -1, Path: "html|body|main|p", W: 5, H: 5}, {Segment: -1, Path: "html|body|main|p", W: 9, H: 9}}}
	}
	return res, nil
}

// TestPipelineScreenshots: a rendered version is stored with its
// screenshot, its boxes marked with their segments; an unchanged page
// is known before its screenshot is taken.
func TestPipelineScreenshots(t *testing.T) {
	e := newTrackEnv(t, "text/html")
	r := &fakeRenderer{html: "<html><body><main><p>" + strings.Repeat("Opening hours of the town library. ", 20) + "</p></main></body></html>"}
	e.pipeline.Renderer = r
	e.watch.Render = changedigest.RenderBrowser
	for i, want := range []crawl.Result{crawl.FirstVersion, crawl.Unchanged} {
		if o, err := e.check(t); err != nil || o.Result != want {
			t.Fatalf("check %d: %v, %v; want %v", i+1, o.Result, err, want)
		}
	}
	if r.shots != 1 {
		t.Errorf("%d screenshots taken for one new version and one unchanged check, want 1", r.shots)
	}
	shot, err := e.store.Screenshot(context.Background(), e.watch.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := e.store.Version(context.Background(), e.watch.ID, 1)
	if len(shot.Boxes) != 1 || shot.Boxes[0].W != 5 {
		t.Errorf("boxes %+v: want the first box of the path only", shot.Boxes)
	}
	for _, sg := range snap.Segments {
		if sg.Path == "html|body|main|p" && shot.Boxes[0].Segment != sg.Index {
			t.Errorf("the box of segment %d's root is marked %d", sg.Index, shot.Boxes[0].Segment)
		}
	}
}

// TestBigFeedKeepsNewest checks a feed of 40,000 items, a publisher's
// whole archive: a version keeps its newest items, the watch says how
// many the feed had and how many were kept, and the next check tells the
// items added and edited among them, not the ones that only left them.
func TestBigFeedKeepsNewest(t *testing.T) {
	ctx := context.Background()
	e := newTrackEnv(t, "application/rss+xml")
	cfg := crawltest.BigFeedConfig{Items: 40000, Added: 50, Removed: 50, Edited: 400}
	v1, v2 := crawltest.BigFeed(cfg)
	edited := 0
	for _, it := range v2[cfg.Added:segmenter.DefaultMaxItems] {
		if it.Edited {
			edited++
		}
	}
	for i, body := range [][]byte{crawltest.BigFeedBody(cfg, v1), crawltest.BigFeedBody(cfg, v2)} {
		e.site.set(body)
		out, err := e.check(t)
		if err != nil {
			t.Fatal(err)
		}
		w, err := e.store.Watch(ctx, e.watch.UserID, e.watch.ID)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := e.store.Version(ctx, e.watch.ID, out.Seq)
		if err != nil {
			t.Fatal(err)
		}
		total := cfg.Items + i*(cfg.Added-cfg.Removed)
		if w.FeedItems != total || w.FeedItemsKept != segmenter.DefaultMaxItems || e.watch.FeedItems != total ||
			len(snap.Segments) != segmenter.DefaultMaxItems || snap.FeedItems != total {
			t.Fatalf("check %d: the watch says %d items, %d kept (the checked watch %d); the version has %d segments of %d items; want %d of %d",
				i+1, w.FeedItems, w.FeedItemsKept, e.watch.FeedItems, len(snap.Segments), snap.FeedItems, segmenter.DefaultMaxItems, total)
		}
		if i == 0 {
			continue
		}
		ops := map[changedigest.Op]int{}
		for _, c := range snap.Changes {
			ops[c.Op]++
		}
		if out.Result != crawl.Changed || ops[changedigest.OpInsert] != cfg.Added || ops[changedigest.OpUpdate] != edited || ops[changedigest.OpDelete] != 0 {
			t.Errorf("second check: %v, changes %v; want %d added, %d edited, none removed", out.Result, ops, cfg.Added, edited)
		}
	}
}

// cancelOnPrior is a track that ends the check's context when the check
// reads the previous version, which it does once the new one is fetched:
// the time limit runs out while the versions are compared.
type cancelOnPrior struct {
	*pet.Store
	cancel context.CancelFunc
}

func (c cancelOnPrior) PriorParts(ctx context.Context, id int64, m int) (*changedigest.Snapshot, changedigest.VersionParts, [][]string, error) {
	c.cancel()
	return c.Store.PriorParts(context.WithoutCancel(ctx), id, m)
}

// TestCheckStopsWhileComparing: a check whose context ends while its
// versions are compared stops there (the comparison used to run on,
// minutes past the limit), says so, and stores nothing.
func TestCheckStopsWhileComparing(t *testing.T) {
	e := newTrackEnv(t, "text/html")
	page := func(word string) []byte {
		var b bytes.Buffer
		b.WriteString("<html><body>")
		for i := range 20000 {
			fmt.Fprintf(&b, "<p>paragraph %d %s</p>", i, word)
		}
		b.WriteString("</body></html>")
		return b.Bytes()
	}
	e.site.set(page("one"))
	if _, err := e.check(t); err != nil {
		t.Fatal(err)
	}
	e.site.set(page("two"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := *e.pipeline
	p.Track = cancelOnPrior{Store: e.store, cancel: cancel}
	_, err := p.Check(ctx, e.watch)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped while comparing its versions") {
		t.Fatalf("got %v, want the check stopped while comparing", err)
	}
	if info, _ := e.store.Track(context.Background(), e.watch.ID); info.Versions != 1 {
		t.Errorf("%d versions stored, want the first one only", info.Versions)
	}
}
