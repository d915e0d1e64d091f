package segmenter

import (
	"cmp"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The layout of a version is the list of its segment boundaries, one per
// segment: the boundary node (its path of tag, id and sibling index from
// the root) and its cascaded node sequence (a hash of the normalised
// tokens that open the segment). A later version is cut at the elements
// that carry the same boundaries, found by cascade first (so a block keeps
// its segment when blocks are inserted before it), then by path; boundaries
// found in an order that contradicts the page are dropped, keeping the
// longest consistent run. Segment counts therefore only change when blocks
// of segment size appear or vanish.

// The serialised layout is text: a header line "changedigest-layout 1"
// followed by the zone (%-escaped), then one line per segment: "-" for the
// start of the document, else the cascade and the kind, loose and full path
// keys (16 hex digits each), "r" for the start of a zone region or "-",
// and the path: steps joined by "|", each tag[#id][@index], %-escaped.
const layoutHeader = "changedigest-layout 1 "

// bound is a segment boundary of a layout.
type bound struct {
	docStart          bool   // the start of the document, not an element
	path              string // encoded steps
	kind, loose, full uint64
	cascade           uint64
	region            bool
}

var errLayout = errors.New("segmenter: unusable layout")

func encodeLayout(zone string, bs []bound) []byte {
	n := len(layoutHeader) + len(zone) + 1
	for _, b := range bs {
		n += 72 + len(b.path)
	}
	out := make([]byte, 0, n)
	out = append(out, layoutHeader...)
	out = append(out, stepEscaper.Replace(zone)...)
	out = append(out, '\n')
	for _, b := range bs {
		if b.docStart {
			out = append(out, "-\n"...)
			continue
		}
		for _, h := range [4]uint64{b.cascade, b.kind, b.loose, b.full} {
			out = appendHex16(out, h)
			out = append(out, ' ')
		}
		if b.region {
			out = append(out, 'r')
		} else {
			out = append(out, '-')
		}
		out = append(out, ' ')
		out = append(out, b.path...)
		out = append(out, '\n')
	}
	return out
}

func appendHex16(out []byte, h uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		out = append(out, digits[(h>>uint(i))&15])
	}
	return out
}

func parseHex16(s string) (uint64, bool) {
	if len(s) != 16 {
		return 0, false
	}
	var h uint64
	for i := 0; i < 16; i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			h = h<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			h = h<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return h, true
}

func decodeLayout(data []byte) (zone string, bs []bound, err error) {
	text := string(data)
	head, rest, ok := strings.Cut(text, "\n")
	if !ok || !strings.HasPrefix(head, layoutHeader) {
		return "", nil, fmt.Errorf("%w: not a layout", errLayout)
	}
	zone, err = unescapeStep(head[len(layoutHeader):])
	if err != nil {
		return "", nil, err
	}
	bs = make([]bound, 0, strings.Count(rest, "\n"))
	for line := range strings.Lines(rest) {
		line = strings.TrimSuffix(line, "\n")
		if line == "-" {
			if len(bs) != 0 || zone != "" {
				return "", nil, fmt.Errorf("%w: document start at segment %d", errLayout, len(bs))
			}
			bs = append(bs, bound{docStart: true})
			continue
		}
		// 4 keys of 16 digits, flag, path
		if len(line) < 4*17+2 || line[4*17+1] != ' ' {
			return "", nil, fmt.Errorf("%w: line %d", errLayout, len(bs)+2)
		}
		var keys [4]uint64
		for k := range keys {
			h, ok := parseHex16(line[k*17 : k*17+16])
			if !ok || line[k*17+16] != ' ' {
				return "", nil, fmt.Errorf("%w: line %d", errLayout, len(bs)+2)
			}
			keys[k] = h
		}
		b := bound{cascade: keys[0], kind: keys[1], loose: keys[2], full: keys[3], region: line[4*17] == 'r', path: line[4*17+2:]}
		if b.path == "" {
			return "", nil, fmt.Errorf("%w: line %d has no path", errLayout, len(bs)+2)
		}
		bs = append(bs, b)
	}
	if len(bs) == 0 {
		return "", nil, fmt.Errorf("%w: no segments", errLayout)
	}
	return zone, bs, nil
}

