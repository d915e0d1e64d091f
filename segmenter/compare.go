package segmenter

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// Detailed comparison of changed segments (CaSePer 3.1, Artail and Fawaz,
// Goel and Aggarwal).
//
// The tokens of a group of changed segments become two small trees
// (treelets). Every node carries bottom-up hashes (Goel): h over the whole
// subtree, hc over the subtree without presentation (presentation
// attributes dropped, formatting tags such as b, font and span unwrapped)
// and ht over its visible words. The children of two matched nodes are
// matched in rounds: a longest common subsequence of equal subtrees (equal
// subtrees are skipped, never descended into), then equal subtrees out of
// order, then the same id attribute and tag (the X-Diff variant), then the
// same hc and tag, then, between the anchors found so far, nodes of the
// same tag by text similarity (Artail and Fawaz: comparisons only between
// nodes of the same tag). The order of matched children is compared as a
// sequence of indices; a child off the longest increasing run is a move,
// which is what comparing node path sequences with offsets finds.
// Unmatched children are deletions and insertions; a deleted and an
// inserted subtree with equal hashes anywhere in the page are one move.

type attrKV struct{ k, v string }

// tnode is a node of a treelet. Only h (and behav) are computed for every
// node; texts, attributes and the other hashes are worked out when the
// matching looks at a node, which for a small edit is a handful of nodes.
type tnode struct {
	tag    string // "" for a text, "#root" for the root of a treelet
	kids   []*tnode
	parent *tnode
	d      *doc  // the scan the node comes from
	elem   int32 // element in d (-1: text or root)
	encl   int32 // a text's enclosing element in d
	tokA   int32 // token range in d
	tokB   int32
	seg    int32 // segment index

	visible bool  // a text shown to readers
	behav   bool  // holds script, iframe, object, embed or applet elements
	textful bool  // holds visible text
	lazy    uint8 // which of the fields below (and in more) are computed
	nkids   int32 // the children counted while the treelet is built
	nwords  int32 // visible words

	h      uint64 // the whole subtree (Goel's bottom-up hash)
	hc, pc uint64 // without presentation (rolling hash value and power)
	ht, pt uint64 // visible words
	more   *tnodeMore
}

// tnodeMore holds the texts and lists of a node, worked out for the few
// nodes whose text or attributes are compared or told, apart from the
// node so that a treelet of many nodes stays small.
type tnodeMore struct {
	text   string
	attrs  []attrKV
	txt    string // the visible text (when hasTxt)
	hasTxt bool
	bag    []uint64 // sorted hashes of the visible words, for similarity
	bagLen int32    // len(bag)+1 once counted (bagLen), 0 before
	toks   []int32  // the word tokens of the visible text, numbered by toksBy, for similarity
	toksBy *wordNumbers
	sorted []int32  // toks sorted, for a quick bound on similarity
	sketch []uint64 // of a script or style sheet's code, for similarity
}

func (n *tnode) m() *tnodeMore {
	if n.more == nil {
		n.more = &tnodeMore{}
	}
	return n.more
}

const (
	lazyText uint8 = 1 << iota
	lazyAttrs
	lazyCosmetic
	lazyWords
	// hiddenText: the subtree holds a text readers do not see (set
	// with lazyWords)
	hiddenText
)

func (n *tnode) isText() bool { return n.tag == "" }

// textStr is a text node's collapsed text.
func (n *tnode) textStr() string {
	if n.lazy&lazyText == 0 {
		n.lazy |= lazyText
		if n.isText() {
			n.m().text = n.d.textOf(int(n.tokA))
		}
	}
	if n.more == nil {
		return ""
	}
	return n.more.text
}

// attrList is an element's attributes, sorted by name.
func (n *tnode) attrList() []attrKV {
	if n.lazy&lazyAttrs == 0 {
		n.lazy |= lazyAttrs
		if n.elem >= 0 {
			d := n.d
			e := &d.elems[n.elem]
			if e.nattr > 0 {
				attrs := make([]attrKV, e.nattr)
				for k, a := range d.attrs[e.attr0 : e.attr0+e.nattr] {
					attrs[k] = attrKV{string(d.norm[a.k0:a.k1]), string(d.norm[a.v0:a.v1])}
				}
				n.m().attrs = attrs
			}
		}
	}
	if n.more == nil {
		return nil
	}
	return n.more.attrs
}

// cosmetic returns the hash of the subtree without presentation:
// presentation attributes dropped, formatting tags unwrapped, texts as
// runs of words (so words split by a removed tag still match).
func (n *tnode) cosmetic() (uint64, uint64) {
	if n.lazy&lazyCosmetic != 0 {
		return n.hc, n.pc
	}
	n.lazy |= lazyCosmetic
	n.hc, n.pc = 0, 1
	if n.isText() {
		n.hc, n.pc = rollWords(n.hc, n.pc, n.d.textBytes(int(n.tokA)))
		return n.hc, n.pc
	}
	pres := presentationTags[n.tag]
	if !pres && n.tag != "#root" {
		open := hashString(hashSeed^2, n.tag)
		d := n.d
		e := &d.elems[n.elem]
		for _, a := range d.attrs[e.attr0 : e.attr0+e.nattr] {
			k := d.norm[a.k0:a.k1]
			if !presentationAttrs[string(k)] {
				open = hashBytes(mix(hashBytes(mix(open, 1), k), 2), d.norm[a.v0:a.v1])
			}
		}
		n.hc, n.pc = roll(n.hc, n.pc, open|1, rollP)
	}
	for _, k := range n.kids {
		kc, kp := k.cosmetic()
		n.hc, n.pc = roll(n.hc, n.pc, kc, kp)
	}
	if !pres && n.tag != "#root" {
		n.hc, n.pc = roll(n.hc, n.pc, hashString(hashSeed^3, n.tag)|1, rollP)
	}
	return n.hc, n.pc
}

// rollWords extends a rolling hash by the words of a collapsed text.
func rollWords(h, p uint64, text []byte) (uint64, uint64) {
	w := hashSeed
	for i, c := range text {
		if c == ' ' {
			h, p = roll(h, p, w|1, rollP)
			w = hashSeed
			continue
		}
		w ^= uint64(c)
		w *= hashPrime
		if i == len(text)-1 {
			h, p = roll(h, p, w|1, rollP)
		}
	}
	return h, p
}

// words returns the hash of the subtree's visible words and their count.
func (n *tnode) words() (uint64, uint64, int) {
	if n.lazy&lazyWords != 0 {
		return n.ht, n.pt, int(n.nwords)
	}
	n.lazy |= lazyWords
	n.ht, n.pt, n.nwords = 0, 1, 0
	if n.isText() {
		if n.visible {
			t := n.d.textBytes(int(n.tokA))
			n.ht, n.pt = rollWords(n.ht, n.pt, t)
			n.nwords = int32(bytes.Count(t, []byte{' '}) + 1)
		} else {
			n.lazy |= hiddenText
		}
		return n.ht, n.pt, int(n.nwords)
	}
	for _, k := range n.kids {
		kt, kp, kn := k.words()
		n.ht, n.pt = roll(n.ht, n.pt, kt, kp)
		n.nwords += int32(kn)
		n.lazy |= k.lazy & hiddenText
	}
	return n.ht, n.pt, int(n.nwords)
}

// allShown reports whether every text in n's subtree is visible.
func (n *tnode) allShown() bool {
	n.words()
	return n.lazy&hiddenText == 0
}

func (n *tnode) hasWords() bool { return n.textful }

func sameWords(x, y *tnode) bool {
	a, b, _ := x.words()
	c, e, _ := y.words()
	return a == c && b == e
}

// side is one version of a page in a comparison: where its segments
// start, to tell which segment a node is in.
type side struct {
	starts []int // byte offsets where segments start, ascending
	idx    []int // the index of each of those segments
}

func (sd *side) segOf(off int) int {
	return sd.segAt(sort.SearchInts(sd.starts, off+1))
}

// segAt is the segment index of an offset after n segment starts.
func (sd *side) segAt(n int) int {
	k := n - 1
	if k < 0 || k >= len(sd.idx) {
		if len(sd.idx) == 0 {
			return 0
		}
		k = max(0, min(k, len(sd.idx)-1))
	}
	return sd.idx[k]
}

func (sd *side) textOf(n *tnode) string {
	if n.more != nil && n.more.hasTxt {
		return n.more.txt
	}
	var t string
	switch {
	case n.isText():
		if n.visible {
			t = n.textStr()
		}
	case n.d != nil:
		t = n.d.visibleText(int(n.tokA), int(n.tokB))
	default:
		var sb strings.Builder
		for _, k := range n.kids {
			if kt := sd.textOf(k); kt != "" {
				if sb.Len() > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(kt)
			}
		}
		t = sb.String()
	}
	m := n.m()
	m.txt, m.hasTxt = t, true
	return t
}

// ownRuns is the visible text of block n outside the block-level
// elements nested in it, one run per stretch between them; each run is
// contiguous text of the page, tokens [span[0], span[1]) of n.d (spans is
// nil for a node of no scan).
func (sd *side) ownRuns(n *tnode) (runs []string, spans [][2]int) {
	if n.d == nil || len(n.kids) == 0 {
		if n.d != nil {
			spans = [][2]int{{int(n.tokA), int(n.tokB)}}
		}
		return []string{sd.textOf(n)}, spans
	}
	var cuts [][2]int // token ranges of the nested blocks, in order
	var find func(n *tnode)
	find = func(n *tnode) {
		for _, k := range n.kids {
			switch {
			case k.isText():
			case blockElements[k.tag] && k.d == n.d:
				cuts = append(cuts, [2]int{int(k.tokA), int(k.tokB)})
			default:
				find(k)
			}
		}
	}
	find(n)
	runs = make([]string, 0, len(cuts)+1)
	spans = make([][2]int, 0, len(cuts)+1)
	a := int(n.tokA)
	for _, c := range cuts {
		runs = append(runs, n.d.visibleText(a, c[0]))
		spans = append(spans, [2]int{a, c[0]})
		a = c[1]
	}
	return append(runs, n.d.visibleText(a, int(n.tokB))), append(spans, [2]int{a, int(n.tokB)})
}

