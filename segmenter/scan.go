package segmenter

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/atom"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/third_party/htmltoken"
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
	fDigest                        // raw text (script, style) stored as a digest of its source
)

type tok struct {
	kind  tokKind
	flags uint8
	elem  int32 // element of a tag token; enclosing element of a text (-1 at top level)
	off   int32 // raw byte range in doc.body
	end   int32
	norm  int32 // start of the normalised form in doc.norm
}

// elem is an element of the light DOM. It holds no pointers, so that the
// slice of them costs the garbage collector nothing.
type elem struct {
	tagKey uint32 // atom of a known tag, else a hash with the top bit set
	info   tagInfo
	ck     uint8 // close kind
	flags  uint8 // eBoiler
	parent int32 // -1 at top level
	tok    int32 // start token; -1 for a phantom ancestor of a partial scan
	endTok int32 // end token (== tok for a void element)
	index  int32 // 1-based position among siblings of the same tag
	tag0   int32 // the tag name and id in doc.norm
	tag1   int32
	id0    int32
	id1    int32
	attr0  int32 // attributes in doc.attrs[attr0:attr0+nattr]
	nattr  int32
	// path keys: tag path, tag+id path, tag+id+index path
	kind, loose, full uint64
}

// Element flags.
const (
	eBoiler uint8 = 1 << iota // is or lies in a nav, aside, footer, head, title or navigation role
)

type attrRec struct{ k0, k1, v0, v1 int32 } // ranges in doc.norm

