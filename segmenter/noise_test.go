package segmenter

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

func TestGeneratedOnly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     bool
	}{
		{"uuid id", `id="a1b2c3d4-0e1f-4a5b-8c7d-9e0f1a2b3c4d"`, `id="f9e8d7c6-b5a4-4c3d-9e2f-1a0b9c8d7e6f"`, true},
		{"data-id counter", `data-id="10423"`, `data-id="10424"`, true},
		{"cache buster", `<script src="/js/analytics.js?v=49">`, `<script src="/js/analytics.js?v=52">`, true},
		{"timestamp query on a stylesheet", `href="/theme.css?1700674753"`, `href="/theme.css?1700732253"`, true},
		{"hashed file name", `<link href="/assets/app-3f2a9c81d0e4.css" rel="stylesheet">`, `<link href="/assets/app-77b1e04a9f3c.css" rel="stylesheet">`, true},
		{"bundler's hash of letters", `<link href="/cdn/assets/c1/app.DKIAYdjR.js" rel="modulepreload">`, `<link href="/cdn/assets/c1/app.BVzB2ZII.js" rel="modulepreload">`, true},
		{"bundler's hash with a dash", `<script src="/assets/vendor.BQnb-lpm.js">`, `<script src="/assets/vendor.Dm7KKd2j.js">`, true},
		{"another minified file", `<script src="/assets/app.min.js">`, `<script src="/assets/app.max.js">`, false},
		{"another bundle", `<script src="/assets/app.DKIAYdjR.js">`, `<script src="/assets/cart.BVzB2ZII.js">`, false},
		{"compressed asset", `<script src="/c/reader-0ec0875b3855b346e1ce56cff813b7c1.js.gzip?1685957718">`, `<script src="/c/reader-0ec0875b3855b346e1ce56cff813b7c1.js?1685957718">`, true},
		{"nonce", `<script nonce="r4nd0mN0nc3==">`, `<script nonce="Zq81Lm0pQ2x">`, true},
		{"hashed class", `class="card css-1x9k2qa"`, `class="card css-8b3n7wd"`, true},
		{"session in a link", `href="/page?id=5&sid=9a8b7c6d5e4f3a2b"`, `href="/page?id=5&sid=1f2e3d4c5b6a7980"`, true},
		{"script counter", `<script>var n = __fn("48"); run(1700000000);</script>`, `<script>var n = __fn("31"); run(1700000999);</script>`, true},
		{"tracking parameter dropped", `href="http://www.linkedin.com/in/someone?trk=shareTw"`, `href="http://www.linkedin.com/in/someone"`, true},
		{"link target changed", `href="/news/2024/election"`, `href="/news/2024/football"`, false},
		{"article number in a link", `href="/article/123"`, `href="/article/124"`, false},
		{"page parameter of a link", `href="/list?page=2"`, `href="/list?page=3"`, false},
		{"colour", `style="color:#ff0000"`, `style="color:#00ff00"`, false},
		{"class word", `class="no"`, `class="no obsolete"`, false},
		{"new code", `<script>track(1);</script>`, `<script>track(1); steal(document.cookie);</script>`, false},
		{"another script file", `<script src="/js/a.js?v=1">`, `<script src="/js/b.js?v=1">`, false},
		{"attribute added", `class="x"`, `class="x" id="a1b2c3d4e5"`, false},
		{"same", `id="x"`, `id="x"`, false},
		{"script counter, code with quotes in an attribute", `<script data-source="return typeof R === "function";"> t(__fn("9"));`,
			`<script data-source="return typeof R === "function";"> t(__fn("10"));`, true},
		{"new code, code with quotes in an attribute", `<script data-source="return typeof R === "function";"> t(__fn("9"));`,
			`<script data-source="return typeof R === "object";"> t(__fn("9"));`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := generatedOnly(tc.old, tc.new); got != tc.want {
				t.Errorf("generatedOnly(%q, %q) = %v, want %v", tc.old, tc.new, got, tc.want)
			}
		})
	}
}