func (sd *side) path(n *tnode) string {
	if n == nil || n.d == nil {
		return ""
	}
	if n.elem >= 0 {
		return n.d.path(n.elem)
	}
	if n.isText() && n.encl >= 0 {
		return n.d.path(n.encl)
	}
	return ""
}

// describe is the normalised start tag of an element: `<img src="a.png">`.
func (sd *side) describe(n *tnode) string {
	if n.elem < 0 || n.d == nil {
		return ""
	}
	return string(n.d.normOf(int(n.tokA), int(n.tokA)+1))
}

// firstOpened is the element the first start tag of tokens [a, b) opens
// (the elements opened in the range have consecutive indices from it),
// or the number of elements when none opens there.
func (d *doc) firstOpened(a, b int) int32 {
	for i := a; i < b; i++ {
		if k := d.toks[i].kind; k == tStart || k == tVoid {
			return d.toks[i].elem
		}
	}
	return int32(len(d.elems))
}

// treePart is a token range of a scanned document.
type treePart struct {
	d    *doc
	a, b int
}

// build makes one treelet of the token ranges parts.
func (sd *side) build(parts []treePart) *tnode {
	root := &tnode{tag: "#root", elem: -1}
	// The nodes of each part are made in one slab, in page order; their
	// children are counted first and then given parts of one slice.
	var slabs [][]tnode
	// segOf of offsets mostly ascending: the starts up to the last one
	// are counted on from there
	starts, last := 0, -1
	segOf := func(off int) int {
		if off < last {
			starts = sort.SearchInts(sd.starts, off+1)
		}
		for starts < len(sd.starts) && sd.starts[starts] <= off {
			starts++
		}
		last = off
		return sd.segAt(starts)
	}
	for _, r := range parts {
		d := r.d
		// elements opened in the range have consecutive indices from e0
		e0 := d.firstOpened(r.a, r.b)
		cnt, elems := 0, 0
		for i := r.a; i < r.b; i++ {
			switch d.toks[i].kind {
			case tEnd:
				continue
			case tStart, tVoid:
				elems++
			}
			cnt++
		}
		nodes := make([]*tnode, 0, elems)
		slab := make([]tnode, cnt)
		next := 0
		alloc := func() *tnode {
			n := &slab[next]
			next++
			return n
		}
		parentOf := func(ei int32) *tnode {
			if k := int(ei - e0); ei >= e0 && k < len(nodes) && nodes[k] != nil {
				return nodes[k]
			}
			return root
		}
		d.w.add(r.b - r.a)
		for i := r.a; i < r.b; i++ {
			t := &d.toks[i]
			var n *tnode
			switch t.kind {
			case tStart, tVoid:
				e := &d.elems[t.elem]
				n = alloc()
				*n = tnode{tag: d.tagOf(t.elem), elem: t.elem, tokA: int32(i), tokB: int32(min(int(e.endTok)+1, r.b)), parent: parentOf(e.parent)}
				for k := int(t.elem - e0); len(nodes) <= k; {
					nodes = append(nodes, nil)
				}
				if t.kind == tStart {
					nodes[t.elem-e0] = n
				}
			case tText:
				n = alloc()
				*n = tnode{elem: -1, encl: t.elem, tokA: int32(i), tokB: int32(i + 1), visible: t.flags&fVisible != 0, parent: parentOf(t.elem)}
			default:
				continue
			}
			n.d = d
			n.seg = int32(segOf(d.base + int(t.off)))
			n.parent.nkids++
		}
		slabs = append(slabs, slab[:next])
	}
	total := int(root.nkids)
	for _, slab := range slabs {
		for i := range slab {
			total += int(slab[i].nkids)
		}
	}
	kids := make([]*tnode, total)
	give := func(n *tnode) {
		if k := int(n.nkids); k > 0 {
			n.kids, kids = kids[:0:k], kids[k:]
			n.nkids = 0
		}
	}
	give(root)
	for _, slab := range slabs {
		for i := range slab {
			n := &slab[i]
			give(n)
			n.parent.kids = append(n.parent.kids, n)
		}
	}
	for k := len(slabs) - 1; k >= 0; k-- {
		for i := len(slabs[k]) - 1; i >= 0; i-- {
			slabs[k][i].hash()
		}
	}
	root.hash()
	return root
}

const rollP uint64 = 0x9E3779B97F4A7C15

// treeSeed seeds the hashes of treelet nodes. They live only as long as a
// comparison, so a per-process seed is fine (the hashes that are stored,
// in layouts, use FNV).
var treeSeed = maphash.MakeSeed()

// fold combines a running hash with the next value, order-sensitively.
func fold(h, v uint64) uint64 {
	h ^= v + 0x9E3779B97F4A7C15 + h<<6 + h>>2
	h *= 0xFF51AFD7ED558CCD
	return h ^ h>>33
}

func roll(v1, p1, v2, p2 uint64) (uint64, uint64) { return v1*p2 + v2, p1 * p2 }

// hash computes h and behav from the node's normalised form and its
// children's hashes.
func (n *tnode) hash() {
	switch {
	case n.isText():
		n.h = maphash.Bytes(treeSeed, n.d.textBytes(int(n.tokA))) ^ 1
		n.textful = n.visible
		return
	case n.elem >= 0:
		n.h = maphash.Bytes(treeSeed, n.d.normOf(int(n.tokA), int(n.tokA)+1))
	default:
		n.h = hashSeed
	}
	n.behav = behaviouralTags[n.tag]
	for _, k := range n.kids {
		n.h = fold(n.h, k.h)
		n.behav = n.behav || k.behav
		n.textful = n.textful || k.textful
	}
	n.h = fold(n.h, 0xff)
}

func isEventAttr(k string) bool { return len(k) > 2 && k[0] == 'o' && k[1] == 'n' }

var (
	presentationAttrs = set("style", "class", "align", "valign", "bgcolor", "color", "background", "width",
		"height", "border", "cellpadding", "cellspacing", "face", "size", "hspace", "vspace", "nowrap",
		"clear", "noshade", "rules", "text", "link", "vlink", "alink", "marginwidth", "marginheight",
		"leftmargin", "topmargin", "rightmargin", "bottommargin", "compact", "bordercolor")
	presentationTags = set("b", "i", "u", "s", "strike", "em", "strong", "font", "big", "small", "tt",
		"center", "mark", "span", "blink")
	behaviouralTags = set("script", "iframe", "object", "embed", "applet", "frame", "noscript", "noembed")
)

// differ compares two treelets and collects typed changes.
type differ struct {
	w        *work
	old, new *side
	// raw counts the changes found so far (texts marked in blocks
	// included); past maxChanges the comparison stops (full).
	raw      int
	full     bool
	out      []rawChange
	blocks   []*blockPair
	ins, del []*tnode
	// markup holds inserted and deleted elements whose words the page
	// still has (or had): a link unwrapped, text wrapped in a new element
	markup map[*tnode]bool
	// moved holds the children moved among their siblings (off the run
	// of kept children), on both sides
	moved map[*tnode]bool
	// stayed: false for the inserted and deleted subtrees (readsInPlace)
	stayed map[*tnode]bool
	// groups are the compared treelets with the token ranges they were
	// built from, for the text pass
	groups []*textGroup
	// words numbers the words of the texts compared by similarity
	words *wordNumbers
}

type rawChange struct {
	typ      changedigest.ChangeType
	op       changedigest.Op
	o, n     *tnode
	old, new string
	// runs: for the update of a block's own text, its token ranges in
	// o.d and n.d (the text outside nested blocks), else nil
	runs *[2][2]int
	// before and after: unchanged words around a content change found
	// by the text pass (textpass.go)
	before, after string
}

// weight is how much of the page a change accounts for, in bytes of text,
// for the similarity of two versions: the texts it reports, the part of
// an updated text that differs.
func (rc rawChange) weight() float64 {
	w := float64(len(rc.old) + len(rc.new))
	if rc.typ == changedigest.ChangeContent && rc.op == changedigest.OpUpdate {
		w *= 1 - diceTexts(rc.old, rc.new)
	}
	return max(w, 1)
}

// blockPair is a matched pair of block-level nodes whose texts are
// compared when words inside them changed.
type blockPair struct {
	o, n    *tnode
	changed bool
	// texts changed directly under a treelet root, which has no text of
	// its own to report: old and new node (either may be nil)
	loose [][2]*tnode
}

// mark notes that words changed inside blk, at text x (old) or y (new).
func (blk *blockPair) mark(x, y *tnode) {
	blk.changed = true
	if blk.n.tag == "#root" {
		blk.loose = append(blk.loose, [2]*tnode{x, y})
	}
}

// maxChanges is the number of changes past which a comparison stops
// telling them one by one: a page rebuilt or rewritten in more places is
// told group by group, as its old and new text (compareVersions). Real
// pages stay far below it (a few thousand changes for a page rebuilt
// whole), and each change costs some microseconds more to tell, store
// and show.
const maxChanges = 20_000

func (df *differ) emit(typ changedigest.ChangeType, op changedigest.Op, o, n *tnode, old, new string) {
	df.raw++
	df.out = append(df.out, rawChange{typ: typ, op: op, o: o, n: n, old: old, new: new})
}

