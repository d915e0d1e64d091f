package pet

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/segmenter"
)

var (
	bigIndex     = flag.Bool("pet.bigindex", false, "search benchmark over an index of -pet.bigindex.docs segment versions (default 100,000) instead of 10,000")
	bigIndexDocs = flag.Int("pet.bigindex.docs", 100_000, "segment versions in the big search index")
	bigIndexDir  = flag.String("pet.bigindex.dir", "", "build the search benchmark's index in this directory and keep it; a later run with the same -pet.bigindex.docs uses it again")
)

// benchDirs are removed after the benchmarks ran.
var benchDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// mutate changes about frac of the segments of body (at least one): in
// each, one run of letters of the visible text (markup when there is no
// text) is replaced by other letters. It returns the new body and the
// changes, as a segmenter would locate them.
func mutate(r *rand.Rand, body []byte, snap *changedigest.Snapshot, frac float64) ([]byte, []changedigest.Change) {
	n := max(1, int(float64(len(snap.Segments))*frac+0.5))
	picked := r.Perm(len(snap.Segments))[:min(n, len(snap.Segments))]
	out := bytes.Clone(body)
	var changes []changedigest.Change
	for _, i := range picked {
		seg := snap.Segments[i]
		runs := letterRuns(out[seg.Start:seg.End], true)
		if len(runs) == 0 {
			runs = letterRuns(out[seg.Start:seg.End], false)
		}
		if len(runs) == 0 {
			continue
		}
		run := runs[r.IntN(len(runs))]
		old := string(out[seg.Start+run[0] : seg.Start+run[1]])
		for j := seg.Start + run[0]; j < seg.Start+run[1]; j++ {
			out[j] = byte('a' + r.IntN(26))
		}
		changes = append(changes, changedigest.Change{Segment: i, Path: seg.Path, Type: changedigest.ChangeContent,
			Op: changedigest.OpUpdate, OldText: old, NewText: string(out[seg.Start+run[0] : seg.Start+run[1]])})
	}
	return out, changes
}

// letterRuns finds runs of 4 or more ASCII letters in p, outside tags
// when text is true.
func letterRuns(p []byte, text bool) [][2]int {
	var runs [][2]int
	inTag, start := false, -1
	for i := 0; i <= len(p); i++ {
		c := byte(0)
		if i < len(p) {
			c = p[i]
		}
		letter := (c|0x20) >= 'a' && (c|0x20) <= 'z' && (!text || !inTag)
		if letter && start < 0 {
			start = i
		} else if !letter && start >= 0 {
			if i-start >= 4 {
				runs = append(runs, [2]int{start, i})
			}
			start = -1
		}
		switch c {
		case '<':
			inTag = true
		case '>':
			inTag = false
		}
	}
	return runs
}

// storageWarmup versions are stored before BenchmarkStorage measures.
const storageWarmup = 50