func TestRandom(t *testing.T) {
	for s, want := range map[string]bool{
		"d4c716d490587f39": true, "1700674753": true, "bdVaJaX9": true, "1x9k2qa": true,
		"firefox117": false, "opera92": false, "election": false, "2024": false, "Kommentare": false, "ffffff": false,
	} {
		if got := random(s); got != want {
			t.Errorf("random(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestMarkRepeated(t *testing.T) {
	var cs []changedigest.Change
	for i := range 5 {
		cs = append(cs, changedigest.Change{Type: changedigest.ChangeCosmetic, Op: changedigest.OpUpdate,
			Path: fmt.Sprintf("table|tr[%d]|td", i), OldText: `class="no"`, NewText: `class="no obsolete"`})
	}
	cs = append(cs, changedigest.Change{Type: changedigest.ChangeCosmetic, Op: changedigest.OpUpdate,
		Path: "p", OldText: `class="a"`, NewText: `class="b"`})
	for i := range 3 {
		cs = append(cs, changedigest.Change{Type: changedigest.ChangeStructural, Op: changedigest.OpUpdate,
			Path: fmt.Sprintf("ul|li[%d]|a", i), OldText: fmt.Sprintf(`href="/story/%d"`, 10+i), NewText: fmt.Sprintf(`href="/story/%d"`, 20+i)})
	}
	markRepeated(cs)
	for _, c := range cs[6:] {
		if c.Noise != "" {
			t.Errorf("links to other stories are not one repeated edit: %s: %q", c.Path, c.Noise)
		}
	}
	if cs[0].Noise != "" || cs[5].Noise != "" {
		t.Errorf("the first of a repeated edit and a single edit must be told: %q, %q", cs[0].Noise, cs[5].Noise)
	}
	for _, c := range cs[1:5] {
		if !strings.HasPrefix(c.Noise, NoiseRepeated) || !strings.Contains(c.Noise, "table|tr[0]|td") {
			t.Errorf("repeat at %s: noise %q, want a repeated edit pointing to the first", c.Path, c.Noise)
		}
	}
}

// A theme that renames a tag at every section, and anchors renumbered
// after a new section, are one edit each; links to other pages are not.
func TestMarkRepeatedRenames(t *testing.T) {
	var cs []changedigest.Change
	for i := range 4 {
		cs = append(cs, changedigest.Change{Type: changedigest.ChangeStructural, Op: changedigest.OpUpdate,
			Path: fmt.Sprintf("main|div[%d]", i), OldText: fmt.Sprintf(`<div class="section" id="id%d">`, i+8),
			NewText: fmt.Sprintf(`<section id="id%d">`, i+8)})
	}
	for i := range 3 {
		cs = append(cs, changedigest.Change{Type: changedigest.ChangeStructural, Op: changedigest.OpUpdate,
			Path: fmt.Sprintf("main|h2[%d]|a", i), OldText: fmt.Sprintf(`href="#id%d"`, i+8), NewText: fmt.Sprintf(`href="#id%d"`, i+9)})
	}
	for i := range 3 {
		cs = append(cs, changedigest.Change{Type: changedigest.ChangeStructural, Op: changedigest.OpUpdate,
			Path: fmt.Sprintf("ul|li[%d]|a", i), OldText: fmt.Sprintf(`href="/story/%d"`, 8+i), NewText: fmt.Sprintf(`href="/story/%d"`, 9+i)})
	}
	markRepeated(cs)
	for i, c := range cs {
		want := i != 0 && i != 4 && i < 7
		if got := c.Noise != ""; got != want {
			t.Errorf("%s %q -> %q: noise %q, want noise %v", c.Path, c.OldText, c.NewText, c.Noise, want)
		}
	}
}

func TestMarkVolatile(t *testing.T) {
	counter := func(n int) changedigest.Change {
		return changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Path: "body|p-stats",
			OldText: fmt.Sprintf("%d Kommentare, updated 2 hours ago", n), NewText: fmt.Sprintf("%d Kommentare, updated 3 hours ago", n+1)}
	}
	edit := changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Path: "body|p-stats",
		OldText: "42 Kommentare", NewText: "42 Kommentare: the mayor resigned"}
	var recent [][]changedigest.Change
	for i := range 19 {
		recent = append(recent, []changedigest.Change{counter(i)})
	}
	cs := []changedigest.Change{counter(100), edit}
	markVolatile(cs, recent)
	if cs[0].Noise != "volatile location: changes at 20 of the last 20 checks" {
		t.Errorf("counter at a volatile location: noise %q", cs[0].Noise)
	}
	if cs[1].Noise != "" {
		t.Errorf("a real edit at a volatile location must be told, got noise %q", cs[1].Noise)
	}
	// A list reordered at every check (a "most read" box): its moves
	// are noise there too, an edit of its words is not.
	move := changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpMove, Path: "body|aside|ol|li",
		OldText: "Storm closes bridge", NewText: "Storm closes bridge"}
	var shuffled [][]changedigest.Change
	for range 19 {
		shuffled = append(shuffled, []changedigest.Change{move})
	}
	ms := []changedigest.Change{move, {Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Path: "body|aside|ol|li", OldText: "Storm closes bridge", NewText: "Storm closes bridge for a week"}}
	markVolatile(ms, shuffled)
	if !strings.HasPrefix(ms[0].Noise, "volatile location") || ms[1].Noise != "" {
		t.Errorf("moves at every check: noise %q; an edit there: noise %q", ms[0].Noise, ms[1].Noise)
	}
	// A location that calmed down is told again.
	calm := make([][]changedigest.Change, 19)
	for i := 0; i < 4; i++ {
		calm[i] = []changedigest.Change{counter(i)}
	}
	cs = []changedigest.Change{counter(200)}
	markVolatile(cs, calm)
	if cs[0].Noise != "" {
		t.Errorf("a location that changed at 4 of 19 checks is not volatile, got %q", cs[0].Noise)
	}
	// Too short a history learns nothing.
	cs = []changedigest.Change{counter(300)}
	markVolatile(cs, recent[:NoiseVolatileMin-1])
	if cs[0].Noise != "" {
		t.Errorf("with %d versions nothing is volatile yet, got %q", NoiseVolatileMin-1, cs[0].Noise)
	}
}

