package segmenter

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// A scanned version of a page. The tokenizer's stream is kept as a flat
// list of significant tokens (start tags, void elements, end tags and
// non-blank text) in document order, each with its byte range in the raw
// body and its normalised form in one shared buffer. The elements the start
// tags open form a light DOM (parent links, token ranges), built with the
// few HTML tree rules that matter for structure: void elements, implied end
// tags (p, li, td, …), end tags that close everything above the element
// they match, and self-closing tags inside SVG and MathML.
//
// The normalised form is what segment hashes cover: tag names, attributes
// sorted by name with whitespace-collapsed values, end tags, and text with
// whitespace collapsed and trimmed. Comments, doctypes, blank text,
// attribute order, quoting and character references do not reach it.

type tokKind uint8

const (
	tStart tokKind = iota + 1 // start tag of an element that holds content
	tVoid                     // void element (br, img, …) or self-closed foreign element
	tEnd                      // end tag, explicit or implied
	tText                     // non-blank text, whitespace collapsed
)

// Token flags.
const (
	fSpaceBefore uint8 = 1 << iota // text had leading whitespace (or blank text came before)
	fSpaceAfter                    // text had trailing whitespace
	fVisible                       // text outside script, style and the like
	fBreak                         // tag of a block-level element: a word break in the visible text
	fLink                          // text inside a link
	fSynthetic                     // end tag implied, not in the source
)

type tok struct {
	kind  tokKind
	flags uint8
	elem  int32 // element of a tag token; enclosing element of a text (-1 at top level)
	off   int32 // raw byte range in doc.body
	end   int32
	norm  int32 // start of the normalised form in doc.norm
}

type elem struct {
	tag    string
	parent int32 // -1 at top level
	tok    int32 // start token; -1 for a phantom ancestor of a partial scan
	endTok int32 // end token (== tok for a void element)
	index  int32 // 1-based position among siblings of the same tag
	id     string
	attr0  int32 // attributes in doc.attrs[attr0:attr0+nattr]
	nattr  int32
	// path keys: tag path, tag+id path, tag+id+index path
	kind, loose, full uint64
}

type attrRec struct{ k0, k1, v0, v1 int32 } // ranges in doc.norm

type doc struct {
	body  []byte
	toks  []tok
	elems []elem
	attrs []attrRec
	norm  []byte
	title string
	// phantoms is the number of leading elems that stand for ancestors
	// outside a partial scan; base is the offset of body in the whole page.
	phantoms int
	base     int

	// prefix sums over tokens, filled by index()
	sig   []int32 // significant tokens (start, void, text) before token i
	words []int32 // visible words before token i
	chars []int32 // visible characters before token i
	links []int32 // visible words inside links before token i
}

// normOf returns the normalised form of tokens [a, b).
func (d *doc) normOf(a, b int) []byte {
	return d.norm[d.normAt(a):d.normAt(b)]
}

func (d *doc) normAt(i int) int32 {
	if i >= len(d.toks) {
		return int32(len(d.norm))
	}
	return d.toks[i].norm
}

// textOf returns the collapsed text of text token i.
func (d *doc) textOf(i int) string {
	return string(d.textBytes(i))
}

func (d *doc) textBytes(i int) []byte {
	return d.norm[d.toks[i].norm+1 : d.normAt(i+1)]
}

// offAt is the byte offset where token i starts (len(body) past the end).
func (d *doc) offAt(i int) int {
	if i >= len(d.toks) {
		return len(d.body)
	}
	return int(d.toks[i].off)
}

func (d *doc) attr(e *elem, key string) (string, bool) {
	for _, a := range d.attrs[e.attr0 : e.attr0+e.nattr] {
		if string(d.norm[a.k0:a.k1]) == key {
			return string(d.norm[a.v0:a.v1]), true
		}
	}
	return "", false
}

// step is one level of an element path.
type step struct {
	Tag   string
	ID    string
	Index int
}

type tagCount struct {
	tag string
	n   int32
}

type scanner struct {
	d          *doc
	stack      []int32 // open elements
	counts     []tagCount
	countStart []int32 // per stack level, start of its children's counts; [0] is the top level
	foreign    int     // open svg/math elements
	invisible  int     // open elements whose text is not shown
	links      int     // open a elements
	text       []byte  // pending text (consecutive text tokens, comments between)
	textOff    int
	textEnd    int
	wsPending  bool
	inTitle    bool
	kv         []kvPair
}