var stepEscaper = strings.NewReplacer("%", "%25", "|", "%7C", "#", "%23", "@", "%40", " ", "%20", "\n", "%0A", "\r", "%0D")

func decodeSteps(p string) ([]step, error) {
	parts := strings.Split(p, "|")
	steps := make([]step, len(parts))
	for i, part := range parts {
		st := step{Index: 1}
		if j := strings.LastIndexByte(part, '@'); j >= 0 {
			n, err := strconv.Atoi(part[j+1:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%w: path step %q", errLayout, part)
			}
			st.Index = n
			part = part[:j]
		}
		if j := strings.IndexByte(part, '#'); j >= 0 {
			id, err := unescapeStep(part[j+1:])
			if err != nil {
				return nil, err
			}
			st.ID = id
			part = part[:j]
		}
		tag, err := unescapeStep(part)
		if err != nil || tag == "" {
			return nil, fmt.Errorf("%w: path step %q", errLayout, parts[i])
		}
		st.Tag = tag
		steps[i] = st
	}
	return steps, nil
}

func unescapeStep(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			sb.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: bad escape in %q", errLayout, s)
		}
		b, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("%w: bad escape in %q", errLayout, s)
		}
		sb.Write(b)
		i += 2
	}
	return sb.String(), nil
}

// cascade hashes the n normalised tokens from element ei's start tag on:
// the cascaded node sequence that identifies a boundary when its path
// moved. It runs on past a short element, so that two short blocks with
// the same text are still told apart by what follows them.
func (d *doc) cascade(ei int32, n int) uint64 {
	a := int(d.elems[ei].tok)
	b := min(a+n, len(d.toks))
	return hashBytes(hashSeed, d.normOf(a, b))
}

// boundOf describes element ei as a boundary.
func (s *Segmenter) boundOf(d *doc, ei int32, region bool) bound {
	e := &d.elems[ei]
	return bound{path: d.encodedPath(ei), kind: e.kind, loose: e.loose, full: e.full,
		cascade: d.cascade(ei, s.Cascade), region: region}
}

// align finds, for each boundary of a layout, the element of d it falls on
// (-1: lost; the document start always matches). Regions are the zone
// elements of d (nil: the whole page).
func (s *Segmenter) align(d *doc, bs []bound, regions []region) []int32 {
	match := make([]int32, len(bs))
	c := newAlignCands(d, bs, regions)
	// Cascades are hashed when first compared, kept by element.
	cascades := make([]uint64, len(d.elems))
	hashed := make([]bool, len(d.elems))
	casc := func(ei int32) uint64 {
		if !hashed[ei] {
			cascades[ei], hashed[ei] = d.cascade(ei, s.Cascade), true
		}
		return cascades[ei]
	}
	// The candidates by cascade, full path and loose path, in page order:
	// made when a boundary is not found among the candidates next to the
	// previous guess, so that a lost boundary costs lookups, not a scan
	// of every element of its kind, four times.
	var byCascade, byFull, byLoose *keyIndex
	index := func() {
		n := 0
		for _, l := range c.kinds {
			n += len(l)
		}
		byCascade, byFull, byLoose = newKeyIndex(n), newKeyIndex(n), newKeyIndex(n)
		d.w.add(len(d.elems))
		for i := d.phantoms; i < len(d.elems); i++ {
			e := &d.elems[i]
			if _, ok := c.kinds[e.kind]; !ok || d.toks[e.tok].kind != tStart {
				continue
			}
			ei := int32(i)
			byCascade.add(casc(ei), ei)
			byFull.add(e.full, ei)
			byLoose.add(e.loose, ei)
		}
		byCascade.sort()
		byFull.sort()
		byLoose.sort()
	}
	// first is the first element of list (in page order) from the one
	// after token prev on, then from the start, that ok accepts.
	first := func(list []int32, prev int, ok func(int32) bool) int32 {
		from := sort.Search(len(list), func(k int) bool { return int(d.elems[list[k]].tok) > prev })
		for k := range list {
			d.w.add(1)
			if ei := list[(from+k)%len(list)]; ok(ei) {
				return ei
			}
		}
		return -1
	}
	prev := -1 // token of the last guess
	for i, b := range bs {
		d.w.add(1)
		if b.docStart {
			match[i] = -1
			continue
		}
		ok := func(ei int32) bool { return c.fits(b, ei) }
		cands := c.kinds[b.kind]
		// first candidate after the previous guess
		from := sort.Search(len(cands), func(k int) bool { return int(d.elems[cands[k]].tok) > prev })
		// Each of the passes of scan takes the first candidate that fits
		// after the previous guess, then before it. A short list is
		// scanned; in a long one the candidates next to the guess are
		// looked at first (a boundary whose cascade and path are
		// unchanged is most often one of them), then the lookups give
		// what the passes would.
		best := int32(-1)
		if len(cands) <= nearCandidates {
			best = c.scan(b, cands, from, casc)
		} else {
			for k := range nearCandidates {
				ei := cands[(from+k)%len(cands)]
				if ok(ei) && d.elems[ei].full == b.full && casc(ei) == b.cascade {
					best = ei
					break
				}
			}
		}
		if best < 0 && len(cands) > nearCandidates {
			if byCascade == nil {
				index()
			}
			sameKind := func(ei int32) bool { return d.elems[ei].kind == b.kind && ok(ei) }
			best = first(byCascade.get(b.cascade), prev, func(ei int32) bool { return d.elems[ei].full == b.full && sameKind(ei) })
			if best < 0 {
				best = first(byCascade.get(b.cascade), prev, sameKind)
			}
			if best < 0 {
				best = first(byFull.get(b.full), prev, sameKind)
			}
			if best < 0 {
				best = first(byLoose.get(b.loose), prev, func(ei int32) bool {
					e := &d.elems[ei]
					return e.id1 > e.id0 && sameKind(ei)
				})
			}
		}
		if best < 0 {
			match[i] = lostBound
			continue
		}
		match[i] = best
		prev = int(d.elems[best].tok)
	}
	keepInOrder(bs, match, d)
	return match
}