// TestRecentFrom reads the recent changes only for a version with a change
// that could be marked volatile (a number ticked, where no counter word
// makes it noise at once), and a failed read fails the detection.
func TestRecentFrom(t *testing.T) {
	page := func(count, text string) []byte {
		return []byte("<html><body><h1>Town news</h1><p class=stats>Tickets left: " + count + "</p><p>" + text + "</p></body></html>")
	}
	s := New()
	prevBody := page("41", "The council met on Monday to talk about the new bridge over the river.")
	prev, err := s.Detect(Input{Body: prevBody})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	recent := func() ([][]changedigest.Change, error) { calls++; return nil, nil }
	for _, tc := range []struct {
		name  string
		body  []byte
		reads int
	}{
		{"a counter ticked", page("42", "The council met on Monday to talk about the new bridge over the river."), 1},
		{"a sentence rewritten", page("41", "The mayor resigned on Tuesday after a long row about the bridge."), 0},
	} {
		calls = 0
		if _, err := s.Detect(Input{Body: tc.body, Prev: prev, PrevBody: prevBody, RecentFrom: recent}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if calls != tc.reads {
			t.Errorf("%s: the recent changes were read %d times, want %d", tc.name, calls, tc.reads)
		}
	}
	failed := errors.New("the store is closed")
	_, err = s.Detect(Input{Body: page("43", "The council met on Monday to talk about the new bridge over the river."),
		Prev: prev, PrevBody: prevBody, RecentFrom: func() ([][]changedigest.Change, error) { return nil, failed }})
	if !errors.Is(err, failed) {
		t.Errorf("a failed read of the recent changes gives %v", err)
	}
}

func TestSimhash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("the a of council city river bridge budget school park election vote mayor street festival " +
		"museum library tram bus housing rent market harbour museum police fire water energy climate")
	text := func(n int) []string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return ws
	}
	base := text(800)
	near := append([]string(nil), base...)
	near[400] = "resigned"
	other := text(800)
	dist := func(a, b []string) int {
		x := Simhash(strings.Join(a, " ")) ^ Simhash(strings.Join(b, " "))
		n := 0
		for ; x != 0; x &= x - 1 {
			n++
		}
		return n
	}
	if d := dist(base, near); d > 6 {
		t.Errorf("one word changed in 800: simhash distance %d, want ≤ 6", d)
	}
	if d := dist(base, other); d < 20 {
		t.Errorf("unrelated texts: simhash distance %d, want ≥ 20", d)
	}
}