type doc struct {
	w     *work // the detection the doc is read for (nil: none)
	body  []byte
	toks  []tok
	elems []elem
	attrs []attrRec
	norm  []byte
	title string
	// weight is the page's text against its scripts (see weighStart).
	weight changedigest.PageWeight
	// phantoms is the number of leading elems that stand for ancestors
	// outside a partial scan; base is the offset of body in the whole page.
	phantoms int
	base     int
	sc       scanner // the scanner's buffers, kept with the doc for reuse
	indexed  bool

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

// textOf returns the collapsed text of text token i (for a script or
// style, its collapsed source read back from the body).
func (d *doc) textOf(i int) string {
	t := &d.toks[i]
	if t.flags&fDigest != 0 {
		return string(appendCollapsed(nil, d.body[t.off:t.end]))
	}
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
	tag uint32
	n   int32
}

// tagOf returns the tag name of element ei.
func (d *doc) tagOf(ei int32) string {
	e := &d.elems[ei]
	if e.tagKey&(1<<31) == 0 {
		return atom.Atom(e.tagKey).String()
	}
	return string(d.norm[e.tag0:e.tag1])
}

// idOf returns the id attribute of element ei ("" when it has none).
func (d *doc) idOf(ei int32) string {
	e := &d.elems[ei]
	if e.id1 == e.id0 {
		return ""
	}
	return string(d.norm[e.id0:e.id1])
}

// tagKeyOf is the key of a tag name: its atom, or an FNV hash with the top
// bit set for names that are not atoms.
func tagKeyOf(name []byte) uint32 {
	if a := atom.Lookup(name); a != 0 {
		return uint32(a)
	}
	return uint32(hashBytes(hashSeed, name)) | 1<<31
}

// tagInfo holds what the scanner needs to know of a tag.
type tagInfo uint32

const (
	tiVoid        tagInfo = 1 << iota // no content, no end tag
	tiBlock                           // block-level: breaks words, densitometry cuts before it
	tiInvisible                       // its text is not shown
	tiScope                           // nothing closes across it (table, td, …)
	tiButtonScope                     // a p is not closed across it
	tiPCloser                         // its start tag closes an open p
	tiHeading
	tiForeign // svg, math
	tiList    // ul, ol, menu, dir
	tiDL
	tiTable
	tiTR
	tiSelect // select, datalist
	tiTitle
	tiLink      // a
	tiCloseKind // closes or is closed implicitly: li, td, option, …
	tiRawText   // holds raw text the page does not show: script, style, …
	tiRoot      // html, template: nothing closes across them
	tiTablePart // tr, td, th, tbody, thead, tfoot, caption, colgroup
)

// Kinds of elements a later start tag can close implicitly; each level
// of the scanner's stack knows the innermost open one of each kind.
const (
	ckNone uint8 = iota
	ckP
	ckLI
	ckDTDD
	ckTR
	ckCell
	ckTSection
	ckOption
	ckOptgroup
	ckA
	ckHead
	ckCount
)

var (
	tagInfos   = buildTagInfos()
	closeKinds = map[string]uint8{ // tags marked tiCloseKind
		"p": ckP, "li": ckLI, "dt": ckDTDD, "dd": ckDTDD, "tr": ckTR, "td": ckCell, "th": ckCell,
		"thead": ckTSection, "tbody": ckTSection, "tfoot": ckTSection, "option": ckOption,
		"optgroup": ckOptgroup, "a": ckA, "head": ckHead,
	}
)

func buildTagInfos() map[string]tagInfo {
	tagInfos := map[string]tagInfo{}
	add := func(f tagInfo, names ...string) {
		for _, n := range names {
			tagInfos[n] |= f
		}
	}
	add(tiVoid, "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img",
		"input", "keygen", "link", "meta", "param", "source", "track", "wbr")
	add(tiBlock, "address", "article", "aside", "blockquote", "body", "br", "caption", "center",
		"dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
		"form", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html",
		"legend", "li", "main", "menu", "nav", "noframes", "ol", "option", "p", "pre", "section",
		"summary", "table", "tbody", "td", "tfoot", "th", "thead", "title", "tr", "ul", "search")
	add(tiInvisible, "script", "style", "noscript", "template", "iframe", "noembed", "noframes")
	add(tiScope, "table", "td", "th", "caption", "html", "applet", "object", "marquee", "template", "button")
	add(tiButtonScope, "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template",
		"button", "svg", "math")
	add(tiPCloser, "address", "article", "aside", "blockquote", "center", "details", "dialog",
		"dir", "div", "dl", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
		"h5", "h6", "header", "hgroup", "hr", "main", "menu", "nav", "ol", "p", "pre", "section",
		"summary", "table", "ul", "li", "dd", "dt", "search", "plaintext", "xmp", "listing")
	add(tiHeading, "h1", "h2", "h3", "h4", "h5", "h6")
	add(tiForeign, "svg", "math")
	add(tiList, "ul", "ol", "menu", "dir")
	add(tiDL, "dl")
	add(tiTable, "table")
	add(tiTR, "tr")
	add(tiSelect, "select", "datalist")
	add(tiTitle, "title")
	add(tiLink, "a")
	add(tiRawText, "script", "style", "iframe", "noembed", "noframes", "noscript")
	add(tiRoot, "html", "template")
	add(tiTablePart, "tr", "td", "th", "tbody", "thead", "tfoot", "caption", "colgroup")
	add(tiCloseKind, "p", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "tfoot", "option",
		"optgroup", "a", "head", "body")
	return tagInfos
}

type scanner struct {
	d          *doc
	levels     []level // open elements, innermost last
	bucket     [256]int32
	counts     []tagCount
	countStart []int32 // per stack level, start of its children's counts; [0] is the top level
	// bigCounts finds the counter of a tag among the children of an
	// element with many distinct child tags: parent<<32 | tag key →
	// position in counts.
	bigCounts  map[uint64]int32
	foreign    int  // open svg/math elements
	invisible  int  // open elements whose text is not shown
	links      int  // open a elements
	inText     bool // a text token is open in norm
	textNorm   int  // its start in norm
	textOff    int
	textEnd    int
	textSpace  bool // whitespace seen since the last character of the open text
	textLead   bool // the open text started with whitespace
	wsPending  bool
	inTitle    bool
	unseen     int  // open tags whose text is not seen (weighStart)
	scriptNext bool // the token before was a script start tag (weighStart)
	kv         []kvSpan
	kvBuf      []byte // what kv's spans index: the raw tag, or kvCopy
	kvCopy     []byte
	name       []byte // scratch for a lower-cased name
	tagCache   [64]tagCacheEnt
	z          htmltoken.Tokenizer
}

// Limits of the light DOM, so that hostile markup costs time in
// proportion to its size.
const (
	// maxDepth is the deepest an element may nest. A start tag that
	// would nest deeper closes the innermost open element first and
	// becomes its sibling, as browsers flatten trees past 512 levels
	// (Blink's parser attaches such elements to the parent of the
	// innermost one).
	maxDepth = 512
	// maxAttrs is the number of attributes of a tag that the normalised
	// form keeps, the first ones in the source; the rest are neither
	// hashed nor compared. Real pages stay far below it.
	maxAttrs = 256
)

// level is an open element on the scanner's stack with where, at or
// below it, the elements are that end tags and implied closes look for,
// so that neither searches the stack: the innermost element of each
// stop flag and of each close kind, and the next element down whose tag
// falls in the same bucket (bucket holds the innermost one of each).
type level struct {
	elem  int32
	below int32
	stop  [len(stopFlags)]int32
	kind  [ckCount]int32
}

// stopFlags are the flags of elements that end tags and implied closes
// do not close across.
var stopFlags = [...]tagInfo{tiRoot, tiTable, tiBlock, tiScope, tiList, tiDL, tiTR, tiSelect, tiButtonScope}

// bucketSeed scatters tag keys over the buckets of open elements, so that
// a page cannot choose tag names that all share one.
var bucketSeed = rand.Uint64() | 1

func bucketOf(key uint32) int {
	return int(((uint64(key) ^ bucketSeed) * 0x9E3779B97F4A7C15) >> 56)
}

// kvSpan is an attribute's key and value as spans of scanner.kvBuf.
type kvSpan struct{ k0, k1, v0, v1 int32 }

// scan tokenizes body into a doc, counting its tokens into w. ancestors, when given, are phantom open
// elements around a partial body (the path of a segment's parent), and
// first is the tag and index of the first element at that level, so that
// paths inside the partial body read as they do in the whole page.
//
// The doc's buffers come from a pool; release returns them once nothing
// refers to the doc any more.
func scan(w *work, body []byte, ancestors []step, first step) *doc {
	d := docPool.Get().(*doc)
	d.w = w
	d.body = body
	// Rough sizes: one token per ~25 bytes, one element per ~60, and,
	// from the page's tags, an element for each start tag (a few more
	// are implied) and up to a start and an end token for each and the
	// texts between tags, so that a page of many small elements is not
	// grown to its size by doubling.
	starts, texts := countTags(body)
	d.toks = reuse(d.toks, max(len(body)/25, 2*starts+texts)+8)
	d.elems = reuse(d.elems, max(len(body)/60, starts+starts/16)+8+len(ancestors))
	d.attrs = reuse(d.attrs, len(body)/80+8)
	d.norm = reuse(d.norm, len(body)/2+64)
	d.indexed = false
	s := &d.sc
	kv, kvCopy, levels, counts, cs, name, big := s.kv[:0], s.kvCopy[:0], s.levels[:0], s.counts[:0], s.countStart[:0], s.name[:0], s.bigCounts
	clear(big)
	*s = scanner{d: d, kv: kv, kvCopy: kvCopy, levels: levels, counts: counts, countStart: append(cs, 0), name: name, bigCounts: big, z: s.z}
	for i := range s.bucket {
		s.bucket[i] = -1
	}
	for _, a := range ancestors {
		s.pushPhantom(a)
	}
	if first.Tag != "" && first.Index > 1 {
		s.counts = append(s.counts, tagCount{tag: tagKeyOf([]byte(first.Tag)), n: int32(first.Index - 1)})
	}
	d.phantoms = len(ancestors)
	d.weight = changedigest.PageWeight{}
	s.run()
	s.d = nil
	return d
}

var docPool = sync.Pool{New: func() any { return new(doc) }}

// countTags counts the '<' of body that open a start tag (a letter
// follows) and those after something else than a '>' (where a text may
// end), and one for the end.
func countTags(body []byte) (starts, texts int) {
	for i := 0; ; i++ {
		k := bytes.IndexByte(body[i:], '<')
		if k < 0 {
			return starts, texts + 1
		}
		i += k
		if i == 0 || body[i-1] != '>' {
			texts++
		}
		if i+1 < len(body) {
			if c := body[i+1] | 0x20; 'a' <= c && c <= 'z' {
				starts++
			}
		}
	}
}

// reuse returns b emptied, with room for n elements.
func reuse[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, 0, n)
	}
	return b[:0]
}

