// Package textdiff compares texts word by word: it splits text into
// tokens (words, punctuation and whitespace runs) and finds a shortest
// edit script between two token sequences with Myers' O(ND) algorithm.
// The segmenter uses it to type and locate changes; render uses it to
// mark insertions and deletions.
package textdiff

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Op is the kind of an edit.
type Op int8

// Edit operations.
const (
	Equal Op = iota
	Insert
	Delete
)

func (o Op) String() string {
	switch o {
	case Insert:
		return "insert"
	case Delete:
		return "delete"
	}
	return "equal"
}

// Edit is a run of tokens that are equal in both texts, only in the new
// one (Insert) or only in the old one (Delete).
type Edit struct {
	Op   Op
	Text string
}

// MaxEdits bounds the edit distance Diff searches for; past it the middle
// part that differs is reported as one deletion and one insertion, so a
// pathological input cannot take quadratic memory.
const MaxEdits = 1000

// Words splits s into tokens: runs of letters and digits (with inner
// apostrophes), runs of whitespace, and single other characters. Joining
// the tokens gives s back.
func Words(s string) []string {
	if s == "" {
		return nil
	}
	n := 0
	for i := 0; i < len(s); i = TokenEnd(s, i) {
		n++
	}
	out := make([]string, 0, n)
	for i := 0; i < len(s); {
		j := TokenEnd(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// asciiClass is the class of each ASCII byte for TokenEnd: a word
// character, whitespace, or neither.
var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		switch {
		case isWord(r):
			c[r] = cWord
		case unicode.IsSpace(r):
			c[r] = cSpace
		}
	}
	return c
}()

const (
	cOther uint8 = iota
	cWord
	cSpace
)

// TokenEnd returns the end of the token of Words that starts at byte i of
// s (i < len(s)), for reading the tokens of a long text one at a time:
// s[i:TokenEnd(s, i)] is the token.
func TokenEnd(s string, i int) int {
	if c := s[i]; c < utf8.RuneSelf {
		switch asciiClass[c] {
		case cOther:
			return i + 1
		case cWord:
			// a run of ASCII letters and digits, then the general rules
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf && asciiClass[s[j]] == cWord {
				j++
			}
			if j == len(s) || s[j] < utf8.RuneSelf && s[j] != '\'' && s[j] != '.' && s[j] != ',' {
				return j
			}
		case cSpace:
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf && asciiClass[s[j]] == cSpace {
				j++
			}
			if j == len(s) || s[j] < utf8.RuneSelf {
				return j
			}
		}
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	j := i + n
	switch {
	case isWord(r):
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if isWord(r2) {
				j += n2
				continue
			}
			// keep "don't" and "3.14" in one token
			if (r2 == '\'' || r2 == '’' || r2 == '.' || r2 == ',') && j+n2 < len(s) {
				r3, _ := utf8.DecodeRuneInString(s[j+n2:])
				if isWord(r3) && (r2 == '\'' || r2 == '’' || unicode.IsDigit(r3)) {
					j += n2
					continue
				}
			}
			break
		}
	case unicode.IsSpace(r):
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsSpace(r2) {
				break
			}
			j += n2
		}
	}
	return j
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }

// IsSpace reports whether a token from Words is whitespace.
func IsSpace(tok string) bool {
	if tok != "" && tok[0] < utf8.RuneSelf {
		return asciiClass[tok[0]] == cSpace
	}
	r, _ := utf8.DecodeRuneInString(tok)
	return tok != "" && unicode.IsSpace(r)
}

// WordDiff compares two texts word by word.
func WordDiff(old, new string) []Edit {
	return (*Budget)(nil).WordDiff(old, new)
}

// A Budget bounds the work of the edit scripts drawn on it, so that a
// caller comparing many texts (a page's blocks, a feed's items) spends
// time in proportion to what it set aside rather than to the number of
// texts times their lengths and differences. A script's work is the
// tokens its search visits; one that would spend more than the budget
// has left gives up, as one past MaxEdits does: the middle part that
// differs is one deletion and one insertion (Common keeps nothing of it),
// and the budget is spent. A script whose tokens show it to be past
// MaxEdits gives up at once, spending nothing. A nil *Budget is
// unlimited. A Budget is not safe for concurrent use.
type Budget struct{ left int64 }

// NewBudget returns a budget of work token visits.
func NewBudget(work int64) *Budget { return &Budget{left: work} }

// Left is the work the budget has left (-1 when unlimited).
func (bu *Budget) Left() int64 {
	if bu == nil {
		return -1
	}
	return bu.left
}

