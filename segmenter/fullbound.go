package segmenter

// Knowing before a treelet is built that its comparison will pass
// maxChanges: the group is then told as its old and new text
// (compareVersions) without building and matching nodes that would be
// thrown away.

// shape is a treelet reduced to what changesAtLeast looks at: its nodes,
// the root first and the others in page order, as build makes them.
type shape struct {
	parts []treePart
	nodes []shapeNode
}

// shapeNode is a node of a shape: its parent, first child and next
// sibling (-1: none; the children are linked last first), its element
// (-1: a text) in parts[part], whether its subtree hides a text, and
// the rolling hash of its visible words (as tnode.words).
type shapeNode struct {
	parent, first, next int32
	elem, part          int32
	hidden              bool
	h, p                uint64
}

// shapeOf is the shape of the treelet build makes of parts, counting its
// work into w.
func shapeOf(w *work, parts []treePart) *shape {
	cnt := 1
	for _, r := range parts {
		w.add(r.b - r.a)
		for i := r.a; i < r.b; i++ {
			if k := r.d.toks[i].kind; k == tStart || k == tVoid || k == tText {
				cnt++
			}
		}
	}
	sh := &shape{parts: parts, nodes: make([]shapeNode, 1, cnt)}
	sh.nodes[0] = shapeNode{parent: -1, first: -1, next: -1, elem: -1, part: -1, p: 1}
	add := func(elem, part, parent int32) int32 {
		id := int32(len(sh.nodes))
		pa := &sh.nodes[parent]
		sh.nodes = append(sh.nodes, shapeNode{parent: parent, first: -1, next: pa.first, elem: elem, part: part, p: 1})
		pa.first = id
		return id
	}
	for pi, r := range parts {
		d := r.d
		// as build: elements opened in the range have consecutive
		// indices from e0, and a node whose parent was not opened in
		// the range is a child of the root
		e0 := d.firstOpened(r.a, r.b)
		var opened []int32 // node of element e0+k, +1 (0: none)
		parentOf := func(ei int32) int32 {
			if k := int(ei - e0); ei >= e0 && k < len(opened) && opened[k] != 0 {
				return opened[k] - 1
			}
			return 0
		}
		for i := r.a; i < r.b; i++ {
			t := &d.toks[i]
			switch t.kind {
			case tStart, tVoid:
				id := add(t.elem, int32(pi), parentOf(d.elems[t.elem].parent))
				for k := int(t.elem - e0); len(opened) <= k; {
					opened = append(opened, 0)
				}
				if t.kind == tStart {
					opened[t.elem-e0] = id + 1
				}
			case tText:
				id := add(-1, int32(pi), parentOf(t.elem))
				n := &sh.nodes[id]
				if t.flags&fVisible != 0 {
					n.h, n.p = rollWords(0, 1, d.textBytes(i))
				} else {
					n.hidden = true
				}
			}
		}
	}
	// Words bottom up: a node's descendants come after it, and its
	// children are put before the words of their later siblings.
	for id := len(sh.nodes) - 1; id > 0; id-- {
		n := &sh.nodes[id]
		pa := &sh.nodes[n.parent]
		pa.h, pa.p = roll(n.h, n.p, pa.h, pa.p)
		pa.hidden = pa.hidden || n.hidden
	}
	return sh
}

// kids returns the children of node x in order.
func (sh *shape) kids(x int32) []int32 {
	n := 0
	for k := sh.nodes[x].first; k >= 0; k = sh.nodes[k].next {
		n++
	}
	ks := make([]int32, n)
	for k := sh.nodes[x].first; k >= 0; k = sh.nodes[k].next {
		n--
		ks[n] = k
	}
	return ks
}

// tag is the tag of node x ("" for a text).
func (sh *shape) tag(x int32) string {
	n := &sh.nodes[x]
	if n.elem < 0 {
		return ""
	}
	return sh.parts[n.part].d.tagOf(n.elem)
}

// sameTag reports whether node x of sh and node y of sh2 have the same
// tag (texts count as one tag), as their tag strings would tell.
func (sh *shape) sameTag(x int32, sh2 *shape, y int32) bool {
	nx, ny := &sh.nodes[x], &sh2.nodes[y]
	if nx.elem < 0 || ny.elem < 0 {
		return nx.elem < 0 && ny.elem < 0
	}
	dx, dy := sh.parts[nx.part].d, sh2.parts[ny.part].d
	ex, ey := &dx.elems[nx.elem], &dy.elems[ny.elem]
	if ex.tagKey&(1<<31) == 0 && ey.tagKey&(1<<31) == 0 {
		return ex.tagKey == ey.tagKey // atoms
	}
	return dx.tagOf(nx.elem) == dy.tagOf(ny.elem)
}

// surelyFull reports whether comparing the treelets build makes of
// oparts and nparts, after raw changes counted already, passes
// maxChanges. From the roots down, while both sides have one child
// element of the same tag (which the matching pairs, and whose
// comparison goes on to their children: not code, not a behavioural
// element, children of the same tags, different visible words and no
// hidden text), it bounds the changes the children of each such pair
// count (changesAtLeast).
func surelyFull(w *work, raw int, oparts, nparts []treePart) bool {
	size := func(parts []treePart) int {
		n := 0
		for _, r := range parts {
			n += r.b - r.a
		}
		return n
	}
	if raw+max(size(oparts), size(nparts)) <= maxChanges {
		return false // not children enough for that
	}
	o, n := shapeOf(w, oparts), shapeOf(w, nparts)
	O, N := o.kids(0), n.kids(0)
	for {
		w.add(len(O) + len(N))
		if raw+max(len(O), len(N)) > maxChanges && raw+shapeChangesAtLeast(o, n, O, N) > maxChanges {
			return true
		}
		if len(O) != 1 || len(N) != 1 {
			return false
		}
		a, b := O[0], N[0]
		oa, nb := &o.nodes[a], &n.nodes[b]
		if oa.elem < 0 || nb.elem < 0 || oa.hidden || nb.hidden || oa.h == nb.h && oa.p == nb.p {
			return false
		}
		if tag := o.tag(a); tag != n.tag(b) || isCodeTag(tag) || behaviouralTags[tag] {
			return false
		}
		ka, kb := o.kids(a), n.kids(b)
		if len(ka) != len(kb) {
			return false
		}
		for i := range ka {
			w.add(1)
			if !o.sameTag(ka[i], n, kb[i]) {
				return false
			}
		}
		O, N = ka, kb
	}
}

func isCodeTag(tag string) bool { return tag == "script" || tag == "style" }

// shapeChangesAtLeast is changesAtLeast of children O and N of shapes
// o and n.
func shapeChangesAtLeast(o, n *shape, O, N []int32) int {
	keys := func(sh *shape, ns []int32) (shown []uint64, hidden int) {
		shown = make([]uint64, 0, len(ns))
		for _, x := range ns {
			if n := &sh.nodes[x]; n.hidden {
				hidden++
			} else {
				shown = append(shown, mix(n.h, n.p))
			}
		}
		return shown, hidden
	}
	ko, ho := keys(o, O)
	kn, hn := keys(n, N)
	return changesFromKeys(ko, kn, ho, hn)
}
