package segmenter

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// feedCorpusFiles lists the files matching pattern in a corpus folder,
// sorted (version files sort oldest first).
func feedCorpusFiles(tb testing.TB, dir, pattern string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	sort.Strings(files)
	return files
}

// feedUnpack extracts a .tar.xz of the corpus into a temporary directory.
func feedUnpack(tb testing.TB, archive string) string {
	tb.Helper()
	dir := tb.TempDir()
	tar := testenv.Tool(tb, "tar")
	if out, err := exec.Command(tar, "-xJf", archive, "-C", dir).CombinedOutput(); err != nil {
		tb.Fatalf("unpack %s: %v\n%s", archive, err, out)
	}
	return dir
}

func feedRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// feedDiffTally counts the changes of a series of diffs.
type feedDiffTally struct {
	pairs, inserts, deletes, updates, structural int
}

// feedVersion is one parsed version of a corpus feed.
type feedVersion struct {
	name string
	body []byte
	feed *Feed
}

func loadFeedVersion(t *testing.T, path string) feedVersion {
	t.Helper()
	body := feedRead(t, path)
	return feedVersion{filepath.Base(path), body, mustParseFeed(t, body)}
}

// checkFeedDiff diffs two versions with DiffFeeds and checks the changes.
func checkFeedDiff(t *testing.T, old, new feedVersion, tally *feedDiffTally) *changedigest.Diff {
	t.Helper()
	d, err := DiffFeeds(old.body, new.body)
	if err != nil {
		t.Fatalf("%s: %v", new.name, err)
	}
	checkFeedChanges(t, old, new, d.Changes, tally)
	return d
}

// checkFeedChanges checks what must hold for the changes between any two
// versions: a consistent item count, every modified item really modified
// (its texts differ, its hash changed), every added and removed item
// with its text, every item with a located byte range; and that each
// version compared with itself has no change.
func checkFeedChanges(t *testing.T, old, new feedVersion, changes []changedigest.Change, tally *feedDiffTally) {
	t.Helper()
	of, nf, name := old.feed, new.feed, new.name
	counts := map[changedigest.Op]int{}
	for _, c := range changes {
		counts[c.Op]++
		switch c.Op {
		case changedigest.OpUpdate:
			o, n := &of.Items[*c.OldItem], &nf.Items[*c.NewItem]
			if c.OldText == c.NewText || c.OldText == "" || c.NewText == "" || o.Hash() == n.Hash() {
				t.Errorf("%s: update of %q reports %q → %q", name, c.Title, c.OldText, c.NewText)
			}
			if c.Type == changedigest.ChangeStructural {
				tally.structural++
				if o.Link == n.Link {
					t.Errorf("%s: structural update of %q with the same link", name, c.Title)
				}
			}
		case changedigest.OpInsert:
			if c.NewText != nf.Items[*c.NewItem].SearchText() {
				t.Errorf("%s: insert of %q without its text", name, c.Title)
			}
		case changedigest.OpDelete:
			if c.OldText != of.Items[*c.OldItem].SearchText() {
				t.Errorf("%s: delete of %q without its text", name, c.Title)
			}
		}
	}
	if len(of.Items)-counts[changedigest.OpDelete] != len(nf.Items)-counts[changedigest.OpInsert] {
		t.Errorf("%s: %d items - %d deleted != %d items - %d inserted", name,
			len(of.Items), counts[changedigest.OpDelete], len(nf.Items), counts[changedigest.OpInsert])
	}
	for _, v := range []feedVersion{old, new} {
		for i, it := range v.feed.Items {
			if it.Start < 0 || it.End <= it.Start {
				t.Errorf("%s: item %d %q has no byte range", v.name, i, it.Title)
				break
			}
		}
		if self, sim := feedCompare(nil, v.feed, v.feed); len(self) != 0 || sim != 1 {
			t.Errorf("%s against itself: %d changes, similarity %v", v.name, len(self), sim)
		}
	}
	tally.pairs++
	tally.inserts += counts[changedigest.OpInsert]
	tally.deletes += counts[changedigest.OpDelete]
	tally.updates += counts[changedigest.OpUpdate]
}

// checkFeedSelf checks that a feed diffed with itself has no change.
func checkFeedSelf(t *testing.T, body []byte, name string) {
	t.Helper()
	d, err := DiffFeeds(body, body)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(d.Changes) != 0 || d.Similarity != 1 {
		t.Errorf("%s against itself: %d changes, similarity %v", name, len(d.Changes), d.Similarity)
	}
}

