package textdiff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestWordsRoundTrip(t *testing.T) {
	for _, s := range []string{"", "a", "Hello,  world!\n", "don't stop 3.14 café", "  lead", "tail  "} {
		if got := strings.Join(Words(s), ""); got != s {
			t.Errorf("Words(%q) joined = %q", s, got)
		}
	}
	if got := Words("don't 3.14 end."); len(got) != 6 {
		t.Errorf("Words = %q, want 6 tokens", got)
	}
}

// apply rebuilds both sides from an edit script.
func apply(edits []Edit) (old, new string) {
	var o, n strings.Builder
	for _, e := range edits {
		if e.Op != Insert {
			o.WriteString(e.Text)
		}
		if e.Op != Delete {
			n.WriteString(e.Text)
		}
	}
	return o.String(), n.String()
}

func TestWordDiff(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           []Edit
	}{
		{"equal", "a b c", "a b c", []Edit{{Equal, "a b c"}}},
		{"empty both", "", "", nil},
		{"insert", "", "new text", []Edit{{Insert, "new text"}}},
		{"delete", "old", "", []Edit{{Delete, "old"}}},
		{"replace word", "the quick fox", "the slow fox", []Edit{{Equal, "the "}, {Delete, "quick"}, {Insert, "slow"}, {Equal, " fox"}}},
		{"insert word", "a c", "a b c", []Edit{{Equal, "a "}, {Insert, "b "}, {Equal, "c"}}},
		{"delete word", "a b c", "a c", []Edit{{Equal, "a "}, {Delete, "b "}, {Equal, "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WordDiff(tt.old, tt.new)
			if len(got) != len(tt.want) {
				t.Fatalf("WordDiff = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("WordDiff = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestDiffRebuildsBothSides(t *testing.T) {
	pairs := [][2]string{
		{"one two three four five", "zero one three four six five seven"},
		{"a a a b b b", "b b b a a a"},
		{strings.Repeat("x y ", 600), strings.Repeat("y x ", 600)}, // past MaxEdits
	}
	for _, p := range pairs {
		o, n := apply(WordDiff(p[0], p[1]))
		if o != p[0] || n != p[1] {
			t.Errorf("diff of %.30q/%.30q does not rebuild: %.30q/%.30q", p[0], p[1], o, n)
		}
	}
}

func TestSimilarity(t *testing.T) {
	if s := Similarity("a b c d", "a b c d"); s != 1 {
		t.Errorf("equal: %v", s)
	}
	if s := Similarity("a b", "c d"); s != 0 {
		t.Errorf("disjoint: %v", s)
	}
	if s := Similarity("a b c d", "a b x d"); s != 0.75 {
		t.Errorf("one of four: %v", s)
	}
	if s := Similarity("a  b\n", "a b"); s != 1 {
		t.Errorf("whitespace: %v", s)
	}
}

func FuzzWordDiff(f *testing.F) {
	f.Add("the quick brown fox", "the slow brown dog")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		o, n := apply(WordDiff(a, b))
		if o != a || n != b {
			t.Fatalf("does not rebuild %q/%q: %q/%q", a, b, o, n)
		}
		if s := Similarity(a, a); s != 1 {
			t.Fatalf("Similarity(a, a) = %v", s)
		}
	})
}

func BenchmarkWordDiff(b *testing.B) {
	old := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 200)
	new := strings.Replace(old, "dolor", "color", 20)
	for b.Loop() {
		WordDiff(old, new)
	}
}

func TestReadable(t *testing.T) {
	old := "The city council met on Monday evening"
	new := "The local soccer club won on Saturday"
	got := Readable(WordDiff(old, new))
	o, n := apply(got)
	if o != old || n != new {
		t.Fatalf("Readable does not rebuild: %q / %q", o, n)
	}
	// The alternation collapses into few runs.
	if len(got) > 5 {
		t.Errorf("Readable left %d edits: %q", len(got), got)
	}
	// A small edit in a long sentence keeps its unchanged context.
	got = Readable(WordDiff("one two three four five six", "one two THREE four five six"))
	want := []Edit{{Equal, "one two "}, {Delete, "three"}, {Insert, "THREE"}, {Equal, " four five six"}}
	if len(got) != len(want) {
		t.Fatalf("Readable = %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Readable = %q, want %q", got, want)
		}
	}
}

func TestScript(t *testing.T) {
	a := strings.Fields("the cat sat on the mat today")
	b := strings.Fields("a cat sat on the red mat")
	var gotA, gotB []string
	for _, r := range Script(a, b) {
		switch r.Op {
		case Equal:
			if !slices.Equal(a[r.A:r.A+r.N], b[r.B:r.B+r.N]) {
				t.Errorf("equal run %v: %q vs %q", r, a[r.A:r.A+r.N], b[r.B:r.B+r.N])
			}
			gotA = append(gotA, a[r.A:r.A+r.N]...)
			gotB = append(gotB, b[r.B:r.B+r.N]...)
		case Delete:
			gotA = append(gotA, a[r.A:r.A+r.N]...)
		case Insert:
			gotB = append(gotB, b[r.B:r.B+r.N]...)
		}
	}
	// the runs, in order, give both sequences back
	if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
		t.Errorf("runs rebuild %q and %q", gotA, gotB)
	}
	if n := Common(a, b); n != 5 {
		t.Errorf("Common = %d, want 5", n)
	}
}

// TestCommonLen: the count of kept tokens from the forward pass alone is
// what myers's script keeps, on random texts of a few words (many
// repeats), and on texts that differ by more than MaxEdits (nothing kept).
func TestCommonLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "d", "the", "cat"}
	text := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	kept := func(a, b []string) int {
		eq := 0
		for _, sp := range (*Budget)(nil).myers(a, b) {
			if sp.op == Equal {
				eq += sp.n
			}
		}
		return eq
	}
	for range 2000 {
		a, b := text(rng.IntN(40)), text(rng.IntN(40))
		if got, want := commonLen((*Budget)(nil), a, b), kept(a, b); got != want {
			t.Fatalf("commonLen(%q, %q) = %d, myers keeps %d", a, b, got, want)
		}
	}
	a, b := make([]string, 800), make([]string, 800)
	for i := range a {
		a[i], b[i] = fmt.Sprint("a", i), fmt.Sprint("b", i)
	}
	a[400] = b[0]
	if got, want := commonLen((*Budget)(nil), a, b), kept(a, b); got != want || got != 0 {
		t.Errorf("past MaxEdits: commonLen %d, myers keeps %d, want 0", got, want)
	}
}