type kvPair struct{ k, v []byte }

// scan tokenizes body into a doc. ancestors, when given, are phantom open
// elements around a partial body (the path of a segment's parent), and
// first is the tag and index of the first element at that level, so that
// paths inside the partial body read as they do in the whole page.
func scan(body []byte, ancestors []step, first step) *doc {
	d := &doc{body: body}
	// Rough sizes: one token per ~25 bytes, one element per ~60.
	d.toks = make([]tok, 0, len(body)/25+8)
	d.elems = make([]elem, 0, len(body)/60+8+len(ancestors))
	d.norm = make([]byte, 0, len(body)/2+64)
	s := &scanner{d: d, countStart: []int32{0}}
	for i, a := range ancestors {
		s.pushPhantom(a)
		if i == len(ancestors)-1 && first.Tag != "" && first.Index > 1 {
			s.counts = append(s.counts, tagCount{tag: first.Tag, n: int32(first.Index - 1)})
		}
	}
	if len(ancestors) == 0 && first.Tag != "" && first.Index > 1 {
		s.counts = append(s.counts, tagCount{tag: first.Tag, n: int32(first.Index - 1)})
	}
	d.phantoms = len(ancestors)
	s.run()
	return d
}

func (s *scanner) run() {
	z := html.NewTokenizer(bytes.NewReader(s.d.body))
	off := 0
	for {
		tt := z.Next()
		n := len(z.Raw())
		switch tt {
		case html.ErrorToken:
			s.flushText()
			s.closeAll(len(s.d.body))
			return
		case html.TextToken:
			if len(s.text) == 0 {
				s.textOff = off
			}
			s.text = append(s.text, z.Text()...)
			s.textEnd = off + n
		case html.CommentToken, html.DoctypeToken:
			// Comments and doctypes are not content; text around a comment
			// stays one text.
		case html.StartTagToken, html.SelfClosingTagToken:
			s.flushText()
			name, hasAttr := z.TagName()
			tag := intern(name)
			s.kv = s.kv[:0]
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				s.kv = append(s.kv, kvPair{k, v})
			}
			s.startTag(tag, tt == html.SelfClosingTagToken, off, off+n)
		case html.EndTagToken:
			s.flushText()
			name, _ := z.TagName()
			s.endTag(intern(name), off, off+n)
		}
		off += n
	}
}

func intern(name []byte) string {
	if a := atom.Lookup(name); a != 0 {
		return a.String()
	}
	return string(name)
}

func (s *scanner) top() int32 {
	if len(s.stack) == 0 {
		return -1
	}
	return s.stack[len(s.stack)-1]
}

// flushText emits the pending text as one token, or remembers that blank
// text separated two words.
func (s *scanner) flushText() {
	if len(s.text) == 0 {
		return
	}
	raw := s.text
	s.text = s.text[:0]
	d := s.d
	start := len(d.norm)
	d.norm = append(d.norm, 1)
	d.norm = appendCollapsed(d.norm, raw)
	if len(d.norm) == start+1 {
		d.norm = d.norm[:start]
		s.wsPending = true
		return
	}
	var fl uint8
	if spaceAt(raw, false) || s.wsPending {
		fl |= fSpaceBefore
	}
	if spaceAt(raw, true) {
		fl |= fSpaceAfter
	}
	if s.invisible == 0 {
		fl |= fVisible
	}
	if s.links > 0 {
		fl |= fLink
	}
	s.wsPending = false
	if s.inTitle && d.title == "" {
		d.title = string(d.norm[start+1:])
	}
	d.toks = append(d.toks, tok{kind: tText, flags: fl, elem: s.top(), off: int32(s.textOff), end: int32(s.textEnd), norm: int32(start)})
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// appendCollapsed appends b with runs of whitespace collapsed to one space
// and leading and trailing whitespace removed. Whitespace is any Unicode
// space (a no-break or ideographic space is as insignificant to a reader
// as an ASCII one), plus the zero-width space and byte-order mark.
func appendCollapsed(dst, b []byte) []byte {
	space := false
	n0 := len(dst)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			i++
			if isSpace(c) || c == '\v' {
				space = true
				continue
			}
			if space && len(dst) > n0 {
				dst = append(dst, ' ')
			}
			space = false
			dst = append(dst, c)
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if unicode.IsSpace(r) || r == '\u200b' || r == '\ufeff' {
			space = true
			i += n
			continue
		}
		if space && len(dst) > n0 {
			dst = append(dst, ' ')
		}
		space = false
		dst = append(dst, b[i:i+n]...)
		i += n
	}
	return dst
}

