package segmenter

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

// pageVersion is a scanned version of a page cut into segments.
type pageVersion struct {
	d       *doc
	regions []region // nil: the whole page
	segs    []segment
	// prev gives, for a later version, the previous version's segment
	// each segment continues (-1: a boundary new in this version).
	prev  []int
	texts []string // visible texts, filled as asked for
}

// text is the visible text of segment i.
func (pv *pageVersion) text(i int) string {
	if pv.texts == nil {
		pv.texts = make([]string, len(pv.segs))
	}
	if pv.texts[i] == "" {
		pv.texts[i] = pv.d.visibleText(pv.segs[i].a, pv.segs[i].b)
	}
	return pv.texts[i]
}

func (pv *pageVersion) hashes() []string {
	h := make([]string, len(pv.segs))
	for i, sg := range pv.segs {
		h[i] = sg.hash
	}
	return h
}

// bounds describes every segment's boundary, for the layout.
func (s *Segmenter) bounds(pv *pageVersion) []bound {
	bs := make([]bound, len(pv.segs))
	for i, sg := range pv.segs {
		if sg.elem >= 0 {
			bs[i] = s.boundOf(pv.d, sg.elem, sg.region)
		} else {
			bs[i] = bound{docStart: true}
		}
	}
	return bs
}

func (s *Segmenter) scanPage(w *work, body []byte, zone string) (*doc, []region, error) {
	if zone != "" {
		if _, err := compileZone(zone); err != nil {
			return nil, nil, err
		}
	}
	d := scan(w, body, nil, step{})
	regs, err := regions(d, zone)
	if err != nil {
		d.release()
		return nil, nil, err
	}
	return d, regs, nil
}

// first cuts a version by hybrid segmentation.
func (s *Segmenter) first(d *doc, regs []region) *pageVersion {
	d.index()
	var starts []int32
	rs := map[int32]bool{}
	if regs == nil {
		starts = append([]int32{-1}, s.hybrid(d, region{elem: -1, a: 0, b: len(d.toks)})...)
	} else {
		for _, r := range regs {
			rs[r.elem] = true
			starts = append(starts, s.hybrid(d, r)...)
		}
	}
	return &pageVersion{d: d, regions: regs, segs: d.cut(starts, rs, regs)}
}

// later cuts a version along the boundaries of the previous one, adds
// boundaries for new blocks of the kinds the previous version was cut at
// (blocks whose text the previous segment did not have: prevText gives the
// visible text of a previous segment), and flags the segments whose hashes
// are new to the history.
func (s *Segmenter) later(d *doc, regs []region, prev []bound, history [][]string, prevText func(int) string) (*pageVersion, []bool) {
	match := s.align(d, prev, regs)
	type start struct {
		elem   int32
		prev   int
		region bool
	}
	var st []start
	matchedRegion := map[int32]bool{}
	for i, b := range prev {
		switch {
		case b.docStart:
			if regs == nil {
				st = append(st, start{-1, i, false})
			}
		case match[i] >= 0:
			st = append(st, start{match[i], i, b.region})
			if b.region {
				matchedRegion[match[i]] = true
			}
		}
	}
	if regs == nil && (len(st) == 0 || st[0].elem != -1) {
		st = append([]start{{-1, -1, false}}, st...)
	}
	for _, r := range regs {
		if !matchedRegion[r.elem] {
			st = append(st, start{r.elem, -1, true})
		}
	}
	tokOf := func(ei int32) int {
		if ei < 0 {
			return -1
		}
		return int(d.elems[ei].tok)
	}
	sort.SliceStable(st, func(i, j int) bool { return tokOf(st[i].elem) < tokOf(st[j].elem) })

	build := func() *pageVersion {
		starts := make([]int32, len(st))
		rs := map[int32]bool{}
		pi := make([]int, len(st))
		for k, x := range st {
			starts[k], pi[k] = x.elem, x.prev
			if x.region {
				rs[x.elem] = true
			}
		}
		return &pageVersion{d: d, regions: regs, segs: d.cut(starts, rs, regs), prev: pi}
	}
	pv := build()
	flags := NewSegments(pv.hashes(), history)

	kinds := map[uint64]bool{}
	for _, b := range prev {
		if !b.docStart && !b.region {
			kinds[b.kind] = true
		}
	}
	var added []start
	for j, sg := range pv.segs {
		if !flags[j] || pv.prev[j] < 0 {
			continue
		}
		var old []uint64
		from := sg.a
		if sg.elem >= 0 {
			from++
		}
		for i := from; i < sg.b; i++ {
			d.w.add(1)
			t := &d.toks[i]
			if t.kind != tStart {
				continue
			}
			e := &d.elems[t.elem]
			if int(e.endTok) >= sg.b || !kinds[e.kind] || d.size(i, int(e.endTok)+1) < s.Delta {
				continue
			}
			d.w.add(int(e.endTok) + 1 - i)
			bag := wordBag(d.visibleText(i, int(e.endTok)+1), nil)
			if old == nil {
				old = wordBag(prevText(pv.prev[j]), []uint64{})
			}
			if len(bag) == 0 || 2*common(bag, old) >= len(bag) {
				continue // an existing block (perhaps edited), not a new one
			}
			d.w.add(len(prev))
			if movedHere(d.visibleText(i, int(e.endTok)+1), prevText, len(prev)) {
				continue // a block moved from elsewhere: its move must show
			}
			added = append(added, start{t.elem, -1, false})
			i = int(e.endTok)
		}
	}
	if len(added) > 0 {
		st = append(st, added...)
		sort.SliceStable(st, func(i, j int) bool { return tokOf(st[i].elem) < tokOf(st[j].elem) })
		pv = build()
		flags = NewSegments(pv.hashes(), history)
	}
	return pv, flags
}

