package segmenter

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"golang.org/x/net/html"
)

// benchPair is a previous and a new version of a page.
type benchPair struct {
	name     string
	old, new []byte
}

// benchPairs returns pandasthumb successive versions and readability
// pages around the median size with an injected word change.
func benchPairs(b testing.TB) []benchPair {
	var out []benchPair
	pdir := testenv.Corpus(b, "versions", "pandasthumb-homepage", "versions")
	pfs, _ := filepath.Glob(filepath.Join(pdir, "*.html"))
	sort.Strings(pfs)
	// three successive versions with changes, spread over the history
	for _, i := range []int{12, 40, 100} {
		for ; i+1 < len(pfs); i++ {
			o, _ := os.ReadFile(pfs[i])
			n, _ := os.ReadFile(pfs[i+1])
			if d, err := New().DiffPages(o, n, ""); err == nil && len(d.Changes) > 0 {
				out = append(out, benchPair{"pandasthumb-" + filepath.Base(pfs[i+1])[:4], o, n})
				break
			}
		}
	}
	rdir := testenv.Corpus(b, "pages", "readability", "pages")
	for _, name := range []string{"mozilla-1", "iab-1", "ehow-2", "topicseed-1", "medium-1", "wapo-2", "lifehacker-working"} {
		src, err := os.ReadFile(filepath.Join(rdir, name, "source.html"))
		if err != nil {
			continue
		}
		for _, inj := range injections(src, rand.New(rand.NewPCG(1, 7))) {
			if inj.name == "change a word" {
				out = append(out, benchPair{name, src, inj.src})
				break
			}
		}
	}
	return out
}

// BenchmarkParse is the baseline: building the tree of the new version
// with html.Parse, nothing else.
func BenchmarkParse(b *testing.B) {
	for _, p := range benchPairs(b) {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.new)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := html.Parse(bytes.NewReader(p.new)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDetect is the full detection of a new version against the
// stored previous one: scan, cut along the layout, hash, signature
// matrix, and comparison of the changed segments.
func BenchmarkDetect(b *testing.B) { benchDetect(b, New().DetectPage) }

// BenchmarkCheck is what a check pays for detection: Detect, that is
// DetectPage plus noise marking and significance, against a previous
// version as the track returns it (with its text print when it keeps one).
func BenchmarkCheck(b *testing.B) { benchDetect(b, New().Detect) }

// benchDetect runs detect on each benchmark pair, the previous version
// made by detect too.
func benchDetect(b *testing.B, detect func(Input) (*changedigest.Snapshot, error)) {
	for _, p := range benchPairs(b) {
		prev, err := detect(Input{Body: p.old})
		if err != nil {
			b.Fatal(err)
		}
		in := Input{Body: p.new, Prev: prev, PrevBody: p.old, History: [][]string{prev.Hashes()}}
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.new)))
			b.ReportAllocs()
			for b.Loop() {
				snap, err := detect(in)
				if err != nil || len(snap.Changes) == 0 {
					b.Fatal(err, "no change found")
				}
			}
		})
	}
}

// BenchmarkFirst is the hybrid segmentation of a first version.
func BenchmarkFirst(b *testing.B) {
	s := New()
	for _, p := range benchPairs(b) {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.new)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.DetectPage(Input{Body: p.new}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var speed = flag.Bool("speed", false, "print html.Parse vs detection CPU times (TestSpeed)")

// cpuTime is the CPU time the process has used (all threads, user and
// system): unlike the wall clock, it does not count time other processes
// took on a loaded machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSpeed compares html.Parse with the full detection of each benchmark
// page (later version against the stored previous one), in CPU time per
// call with GOMAXPROCS=1 (so garbage collection counts, other processes do
// not), alternating batches of each and keeping the fastest batch. Run
// with go test ./segmenter/ -run Speed -speed -v.
func TestSpeed(t *testing.T) {
	if !*speed {
		t.Skip("run with -speed")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := New()
	var ratios []float64
	const batch, rounds = 20, 15
	for _, p := range benchPairs(t) {
		prev, err := s.DetectPage(Input{Body: p.old})
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Body: p.new, Prev: prev, PrevBody: p.old, History: [][]string{prev.Hashes()}}
		minP, minD := time.Hour, time.Hour
		for range rounds {
			c0 := cpuTime()
			for range batch {
				if _, err := html.Parse(bytes.NewReader(p.new)); err != nil {
					t.Fatal(err)
				}
			}
			c1 := cpuTime()
			for range batch {
				if _, err := s.DetectPage(in); err != nil {
					t.Fatal(err)
				}
			}
			c2 := cpuTime()
			minP, minD = min(minP, (c1-c0)/batch), min(minD, (c2-c1)/batch)
		}
		r := float64(minD) / float64(minP)
		ratios = append(ratios, r)
		t.Logf("%-22s %7d bytes  parse %7.3f ms  detect %7.3f ms  ratio %.2f", p.name, len(p.new),
			float64(minP)/1e6, float64(minD)/1e6, r)
	}
	sort.Float64s(ratios)
	t.Logf("median ratio detect/parse: %.2f", ratios[len(ratios)/2])
}
