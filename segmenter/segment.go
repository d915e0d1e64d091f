package segmenter

// Hybrid segmentation of a first version (CaSePer eq. 1–5).
//
// The light DOM is walked from the top, which visits the same blocks as
// the paper's bottom-up pass by decreasing depth: an element whose subtree
// holds at least δ nodes and has children of that size is a container, and
// each such child becomes a segment of its own (recursively); the small
// children between them are merged with the segment before them, unless
// together they reach δ, in which case they form a segment. A large element
// whose children are all small is cut by densitometry: its children are the
// candidate blocks, each with a text density (Kohlschütter and Nejdl: words
// per 80-column line), and a cut falls before a block-level child where the
// relative density slope to the block fused so far exceeds λ, or where the
// blocks fused so far pass MaxSegment bytes. Segments smaller than δ/2
// nodes finally merge with their predecessor.

// unit is a child of an element: an element subtree, a void element or a text.
type unit struct {
	elem int32 // -1 for a text
	a, b int   // token range
}

type hybridState struct {
	s      *Segmenter
	d      *doc
	bounds []int32
	// stack holds the units of the elements being visited, those of each
	// after those of its parent, so that a deep page does not make a
	// slice for each level
	stack []unit
}

// region is a part of a page detection is restricted to: the whole page
// (elem -1) or an element a zone selector matched.
type region struct {
	elem int32
	a, b int // token range
}

// hybrid returns the segment boundaries of region r: elements in document
// order, the region's own element first when it has one.
func (s *Segmenter) hybrid(d *doc, r region) []int32 {
	h := &hybridState{s: s, d: d}
	if r.elem >= 0 {
		h.bounds = append(h.bounds, r.elem)
		if d.size(r.a, r.b) >= s.Delta {
			h.visit(r.elem, r.a+1, r.b-1)
		}
	} else if d.size(r.a, r.b) >= s.Delta {
		h.visit(-1, r.a, r.b)
	}
	return h.merge(r)
}

// units returns the children [a, b) of an element as units, on the
// stack (popped with pop).
func (h *hybridState) units(a, b int) []unit {
	d := h.d
	start := len(h.stack)
	us := h.stack
	for i := a; i < b; {
		t := &d.toks[i]
		switch t.kind {
		case tStart:
			j := min(int(d.elems[t.elem].endTok)+1, b)
			us = append(us, unit{elem: t.elem, a: i, b: j})
			i = j
		case tVoid:
			us = append(us, unit{elem: t.elem, a: i, b: i + 1})
			i++
		case tText:
			us = append(us, unit{elem: -1, a: i, b: i + 1})
			i++
		default:
			i++
		}
	}
	h.stack = us
	return us[start:len(us):len(us)]
}

// pop takes units us, the last returned, off the stack.
func (h *hybridState) pop(us []unit) { h.stack = h.stack[:len(h.stack)-len(us)] }

func (h *hybridState) big(u unit) bool {
	return u.elem >= 0 && h.d.toks[u.a].kind == tStart && h.d.size(u.a, u.b) >= h.s.Delta
}

// visit segments the children [a, b) of element e (-1: the document).
func (h *hybridState) visit(e int32, a, b int) {
	us := h.units(a, b)
	defer h.pop(us)
	h.d.w.add(len(us))
	anyBig := false
	for _, u := range us {
		if h.big(u) {
			anyBig = true
			break
		}
	}
	if !anyBig {
		h.split(us)
		return
	}
	var run []unit
	seenBig := false
	for _, u := range us {
		if !h.big(u) {
			run = append(run, u)
			continue
		}
		h.flush(run, seenBig)
		run = run[:0]
		h.bounds = append(h.bounds, u.elem)
		h.visit(u.elem, u.a+1, u.b-1)
		seenBig = true
	}
	h.flush(run, seenBig)
}

// flush handles a run of small siblings: merged with the segment before it
// unless it reaches δ nodes, in which case it starts a segment of its own
// (when a large sibling came before it) and is cut by densitometry.
func (h *hybridState) flush(run []unit, afterBig bool) {
	if len(run) == 0 {
		return
	}
	if h.d.size(run[0].a, run[len(run)-1].b) < h.s.Delta {
		return
	}
	if afterBig {
		for i, u := range run {
			if u.elem >= 0 && h.d.toks[u.a].kind == tStart {
				h.bounds = append(h.bounds, u.elem)
				run = run[i:]
				break
			}
		}
	}
	h.split(run)
}