// spent reports whether bu has no work left: a search of two sequences
// that differ from their first tokens on (their common prefix and suffix
// taken off) then gives up before its second step, and is given up at
// once, without numbering or counting their tokens.
func (bu *Budget) spent() bool { return bu != nil && bu.left == 0 }

// WordDiff is WordDiff drawing on bu.
func (bu *Budget) WordDiff(old, new string) []Edit {
	tb := tokenBufs.Get().(*tokenBuf)
	defer tb.release()
	tb.a, tb.b = appendWords(tb.a[:0], old, false), appendWords(tb.b[:0], new, false)
	return bu.diff(tb.a, tb.b, &source{text: old}, &source{text: new})
}

// tokenBuf holds the tokens of two texts while they are compared, for
// the next comparison.
type tokenBuf struct{ a, b []string }

var tokenBufs = sync.Pool{New: func() any { return new(tokenBuf) }}

// release empties tb (so that it holds on to no text) and returns it to
// the pool.
func (tb *tokenBuf) release() {
	clear(tb.a)
	clear(tb.b)
	tokenBufs.Put(tb)
}

// appendWords appends the tokens of Words(s) to out, less the
// whitespace ones when nonSpace is set.
func appendWords(out []string, s string, nonSpace bool) []string {
	if cap(out)-len(out) < len(s)/2+1 {
		// perhaps too short: grow it once, for the tokens counted
		n := 0
		for i := 0; i < len(s); {
			j := TokenEnd(s, i)
			if !nonSpace || !IsSpace(s[i:j]) {
				n++
			}
			i = j
		}
		out = slices.Grow(out, n)
	}
	for i := 0; i < len(s); {
		j := TokenEnd(s, i)
		if !nonSpace || !IsSpace(s[i:j]) {
			out = append(out, s[i:j])
		}
		i = j
	}
	return out
}

// Diff returns an edit script turning a into b, with adjacent tokens of the
// same operation joined into one Edit. Within a changed run deletions come
// before insertions.
func Diff(a, b []string) []Edit {
	return (*Budget)(nil).Diff(a, b)
}

// Diff is Diff drawing on bu.
func (bu *Budget) Diff(a, b []string) []Edit { return bu.diff(a, b, nil, nil) }

// diff is Diff. When a and b are the whole tokens of texts, in order,
// sa and sb are those texts, and the edits' texts are cut from them
// rather than joined from the tokens: a long text's edits then cost no
// copies.
func (bu *Budget) diff(a, b []string, sa, sb *source) []Edit {
	var edits []Edit
	var last *source // where the last edit was cut from, if it was
	lastEnd := 0     // and the offset it ends at
	emit := func(op Op, toks []string, src *source, i, j int) {
		if i == j {
			return
		}
		if src == nil {
			s := strings.Join(toks[i:j], "")
			if n := len(edits); n > 0 && edits[n-1].Op == op {
				edits[n-1].Text += s
				return
			}
			edits = append(edits, Edit{Op: op, Text: s})
			return
		}
		start, end := src.at(toks, i), src.at(toks, j)
		if n := len(edits); n > 0 && edits[n-1].Op == op {
			if last == src && lastEnd == start {
				// the run goes on where the last one ended
				prev := edits[n-1].Text
				edits[n-1].Text = src.text[start-len(prev) : end]
			} else {
				edits[n-1].Text += src.text[start:end]
				last = nil
			}
			lastEnd = end
			return
		}
		edits = append(edits, Edit{Op: op, Text: src.text[start:end]})
		last, lastEnd = src, end
	}
	// Common prefix and suffix first: most versions differ in a small middle.
	p, s := Affixes(a, b)
	emit(Equal, a, sa, 0, p)
	for _, e := range bu.myers(a[p:len(a)-s], b[p:len(b)-s]) {
		switch e.op {
		case Equal:
			emit(Equal, a, sa, p+e.ai, p+e.ai+e.n)
		case Delete:
			emit(Delete, a, sa, p+e.ai, p+e.ai+e.n)
		case Insert:
			emit(Insert, b, sb, p+e.bi, p+e.bi+e.n)
		}
	}
	emit(Equal, a, sa, len(a)-s, len(a))
	return reorder(edits)
}

// source is the text a sequence of tokens was read from, whole and in
// order, with a cursor that finds the offset of a token: the tokens
// asked for come in order, so finding them all costs one pass.
type source struct {
	text     string
	tok, off int // the cursor: token tok starts at byte off
}

// at returns the offset in src.text of token i of toks (len(src.text) for
// len(toks)).
func (src *source) at(toks []string, i int) int {
	if i < src.tok {
		src.tok, src.off = 0, 0
	}
	for ; src.tok < i; src.tok++ {
		src.off += len(toks[src.tok])
	}
	return src.off
}