// movedHere reports whether text is found in one of the n previous
// segments.
func movedHere(text string, prevText func(int) string, n int) bool {
	for i := 0; i < n; i++ {
		if strings.Contains(prevText(i), text) {
			return true
		}
	}
	return false
}

// prevSide is the previous version in a comparison: either scanned whole
// (pv), or known from the track by its stored segments, layout and body,
// scanned only where a comparison needs it.
type prevSide struct {
	pv     *pageVersion
	body   []byte
	stored []changedigest.Segment
	bounds []bound
	scans  []*doc // partial scans, released after the comparison
	w      *work  // the detection's work, for the partial scans
	// reads, when set, reads the stored segments' texts and the body
	// (of bodySize bytes) as they are needed; body is then nil.
	reads    *prevReads
	bodySize int
}

// storedText is the text of stored segment i.
func (p *prevSide) storedText(i int) string {
	if p.reads != nil {
		return p.reads.text(i)
	}
	return p.stored[i].Text
}

// bodyBytes is bytes [a, b) of the stored body.
func (p *prevSide) bodyBytes(a, b int) []byte {
	if p.body == nil && p.reads != nil {
		return p.reads.bytes(a, b)
	}
	return p.body[a:b]
}

// wholeBody is the stored body, nil when there is none.
func (p *prevSide) wholeBody() []byte {
	if p.body == nil && p.reads != nil {
		p.body = p.reads.whole()
	}
	return p.body
}

func (p *prevSide) n() int {
	if p.pv != nil {
		return len(p.pv.segs)
	}
	return len(p.stored)
}

func (p *prevSide) hash(i int) string {
	if p.pv != nil {
		return p.pv.segs[i].hash
	}
	return p.stored[i].Hash
}

func (p *prevSide) byteRange(i int) (int, int) {
	if p.pv != nil {
		return p.pv.segs[i].start, p.pv.segs[i].end
	}
	return p.stored[i].Start, p.stored[i].End
}

func (p *prevSide) size() int {
	if p.pv != nil {
		return len(p.pv.d.body)
	}
	if p.body != nil {
		return len(p.body)
	}
	if p.reads != nil {
		return p.bodySize
	}
	end := 0
	for _, sg := range p.stored {
		end = max(end, sg.End)
	}
	return end
}

// path is the readable path of segment i.
func (p *prevSide) path(i int) string {
	if p.pv != nil {
		if i < len(p.pv.segs) {
			return segmentPath(p.pv.d, p.pv.segs[i])
		}
		return ""
	}
	if i < len(p.stored) {
		return p.stored[i].Path
	}
	return ""
}

func (p *prevSide) side() *side {
	sd := &side{}
	for i := 0; i < p.n(); i++ {
		a, _ := p.byteRange(i)
		sd.starts = append(sd.starts, a)
		sd.idx = append(sd.idx, i)
	}
	return sd
}

// canTree reports whether the previous version's nodes can be rebuilt.
func (p *prevSide) canTree() bool { return p.pv != nil || p.body != nil || p.reads != nil }