// compare diffs two treelet roots.
func (df *differ) compare(o, n *tnode) {
	blk := &blockPair{o: o, n: n}
	df.blocks = append(df.blocks, blk)
	if o.h != n.h {
		df.kids(o, n, blk)
	}
}

// node compares two matched elements of the same tag whose subtrees differ.
func (df *differ) node(o, n *tnode, blk *blockPair) {
	switch {
	case o.tag == "script" || behaviouralTags[o.tag]:
		df.emit(changedigest.ChangeBehavioural, changedigest.OpUpdate, o, n, df.behaviour(df.old, o), df.behaviour(df.new, n))
		return
	case o.tag == "style":
		df.emit(changedigest.ChangeCosmetic, changedigest.OpUpdate, o, n, df.behaviour(df.old, o), df.behaviour(df.new, n))
		return
	}
	df.attrs(o, n)
	if blockElements[o.tag] || o.tag == "title" {
		blk = &blockPair{o: o, n: n}
		df.blocks = append(df.blocks, blk)
	}
	if !sameShape(o, n) {
		oc, op := o.cosmetic()
		nc, np := n.cosmetic()
		if oc == nc && op == np {
			// Only formatting changed below: tags like b or span added or
			// removed around the same words.
			df.emit(changedigest.ChangeCosmetic, changedigest.OpUpdate, o, n, df.old.textOf(o), df.new.textOf(n))
			return
		}
	}
	df.kids(o, n, blk)
}

// sameShape reports whether two nodes have children of the same tags in
// the same order (texts count as one tag, whatever they say).
func sameShape(o, n *tnode) bool {
	if len(o.kids) != len(n.kids) {
		return false
	}
	for i := range o.kids {
		if o.kids[i].tag != n.kids[i].tag {
			return false
		}
	}
	return true
}

// textRaw is the text of an element's text children (script or style source).
func (sd *side) textRaw(n *tnode) string {
	var sb strings.Builder
	for _, k := range n.kids {
		if k.isText() {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(k.textStr())
		}
	}
	return sb.String()
}

func (df *differ) behaviour(sd *side, n *tnode) string {
	s := sd.describe(n)
	if t := sd.textRaw(n); t != "" {
		s += " " + t
	}
	return s
}

// attrs reports changed attributes of a matched pair, one change per class.
func (df *differ) attrs(o, n *tnode) {
	var classes [3][]string // cosmetic, structural, behavioural: old and new listings
	var olds, news [3]strings.Builder
	add := func(c int, k, ov, nv string, hasO, hasN bool) {
		classes[c] = append(classes[c], k)
		if hasO {
			writeAttr(&olds[c], k, ov)
		}
		if hasN {
			writeAttr(&news[c], k, nv)
		}
	}
	class := func(k string) int {
		switch {
		case isEventAttr(k) || behaviouralTags[o.tag]:
			return 2
		case presentationAttrs[k] || (o.tag == "link" && isStylesheet(o)):
			return 0
		}
		return 1
	}
	oa, na := o.attrList(), n.attrList()
	i, j := 0, 0
	for i < len(oa) || j < len(na) {
		switch {
		case j >= len(na) || (i < len(oa) && oa[i].k < na[j].k):
			add(class(oa[i].k), oa[i].k, oa[i].v, "", true, false)
			i++
		case i >= len(oa) || na[j].k < oa[i].k:
			add(class(na[j].k), na[j].k, "", na[j].v, false, true)
			j++
		default:
			if oa[i].v != na[j].v && (oa[i].k != "style" || cssForm(oa[i].v) != cssForm(na[j].v)) {
				add(class(oa[i].k), oa[i].k, oa[i].v, na[j].v, true, true)
			}
			i++
			j++
		}
	}
	types := [3]changedigest.ChangeType{changedigest.ChangeCosmetic, changedigest.ChangeStructural, changedigest.ChangeBehavioural}
	for c := range classes {
		if len(classes[c]) > 0 {
			df.emit(types[c], changedigest.OpUpdate, o, n, olds[c].String(), news[c].String())
		}
	}
}

// cssForm is inline CSS without the white space that means nothing in
// it: around ":", ";", ",", brackets, at the ends, and a last ";".
// "color:red;margin:0 auto" and "color: red; margin: 0  auto;" style an
// element alike.
func cssForm(v string) string {
	var b strings.Builder
	b.Grow(len(v))
	space := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isSpace(c):
			space = b.Len() > 0
			continue
		case strings.IndexByte(":;,(){}", c) >= 0:
			space = false
		case space:
			if p := b.String()[b.Len()-1]; strings.IndexByte(":;,(){}", p) < 0 {
				b.WriteByte(' ')
			}
			space = false
		}
		b.WriteByte(c)
	}
	return strings.TrimSuffix(b.String(), ";")
}

func writeAttr(sb *strings.Builder, k, v string) {
	if sb.Len() > 0 {
		sb.WriteByte(' ')
	}
	sb.WriteString(k)
	sb.WriteString(`="`)
	sb.WriteString(v)
	sb.WriteByte('"')
}

func isStylesheet(n *tnode) bool {
	return strings.Contains(strings.ToLower(n.attrValue("rel")), "stylesheet")
}

// attrValue returns the value of n's attribute named key ("" when it has
// none).
func (n *tnode) attrValue(key string) string {
	for _, a := range n.attrList() {
		if a.k == key {
			return a.v
		}
	}
	return ""
}

// How a pair of children was matched.
const (
	viaLCS uint8 = iota + 1
	viaHash
	viaID
	viaCosmetic
	viaSimilar
	viaWords
)

// kids matches and compares the children of a matched pair.
func (df *differ) kids(o, n *tnode, blk *blockPair) {
	if df.raw > maxChanges {
		df.full = true
	}
	if df.full {
		return
	}
	O, N := o.kids, n.kids
	if df.raw+max(len(O), len(N)) > maxChanges && df.raw+changesAtLeast(df.w, O, N) > maxChanges {
		// Matching these children would pass maxChanges: the
		// comparison ends full whatever the matching finds.
		df.full = true
		return
	}
	df.w.add(len(O) + len(N))
	mo := make([]int, len(O))
	mn := make([]int, len(N))
	via := make([]uint8, len(N))
	for i := range mo {
		mo[i] = -1
	}
	for j := range mn {
		mn[j] = -1
	}
	pair := func(i, j int, how uint8) {
		mo[i], mn[j], via[j] = j, i, how
	}

	// 1. Equal subtrees in order.
	ho := make([]uint64, len(O))
	hn := make([]uint64, len(N))
	for i, x := range O {
		ho[i] = x.h
	}
	for j, x := range N {
		hn[j] = x.h
	}
	for _, p := range df.lcsPairs(ho, hn) {
		pair(p[0], p[1], viaLCS)
	}
	// 2. Equal subtrees out of order (moves), 3. same id and tag, 4. same
	// subtree but for presentation, same tag.
	df.matchBy(O, N, mo, mn, via, viaHash, func(x *tnode) (uint64, bool) {
		return x.h, !x.isText()
	})
	// 2b. The same words, tag, children's tags and number of tokens,
	// attributes aside (a wrapper and the block it holds have the same
	// words but not the same shape): before ids, which
	// many sites number by position (section id1, id2, ...), so that an
	// entry added at the top of a list does not shift every id onto the
	// next entry's text.
	df.matchBy(O, N, mo, mn, via, viaWords, func(x *tnode) (uint64, bool) {
		if x.isText() || !x.hasWords() {
			return 0, false
		}
		h, _, _ := x.words()
		h = hashString(h, x.tag)
		for _, k := range x.kids { // and the same shape
			h = hashString(h, k.tag)
		}
		return mix(h, uint64(int(x.tokB)-int(x.tokA))), true
	})
	df.matchBy(O, N, mo, mn, via, viaID, func(x *tnode) (uint64, bool) {
		if x.isText() || x.d.elems[x.elem].id1 == x.d.elems[x.elem].id0 {
			return 0, false
		}
		if id := x.attrValue("id"); id != "" {
			return hashString(hashString(hashSeed, x.tag), id), true
		}
		return 0, false
	})
	if ambiguousLeftovers(O, N, mo, mn) {
		df.matchBy(O, N, mo, mn, via, viaCosmetic, func(x *tnode) (uint64, bool) {
			if x.isText() {
				return 0, false
			}
			c, p := x.cosmetic()
			return mix(hashString(c, x.tag), p), true
		})
	}
	// 5. Between anchors, the same tag by similarity.
	df.matchGaps(O, N, mo, mn, via)

	// Moves: matched pairs off the longest increasing run of old indices.
	var js []int
	for j := range N {
		if mn[j] >= 0 {
			js = append(js, j)
		}
	}
	seq := make([]int, len(js))
	for k, j := range js {
		seq[k] = mn[j]
	}
	inRun := lisMask(seq)
	if len(seq) <= maxWeighedRun && !all(inRun) {
		// Of the runs as long, the one that keeps the most words: of two
		// blocks swapped, the shorter is told as moved (as a reader
		// sees it), not whichever the first run found happens to leave.
		// Between runs that keep as many words the first run found stays.
		weight := make([]int, len(js))
		for k, j := range js {
			_, _, weight[k] = N[j].words()
		}
		df.w.add(len(seq) * len(seq))
		if heavy := heaviestRun(seq, weight); runWeight(heavy, weight) > runWeight(inRun, weight) {
			inRun = heavy
		}
	}

	// Elements with words added or removed while the words of the pair
	// stay the same only change the markup.
	same := -1
	wordsSame := func() bool {
		if same < 0 {
			same = btoiSame(sameWords(o, n))
		}
		return same == 1
	}
	for i, x := range O {
		if mo[i] < 0 {
			df.gone(x, blk)
			if !x.isText() && x.hasWords() && wordsSame() {
				df.markUp(x)
			}
		}
	}
	kept := make([]bool, len(N)) // on the run
	for k, j := range js {
		kept[j] = inRun[k]
		if !inRun[k] {
			if df.moved == nil {
				df.moved = map[*tnode]bool{}
			}
			df.moved[N[j]], df.moved[O[mn[j]]] = true, true
		}
	}
	for k, j := range js {
		y := N[j]
		x := O[mn[j]]
		if !inRun[k] {
			if y.isText() {
				df.raw++
				blk.mark(x, y)
			} else if isMetadata(x) && x.h == y.h {
				// The order of a page's metadata tells nothing (counted
				// as the move it is, for the bound on changes).
				df.raw++
			} else if x.hasWords() && (wordsSame() || keptNeighbours(O, N, mo, kept, mn[j], j)) {
				// Off the run of kept children, yet the parent reads
				// as before, or it stands between the same words: the
				// markup around it was rebuilt (or equal texts swapped).
				df.emit(changedigest.ChangeStructural, changedigest.OpMove, x, y, df.old.describe(x), df.new.describe(y))
			} else {
				df.emit(changedigest.ChangeStructural, changedigest.OpMove, x, y, df.old.label(x), df.new.label(y))
			}
		}
		if x.h == y.h {
			continue
		}
		switch {
		case x.isText():
			if x.visible || y.visible {
				df.raw++
				blk.mark(x, y)
			}
		case x.tag != y.tag:
			df.renamed(x, y, blk)
		default:
			df.node(x, y, blk)
		}
	}
	for j, y := range N {
		if mn[j] < 0 {
			df.added(y, blk)
			if !y.isText() && y.hasWords() && wordsSame() {
				df.markUp(y)
			}
		}
	}
	if df.raw > maxChanges {
		df.full = true
	}
}