// spaceAt reports whether b starts (end: ends) with whitespace.
func spaceAt(b []byte, end bool) bool {
	if len(b) == 0 {
		return false
	}
	var r rune
	if end {
		r, _ = utf8.DecodeLastRune(b)
	} else {
		r, _ = utf8.DecodeRune(b)
	}
	return unicode.IsSpace(r) || r == '\u200b' || r == '\ufeff'
}

func (s *scanner) startTag(tag string, selfClosing bool, off, end int) {
	void := voidElements[tag] || (selfClosing && s.foreign > 0)
	if !void {
		s.impliedClose(tag, off)
	}
	d := s.d
	parent := s.top()
	ei := int32(len(d.elems))
	ti := int32(len(d.toks))
	normStart := int32(len(d.norm))

	// Sort attributes by name (insertion sort: tags have few), keep the
	// first of duplicates as HTML does.
	kv := s.kv
	for i := 1; i < len(kv); i++ {
		for j := i; j > 0 && bytes.Compare(kv[j].k, kv[j-1].k) < 0; j-- {
			kv[j], kv[j-1] = kv[j-1], kv[j]
		}
	}
	d.norm = append(d.norm, '<')
	d.norm = append(d.norm, tag...)
	a0 := int32(len(d.attrs))
	var id string
	for i, p := range kv {
		if i > 0 && bytes.Equal(p.k, kv[i-1].k) {
			continue
		}
		d.norm = append(d.norm, ' ')
		k0 := int32(len(d.norm))
		d.norm = append(d.norm, p.k...)
		k1 := int32(len(d.norm))
		d.norm = append(d.norm, '=', '"')
		v0 := int32(len(d.norm))
		d.norm = appendCollapsed(d.norm, p.v)
		v1 := int32(len(d.norm))
		d.norm = append(d.norm, '"')
		d.attrs = append(d.attrs, attrRec{k0, k1, v0, v1})
		if string(p.k) == "id" && v1 > v0 {
			id = string(d.norm[v0:v1])
		}
	}
	d.norm = append(d.norm, '>')

	kind := tStart
	if void {
		kind = tVoid
	}
	var fl uint8
	if blockElements[tag] {
		fl |= fBreak
	}
	d.toks = append(d.toks, tok{kind: kind, flags: fl, elem: ei, off: int32(off), end: int32(end), norm: normStart})
	e := elem{tag: tag, parent: parent, tok: ti, endTok: ti, id: id, attr0: a0, nattr: int32(len(d.attrs)) - a0}
	s.place(&e)
	d.elems = append(d.elems, e)
	if void {
		return
	}
	s.push(ei)
	if tag == "title" && s.foreign == 0 {
		s.inTitle = true
	}
}

// place sets the sibling index and path keys of e, a new child of the top
// of the stack.
func (s *scanner) place(e *elem) {
	cs := s.countStart[len(s.countStart)-1]
	var idx int32
	for i := int(cs); i < len(s.counts); i++ {
		if s.counts[i].tag == e.tag {
			s.counts[i].n++
			idx = s.counts[i].n
			break
		}
	}
	if idx == 0 {
		s.counts = append(s.counts, tagCount{tag: e.tag, n: 1})
		idx = 1
	}
	e.index = idx
	var pk, pl, pf uint64 = hashSeed, hashSeed, hashSeed
	if e.parent >= 0 {
		p := &s.d.elems[e.parent]
		pk, pl, pf = p.kind, p.loose, p.full
	}
	e.kind, e.loose, e.full = pathKeys(pk, pl, pf, e.tag, e.id, int(idx))
}

// pathKeys extends the three path keys of a parent by one step.
func pathKeys(pk, pl, pf uint64, tag, id string, index int) (kind, loose, full uint64) {
	kind = hashString(mix(pk, 0x2f), tag)
	loose = hashString(mix(hashString(mix(pl, 0x2f), tag), 0x23), id)
	full = mix(hashString(mix(hashString(mix(pf, 0x2f), tag), 0x23), id), uint64(index))
	return
}

func (s *scanner) push(ei int32) {
	s.stack = append(s.stack, ei)
	s.countStart = append(s.countStart, int32(len(s.counts)))
	switch tag := s.d.elems[ei].tag; {
	case tag == "svg" || tag == "math":
		s.foreign++
	case invisibleElements[tag]:
		s.invisible++
	case tag == "a":
		s.links++
	}
}