// parts returns the token ranges of segments [o0, o1), scanning the stored
// body of each contiguous run with the run's ancestors as context.
func (p *prevSide) parts(o0, o1 int) []treePart {
	var out []treePart
	if p.pv != nil {
		for k := o0; k < o1; k++ {
			sg := p.pv.segs[k]
			if n := len(out); n > 0 && out[n-1].b == sg.a {
				out[n-1].b = sg.b
				continue
			}
			out = append(out, treePart{d: p.pv.d, a: sg.a, b: sg.b})
		}
		return out
	}
	for k := o0; k < o1; {
		a, b := p.byteRange(k)
		first := k
		for k++; k < o1; k++ {
			a2, b2 := p.byteRange(k)
			if a2 != b {
				break
			}
			b = b2
		}
		var anc []step
		var fs step
		if b := p.bounds[first]; !b.docStart {
			if st, err := decodeSteps(b.path); err == nil && len(st) > 0 {
				anc, fs = st[:len(st)-1], st[len(st)-1]
			}
		}
		d := scan(p.w, p.bodyBytes(a, b), anc, fs)
		d.base = a
		p.scans = append(p.scans, d)
		out = append(out, treePart{d: d, a: 0, b: len(d.toks)})
	}
	return out
}

func (p *prevSide) text(o0, o1 int) string {
	var parts []string
	for k := o0; k < o1; k++ {
		if p.pv != nil {
			parts = append(parts, p.pv.text(k))
		} else {
			parts = append(parts, p.storedText(k))
		}
	}
	return strings.Join(parts, " ")
}

// group is a run of previous segments [o0, o1) and current segments
// [n0, n1) between two boundaries both versions share.
type group struct{ o0, o1, n0, n1 int }

func groups(prevN int, cur *pageVersion) []group {
	type anchor struct{ o, n int }
	var as []anchor
	for j, i := range cur.prev {
		if i >= 0 {
			as = append(as, anchor{i, j})
		}
	}
	var gs []group
	if len(as) == 0 {
		return []group{{0, prevN, 0, len(cur.segs)}}
	}
	if as[0].o > 0 || as[0].n > 0 {
		gs = append(gs, group{0, as[0].o, 0, as[0].n})
	}
	for k, a := range as {
		o1, n1 := prevN, len(cur.segs)
		if k+1 < len(as) {
			o1, n1 = as[k+1].o, as[k+1].n
		}
		gs = append(gs, group{a.o, o1, a.n, n1})
	}
	return gs
}

