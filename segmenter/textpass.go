package segmenter

import (
	"sort"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// The text pass: what the tree comparison found, checked against the
// text a reader sees.
//
// The tree comparison reports text by the elements that hold it, so markup
// rebuilt around the same words (a theme that wraps the content in two
// more divs, entries that gain <p> tags, a table column dropped in every
// row while the row reads the same) comes out as whole texts deleted and
// inserted. The text pass compares the visible text of each compared group
// of segments, old against new, word by word (the same shortest edit
// script as everywhere else), and looks at every change that carries text:
//   - an element inserted, deleted or moved whose words all stay where
//     they were in the text changed only the markup: it becomes (or stays)
//     one structural change showing its start tag, not its text;
//   - an element inserted or deleted whose words mostly stay, and the
//     updates of a block's own text, are shown as the runs of words that
//     changed in the text, each one content change at its element, with up
//     to Context words around it (as hunks of a block update are);
//   - an element whose words mostly changed keeps its whole text.
// A group whose texts differ by more than textdiff.MaxEdits words is left
// as the tree comparison found it.

// textGroup is one compared group: the two treelets and the token ranges
// they were built from.
type textGroup struct {
	or, nr         *tnode
	oparts, nparts []treePart

	done     bool
	skip     bool
	old, new *groupText
	script   []textdiff.Run
}

// groupText is the visible text of one side of a group as word tokens.
type groupText struct {
	parts   []treePart
	offs    [][]int // per part: byte offset in text where each token a..b starts
	text    string
	toks    []string // tokens without whitespace
	at      []int    // byte offset of each token
	changed []bool   // the token is not kept by the edit script
	// firm: kept within a run of at least minFirm unchanged tokens. Which
	// of two equal short words a script keeps is a matter of chance (a
	// table's "No" cells), so only firm words show that an element
	// inserted or deleted kept its text
	firm   []bool
	report []*tnode       // the element whose changes show this token (nil: none)
	shown  []bool         // shown whole by an element inserted or deleted
	grams  map[uint64]int // runs of four tokens, counted
}

// gramHash is the hash of the four tokens from k.
func (gt *groupText) gramHash(k int) uint64 {
	h := hashSeed
	for _, w := range gt.toks[k : k+4] {
		h = hashString(h, w)
	}
	return h
}

// present is the share of the runs of four tokens of [i, j) that other
// has as often as this side: text that is still (or was already) on the
// page, if not at the place the edit script says. (One of two equal
// paragraphs deleted is not still there.)
func (gt *groupText) present(i, j int, other *groupText) float64 {
	gt.countGrams()
	other.countGrams()
	n, in := 0, 0
	for k := i; k+4 <= j; k++ {
		n++
		if h := gt.gramHash(k); other.grams[h] >= gt.grams[h] {
			in++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(in) / float64(n)
}

func (gt *groupText) countGrams() {
	if gt.grams != nil {
		return
	}
	gt.grams = map[uint64]int{}
	for k := 0; k+4 <= len(gt.toks); k++ {
		gt.grams[gt.gramHash(k)]++
	}
}

func newGroupText(parts []treePart) *groupText {
	gt := &groupText{parts: parts}
	var sb strings.Builder
	for _, p := range parts {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		d := p.d
		offs := make([]int, p.b-p.a+1)
		brk := false
		for i := p.a; i < p.b && i < len(d.toks); i++ {
			offs[i-p.a] = sb.Len()
			t := &d.toks[i]
			switch {
			case t.kind != tText:
				if t.flags&fBreak != 0 {
					brk = true
				}
			case t.flags&fVisible != 0:
				if sb.Len() > 0 && (brk || t.flags&fSpaceBefore != 0) {
					sb.WriteByte(' ')
				}
				sb.Write(d.textBytes(i))
				brk = t.flags&fSpaceAfter != 0
			}
		}
		for i := max(p.a, min(p.b, len(d.toks))); i <= p.b; i++ {
			offs[i-p.a] = sb.Len()
		}
		gt.offs = append(gt.offs, offs)
	}
	gt.text = sb.String()
	at := 0
	for _, w := range textdiff.Words(gt.text) {
		if !textdiff.IsSpace(w) {
			gt.toks = append(gt.toks, w)
			gt.at = append(gt.at, at)
		}
		at += len(w)
	}
	gt.changed = make([]bool, len(gt.toks))
	gt.firm = make([]bool, len(gt.toks))
	gt.report = make([]*tnode, len(gt.toks))
	gt.shown = make([]bool, len(gt.toks))
	return gt
}

// tokens returns the range of word tokens in scanned tokens [a, b) of d.
func (gt *groupText) tokens(d *doc, a, b int) (int, int, bool) {
	for k, p := range gt.parts {
		if p.d != d || a < p.a || a >= p.b {
			continue
		}
		b0, b1 := gt.offs[k][a-p.a], gt.offs[k][min(b, p.b)-p.a]
		i := sort.SearchInts(gt.at, b0)
		j := sort.SearchInts(gt.at, b1)
		return i, j, true
	}
	return 0, 0, false
}

// nodeTokens is the range of word tokens of node n.
func (gt *groupText) nodeTokens(n *tnode) (int, int, bool) {
	if n == nil || n.d == nil {
		return 0, 0, false
	}
	return gt.tokens(n.d, int(n.tokA), int(n.tokB))
}

// besideChange reports whether a token next to [i, j) is not kept by the
// edit script. An element moved whose words the script keeps, with words
// it does not keep beside them, changed the order the page reads in (of
// two blocks swapped, the script may keep the one the tree comparison
// found moved and take the other out and back in): the move is told with
// its words, or none of the words that moved would be.
func (gt *groupText) besideChange(i, j int) bool {
	return i > 0 && gt.changed[i-1] || j < len(gt.changed) && gt.changed[j]
}

// minFirm is the length of a run of unchanged tokens whose words are
// taken for kept in place.
const minFirm = 8

// minPresent is the share of an element's runs of four words that the
// other side must have for its words to count as kept.
const minPresent = 0.7

// minBlockSim is the word similarity (Dice) of a block's old and new text
// below which its update is checked against the text of the group.
const minBlockSim = 0.5

// loose counts the tokens of [i, j) that are not firmly kept.
func (gt *groupText) loose(i, j int) int {
	c := 0
	for k := i; k < j; k++ {
		if !gt.firm[k] {
			c++
		}
	}
	return c
}

// prepare diffs the group's texts once.
func (g *textGroup) prepare(bu *textdiff.Budget) bool {
	if g.done {
		return !g.skip
	}
	g.done = true
	g.old, g.new = newGroupText(g.oparts), newGroupText(g.nparts)
	g.script = bu.Script(g.old.toks, g.new.toks)
	edits := 0
	for _, r := range g.script {
		switch r.Op {
		case textdiff.Equal:
			if r.N >= minFirm {
				for k := range r.N {
					g.old.firm[r.A+k], g.new.firm[r.B+k] = true, true
				}
			}
		case textdiff.Delete:
			edits += r.N
			for k := r.A; k < r.A+r.N; k++ {
				g.old.changed[k] = true
			}
		case textdiff.Insert:
			edits += r.N
			for k := r.B; k < r.B+r.N; k++ {
				g.new.changed[k] = true
			}
		}
	}
	g.skip = edits >= textdiff.MaxEdits
	return !g.skip
}

// size is the number of tokens the group's texts are read from.
func (g *textGroup) size() int {
	n := 0
	for _, p := range g.oparts {
		n += p.b - p.a
	}
	for _, p := range g.nparts {
		n += p.b - p.a
	}
	return n
}

// rootOf is the treelet root above n.
func rootOf(n *tnode) *tnode {
	for n != nil && n.parent != nil {
		n = n.parent
	}
	return n
}

// textPass checks the changes that carry text against the text of their
// group (see above); ctx is the number of context words (< 0: whole texts,
// which leaves block updates as they are).
func (df *differ) textPass(ctx int) {
	if len(df.groups) == 0 {
		return
	}
	byRoot := map[*tnode]*textGroup{}
	for _, g := range df.groups {
		byRoot[g.or], byRoot[g.nr] = g, g
	}
	groupOf := func(rc *rawChange) *textGroup {
		var g *textGroup
		if rc.o != nil {
			g = byRoot[rootOf(rc.o)]
		}
		if rc.n != nil {
			h := byRoot[rootOf(rc.n)]
			if g != nil && h != g {
				return nil
			}
			g = h
		}
		if g == nil {
			return nil
		}
		if !g.done {
			df.w.add(g.size())
		}
		if !g.prepare(df.w.budget()) {
			return nil
		}
		return g
	}
	// mark notes that the changed tokens of [i, j) are shown by runs at n.
	mark := func(gt *groupText, i, j int, n *tnode) {
		df.w.add(j - i)
		for k := i; k < j; k++ {
			if gt.changed[k] && gt.report[k] == nil {
				gt.report[k] = n
			}
		}
	}
	markup := func(rc *rawChange) {
		rc.typ = changedigest.ChangeStructural
		if rc.o != nil && rc.op != changedigest.OpInsert {
			rc.old = df.old.describe(rc.o)
		}
		if rc.n != nil && rc.op != changedigest.OpDelete {
			rc.new = df.new.describe(rc.n)
		}
	}
	out := df.out[:0]
	touched := map[*textGroup]bool{}
	for i := range df.out {
		df.w.add(1)
		rc := df.out[i]
		textful := func(n *tnode) bool { return n != nil && (n.hasWords() || (n.isText() && n.visible)) }
		switch {
		case rc.typ == changedigest.ChangeContent && rc.op == changedigest.OpUpdate && rc.runs != nil && ctx >= 0 &&
			diceTexts(rc.old, rc.new) < minBlockSim:
			// A block whose text changed for the most part: its words
			// may have gone to or come from other elements (a text that
			// lost its paragraphs to new <p> tags, blocks paired off by
			// one), which the text of the group tells.
			g := groupOf(&rc)
			if g == nil {
				break
			}
			oi, oj, ok1 := g.old.tokens(rc.o.d, rc.runs[0][0], rc.runs[0][1])
			ni, nj, ok2 := g.new.tokens(rc.n.d, rc.runs[1][0], rc.runs[1][1])
			if !ok1 || !ok2 {
				break
			}
			// the words that changed in the text are shown by the runs
			mark(g.old, oi, oj, rc.o)
			mark(g.new, ni, nj, rc.n)
			touched[g] = true
			continue
		case (rc.op == changedigest.OpInsert || rc.op == changedigest.OpDelete) &&
			(rc.typ == changedigest.ChangeContent || rc.typ == changedigest.ChangeStructural):
			n, gt, other := rc.o, (*groupText)(nil), (*groupText)(nil)
			g := groupOf(&rc)
			if g == nil {
				break
			}
			if rc.op == changedigest.OpInsert {
				n, gt, other = rc.n, g.new, g.old
			} else {
				gt, other = g.old, g.new
			}
			if !textful(n) {
				break
			}
			i, j, ok := gt.nodeTokens(n)
			if !ok || j-i < minFirm {
				break // a few words (a table cell) stay as they are
			}
			c := gt.loose(i, j)
			switch {
			case 2*c > j-i || gt.present(i, j, other) < minPresent:
				// new words, or old words in a new order (an entry added
				// on top of entries alike, which the script would align
				// with its neighbour): the element's text as a whole
			case c == 0:
				if n.isText() {
					continue // the same words, no markup: no change
				}
				markup(&rc)
			default:
				if !n.isText() {
					markup(&rc)
					out = append(out, rc)
				}
				mark(gt, i, j, n)
				touched[g] = true
				continue
			}
		case rc.op == changedigest.OpMove && textful(rc.o) && textful(rc.n):
			g := groupOf(&rc)
			if g == nil {
				break
			}
			oi, oj, ok1 := g.old.nodeTokens(rc.o)
			ni, nj, ok2 := g.new.nodeTokens(rc.n)
			if ok1 && ok2 && oj-oi >= minFirm && g.old.loose(oi, oj) == 0 && g.new.loose(ni, nj) == 0 &&
				g.old.present(oi, oj, g.new) >= minPresent && !g.old.besideChange(oi, oj) && !g.new.besideChange(ni, nj) {
				markup(&rc)
			}
		}
		out = append(out, rc)
	}
	df.out = out
	if len(touched) == 0 {
		return
	}
	// An element inserted or deleted with its whole text shows its words
	// already: the runs of a block around it (a page whose body text
	// changed along with a new div in it) leave them out.
	for _, rc := range df.out {
		if rc.typ != changedigest.ChangeContent || (rc.op != changedigest.OpInsert && rc.op != changedigest.OpDelete) {
			continue
		}
		n, gt := rc.n, (*groupText)(nil)
		var g *textGroup
		if rc.op == changedigest.OpInsert {
			if g = byRoot[rootOf(n)]; g != nil {
				gt = g.new
			}
		} else {
			n = rc.o
			if g = byRoot[rootOf(n)]; g != nil {
				gt = g.old
			}
		}
		if gt == nil || !touched[g] {
			continue
		}
		if i, j, ok := gt.nodeTokens(n); ok {
			df.w.add(j - i)
			for k := i; k < j; k++ {
				gt.shown[k] = true
			}
		}
	}
	for _, g := range df.groups {
		if touched[g] {
			df.w.add(len(g.script))
			df.out = append(df.out, g.runs(ctx)...)
		}
	}
}

// runs are the content changes of the changed tokens some change left to
// the text pass: one per run of changed tokens (runs apart by at most
// hunkGap unchanged tokens are one), at the element that holds it.
func (g *textGroup) runs(ctx int) []rawChange {
	script := g.script
	var out []rawChange
	type span struct{ i, j int } // token range, j exclusive; i == j: none
	for k := 0; k < len(script); {
		if script[k].Op == textdiff.Equal {
			k++
			continue
		}
		// the run: script[k:l], short equal runs folded in
		l := k
		for l < len(script) {
			if script[l].Op == textdiff.Equal {
				if script[l].N > hunkGap || l+1 == len(script) {
					break
				}
			}
			l++
		}
		if kd := runKind(script[k:l]); kd == kindDel || kd == kindIns {
			// only deleted or only inserted words: the kept words
			// between them would show on one side and the other
			// ("</i>Urophora cardui</i>" → "Urophora cardui"), so each
			// run is a change of its own
			l = k
			for l < len(script) && script[l].Op != textdiff.Equal {
				l++
			}
		}
		// its reported tokens on each side
		os, ns := span{-1, -1}, span{-1, -1}
		var on, nn *tnode
		for _, r := range script[k:l] {
			if r.Op != textdiff.Insert {
				for t := r.A; t < r.A+r.N; t++ {
					if g.old.report[t] != nil && !g.old.shown[t] {
						if os.i < 0 {
							os.i, on = t, g.old.report[t]
						}
						os.j = t + 1
					}
				}
			}
			if r.Op != textdiff.Delete {
				for t := r.B; t < r.B+r.N; t++ {
					if g.new.report[t] != nil && !g.new.shown[t] {
						if ns.i < 0 {
							ns.i, nn = t, g.new.report[t]
						}
						ns.j = t + 1
					}
				}
			}
		}
		k = l
		if os.i < 0 && ns.i < 0 {
			continue
		}
		old, new := g.old.slice(os.i, os.j), g.new.slice(ns.i, ns.j)
		if sameText(old, new) {
			continue
		}
		rc := rawChange{typ: changedigest.ChangeContent, old: old, new: new, o: on, n: nn}
		switch {
		case old == "":
			rc.op = changedigest.OpInsert
			rc.before, rc.after = g.new.around(ns.i, ns.j, ctx, nn)
		case new == "":
			rc.op = changedigest.OpDelete
			rc.before, rc.after = g.old.around(os.i, os.j, ctx, on)
		default:
			rc.op = changedigest.OpUpdate
			rc.before, rc.after = g.new.around(ns.i, ns.j, ctx, nn)
		}
		out = append(out, rc)
	}
	return out
}

// slice is the text of tokens [i, j), "" for none.
func (gt *groupText) slice(i, j int) string {
	if i < 0 || j <= i {
		return ""
	}
	return gt.text[gt.at[i] : gt.at[j-1]+len(gt.toks[j-1])]
}

// around is up to n words of text before token i and after token j-1
// within the text of element in, each with the space that separates it
// from the change.
func (gt *groupText) around(i, j, n int, in *tnode) (string, string) {
	if n <= 0 {
		return "", ""
	}
	a := gt.at[i]
	e := gt.at[j-1] + len(gt.toks[j-1])
	lo, hi := max(0, a-400), min(len(gt.text), e+400)
	if i0, j0, ok := gt.nodeTokens(in); ok && i0 < j0 {
		lo = max(lo, gt.at[i0])
		hi = min(hi, gt.at[j0-1]+len(gt.toks[j0-1]))
	}
	before, after := "", ""
	if lo < a {
		before = lastWordsOf(gt.text[lo:a], n)
	}
	if e < hi {
		after = firstWordsOf(gt.text[e:hi], n)
	}
	if strings.TrimSpace(before) == "" {
		before = ""
	}
	if strings.TrimSpace(after) == "" {
		after = ""
	}
	return before, after
}

// Containers compared word by word.
//
// The groups of the text pass end at segment boundaries, and a table row
// can span several segments: a column dropped from every row and another
// added at the end (a compatibility table that retires one browser
// version and adds the next) deletes a cell in one group and inserts one
// in another, while the row reads the same wherever the cells between
// hold the same words. containerPass compares, for each element (its
// path the same in both versions) that holds both a content delete and a
// content insert (or a structural one that shows its few words), its
// old and new text. When they differ only by words
// taken out and put in (the edit script is as long as the difference of
// their word counts: nothing reordered), a change none of whose words is
// among those the container lost (or gained) only moved markup: it
// becomes one structural change showing its start tag (a bare text, no
// markup, is no change). Where a row lost two cells and gained one, the
// cell whose words the row lost stays a content change. Moves are left
// as they are: a cell's start tag says more words than its text. Only
// when a delete and an insert may share their element (paths alike but
// for position numbers) is the old page scanned whole (when the track has
// it in pieces); containers are then matched by their paths in the whole
// documents.
func (df *differ) containerPass(oldDoc func() *doc, newDoc *doc) {
	// candidates: content inserts and deletes, and structural ones that
	// show their text (an element of a few words, which the text pass
	// leaves as it is)
	textual := func(rc *rawChange) bool {
		return rc.typ == changedigest.ChangeContent ||
			rc.typ == changedigest.ChangeStructural && !strings.HasPrefix(rc.old+rc.new, "<")
	}
	oldCand := func(rc *rawChange) bool {
		return textual(rc) && rc.op == changedigest.OpDelete && rc.o != nil
	}
	newCand := func(rc *rawChange) bool {
		return textual(rc) && rc.op == changedigest.OpInsert && rc.n != nil && rc.n.d == newDoc
	}
	// moves of an element whose text stays the same
	isMove := func(rc *rawChange) bool {
		return rc.op == changedigest.OpMove && rc.o != nil && rc.n != nil && rc.n.d == newDoc &&
			rc.old == rc.new && rc.old != "" && !strings.HasPrefix(rc.old, "<")
	}
	// A cheap look first, before the old page is scanned whole: the
	// paths of the old side's pieces may number their outer elements
	// from the piece (a row scanned from its middle), so paths are
	// compared without position numbers; on the new side only containers
	// short enough to compare (maxContainerWork) count.
	loose := func(p string) string {
		var sb strings.Builder
		skip := false
		for _, r := range p {
			switch {
			case r == '[':
				skip = true
			case r == ']':
				skip = false
			case !skip:
				sb.WriteRune(r)
			}
		}
		return sb.String()
	}
	ins := map[string]bool{}
	for i := range df.out {
		df.w.add(1)
		rc := &df.out[i]
		if !newCand(rc) && !isMove(rc) {
			continue
		}
		ei := rc.n.encl
		if rc.n.elem >= 0 {
			ei = newDoc.elems[rc.n.elem].parent
		}
		for up := 0; ei >= 0 && up < maxContainerUp; up++ {
			if w := wordsIn(newDoc, ei); w < 0 || w > maxContainerWork/4 {
				break
			}
			ins[loose(newDoc.path(ei))] = true
			ei = newDoc.elems[ei].parent
		}
	}
	any := false
	for i := range df.out {
		df.w.add(1)
		rc := &df.out[i]
		if !oldCand(rc) && !isMove(rc) {
			continue
		}
		p := df.old.path(rc.o)
		if rc.o.elem >= 0 {
			p = p[:max(0, strings.LastIndexByte(p, '|'))]
		}
		for up := 0; p != "" && up < maxContainerUp && !any; up++ {
			any = ins[loose(p)]
			p = p[:max(0, strings.LastIndexByte(p, '|'))]
		}
		if any {
			break
		}
	}
	if !any {
		return
	}
	od := oldDoc()
	if od == nil {
		return
	}
	// inDoc is the token range of n in the whole document d, and its
	// element (a text: the enclosing one).
	inDoc := func(d *doc, n *tnode) (a, b int, ei int32) {
		if n.d == d {
			ei = n.elem
			if ei < 0 {
				ei = n.encl
			}
			return int(n.tokA), int(n.tokB), ei
		}
		if int(n.tokA) >= len(n.d.toks) {
			return 0, 0, -1
		}
		t := n.d.toks[int(n.tokA)]
		off := int32(n.d.base) + t.off
		k := sort.Search(len(d.toks), func(i int) bool { return d.toks[i].off >= off })
		for ; k < len(d.toks) && d.toks[k].off == off; k++ {
			if d.toks[k].kind != t.kind {
				continue
			}
			if t.kind == tText {
				return k, k + 1, d.toks[k].elem
			}
			e := d.toks[k].elem
			return k, int(d.elems[e].endTok) + 1, e
		}
		return 0, 0, -1
	}
	type box struct {
		d  *doc
		ei int32
	}
	// pair is a container's old and new text, and the words the old one
	// lost and the new one gained, counted; ok: the texts differ only by
	// words taken out and put in, none reordered
	type pair struct {
		old, new     *groupText
		lost, gained map[string]int
		ok           bool
	}
	boxes := map[string]*pair{}
	container := func(d *doc, n *tnode) int32 {
		_, _, ei := inDoc(d, n)
		if ei < 0 || n.elem < 0 {
			return ei
		}
		return d.elems[ei].parent
	}
	textOf := func(d *doc, ei int32) *groupText {
		e := &d.elems[ei]
		if e.tok < 0 || e.endTok < e.tok {
			return nil
		}
		return newGroupText([]treePart{{d: d, a: int(e.tok), b: int(e.endTok) + 1}})
	}
	// The container of each candidate: the nearest of its element's
	// ancestors (up to maxContainerUp) whose path the other version has
	// among the ancestors of its own candidates, by paths in the whole
	// documents. A delete and an insert in one table row share the row;
	// a list rebuilt from <dl> to <ul> shares the section around it.
	chain := func(d *doc, ei int32) []int32 {
		var out []int32
		for ; ei >= 0 && len(out) < maxContainerUp && d.elems[ei].tok >= 0; ei = d.elems[ei].parent {
			out = append(out, ei)
		}
		return out
	}
	oldChains := make([][]int32, len(df.out))
	newChains := make([][]int32, len(df.out))
	oldEl, newEl := map[string]int32{}, map[string]int32{}
	for i := range df.out {
		df.w.add(1)
		rc := &df.out[i]
		if newCand(rc) || isMove(rc) {
			newChains[i] = chain(newDoc, container(newDoc, rc.n))
			for _, ei := range newChains[i] {
				newEl[newDoc.path(ei)] = ei
			}
		}
		if oldCand(rc) || isMove(rc) {
			oldChains[i] = chain(od, container(od, rc.o))
			for _, ei := range oldChains[i] {
				oldEl[od.path(ei)] = ei
			}
		}
	}
	shared := func(d *doc, c []int32, other map[string]int32) string {
		for _, ei := range c {
			if p := d.path(ei); p != "" {
				if _, ok := other[p]; ok {
					return p
				}
			}
		}
		return ""
	}
	at := make([]string, len(df.out))
	for i := range df.out {
		switch {
		case isMove(&df.out[i]):
			// a move within one container
			if p := shared(od, oldChains[i], newEl); p == shared(newDoc, newChains[i], oldEl) {
				at[i] = p
			}
		case oldChains[i] != nil:
			at[i] = shared(od, oldChains[i], newEl)
		default:
			at[i] = shared(newDoc, newChains[i], oldEl)
		}
	}
	for i := range df.out {
		p := at[i]
		if p == "" || boxes[p] != nil {
			continue
		}
		bx := &pair{}
		boxes[p] = bx
		oe, ne := oldEl[p], newEl[p]
		// the counts' difference is at least that of the word counts
		ow, nw := wordsIn(od, oe), wordsIn(newDoc, ne)
		if (ow+nw)*max(1, abs(ow-nw)) > maxContainerWork {
			continue
		}
		df.w.add(ow + nw)
		bx.old, bx.new = textOf(od, oe), textOf(newDoc, ne)
		if bx.old == nil || bx.new == nil {
			continue
		}
		bx.lost, bx.gained = map[string]int{}, map[string]int{}
		for _, w := range bx.old.toks {
			bx.lost[w]++
		}
		for _, w := range bx.new.toks {
			bx.gained[w]++
		}
		diff := 0
		for w, n := range bx.lost {
			m := bx.gained[w]
			bx.lost[w], bx.gained[w] = max(0, n-m), max(0, m-n)
			diff += abs(n - m)
		}
		for w, m := range bx.gained {
			if _, ok := bx.lost[w]; !ok {
				diff += m
			}
		}
		// A reorder makes the edit script longer than the counts'
		// difference. The script costs about the length of the texts
		// times their difference: a container that gained and lost
		// whole entries (a list of posts) is left as it is.
		n := len(bx.old.toks) + len(bx.new.toks)
		if diff >= textdiff.MaxEdits || n*max(diff, 1) > maxContainerWork {
			continue
		}
		edits := 0
		for _, r := range df.w.budget().Script(bx.old.toks, bx.new.toks) {
			if r.Op != textdiff.Equal {
				edits += r.N
			}
		}
		bx.ok = edits == diff
	}
	// words is the visible words of n in the whole document d.
	words := func(d *doc, n *tnode) []string {
		a, b, _ := inDoc(d, n)
		if b <= a {
			return nil
		}
		df.w.add(b - a)
		var ws []string
		for _, t := range textdiff.Words(d.visibleText(a, b)) {
			if !textdiff.IsSpace(t) {
				ws = append(ws, t)
			}
		}
		return ws
	}
	// has reports whether some word of n is among gone.
	has := func(d *doc, n *tnode, gone map[string]int) bool {
		for _, w := range words(d, n) {
			if gone[w] > 0 {
				return true
			}
		}
		return false
	}
	// kept reports whether n has words and none of them is among the
	// words its container lost (gained), which the changes before it
	// have not already shown; if some are, they are taken.
	kept := func(d *doc, n *tnode, gone map[string]int) bool {
		ws := words(d, n)
		if len(ws) == 0 {
			return false
		}
		need := map[string]int{}
		for _, w := range ws {
			need[w]++
		}
		some := false
		for w, k := range need {
			if gone[w] > 0 {
				some = true
				gone[w] -= min(k, gone[w])
			}
		}
		return !some
	}
	// Deletes and inserts first: they take the words they show from the
	// counts of their container.
	markup := make([]bool, len(df.out))
	for i := range df.out {
		rc := &df.out[i]
		bx := boxes[at[i]]
		if at[i] == "" || bx == nil || !bx.ok {
			continue
		}
		switch {
		case rc.op == changedigest.OpDelete && oldCand(rc):
			markup[i] = kept(od, rc.o, bx.lost)
		case rc.op == changedigest.OpInsert && newCand(rc):
			markup[i] = kept(newDoc, rc.n, bx.gained)
		}
	}
	// Then moves that leave the text as it reads: the same element moved
	// in many rows (a column moved) is markup, shown by its start tags
	// and told once (a repeated edit); a single move keeps its text.
	type moveKey struct{ step, text string }
	moves := map[moveKey]int{}
	keys := make([]moveKey, len(df.out))
	for i := range df.out {
		rc := &df.out[i]
		bx := boxes[at[i]]
		if !isMove(rc) || at[i] == "" || bx == nil || !bx.ok || has(od, rc.o, bx.lost) || has(newDoc, rc.n, bx.gained) ||
			rc.o.elem < 0 || rc.n.elem < 0 {
			continue
		}
		p := df.new.path(rc.n)
		keys[i] = moveKey{maskDigits(p[strings.LastIndexByte(p, '|')+1:]), maskDigits(rc.new)}
		moves[keys[i]]++
	}
	out := df.out[:0]
	for i, rc := range df.out {
		switch {
		case markup[i] && rc.op == changedigest.OpDelete:
			if rc.o.elem < 0 {
				continue // the same words, no markup: no change
			}
			rc.typ = changedigest.ChangeStructural
			rc.old, rc.before, rc.after = df.old.describe(rc.o), "", ""
		case markup[i] && rc.op == changedigest.OpInsert:
			if rc.n.elem < 0 {
				continue
			}
			rc.typ = changedigest.ChangeStructural
			rc.new, rc.before, rc.after = df.new.describe(rc.n), "", ""
		case keys[i].text != "" && moves[keys[i]] >= 3:
			rc.typ = changedigest.ChangeStructural
			rc.old, rc.new = df.old.describe(rc.o), df.new.describe(rc.n)
		}
		out = append(out, rc)
	}
	df.out = out
}

// maxContainerUp is how many elements up from a changed element its
// container is looked for.
const maxContainerUp = 3

// maxContainerWork bounds the work of comparing one container's texts:
// their length in words times the difference of their word counts (told
// first by the lengths alone; a container's text is at most a quarter of
// it). A table row of 450 words that lost a cell
// and gained one is 1,800; a list of posts that gained one and lost one,
// 10,000 words and 1,000 changed, is ten million and is not compared.
const maxContainerWork = 20_000

// wordsIn is the number of visible words of element ei (-1 for a
// phantom ancestor of a partial scan).
func wordsIn(d *doc, ei int32) int {
	e := &d.elems[ei]
	if e.tok < 0 || e.endTok < e.tok {
		return -1
	}
	d.index()
	return int(d.words[e.endTok+1] - d.words[e.tok])
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// runKind says whether a run of the script deletes (kindDel), inserts
// (kindIns) or both.
func runKind(rs []textdiff.Run) uint8 {
	var k uint8
	for _, r := range rs {
		k |= opKind(r.Op)
	}
	return k
}

const (
	kindDel uint8 = 1 << iota
	kindIns
)

// opKind is kindDel for a deletion, kindIns for an insertion, 0 else.
func opKind(op textdiff.Op) uint8 {
	switch op {
	case textdiff.Delete:
		return kindDel
	case textdiff.Insert:
		return kindIns
	}
	return 0
}