// isMetadata reports whether n is an element of the page's metadata
// (meta, base, a link other than a style sheet), whose place in the
// document and order among the others change nothing a reader or a
// browser sees. The title, whose words are read as the page's, is told
// when it moves (as markup: textMoves).
func isMetadata(n *tnode) bool {
	switch n.tag {
	case "meta", "base":
		return true
	case "link":
		return !isStylesheet(n)
	}
	return false
}

// isResourceHint reports whether n is a link that only tells the browser
// what to fetch early (preload, modulepreload, prefetch, preconnect,
// dns-prefetch, prerender): a page built anew lists its new bundles
// there, and the scripts and style sheets that load them are told as
// themselves.
func isResourceHint(n *tnode) bool {
	if n == nil || n.tag != "link" {
		return false
	}
	for _, r := range strings.Fields(strings.ToLower(n.attrValue("rel"))) {
		switch r {
		case "preload", "modulepreload", "prefetch", "preconnect", "dns-prefetch", "prerender":
			return true
		}
	}
	return false
}

// changesAtLeast is a lower bound on the changes that matching and
// comparing children O with children N counts (raw), found from their
// visible words alone.
//
// A matched pair whose subtrees show all their texts and read different
// words counts at least one change: a pair of texts counts its update; a
// pair off the run of kept children counts its move; a renamed element,
// a script, a style sheet or a pair that differs only in formatting
// counts one; and children of two elements that are all matched in
// order, with no move, read different words only if a pair of them
// does (equal subtrees read the same words when all their texts show).
// Every old child that shows all its texts is then unmatched (one
// change), matched with a child of the same words (at most as many as
// the two sides have words in common), matched with a child that hides
// some text (at most as many as there are), or counts a change of its
// own; the same holds of the new children.
func changesAtLeast(w *work, O, N []*tnode) int {
	w.add(len(O) + len(N))
	keys := func(ns []*tnode) (shown []uint64, hidden int) {
		shown = make([]uint64, 0, len(ns))
		for _, x := range ns {
			if !x.allShown() {
				hidden++
				continue
			}
			h, p, _ := x.words()
			shown = append(shown, mix(h, p))
		}
		return shown, hidden
	}
	ko, ho := keys(O)
	kn, hn := keys(N)
	return changesFromKeys(ko, kn, ho, hn)
}

// changesFromKeys is changesAtLeast from the keys of the words of the
// old and new children that show all their texts, and the numbers of
// those that hide some.
func changesFromKeys(ko, kn []uint64, ho, hn int) int {
	sortHashes(ko)
	sortHashes(kn)
	same := common(ko, kn)
	return max(0, len(ko)-same-hn, len(kn)-same-ho)
}

// sortHashes sorts hashes (spread evenly over their range): many of them
// first by their top bits into buckets, each then sorted on its own.
func sortHashes(a []uint64) {
	if len(a) < sortedFrom {
		slices.Sort(a)
		return
	}
	nb := min(16, bits.Len(uint(len(a)))-1)
	shift := uint(64 - nb)
	start := make([]int, 1<<nb+1)
	for _, k := range a {
		start[k>>shift+1]++
	}
	for d := 1; d < len(start); d++ {
		start[d] += start[d-1]
	}
	buf := make([]uint64, len(a))
	next := slices.Clone(start[:len(start)-1])
	for _, k := range a {
		d := k >> shift
		buf[next[d]] = k
		next[d]++
	}
	for d := 0; d+1 < len(start); d++ {
		slices.Sort(buf[start[d]:start[d+1]])
	}
	copy(a, buf)
}

// textMoves types the moves of text a reader sees as content changes:
// words that now read at another place of the page (a story moved up a
// list) are a change of the text, told with their words, where markup
// moved around words that read as before is structural (its start tag
// told: readsInPlace, keptNeighbours). A document's title moved into
// the body (as pages that stream their head do) is markup: no reader
// sees it there.
func textMoves(cs []changedigest.Change) {
	for i := range cs {
		if c := &cs[i]; c.Type == changedigest.ChangeStructural && c.MovedText() && !strings.HasSuffix(c.Path, "|title") {
			c.Type = changedigest.ChangeContent
		}
	}
}

// keptNeighbours reports whether old child i, matched with new child j
// off the run of kept children, has the same neighbours with words on
// both sides as before, themselves kept in place: the nearest child with
// words before it (and after it) is matched with the nearest one before
// (and after) its match, and on the run (kept, by new index), or there
// is none on either side. Its words then read where they did: only the
// markup around them was rebuilt.
func keptNeighbours(O, N []*tnode, mo []int, kept []bool, i, j int) bool {
	near := func(ns []*tnode, k, step int) int {
		for k += step; k >= 0 && k < len(ns); k += step {
			if ns[k].hasWords() {
				return k
			}
		}
		return -1
	}
	for _, step := range []int{-1, 1} {
		a, b := near(O, i, step), near(N, j, step)
		if (a < 0) != (b < 0) || a >= 0 && (mo[a] != b || !kept[b]) {
			return false
		}
	}
	return true
}

// readsInPlace reports whether a node moved to another parent, x (old)
// and y (new), stands between the same words in the reading order as
// before, next to nodes that did not move: the text before each and
// after each is the same, and none of it was inserted, deleted or moved
// (markup wrapped around it or taken away aside).
// Its words then read where they did; only the markup around them was
// rebuilt.
func (df *differ) readsInPlace(x, y *tnode) bool {
	if df.stayed == nil {
		df.stayed = map[*tnode]bool{}
		for _, ns := range [][]*tnode{df.del, df.ins} {
			for _, n := range ns {
				// an element unwrapped or wrapped around words the
				// page keeps moved no words
				df.stayed[n] = df.markup[n]
			}
		}
	}
	for _, step := range []int{-1, 1} {
		a, ta := df.old.wordsNear(x, step)
		b, tb := df.new.wordsNear(y, step)
		// the letters next to it alike, as far as the shorter goes (the
		// node next to it on one side may be a part of the other's)
		n := min(len(ta), len(tb))
		if step < 0 {
			ta, tb = ta[len(ta)-n:], tb[len(tb)-n:]
		} else {
			ta, tb = ta[:n], tb[:n]
		}
		if (n == 0) != (a == nil && b == nil) || string(ta) != string(tb) || !df.stays(a) || !df.stays(b) {
			return false
		}
	}
	return true
}

// stays reports whether neither n nor an ancestor of n was inserted,
// deleted or moved (nil: no node, which stays).
func (df *differ) stays(n *tnode) bool {
	for ; n != nil; n = n.parent {
		if st, ok := df.stayed[n]; ok && !st || df.moved[n] {
			return false
		}
	}
	return true
}

// wordsNear returns the node with words next to n in the reading order
// of its treelet, before it (step -1) or after it (+1), and its nearest
// nodeNear letters, spaces left out (a few words; as many letters of a
// script written without spaces).
func (sd *side) wordsNear(n *tnode, step int) (*tnode, []rune) {
	for c := n; c.parent != nil; c = c.parent {
		ks := c.parent.kids
		for k := slices.Index(ks, c) + step; k >= 0 && k < len(ks); k += step {
			if !ks[k].hasWords() {
				continue
			}
			r := []rune(strings.Join(strings.Fields(sd.textOf(ks[k])), ""))
			if step < 0 {
				return ks[k], r[max(0, len(r)-nodeNear):]
			}
			return ks[k], r[:min(nodeNear, len(r))]
		}
	}
	return nil, nil
}

// nodeNear is the number of letters of the text next to a moved node
// that readsInPlace compares.
const nodeNear = 48