// compareVersions compares the groups of segments that changed and
// returns the changes and the similarity of the two versions.
func (s *Segmenter) compareVersions(prev *prevSide, cur *pageVersion, flags []bool) ([]changedigest.Change, float64) {
	curHashes := make(map[string]bool, len(cur.segs))
	for _, sg := range cur.segs {
		curHashes[sg.hash] = true
	}
	prevHashes := make(map[string]bool, prev.n())
	for i := 0; i < prev.n(); i++ {
		prevHashes[prev.hash(i)] = true
	}
	newSide := &side{starts: make([]int, 0, len(cur.segs)), idx: make([]int, 0, len(cur.segs))}
	for j, sg := range cur.segs {
		newSide.starts = append(newSide.starts, sg.start)
		newSide.idx = append(newSide.idx, j)
	}
	oldSide := prev.side()
	df := &differ{w: cur.d.w, old: oldSide, new: newSide}
	total := float64(prev.size() + len(cur.d.body))
	loss := 0.0
	var coarse []changedigest.Change

	// Groups that need a comparison; runs of adjacent ones are compared
	// as one, so content a misplaced boundary shifted from one segment to
	// its neighbour is still matched.
	gs := groups(prev.n(), cur)
	needs := make([]bool, len(gs))
	groupOf := make([]int, prev.n()) // the group of each old segment
	var shifted []int                // groups whose boundary took in content from elsewhere
	for k, g := range gs {
		for i := g.o0; i < g.o1; i++ {
			groupOf[i] = k
		}
		need := false
		for j := g.n0; j < g.n1; j++ {
			need = need || flags[j]
		}
		for i := g.o0; i < g.o1 && !need; i++ {
			if curHashes[prev.hash(i)] {
				continue // its content is still on the page
			}
			// An old segment whose content is gone is compared, unless
			// the new segment at its boundary holds content the history
			// has seen but the previous version did not have (a rotating
			// banner flipping back, which the signature matrix does not
			// count as new). Content the previous version had elsewhere
			// is no such thing: it came from another place (a list
			// shifted by one, a block replaced by its neighbour), and the
			// old content it took the place of is gone.
			anchored := g.n1 > g.n0 && cur.prev[g.n0] == i
			need = !anchored || prevHashes[cur.segs[g.n0].hash]
			if anchored && need {
				shifted = append(shifted, k)
			}
		}
		needs[k] = need
	}
	// A group that took in content from a nearby one is compared together
	// with it and the groups between, so that the content is matched where
	// it was rather than told as the update of the content it displaced.
	if len(shifted) > 0 {
		from := map[string][]int{}
		for i := 0; i < prev.n(); i++ {
			from[prev.hash(i)] = append(from[prev.hash(i)], groupOf[i])
		}
		for _, k := range shifted {
			for _, f := range from[cur.segs[gs[k].n0].hash] {
				if f == k || f < k-maxShift || f > k+maxShift {
					continue
				}
				for x := min(f, k); x <= max(f, k); x++ {
					needs[x] = true
				}
			}
		}
	}
	var todo []group
	for k, g := range gs {
		if !needs[k] {
			continue
		}
		if k := len(todo) - 1; k >= 0 && todo[k].o1 == g.o0 && todo[k].n1 == g.n0 {
			todo[k].o1, todo[k].n1 = g.o1, g.n1
			continue
		}
		todo = append(todo, g)
	}
	// tell a group as its old and new text, without comparing its nodes
	groupCoarse := func(g group) {
		ob := 0
		for i := g.o0; i < g.o1; i++ {
			a, b := prev.byteRange(i)
			ob += b - a
		}
		nb := 0
		for j := g.n0; j < g.n1; j++ {
			nb += cur.segs[j].end - cur.segs[j].start
		}
		c, sim := s.coarse(prev, cur, g)
		coarse = append(coarse, c...)
		loss += (1 - sim) * float64(ob+nb)
	}
	defer func() {
		for _, d := range prev.scans {
			d.release()
		}
		prev.scans = nil
	}()
	for _, g := range todo {
		df.w.add(1)
		if df.full {
			break
		}
		if !prev.canTree() {
			groupCoarse(g)
			continue
		}
		oparts := prev.parts(g.o0, g.o1)
		var nparts []treePart
		for j := g.n0; j < g.n1; j++ {
			sg := cur.segs[j]
			if n := len(nparts); n > 0 && nparts[n-1].b == sg.a {
				nparts[n-1].b = sg.b
				continue
			}
			nparts = append(nparts, treePart{d: cur.d, a: sg.a, b: sg.b})
		}
		if surelyFull(df.w, df.raw, oparts, nparts) {
			// the comparison would pass maxChanges: not worth building
			df.full = true
			break
		}
		or := oldSide.build(oparts)
		nr := newSide.build(nparts)
		df.compare(or, nr)
		df.groups = append(df.groups, &textGroup{or: or, nr: nr, oparts: oparts, nparts: nparts})
	}
	if df.full {
		// More changes than are worth telling one by one (a page
		// rebuilt or rewritten in tens of thousands of places): each
		// group is told as its old and new text instead.
		coarse, loss = nil, 0
		df = &differ{w: df.w, old: oldSide, new: newSide}
		for _, g := range todo {
			df.w.add(1)
			groupCoarse(g)
		}
	}
	df.finish()
	df.textPass(s.Context)
	df.containerPass(func() *doc {
		if prev.pv != nil {
			return prev.pv.d
		}
		body := prev.wholeBody()
		if body == nil {
			return nil
		}
		d := scan(cur.d.w, body, nil, step{})
		prev.scans = append(prev.scans, d)
		return d
	}, cur.d)
	df.reconcile()
	for _, rc := range df.out {
		loss += rc.weight()
	}

	changes := coarse
	named := map[*doc]*places{}
	placesOf := func(n *tnode) *places {
		p := named[n.d]
		if p == nil {
			p = &places{d: n.d}
			named[n.d] = p
		}
		return p
	}
	for _, rc := range df.out {
		df.w.add(1)
		c := changedigest.Change{Type: rc.typ, Op: rc.op, OldText: rc.old, NewText: rc.new, Before: rc.before, After: rc.after}
		if rc.typ != changedigest.ChangeContent && (isResourceHint(rc.o) || isResourceHint(rc.n)) {
			c.Noise = NoiseResourceHint
		}
		if n := rc.n; n != nil || rc.o != nil {
			if n == nil {
				n = rc.o
			}
			p := placesOf(n)
			c.Where = p.placeOf(n)
			if rc.typ == changedigest.ChangeContent && (rc.op == changedigest.OpInsert || rc.op == changedigest.OpDelete) {
				// A story added or removed is told by its headline (when
				// the text told starts with it: the block's own words).
				if title, link := p.ownHeading(n); title != "" && strings.HasPrefix(strings.Join(strings.Fields(c.NewText+c.OldText), " "), title) {
					c.Title, c.Link = title, link
				}
			}
		}
		if rc.n != nil {
			c.Segment, c.Path = int(rc.n.seg), newSide.path(rc.n)
			if c.Path == "" && c.Segment < len(cur.segs) {
				c.Path = segmentPath(cur.d, cur.segs[c.Segment])
			}
		} else {
			c.Segment, c.Path = int(rc.o.seg), oldSide.path(rc.o)
			if c.Path == "" {
				c.Path = prev.path(c.Segment)
			}
		}
		changes = append(changes, c)
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].Segment < changes[j].Segment })
	changes = s.present(df.w, changes)
	if changes == nil {
		changes = []changedigest.Change{}
	}
	sim := 1.0
	if total > 0 {
		sim = 1 - loss/total
	}
	sim = min(1, max(0, sim))
	if len(changes) > 0 && sim == 1 {
		sim = 0.9999
	}
	return changes, sim
}