func TestSignificance(t *testing.T) {
	page := func(paras ...string) []byte {
		return []byte("<html><body><main>" + strings.Join(paras, "") + "</main><footer><p>© 2026 City Council · 1234 visits</p></footer></body></html>")
	}
	lorem := func(seed int) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 9))
		vocab := strings.Fields("council budget river bridge school park election mayor street festival museum library tram housing market")
		var sb strings.Builder
		sb.WriteString("<p>")
		for range 80 {
			sb.WriteString(vocab[rng.IntN(len(vocab))] + " ")
		}
		sb.WriteString("</p>")
		return sb.String()
	}
	data := `<ul><li><a href="/files/wells-2016.csv">Well data (CSV, 2 MB)</a></li></ul>`
	base := page(lorem(1), lorem(2), data, lorem(3), lorem(4), lorem(5))
	typo := []byte(strings.Replace(string(base), "council", "councel", 1))
	counter := []byte(strings.Replace(string(base), "1234 visits", "1235 visits", 1))
	image := []byte(strings.Replace(string(base), "<main>", `<main><figure><img src="/flood.jpg" alt=""></figure>`, 1))
	major := page(lorem(1), lorem(6), data, lorem(7), lorem(8), lorem(5))
	dataGone := []byte(strings.Replace(string(base), data, "", 1))
	s := New()
	sig := func(name string, b []byte) float64 {
		d, err := s.Diff(base, b, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: significance %.3f, %d changes", name, d.Significance, len(d.Changes))
		return d.Significance
	}
	if sig("same", base) != 0 {
		t.Error("a page compared with itself must have significance 0")
	}
	small := max(sig("typo", typo), sig("footer counter", counter))
	for name, b := range map[string][]byte{"image added": image, "three paragraphs rewritten": major, "data set removed": dataGone} {
		if big := sig(name, b); big <= small || big < 0.2 {
			t.Errorf("%s: significance %.3f, want ≥ 0.2 and above the small edits (%.3f)", name, big, small)
		}
	}
	if small >= 0.05 {
		t.Errorf("a typo or a footer counter: significance %.3f, want < 0.05", small)
	}
}

// TestInjectedEditsNotNoise runs the injection set through Diff (which
// classifies noise): every injected edit that is found must not be noise.
func TestInjectedEditsNotNoise(t *testing.T) {
	if testing.Short() {
		t.Skip("the injection set takes a while")
	}
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	sort.Strings(files)
	s := New()
	found, noise := 0, 0
	for pi, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		injs := injections(src, rand.New(rand.NewPCG(uint64(pi), 7)))
		injs = append(injs, hardInjections(src, rand.New(rand.NewPCG(uint64(pi), 11)))...)
		for _, inj := range injs {
			if inj.typ == "" {
				continue
			}
			d, err := s.Diff(src, inj.src, "")
			if err != nil {
				t.Fatalf("%s: %s: %v", filepath.Base(filepath.Dir(f)), inj.name, err)
			}
			for _, c := range d.Changes {
				if string(c.Type) == inj.typ && string(c.Op) == inj.op &&
					strings.Contains(c.OldText, inj.oldWord) && strings.Contains(c.NewText, inj.newWord) {
					found++
					if c.Noise != "" {
						noise++
						t.Errorf("%s: %s: the injected edit is marked noise %q: %.80q → %.80q",
							filepath.Base(filepath.Dir(f)), inj.name, c.Noise, c.OldText, c.NewText)
					}
					break
				}
			}
		}
	}
	t.Logf("injected edits found through Diff: %d, marked noise: %d", found, noise)
}