// ambiguousLeftovers reports whether some tag has unmatched children on
// both sides and more than one on either: then matching them by content
// matters; otherwise the ordered alignment of the gaps pairs them.
func ambiguousLeftovers(O, N []*tnode, mo, mn []int) bool {
	var uo, un []*tnode
	for i, x := range O {
		if mo[i] < 0 && !x.isText() {
			uo = append(uo, x)
		}
	}
	for j, y := range N {
		if mn[j] < 0 && !y.isText() {
			un = append(un, y)
		}
	}
	if len(uo) == 0 || len(un) == 0 || (len(uo) == 1 && len(un) == 1) {
		return false
	}
	if len(uo)+len(un) > 64 {
		return true
	}
	for _, x := range uo {
		co, cn := 0, 0
		for _, y := range uo {
			if y.tag == x.tag {
				co++
			}
		}
		for _, y := range un {
			if y.tag == x.tag {
				cn++
			}
		}
		if cn > 0 && (co > 1 || cn > 1) {
			return true
		}
	}
	return false
}

// label is what a change shows of a node: its text, or its start tag when
// it has none.
func (sd *side) label(n *tnode) string {
	if t := sd.textOf(n); t != "" {
		return t
	}
	return sd.describe(n)
}

// renamed reports an element whose tag changed (a section that became an
// article, a ul rebuilt as a div) as one structural change, and compares
// what it holds like the children of any matched pair: its text is
// reported word by word, not deleted and inserted whole.
func (df *differ) renamed(x, y *tnode, blk *blockPair) {
	typ := changedigest.ChangeStructural
	if presentationTags[x.tag] && presentationTags[y.tag] {
		typ = changedigest.ChangeCosmetic
	}
	df.emit(typ, changedigest.OpUpdate, x, y, df.old.describe(x), df.new.describe(y))
	if sameWords(x, y) && x.d != nil && y.d != nil && sameText(df.old.textOf(x), df.new.textOf(y)) {
		return
	}
	if blockElements[x.tag] || blockElements[y.tag] {
		blk = &blockPair{o: x, n: y}
		df.blocks = append(df.blocks, blk)
	}
	df.kids(x, y, blk)
}

// sameText reports whether two texts have the same words.
func sameText(a, b string) bool { return a == b || sameWordTokens(a, b) }

