package segmenter

import (
	"errors"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// partsOf serves a version's texts and body from memory, counting the
// bytes read, as the store does from its chunks.
type partsOf struct {
	snap  *changedigest.Snapshot
	body  []byte
	read  int
	texts int
	fail  error
}

func (p *partsOf) SegmentText(i int) (string, error) {
	if p.fail != nil {
		return "", p.fail
	}
	p.texts++
	return p.snap.Segments[i].Text, nil
}

func (p *partsOf) BodyRange(a, b int) ([]byte, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	p.read += b - a
	return p.body[a:b], nil
}

func (p *partsOf) Body() ([]byte, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	p.read += len(p.body)
	return p.body, nil
}

// withoutTexts is snap as the store gives it with its parts left out.
func withoutTexts(snap *changedigest.Snapshot) *changedigest.Snapshot {
	c := *snap
	c.Segments = append([]changedigest.Segment(nil), snap.Segments...)
	for i := range c.Segments {
		c.Segments[i].Text = ""
	}
	return &c
}

// TestLazyPrevMatchesWhole replays real page histories and detects each
// version twice, against the previous one given whole (PrevBody and its
// segment texts) and read in parts (PrevParts): the snapshots must be the
// same, and the parts read a fraction of the previous versions.
func TestLazyPrevMatchesWhole(t *testing.T) {
	root := testenv.Corpus(t, "versions")
	dirs := historyDirs(root, 2)
	if len(dirs) == 0 {
		t.Skip("no page histories under " + root)
	}
	s := New()
	var read, whole, pairs int
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.html"))
		sort.Strings(files)
		files = files[:min(len(files), 25)]
		var prev *changedigest.Snapshot
		var prevBody []byte
		var hist [][]string
		for i, f := range files {
			body := mustRead(t, f)
			in := Input{Body: body, Prev: prev, PrevBody: prevBody, History: hist}
			want, werr := s.Detect(in)
			if prev != nil {
				parts := &partsOf{snap: prev, body: prevBody}
				got, gerr := s.Detect(Input{Body: body, Prev: withoutTexts(prev), PrevParts: parts, History: hist})
				if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s (version %d): read in parts %+v, %v; whole %+v, %v", f, i, got, gerr, want, werr)
				}
				read, whole, pairs = read+parts.read, whole+len(prevBody), pairs+1
			}
			if werr != nil {
				continue
			}
			prev, prevBody = want, body
			hist = append([][]string{want.Hashes()}, hist...)[:min(len(hist)+1, 5)]
		}
	}
	// A page whose moved or replaced blocks are looked for across it is
	// read whole (the container pass); the rest read what changed.
	t.Logf("%d pairs from %d histories: the parts read %d of %d bytes of the previous versions (%.0f%%)",
		pairs, len(dirs), read, whole, 100*float64(read)/float64(max(whole, 1)))
	if read >= whole {
		t.Errorf("the parts read %d of %d bytes: no less than the whole versions", read, whole)
	}
}

// TestLazyPrevOneWord changes one word of real pages: the detection reads
// the segment that changed, not the page.
func TestLazyPrevOneWord(t *testing.T) {
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	sort.Strings(files)
	files = files[:min(len(files), 30)]
	if len(files) == 0 {
		t.Skip("no pages under " + dir)
	}
	para := regexp.MustCompile(`<p[^>]*>([^<]{40,})`)
	s := New()
	var read, whole, changed int
	for _, f := range files {
		old := mustRead(t, f)
		m := para.FindSubmatchIndex(old)
		if m == nil {
			continue
		}
		new := slices.Concat(old[:m[2]], []byte("qzxchanged "), old[m[2]:])
		prev, err := s.Detect(Input{Body: old})
		if err != nil {
			continue
		}
		want, err := s.Detect(Input{Body: new, Prev: prev, PrevBody: old})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		parts := &partsOf{snap: prev, body: old}
		got, err := s.Detect(Input{Body: new, Prev: withoutTexts(prev), PrevParts: parts})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read in parts %+v, %v; whole %+v", f, got, err, want)
		}
		if len(want.Changes) > 0 {
			changed++
		}
		read, whole = read+parts.read, whole+len(old)
	}
	t.Logf("%d pages, %d with changes found: the parts read %d of %d bytes (%.1f%%)", len(files), changed, read, whole, 100*float64(read)/float64(max(whole, 1)))
	if changed == 0 || read*5 > whole {
		t.Errorf("%d pages changed; the parts read %d of %d bytes, want under a fifth", changed, read, whole)
	}
}

// TestLazyPrevReadFails: a part that cannot be read fails the detection
// with the read's error, rather than a comparison made without it.
func TestLazyPrevReadFails(t *testing.T) {
	old := []byte("<html><body><h1>News</h1><p>One story about a thing that happened.</p><p>Another story.</p></body></html>")
	new := []byte("<html><body><h1>News</h1><p>One story about a thing that changed.</p><p>Another story.</p></body></html>")
	s := New()
	prev, err := s.Detect(Input{Body: old})
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("chunk 7 is missing")
	_, err = s.Detect(Input{Body: new, Prev: withoutTexts(prev), PrevParts: &partsOf{snap: prev, body: old, fail: broken}})
	if !errors.Is(err, broken) {
		t.Fatalf("Detect with an unreadable previous version: %v, want %v", err, broken)
	}
	_, err = s.DetectPage(Input{Body: new, Prev: withoutTexts(prev), PrevParts: &partsOf{snap: prev, body: old, fail: broken}})
	if !errors.Is(err, broken) {
		t.Fatalf("DetectPage with an unreadable previous version: %v, want %v", err, broken)
	}
}