// BenchmarkStorage measures the disk a version costs when 5% of its
// segments changed (a word of text in each), against the raw page, over
// real page bodies cut by the real segmenter (-pet.segmenter=false: the
// simple splitter). One op stores one
// version; the first storageWarmup versions are not counted. The index
// is compacted before both measurements (see Compact) and counted by its
// segments in use: between Bleve's own merges it holds more.
func BenchmarkStorage(b *testing.B) {
	pages := []struct{ name, path string }{
		{"pandasthumb-16KB", filepath.Join("versions", "pandasthumb-homepage", "versions", "0000_2025-06-02T181930_af638c465c.html")},
		{"mozilla-hacks-142KB", filepath.Join("pages", "readability", "pages", "002", "source.html")},
		{"wikipedia-1MB", filepath.Join("pages", "readability", "pages", "wikipedia-2", "source.html")},
	}
	for _, pg := range pages {
		b.Run(pg.name, func(b *testing.B) {
			body, err := os.ReadFile(testenv.Corpus(b, pg.path))
			if err != nil {
				b.Fatal(err)
			}
			f := newFixture(b, func(s *Store) { s.KeepVersions = 0 })
			ctx := context.Background()
			minSeg := max(200, len(body)/60)
			// split cuts a version: the real segmenter along the
			// previous version's layout, or the fixed splitter.
			seg := segmenter.New()
			split := func(next []byte, prev *changedigest.Snapshot, prevBody []byte) *changedigest.Snapshot {
				if !*ingestSegmenter {
					return splitPage(next, minSeg)
				}
				hist := [][]string(nil)
				if prev != nil {
					hist = [][]string{prev.Hashes()}
				}
				out, err := seg.Detect(segmenter.Input{Body: next, Prev: prev, PrevBody: prevBody, History: hist})
				if err != nil {
					b.Fatal(err)
				}
				return out
			}
			snap := split(body, nil, nil)
			r := rand.New(rand.NewPCG(1, 2))
			step := func() {
				next, changes := mutate(r, body, snap, 0.05)
				nsnap := split(next, snap, body)
				if !*ingestSegmenter {
					nsnap.Changes = changes
				}
				nsnap.FetchedAt = f.clock.Add(time.Hour)
				if _, err := f.s.AddVersion(ctx, f.watch.ID, nsnap, next); err != nil {
					b.Fatal(err)
				}
				body, snap = next, nsnap
			}
			if _, err := f.s.AddVersion(ctx, f.watch.ID, snap, body); err != nil {
				b.Fatal(err)
			}
			// Measure the steady state, past the fixed costs of new databases.
			for range storageWarmup {
				step()
			}
			if err := f.s.Compact(ctx); err != nil {
				b.Fatal(err)
			}
			before, err := f.s.Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var raw int64
			versions := 0
			for b.Loop() {
				step()
				raw += int64(len(body))
				versions++
			}
			if err := f.s.Compact(ctx); err != nil {
				b.Fatal(err)
			}
			after, err := f.s.Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			index := after.IndexLiveBytes - before.IndexLiveBytes
			db := after.DBBytes - before.DBBytes
			per := float64(db+index) / float64(versions)
			b.ReportMetric(float64(len(snap.Segments)), "segments")
			b.ReportMetric(per, "B/version")
			b.ReportMetric(100*per/(float64(raw)/float64(versions)), "%raw")
			b.ReportMetric(float64(db)/float64(versions), "db-B/version")
			b.ReportMetric(float64(index)/float64(versions), "index-B/version")
			b.ReportMetric(float64(after.ChunkBytes-before.ChunkBytes)/float64(versions), "chunk-B/version")
		})
	}
}

// BenchmarkIngestPandasThumb stores the 222 real versions of the Panda's
// Thumb home page, segmented by the simple splitter, and reports the disk
// they take per version after the first, and the time per version
// (segmenting included). One op ingests them all: run it with
// -benchtime 1x. To measure the real thing, pass the segmenter as the
// segmentFunc.
// ingestSegmenter segments the benchmarks' versions with the real
// segmenter (the crawler's path) instead of a fixed splitter.
var ingestSegmenter = flag.Bool("pet.segmenter", true, "storage and ingest benchmarks: segment with the real segmenter")