func btoiSame(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (df *differ) markUp(x *tnode) {
	if df.markup == nil {
		df.markup = map[*tnode]bool{}
	}
	df.markup[x] = true
}

func (df *differ) gone(x *tnode, blk *blockPair) {
	df.raw++
	if x.isText() {
		if x.visible {
			blk.mark(x, nil)
		}
		return
	}
	df.del = append(df.del, x)
}

func (df *differ) added(y *tnode, blk *blockPair) {
	df.raw++
	if y.isText() {
		if y.visible {
			blk.mark(nil, y)
		}
		return
	}
	df.ins = append(df.ins, y)
}

// matchBy pairs unmatched children with equal keys, in order of appearance.
func (df *differ) matchBy(O, N []*tnode, mo, mn []int, via []uint8, how uint8, key func(*tnode) (uint64, bool)) {
	df.w.add(len(O) + len(N))
	if len(O)+len(N) >= sortedFrom {
		matchSorted(O, N, mo, mn, via, how, key)
		return
	}
	// The unmatched old children by key, in order, as chains: head[k] is
	// the first, next[i] the one after i (-1: none). Children matched
	// since are skipped when met.
	var head *hashTable
	var next []int32
	for i := len(O) - 1; i >= 0; i-- {
		if mo[i] >= 0 {
			continue
		}
		if k, ok := key(O[i]); ok {
			if head == nil {
				free := 0
				for _, m := range mo[:i+1] {
					if m < 0 {
						free++
					}
				}
				head = newHashTable(free)
				next = make([]int32, len(O))
			}
			if h, ok := head.get(k); ok {
				next[i] = h
			} else {
				next[i] = -1
			}
			head.put(k, int32(i))
		}
	}
	if head == nil {
		return
	}
	for j, y := range N {
		if mn[j] >= 0 {
			continue
		}
		k, ok := key(y)
		if !ok {
			continue
		}
		h, ok := head.get(k)
		if !ok {
			continue
		}
		i := int(h)
		for i >= 0 && mo[i] >= 0 {
			i = int(next[i])
		}
		if i < 0 {
			head.put(k, -1)
			continue
		}
		head.put(k, int32(i))
		if O[i].tag != y.tag {
			continue
		}
		mo[i], mn[j], via[j] = j, i, how
		head.put(k, next[i])
	}
}

// sortedFrom is the number of children from which matchBy and lcsGreedy
// sort them by key rather than look them up in a hash table: the table
// of a few thousand keys no longer fits in the processor's caches, and
// a lookup there costs more than sorting does.
const sortedFrom = 1 << 12

// matchSorted is matchBy by sorting. The pairs of a key depend only on
// the children of that key (each new child in turn takes the first old
// one left, when their tags agree), so the keys can be taken one after
// the other: both sides sorted by key, then read together.
func matchSorted(O, N []*tnode, mo, mn []int, via []uint8, how uint8, key func(*tnode) (uint64, bool)) {
	var os, ns []keyEnt
	for i, x := range O {
		if mo[i] < 0 {
			if k, ok := key(x); ok {
				os = append(os, keyEnt{k, int32(i)})
			}
		}
	}
	if len(os) == 0 {
		return
	}
	for j, y := range N {
		if mn[j] < 0 {
			if k, ok := key(y); ok {
				ns = append(ns, keyEnt{k, int32(j)})
			}
		}
	}
	sortKeyEnts(os)
	sortKeyEnts(ns)
	p := 0
	for q := 0; q < len(ns); {
		k := ns[q].k
		for p < len(os) && os[p].k < k {
			p++
		}
		end := p
		for end < len(os) && os[end].k == k {
			end++
		}
		h := p // the first old child of the key left
		for ; q < len(ns) && ns[q].k == k; q++ {
			if h == end {
				continue
			}
			i, j := int(os[h].ei), int(ns[q].ei)
			if O[i].tag != N[j].tag {
				continue
			}
			mo[i], mn[j], via[j] = j, i, how
			h++
		}
		p = end
	}
}

// sortKeyEnts sorts entries by key and, among those of a key, by element.
func sortKeyEnts(a []keyEnt) {
	if len(a) < 256 {
		slices.SortFunc(a, func(x, y keyEnt) int {
			if c := cmp.Compare(x.k, y.k); c != 0 {
				return c
			}
			return cmp.Compare(x.ei, y.ei)
		})
		return
	}
	// added in order of element, which the stable radix sort keeps
	radixSortKeys(a)
}

// matchGaps pairs the children left between consecutive in-order matches:
// same tag (or both texts), by similarity, keeping their order.
func (df *differ) matchGaps(O, N []*tnode, mo, mn []int, via []uint8) {
	// anchors: matched pairs on the longest increasing run
	var js []int
	for j := range N {
		if mn[j] >= 0 {
			js = append(js, j)
		}
	}
	seq := make([]int, len(js))
	for k, j := range js {
		seq[k] = mn[j]
	}
	inRun := lisMask(seq)
	pi, pj := -1, -1
	for k := 0; k <= len(js); k++ {
		ni, nj := len(O), len(N)
		if k < len(js) {
			if !inRun[k] {
				continue
			}
			ni, nj = mn[js[k]], js[k]
		}
		var gi, gj []int
		for i := pi + 1; i < ni; i++ {
			if mo[i] < 0 {
				gi = append(gi, i)
			}
		}
		for j := pj + 1; j < nj; j++ {
			if mn[j] < 0 {
				gj = append(gj, j)
			}
		}
		if len(gi) > 0 && len(gj) > 0 {
			df.alignGap(O, N, gi, gj, mo, mn, via)
		}
		pi, pj = ni, nj
	}
}

func sameKind(x, y *tnode) bool { return x.tag == y.tag }

func (df *differ) alignGap(O, N []*tnode, gi, gj []int, mo, mn []int, via []uint8) {
	df.alignSame(O, N, gi, gj, mo, mn, via)
	// Renamed elements: left over, other tag, the same or mostly the
	// same words (a container rebuilt with another tag keeps its text).
	scored := len(gi)*len(gj) <= 400
	if !scored {
		df.renamedSameWords(O, N, gi, gj, mo, mn, via)
		return
	}
	k := 0
	for _, i := range gi {
		x := O[i]
		if mo[i] >= 0 || x.isText() || !x.hasWords() {
			continue
		}
		for l := k; l < len(gj); l++ {
			j := gj[l]
			y := N[j]
			if mn[j] >= 0 || y.isText() || !y.hasWords() {
				continue
			}
			if !inOrder(gi, gj, mo, i, j) {
				continue
			}
			if sameWords(x, y) || (scored && df.textSimilarity(x, y, minRenamedSim) >= minRenamedSim) {
				mo[i], mn[j], via[j] = j, i, viaSimilar
				k = l + 1
				break
			}
		}
	}
}

// renamedSameWords is the pass of alignGap that pairs renamed elements,
// for a gap too large to score by similarity: each old element left over
// (in order) is paired with the first new one left over after the last
// pair that has the same words and keeps the pairs in order (inOrder).
// It finds that one by looking the words up, not by trying each new
// element, so that a gap of thousands of elements costs their number.
func (df *differ) renamedSameWords(O, N []*tnode, gi, gj []int, mo, mn []int, via []uint8) {
	// The pairs made so far in the gap (by alignSame) are in order:
	// pairing i with j keeps them so when j lies between the new sides
	// of the pairs before and after i, that is gj[lo] < j < gj[hi].
	type pairAt struct{ a, l int } // old child, position of its pair in gj
	var pairs []pairAt
	pos := make(map[int]int, len(gj))
	for l, j := range gj {
		pos[j] = l
	}
	for _, a := range gi {
		if b := mo[a]; b >= 0 {
			pairs = append(pairs, pairAt{a, pos[b]})
		}
	}
	// the new elements left over that have words, by their words
	type wordsKey struct{ h, p uint64 }
	byWords := map[wordsKey][]int{} // positions in gj, ascending
	for l, j := range gj {
		df.w.add(1)
		y := N[j]
		if mn[j] >= 0 || y.isText() || !y.hasWords() {
			continue
		}
		h, p, _ := y.words()
		byWords[wordsKey{h, p}] = append(byWords[wordsKey{h, p}], l)
	}
	k, next := 0, 0 // k: first position after the last pair made here
	for _, i := range gi {
		df.w.add(1)
		for next < len(pairs) && pairs[next].a < i {
			next++
		}
		x := O[i]
		if mo[i] >= 0 || x.isText() || !x.hasWords() {
			continue
		}
		lo, hi := k, len(gj)
		if next > 0 {
			lo = max(lo, pairs[next-1].l+1)
		}
		if next < len(pairs) {
			hi = pairs[next].l
		}
		h, p, _ := x.words()
		ls := byWords[wordsKey{h, p}]
		at := sort.SearchInts(ls, lo)
		for ; at < len(ls) && ls[at] < hi; at++ {
			df.w.add(1)
			if j := gj[ls[at]]; mn[j] < 0 {
				mo[i], mn[j], via[j] = j, i, viaSimilar
				k = ls[at] + 1
				break
			}
		}
	}
}

// inOrder reports whether pairing old child i with new child j keeps the
// order of the pairs already made in the gap (gi, gj): a renamed element
// is not also a move.
func inOrder(gi, gj []int, mo []int, i, j int) bool {
	for _, a := range gi {
		if b := mo[a]; b >= 0 && (a < i) != (b < j) {
			return false
		}
	}
	return true
}

// maxScored bounds the pairs of a gap's leftover children scored by
// similarity (a 50 × 50 gap): past it they are paired by tag and order.
const maxScored = 2500

// maxScoredCode bounds the pairs of a gap scored when most of them are
// scripts and style sheets, which are compared by sketches at a small
// fixed cost: a page's head or body holds dozens of inline scripts.
const maxScoredCode = 40000

// costlyPairs counts the pairs of a gap's leftovers of the same tag that
// are not both code, whose similarity costs more than a sketch's.
func costlyPairs(O, N []*tnode, gi, gj []int) int {
	tags := map[string][2]int{}
	for _, i := range gi {
		if !isCode(O[i]) {
			t := tags[O[i].tag]
			t[0]++
			tags[O[i].tag] = t
		}
	}
	for _, j := range gj {
		if !isCode(N[j]) {
			t := tags[N[j].tag]
			t[1]++
			tags[N[j].tag] = t
		}
	}
	pairs := 0
	for _, t := range tags {
		pairs += t[0] * t[1]
	}
	return pairs
}

// minRenamedSim is the word similarity at which an element left over on
// each side of a gap, with different tags, is taken for the same element
// renamed: more than half of its words stay.
const minRenamedSim = 0.5

func (df *differ) alignSame(O, N []*tnode, gi, gj []int, mo, mn []int, via []uint8) {
	match := func(i, j int) { mo[i], mn[j], via[j] = j, i, viaSimilar }
	const minSim = 0.3
	n, m := len(gi), len(gj)
	// The same tags in the same order: position decides, unless pairing
	// by similarity is clearly better (a list that gained an item at the
	// top and lost one at the bottom has the same tags in the same order,
	// but each item is like its neighbour, not like the item at its place).
	positional := n == m
	for k := 0; positional && k < n; k++ {
		positional = sameKind(O[gi[k]], N[gj[k]])
	}
	scored := n*m <= maxScored || n*m <= maxScoredCode && costlyPairs(O, N, gi, gj) <= maxScored
	if positional && (n == 1 && !isCode(O[gi[0]]) || !scored) {
		for k := range gi {
			match(gi[k], gj[k])
		}
		return
	}
	if !scored {
		// Too many to score: same tags in order.
		tags := func(ns []*tnode, idx []int) []uint64 {
			out := make([]uint64, len(idx))
			for k, i := range idx {
				out[k] = hashString(hashSeed, ns[i].tag)
			}
			return out
		}
		for _, p := range df.lcsPairs(tags(O, gi), tags(N, gj)) {
			match(gi[p[0]], gj[p[1]])
		}
		return
	}
	// Ordered alignment maximising total similarity (pairs below minSim
	// do not count).
	score := make([][]float64, n+1)
	for i := range score {
		score[i] = make([]float64, m+1)
	}
	sim := make([][]float64, n)
	df.w.add(n * m)
	for a := range n {
		sim[a] = make([]float64, m)
		for b := range m {
			x, y := O[gi[a]], N[gj[b]]
			if !sameKind(x, y) {
				sim[a][b] = -1
				continue
			}
			sim[a][b] = df.similarity(x, y, minSim)
		}
	}
	for a := n - 1; a >= 0; a-- {
		for b := m - 1; b >= 0; b-- {
			best := max(score[a+1][b], score[a][b+1])
			if s := sim[a][b]; s >= minSim {
				best = max(best, s+score[a+1][b+1])
			}
			score[a][b] = best
		}
	}
	if positional {
		kept := 0.0
		for k := range n {
			if s := sim[k][k]; s >= minSim {
				kept += s
			}
		}
		if score[0][0] < kept+0.5 {
			for k := range gi {
				match(gi[k], gj[k])
			}
			return
		}
	}
	for a, b := 0, 0; a < n && b < m; {
		if s := sim[a][b]; s >= minSim && score[a][b] == s+score[a+1][b+1] {
			match(gi[a], gj[b])
			a++
			b++
		} else if score[a][b] == score[a+1][b] {
			a++
		} else {
			b++
		}
	}
}

// similarity of two nodes of the same tag, 0..1: the Dice coefficient of
// their visible words, with a little weight on attributes; for nodes
// without text, attributes and children's tags. A similarity under need
// is of no use to the caller, so one that surely is may be given as any
// value under need without working it out exactly.
func (df *differ) similarity(x, y *tnode, need float64) float64 {
	if x.isText() {
		return df.textSimilarity(x, y, need)
	}
	as := attrSimilarity(x, y)
	df.w.add(len(x.attrList()) + len(y.attrList()))
	if df.old.bagLen(x)+df.new.bagLen(y) > 0 {
		// The text's share of need, a little less so that a text
		// similarity under it surely gives a similarity under need.
		return 0.85*df.textSimilarity(x, y, (need-0.15*as)/0.85-boundSlack) + 0.15*as
	}
	if isCode(x) && isCode(y) {
		// Scripts and style sheets are told apart by their code, not
		// by their (often absent) attributes: a page's inline scripts
		// all look alike from outside.
		df.w.add(2 * sketchSize)
		return 0.2*as + 0.8*sketchSimilarity(df.old.sketchOf(x), df.new.sketchOf(y))
	}
	ks := df.kidTagSimilarity(x, y)
	return 0.5*as + 0.5*ks
}

// boundSlack keeps the floating-point rounding of a weighted sum of
// similarities from taking a bound that is just under a threshold over it.
const boundSlack = 1e-9

// isCode reports whether n is a script or style element.
func isCode(n *tnode) bool { return n.tag == "script" || n.tag == "style" }

// sketchSize is the number of hashes kept of a code's tokens: the
// smallest distinct ones (a bottom-k sketch, Broder 1997), whose overlap
// estimates how much two codes share at a fixed cost per pair.
const sketchSize = 64

// sketchOf returns the sketch of a script or style sheet's code: the
// sketchSize smallest distinct hashes of its runs of letters and digits,
// sorted.
func (sd *side) sketchOf(n *tnode) []uint64 {
	if n.more != nil && n.more.sketch != nil {
		return n.more.sketch
	}
	code := sd.textRaw(n)
	var hs []uint64
	for i := 0; i < len(code); {
		if !isCodeWordByte(code[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(code) && isCodeWordByte(code[j]) {
			j++
		}
		hs = append(hs, hashString(hashSeed, code[i:j]))
		i = j
	}
	slices.Sort(hs)
	hs = slices.Compact(hs)
	m := n.m()
	m.sketch = append(make([]uint64, 0, min(len(hs), sketchSize)), hs[:min(len(hs), sketchSize)]...)
	return m.sketch
}

func isCodeWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// sketchSimilarity estimates the Dice coefficient of the token sets two
// sketches were made from: of the sketchSize smallest hashes of their
// union, the share found in both (Jaccard), as Dice. Two empty codes are
// the same.
func sketchSimilarity(a, b []uint64) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	union, both := 0, 0
	for i, j := 0, 0; union < sketchSize && (i < len(a) || j < len(b)); union++ {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			i++
		case i == len(a) || b[j] < a[i]:
			j++
		default:
			both++
			i++
			j++
		}
	}
	jac := float64(both) / float64(union)
	return 2 * jac / (1 + jac)
}

// textSimilarity compares the words of two nodes: in order, by the word
// diff, for short texts; as bags of words (Dice) for long ones, where the
// diff's cost grows with the square of the differences. Two short texts
// that share too few words to reach need (the words in common bound the
// words the diff keeps) are given that bound, under need, without the
// diff: texts rewritten throughout are most of the pairs a list of them
// scores, and the diff's cost is highest for them.
func (df *differ) textSimilarity(x, y *tnode, need float64) float64 {
	lx, ly := df.old.bagLen(x), df.new.bagLen(y)
	df.w.add(lx + ly)
	if lx <= shortText && ly <= shortText && df.w.budget().Left() != 0 {
		// textdiff.Similarity, with each node's words read once
		tx, ty := df.wordsOf(df.old, x), df.wordsOf(df.new, y)
		if len(tx)+len(ty) == 0 {
			return 1
		}
		df.w.add(len(tx) + len(ty))
		total := float64(len(tx) + len(ty))
		if need > 0 {
			if ub := 2 * float64(common(df.sortedWordsOf(df.old, x), df.sortedWordsOf(df.new, y))) / total; ub < need {
				return ub
			}
		}
		return 2 * float64(textdiff.CommonOf(df.w.budget(), tx, ty)) / total
	}
	return dice(df.old.bagOf(x), df.new.bagOf(y))
}

// shortText is the number of words up to which texts are compared in order.
const shortText = 100

// wordsOf returns the word tokens of a node's visible text (as
// textdiff.Similarity reads them: whitespace left out), each as its
// number in df.words, which compare faster than the words.
func (df *differ) wordsOf(sd *side, n *tnode) []int32 {
	if df.words == nil {
		df.words = &wordNumbers{m: map[string]int32{}}
	}
	if m := n.m(); m.toksBy != df.words {
		t := sd.textOf(n)
		m.toks, m.toksBy, m.sorted = make([]int32, 0, len(t)/6+1), df.words, nil
		for i := 0; i < len(t); {
			j := textdiff.TokenEnd(t, i)
			if w := t[i:j]; !textdiff.IsSpace(w) {
				m.toks = append(m.toks, df.words.of(w))
			}
			i = j
		}
	}
	return n.more.toks
}

// sortedWordsOf is wordsOf sorted: the multiset of the node's words.
func (df *differ) sortedWordsOf(sd *side, n *tnode) []int32 {
	toks := df.wordsOf(sd, n)
	if m := n.more; m.sorted == nil {
		m.sorted = slices.Clone(toks)
		slices.Sort(m.sorted)
	}
	return n.more.sorted
}

// wordNumbers numbers words: the same word, the same number.
type wordNumbers struct{ m map[string]int32 }

func (wn *wordNumbers) of(w string) int32 {
	id, ok := wn.m[w]
	if !ok {
		id = int32(len(wn.m))
		wn.m[w] = id
	}
	return id
}

// bagLen is len(sd.bagOf(n)), counted without making the bag: short
// texts are compared by their words in order, and need no bag.
func (sd *side) bagLen(n *tnode) int {
	m := n.m()
	if m.bag != nil {
		return len(m.bag)
	}
	if m.bagLen == 0 {
		k := 0
		for range strings.FieldsSeq(sd.textOf(n)) {
			k++
		}
		m.bagLen = int32(k) + 1
	}
	return int(m.bagLen) - 1
}

// bagOf returns the sorted hashes of a node's visible words.
func (sd *side) bagOf(n *tnode) []uint64 {
	if m := n.m(); m.bag == nil {
		m.bag = wordBag(sd.textOf(n), []uint64{})
	}
	return n.more.bag
}

func wordBag(t string, out []uint64) []uint64 {
	n := 0
	for range strings.FieldsSeq(t) {
		n++
	}
	out = slices.Grow(out, n)
	for w := range strings.FieldsSeq(t) {
		out = append(out, hashString(hashSeed, w))
	}
	slices.Sort(out)
	return out
}

// bagPool holds the bags diceTexts makes, for the next.
var bagPool = sync.Pool{New: func() any { return new([]uint64) }}

// diceTexts is dice of the word bags of two texts, made in reused
// buffers.
func diceTexts(a, b string) float64 {
	pa, pb := bagPool.Get().(*[]uint64), bagPool.Get().(*[]uint64)
	*pa = wordBag(a, (*pa)[:0])
	*pb = wordBag(b, (*pb)[:0])
	d := dice(*pa, *pb)
	bagPool.Put(pa)
	bagPool.Put(pb)
	return d
}

// dice is 2·|a∩b|/(|a|+|b|) for sorted multisets; 1 when both are empty.
func dice(a, b []uint64) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	return 2 * float64(common(a, b)) / float64(len(a)+len(b))
}