// TestNoiseHistories walks the real page histories version by version as
// the check pipeline does (previous version, signature matrix, recent
// changes) and counts, against the visible text of each version:
// versions whose text is unchanged but that have changes that are told
// (counted), and changed words (bag of words of all visible text) that
// are only in noise changes: none but dates and counters at volatile
// locations (counted apart).
func TestNoiseHistories(t *testing.T) {
	if testing.Short() {
		t.Skip("walks every corpus history")
	}
	root := testenv.Corpus(t, "versions")
	dirs := historyDirs(root, 10)
	if len(dirs) == 0 {
		t.Skip("no histories of 10 or more versions under " + root)
	}
	s := New()
	var tot historyCount
	for _, dir := range dirs {
		c := walkHistory(t, s, dir)
		name, _ := filepath.Rel(root, dir)
		t.Logf("%-50s %s", name, c)
		tot.add(c)
		if c.lostWords > 0 {
			t.Errorf("%s: %d changed words are only in noise changes other than volatile locations", name, c.lostWords)
		}
	}
	t.Logf("%-50s %s", "all", tot)
}

type historyCount struct {
	versions, withChanges, told                int
	unchanged, unchangedChanges, unchangedTold int
	changes, noise                             int
	changedWords, lostWords, volatileWords     int
	printed                                    int // versions whose significance used a kept print
}

func (c *historyCount) add(o historyCount) {
	c.versions += o.versions
	c.withChanges += o.withChanges
	c.told += o.told
	c.printed += o.printed
	c.unchanged += o.unchanged
	c.unchangedChanges += o.unchangedChanges
	c.unchangedTold += o.unchangedTold
	c.changes += o.changes
	c.noise += o.noise
	c.changedWords += o.changedWords
	c.lostWords += o.lostWords
	c.volatileWords += o.volatileWords
}

func (c historyCount) String() string {
	return fmt.Sprintf("versions %d: with changes %d, told %d; text unchanged %d (with changes %d, told %d); changes %d, noise %d; changed words %d, only in noise %d (+ %d dates and counters at volatile locations); significance from a kept print %d",
		c.versions, c.withChanges, c.told, c.unchanged, c.unchangedChanges, c.unchangedTold, c.changes, c.noise, c.changedWords, c.lostWords, c.volatileWords, c.printed)
}

