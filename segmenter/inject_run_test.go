package segmenter

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

type injectScore struct {
	tries, hits, falses int
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
		rng := rand.New(rand.NewPCG(uint64(pi), 7))
		for _, inj := range injections(src, rng) {
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
			hit := false
			for _, c := range d.Changes {
				if !hit && inj.typ != "" && string(c.Type) == inj.typ && string(c.Op) == inj.op &&
					strings.Contains(c.OldText, inj.oldWord) && strings.Contains(c.NewText, inj.newWord) {
					hit = true
					continue
				}
				sc.falses++
			}
			if hit {
				sc.hits++
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
	tries, hits, falses, edits := 0, 0, 0, 0
	for _, n := range names {
		sc := scores[n]
		t.Logf("%-28s %4d tries %4d found %4d false changes", n, sc.tries, sc.hits, sc.falses)
		if !strings.HasPrefix(n, "no-op") {
			edits += sc.tries
			hits += sc.hits
		}
		tries += sc.tries
		falses += sc.falses
	}
	t.Logf("edits found: %d/%d (%.1f%%), false changes: %d over %d diffs", hits, edits, 100*float64(hits)/float64(max(1, edits)), falses, tries)
	for i, f := range fails {
		if i < 40 {
			t.Log(f)
		}
	}
}