// density is Kohlschütter and Nejdl's text density of a block of words
// spread over chars characters: the words per line when the text is
// wrapped at width columns, not counting the last, partial line.
func density(words, chars, width int) float64 {
	if words == 0 {
		return 0
	}
	if chars <= width {
		return float64(words)
	}
	return float64(words) * float64(width) / float64(chars)
}

// split cuts a sequence of sibling blocks where the relative slope of text
// density between the block fused so far and the next block exceeds λ.
func (h *hybridState) split(us []unit) {
	d, s := h.d, h.s
	minSeg := max(1, s.Delta/2)
	d.w.add(len(us))
	curWords, curChars, curSize, curStart := 0, 0, 0, 0
	for i, u := range us {
		w := int(d.words[u.b] - d.words[u.a])
		c := int(d.chars[u.b] - d.chars[u.a])
		sz := d.size(u.a, u.b)
		if i == 0 {
			curStart = d.offAt(u.a)
		}
		if i > 0 && curSize >= minSeg && u.elem >= 0 &&
			d.toks[u.a].kind == tStart && d.elems[u.elem].info&tiBlock != 0 {
			cut := d.offAt(u.a)-curStart >= s.MaxSegment // a long run of alike blocks
			if !cut && w > 0 && curWords > 0 {
				cut = slope(density(curWords, curChars, s.LineWidth), density(w, c, s.LineWidth)) > s.Lambda
			}
			if cut {
				h.bounds = append(h.bounds, u.elem)
				curWords, curChars, curSize, curStart = 0, 0, 0, d.offAt(u.a)
			}
		}
		curWords += w
		curChars += c
		curSize += sz
	}
}

// slope is the relative density difference of two blocks (CaSePer eq. 4).
func slope(a, b float64) float64 {
	m := max(a, b)
	if m == 0 {
		return 0
	}
	d := a - b
	if d < 0 {
		d = -d
	}
	return d / m
}

// merge drops boundaries that would leave a segment smaller than δ/2
// nodes, merging it with its predecessor (the region's first segment,
// which has none, takes its successor instead). A segment of nothing but
// opening tags (wrappers around the next block) keeps its start and
// takes the next block in. Segments are looked at in order, each once
// more after it took its successor in: merging never makes a segment
// before the one looked at smaller.
func (h *hybridState) merge(r region) []int32 {
	d := h.d
	minSeg := max(1, h.s.Delta/2)
	bs := h.bounds
	if len(bs) == 0 {
		return bs
	}
	// starts: the token where each segment starts; the first one (the
	// region's element, or the start of the page) is never dropped
	starts := make([]int, 0, len(bs)+1)
	if r.elem < 0 {
		starts = append(starts, r.a)
	}
	for _, b := range bs {
		starts = append(starts, int(d.elems[b].tok))
	}
	skip := 0
	if r.elem < 0 {
		skip = 1 // starts[0] is no boundary
	}
	// keep: the segments kept so far, each by its index in starts; cur
	// the one looked at, next the index of the start after it
	keep := make([]int, 0, len(starts))
	cur, next := 0, 1
	for {
		d.w.add(1)
		end := r.b
		if next < len(starts) {
			end = starts[next]
		}
		left := len(keep) + 1 + len(starts) - next // segments left
		if d.size(starts[cur], end) >= minSeg || left == 1 {
			keep = append(keep, cur)
			if next == len(starts) {
				break
			}
			cur, next = next, next+1
			continue
		}
		if len(keep) == 0 || onlyOpening(d, starts[cur], end) {
			if next < len(starts) {
				next++ // cur takes its successor in
				continue
			}
		}
		// merged with its predecessor
		cur, keep = keep[len(keep)-1], keep[:len(keep)-1]
	}
	out := bs[:0]
	for _, k := range keep {
		if k >= skip {
			out = append(out, bs[k-skip])
		}
	}
	return out
}

// onlyOpening reports whether tokens [a, b) are all start tags.
func onlyOpening(d *doc, a, b int) bool {
	for i := a; i < b; i++ {
		if d.toks[i].kind != tStart {
			return false
		}
	}
	return true
}