// common is the size of the intersection of two sorted multisets.
func common[T cmp.Ordered](a, b []T) int {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

func attrSimilarity(x, y *tnode) float64 {
	xa, ya := x.attrList(), y.attrList()
	if len(xa)+len(ya) == 0 {
		return 1
	}
	// both sorted by name, each name once
	same := 0
	for i, j := 0, 0; i < len(xa) && j < len(ya); {
		switch {
		case xa[i].k < ya[j].k:
			i++
		case xa[i].k > ya[j].k:
			j++
		default:
			if xa[i].v == ya[j].v {
				same++
			}
			i++
			j++
		}
	}
	return 2 * float64(same) / float64(len(xa)+len(ya))
}

func (df *differ) kidTagSimilarity(x, y *tnode) float64 {
	if len(x.kids)+len(y.kids) == 0 {
		return 1
	}
	a := make([]uint64, len(x.kids))
	b := make([]uint64, len(y.kids))
	for i, k := range x.kids {
		a[i] = hashString(hashSeed, k.tag)
	}
	for i, k := range y.kids {
		b[i] = hashString(hashSeed, k.tag)
	}
	df.w.add(len(a) + len(b))
	if len(a)*len(b) > maxKidPairs {
		// Long lists of children, as many pairs of them as a gap has
		// (thousands): their tags compared as multisets, not in order.
		slices.Sort(a)
		slices.Sort(b)
		return 2 * float64(common(a, b)) / float64(len(a)+len(b))
	}
	return 2 * float64(len(df.lcsPairs(a, b))) / float64(len(a)+len(b))
}

// maxKidPairs bounds the pairs of children (32 × 32) whose tags
// kidTagSimilarity compares in order.
const maxKidPairs = 1024

// finish pairs deleted and inserted subtrees into moves, types the rest
// and reports the text changes of blocks.
func (df *differ) finish() {
	// An inline element inserted or deleted inside a block whose text is
	// reported as updated (a span unwrapped while a colon was added) is
	// already in that text: its own change is markup.
	changedO, changedN := map[*tnode]bool{}, map[*tnode]bool{}
	for _, b := range df.blocks {
		if b.changed && b.n.tag != "#root" {
			changedO[b.o], changedN[b.n] = true, true
		}
	}
	inChanged := func(x *tnode, changed map[*tnode]bool) bool {
		if blockElements[x.tag] {
			return false
		}
		for p := x.parent; p != nil; p = p.parent {
			if blockElements[p.tag] || p.tag == "title" || p.tag == "#root" {
				return changed[p]
			}
		}
		return false
	}
	df.w.add(len(df.del) + len(df.ins) + len(df.blocks))
	for _, x := range df.del {
		if x.hasWords() && inChanged(x, changedO) {
			df.markUp(x)
		}
	}
	for _, y := range df.ins {
		if y.hasWords() && inChanged(y, changedN) {
			df.markUp(y)
		}
	}
	// Cross-parent moves: equal subtrees deleted in one place and
	// inserted in another.
	byH := map[uint64][]int{}
	for i, x := range df.del {
		if x.hasWords() || len(x.kids) > 1 || isMetadata(x) {
			byH[x.h] = append(byH[x.h], i)
		}
	}
	movedDel := make([]bool, len(df.del))
	var ins []*tnode
	for _, y := range df.ins {
		if l := byH[y.h]; len(l) > 0 && (y.hasWords() || len(y.kids) > 1 || isMetadata(y)) {
			x := df.del[l[0]]
			byH[y.h] = l[1:]
			movedDel[l[0]] = true
			if isMetadata(x) {
				// The same metadata elsewhere (a page that streams its
				// head puts its meta tags in the body): no change.
				continue
			}
			if x.hasWords() && df.readsInPlace(x, y) {
				df.emit(changedigest.ChangeStructural, changedigest.OpMove, x, y, df.old.describe(x), df.new.describe(y))
			} else {
				df.emit(changedigest.ChangeStructural, changedigest.OpMove, x, y, df.old.label(x), df.new.label(y))
			}
			continue
		}
		ins = append(ins, y)
	}
	for i, x := range df.del {
		if !movedDel[i] {
			df.emit(df.classify(x), changedigest.OpDelete, x, nil, df.treeText(df.old, x), "")
		}
	}
	for _, y := range ins {
		df.emit(df.classify(y), changedigest.OpInsert, nil, y, "", df.treeText(df.new, y))
	}
	for _, b := range df.blocks {
		if !b.changed {
			continue
		}
		df.w.add(int(b.o.tokB) - int(b.o.tokA) + int(b.n.tokB) - int(b.n.tokA))
		if b.n.tag == "#root" {
			for _, p := range b.loose {
				x, y := p[0], p[1]
				switch {
				case x == nil:
					df.emit(changedigest.ChangeContent, changedigest.OpInsert, nil, y, "", df.new.textOf(y))
				case y == nil:
					df.emit(changedigest.ChangeContent, changedigest.OpDelete, x, nil, df.old.textOf(x), "")
				default:
					df.emit(changedigest.ChangeContent, changedigest.OpUpdate, x, y, df.old.textOf(x), df.new.textOf(y))
				}
			}
			continue
		}
		// A block reports its own text, the runs between the blocks nested
		// in it: those report theirs (or were inserted, deleted or moved as
		// a whole). When the nested blocks do not line up, the whole text.
		oruns, ospans := df.old.ownRuns(b.o)
		nruns, nspans := df.new.ownRuns(b.n)
		if len(oruns) != len(nruns) {
			oruns, nruns = []string{df.old.textOf(b.o)}, []string{df.new.textOf(b.n)}
			ospans, nspans = [][2]int{{int(b.o.tokA), int(b.o.tokB)}}, [][2]int{{int(b.n.tokA), int(b.n.tokB)}}
		}
		for i := range oruns {
			ot, nt := oruns[i], nruns[i]
			if ot == nt {
				continue
			}
			df.emit(changedigest.ChangeContent, changedigest.OpUpdate, b.o, b.n, ot, nt)
			if b.o.d != nil && b.n.d != nil && len(ospans) == len(oruns) && len(nspans) == len(nruns) {
				rc := &df.out[len(df.out)-1]
				rc.runs = &[2][2]int{ospans[i], nspans[i]}
			}
		}
	}
}

// classify types an inserted or deleted subtree.
func (df *differ) classify(x *tnode) changedigest.ChangeType {
	switch {
	case behaviouralTags[x.tag]:
		return changedigest.ChangeBehavioural
	case x.tag == "style" || (x.tag == "link" && isStylesheet(x)):
		return changedigest.ChangeCosmetic
	case x.hasWords() && !df.markup[x]:
		return changedigest.ChangeContent
	case x.behav:
		return changedigest.ChangeBehavioural
	}
	return changedigest.ChangeStructural
}

func (df *differ) treeText(sd *side, x *tnode) string {
	if behaviouralTags[x.tag] || x.tag == "style" {
		return df.behaviour(sd, x)
	}
	if t := sd.textOf(x); t != "" {
		return t
	}
	return sd.describe(x)
}

// clip shortens s to at most n bytes, at a word boundary.
func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isUTF8Start(s[cut]) {
		cut--
	}
	if k := strings.LastIndexByte(s[:cut], ' '); k > n/2 {
		cut = k
	}
	return s[:cut]
}