// TestBudget: scripts drawn on a budget are the scripts of Script while it
// lasts, and give up (the differing middle deleted and inserted whole) once
// what is left would not do; a nil budget is unlimited.
func TestBudget(t *testing.T) {
	a := Words("the quick brown fox jumps over the lazy dog, the end")
	b := Words("the quick red fox leaps over the lazy cat, the end")
	want := fmt.Sprint(Script(a, b))
	bu := NewBudget(1 << 20)
	if got := fmt.Sprint(bu.Script(a, b)); got != want {
		t.Fatalf("with a budget: %s, want %s", got, want)
	}
	if bu.Left() >= 1<<20 || bu.Left() <= 0 {
		t.Fatalf("left %d of %d", bu.Left(), 1<<20)
	}
	if (*Budget)(nil).Left() != -1 || fmt.Sprint((*Budget)(nil).Script(a, b)) != want {
		t.Fatal("a nil budget is not unlimited")
	}
	small := NewBudget(3)
	runs := small.Script(a, b)
	var ops []Op
	for _, r := range runs {
		ops = append(ops, r.Op)
	}
	if fmt.Sprint(ops) != fmt.Sprint([]Op{Equal, Delete, Insert, Equal}) {
		t.Fatalf("past the budget: %v, want the middle deleted and inserted whole", runs)
	}
	if small.Left() != 0 {
		t.Fatalf("left %d, want 0", small.Left())
	}
	if p, q := Affixes(a, b); NewBudget(0).Common(a, b) != p+q {
		t.Fatalf("Common with nothing left: %d, want the shared start and end (%d)", NewBudget(0).Common(a, b), p+q)
	}
}

// TestPastMaxEdits checks that pastMaxEdits tells only pairs the search
// gives up on, and tells those of few words in common.
func TestPastMaxEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := func(n, vocab int, prefix string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, rng.IntN(vocab))
		}
		return out
	}
	for k := range 200 {
		n, m := 400+rng.IntN(800), 400+rng.IntN(800)
		a := words(n, 1+rng.IntN(50), "w")
		b := slices.Clone(a[:min(n, m)])
		for i := range b {
			if rng.IntN(100) < k/2 {
				b[i] = fmt.Sprintf("v%d", rng.IntN(50))
			}
		}
		b = append(b, words(max(0, m-n), 50, "x")...)
		past := pastMaxEdits(a, b)
		if d := forward(nil, a, b, nil); past && d >= 0 {
			t.Fatalf("pair %d: told past MaxEdits, but the search finds %d edits", k, d)
		}
	}
	a := words(2000, 1000, "w")
	if !pastMaxEdits(a, words(2000, 1000, "v")) {
		t.Error("texts of no word in common not told past MaxEdits")
	}
}

// TestWordDiffCutsAsDiffJoins checks that WordDiff, which cuts its edits'
// texts from the texts compared, gives what Diff of their tokens joins.
func TestWordDiffCutsAsDiffJoins(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"a", "b", "c", "don't", " ", "  ", "\n", ",", "3.14", "é"}
	text := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(vocab[rng.IntN(len(vocab))])
		}
		return sb.String()
	}
	for k := range 500 {
		a, b := text(rng.IntN(60)), text(rng.IntN(60))
		if k%3 == 0 {
			b = a[:len(a)/2] + text(5) + a[len(a)/2:]
		}
		got, want := WordDiff(a, b), Diff(Words(a), Words(b))
		if !slices.Equal(got, want) {
			t.Fatalf("WordDiff(%q, %q) = %q, Diff of the words %q", a, b, got, want)
		}
	}
}