// release returns the doc's buffers to the pool. Nothing may use the doc,
// or a slice of its buffers, afterwards.
func (d *doc) release() {
	if d == nil {
		return
	}
	d.body = nil
	d.w = nil
	d.title = ""
	d.phantoms, d.base = 0, 0
	docPool.Put(d)
}

func (s *scanner) run() {
	z := &s.z
	z.Reset(s.d.body)
	w := s.d.w
	off := 0
	for {
		w.add(1)
		tt := z.Next()
		raw := z.Raw()
		n := len(raw)
		script := s.scriptNext
		s.scriptNext = false
		switch tt {
		case htmltoken.ErrorToken:
			s.flushText()
			s.closeAll(len(s.d.body))
			return
		case htmltoken.TextToken:
			if script {
				s.d.weight.InlineScript += n
			}
			if s.rawText() {
				if !script {
					s.weighText(raw)
				}
				s.flushText()
				s.addDigest(raw, off, off+n)
			} else {
				text := z.Text()
				if !script {
					s.weighText(text)
				}
				s.addText(text, off, off+n)
			}
		case htmltoken.CommentToken, htmltoken.DoctypeToken:
			// Comments and doctypes are not content; text around a comment
			// stays one text.
		case htmltoken.StartTagToken, htmltoken.SelfClosingTagToken:
			s.flushText()
			tag := s.readTag(raw)
			if tt == htmltoken.StartTagToken {
				s.weighStart(tag)
			}
			s.startTag(tag, tt == htmltoken.SelfClosingTagToken, off, off+n)
		case htmltoken.EndTagToken:
			s.flushText()
			if n > 2 {
				name := lowerName(&s.name, raw[2:])
				s.weighEnd(name)
				s.endTag(name, off, off+n)
			}
		}
		off += n
	}
}

// The page's weight (doc.weight) follows the tokens, not the light DOM,
// so that it is what a plain read of the page gives: text inside open
// style, template, noscript and title tags is not seen, and the text
// right after a script start tag is its source.

// weighStart counts a start tag (not self-closed) into the weight.
func (s *scanner) weighStart(tag []byte) {
	switch string(tag) {
	case "script":
		s.scriptNext = true
		for _, a := range s.kv {
			if string(s.kvBuf[a.k0:a.k1]) == "src" && len(bytes.TrimSpace(s.kvBuf[a.v0:a.v1])) > 0 {
				s.d.weight.ExternalScripts++
				break
			}
		}
	default:
		if unseenTag(tag) {
			s.unseen++
		}
	}
}

