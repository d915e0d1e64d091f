package segmenter

import (
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

// alignByScan is align as it was first written: for each boundary, four
// passes over every element of its kind, from the previous guess on
// (alignCands.scan, which align keeps for short lists of candidates).
// align must give the same elements with its lookups.
func alignByScan(s *Segmenter, d *doc, bs []bound, regions []region) []int32 {
	match := make([]int32, len(bs))
	c := newAlignCands(d, bs, regions)
	prev := -1
	for i, b := range bs {
		if b.docStart {
			match[i] = -1
			continue
		}
		cands := c.kinds[b.kind]
		from := sort.Search(len(cands), func(k int) bool { return int(d.elems[cands[k]].tok) > prev })
		best := c.scan(b, cands, from, func(ei int32) uint64 { return d.cascade(ei, s.Cascade) })
		if best < 0 {
			match[i] = lostBound
			continue
		}
		match[i] = best
		prev = int(d.elems[best].tok)
	}
	keepInOrder(bs, match, d)
	return match
}

// TestAlignLookups aligns the layout of each version of the corpus
// histories on the next version, and on a version ten steps on (more
// boundaries lost), with align and with alignByScan: the same elements.
func TestAlignLookups(t *testing.T) {
	root := testenv.Corpus(t, "versions")
	dirs := historyDirs(root, 2)
	if len(dirs) == 0 {
		t.Skip("no page histories under " + root)
	}
	s := New()
	pairs, lost := 0, 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.html"))
		sort.Strings(files)
		files = files[:min(len(files), 16)]
		for i, f := range files {
			snap, err := s.Detect(Input{Body: mustRead(t, f)})
			if err != nil || snap.Kind != "page" {
				continue
			}
			_, bs, err := decodeLayout(snap.Layout)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, j := range []int{i + 1, i + 8} {
				if j >= len(files) {
					continue
				}
				d, regs, err := s.scanPage(nil, mustRead(t, files[j]), "")
				if err != nil {
					continue
				}
				got, want := s.align(d, bs, regs), alignByScan(s, d, bs, regs)
				if !slices.Equal(got, want) {
					t.Fatalf("%s on %s: align and a scan of every candidate differ", f, files[j])
				}
				pairs++
				for _, m := range got {
					if m == lostBound {
						lost++
					}
				}
			}
		}
	}
	t.Logf("%d layouts aligned alike, %d boundaries lost", pairs, lost)
}
