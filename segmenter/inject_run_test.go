package segmenter

import (
	"fmt"

	"github.com/changedigest/changedigest"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

type injectScore struct {
	tries, hits, falses    int
	trackHits, trackFalses int // through DetectPage along the stored layout
}

// runInjections applies every injection to every readability page and
// scores the diffs: an edit is found when a change of the expected type
// and op (with the edited words in its texts) is reported; every other
// change is a false change.
func runInjections(t testing.TB, s *Segmenter, verbose bool) (map[string]*injectScore, []string) {
	dir := testenv.Corpus(t, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	sort.Strings(files)
	scores := map[string]*injectScore{}
	var fails []string
	for pi, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, err := s.DetectPage(Input{Body: src})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(pi), 7))
		injs := injections(src, rng)
		injs = append(injs, hardInjections(src, rand.New(rand.NewPCG(uint64(pi), 11)))...)
		for _, inj := range injs {
			sc := scores[inj.name]
			if sc == nil {
				sc = &injectScore{}
				scores[inj.name] = sc
			}
			sc.tries++
			d, err := s.DiffPages(src, inj.src, "")
			if err != nil {
				t.Errorf("%s: %s: %v", filepath.Base(filepath.Dir(f)), inj.name, err)
				continue
			}
			hit, falses := scoreChanges(inj, d.Changes)
			sc.falses += falses
			if hit {
				sc.hits++
			}
			snap, err := s.DetectPage(Input{Body: inj.src, Prev: first, PrevBody: src})
			if err != nil {
				t.Errorf("%s: %s: DetectPage: %v", filepath.Base(filepath.Dir(f)), inj.name, err)
				continue
			}
			thit, tfalses := scoreChanges(inj, snap.Changes)
			sc.trackFalses += tfalses
			if thit {
				sc.trackHits++
			}
			if (!hit && inj.typ != "") || len(d.Changes) > btoi(hit) {
				msg := fmt.Sprintf("%s: %s: want %s/%s, got %d changes", filepath.Base(filepath.Dir(f)), inj.name, inj.typ, inj.op, len(d.Changes))
				for k, c := range d.Changes {
					if k >= 4 {
						break
					}
					msg += fmt.Sprintf("\n      %s/%s %s | %.70q → %.70q", c.Type, c.Op, c.Path, c.OldText, c.NewText)
				}
				fails = append(fails, msg)
			}
		}
	}
	return scores, fails
}

// scoreChanges tells whether the injected edit is among the changes and
// how many others there are.
func scoreChanges(inj injection, cs []changedigest.Change) (hit bool, falses int) {
	for _, c := range cs {
		if !hit && inj.typ != "" && string(c.Type) == inj.typ && string(c.Op) == inj.op &&
			strings.Contains(c.OldText, inj.oldWord) && strings.Contains(c.NewText, inj.newWord) {
			hit = true
			continue
		}
		falses++
	}
	return hit, falses
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestInjectedEdits(t *testing.T) {
	scores, fails := runInjections(t, New(), testing.Verbose())
	names := make([]string, 0, len(scores))
	for n := range scores {
		names = append(names, n)
	}
	sort.Strings(names)
	tries, hits, falses, edits, thits, tfalses := 0, 0, 0, 0, 0, 0
	for _, n := range names {
		sc := scores[n]
		t.Logf("%-38s %4d tries %4d found %3d false | track %4d found %3d false", n, sc.tries, sc.hits, sc.falses, sc.trackHits, sc.trackFalses)
		if !strings.HasPrefix(n, "no-op") {
			edits += sc.tries
			hits += sc.hits
			thits += sc.trackHits
		}
		tries += sc.tries
		falses += sc.falses
		tfalses += sc.trackFalses
	}
	t.Logf("DiffPages: edits found %d/%d (%.1f%%), false changes %d over %d diffs", hits, edits, 100*float64(hits)/float64(max(1, edits)), falses, tries)
	t.Logf("DetectPage: edits found %d/%d (%.1f%%), false changes %d over %d diffs", thits, edits, 100*float64(thits)/float64(max(1, edits)), tfalses, tries)
	if hits*100 < edits*99 || thits*100 < edits*99 || falses*200 > tries || tfalses*200 > tries {
		t.Errorf("below the bar: want ≥ 99%% of edits found and false changes in < 0.5%% of diffs")
	}
	for i, f := range fails {
		if i < 40 {
			t.Log(f)
		}
	}
}
