package segmenter

import (
	"slices"
	"sort"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// Text that changed place in the tree but not on the page.
//
// The tree comparison reports text by the elements that hold it. When a
// page's markup is rebuilt around the same text (paragraphs that were bare
// text in a broken figcaption get their <p> tags, a list becomes a series
// of divs one level up), the elements do not match and their text comes
// out deleted in one place and inserted in another, although a reader sees
// the same words. reconcile finds that case, words deleted by some content
// changes and inserted by others, and then compares the text itself: the
// old texts of the content changes in page order against the new ones,
// word by word. Each run of changed words becomes one content change,
// located at the element that holds it, and the rebuilt markup is one
// structural change.

// minMovedWords is how many words deleted by some content changes and
// inserted by others make their texts worth comparing as text: fewer is a
// coincidence of common words ("the", "and") between different texts.
const minMovedWords = 8

// nearBytes is how far apart in the page (or a hundredth of the page, if
// more) a deleted and an inserted text may be to be compared as one: the
// gap between their byte ranges, one in each version.
const nearBytes = 256

// piece is the text of one content change on one side, at its place.
type piece struct {
	text string
	node *tnode
	op   changedigest.Op
	at   int // offset in the joined text
}

func (df *differ) reconcile() {
	var content, rest []rawChange
	for _, rc := range df.out {
		if rc.typ == changedigest.ChangeContent {
			content = append(content, rc)
		} else {
			rest = append(rest, rc)
		}
	}
	if len(content) < 2 {
		return
	}
	// Only the changes whose text reappears on the other side, in runs of
	// words, take part: most of a deleted text's word sequences inserted
	// by other changes, or most of an inserted one's deleted by others.
	// Shared single words or boilerplate ("Date: | Author:") do not make
	// two different stories one text.
	osh := make([]map[uint64]bool, len(content))
	nsh := make([]map[uint64]bool, len(content))
	oall, nall := map[uint64][]int{}, map[uint64][]int{}
	for k, rc := range content {
		df.w.add(1 + (len(rc.old)+len(rc.new))/8)
		osh[k], nsh[k] = shingles(rc.old), shingles(rc.new)
		for h := range osh[k] {
			oall[h] = append(oall[h], k)
		}
		for h := range nsh[k] {
			nall[h] = append(nall[h], k)
		}
	}
	// near: the other change's text is at about the same place of the
	// page; text found far away is a block moved or a story that left
	// while another came, which a reader sees as such.
	span := func(n *tnode) (int, int, bool) {
		if n == nil || n.d == nil || int(n.tokA) >= len(n.d.toks) || int(n.tokB) <= int(n.tokA) {
			return 0, 0, false
		}
		e := min(int(n.tokB), len(n.d.toks)) - 1
		return n.d.base + int(n.d.toks[int(n.tokA)].off), n.d.base + int(n.d.toks[e].end), true
	}
	near := func(k, l int) bool {
		if k == l {
			return false
		}
		a, b := content[k].o, content[l].n
		if a == nil {
			a, b = content[l].o, content[k].n
		}
		a0, a1, ok1 := span(a)
		b0, b1, ok2 := span(b)
		if !ok1 || !ok2 {
			return false
		}
		gap := max(a0, b0) - min(a1, b1)
		return gap <= max(nearBytes, (len(a.d.body)+a.d.base)/100)
	}
	elsewhere := func(k int, mine map[uint64]bool, other map[uint64][]int) bool {
		if len(mine) < 2 {
			return false
		}
		n := 0
		for h := range mine {
			for i, l := range other[h] {
				if i == 8 {
					break
				}
				if near(k, l) {
					n++
					break
				}
			}
		}
		return 2*n >= len(mine)
	}
	var part []rawChange
	for k, rc := range content {
		if elsewhere(k, osh[k], nall) || elsewhere(k, nsh[k], oall) {
			part = append(part, rc)
		} else {
			rest = append(rest, rc)
		}
	}
	content = part
	if len(content) < 2 {
		return
	}
	// Words that some changes delete and others insert: for an update,
	// only the words it does not keep.
	var gone, came []uint64
	for _, rc := range content {
		ob, nb := wordBag(rc.old, nil), wordBag(rc.new, nil)
		gone = append(gone, minus(ob, nb)...)
		came = append(came, minus(nb, ob)...)
	}
	slices.Sort(gone)
	slices.Sort(came)
	if common(gone, came) < minMovedWords {
		return
	}

	// The old and new texts of the content changes, in page order.
	var olds, news []piece
	for _, rc := range content {
		if rc.old != "" && rc.o != nil {
			olds = append(olds, piece{text: rc.old, node: rc.o, op: rc.op})
		}
		if rc.new != "" && rc.n != nil {
			news = append(news, piece{text: rc.new, node: rc.n, op: rc.op})
		}
	}
	ot, olds := joinPieces(olds)
	nt, news := joinPieces(news)
	df.w.add((len(ot) + len(nt)) / 8)
	atoms := splitEdits(df.w.budget().WordDiff(ot, nt), olds, news)

	// Runs of changed atoms within one piece on each side (a change's
	// text is one stretch of the page), one-word gaps folded in.
	var out []rawChange
	for i := 0; i < len(atoms); {
		if atoms[i].op == textdiff.Equal {
			i++
			continue
		}
		po, pn := -1, -1 // the run's piece on each side
		inRun := func(a textAtom) bool {
			if a.op != textdiff.Insert && po >= 0 && a.po != po || a.op != textdiff.Delete && pn >= 0 && a.pn != pn {
				return false
			}
			return true
		}
		var ob, nb strings.Builder
		j := i
		for ; j < len(atoms); j++ {
			a := atoms[j]
			if !inRun(a) {
				break
			}
			if a.op == textdiff.Equal {
				// fold a short gap only when changes of this run follow
				if moreWords(a.text, hunkGap) || j+1 == len(atoms) || atoms[j+1].op == textdiff.Equal || !inRun(atoms[j+1]) {
					break
				}
			}
			if a.op != textdiff.Insert {
				ob.WriteString(a.text)
				po = a.po
			}
			if a.op != textdiff.Delete {
				nb.WriteString(a.text)
				pn = a.pn
			}
		}
		i = max(j, i+1)
		old, new := strings.TrimSpace(ob.String()), strings.TrimSpace(nb.String())
		if sameText(old, new) {
			continue
		}
		rc := rawChange{typ: changedigest.ChangeContent, old: old, new: new}
		switch {
		case old == "":
			rc.op, rc.n = changedigest.OpInsert, news[pn].node
		case new == "":
			rc.op, rc.o = changedigest.OpDelete, olds[po].node
		default:
			rc.op, rc.o, rc.n = changedigest.OpUpdate, olds[po].node, news[pn].node
		}
		out = append(out, rc)
	}
	// The markup that was rebuilt: one structural change, from the first
	// element deleted to the first inserted.
	if len(olds) == 0 || len(news) == 0 {
		return
	}
	first := func(ps []piece, op changedigest.Op) *tnode {
		for _, p := range ps {
			if p.op == op {
				return p.node
			}
		}
		return ps[0].node
	}
	x, y := first(olds, changedigest.OpDelete), first(news, changedigest.OpInsert)
	if ot, nt := df.old.describe(x), df.new.describe(y); ot != nt {
		rest = append(rest, rawChange{typ: changedigest.ChangeStructural, op: changedigest.OpUpdate, o: x, n: y, old: ot, new: nt})
	}
	df.out = append(rest, out...)
}

// joinPieces joins the pieces' texts in page order with spaces, noting
// where each starts.
func joinPieces(ps []piece) (string, []piece) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].node, ps[j].node
		if a.seg != b.seg {
			return a.seg < b.seg
		}
		return int(a.tokA) < int(b.tokA)
	})
	// A piece inside another (a link deleted from a paragraph whose whole
	// text is reported) is already in its text.
	kept := ps[:0]
	for _, p := range ps {
		if n := len(kept); n > 0 {
			q := kept[n-1].node
			if q.d != nil && q.d == p.node.d && int(q.tokA) <= int(p.node.tokA) && int(p.node.tokB) <= int(q.tokB) {
				continue
			}
		}
		kept = append(kept, p)
	}
	ps = kept
	var sb strings.Builder
	for k := range ps {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		ps[k].at = sb.Len()
		sb.WriteString(ps[k].text)
	}
	return sb.String(), ps
}

