package expand

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	wordnetdata "github.com/changedigest/changedigest/wordnet-data"
)

// profile50 reads the 50-interest profile of testdata.
func profile50(tb testing.TB) changedigest.Profile {
	tb.Helper()
	b, err := os.ReadFile("testdata/profile50.json")
	if err != nil {
		tb.Fatal(err)
	}
	var p changedigest.Profile
	if err := json.Unmarshal(b, &p); err != nil {
		tb.Fatal(err)
	}
	return p
}

var (
	tagRE   = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)
	spaceRE = regexp.MustCompile(`\s+`)
)

// changeSet returns about n bytes of real page text from the corpus, the
// size of a large change set.
func changeSet(tb testing.TB, n int) string {
	tb.Helper()
	dir := testenv.Corpus(tb, "pages", "readability", "pages")
	files, err := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	if err != nil || len(files) == 0 {
		tb.Skipf("no pages in %s", dir)
	}
	var b strings.Builder
	for _, f := range files {
		if b.Len() >= n {
			break
		}
		src, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		b.WriteString(spaceRE.ReplaceAllString(tagRE.ReplaceAllString(string(src), " "), " "))
		b.WriteByte('\n')
	}
	s := b.String()
	if len(s) > n {
		s = s[:n]
	}
	return s
}

func BenchmarkExpand50(b *testing.B) {
	e := NewExpander(real(b))
	p := profile50(b)
	for b.Loop() {
		if _, err := e.Expand(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile50(b *testing.B) {
	e := NewExpander(real(b))
	exps, err := e.Expand(profile50(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		e.WordNet.Compile(exps)
	}
}

func BenchmarkMatch100KB(b *testing.B) {
	m, err := NewExpander(real(b)).Matcher(profile50(b))
	if err != nil {
		b.Fatal(err)
	}
	text := changeSet(b, 100_000)
	b.SetBytes(int64(len(text)))
	var n int
	for b.Loop() {
		n = len(m.Match(text))
	}
	b.ReportMetric(float64(n), "matches")
}

// TestMatch100KB checks a 100 KB change set on the 50-interest profile
// and logs how long it took.
func TestMatch100KB(t *testing.T) {
	m, err := NewExpander(real(t)).Matcher(profile50(t))
	if err != nil {
		t.Fatal(err)
	}
	text := changeSet(t, 100_000)
	start := time.Now()
	ms := m.Match(text)
	t.Logf("%d bytes, %d matches in %v", len(text), len(ms), time.Since(start))
	checkMatches(t, text, ms)
	if len(ms) == 0 {
		t.Error("no match in 100 KB of real pages")
	}
}

// loadCost is what a fresh process measures loading WordNet.
type loadCost struct {
	LoadMS, GlossMS, ExpandMS  float64 // Load; glosses; first Expand of 50 interests
	HeapMB, GlossHeapMB        float64 // live heap after load (after glosses)
	AllocMB, SysMB, PeakRSSMB  float64 // allocated during load; from the OS; peak resident
	EmbeddedBytes, Lemmas, Syn int
}

const loadCostEnv = "EXPAND_LOAD_COST_CHILD"

// TestLoadCost measures Load in a fresh process (this test binary run
// again), where nothing is loaded or warm yet: time and memory for the
// core, then for the glosses. The memory target is checked; the time is
// logged and checked loosely, as the machine may be busy.
func TestLoadCost(t *testing.T) {
	if os.Getenv(loadCostEnv) == "1" {
		measureLoad()
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadCost$")
	cmd.Env = append(os.Environ(), loadCostEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var c loadCost
	line := ""
	for l := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(l, "LOADCOST "); ok {
			line = rest
		}
	}
	if err := json.Unmarshal([]byte(line), &c); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	t.Logf("embedded table %d bytes; %d lemmas, %d synsets", c.EmbeddedBytes, c.Lemmas, c.Syn)
	t.Logf("Load: %.0f ms, live heap %.1f MB, allocated %.1f MB, Sys %.1f MB, peak RSS %.1f MB", c.LoadMS, c.HeapMB, c.AllocMB, c.SysMB, c.PeakRSSMB)
	t.Logf("glosses on first use: %.0f ms, live heap then %.1f MB", c.GlossMS, c.GlossHeapMB)
	t.Logf("first Expand of the 50-interest profile (hyponym counts included): %.0f ms", c.ExpandMS)
	if c.GlossHeapMB > 60 {
		t.Errorf("live heap after load %.1f MB, want under 60 MB", c.GlossHeapMB)
	}
	if c.LoadMS > 3000 {
		t.Errorf("Load took %.0f ms, want well under a second", c.LoadMS)
	}
}

func measureLoad() {
	var m0, m1, m2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	wn, err := Load()
	loadDur := time.Since(start)
	if err != nil {
		fmt.Println("LOADCOST error", err)
		return
	}
	runtime.ReadMemStats(&m1)
	alloc := m1.TotalAlloc - m0.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&m1)
	start = time.Now()
	if err := wn.Table().LoadGlosses(); err != nil {
		fmt.Println("LOADCOST error", err)
		return
	}
	glossDur := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&m2)
	var p changedigest.Profile
	if b, err := os.ReadFile("testdata/profile50.json"); err == nil {
		json.Unmarshal(b, &p)
	}
	start = time.Now()
	if _, err := NewExpander(wn).Expand(p); err != nil {
		fmt.Println("LOADCOST error", err)
		return
	}
	expandDur := time.Since(start)
	mb := func(b uint64) float64 { return float64(b) / (1 << 20) }
	st := wn.Table().Stats()
	c := loadCost{
		LoadMS: float64(loadDur.Microseconds()) / 1000, GlossMS: float64(glossDur.Microseconds()) / 1000,
		ExpandMS: float64(expandDur.Microseconds()) / 1000,
		HeapMB:   mb(m1.HeapAlloc - m0.HeapAlloc), GlossHeapMB: mb(m2.HeapAlloc - m0.HeapAlloc),
		AllocMB: mb(alloc), SysMB: mb(m2.Sys), PeakRSSMB: peakRSS(),
		EmbeddedBytes: wordnetdata.EmbeddedSize(), Lemmas: st.Lemmas, Syn: st.Synsets,
	}
	b, _ := json.Marshal(c)
	fmt.Printf("LOADCOST %s\n", b)
}

// peakRSS reads the process's peak resident set (VmHWM) on Linux, in MB,
// or 0.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}