// maxShift is how many groups away the content a group's boundary took
// in may come from for the two to be compared as one.
const maxShift = 4

// coarse reports a changed group when the previous body is not at hand:
// one change from the segments' texts.
func (s *Segmenter) coarse(prev *prevSide, cur *pageVersion, g group) ([]changedigest.Change, float64) {
	ot := prev.text(g.o0, g.o1)
	var parts []string
	for j := g.n0; j < g.n1; j++ {
		parts = append(parts, cur.d.visibleText(cur.segs[j].a, cur.segs[j].b))
	}
	nt := strings.Join(parts, " ")
	seg, path := g.n0, ""
	if g.n1 > g.n0 {
		path = segmentPath(cur.d, cur.segs[g.n0])
	} else {
		seg = g.o0
		if g.o0 < len(prev.stored) {
			path = prev.stored[g.o0].Path
		}
	}
	c := changedigest.Change{Segment: seg, Path: path, Type: changedigest.ChangeStructural, Op: changedigest.OpUpdate}
	switch {
	case g.n1 == g.n0:
		c.Type, c.Op, c.OldText = changedigest.ChangeContent, changedigest.OpDelete, ot
	case ot != nt:
		c.Type = changedigest.ChangeContent
		c.OldText, c.NewText = ot, nt
	}
	return []changedigest.Change{c}, prev.w.budget().Similarity(ot, nt)
}

// segmentPath is the readable path of a segment's boundary element, or of
// the first element in it.
func segmentPath(d *doc, sg segment) string {
	if sg.elem >= 0 {
		return d.path(sg.elem)
	}
	for i := sg.a; i < sg.b; i++ {
		if k := d.toks[i].kind; k == tStart || k == tVoid {
			return d.path(d.toks[i].elem)
		}
	}
	return ""
}

func (s *Segmenter) segments(pv *pageVersion) []changedigest.Segment {
	out := make([]changedigest.Segment, len(pv.segs))
	for i, sg := range pv.segs {
		pv.d.w.add(sg.b - sg.a)
		out[i] = changedigest.Segment{
			Index: i,
			Hash:  sg.hash,
			Path:  segmentPath(pv.d, sg),
			Text:  pv.d.visibleText(sg.a, sg.b),
			Start: sg.start,
			End:   sg.end,
		}
	}
	return out
}