// Run is a run of an index-level edit script: N tokens from A in the old
// sequence (Equal, Delete) and from B in the new one (Equal, Insert).
type Run struct {
	Op   Op
	A, B int
	N    int
}

// Script returns a shortest edit script turning a into b as runs of token
// indices, in order (up to MaxEdits: past it the middle part that differs
// is one deletion and one insertion, as in Diff).
func Script(a, b []string) []Run {
	return (*Budget)(nil).Script(a, b)
}

// Script is Script drawing on bu.
func (bu *Budget) Script(a, b []string) []Run {
	var out []Run
	add := func(op Op, i, j, n int) {
		if n == 0 {
			return
		}
		if k := len(out) - 1; k >= 0 && out[k].Op == op {
			out[k].N += n
			return
		}
		out = append(out, Run{Op: op, A: i, B: j, N: n})
	}
	p, s := Affixes(a, b)
	add(Equal, 0, 0, p)
	i, j := p, p
	for _, e := range bu.myers(a[p:len(a)-s], b[p:len(b)-s]) {
		switch e.op {
		case Equal:
			add(Equal, i, j, e.n)
			i += e.n
			j += e.n
		case Delete:
			add(Delete, i, j, e.n)
			i += e.n
		case Insert:
			add(Insert, i, j, e.n)
			j += e.n
		}
	}
	add(Equal, i, j, s)
	return out
}

// reorder puts each deletion before the insertion it pairs with, so a
// replaced word reads "old new".
func reorder(edits []Edit) []Edit {
	for i := 0; i+1 < len(edits); i++ {
		if edits[i].Op == Insert && edits[i+1].Op == Delete {
			edits[i], edits[i+1] = edits[i+1], edits[i]
		}
	}
	return edits
}

type span struct {
	op     Op
	ai, bi int // start in a (Equal, Delete) or b (Insert, Equal)
	n      int
}

// myers finds a shortest edit script between a and b (Myers 1986),
// keeping the V array of every step to trace the path back.
func (bu *Budget) myers(a, b []string) []span {
	if len(a) > 0 && len(b) > 0 && (bu.spent() || pastMaxEdits(a, b)) {
		return []span{{op: Delete, n: len(a)}, {op: Insert, n: len(b)}}
	}
	if len(a) > 0 && len(b) > 0 && numbered(len(a)+len(b)) {
		nb := number(a, b)
		defer nb.release()
		return myersOf(bu, nb.a, nb.b)
	}
	return myersOf(bu, a, b)
}

// myersOf is myers of any comparable tokens.
func myersOf[T comparable](bu *Budget, a, b []T) []span {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil
	}
	if n == 0 {
		return []span{{op: Insert, n: m}}
	}
	if m == 0 {
		return []span{{op: Delete, n: n}}
	}
	// The frontiers of all steps, one after the other: the frontier
	// before step d has 2d+3 entries and starts at d²+2d, the sum of
	// those before it.
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	trace := sc.trace[:0]
	found := forward(bu, a, b, func(d int, frontier []int) {
		for _, x := range frontier {
			trace = append(trace, int32(x))
		}
	})
	sc.trace = trace
	if found < 0 {
		return []span{{op: Delete, n: n}, {op: Insert, n: m}}
	}
	// Trace back from (n, m).
	var rev []span
	x, y := n, m
	for d := found; d > 0; d-- {
		vp := trace[d*d+2*d:] // V before step d, indexed k+d+1
		k := x - y
		get := func(k int) int { return int(vp[k+d+1]) }
		var pk int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			pk = k + 1 // came down: insertion
		} else {
			pk = k - 1 // came right: deletion
		}
		px := get(pk)
		py := px - pk
		// snake from the end of the edit to (x, y)
		sx := px
		if pk == k-1 {
			sx = px + 1
		}
		sy := sx - k
		if x > sx {
			rev = append(rev, span{op: Equal, ai: sx, bi: sy, n: x - sx})
		}
		if pk == k+1 {
			rev = append(rev, span{op: Insert, bi: py, n: 1})
		} else {
			rev = append(rev, span{op: Delete, ai: px, n: 1})
		}
		x, y = px, py
	}
	if x > 0 {
		rev = append(rev, span{op: Equal, n: x})
	}
	out := make([]span, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}

// Similarity is 2·E/(A+B) over the word tokens (whitespace ignored) of two
// texts, where E counts the words the diff keeps: 1 for equal texts, 0 for
// texts with no word in common. Two empty texts are equal.
func Similarity(a, b string) float64 {
	return (*Budget)(nil).Similarity(a, b)
}