func walkHistory(t *testing.T, s *Segmenter, dir string) historyCount {
	files, _ := filepath.Glob(filepath.Join(dir, "*.html"))
	sort.Strings(files)
	var (
		c        historyCount
		prev     *changedigest.Snapshot
		prevBody []byte
		prevText []string
		history  [][]string
		recent   [][]changedigest.Change
	)
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Sniff(body); err != nil {
			continue // a capture that is not a page (an error message)
		}
		// The recent changes are read only when a change could be marked
		// volatile; the check below gives them eagerly.
		in := Input{Body: body, Prev: prev, PrevBody: prevBody, History: history}
		if recent != nil {
			in.RecentFrom = func() ([][]changedigest.Change, error) { return recent, nil }
		}
		snap, err := s.Detect(in)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		main, all := pageTexts(body)
		text := wordsOf(all)
		if snap.Print != nil {
			// The print kept for the next version is the one a fresh
			// read of the body gives, and so is the significance found
			// with the previous version's kept print.
			if want := printOf(main, all); *snap.Print != want {
				t.Errorf("%s: kept text print %+v, want %+v", f, *snap.Print, want)
			}
			if prev != nil && prev.Print != nil {
				bare := *prev
				bare.Print = nil
				again, err := s.Detect(Input{Body: body, Prev: &bare, PrevBody: prevBody, History: history, Recent: recent})
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if again.Significance != snap.Significance {
					t.Errorf("%s: significance %v with the kept print, %v without", f, snap.Significance, again.Significance)
				}
				if !reflect.DeepEqual(again.Changes, snap.Changes) {
					t.Errorf("%s: the changes differ with the recent changes given and read when needed", f)
				}
				c.printed++
			}
		}
		if prev != nil {
			c.versions++
			told := 0
			var toldOld, toldNew, allOld, allNew, volOld, volNew []string
			for _, ch := range snap.Changes {
				c.changes++
				// A change whose text reads the same before and after (a
				// link's class changed) tells no changed word, whether it
				// is noise or not.
				if markupOnly(ch) || ch.OldText == ch.NewText {
					if ch.Noise != "" {
						c.noise++
					} else {
						told++
					}
					continue
				}
				allOld, allNew = append(allOld, wordsOf(ch.OldText)...), append(allNew, wordsOf(ch.NewText)...)
				if ch.Noise != "" {
					c.noise++
					if strings.HasPrefix(ch.Noise, "volatile location") {
						volOld, volNew = append(volOld, wordsOf(ch.OldText)...), append(volNew, wordsOf(ch.NewText)...)
					}
					continue
				}
				told++
				toldOld, toldNew = append(toldOld, wordsOf(ch.OldText)...), append(toldNew, wordsOf(ch.NewText)...)
			}
			if len(snap.Changes) > 0 {
				c.withChanges++
			}
			if told > 0 {
				c.told++
			}
			del, ins := bagDiff(prevText, text)
			if len(del)+len(ins) == 0 {
				c.unchanged++
				if len(snap.Changes) > 0 {
					c.unchangedChanges++
				}
				if told > 0 {
					c.unchangedTold++
					if os.Getenv("NOISE_DEBUG") != "" {
						for _, ch := range snap.Changes {
							if ch.Noise == "" {
								t.Logf("  told on unchanged text %s: %s %s %s | %.150q -> %.150q", filepath.Base(f), ch.Type, ch.Op, ch.Path, ch.OldText, ch.NewText)
							}
						}
					}
				}
			}
			// Changed words the report covers at all, and those it
			// covers only with noise changes.
			c.changedWords += len(del) + len(ins)
			if os.Getenv("NOISE_DEBUG") != "" {
				for _, ch := range snap.Changes {
					if ch.Noise != "" && !markupOnly(ch) && (covered(del, wordsOf(ch.OldText)) > 0 || covered(ins, wordsOf(ch.NewText)) > 0) {
						t.Logf("  noise with changed words %s: %s %s %s [%s] | %.150q -> %.150q", filepath.Base(f), ch.Type, ch.Op, ch.Path, ch.Noise, ch.OldText, ch.NewText)
					}
				}
			}
			lost := covered(del, allOld) - covered(del, toldOld) + covered(ins, allNew) - covered(ins, toldNew)
			// Words covered once the volatile locations are told too.
			vol := covered(del, append(toldOld, volOld...)) - covered(del, toldOld) + covered(ins, append(toldNew, volNew...)) - covered(ins, toldNew)
			c.volatileWords += vol
			c.lostWords += lost - vol
		}
		prev, prevBody, prevText = snap, body, text
		history = append([][]string{snap.Hashes()}, history...)
		if len(history) > 5 {
			history = history[:5]
		}
		recent = append([][]changedigest.Change{snap.Changes}, recent...)
		if len(recent) > NoiseVolatileWindow {
			recent = recent[:NoiseVolatileWindow]
		}
	}
	return c
}

var markupRE = regexp.MustCompile(`^(<|[\w:.-]+=")`)