// DetectPage segments a new version of an HTML page and, when in.Prev is
// set, finds its changes against it. The first version (in.Prev nil) is
// cut by hybrid segmentation and has no changes. A later version is cut
// along the previous version's layout; its segments whose hashes are new
// to in.History (or to in.Prev when History is empty) are compared in
// detail with in.PrevBody. When the stored layout cannot be used (another
// zone, a damaged or missing layout), the previous body is segmented
// afresh and the new version cut along that. Without in.PrevBody, changed
// segments are reported from their stored texts only (and without a usable
// layout either, the page's text as a whole). Similarity is 0 for a first
// version. An invalid zone or
// bad input gives an EINVALID or ETOOLARGE error. The snapshot's fetch
// fields and BodyHash are left to the caller, which holds the raw body.
func (s *Segmenter) DetectPage(in Input) (*changedigest.Snapshot, error) {
	return s.detectPage(nil, in)
}

func (s *Segmenter) detectPage(w *work, in Input) (*changedigest.Snapshot, error) {
	s = s.knobs()
	if err := s.checkPage(in.Body, ""); err != nil {
		return nil, err
	}
	d, regs, err := s.scanPage(w, in.Body, in.Zone)
	if err != nil {
		return nil, err
	}
	defer d.release()
	weight := d.weight
	snap := &changedigest.Snapshot{
		Kind:   changedigest.KindPage,
		Title:  d.pageName(),
		Size:   len(in.Body),
		Weight: &weight,
	}
	var (
		pv    *pageVersion
		flags []bool
		prev  *prevSide
	)
	if in.Prev != nil {
		bs, ok := s.usableLayout(in)
		if !ok {
			// Without the stored layout the previous version is compared
			// whole.
			in = in.whole()
		}
		if ok {
			hist := in.History
			if len(hist) == 0 {
				hist = [][]string{in.Prev.Hashes()}
			}
			prev = &prevSide{body: in.PrevBody, stored: in.Prev.Segments, bounds: bs, w: w}
			if in.lazy() {
				prev.reads, prev.bodySize = in.reads, in.Prev.Size
			}
			pv, flags = s.later(d, regs, bs, hist, prev.storedText)
		} else if len(in.PrevBody) > 0 && s.checkPage(in.PrevBody, "") == nil {
			od, oregs, err := s.scanPage(w, in.PrevBody, in.Zone)
			if err != nil {
				return nil, err
			}
			defer od.release()
			ov := s.first(od, oregs)
			pv, flags = s.later(d, regs, s.bounds(ov), [][]string{ov.hashes()}, ov.text)
			prev = &prevSide{pv: ov, w: w}
		}
	}
	if pv == nil {
		pv = s.first(d, regs)
	}
	snap.Segments = s.segments(pv)
	snap.Layout = encodeLayout(in.Zone, s.bounds(pv))
	switch {
	case prev != nil:
		snap.Changes, snap.Similarity = s.compareVersions(prev, pv, flags)
	case in.Prev != nil:
		snap.Changes, snap.Similarity = s.compareTexts(in.Prev.Segments, snap.Segments)
	}
	if len(snap.Changes) == 0 {
		snap.Changes = nil
	}
	if plainUTF8(in.Body) {
		// The text print that significance needs (noise.go), against the
		// previous version now and against the next one later, from the
		// scan made here rather than a second one.
		p := docPrint(d)
		snap.Print = &p
	}
	if err := in.readErr(); err != nil {
		return nil, err
	}
	return snap, nil
}

// plainUTF8 reports whether decode leaves body as it is.
func plainUTF8(body []byte) bool {
	return utf8.Valid(body) && !bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) &&
		!bytes.HasPrefix(body, []byte("\xfe\xff")) && !bytes.HasPrefix(body, []byte("\xff\xfe"))
}

// compareTexts compares a version with a previous one known only by its
// stored segments (no usable layout, no body): one content change, at the
// first segment whose text the previous version lacks, when the texts
// differ.
func (s *Segmenter) compareTexts(old, new []changedigest.Segment) ([]changedigest.Change, float64) {
	join := func(sgs []changedigest.Segment) string {
		parts := make([]string, len(sgs))
		for i, sg := range sgs {
			parts[i] = sg.Text
		}
		return strings.Join(parts, " ")
	}
	ot, nt := join(old), join(new)
	if ot == nt {
		return nil, 1
	}
	at := 0
	for i, sg := range new {
		if !strings.Contains(ot, sg.Text) {
			at = i
			break
		}
	}
	c := changedigest.Change{Segment: at, Type: changedigest.ChangeContent, Op: changedigest.OpUpdate}
	if at < len(new) {
		c.Path = new[at].Path
	}
	c.OldText, c.NewText = ot, nt
	return s.present(nil, []changedigest.Change{c}), diceTexts(ot, nt)
}