// checkFeedSeries checks each version of a history against the one
// before: with DiffFeeds for the first ones, then (the parse being the
// bulk of the cost) with the comparison on versions parsed once.
func checkFeedSeries(t *testing.T, files []string, viaDiffFeeds int) feedDiffTally {
	t.Helper()
	var tally feedDiffTally
	prev := loadFeedVersion(t, files[0])
	for i, f := range files[1:] {
		cur := loadFeedVersion(t, f)
		if i < viaDiffFeeds {
			checkFeedDiff(t, prev, cur, &tally)
		} else {
			changes, _ := feedCompare(nil, prev.feed, cur.feed)
			checkFeedChanges(t, prev, cur, changes, &tally)
		}
		prev = cur
	}
	t.Logf("%d version pairs: %d items added, %d removed, %d modified (%d only in their link)",
		tally.pairs, tally.inserts, tally.deletes, tally.updates, tally.structural)
	return tally
}

func TestFeedCorpusTimestampOnly(t *testing.T) {
	dir := testenv.Corpus(t, "feeds", "history", "pandasthumb-atom", "timestamp_only_pairs")
	as := feedCorpusFiles(t, dir, "pair*_a_*.xml")
	for _, a := range as {
		name := filepath.Base(a)
		bs, _ := filepath.Glob(filepath.Join(dir, strings.SplitN(name, "_a_", 2)[0]+"_b_*.xml"))
		if len(bs) != 1 {
			t.Fatalf("no single b file for %s", name)
		}
		t.Run(name, func(t *testing.T) {
			oldBody, newBody := feedRead(t, a), feedRead(t, bs[0])
			if bytes.Equal(oldBody, newBody) {
				t.Fatal("the pair is identical; the test would prove nothing")
			}
			d, err := DiffFeeds(oldBody, newBody)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Changes) != 0 || d.Similarity != 1 || d.Old.Segments == 0 {
				t.Errorf("%d changes (similarity %v) between builds differing only in <updated>: %+v", len(d.Changes), d.Similarity, d.Changes)
			}
		})
	}
}

// TestFeedCorpusPandasthumb diffs successive versions of a real Atom feed:
// the 40 plain versions, then (unless -short) all 246 from the archive.
func TestFeedCorpusPandasthumb(t *testing.T) {
	dir := testenv.Corpus(t, "feeds", "history", "pandasthumb-atom")
	series := map[string][]string{"versions_first40": feedCorpusFiles(t, filepath.Join(dir, "versions_first40"), "*.xml")}
	if !testing.Short() {
		series["all_246_versions"] = feedCorpusFiles(t, feedUnpack(t, filepath.Join(dir, "all_246_versions.tar.xz")), "versions/*.xml")
	}
	for name, files := range series {
		t.Run(name, func(t *testing.T) {
			tally := checkFeedSeries(t, files, 40)
			// Versions were kept only when an item changed: every pair
			// must show something, and the feed keeps ten items, so each
			// new post pushes one out.
			if tally.inserts+tally.updates+tally.deletes < tally.pairs {
				t.Errorf("%d changes over %d pairs of distinct versions", tally.inserts+tally.updates+tally.deletes, tally.pairs)
			}
			if tally.inserts != tally.deletes {
				t.Errorf("%d added but %d removed from a ten-item feed", tally.inserts, tally.deletes)
			}
		})
	}
}