// Similarity is Similarity drawing on bu.
func (bu *Budget) Similarity(a, b string) float64 {
	tb := tokenBufs.Get().(*tokenBuf)
	defer tb.release()
	tb.a, tb.b = appendWords(tb.a[:0], a, true), appendWords(tb.b[:0], b, true)
	wa, wb := tb.a, tb.b
	if len(wa)+len(wb) == 0 {
		return 1
	}
	return 2 * float64(bu.Common(wa, wb)) / float64(len(wa)+len(wb))
}

// Common counts the tokens a shortest edit script keeps from a and b (the
// length of their longest common subsequence, up to MaxEdits).
func Common(a, b []string) int {
	return (*Budget)(nil).Common(a, b)
}

// Common is Common drawing on bu.
func (bu *Budget) Common(a, b []string) int {
	p, s := affixes(a, b)
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	if bu.spent() || pastMaxEdits(ma, mb) {
		return p + s
	}
	if len(ma) > 0 && len(mb) > 0 && numbered(len(ma)+len(mb)) {
		nb := number(ma, mb)
		defer nb.release()
		return p + s + commonLen(bu, nb.a, nb.b)
	}
	return p + s + commonLen(bu, ma, mb)
}

// numbered reports whether a search of n tokens compares them by number
// (see number): from a few dozen on, up to a size past which the search
// gives up (at MaxEdits) after comparing fewer tokens than numbering
// them all would cost.
func numbered(n int) bool { return n >= 32 && n <= 8*MaxEdits }

// numbering is the tokens of two sequences as numbers: the same token,
// the same number. The searches compare numbers much faster than
// strings, which pays for numbering them when the texts are long.
type numbering struct {
	ids  map[string]int32
	a, b []int32
}

var numberingPool = sync.Pool{New: func() any { return &numbering{ids: map[string]int32{}} }}

func number(a, b []string) *numbering {
	nb := numberingPool.Get().(*numbering)
	of := func(out []int32, toks []string) []int32 {
		for _, t := range toks {
			id, ok := nb.ids[t]
			if !ok {
				id = int32(len(nb.ids))
				nb.ids[t] = id
			}
			out = append(out, id)
		}
		return out
	}
	nb.a = of(nb.a[:0], a)
	nb.b = of(nb.b[:0], b)
	return nb
}

// release returns nb to the pool, emptied (a map grown large is dropped
// rather than kept: clearing it would cost every later use its size).
func (nb *numbering) release() {
	if len(nb.ids) > 1<<12 {
		nb.ids = map[string]int32{}
	} else {
		clear(nb.ids)
	}
	numberingPool.Put(nb)
}

// CommonOf is Common drawing on bu, of sequences of any comparable
// tokens: words numbered by the caller compare faster than strings.
func CommonOf[T comparable](bu *Budget, a, b []T) int {
	p, s := affixes(a, b)
	return p + s + commonLen(bu, a[p:len(a)-s], b[p:len(b)-s])
}

// commonLen is the number of tokens myers keeps from a and b, found with
// its forward pass alone: a shortest edit script of d insertions and
// deletions keeps (len(a)+len(b)-d)/2 tokens, so the count needs neither
// the pass's trace (a copy of its frontier at every step) nor the script.
// Past MaxEdits nothing is kept, as myers gives then.
func commonLen[T comparable](bu *Budget, a, b []T) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if d := forward(bu, a, b, nil); d >= 0 {
		return (len(a) + len(b) - d) / 2
	}
	return 0
}

// forward is the forward pass of Myers's algorithm on a and b (both not
// empty): the number of insertions and deletions of a shortest edit
// script, -1 past MaxEdits or past what bu has left (which it then
// spends). Before step d, atStep (when not nil) is given the frontier the
// step starts from, the furthest x on diagonals -d-1 to d+1 (to be
// copied: it changes).
func forward[T comparable](bu *Budget, a, b []T, atStep func(d int, frontier []int)) int {
	n, m := len(a), len(b)
	limit := min(n+m, MaxEdits)
	off := limit + 1
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if cap(sc.v) < 2*limit+3 {
		sc.v = make([]int, 2*limit+3)
	}
	v := sc.v[:2*limit+3]
	clear(v)
	var work int64 // diagonals visited and tokens compared
	if bu != nil {
		defer func() { bu.left = max(0, bu.left-work) }()
	}
	for d := 0; d <= limit; d++ {
		if bu != nil && work > bu.left {
			return -1
		}
		work += int64(d + 1)
		if atStep != nil {
			atStep(d, v[off-d-1:off+d+2])
		}
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			x0 := x
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			work += int64(x - x0)
			v[off+k] = x
			if x >= n && y >= m {
				return d
			}
		}
	}
	return -1
}