// usableLayout decodes the previous version's layout and checks that it
// fits its stored segments and body and was made for the same zone.
func (s *Segmenter) usableLayout(in Input) ([]bound, bool) {
	zone, bs, err := decodeLayout(in.Prev.Layout)
	if err != nil || zone != in.Zone || len(bs) != len(in.Prev.Segments) {
		return nil, false
	}
	if zone == "" && !bs[0].docStart {
		return nil, false
	}
	if in.PrevBody == nil && in.PrevParts != nil {
		// The body is read in parts: the ranges must fit its size (that
		// each starts with a tag is not looked at, which would read it all).
		end := 0
		for _, sg := range in.Prev.Segments {
			if sg.Start < end || sg.End < sg.Start || sg.End > in.Prev.Size || zone == "" && sg.Start != end {
				return nil, false
			}
			end = sg.End
		}
		return bs, zone != "" || end == in.Prev.Size
	}
	if in.PrevBody == nil {
		return bs, true
	}
	end := 0
	for i, sg := range in.Prev.Segments {
		if sg.Start < end || sg.End < sg.Start || sg.End > len(in.PrevBody) {
			return nil, false
		}
		if zone == "" && sg.Start != end {
			return nil, false
		}
		if i > 0 || zone != "" {
			// a boundary starts with a tag
			if sg.Start >= len(in.PrevBody) || in.PrevBody[sg.Start] != '<' {
				return nil, false
			}
		}
		end = sg.End
	}
	if zone == "" && end != len(in.PrevBody) {
		return nil, false
	}
	return bs, true
}

// DiffPages compares two versions of an HTML page (the page path of
// `changedigest diff`): the old version is cut by hybrid segmentation, the
// new one along its layout, segments with new hashes are compared in
// detail. zone, when set, is a CSS selector restricting the comparison.
// Bodies that are not UTF-8 are decoded from the charset they declare.
// Bad input (empty, binary, neither HTML nor a feed, larger than
// MaxBytes) or an invalid zone gives an EINVALID or ETOOLARGE error
// naming the document.
func (s *Segmenter) DiffPages(old, new []byte, zone string) (*changedigest.Diff, error) {
	return s.diffPages(nil, old, new, zone, nil)
}

// diffPages is DiffPages counting its work into w. When prints is set it
// also fills it with the text prints of old and new (what pagePrint
// gives), from the scans made here rather than two more.
func (s *Segmenter) diffPages(w *work, old, new []byte, zone string, prints *[2]changedigest.TextPrint) (*changedigest.Diff, error) {
	if prints != nil {
		// pagePrint leaves out bodies past the default limit
		oldLen, newLen := len(old), len(new)
		defer func() {
			if oldLen > DefaultMaxBytes {
				prints[0] = printOf("", "")
			}
			if newLen > DefaultMaxBytes {
				prints[1] = printOf("", "")
			}
		}()
	}
	s = s.knobs()
	if err := s.checkPage(old, "old"); err != nil {
		return nil, err
	}
	if err := s.checkPage(new, "new"); err != nil {
		return nil, err
	}
	old, new = decode(old), decode(new)
	od, oregs, err := s.scanPage(w, old, zone)
	if err != nil {
		return nil, err
	}
	defer od.release()
	nd, nregs, err := s.scanPage(w, new, zone)
	if err != nil {
		return nil, err
	}
	defer nd.release()
	if prints != nil {
		prints[0], prints[1] = docPrint(od), docPrint(nd)
	}
	ov := s.first(od, oregs)
	nv, flags := s.later(nd, nregs, s.bounds(ov), [][]string{ov.hashes()}, ov.text)
	changes, sim := s.compareVersions(&prevSide{pv: ov, w: w}, nv, flags)
	segs := map[[2]int]bool{}
	for _, c := range changes {
		k := [2]int{0, c.Segment}
		if c.Op == changedigest.OpDelete {
			k[0] = 1
		}
		segs[k] = true
	}
	return &changedigest.Diff{
		Kind:            changedigest.KindPage,
		Old:             changedigest.DocumentStat{Segments: len(ov.segs), Bytes: len(old)},
		New:             changedigest.DocumentStat{Segments: len(nv.segs), Bytes: len(new)},
		ChangedSegments: len(segs),
		Similarity:      sim,
		Changes:         changes,
	}, nil
}