// keyIndex holds elements by a key: the elements of each key in the
// order they were added (page order), found by binary search rather
// than in a map of lists, which for a page of many elements costs an
// allocation per key.
type keyIndex struct {
	ents []keyEnt // while adding
	keys []uint64 // sorted
	eis  []int32
	// buckets of a large index: the keys whose top bits (key>>shift)
	// are d are keys[start[d]:start[d+1]]
	start []int
	shift uint
}

type keyEnt struct {
	k  uint64
	ei int32
}

// newKeyIndex returns an index for n elements.
func newKeyIndex(n int) *keyIndex { return &keyIndex{ents: make([]keyEnt, 0, n)} }

func (x *keyIndex) add(k uint64, ei int32) {
	x.ents = append(x.ents, keyEnt{k, ei})
}

// sort orders the entries by key, and those of a key by element, which
// is the order they were added in (page order).
func (x *keyIndex) sort() {
	if len(x.ents) < 256 {
		slices.SortFunc(x.ents, func(a, b keyEnt) int {
			if c := cmp.Compare(a.k, b.k); c != 0 {
				return c
			}
			return cmp.Compare(a.ei, b.ei)
		})
	} else {
		x.start, x.shift = radixSortKeys(x.ents)
	}
	x.keys = make([]uint64, len(x.ents))
	x.eis = make([]int32, len(x.ents))
	for i, e := range x.ents {
		x.keys[i], x.eis[i] = e.k, e.ei
	}
	x.ents = nil
}

// radixSortKeys sorts entries by key and, among those of a key, by
// element: into buckets by the top bits of their keys (hashes, spread
// evenly), then each bucket on its own, which for the hundreds of
// thousands of elements of a large page is much faster than comparing.
// It returns where the buckets start (and one past the last) and the
// shift of a key that gives its bucket.
func radixSortKeys(a []keyEnt) ([]int, uint) {
	if len(a) < 2 {
		return nil, 0
	}
	nb := max(8, min(16, bits.Len(uint(len(a)))-1))
	shift := uint(64 - nb)
	start := make([]int, 1<<nb+1)
	for _, e := range a {
		start[e.k>>shift+1]++
	}
	for d := 1; d < len(start); d++ {
		start[d] += start[d-1]
	}
	buf := make([]keyEnt, len(a))
	next := slices.Clone(start[:len(start)-1])
	for _, e := range a {
		d := e.k >> shift
		buf[next[d]] = e
		next[d]++
	}
	for d := 0; d+1 < len(start); d++ {
		if b := buf[start[d]:start[d+1]]; len(b) > 1 {
			sortKeyEntsCmp(b)
		}
	}
	copy(a, buf)
	return start, shift
}