// markupOnly reports whether a change's texts are markup (attributes, a
// tag, shown whole or as the part that changed between Before and
// After), not visible text: their words are not words of the page.
func markupOnly(c changedigest.Change) bool {
	if c.Type == changedigest.ChangeBehavioural || c.Type == changedigest.ChangeCosmetic {
		return true // scripts and styles: their source is not text a reader sees
	}
	m := func(s string) bool { return s == "" || markupRE.MatchString(c.Before+s+c.After) }
	return c.Type != changedigest.ChangeContent && m(c.OldText) && m(c.NewText)
}

// covered counts the words of want found in the multiset have.
func covered(want, have []string) int {
	n := map[string]int{}
	for _, w := range have {
		n[w]++
	}
	k := 0
	for _, w := range want {
		if n[w] > 0 {
			n[w]--
			k++
		}
	}
	return k
}

// TestSimhashWordsReference checks the counting of votes eight bits at a
// time against the plain count, one bit at a time: stored prints made by
// either agree.
func TestSimhashWordsReference(t *testing.T) {
	ref := func(ws []string) uint64 {
		if len(ws) == 0 {
			return 0
		}
		var v [64]int
		add := func(x uint64) {
			for i := range 64 {
				if x&(1<<i) != 0 {
					v[i]++
				} else {
					v[i]--
				}
			}
		}
		if len(ws) == 1 {
			add(fnvAdd(fnvOffset, ws[0]))
		}
		for i := 0; i+1 < len(ws); i++ {
			add(fnvAdd(fnvOffset, ws[i]+" "+ws[i+1]))
		}
		var out uint64
		for i := range 64 {
			if v[i] > 0 {
				out |= 1 << i
			}
		}
		return out
	}
	vocab := strings.Fields("a b c river bridge school 12 2025 évolution 中文 x y z")
	for n := range 2000 {
		ws := make([]string, n%700)
		for i := range ws {
			ws[i] = vocab[(i*7+n*13+i*i)%len(vocab)]
		}
		if got, want := simhashWords(ws), ref(ws); got != want {
			t.Fatalf("%d words: %016x, want %016x", len(ws), got, want)
		}
	}
}

// TestTextPrinterMatchesWords checks that the one-pass print of a page's
// text blocks is the print of their words as wordsOf splits them: on
// crafted text (non-ASCII letters and separators in and between words)
// and on the readability pages.
func TestTextPrinterMatchesWords(t *testing.T) {
	viaWords := func(texts []string, main []bool) changedigest.TextPrint {
		var m, a []string
		for i, s := range texts {
			ws := wordsOf(s)
			a = append(a, ws...)
			if main[i] {
				m = append(m, ws...)
			}
		}
		return printWords(m, a)
	}
	check := func(name string, texts []string, main []bool) {
		t.Helper()
		var p textPrinter
		for i, s := range texts {
			p.text(s, main[i])
		}
		if got, want := p.print(), viaWords(texts, main); got != want {
			t.Errorf("%s: one-pass print %+v, want %+v", name, got, want)
		}
	}
	crafted := []string{
		"", "word", "Two Words", "ÉVOLUTION du Marché", "İstanbul ıi", "a\u00a0b\u00a0c — d–e",
		"mixed ascii中文words and 12,345.67 numbers", "tail é", "é", "ß STRASSE Straße", "\xff\xfe broken \xc3 utf8",
		"under_score hy-phen o'clock", "ＦＵＬＬＷＩＤＴＨ text", "x\u0301y combining", "١٢٣ arabic digits",
	}
	for i := range crafted {
		for j := range crafted {
			check(fmt.Sprintf("%q+%q", crafted[i], crafted[j]), []string{crafted[i], crafted[j]}, []bool{i%2 == 0, j%3 == 0})
		}
	}
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	if len(files) == 0 {
		t.Skip("no readability pages under " + dir)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := scan(nil, decode(src), nil, step{})
		blocks := textBlocks(d)
		texts, main := make([]string, len(blocks)), make([]bool, len(blocks))
		for i := range blocks {
			texts[i], main[i] = blocks[i].text, mainBlock(blocks, i)
		}
		d.release()
		check(filepath.Base(filepath.Dir(f)), texts, main)
	}
}