// textAtom is a stretch of a word diff within one piece on each side it is
// on: po and pn index the old and new pieces.
type textAtom struct {
	op     textdiff.Op
	text   string
	po, pn int
}

// splitEdits cuts the edits of the joined texts at the pieces' bounds.
func splitEdits(edits []textdiff.Edit, olds, news []piece) []textAtom {
	var out []textAtom
	oat, nat := 0, 0
	for _, e := range edits {
		t := e.Text
		for t != "" {
			n := len(t)
			po, pn := -1, -1
			if e.Op != textdiff.Insert {
				po = pieceIndex(olds, oat)
				n = min(n, pieceEnd(olds, po)-oat)
			}
			if e.Op != textdiff.Delete {
				pn = pieceIndex(news, nat)
				n = min(n, pieceEnd(news, pn)-nat)
			}
			n = max(n, 1)
			for n < len(t) && !isUTF8Start(t[n]) {
				n++
			}
			out = append(out, textAtom{op: e.Op, text: t[:n], po: po, pn: pn})
			if e.Op != textdiff.Insert {
				oat += n
			}
			if e.Op != textdiff.Delete {
				nat += n
			}
			t = t[n:]
		}
	}
	return out
}

// pieceIndex is the piece holding offset at (a separating space belongs
// to the piece before it).
func pieceIndex(ps []piece, at int) int {
	return max(sort.Search(len(ps), func(k int) bool { return ps[k].at > at })-1, 0)
}

// pieceEnd is where piece k ends in the joined text, its separator
// included.
func pieceEnd(ps []piece, k int) int {
	if k+1 < len(ps) {
		return ps[k+1].at
	}
	return 1 << 62
}

// shingles are the hashes of a text's runs of four words that hold at
// least three different words (a table's "? ? No ?" says nothing).
func shingles(t string) map[uint64]bool {
	ws := strings.Fields(t)
	out := map[uint64]bool{}
	for i := 0; i+4 <= len(ws); i++ {
		g := ws[i : i+4]
		distinct := 4
		for a := range 4 {
			for b := a + 1; b < 4; b++ {
				if g[a] == g[b] {
					distinct--
					break
				}
			}
		}
		if distinct < 3 {
			continue
		}
		h := hashSeed
		for _, w := range g {
			h = hashString(h, w)
		}
		out[h] = true
	}
	return out
}

// minus is the multiset a − b of two sorted bags.
func minus(a, b []uint64) []uint64 {
	var out []uint64
	i, j := 0, 0
	for i < len(a) {
		switch {
		case j >= len(b) || a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] == b[j]:
			i++
			j++
		default:
			j++
		}
	}
	return out
}