// sortKeyEntsCmp sorts entries by key and element, comparing them.
func sortKeyEntsCmp(a []keyEnt) {
	if len(a) <= 12 {
		for i := 1; i < len(a); i++ {
			for j := i; j > 0 && keyEntLess(a[j], a[j-1]); j-- {
				a[j], a[j-1] = a[j-1], a[j]
			}
		}
		return
	}
	slices.SortFunc(a, func(x, y keyEnt) int {
		if c := cmp.Compare(x.k, y.k); c != 0 {
			return c
		}
		return cmp.Compare(x.ei, y.ei)
	})
}

func keyEntLess(x, y keyEnt) bool { return x.k < y.k || x.k == y.k && x.ei < y.ei }

// get returns the elements of key k, in the order they were added.
func (x *keyIndex) get(k uint64) []int32 {
	lo := 0
	keys := x.keys
	if x.start != nil {
		d := k >> x.shift
		lo, keys = x.start[d], keys[:x.start[d+1]]
	}
	a, _ := slices.BinarySearch(keys[lo:], k)
	a += lo
	b := a
	for b < len(x.keys) && x.keys[b] == k {
		b++
	}
	return x.eis[a:b:b]
}

// alignCands are the elements of d a layout's boundaries may fall on.
type alignCands struct {
	d       *doc
	regions []region
	// kinds holds the start tags of each kind of boundary, in page order.
	kinds map[uint64][]int32
	// isRegion marks the zone elements: a slice, not a map, as it is
	// read for every candidate of every boundary.
	isRegion []bool
}

func newAlignCands(d *doc, bs []bound, regions []region) *alignCands {
	c := &alignCands{d: d, regions: regions, kinds: make(map[uint64][]int32, len(bs)), isRegion: make([]bool, len(d.elems))}
	for _, b := range bs {
		if !b.docStart {
			c.kinds[b.kind] = nil
		}
	}
	for _, r := range regions {
		if r.elem >= 0 && int(r.elem) < len(c.isRegion) {
			c.isRegion[r.elem] = true
		}
	}
	d.w.add(len(d.elems))
	for i := d.phantoms; i < len(d.elems); i++ {
		e := &d.elems[i]
		if d.toks[e.tok].kind != tStart {
			continue
		}
		if l, ok := c.kinds[e.kind]; ok {
			c.kinds[e.kind] = append(l, int32(i))
		}
	}
	return c
}

// fits reports whether element ei may hold boundary b: a zone element for
// a zone's boundary, otherwise an element inside the zones (the whole
// page when there are none) that is not one.
func (c *alignCands) fits(b bound, ei int32) bool {
	if b.region {
		return c.isRegion[ei]
	}
	if c.isRegion[ei] {
		return false
	}
	if c.regions == nil {
		return true
	}
	t := int(c.d.elems[ei].tok)
	for _, r := range c.regions {
		if t > r.a && t < r.b {
			return true
		}
	}
	return false
}

// scan finds the element of cands (from cands[from] on, then from the
// start) that holds boundary b, in four passes: 1, cascade and path; 2,
// cascade; 3, path; 4, the same id path (ids are unique). -1: none.
func (c *alignCands) scan(b bound, cands []int32, from int, casc func(int32) uint64) int32 {
	c.d.w.add(4 * len(cands))
	for pass := range 4 {
		for k := range cands {
			ei := cands[(from+k)%len(cands)]
			e := &c.d.elems[ei]
			if !c.fits(b, ei) {
				continue
			}
			var hit bool
			switch pass {
			case 0:
				hit = e.full == b.full && casc(ei) == b.cascade
			case 1:
				hit = casc(ei) == b.cascade
			case 2:
				hit = e.full == b.full
			case 3:
				hit = e.id1 > e.id0 && e.loose == b.loose
			}
			if hit {
				return ei
			}
		}
	}
	return -1
}