// TestFeedCorpusNewsblur checks the NewsBlur fetch pairs against what
// NewsBlur's own tests expect: the number of stories known after both
// fetches (old items plus added ones), and the kind of edit made.
func TestFeedCorpusNewsblur(t *testing.T) {
	dir := testenv.Corpus(t, "feeds", "history", "newsblur-fixtures", "rss_feeds")
	tests := []struct {
		name, old, new      string
		items               int // items in each fetch
		stories             int // distinct stories after both fetches
		inserts, deletes    int
		content, structural int // modified items by type
		similarityAtLeast   float64
		warnings            bool
	}{
		// 1 changed word in two items' content, same ids.
		{"gawker", "gawker1.xml", "gawker2.xml", 38, 38, 0, 0, 2, 0, 0.99, false},
		// Every GUID and link changes (the blog moved host), the stories
		// do not: all 20 map, each with its new link.
		{"google ids all change", "google1.xml", "google2.xml", 20, 20, 0, 0, 0, 20, 0.99, false},
		// Not well-formed (a bare & in an attribute): parsed leniently.
		// One title edited; one item's id and link changed, text kept.
		{"slashdot not well-formed", "slashdot1.xml", "slashdot2.xml", 38, 38, 0, 0, 1, 1, 0.99, false},
		// One item re-issued under a new id and link with a one-word
		// edit, one title typo with a new tracking link.
		{"gothamist", "gothamist_aug_2009_1.xml", "gothamist_aug_2009_2.xml", 42, 42, 0, 0, 2, 0, 0.99, false},
		// Three new stories push three old ones out.
		{"motherjones", "motherjones1.xml", "motherjones2.xml", 10, 13, 3, 3, 0, 0, 0.6, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tally feedDiffTally
			d := checkFeedDiff(t, loadFeedVersion(t, filepath.Join(dir, tt.old)), loadFeedVersion(t, filepath.Join(dir, tt.new)), &tally)
			if d.Old.Segments != tt.items || d.New.Segments != tt.items {
				t.Errorf("items %d/%d, want %d", d.Old.Segments, d.New.Segments, tt.items)
			}
			if got := d.Old.Segments + tally.inserts; got != tt.stories {
				t.Errorf("%d stories after both fetches, want %d", got, tt.stories)
			}
			if tally.inserts != tt.inserts || tally.deletes != tt.deletes ||
				tally.updates-tally.structural != tt.content || tally.structural != tt.structural {
				t.Errorf("added %d removed %d content %d structural %d, want %d %d %d %d",
					tally.inserts, tally.deletes, tally.updates-tally.structural, tally.structural,
					tt.inserts, tt.deletes, tt.content, tt.structural)
			}
			if d.Similarity < tt.similarityAtLeast {
				t.Errorf("similarity %v, want ≥ %v", d.Similarity, tt.similarityAtLeast)
			}
		})
	}
}

// TestFeedCorpusSingle parses every real feed of feeds/single and compares
// titles and item counts with the parses stored beside them where there
// are some (rss-parser's expected outputs).
func TestFeedCorpusSingle(t *testing.T) {
	root := testenv.Corpus(t, "feeds", "single")
	// Files that are no feed: an HTML page, a redirect notice, and two
	// gzip files (a fetcher decodes Content-Encoding before parsing).
	notFeeds := map[string]string{
		"notafeed.html":                  "the root element is <html>",
		"unrecognized.rss":               "the root element is <head>",
		"compressed.xml":                 "gzip-compressed",
		"invalid-characters-gzipped.xml": "gzip-compressed",
	}
	var files []string
	files = append(files, feedCorpusFiles(t, filepath.Join(root, "node-feedparser-feeds", "feeds"), "*")...)
	files = append(files, feedCorpusFiles(t, filepath.Join(root, "rss-parser-feeds", "input"), "*")...)
	compared := 0
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			body := feedRead(t, path)
			f, err := ParseFeed(body)
			if want, ok := notFeeds[name]; ok {
				if !errors.Is(err, ErrNotFeed) || !strings.Contains(changedigest.ErrorMessage(err), want) {
					t.Errorf("error %v, want ErrNotFeed saying %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Items) == 0 {
				t.Fatal("no items")
			}
			last := 0
			for i, it := range f.Items {
				if it.Start == -1 {
					continue
				}
				if it.Start < last || it.End <= it.Start || it.End > len(body) {
					t.Errorf("item %d range [%d,%d)", i, it.Start, it.End)
				}
				last = it.End
			}
			checkFeedSelf(t, body, name)
			expected := filepath.Join(root, "rss-parser-feeds", "expected_output", strings.TrimSuffix(name, filepath.Ext(name))+".json")
			raw, err := os.ReadFile(expected)
			if err != nil || !strings.Contains(path, "rss-parser-feeds") {
				return
			}
			var want struct {
				Feed struct {
					Title *string           `json:"title"`
					Items []json.RawMessage `json:"items"`
				} `json:"feed"`
			}
			if err := json.Unmarshal(bytes.ToValidUTF8(raw, []byte("\ufffd")), &want); err != nil {
				t.Fatalf("expected output: %v", err)
			}
			if len(f.Items) != len(want.Feed.Items) {
				t.Errorf("%d items, rss-parser found %d", len(f.Items), len(want.Feed.Items))
			}
			// rss-parser read Latin-1 feeds as UTF-8 (its titles hold
			// U+FFFD); compare the titles it decoded.
			if wt := want.Feed.Title; wt != nil && utf8.ValidString(*wt) && !strings.ContainsRune(*wt, '\ufffd') {
				if feedNormSpace(*wt) != f.Title {
					t.Errorf("title %q, rss-parser %q", f.Title, feedNormSpace(*wt))
				}
			}
			compared++
		})
	}
	if compared < 25 {
		t.Errorf("only %d feeds compared with expected parses", compared)
	}
}