func (s *scanner) pushPhantom(a step) {
	d := s.d
	e := elem{tag: a.Tag, parent: s.top(), tok: -1, endTok: -1, id: a.ID}
	s.place(&e)
	if a.Index > 0 {
		// keep the index the page gave the ancestor
		e.index = int32(a.Index)
		var pk, pl, pf uint64 = hashSeed, hashSeed, hashSeed
		if e.parent >= 0 {
			p := &d.elems[e.parent]
			pk, pl, pf = p.kind, p.loose, p.full
		}
		e.kind, e.loose, e.full = pathKeys(pk, pl, pf, e.tag, e.id, a.Index)
	}
	d.elems = append(d.elems, e)
	s.push(int32(len(d.elems) - 1))
}

// pop closes the top element with an end token at [off, end).
func (s *scanner) pop(off, end int, synthetic bool) {
	ei := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	s.counts = s.counts[:s.countStart[len(s.countStart)-1]]
	s.countStart = s.countStart[:len(s.countStart)-1]
	d := s.d
	e := &d.elems[ei]
	switch {
	case e.tag == "svg" || e.tag == "math":
		s.foreign--
	case invisibleElements[e.tag]:
		s.invisible--
	case e.tag == "a":
		s.links--
	}
	if e.tag == "title" {
		s.inTitle = false
	}
	if e.tok < 0 {
		return // phantom: outside this scan
	}
	var fl uint8
	if synthetic {
		fl = fSynthetic
		end = off
	}
	if blockElements[e.tag] {
		fl |= fBreak
	}
	e.endTok = int32(len(d.toks))
	d.toks = append(d.toks, tok{kind: tEnd, flags: fl, elem: ei, off: int32(off), end: int32(end), norm: int32(len(d.norm))})
	d.norm = append(d.norm, '<', '/')
	d.norm = append(d.norm, e.tag...)
	d.norm = append(d.norm, '>')
}

func (s *scanner) closeAll(at int) {
	for len(s.stack) > 0 {
		s.pop(at, at, true)
	}
}

func (s *scanner) endTag(tag string, off, end int) {
	if voidElements[tag] {
		return
	}
	inline := !blockElements[tag] && !scopeElements[tag]
	for i := len(s.stack) - 1; i >= 0; i-- {
		t := s.d.elems[s.stack[i]].tag
		if t == tag {
			for len(s.stack) > i+1 {
				s.pop(off, off, true)
			}
			s.pop(off, end, false)
			return
		}
		// An inline end tag does not close blocks it has no business in;
		// nothing closes across a table cell.
		if (inline && (blockElements[t] || scopeElements[t])) || (scopeElements[t] && t != tag) {
			return
		}
	}
}

// impliedClose closes the elements a start tag ends implicitly.
func (s *scanner) impliedClose(tag string, off int) {
	switch tag {
	case "li":
		s.closeIn(off, []string{"li"}, listStops)
	case "dt", "dd":
		s.closeIn(off, []string{"dt", "dd"}, dlStops)
	case "tr":
		s.closeIn(off, []string{"tr"}, tableStops)
	case "td", "th":
		s.closeIn(off, []string{"td", "th"}, rowStops)
	case "thead", "tbody", "tfoot":
		s.closeIn(off, []string{"thead", "tbody", "tfoot"}, tableStops)
	case "option":
		s.closeIn(off, []string{"option"}, selectStops)
	case "optgroup":
		s.closeIn(off, []string{"option", "optgroup"}, selectStops)
	case "a":
		s.closeIn(off, []string{"a"}, tableStops)
	case "body":
		s.closeIn(off, []string{"head"}, nil)
	}
	if pClosers[tag] {
		s.closeIn(off, []string{"p"}, buttonScope)
	}
	if headings[tag] {
		if t := s.top(); t >= 0 && headings[s.d.elems[t].tag] {
			s.pop(off, off, true)
		}
	}
}