func BenchmarkIngestPandasThumb(b *testing.B) {
	dir := testenv.Corpus(b, "versions", "pandasthumb-homepage", "versions")
	files, err := filepath.Glob(filepath.Join(dir, "*.html"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no versions in %s: %v", dir, err)
	}
	sort.Strings(files)
	var bodies [][]byte
	for _, name := range files {
		body, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	simple := func(body []byte, _ *changedigest.Snapshot, _ []byte, _ [][]string) (*changedigest.Snapshot, error) {
		return splitPage(body, 200), nil
	}
	seg := segmenter.New()
	real := func(body []byte, prev *changedigest.Snapshot, prevBody []byte, history [][]string) (*changedigest.Snapshot, error) {
		return seg.Detect(segmenter.Input{Body: body, Prev: prev, PrevBody: prevBody, History: history})
	}
	segment := simple
	if *ingestSegmenter {
		segment = real
	}
	var rep ingestReport
	for b.Loop() {
		f := newFixture(b, func(s *Store) { s.KeepVersions = 0 })
		rep = ingest(b, f.s, f.user.ID, bodies, segment, 1)
		f.s.Close()
	}
	per, share := rep.PerVersion()
	b.ReportMetric(float64(rep.Versions+1), "versions")
	b.ReportMetric(per, "B/version")
	b.ReportMetric(100*share, "%raw")
	b.ReportMetric(float64(rep.DBBytes)/float64(rep.Versions), "db-B/version")
	b.ReportMetric(float64(rep.IndexBytes)/float64(rep.Versions), "index-B/version")
	b.ReportMetric(float64(rep.Elapsed.Milliseconds())/float64(rep.Versions), "ms/version")
}

// searchIndex is the store the search benchmark queries, built once.
type searchIndex struct {
	s       *Store
	users   []int64
	watches map[int64][]int64 // by user
	first   time.Time
	span    time.Duration
	common  []string // frequent words
	rare    []string
	phrases []string
	docs    int
	build   time.Duration
}

var (
	searchOnce sync.Once
	searchIdx  *searchIndex
	searchErr  error
)

var sentenceRE = regexp.MustCompile(`[^.!?]+[.!?]`)

// corpusSentences collects the sentences of the paragraphs of the real
// pages.
func corpusSentences(tb testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(testenv.Corpus(tb, "pages", "readability", "pages"), "*", "source.html"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no readability pages: %v", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, name := range files {
		body, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for _, p := range paraRE.FindAll(body, -1) {
			for _, s := range sentenceRE.FindAllString(textOf(p), -1) {
				s = strings.TrimSpace(s)
				if len(s) >= 30 && len(s) <= 400 && !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// buildSearchIndex stores docs segment versions: 20 users with 5 watches
// each, versions of 200 segments whose texts are 1 to 3 real sentences,
// every segment new, fetched over a year, with changes of all types.
func buildSearchIndex(tb testing.TB, docs int) (*searchIndex, error) {
	if *bigIndexDir != "" {
		if si, err := loadSearchIndex(*bigIndexDir, docs); err == nil {
			return si, nil
		}
		os.RemoveAll(*bigIndexDir)
		si, err := buildSearchIndexIn(tb, *bigIndexDir, docs)
		if err != nil {
			return nil, err
		}
		return si, si.save(*bigIndexDir)
	}
	dir, err := os.MkdirTemp("", "pet-search-bench-")
	if err != nil {
		return nil, err
	}
	benchDirs = append(benchDirs, dir)
	return buildSearchIndexIn(tb, dir, docs)
}

// searchIndexFile holds what a kept search index was built with.
const searchIndexFile = "bench-index.json"

// searchIndexMeta is searchIndex without its store, as kept.
type searchIndexMeta struct {
	Users   []int64
	Watches map[int64][]int64
	First   time.Time
	Span    time.Duration
	Common  []string
	Rare    []string
	Phrases []string
	Docs    int
	Build   time.Duration
}

func (si *searchIndex) save(dir string) error {
	b, err := json.Marshal(searchIndexMeta{si.users, si.watches, si.first, si.span, si.common, si.rare, si.phrases, si.docs, si.build})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, searchIndexFile), b, 0o644)
}

// loadSearchIndex opens an index kept in dir, built with docs documents.
func loadSearchIndex(dir string, docs int) (*searchIndex, error) {
	b, err := os.ReadFile(filepath.Join(dir, searchIndexFile))
	if err != nil {
		return nil, err
	}
	var m searchIndexMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.Docs < docs || m.Docs > docs+200 {
		return nil, fmt.Errorf("the index in %s has %d documents", dir, m.Docs)
	}
	s := New(dir)
	s.NoSync, s.Logger, s.KeepVersions = true, quiet, 0
	if err := s.Open(context.Background()); err != nil {
		return nil, err
	}
	return &searchIndex{s: s, users: m.Users, watches: m.Watches, first: m.First, span: m.Span,
		common: m.Common, rare: m.Rare, phrases: m.Phrases, docs: m.Docs, build: m.Build}, nil
}

func buildSearchIndexIn(tb testing.TB, dir string, docs int) (*searchIndex, error) {
	sentences := corpusSentences(tb)
	s := New(dir)
	s.NoSync, s.Logger, s.KeepVersions = true, quiet, 0
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		return nil, err
	}
	si := &searchIndex{s: s, watches: map[int64][]int64{}, first: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), span: 365 * 24 * time.Hour}
	var wids []int64
	for u := range 20 {
		user := &changedigest.User{Name: fmt.Sprintf("user%d", u), DigestHour: -1}
		if err := s.CreateUser(ctx, user); err != nil {
			return nil, err
		}
		si.users = append(si.users, user.ID)
		for w := range 5 {
			watch := &changedigest.Watch{UserID: user.ID, URL: fmt.Sprintf("https://site%d.example/page%d", u, w)}
			if err := s.CreateWatch(ctx, watch); err != nil {
				return nil, err
			}
			si.watches[user.ID] = append(si.watches[user.ID], watch.ID)
			wids = append(wids, watch.ID)
		}
	}
	r := rand.New(rand.NewPCG(42, 42))
	freq := map[string]int{}
	const perVersion = 200
	versions := (docs + perVersion - 1) / perVersion
	start := time.Now()
	for v := range versions {
		var body bytes.Buffer
		snap := &changedigest.Snapshot{Status: 200, Kind: changedigest.KindPage,
			FetchedAt: si.first.Add(time.Duration(float64(si.span) * float64(v) / float64(versions)))}
		for i := range perVersion {
			var text strings.Builder
			for k := range 1 + r.IntN(3) {
				if k > 0 {
					text.WriteByte(' ')
				}
				text.WriteString(sentences[r.IntN(len(sentences))])
			}
			t := text.String()
			for _, w := range strings.Fields(strings.ToLower(t)) {
				freq[strings.Trim(w, `.,;:!?"'()`)]++
			}
			st := body.Len()
			fmt.Fprintf(&body, "<p>%s</p>\n", t)
			snap.Segments = append(snap.Segments, changedigest.Segment{Index: i, Hash: md5hex(body.Bytes()[st:]),
				Path: fmt.Sprintf("p[%d]", i), Text: t, Start: st, End: body.Len() - 1})
			if r.IntN(4) == 0 {
				snap.Changes = append(snap.Changes, changedigest.Change{Segment: i, Op: changedigest.OpUpdate,
					Type: changedigest.ChangeTypes[r.IntN(len(changedigest.ChangeTypes))]})
			}
		}
		// Round robin over users first, so every user has history.
		w := wids[(v%20)*5+(v/20)%5]
		if _, err := s.AddVersion(ctx, w, snap, body.Bytes()); err != nil {
			return nil, err
		}
		si.docs += perVersion
	}
	si.build = time.Since(start)
	// Query words: frequent ones and rare ones, of letters only.
	type wf struct {
		w string
		n int
	}
	var all []wf
	for w, n := range freq {
		if len(w) >= 4 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
			all = append(all, wf{w, n})
		}
	}
	slices.SortFunc(all, func(a, b wf) int { return b.n - a.n })
	// Leave out stop words, which the analyzer drops.
	en := s.idx.Mapping().AnalyzerNamed("en")
	var content []wf
	for _, x := range all {
		if len(en.Analyze([]byte(x.w))) > 0 {
			content = append(content, x)
		}
	}
	for i, x := range content {
		switch {
		case i < 300:
			si.common = append(si.common, x.w)
		case x.n >= 3 && x.n <= 20:
			si.rare = append(si.rare, x.w)
		}
	}
	if len(si.rare) == 0 && len(content) > 300 {
		// A big index has no word that rare: take the least frequent.
		tail := content[300:]
		for _, x := range tail[max(0, len(tail)-300):] {
			si.rare = append(si.rare, x.w)
		}
	}
	for range 300 {
		f := strings.Fields(sentences[r.IntN(len(sentences))])
		if len(f) >= 3 {
			i := r.IntN(len(f) - 2)
			si.phrases = append(si.phrases, strings.Join(f[i:i+3], " "))
		}
	}
	return si, nil
}

// queryKinds names the queries of queries, in turn.
var queryKinds = []string{"common word", "common word", "rare word", "two words", "phrase", "a month", "a type", "a watch"}

// queries makes a mix of user queries over the index.
func (si *searchIndex) queries(n int) []Query {
	r := rand.New(rand.NewPCG(7, 7))
	pick := func(ws []string) string { return ws[r.IntN(len(ws))] }
	var qs []Query
	for i := range n {
		uid := si.users[r.IntN(len(si.users))]
		q := Query{UserID: uid}
		switch i % 8 {
		case 0, 1:
			q.Text = pick(si.common)
		case 2:
			q.Text = pick(si.rare)
		case 3:
			q.Text = pick(si.common) + " " + pick(si.common)
		case 4:
			q.Text = `"` + strings.Trim(pick(si.phrases), `"`) + `"`
		case 5: // a month
			q.Text = pick(si.common)
			q.Since = si.first.Add(time.Duration(r.Int64N(int64(si.span))))
			q.Until = q.Since.Add(30 * 24 * time.Hour)
		case 6:
			q.Text = pick(si.common)
			q.Types = []changedigest.ChangeType{changedigest.ChangeContent}
		case 7:
			q.Text = pick(si.common)
			q.WatchID = si.watches[uid][r.IntN(len(si.watches[uid]))]
		}
		qs = append(qs, q)
	}
	return qs
}

// BenchmarkSearch measures query latency (p50, p95, p99) over an index of
// 10,000 segment versions, or 100,000 with -pet.bigindex (built once, in a
// temporary directory; that takes minutes). One op is one query from a
// mix of common words, rare words, two words, phrases, a month's range,
// a change type and one watch, for one user each ("user") or over all
// users ("all-users", an administrator's view and the worst case).
func BenchmarkSearch(b *testing.B) {
	docs := 10_000
	if *bigIndex {
		docs = *bigIndexDocs
	}
	searchOnce.Do(func() { searchIdx, searchErr = buildSearchIndex(b, docs) })
	if searchErr != nil {
		b.Fatal(searchErr)
	}
	si := searchIdx
	b.Logf("index: %d segment versions, built in %v (%.0f segments/s)", si.docs, si.build.Round(time.Second), float64(si.docs)/si.build.Seconds())
	for _, scope := range []string{"user", "all-users"} {
		b.Run(scope, func(b *testing.B) {
			qs := si.queries(1000)
			if scope == "all-users" {
				for i := range qs {
					qs[i].UserID, qs[i].WatchID = AnyUser, 0
				}
			}
			ctx := context.Background()
			var lat []time.Duration
			byKind := make([][]time.Duration, len(queryKinds))
			hits := 0
			i := 0
			for b.Loop() {
				q := qs[i%len(qs)]
				t0 := time.Now()
				res, err := si.s.Search(ctx, q)
				d := time.Since(t0)
				lat = append(lat, d)
				byKind[i%len(queryKinds)] = append(byKind[i%len(queryKinds)], d)
				i++
				if err != nil {
					b.Fatal(err)
				}
				hits += len(res.Hits)
			}
			pctOf := func(lat []time.Duration, p float64) float64 {
				slices.Sort(lat)
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			pct := func(p float64) float64 { return pctOf(lat, p) }
			var kinds []string
			for k, l := range byKind {
				if len(l) > 0 {
					kinds = append(kinds, fmt.Sprintf("%s %.1f/%.1f", queryKinds[k], pctOf(l, 0.5), pctOf(l, 0.95)))
				}
			}
			b.Logf("p50/p95 ms by query: %s", strings.Join(kinds, ", "))
			b.ReportMetric(float64(si.docs), "docs")
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(hits)/float64(len(lat)), "hits/query")
		})
	}
}

// BenchmarkAddVersion stores versions of a 30-paragraph page with one
// paragraph changed each time (fsync on, as in production).
func BenchmarkAddVersion(b *testing.B) {
	f := newFixture(b, func(s *Store) { s.NoSync = false })
	paras := make([]string, 30)
	for i := range paras {
		paras[i] = words(uint64(i), 30)
	}
	v := 0
	for b.Loop() {
		v++
		paras[v%30] = words(uint64(1000+v), 30)
		body := []byte(page(paras...))
		if _, err := f.s.AddVersion(context.Background(), f.watch.ID, snapshotOf(body), body); err != nil {
			b.Fatal(err)
		}
	}
}