// TestFeedCorpusChristianDaily runs the derived Atom feed (every entry
// re-dated at each scrape) and its JSON Feed twin.
func TestFeedCorpusChristianDaily(t *testing.T) {
	dir := testenv.Corpus(t, "feeds", "history", "christian-daily-reporter-derived-atom")
	series := map[string][]string{"atom versions_first60": feedCorpusFiles(t, filepath.Join(dir, "versions_first60"), "*.xml")}
	if !testing.Short() {
		series["json feed first 60"] = feedCorpusFiles(t, feedUnpack(t, filepath.Join(dir, "all_versions_jsonfeed.tar.xz")), "*/*.json")[:60]
	}
	for name, files := range series {
		t.Run(name, func(t *testing.T) {
			checkFeedSeries(t, files, 10)
			if !strings.HasPrefix(name, "atom") {
				return // the JSON Feed versions carry no dates
			}
			// A copy re-dated throughout is no change either.
			for _, f := range files[:10] {
				body := feedRead(t, f)
				redated := feedRedate(body)
				if bytes.Equal(redated, body) {
					t.Fatalf("%s has no date to change", filepath.Base(f))
				}
				if d, err := DiffFeeds(body, redated); err != nil || len(d.Changes) != 0 {
					t.Errorf("%s re-dated: %v, %+v", filepath.Base(f), err, d)
				}
			}
		})
	}
}

var (
	feedXMLDate  = regexp.MustCompile(`<(updated|published)>[^<]*</(updated|published)>`)
	feedJSONDate = regexp.MustCompile(`("date_(?:modified|published)"\s*:\s*)"[^"]*"`)
)

// feedRedate sets every entry and feed date of an Atom or JSON feed to
// one other time.
func feedRedate(b []byte) []byte {
	b = feedXMLDate.ReplaceAll(b, []byte("<$1>2030-01-02T03:04:05Z</$2>"))
	return feedJSONDate.ReplaceAll(b, []byte(`$1"2030-01-02T03:04:05Z"`))
}

// TestFeedMatchThresholdOnCorpus is the measurement behind the mapping
// thresholds. Same stories: items that kept their GUID between two
// versions but whose text changed (pandasthumb's history and the newsblur
// pairs); their score must reach feedMatchThreshold. Different stories:
// every pair of distinct items within one feed of feeds/single; they must
// stay below it but for a few near-identical ones, and below
// feedRepublishThreshold unless their titles are the same.
func TestFeedMatchThresholdOnCorpus(t *testing.T) {
	root := testenv.Corpus(t, "feeds")
	var series [][]string
	pt := filepath.Join(root, "history", "pandasthumb-atom")
	if testing.Short() {
		series = append(series, feedCorpusFiles(t, filepath.Join(pt, "versions_first40"), "*.xml"))
	} else {
		series = append(series, feedCorpusFiles(t, feedUnpack(t, filepath.Join(pt, "all_246_versions.tar.xz")), "versions/*.xml"))
	}
	nb := filepath.Join(root, "history", "newsblur-fixtures", "rss_feeds")
	for _, p := range []string{"gawker", "gothamist_aug_2009_", "motherjones", "slashdot"} {
		series = append(series, []string{filepath.Join(nb, p+"1.xml"), filepath.Join(nb, p+"2.xml")})
	}
	var same []float64
	for _, files := range series {
		var prev *Feed
		for _, f := range files {
			cur := mustParseFeed(t, feedRead(t, f))
			if prev != nil {
				byGUID := map[string]*FeedItem{}
				for i := range prev.Items {
					byGUID[prev.Items[i].GUID] = &prev.Items[i]
				}
				for i := range cur.Items {
					n := &cur.Items[i]
					if o := byGUID[n.GUID]; o != nil && n.GUID != "" && o.Hash() != n.Hash() {
						a, b := feedTokenize(o), feedTokenize(n)
						same = append(same, feedScore(&a, &b))
					}
				}
			}
			prev = cur
		}
	}

	var different []float64
	var sameTitleAbove int
	for _, dir := range []string{filepath.Join(root, "single", "node-feedparser-feeds", "feeds"), filepath.Join(root, "single", "rss-parser-feeds", "input")} {
		for _, path := range feedCorpusFiles(t, dir, "*") {
			f, err := ParseFeed(feedRead(t, path))
			if err != nil || len(f.Items) > 200 {
				continue // not feeds; the 730-item podcast would dominate
			}
			toks := make([]feedTokens, len(f.Items))
			for i := range f.Items {
				toks[i] = feedTokenize(&f.Items[i])
			}
			for i := range f.Items {
				for j := i + 1; j < len(f.Items); j++ {
					if f.Items[i].Hash() == f.Items[j].Hash() {
						continue // the same item twice, not two stories
					}
					s := feedScore(&toks[i], &toks[j])
					different = append(different, s)
					if s >= feedRepublishThreshold {
						if !strings.EqualFold(f.Items[i].Title, f.Items[j].Title) {
							t.Errorf("%s: %q and %q score %.3f ≥ %.2f", filepath.Base(path), f.Items[i].Title, f.Items[j].Title, s, feedRepublishThreshold)
						}
						sameTitleAbove++
					}
				}
			}
		}
	}

	below := func(xs []float64, th float64) (n int) {
		for _, x := range xs {
			if x < th {
				n++
			}
		}
		return n
	}
	for _, th := range []float64{0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95} {
		t.Logf("threshold %.2f: %d of %d edited stories below, %d of %d pairs of different stories at or above",
			th, below(same, th), len(same), len(different)-below(different, th), len(different))
	}
	if len(same) < 10 || len(different) < 10000 {
		t.Fatalf("too little material: %d edits, %d pairs", len(same), len(different))
	}
	if missed := below(same, feedMatchThreshold); float64(missed) > 0.02*float64(len(same)) {
		t.Errorf("%d of %d edited stories score below %.2f", missed, len(same), feedMatchThreshold)
	}
	if merged := len(different) - below(different, feedMatchThreshold); float64(merged) > 0.001*float64(len(different)) {
		t.Errorf("%d of %d pairs of different stories score %.2f or more", merged, len(different), feedMatchThreshold)
	}
	t.Logf("%d pairs of different stories with the same title score ≥ %.2f", sameTitleAbove, feedRepublishThreshold)
}

