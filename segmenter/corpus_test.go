package segmenter

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"golang.org/x/net/html"
)

// versions returns the files of a page history in order.
func versions(t *testing.T, sub ...string) [][]byte {
	t.Helper()
	dir := testenv.Corpus(t, sub...)
	files, err := filepath.Glob(filepath.Join(dir, "*.html"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no versions in %s: %v", dir, err)
	}
	sort.Strings(files)
	out := make([][]byte, len(files))
	for i, f := range files {
		out[i] = mustRead(t, f)
	}
	return out
}

// historyDirs returns the directories under root holding at least min
// versions of a page (*.html files).
func historyDirs(root string, min int) []string {
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if fs, _ := filepath.Glob(filepath.Join(p, "*.html")); len(fs) >= min {
				dirs = append(dirs, p)
			}
		}
		return nil
	})
	return dirs
}

// squeezedText is the text of a page by html.Parse (an independent
// parser), script and style left out, with all whitespace removed, so
// that texts can be looked up whatever their spacing.
func squeezedText(body []byte) string {
	root, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var sb strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "noscript", "template", "iframe":
				return
			}
		}
		if n.Type == html.TextNode {
			sb.WriteString(squeeze(n.Data))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return sb.String()
}

func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '\u200b' || r == '\ufeff' {
			return -1
		}
		return r
	}, s)
}

// checkChanges checks what a diff between two real versions reports:
// content texts are found in their file's text, updated texts differ,
// moved texts are found in both, every change is located.
func checkChanges(t *testing.T, label string, old, new []byte, cs []changedigest.Change) {
	t.Helper()
	ot, nt := squeezedText(old), squeezedText(new)
	for _, c := range cs {
		if c.Path == "" {
			t.Errorf("%s: change without a location: %+v", label, c)
		}
		switch {
		case c.Type == changedigest.ChangeContent:
			if c.Op != changedigest.OpInsert && !strings.Contains(ot, squeeze(c.OldText)) {
				t.Errorf("%s: old text of %s not in the old file: %.200q", label, c, c.OldText)
			}
			if c.Op != changedigest.OpDelete && !strings.Contains(nt, squeeze(c.NewText)) {
				t.Errorf("%s: new text of %s not in the new file: %.200q", label, c, c.NewText)
			}
			if c.Op == changedigest.OpUpdate && c.OldText == c.NewText {
				t.Errorf("%s: %s with equal texts %.200q", label, c, c.OldText)
			}
			if c.Op == changedigest.OpInsert && (c.OldText != "" || c.NewText == "") ||
				c.Op == changedigest.OpDelete && (c.NewText != "" || c.OldText == "") {
				t.Errorf("%s: %s with texts %.80q → %.80q", label, c, c.OldText, c.NewText)
			}
		case c.Op == changedigest.OpMove:
			if c.OldText != c.NewText {
				t.Errorf("%s: move changes the text: %.80q → %.80q", label, c.OldText, c.NewText)
			}
		case c.Op == changedigest.OpUpdate && c.Type != changedigest.ChangeCosmetic:
			if c.OldText == c.NewText {
				t.Errorf("%s: %s with equal texts %.200q", label, c, c.OldText)
			}
		}
	}
}

// history runs a page history through DiffPages and through the track's
// path (DetectPage along the stored layouts, with the last m versions as
// history) and checks both.
func history(t *testing.T, vs [][]byte, m int) {
	s := New()
	for i, v := range vs {
		d, err := s.DiffPages(v, v, "")
		if err != nil {
			t.Fatalf("version %d: %v", i, err)
		}
		if len(d.Changes) != 0 || d.Similarity != 1 {
			t.Errorf("version %d diffed with itself: %d changes, similarity %v", i, len(d.Changes), d.Similarity)
		}
	}
	changedPairs, countChanges, identical := 0, 0, 0
	prev, err := s.DetectPage(Input{Body: vs[0]})
	if err != nil {
		t.Fatal(err)
	}
	var hist [][]string
	for i := 1; i < len(vs); i++ {
		old, new := vs[i-1], vs[i]
		label := "version " + itoa(i-1) + "→" + itoa(i)
		d, err := s.DiffPages(old, new, "")
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		checkChanges(t, label+" (diff)", old, new, d.Changes)
		if len(d.Changes) > 0 {
			changedPairs++
		}
		if bytes.Equal(old, new) {
			identical++
		}
		hist = append([][]string{prev.Hashes()}, hist...)
		hist = hist[:min(len(hist), m)]
		snap, err := s.DetectPage(Input{Body: new, Prev: prev, PrevBody: old, History: hist})
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		checkChanges(t, label+" (track)", old, new, snap.Changes)
		if len(snap.Segments) != len(prev.Segments) {
			countChanges++
		}
		for k, sg := range snap.Segments {
			if sg.Start > sg.End || (k > 0 && sg.Start != snap.Segments[k-1].End) {
				t.Fatalf("%s: segment ranges out of order: %+v", label, sg)
			}
		}
		prev = snap
	}
	t.Logf("%d versions: %d successive pairs with changes; segment count changed %d times along the layouts (from %d segments)",
		len(vs), changedPairs, countChanges, len(prev.Segments))
	if countChanges*10 > len(vs) {
		t.Errorf("segment count changed at %d of %d versions: not stable", countChanges, len(vs)-1)
	}
}