// weighEnd counts an end tag into the weight.
func (s *scanner) weighEnd(name []byte) {
	if unseenTag(name) {
		s.unseen = max(s.unseen-1, 0)
	}
}

// unseenTag reports whether a page's weight leaves out the text inside
// tags of this name: styles, templates, noscript and titles.
func unseenTag(name []byte) bool {
	switch string(name) {
	case "style", "template", "noscript", "title":
		return true
	}
	return false
}

// boilerTag reports whether elements of this name, and all they hold,
// are boilerplate to the main text (see textBlocks).
func boilerTag(name []byte) bool {
	switch string(name) {
	case "nav", "aside", "footer", "head", "title":
		return true
	}
	return false
}

// weighText counts the non-space characters of a text outside unseen
// tags into the weight (the text right after a script start tag is its
// source, counted by run).
func (s *scanner) weighText(text []byte) {
	if s.unseen > 0 {
		return
	}
	n := 0
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			if !asciiSpace[c] {
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		if !unicode.IsSpace(r) {
			n++
		}
		i += size
	}
	s.d.weight.Text += n
}

// asciiSpace marks the ASCII characters unicode.IsSpace takes for space.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// lowerName returns the tag name at the start of b (up to whitespace, '/'
// or '>'), lower-cased into *buf.
func lowerName(buf *[]byte, b []byte) []byte {
	out := (*buf)[:0]
	for _, c := range b {
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	*buf = out
	return out
}

// readTag reads the name and the first maxAttrs attributes of a start
// tag into s.kv, as the tokenizer gives them (keys lower-cased, the first
// of repeated keys kept, empty keys dropped). A tag free of character
// references and NULs is read in place, its keys lower-cased in the
// tokenizer's buffer (as TagAttr does); any other through TagAttr, which
// decodes them.
func (s *scanner) readTag(raw []byte) []byte {
	z := &s.z
	n := min(z.NumAttr(), maxAttrs)
	s.kv = s.kv[:0]
	if bytes.IndexByte(raw, '&') >= 0 || bytes.IndexByte(raw, 0) >= 0 {
		tag, _ := z.TagName()
		s.kvCopy = s.kvCopy[:0]
		for range n {
			k, v, _ := z.TagAttr()
			k0 := int32(len(s.kvCopy))
			s.kvCopy = append(s.kvCopy, k...)
			v0 := int32(len(s.kvCopy))
			s.kvCopy = append(s.kvCopy, v...)
			s.kv = append(s.kv, kvSpan{k0, v0, v0, int32(len(s.kvCopy))})
		}
		s.kvBuf = s.kvCopy
		return tag
	}
	tag := lowerName(&s.name, raw[1:])
	for i := range n {
		k0, k1, v0, v1 := z.AttrSpan(i)
		for x := k0; x < k1; x++ {
			if c := raw[x]; 'A' <= c && c <= 'Z' {
				raw[x] = c + 'a' - 'A'
			}
		}
		s.kv = append(s.kv, kvSpan{int32(k0), int32(k1), int32(v0), int32(v1)})
	}
	s.kvBuf = raw
	return tag
}

func (s *scanner) top() int32 {
	if len(s.levels) == 0 {
		return -1
	}
	return s.levels[len(s.levels)-1].elem
}

// rawText reports whether the text being read is the source of a script,
// style or the like (raw text the tokenizer does not decode).
func (s *scanner) rawText() bool {
	t := s.top()
	return t >= 0 && s.d.elems[t].info&tiRawText != 0
}

// addDigest adds the raw text of a script, style or the like as a digest:
// its normalised form is the hash of its whitespace-collapsed source, so
// that large scripts cost neither copies nor MD5 time. The source itself
// is read back from the body when a change shows it.
func (s *scanner) addDigest(raw []byte, off, end int) {
	h, empty := collapsedHash(raw)
	if empty {
		s.wsPending = true
		return
	}
	d := s.d
	start := len(d.norm)
	d.norm = append(d.norm, 2)
	d.norm = appendHex16(d.norm, h)
	d.toks = append(d.toks, tok{kind: tText, flags: fDigest, elem: s.top(), off: int32(off), end: int32(end), norm: int32(start)})
}

// collapsedHash is the FNV-64 of b with whitespace runs collapsed to one
// space and trimmed; empty reports that b is blank.
func collapsedHash(b []byte) (h uint64, empty bool) {
	h = hashSeed
	space, any := false, false
	for _, c := range b {
		if c <= ' ' && (isSpace(c) || c == '\v') {
			space = true
			continue
		}
		if space && any {
			h ^= ' '
			h *= hashPrime
		}
		space, any = false, true
		h ^= uint64(c)
		h *= hashPrime
	}
	return h, !any
}

// addText appends a text token to the open text, collapsing whitespace
// into norm as it goes; texts separated only by comments are one text.
func (s *scanner) addText(b []byte, off, end int) {
	d := s.d
	if !s.inText {
		s.inText = true
		s.textNorm = len(d.norm)
		s.textOff = off
		s.textSpace, s.textLead = false, false
		d.norm = append(d.norm, 1)
		if spaceAt(b, false) {
			s.textLead = true
		}
	}
	s.textEnd = end
	d.norm, s.textSpace = appendCollapsedFrom(d.norm, b, s.textNorm+1, s.textSpace)
}

// flushText closes the open text as one token, or, when it was blank,
// remembers that whitespace separated two words.
func (s *scanner) flushText() {
	if !s.inText {
		return
	}
	s.inText = false
	d := s.d
	start := s.textNorm
	if len(d.norm) == start+1 {
		d.norm = d.norm[:start]
		s.wsPending = true
		return
	}
	var fl uint8
	if s.textLead || s.wsPending {
		fl |= fSpaceBefore
	}
	if s.textSpace {
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
	// most values (URLs, ids, classes) have nothing to collapse
	plain := true
	for _, c := range b {
		if c <= ' ' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return append(dst, b...)
	}
	dst, _ = appendCollapsedFrom(dst, b, len(dst), false)
	return dst
}

// appendCollapsedFrom is appendCollapsed continuing a collapsed run that
// started at dst[n0:]; space says whether whitespace is pending, and the
// result says whether it still is at the end of b.
func appendCollapsedFrom(dst, b []byte, n0 int, space bool) ([]byte, bool) {
	for i := 0; i < len(b); {
		// a run of plain bytes
		j := i
		for j < len(b) && b[j] > ' ' && b[j] < utf8.RuneSelf {
			j++
		}
		if j > i {
			if space && len(dst) > n0 {
				dst = append(dst, ' ')
			}
			space = false
			dst = append(dst, b[i:j]...)
			i = j
			continue
		}
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
	return dst, space
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

// tagCacheEnt is a tag name (up to 15 bytes) with its info and key.
type tagCacheEnt struct {
	n    uint8
	name [15]byte
	info tagInfo
	key  uint32
}

// tagOf returns the info and key of a tag name (tagInfos, tagKeyOf),
// from a small cache of the names met: a page names a few tags over and
// over.
func (s *scanner) tagOf(tag []byte) (tagInfo, uint32) {
	if len(tag) == 0 || len(tag) > 15 {
		return tagInfos[string(tag)], tagKeyOf(tag)
	}
	c := &s.tagCache[(len(tag)*31+int(tag[0])*7+int(tag[len(tag)-1]))&(len(s.tagCache)-1)]
	if int(c.n) == len(tag) && string(c.name[:c.n]) == string(tag) {
		return c.info, c.key
	}
	c.n = uint8(copy(c.name[:], tag))
	c.info, c.key = tagInfos[string(tag)], tagKeyOf(tag)
	return c.info, c.key
}

func (s *scanner) startTag(tag []byte, selfClosing bool, off, end int) {
	info, tagKey := s.tagOf(tag)
	void := info&tiVoid != 0 || (selfClosing && s.foreign > 0)
	if !void {
		s.impliedClose(tag, info, off)
		if len(tag) == 2 && tag[0] == 't' && tag[1] == 'r' {
			s.impliedTBody(off)
		}
		if len(s.levels) >= maxDepth {
			s.pop(off, off, true)
		}
	}
	d := s.d
	parent := s.top()
	ei := int32(len(d.elems))
	ti := int32(len(d.toks))
	normStart := int32(len(d.norm))

	// Sort attributes by name (the keys are distinct).
	kv, kb := s.kv, s.kvBuf
	if len(kv) > 1 {
		slices.SortFunc(kv, func(a, b kvSpan) int { return bytes.Compare(kb[a.k0:a.k1], kb[b.k0:b.k1]) })
	}
	var fl0 uint8
	if parent >= 0 {
		fl0 = d.elems[parent].flags & eBoiler
	}
	if boilerTag(tag) {
		fl0 |= eBoiler
	}
	d.norm = append(d.norm, '<')
	d.norm = append(d.norm, tag...)
	tag1 := int32(len(d.norm))
	a0 := int32(len(d.attrs))
	var id0, id1 int32
	for _, p := range kv {
		d.norm = append(d.norm, ' ')
		k0 := int32(len(d.norm))
		key := kb[p.k0:p.k1]
		d.norm = append(d.norm, key...)
		k1 := int32(len(d.norm))
		d.norm = append(d.norm, '=', '"')
		v0 := int32(len(d.norm))
		d.norm = appendCollapsed(d.norm, kb[p.v0:p.v1])
		v1 := int32(len(d.norm))
		d.norm = append(d.norm, '"')
		d.attrs = append(d.attrs, attrRec{k0, k1, v0, v1})
		if v1 > v0 && len(key) == 2 && key[0] == 'i' && key[1] == 'd' {
			id0, id1 = v0, v1
		}
		if string(key) == "role" {
			switch string(d.norm[v0:v1]) {
			case "navigation", "contentinfo", "banner":
				fl0 |= eBoiler
			}
		}
	}
	d.norm = append(d.norm, '>')

	kind := tStart
	if void {
		kind = tVoid
	}
	var fl uint8
	if info&tiBlock != 0 {
		fl |= fBreak
	}
	d.toks = append(d.toks, tok{kind: kind, flags: fl, elem: ei, off: int32(off), end: int32(end), norm: normStart})
	e := elem{tagKey: tagKey, info: info, flags: fl0, parent: parent, tok: ti, endTok: ti, tag0: normStart + 1, tag1: tag1,
		id0: id0, id1: id1, attr0: a0, nattr: int32(len(d.attrs)) - a0}
	if !void && info&tiCloseKind != 0 {
		e.ck = closeKinds[string(tag)]
	}
	s.place(&e)
	d.elems = append(d.elems, e)
	if void {
		return
	}
	s.push(ei)
}

// impliedTBody opens the tbody a tr directly in a table implies, as HTML
// does, so that <table><tr> and <table><tbody><tr> read the same.
func (s *scanner) impliedTBody(off int) {
	t := s.top()
	if t < 0 || s.d.elems[t].info&tiTable == 0 {
		return
	}
	saved := s.kv
	s.kv = s.kv[:0]
	s.startTag([]byte("tbody"), false, off, off)
	s.kv = saved
}

// place sets the sibling index and path keys of e, a new child of the top
// of the stack.
func (s *scanner) place(e *elem) {
	c := &s.counts[s.counter(e.parent, e.tagKey)]
	c.n++
	idx := c.n
	e.index = idx
	var pk, pl, pf uint64 = hashSeed, hashSeed, hashSeed
	if e.parent >= 0 {
		p := &s.d.elems[e.parent]
		pk, pl, pf = p.kind, p.loose, p.full
	}
	e.kind, e.loose, e.full = pathKeys(pk, pl, pf, e.tagKey, s.d.norm[e.id0:e.id1], int(idx))
}

// counter is the position in s.counts of the count of the children of
// parent (the top of the stack) with tag key, added at 0 when missing.
// The counts of a parent's children are searched one by one while they
// are few, then through bigCounts.
func (s *scanner) counter(parent int32, key uint32) int {
	cs := int(s.countStart[len(s.countStart)-1])
	if n := len(s.counts) - cs; n <= linearCounts {
		s.d.w.add(n)
		for i := cs; i < len(s.counts); i++ {
			if s.counts[i].tag == key {
				return i
			}
		}
		s.counts = append(s.counts, tagCount{tag: key})
		if n == linearCounts {
			if s.bigCounts == nil {
				s.bigCounts = map[uint64]int32{}
			}
			for i := cs; i < len(s.counts); i++ {
				s.bigCounts[countKey(parent, s.counts[i].tag)] = int32(i)
			}
		}
		return len(s.counts) - 1
	}
	k := countKey(parent, key)
	if i, ok := s.bigCounts[k]; ok {
		return int(i)
	}
	s.counts = append(s.counts, tagCount{tag: key})
	s.bigCounts[k] = int32(len(s.counts) - 1)
	return len(s.counts) - 1
}

// linearCounts is the number of distinct child tags up to which counter
// searches a parent's counts one by one.
const linearCounts = 16

func countKey(parent int32, key uint32) uint64 { return uint64(uint32(parent))<<32 | uint64(key) }

// pathKeys extends the three path keys of a parent by one step.
func pathKeys(pk, pl, pf uint64, tagKey uint32, id []byte, index int) (kind, loose, full uint64) {
	th := uint64(tagKey) * 0x9E3779B97F4A7C15
	kind = (pk^th)*hashPrime + 0x2f
	loose = hashBytes((pl^th)*hashPrime+0x23, id)
	full = mix(hashBytes((pf^th)*hashPrime+0x23, id), uint64(index))
	return
}

func (s *scanner) push(ei int32) {
	e := &s.d.elems[ei]
	n := int32(len(s.levels))
	lv := level{elem: ei}
	if n > 0 {
		up := &s.levels[n-1]
		lv.stop, lv.kind = up.stop, up.kind
	} else {
		for i := range lv.stop {
			lv.stop[i] = -1
		}
		for i := range lv.kind {
			lv.kind[i] = -1
		}
	}
	for i, f := range stopFlags {
		if e.info&f != 0 {
			lv.stop[i] = n
		}
	}
	if e.ck != ckNone {
		lv.kind[e.ck] = n
	}
	b := bucketOf(e.tagKey)
	lv.below, s.bucket[b] = s.bucket[b], n
	s.levels = append(s.levels, lv)
	s.countStart = append(s.countStart, int32(len(s.counts)))
	switch {
	case e.info&tiForeign != 0:
		s.foreign++
	case e.info&tiInvisible != 0:
		s.invisible++
	case e.info&tiLink != 0:
		s.links++
	case e.info&tiTitle != 0 && s.foreign == 0:
		s.inTitle = true
	}
}

func (s *scanner) pushPhantom(a step) {
	d := s.d
	// the phantom's names live in norm before the first token's form
	t0 := int32(len(d.norm))
	d.norm = append(d.norm, a.Tag...)
	i0 := int32(len(d.norm))
	d.norm = append(d.norm, a.ID...)
	e := elem{tagKey: tagKeyOf([]byte(a.Tag)), info: tagInfos[a.Tag], ck: closeKinds[a.Tag], parent: s.top(),
		tok: -1, endTok: -1, tag0: t0, tag1: i0, id0: i0, id1: int32(len(d.norm))}
	if e.parent >= 0 {
		e.flags = d.elems[e.parent].flags & eBoiler
	}
	if boilerTag([]byte(a.Tag)) {
		e.flags |= eBoiler
	}
	s.place(&e)
	if a.Index > 0 {
		// keep the index the page gave the ancestor, and count its
		// later siblings of the same tag from it (the next row of a
		// piece that starts inside row 8 is row 9, not row 2)
		s.counts[s.counter(e.parent, e.tagKey)].n = int32(a.Index)
		e.index = int32(a.Index)
		var pk, pl, pf uint64 = hashSeed, hashSeed, hashSeed
		if e.parent >= 0 {
			p := &d.elems[e.parent]
			pk, pl, pf = p.kind, p.loose, p.full
		}
		e.kind, e.loose, e.full = pathKeys(pk, pl, pf, e.tagKey, []byte(a.ID), a.Index)
	}
	d.elems = append(d.elems, e)
	s.push(int32(len(d.elems) - 1))
}

// pop closes the top element with an end token at [off, end).
func (s *scanner) pop(off, end int, synthetic bool) {
	s.d.w.add(1)
	lv := &s.levels[len(s.levels)-1]
	ei := lv.elem
	d := s.d
	e := &d.elems[ei]
	s.bucket[bucketOf(e.tagKey)] = lv.below
	s.levels = s.levels[:len(s.levels)-1]
	s.counts = s.counts[:s.countStart[len(s.countStart)-1]]
	s.countStart = s.countStart[:len(s.countStart)-1]
	switch {
	case e.info&tiForeign != 0:
		s.foreign--
	case e.info&tiInvisible != 0:
		s.invisible--
	case e.info&tiLink != 0:
		s.links--
	case e.info&tiTitle != 0:
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
	if e.info&tiBlock != 0 {
		fl |= fBreak
	}
	e.endTok = int32(len(d.toks))
	d.toks = append(d.toks, tok{kind: tEnd, flags: fl, elem: ei, off: int32(off), end: int32(end), norm: int32(len(d.norm))})
	d.norm = append(d.norm, '<', '/')
	d.norm = append(d.norm, d.norm[e.tag0:e.tag1]...)
	d.norm = append(d.norm, '>')
}

func (s *scanner) closeAll(at int) {
	for len(s.levels) > 0 {
		s.pop(at, at, true)
	}
}

func (s *scanner) endTag(tag []byte, off, end int) {
	info, key := s.tagOf(tag)
	if info&tiVoid != 0 {
		return
	}
	// What the end tag may not close across: a table closes across its
	// rows and cells, a row or cell across nothing but its table, an
	// inline element across no block, anything else across no cell.
	var stops tagInfo
	switch {
	case info&tiTable != 0:
		stops = tiRoot
	case info&tiTablePart != 0:
		stops = tiRoot | tiTable
	case info&(tiBlock|tiScope) == 0:
		stops = tiBlock | tiScope
	default:
		stops = tiScope
	}
	// The innermost open element of the tag, unless a stop is nearer.
	stop := s.innermostStop(stops)
	for l := s.bucket[bucketOf(key)]; l >= stop && l >= 0; l = s.levels[l].below {
		s.d.w.add(1)
		if s.d.elems[s.levels[l].elem].tagKey == key {
			for len(s.levels) > int(l)+1 {
				s.pop(off, off, true)
			}
			s.pop(off, end, false)
			return
		}
	}
}

// innermostStop is the level of the innermost open element with one of
// the stop flags (-1: none).
func (s *scanner) innermostStop(stops tagInfo) int32 {
	if len(s.levels) == 0 {
		return -1
	}
	lv := &s.levels[len(s.levels)-1]
	at := int32(-1)
	for i, f := range stopFlags {
		if stops&f != 0 {
			at = max(at, lv.stop[i])
		}
	}
	return at
}

// impliedClose closes the elements a start tag ends implicitly.
func (s *scanner) impliedClose(tag []byte, info tagInfo, off int) {
	if info&(tiCloseKind|tiPCloser|tiHeading) == 0 {
		return
	}
	switch string(tag) {
	case "li":
		s.closeIn(off, ckLI, ckNone, tiList|tiScope)
	case "dt", "dd":
		s.closeIn(off, ckDTDD, ckNone, tiDL|tiScope)
	case "tr":
		s.closeIn(off, ckTR, ckNone, tiTable|tiRoot)
	case "td", "th":
		s.closeIn(off, ckCell, ckNone, tiTR|tiTable|tiRoot)
	case "thead", "tbody", "tfoot":
		s.closeIn(off, ckTSection, ckNone, tiTable|tiRoot)
	case "option":
		s.closeIn(off, ckOption, ckNone, tiSelect|tiRoot)
	case "optgroup":
		s.closeIn(off, ckOption, ckOptgroup, tiSelect|tiRoot)
	case "a":
		s.closeIn(off, ckA, ckNone, tiScope)
	case "body":
		s.closeIn(off, ckHead, ckNone, tiRoot)
	}
	if info&tiPCloser != 0 {
		s.closeIn(off, ckP, ckNone, tiButtonScope)
	}
	if info&tiHeading != 0 {
		if t := s.top(); t >= 0 && s.d.elems[t].info&tiHeading != 0 {
			s.pop(off, off, true)
		}
	}
}

// closeIn closes the innermost open element of close kind k1 or k2, and
// everything above it, unless an element with a stop flag comes first.
func (s *scanner) closeIn(off int, k1, k2 uint8, stops tagInfo) {
	if len(s.levels) == 0 {
		return
	}
	lv := &s.levels[len(s.levels)-1]
	at := lv.kind[k1]
	if k2 != ckNone {
		at = max(at, lv.kind[k2])
	}
	if at < 0 || at < s.innermostStop(stops) {
		return
	}
	for len(s.levels) > int(at) {
		s.pop(off, off, true)
	}
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// blockElements are the tags tiBlock marks, for code outside the scanner.
var blockElements = func() map[string]bool {
	m := map[string]bool{}
	for t, f := range tagInfos {
		if f&tiBlock != 0 {
			m[t] = true
		}
	}
	return m
}()

// index fills the prefix sums used for subtree sizes and text densities.
func (d *doc) index() {
	if d.indexed {
		return
	}
	d.indexed = true
	n := len(d.toks)
	d.sig = reuse(d.sig, n+1)[:n+1]
	d.words = reuse(d.words, n+1)[:n+1]
	d.chars = reuse(d.chars, n+1)[:n+1]
	d.links = reuse(d.links, n+1)[:n+1]
	d.sig[0], d.words[0], d.chars[0], d.links[0] = 0, 0, 0, 0
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

// size is the number of significant tokens (elements and texts) in [a, b).
func (d *doc) size(a, b int) int {
	d.index()
	return int(d.sig[b] - d.sig[a])
}

// visibleText returns the text a reader sees in tokens [a, b): words joined
// by single spaces, block-level tags breaking words apart.
func (d *doc) visibleText(a, b int) string {
	size := 0
	for i := a; i < b && i < len(d.toks); i++ {
		if t := &d.toks[i]; t.kind == tText && t.flags&fVisible != 0 {
			size += len(d.textBytes(i)) + 1
		}
	}
	if size == 0 {
		return ""
	}
	var sb strings.Builder
	sb.Grow(size)
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
	var chain [64]int32
	n := 0
	for ; ei >= 0 && n < len(chain); ei = d.elems[ei].parent {
		chain[n] = ei
		n++
	}
	var sb strings.Builder
	sb.Grow(n * 8)
	for k := n - 1; k >= 0; k-- {
		e := &d.elems[chain[k]]
		if k < n-1 {
			sb.WriteByte('|')
		}
		sb.WriteString(d.tagOf(chain[k]))
		if e.id1 > e.id0 {
			sb.WriteByte('-')
			sb.Write(d.norm[e.id0:e.id1])
		}
		if e.index > 1 {
			sb.WriteByte('[')
			sb.WriteString(itoa(int(e.index)))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

// encodedPath returns the path of element ei as the layout writes it.
func (d *doc) encodedPath(ei int32) string {
	var chain [64]int32
	n := 0
	for ; ei >= 0 && n < len(chain); ei = d.elems[ei].parent {
		chain[n] = ei
		n++
	}
	var sb strings.Builder
	sb.Grow(n * 8)
	for k := n - 1; k >= 0; k-- {
		e := &d.elems[chain[k]]
		if k < n-1 {
			sb.WriteByte('|')
		}
		writeEscaped(&sb, d.tagOf(chain[k]))
		if e.id1 > e.id0 {
			sb.WriteByte('#')
			writeEscaped(&sb, string(d.norm[e.id0:e.id1]))
		}
		if e.index > 1 {
			sb.WriteByte('@')
			sb.WriteString(itoa(int(e.index)))
		}
	}
	return sb.String()
}

// writeEscaped writes s with the characters that structure a layout
// %-escaped.
func writeEscaped(sb *strings.Builder, s string) {
	if strings.IndexAny(s, "%|#@ \n\r") < 0 {
		sb.WriteString(s)
		return
	}
	sb.WriteString(stepEscaper.Replace(s))
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