// pastMaxEdits reports whether a and b surely differ by more than
// MaxEdits insertions and deletions, on which the search gives up (after
// spending its work, as much as a whole budget on long texts): an edit
// script keeps at most the tokens the two have in common. They are
// counted by buckets of their hashes, two tokens of a bucket taken for
// the same, which can only count more than there are and so never tells
// a pair past MaxEdits that is not.
func pastMaxEdits(a, b []string) bool {
	n, m := len(a), len(b)
	if n+m <= MaxEdits {
		return false
	}
	if n-m > MaxEdits || m-n > MaxEdits {
		return true
	}
	// buckets about as many as the tokens, so that few words share one
	size := min(maxBuckets, 1<<bits.Len(uint(n+m)))
	bp := bucketPool.Get().(*[]int32)
	defer bucketPool.Put(bp)
	if len(*bp) < size {
		*bp = make([]int32, maxBuckets)
	}
	count := (*bp)[:size]
	clear(count)
	shift := 64 - bits.Len(uint(size-1))
	for _, t := range a {
		count[tokenHash(t)>>shift]++
	}
	common := 0
	for _, t := range b {
		if c := &count[tokenHash(t)>>shift]; *c > 0 {
			*c--
			common++
		}
	}
	return n+m-2*common > MaxEdits
}

// tokenHash is a quick hash of a token for pastMaxEdits, of its length
// and up to four bytes at each end: tokens are short, and two that it
// takes for the same only make the count of tokens in common larger.
func tokenHash(t string) uint64 {
	h := uint64(len(t))
	if len(t) <= 8 {
		for i := 0; i < len(t); i++ {
			h = h<<8 | uint64(t[i])
		}
	} else {
		e := len(t) - 4
		h ^= uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[e])<<32 | uint64(t[e+1])<<40 | uint64(t[e+2])<<48 | uint64(t[e+3])<<56
	}
	return (h ^ h>>29) * 0x9E3779B97F4A7C15
}

// maxBuckets is the most buckets pastMaxEdits counts tokens in: more than
// the distinct words of a long text.
const maxBuckets = 1 << 16

var bucketPool = sync.Pool{New: func() any { return new([]int32) }}

// scratch holds the buffers of a search, kept for the next one: its V
// array and the trace of its frontiers.
type scratch struct {
	v     []int
	trace []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Affixes returns the lengths of the common prefix and suffix of a and b
// (the suffix within what the prefix leaves).
func Affixes(a, b []string) (p, s int) { return affixes(a, b) }

func affixes[T comparable](a, b []T) (p, s int) {
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p, s
}

// Readable regroups an edit script for people: where most words of a
// passage changed, word-by-word alternation ("old1 new1 old2 new2") is
// hard to read, so an unchanged run between two changes is folded into
// them when it is no longer than either change (the rule of
// diff-match-patch's semantic cleanup), and each run of changes becomes
// one deletion followed by one insertion ("old1 old2 new1 new2"). Both
// sides of the script are kept as they were.
func Readable(edits []Edit) []Edit {
	// changeLen is the size of the run of changes starting at i.
	changeLen := func(i int) int {
		d, n := 0, 0
		for ; i < len(edits) && edits[i].Op != Equal; i++ {
			if edits[i].Op == Delete {
				d += len(edits[i].Text)
			} else {
				n += len(edits[i].Text)
			}
		}
		return max(d, n)
	}
	var out []Edit
	var del, ins strings.Builder
	flush := func() {
		if del.Len() > 0 {
			out = append(out, Edit{Op: Delete, Text: del.String()})
			del.Reset()
		}
		if ins.Len() > 0 {
			out = append(out, Edit{Op: Insert, Text: ins.String()})
			ins.Reset()
		}
	}
	before := 0 // size of the change run just before
	for i, e := range edits {
		switch e.Op {
		case Delete:
			del.WriteString(e.Text)
			before += len(e.Text)
		case Insert:
			ins.WriteString(e.Text)
			before += len(e.Text)
		default:
			if del.Len()+ins.Len() > 0 && i+1 < len(edits) {
				if after := changeLen(i + 1); len(e.Text) <= min(before, after) {
					del.WriteString(e.Text)
					ins.WriteString(e.Text)
					continue
				}
			}
			flush()
			before = 0
			out = append(out, e)
		}
	}
	flush()
	return out
}