func TestPandasthumbHistory(t *testing.T) {
	history(t, versions(t, "versions", "pandasthumb-homepage", "versions"), 3)
}

func TestChristianDailyReporterHistory(t *testing.T) {
	history(t, versions(t, "versions", "christian-daily-reporter-homepage", "versions_first100"), 3)
}

// TestEDGIPairs checks EDGI's hand-made before/after pairs against what a
// reader would call the change, and runs their real government pages.
func TestEDGIPairs(t *testing.T) {
	dir := testenv.Corpus(t, "pairs", "edgi")
	tests := []struct {
		name string
		want []string
	}{
		{"add-list", []string{"content/insert"}},
		{"add-paragraph", []string{"content/insert"}},
		{"change-href", []string{"structural/update"}},
		{"change-link-text", []string{"content/update"}},
		{"change-list-href", []string{"content/update"}}, // despite its name the link text changes
		{"change-list-text", []string{"content/update"}},
		{"change-tag", []string{"structural/update"}},
		{"change-title", []string{"content/update"}},
		{"change-word-in-paragraph", []string{"content/update"}},
		{"ins-in-source", []string{"content/update"}},
		{"remove-list", []string{"content/delete"}},
		{"two-paragraphs", []string{"content/update"}},
	}
	s := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := mustRead(t, filepath.Join(dir, "example_data", tc.name+".before"))
			new := mustRead(t, filepath.Join(dir, "example_data", tc.name+".after"))
			d, err := s.DiffPages(old, new, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := typeOps(d.Changes); !slices.Equal(got, tc.want) {
				t.Errorf("changes %v, want %v\n%s", got, tc.want, dump(d.Changes))
			}
			checkChanges(t, tc.name, old, new, d.Changes)
		})
	}
	for _, pair := range [][2]string{
		{"f2d5d701-707a-42e0-8881-653346d01e0a", "fc74d750-c651-46b7-bf74-434ad8c62e04"},
		{"9d4de183-a186-456c-bffb-55d82989877d", "775a8b04-9bac-4d0d-8db0-a8e133c4a964"},
	} {
		old := mustRead(t, filepath.Join(dir, "versions", pair[0]+".html"))
		new := mustRead(t, filepath.Join(dir, "versions", pair[1]+".html"))
		d, err := s.DiffPages(old, new, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Changes) == 0 {
			t.Errorf("%s: no change found between two versions of a real page", pair[0])
		}
		checkChanges(t, pair[0], old, new, d.Changes)
		t.Logf("%s → %s: %d changes in %d segments, similarity %.3f", pair[0][:8], pair[1][:8], len(d.Changes), d.ChangedSegments, d.Similarity)
	}
	if d, err := s.DiffPages(mustRead(t, filepath.Join(dir, "versions", "unknown_encoding.html")), mustRead(t, filepath.Join(dir, "versions", "unknown_encoding.html")), ""); err != nil || len(d.Changes) != 0 {
		t.Errorf("odd encoding diffed with itself: %v", err)
	}
}

// TestStackOverflowNoise diffs two captures 22 s apart: the change texts
// must come from the files.
func TestStackOverflowNoise(t *testing.T) {
	dir := testenv.Corpus(t, "versions", "lqtri-stackoverflow-snapshots")
	old := mustRead(t, filepath.Join(dir, "stackoverflow.com_2023_03_29_22_01_33", "stackoverflow.com_source.html"))
	new := mustRead(t, filepath.Join(dir, "stackoverflow.com_2023_03_29_22_01_55", "stackoverflow.com_source.html"))
	d, err := New().DiffPages(old, new, "")
	if err != nil {
		t.Fatal(err)
	}
	checkChanges(t, "stackoverflow", old, new, d.Changes)
	t.Logf("%d changes in %d of %d segments, similarity %.3f", len(d.Changes), d.ChangedSegments, d.New.Segments, d.Similarity)
}

// TestReadabilityPages segments every readability page and checks the
// segments' ranges and sizes, and that each diffed with itself is unchanged.
func TestReadabilityPages(t *testing.T) {
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	s := New()
	var counts []float64
	for _, f := range files {
		body := mustRead(t, f)
		name := filepath.Base(filepath.Dir(f))
		snap, err := s.DetectPage(Input{Body: body})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		end := 0
		for _, sg := range snap.Segments {
			if sg.Start != end || sg.End < sg.Start {
				t.Errorf("%s: segment %d range %d..%d after %d", name, sg.Index, sg.Start, sg.End, end)
			}
			end = sg.End
		}
		if end != len(body) {
			t.Errorf("%s: segments end at %d of %d bytes", name, end, len(body))
		}
		counts = append(counts, float64(len(snap.Segments)))
		next, err := s.DetectPage(Input{Body: body, Prev: snap, PrevBody: body})
		if err != nil || len(next.Changes) != 0 || len(next.Segments) != len(snap.Segments) {
			t.Errorf("%s: same body again: %v, %d changes, %d → %d segments", name, err, len(next.Changes), len(snap.Segments), len(next.Segments))
		}
	}
	t.Logf("%d pages, median %v segments", len(counts), median(counts))
}