// closeIn closes the innermost open element named in tags, and everything
// above it, unless an element in stops comes first.
func (s *scanner) closeIn(off int, tags []string, stops map[string]bool) {
	for i := len(s.stack) - 1; i >= 0; i-- {
		t := s.d.elems[s.stack[i]].tag
		for _, x := range tags {
			if t == x {
				for len(s.stack) > i {
					s.pop(off, off, true)
				}
				return
			}
		}
		if stops[t] || buttonScope[t] {
			return
		}
	}
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var (
	voidElements = set("area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img",
		"input", "keygen", "link", "meta", "param", "source", "track", "wbr")
	// blockElements break the visible text into words and are the units
	// densitometry cuts between.
	blockElements = set("address", "article", "aside", "blockquote", "body", "br", "caption", "center",
		"dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
		"form", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html",
		"legend", "li", "main", "menu", "nav", "noframes", "ol", "option", "p", "pre", "section",
		"summary", "table", "tbody", "td", "tfoot", "th", "thead", "title", "tr", "ul", "search")
	// invisibleElements hold text that is not shown as page text.
	invisibleElements = set("script", "style", "noscript", "template", "iframe", "noembed", "noframes")
	scopeElements     = set("table", "td", "th", "caption", "html", "applet", "object", "marquee", "template", "button")
	buttonScope       = set("applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "button", "svg", "math")
	listStops         = set("ul", "ol", "menu", "dir")
	dlStops           = set("dl")
	tableStops        = set("table")
	rowStops          = set("tr", "table")
	selectStops       = set("select", "datalist")
	headings          = set("h1", "h2", "h3", "h4", "h5", "h6")
	pClosers          = set("address", "article", "aside", "blockquote", "center", "details", "dialog",
		"dir", "div", "dl", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
		"h5", "h6", "header", "hgroup", "hr", "main", "menu", "nav", "ol", "p", "pre", "section",
		"summary", "table", "ul", "li", "dd", "dt", "search", "plaintext", "xmp", "listing")
)

// index fills the prefix sums used for subtree sizes and text densities.
func (d *doc) index() {
	n := len(d.toks)
	d.sig = make([]int32, n+1)
	d.words = make([]int32, n+1)
	d.chars = make([]int32, n+1)
	d.links = make([]int32, n+1)
	for i, t := range d.toks {
		d.sig[i+1], d.words[i+1], d.chars[i+1], d.links[i+1] = d.sig[i], d.words[i], d.chars[i], d.links[i]
		if t.kind != tEnd {
			d.sig[i+1]++
		}
		if t.kind == tText && t.flags&fVisible != 0 {
			b := d.textBytes(i)
			w := int32(bytes.Count(b, []byte{' '}) + 1)
			d.words[i+1] += w
			d.chars[i+1] += int32(utf8.RuneCount(b)) + 1
			if t.flags&fLink != 0 {
				d.links[i+1] += w
			}
		}
	}
}

// span returns the token range [a, b) of element e's subtree.
func (d *doc) span(ei int32) (int, int) {
	e := &d.elems[ei]
	return int(e.tok), int(e.endTok) + 1
}

// size is the number of significant tokens (elements and texts) in [a, b).
func (d *doc) size(a, b int) int { return int(d.sig[b] - d.sig[a]) }

// visibleText returns the text a reader sees in tokens [a, b): words joined
// by single spaces, block-level tags breaking words apart.
func (d *doc) visibleText(a, b int) string {
	var sb strings.Builder
	d.appendVisible(&sb, a, b)
	return sb.String()
}

func (d *doc) appendVisible(sb *strings.Builder, a, b int) {
	brk := false
	for i := a; i < b && i < len(d.toks); i++ {
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
}

// path returns the readable path of element ei: "html|body|div-main|article[2]".
func (d *doc) path(ei int32) string {
	var parts []string
	for ; ei >= 0; ei = d.elems[ei].parent {
		parts = append(parts, stepName(d.elems[ei].tag, d.elems[ei].id, int(d.elems[ei].index)))
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "|")
}

func stepName(tag, id string, index int) string {
	s := tag
	if id != "" {
		s += "-" + id
	}
	if index > 1 {
		s += "[" + itoa(index) + "]"
	}
	return s
}

// steps returns the path of element ei as steps, root first.
func (d *doc) steps(ei int32) []step {
	var out []step
	for ; ei >= 0; ei = d.elems[ei].parent {
		e := &d.elems[ei]
		out = append(out, step{Tag: e.tag, ID: e.id, Index: int(e.index)})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// FNV-1a, 64 bit, for path keys, cascades and subtree hashes.
const (
	hashSeed  uint64 = 14695981039346656037
	hashPrime uint64 = 1099511628211
)

func hashBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= hashPrime
	}
	return h
}

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= hashPrime
	}
	return h
}

func mix(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= hashPrime
		v >>= 8
	}
	return h
}