// TestFeedCorpusDetectFlipBack runs stretches of pandasthumb's history
// through DetectFeed as the track would, with the hashes of the last five
// versions: changes are those of DiffFeeds less the items whose new text
// the track has seen before. In version 80 a post drops the <div> that
// version 79 wrapped around its text, going back to its text of version
// 78: no change; in version 162 a post returns to an earlier wording.
func TestFeedCorpusDetectFlipBack(t *testing.T) {
	if testing.Short() {
		t.Skip("unpacks the full pandasthumb history")
	}
	dir := testenv.Corpus(t, "feeds", "history", "pandasthumb-atom")
	files := feedCorpusFiles(t, feedUnpack(t, filepath.Join(dir, "all_246_versions.tar.xz")), "versions/*.xml")
	if len(files) != 246 {
		t.Fatalf("%d versions, want 246", len(files))
	}
	wantDropped := map[string]string{
		"0080": "Jason Rosenhouse and Phil Halper: creationist information theory",
		"0162": "The DI site S&C says something sensible",
	}
	dropped := map[string]string{}
	for _, window := range [][2]int{{70, 85}, {150, 165}} {
		var prev *changedigest.Snapshot
		var prevBody []byte
		var history [][]string
		for _, f := range files[window[0]:window[1]] {
			body := feedRead(t, f)
			snap, err := DetectFeed(Input{Body: body, Prev: prev, PrevBody: prevBody, History: history})
			if err != nil {
				t.Fatal(err)
			}
			if prev != nil {
				d, err := DiffFeeds(prevBody, body)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]bool{}
				for _, row := range history {
					for _, h := range row {
						seen[h] = true
					}
				}
				kept := map[string]bool{}
				for _, c := range snap.Changes {
					kept[c.Path+string(c.Op)] = true
				}
				for _, c := range d.Changes {
					switch {
					case kept[c.Path+string(c.Op)]:
					case c.Op != changedigest.OpDelete && seen[snap.Segments[*c.NewItem].Hash]:
						dropped[filepath.Base(f)[:4]] = c.Title
					default:
						t.Errorf("%s: %s of %q dropped though new", filepath.Base(f), c.Op, c.Title)
					}
				}
				if len(snap.Changes) > len(d.Changes) {
					t.Errorf("%s: detect found %d changes, diff %d", filepath.Base(f), len(snap.Changes), len(d.Changes))
				}
			}
			history = append([][]string{snap.Hashes()}, history...)
			if len(history) > 5 {
				history = history[:5]
			}
			prev, prevBody = snap, body
		}
	}
	if len(dropped) != len(wantDropped) {
		t.Errorf("dropped %q, want %q", dropped, wantDropped)
	}
	for v, title := range wantDropped {
		if dropped[v] != title {
			t.Errorf("version %s: dropped %q, want %q", v, dropped[v], title)
		}
	}
}
