package segmenter

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

var tune = flag.Bool("tune", false, "print the δ/λ measurement table (TestTune)")

// TestTune measures, for a grid of δ and λ, how stable segment counts are
// across the pandasthumb history and how large segments are on the
// readability pages. It documents how the defaults were chosen; run with
// go test ./segmenter/ -run Tune -tune -v.
func TestTune(t *testing.T) {
	if !*tune {
		t.Skip("run with -tune")
	}
	pfs, _ := filepath.Glob(filepath.Join(testenv.Corpus(t, "versions", "pandasthumb-homepage", "versions"), "*.html"))
	sort.Strings(pfs)
	var pandas [][]byte
	for _, f := range pfs {
		b, _ := os.ReadFile(f)
		pandas = append(pandas, b)
	}
	rfs, _ := filepath.Glob(filepath.Join(testenv.Corpus(t, "pages", "readability", "pages"), "*", "source.html"))
	var pages []*doc
	for _, f := range rfs {
		b, _ := os.ReadFile(f)
		d := scan(nil, b, nil, step{})
		d.index()
		pages = append(pages, d)
	}
	var pdocs []*doc
	for _, b := range pandas {
		d := scan(nil, b, nil, step{})
		d.index()
		pdocs = append(pdocs, d)
	}
	fmt.Printf("δ    λ    | pandas: mean segs, count changes (fresh), count changes (chain), final/initial | readability: median segs, median seg size, median largest share\n")
	for _, delta := range []int{15, 20, 25, 30, 40, 60, 80} {
		for _, lambda := range []float64{0.3, 0.5, 0.7} {
			s := New()
			s.Delta, s.Lambda = delta, lambda
			var counts []int
			for _, d := range pdocs {
				counts = append(counts, len(s.first(d, nil).segs))
			}
			fresh, sum := 0, 0
			for i, c := range counts {
				sum += c
				if i > 0 && c != counts[i-1] {
					fresh++
				}
			}
			pv := s.first(pdocs[0], nil)
			first := len(pv.segs)
			chain := 0
			for _, d := range pdocs[1:] {
				nv, _ := s.later(d, nil, s.bounds(pv), [][]string{pv.hashes()}, pv.text)
				if len(nv.segs) != len(pv.segs) {
					chain++
				}
				pv = nv
			}
			var nsegs, sizes, shares []float64
			for _, d := range pages {
				v := s.first(d, nil)
				nsegs = append(nsegs, float64(len(v.segs)))
				total := d.size(0, len(d.toks))
				largest := 0
				for _, sg := range v.segs {
					z := d.size(sg.a, sg.b)
					sizes = append(sizes, float64(z))
					largest = max(largest, z)
				}
				shares = append(shares, float64(largest)/float64(max(1, total)))
			}
			fmt.Printf("%-4d %.1f  | %5.1f  %3d/%d  %3d/%d  %d/%d | %5.0f %5.0f %5.2f\n", delta, lambda,
				float64(sum)/float64(len(counts)), fresh, len(counts)-1, chain, len(counts)-1, len(pv.segs), first,
				median(nsegs), median(sizes), median(shares))
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