func isUTF8Start(c byte) bool { return c&0xC0 != 0x80 }

// window returns the parts of two long texts around where they differ,
// with some context, so that each is still a substring of its text. The
// changed words are found with the word diff when the texts are not too
// long, else as the longest common prefix and suffix.
func window(bu *textdiff.Budget, a, b string, n int) (string, string) {
	if n <= 0 || (len(a) <= n && len(b) <= n) {
		return a, b
	}
	p, s := changedSpan(bu, a, b)
	ctx := n / 4
	cut := func(t string) string {
		lo := max(0, p-ctx)
		hi := min(len(t), len(t)-s+ctx)
		if hi-lo > n {
			hi = lo + n
		}
		for lo > 0 && !isUTF8Start(t[lo]) {
			lo--
		}
		for hi < len(t) && !isUTF8Start(t[hi]) {
			hi++
		}
		// start and end at word boundaries
		if lo > 0 {
			if k := strings.IndexByte(t[lo:hi], ' '); k >= 0 && k < ctx {
				lo += k + 1
			}
		}
		if hi < len(t) {
			if k := strings.LastIndexByte(t[lo:hi], ' '); k > 0 && hi-(lo+k) < ctx {
				hi = lo + k
			}
		}
		return t[lo:hi]
	}
	return cut(a), cut(b)
}

// changedSpan returns the length in bytes of the common start and end of
// two texts outside the words that differ.
func changedSpan(bu *textdiff.Budget, a, b string) (prefix, suffix int) {
	// the word diff costs the square of the differences: only for texts
	// that are mostly alike
	if len(a)+len(b) <= 64<<10 && diceTexts(a, b) >= 0.8 {
		edits := bu.WordDiff(a, b)
		for _, e := range edits {
			if e.Op != textdiff.Equal {
				break
			}
			prefix += len(e.Text)
		}
		for i := len(edits) - 1; i >= 0 && edits[i].Op == textdiff.Equal; i-- {
			suffix += len(edits[i].Text)
		}
		if prefix+suffix <= min(len(a), len(b)) {
			return prefix, suffix
		}
	}
	prefix, suffix = 0, 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	return prefix, suffix
}

// lcsPairs returns index pairs of a longest common subsequence of a and
// b, counting its work into w.
func (df *differ) lcsPairs(a, b []uint64) [][2]int { return lcsPairs(df.w, a, b) }

// lcsPairs returns index pairs of a longest common subsequence of a and
// b, counting its work into w.
func lcsPairs(w *work, a, b []uint64) [][2]int {
	var out [][2]int
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		out = append(out, [2]int{p, p})
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	if len(ma) > 0 && len(mb) > 0 {
		w.add(len(ma) + len(mb))
		if len(ma)*len(mb) <= 1<<20 && w.takeCells(len(ma)*len(mb)) {
			w.add(len(ma) * len(mb))
			out = append(out, lcsDP(ma, mb, p)...)
		} else {
			out = append(out, lcsGreedy(ma, mb, p)...)
		}
	}
	for k := s; k > 0; k-- {
		out = append(out, [2]int{len(a) - k, len(b) - k})
	}
	return out
}

func lcsDP(a, b []uint64, off int) [][2]int {
	n, m := len(a), len(b)
	t := make([]int32, (n+1)*(m+1))
	w := m + 1
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	var out [][2]int
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i] == b[j]:
			out = append(out, [2]int{off + i, off + j})
			i++
			j++
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			i++
		default:
			j++
		}
	}
	return out
}

// lcsGreedy matches values in order with a look-up table; used when the
// lists are too long for the quadratic table.
func lcsGreedy(a, b []uint64, off int) [][2]int {
	var cand [][2]int
	if len(a)+len(b) >= sortedFrom {
		cand = greedyPairsSorted(a, b)
	} else {
		cand = greedyPairs(a, b)
	}
	seq := make([]int, len(cand))
	for k, c := range cand {
		seq[k] = c[1]
	}
	keep := lisMask(seq)
	var out [][2]int
	for k, c := range cand {
		if keep[k] {
			out = append(out, [2]int{off + c[0], off + c[1]})
		}
	}
	return out
}

// greedyPairs pairs each element of a, in order, with the first element
// of b of the same value not paired yet.
func greedyPairs(a, b []uint64) [][2]int {
	// The positions in b of each value, in order, as chains: head[x] is
	// the first not taken yet, next[j] the one after j (-1: none).
	head := newHashTable(len(b))
	next := make([]int32, len(b))
	for j := len(b) - 1; j >= 0; j-- {
		if h, ok := head.get(b[j]); ok {
			next[j] = h
		} else {
			next[j] = -1
		}
		head.put(b[j], int32(j))
	}
	var cand [][2]int
	for i, x := range a {
		if j, ok := head.get(x); ok && j >= 0 {
			cand = append(cand, [2]int{i, int(j)})
			head.put(x, next[j])
		}
	}
	return cand
}

// greedyPairsSorted is greedyPairs by sorting: the k-th element of a
// value in a is paired with the k-th of that value in b.
func greedyPairsSorted(a, b []uint64) [][2]int {
	as, bs := make([]keyEnt, len(a)), make([]keyEnt, len(b))
	for i, x := range a {
		as[i] = keyEnt{x, int32(i)}
	}
	for j, x := range b {
		bs[j] = keyEnt{x, int32(j)}
	}
	sortKeyEnts(as)
	sortKeyEnts(bs)
	pair := make([]int32, len(a)) // the element of b paired with i, +1
	n := 0
	for p, q := 0, 0; p < len(as) && q < len(bs); {
		switch {
		case as[p].k < bs[q].k:
			p++
		case as[p].k > bs[q].k:
			q++
		default:
			pair[as[p].ei] = bs[q].ei + 1
			n++
			p++
			q++
		}
	}
	cand := make([][2]int, 0, n)
	for i, j := range pair {
		if j > 0 {
			cand = append(cand, [2]int{i, int(j - 1)})
		}
	}
	return cand
}

// maxWeighedRun bounds the matched children whose moves are found by
// heaviestRun, which takes time quadratic in their number; past it
// lisMask's run is kept.
const maxWeighedRun = 512

func all(b []bool) bool {
	for _, x := range b {
		if !x {
			return false
		}
	}
	return true
}

// runWeight is the total weight of the marked elements.
func runWeight(run []bool, weight []int) int {
	w := 0
	for k, in := range run {
		if in {
			w += weight[k]
		}
	}
	return w
}

// heaviestRun marks the elements of a longest strictly increasing
// subsequence of seq and, of those as long, one of the largest total
// weight.
func heaviestRun(seq, weight []int) []bool {
	type score struct{ n, w int }
	better := func(a, b score) bool { return a.n > b.n || a.n == b.n && a.w > b.w }
	best := make([]score, len(seq))
	prev := make([]int, len(seq))
	top := -1
	for k, v := range seq {
		best[k], prev[k] = score{1, weight[k]}, -1
		for j := 0; j < k; j++ {
			if seq[j] < v {
				if c := (score{best[j].n + 1, best[j].w + weight[k]}); better(c, best[k]) {
					best[k], prev[k] = c, j
				}
			}
		}
		if top < 0 || better(best[k], best[top]) {
			top = k
		}
	}
	keep := make([]bool, len(seq))
	for k := top; k >= 0; k = prev[k] {
		keep[k] = true
	}
	return keep
}

// lisMask marks the elements of a longest strictly increasing subsequence.
func lisMask(seq []int) []bool {
	keep := make([]bool, len(seq))
	if len(seq) == 0 {
		return keep
	}
	tails := []int{}
	prev := make([]int, len(seq))
	for k, v := range seq {
		j := sort.Search(len(tails), func(t int) bool { return seq[tails[t]] >= v })
		prev[k] = -1
		if j > 0 {
			prev[k] = tails[j-1]
		}
		if j == len(tails) {
			tails = append(tails, k)
		} else {
			tails[j] = k
		}
	}
	for k := tails[len(tails)-1]; k >= 0; k = prev[k] {
		keep[k] = true
	}
	return keep
}