// keepInOrder keeps the longest run of boundaries whose elements come in
// page order; the others are lost.
func keepInOrder(bs []bound, match []int32, d *doc) {
	keep := lisKeep(bs, match, d)
	for i := range match {
		if match[i] >= 0 && !keep[i] {
			match[i] = lostBound
		}
	}
}

// nearCandidates is how many candidates after the previous guess align
// looks at before it looks a boundary up.
const nearCandidates = 8

// lostBound marks a boundary that has no element in the new version.
const lostBound int32 = -2

// lisKeep marks the boundaries on the longest strictly increasing run of
// element positions (the document start is always kept).
func lisKeep(bs []bound, match []int32, d *doc) []bool {
	type item struct{ i, pos int }
	var items []item
	for i, m := range match {
		if m >= 0 {
			items = append(items, item{i, int(d.elems[m].tok)})
		}
	}
	keep := make([]bool, len(match))
	for i, b := range bs {
		if b.docStart {
			keep[i] = true
		}
	}
	if len(items) == 0 {
		return keep
	}
	// patience LIS on pos
	tails := []int{} // index into items of the smallest tail of each length
	prevOf := make([]int, len(items))
	for k, it := range items {
		j := sort.Search(len(tails), func(t int) bool { return items[tails[t]].pos >= it.pos })
		if j > 0 {
			prevOf[k] = tails[j-1]
		} else {
			prevOf[k] = -1
		}
		if j == len(tails) {
			tails = append(tails, k)
		} else {
			tails[j] = k
		}
	}
	for k := tails[len(tails)-1]; k >= 0; k = prevOf[k] {
		keep[items[k].i] = true
	}
	return keep
}

// segment is one segment of a scanned version.
type segment struct {
	a, b   int   // token range
	elem   int32 // boundary element, -1 for the document start
	region bool  // the boundary starts a zone region
	start  int   // byte range
	end    int
	hash   string
}

// cut builds the segments of d that start at the given boundaries (sorted
// by token; -1 is the document start) and end at the next boundary or the
// end of their region.
func (d *doc) cut(starts []int32, regionStart map[int32]bool, regions []region) []segment {
	segs := make([]segment, 0, len(starts))
	for k, ei := range starts {
		d.w.add(1)
		sg := segment{elem: ei, region: regionStart[ei]}
		if ei < 0 {
			sg.a = 0
		} else {
			sg.a = int(d.elems[ei].tok)
		}
		// end: the next boundary, or the end of the region holding the start
		rEnd := len(d.toks)
		for _, r := range regions {
			if r.elem >= 0 && sg.a >= r.a && sg.a < r.b {
				rEnd = r.b
				break
			}
		}
		sg.b = rEnd
		if k+1 < len(starts) {
			next := 0
			if starts[k+1] >= 0 {
				next = int(d.elems[starts[k+1]].tok)
			}
			sg.b = min(sg.b, next)
		}
		if ei < 0 {
			sg.start = 0
		} else {
			sg.start = d.offAt(sg.a)
		}
		if sg.b == rEnd && regions != nil && rEnd > 0 {
			sg.end = int(d.toks[rEnd-1].end)
		} else {
			sg.end = d.offAt(sg.b)
		}
		sg.hash = d.segmentHash(sg.a, sg.b)
		segs = append(segs, sg)
	}
	return segs
}

// segmentHash is the hex MD5 of the normalised tokens of [a, b), leaving
// out end tags of elements opened before a (they belong to the enclosing
// structure, not to the segment).
func (d *doc) segmentHash(a, b int) string {
	d.w.add(b - a)
	h := md5.New()
	run := a
	for i := a; i < b; i++ {
		t := &d.toks[i]
		if t.kind == tEnd && int(d.elems[t.elem].tok) < a {
			if run < i {
				h.Write(d.normOf(run, i))
			}
			run = i + 1
		}
	}
	if run < b {
		h.Write(d.normOf(run, b))
	}
	var sum [md5.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}
