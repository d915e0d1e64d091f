package profile

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file reads Turtle ("RDF 1.1 Turtle", W3C Recommendation, 25
// February 2014) and N-Triples, its line-based subset, by recursive
// descent over the grammar of section 6.5. github.com/knakk/rdf was tried
// first and rejected: it resolves relative IRIs by appending them to the
// base (<foo> against http://x.org/dir/card.ttl gives
// http://x.org/dir/card.ttlfoo, and @base <sub/> is appended the same
// way), so WebID cards with relative IRIs come out wrong.

// maxTurtleDepth bounds the nesting of [ ] and ( ).
const maxTurtleDepth = 256

type turtleParser struct {
	src      string
	pos      int
	format   Format
	base     string
	prefixes map[string]string
	labels   map[string]term
	blanks   int
	depth    int
	triples  []triple
}

// parseTurtle reads a Turtle document into triples.
func parseTurtle(src, base string) ([]triple, error) {
	return runTurtle(&turtleParser{src: src, format: FormatTurtle, base: base})
}

// parseNTriples reads an N-Triples document into triples. IRIs are taken
// as written (N-Triples has no base), so relative IRIs that some writers
// emit survive unchanged.
func parseNTriples(src string) ([]triple, error) {
	return runTurtle(&turtleParser{src: src, format: FormatNTriples})
}

// turtleAbort carries a syntax error up the recursive descent.
type turtleAbort struct{ err *SyntaxError }

func runTurtle(p *turtleParser) (ts []triple, err error) {
	p.prefixes = map[string]string{}
	p.labels = map[string]term{}
	if !utf8.ValidString(p.src) {
		i := 0
		for i < len(p.src) {
			r, n := utf8.DecodeRuneInString(p.src[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		p.pos = i
		return nil, p.errAt(i, "the document is not valid UTF-8 (byte 0x%02X)", p.src[i])
	}
	p.src = strings.TrimPrefix(p.src, "\uFEFF")
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(turtleAbort)
			if !ok {
				panic(r)
			}
			ts, err = nil, a.err
		}
	}()
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			break
		}
		p.statement()
	}
	return p.triples, nil
}

// errAt builds a *SyntaxError for the byte offset off.
func (p *turtleParser) errAt(off int, format string, args ...any) *SyntaxError {
	if off > len(p.src) {
		off = len(p.src)
	}
	line := 1 + strings.Count(p.src[:off], "\n")
	ls := strings.LastIndexByte(p.src[:off], '\n') + 1
	col := 1 + utf8.RuneCountInString(p.src[ls:off])
	return &SyntaxError{Format: p.format, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *turtleParser) fail(format string, args ...any) {
	panic(turtleAbort{p.errAt(p.pos, format, args...)})
}

func (p *turtleParser) failAt(off int, format string, args ...any) {
	panic(turtleAbort{p.errAt(off, format, args...)})
}

// found describes what is at the current position, for messages.
func (p *turtleParser) found() string {
	if p.pos >= len(p.src) {
		return "the end of the document"
	}
	s := p.src[p.pos:]
	if i := strings.IndexAny(s, " \t\r\n"); i > 0 {
		s = s[:i]
	}
	return strconv.Quote(abbreviate(s, 20))
}

func (p *turtleParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *turtleParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		case '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *turtleParser) expect(c byte, context string) {
	p.skipSpace()
	if p.peek() != c {
		p.fail("expected '%c' %s, found %s", c, context, p.found())
	}
	p.pos++
}

func (p *turtleParser) nt() bool { return p.format == FormatNTriples }

func (p *turtleParser) emit(s, pr, o term) { p.triples = append(p.triples, triple{s, pr, o}) }

func (p *turtleParser) newBlank() term {
	p.blanks++
	return blank("b" + strconv.Itoa(p.blanks))
}

// hasKeyword reports whether keyword kw followed by a character that
// cannot continue a name is at the current position. SPARQL-style
// keywords (PREFIX, BASE) match in any case, the others exactly.
func (p *turtleParser) hasKeyword(kw string) bool {
	end := p.pos + len(kw)
	if end > len(p.src) {
		return false
	}
	got := p.src[p.pos:end]
	if got != kw && !(kw == "PREFIX" || kw == "BASE") || !strings.EqualFold(got, kw) {
		return false
	}
	if end == len(p.src) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(p.src[end:])
	return !isPNChars(r) && r != ':'
}

func (p *turtleParser) statement() {
	start := p.pos
	switch {
	case p.peek() == '@':
		if p.nt() {
			p.fail("directives are not allowed in N-Triples")
		}
		end := p.pos + 1
		for end < len(p.src) && isAlpha(p.src[end]) {
			end++
		}
		switch p.src[p.pos:end] {
		case "@prefix":
			p.pos = end
			p.prefixDecl()
			p.expect('.', "after @prefix")
		case "@base":
			p.pos = end
			p.baseDecl()
			p.expect('.', "after @base")
		default:
			p.fail("unknown directive %s (want @prefix or @base)", p.found())
		}
		return
	case !p.nt() && p.hasKeyword("PREFIX"):
		p.pos += len("PREFIX")
		p.prefixDecl()
		return
	case !p.nt() && p.hasKeyword("BASE"):
		p.pos += len("BASE")
		p.baseDecl()
		return
	}
	p.triplesStatement()
	p.skipSpace()
	if p.peek() != '.' {
		if p.pos >= len(p.src) {
			p.fail("the statement starting at line %d does not end with '.'", p.errAt(start, "").Line)
		}
		p.fail("expected '.' at the end of the statement, found %s", p.found())
	}
	p.pos++
}

func (p *turtleParser) prefixDecl() {
	p.skipSpace()
	start := p.pos
	prefix := p.pnPrefix()
	if p.peek() != ':' {
		p.failAt(start, "expected a prefix name ending in ':' after PREFIX, found %s", p.found())
	}
	p.pos++
	p.skipSpace()
	if p.peek() != '<' {
		p.fail("expected an <IRI> for prefix %q, found %s", prefix+":", p.found())
	}
	p.prefixes[prefix] = p.iriRef()
}

func (p *turtleParser) baseDecl() {
	p.skipSpace()
	if p.peek() != '<' {
		p.fail("expected an <IRI> after BASE, found %s", p.found())
	}
	p.base = p.iriRef()
}

func (p *turtleParser) triplesStatement() {
	if p.peek() == '[' && !p.nt() {
		save := p.pos
		p.pos++
		p.skipSpace()
		if p.peek() == ']' { // [] as a subject
			p.pos++
			p.predicateObjectList(p.newBlank(), false)
			return
		}
		p.pos = save
		subj := p.blankNodePropertyList()
		p.skipSpace()
		if p.peek() != '.' {
			p.predicateObjectList(subj, false)
		}
		return
	}
	subj := p.subject()
	p.predicateObjectList(subj, false)
}

func (p *turtleParser) subject() term {
	p.skipSpace()
	switch c := p.peek(); {
	case c == '<':
		return iri(p.iriRef())
	case c == '_':
		return p.blankLabel()
	case c == '(' && !p.nt():
		return p.collection()
	case p.nt():
		p.fail("expected a subject (<IRI> or _:label), found %s", p.found())
	}
	if t, ok := p.prefixedName(); ok {
		return t
	}
	p.fail("expected a subject (IRI, prefixed name, blank node or collection), found %s", p.found())
	return term{}
}

// predicateObjectList reads verb objectList (';' (verb objectList)?)*.
// In a blank node property list it stops before ']'.
func (p *turtleParser) predicateObjectList(subj term, inBrackets bool) {
	for {
		p.skipSpace()
		pred := p.verb()
		p.objectList(subj, pred)
		p.skipSpace()
		if p.peek() != ';' {
			return
		}
		if p.nt() {
			p.fail("';' is not allowed in N-Triples")
		}
		for p.peek() == ';' {
			p.pos++
			p.skipSpace()
		}
		if c := p.peek(); c == '.' || c == 0 || (inBrackets && c == ']') {
			return
		}
	}
}

func (p *turtleParser) verb() term {
	if !p.nt() && p.peek() == 'a' && p.hasKeyword("a") {
		p.pos++
		return iri(rdfType)
	}
	switch c := p.peek(); {
	case c == '<':
		return iri(p.iriRef())
	case p.nt():
		p.fail("expected a predicate <IRI>, found %s", p.found())
	}
	if t, ok := p.prefixedName(); ok {
		return t
	}
	p.fail("expected a predicate (IRI, prefixed name or 'a'), found %s", p.found())
	return term{}
}

func (p *turtleParser) objectList(subj, pred term) {
	for {
		o := p.object()
		p.emit(subj, pred, o)
		p.skipSpace()
		if p.peek() != ',' {
			return
		}
		if p.nt() {
			p.fail("',' is not allowed in N-Triples")
		}
		p.pos++
	}
}

func (p *turtleParser) object() term {
	p.skipSpace()
	c := p.peek()
	switch {
	case c == '<':
		return iri(p.iriRef())
	case c == '_':
		return p.blankLabel()
	case c == '"':
		return p.rdfLiteral()
	case p.nt():
		p.fail("expected an object (<IRI>, _:label or \"literal\"), found %s", p.found())
	case c == '\'':
		return p.rdfLiteral()
	case c == '[':
		save := p.pos
		p.pos++
		p.skipSpace()
		if p.peek() == ']' {
			p.pos++
			return p.newBlank()
		}
		p.pos = save
		return p.blankNodePropertyList()
	case c == '(':
		return p.collection()
	case c == '+' || c == '-' || (c >= '0' && c <= '9') ||
		(c == '.' && p.pos+1 < len(p.src) && isDigit(p.src[p.pos+1])):
		return p.numericLiteral()
	case p.hasKeyword("true"):
		p.pos += 4
		return literal("true", "", xsdBoolean)
	case p.hasKeyword("false"):
		p.pos += 5
		return literal("false", "", xsdBoolean)
	}
	if t, ok := p.prefixedName(); ok {
		return t
	}
	p.fail("expected an object (IRI, prefixed name, blank node, collection or literal), found %s", p.found())
	return term{}
}

func (p *turtleParser) enter() {
	p.depth++
	if p.depth > maxTurtleDepth {
		p.fail("brackets nested deeper than %d levels", maxTurtleDepth)
	}
}

func (p *turtleParser) blankNodePropertyList() term {
	start := p.pos
	p.enter()
	p.pos++ // '['
	n := p.newBlank()
	p.predicateObjectList(n, true)
	p.skipSpace()
	if p.peek() != ']' {
		if p.pos >= len(p.src) {
			p.failAt(start, "'[' is never closed")
		}
		p.fail("expected ']' to close the '[' at line %d, found %s", p.errAt(start, "").Line, p.found())
	}
	p.pos++
	p.depth--
	return n
}

func (p *turtleParser) collection() term {
	start := p.pos
	p.enter()
	p.pos++ // '('
	var items []term
	for {
		p.skipSpace()
		if p.peek() == ')' {
			p.pos++
			break
		}
		if p.pos >= len(p.src) {
			p.failAt(start, "'(' is never closed")
		}
		items = append(items, p.object())
	}
	p.depth--
	if len(items) == 0 {
		return iri(rdfNil)
	}
	cells := make([]term, len(items))
	for i := range cells {
		cells[i] = p.newBlank()
	}
	for i, c := range cells {
		p.emit(c, iri(rdfFirst), items[i])
		next := iri(rdfNil)
		if i+1 < len(cells) {
			next = cells[i+1]
		}
		p.emit(c, iri(rdfRest), next)
	}
	return cells[0]
}

// iriRef reads <...> and resolves it against the base (Turtle only).
func (p *turtleParser) iriRef() string {
	start := p.pos
	p.pos++ // '<'
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			p.failAt(start, "'<' of an IRI is never closed by '>'")
		}
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		switch {
		case r == '>':
			p.pos++
			s := b.String()
			if p.nt() {
				return s
			}
			return resolveIRI(p.base, s)
		case r == '\\':
			b.WriteRune(p.uchar(true))
			continue
		case r <= ' ' || strings.ContainsRune("<\"{}|^`", r):
			p.fail("character %q is not allowed in an IRI", r)
		}
		b.WriteRune(r)
		p.pos += n
	}
}

// uchar reads \uXXXX or \UXXXXXXXX; with onlyU other escapes are errors.
func (p *turtleParser) uchar(onlyU bool) rune {
	start := p.pos
	if p.pos+1 >= len(p.src) {
		p.fail("incomplete escape at the end of the document")
	}
	c := p.src[p.pos+1]
	size := 0
	switch c {
	case 'u':
		size = 4
	case 'U':
		size = 8
	default:
		if onlyU {
			p.fail("escape \\%c is not allowed here (only \\u and \\U)", c)
		}
		p.pos += 2
		switch c {
		case 't':
			return '\t'
		case 'b':
			return '\b'
		case 'n':
			return '\n'
		case 'r':
			return '\r'
		case 'f':
			return '\f'
		case '"', '\'', '\\':
			return rune(c)
		}
		p.failAt(start, "unknown escape \\%c", c)
	}
	if p.pos+2+size > len(p.src) {
		p.fail("incomplete \\%c escape", c)
	}
	hex := p.src[p.pos+2 : p.pos+2+size]
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil {
		p.fail("bad hex digits in \\%c%s", c, hex)
	}
	r := rune(v)
	if !utf8.ValidRune(r) {
		p.fail("\\%c%s is not a Unicode character", c, hex)
	}
	p.pos += 2 + size
	return r
}

func (p *turtleParser) blankLabel() term {
	start := p.pos
	if !strings.HasPrefix(p.src[p.pos:], "_:") {
		p.fail("expected a blank node label _:name, found %s", p.found())
	}
	p.pos += 2
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	if !(isPNCharsU(r) || (r >= '0' && r <= '9')) {
		p.fail("bad blank node label, found %s", p.found())
	}
	p.pos += n
	p.pos = p.scanNameTail(p.pos, false)
	label := p.src[start+2 : p.pos]
	if t, ok := p.labels[label]; ok {
		return t
	}
	t := p.newBlank()
	p.labels[label] = t
	return t
}

// scanNameTail scans (PN_CHARS | '.' [| ':' | PLX])* not ending in '.',
// from i, and returns the end. local allows the PN_LOCAL extras.
func (p *turtleParser) scanNameTail(i int, local bool) int {
	end := i
	for i < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[i:])
		switch {
		case isPNChars(r) || (local && r == ':'):
			i += n
			end = i
		case r == '.':
			i += n
		case local && r == '%':
			if i+2 >= len(p.src) || !isHex(p.src[i+1]) || !isHex(p.src[i+2]) {
				p.failAt(i, "'%%' in a local name must be followed by two hex digits")
			}
			i += 3
			end = i
		case local && r == '\\':
			if i+1 >= len(p.src) || !strings.ContainsRune("_~.-!$&'()*+,;=/?#@%", rune(p.src[i+1])) {
				p.failAt(i, "bad escape in a local name")
			}
			i += 2
			end = i
		default:
			return end
		}
	}
	return end
}

// pnPrefix reads an optional PN_PREFIX (it may be empty).
func (p *turtleParser) pnPrefix() string {
	start := p.pos
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	if p.pos >= len(p.src) || !isPNCharsBase(r) {
		return ""
	}
	p.pos = p.scanNameTail(p.pos+n, false)
	return p.src[start:p.pos]
}

// prefixedName reads prefix:local and expands it.
func (p *turtleParser) prefixedName() (term, bool) {
	start := p.pos
	prefix := p.pnPrefix()
	if p.peek() != ':' {
		p.pos = start
		return term{}, false
	}
	p.pos++
	ns, ok := p.prefixes[prefix]
	if !ok {
		p.failAt(start, "prefix %q is not declared", prefix+":")
	}
	ls := p.pos
	if p.pos < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if isPNCharsU(r) || r == ':' || (r >= '0' && r <= '9') || r == '%' || r == '\\' {
			if r == '%' || r == '\\' {
				p.pos = p.scanNameTail(p.pos, true)
			} else {
				p.pos = p.scanNameTail(p.pos+n, true)
			}
		}
	}
	return iri(ns + unescapeLocal(p.src[ls:p.pos])), true
}

func unescapeLocal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (p *turtleParser) rdfLiteral() term {
	lex := p.stringLiteral()
	switch {
	case p.peek() == '@':
		p.pos++
		start := p.pos
		for p.pos < len(p.src) && isAlpha(p.src[p.pos]) {
			p.pos++
		}
		if p.pos == start {
			p.fail("expected a language tag after '@', found %s", p.found())
		}
		for p.peek() == '-' {
			p.pos++
			s := p.pos
			for p.pos < len(p.src) && (isAlpha(p.src[p.pos]) || isDigit(p.src[p.pos])) {
				p.pos++
			}
			if p.pos == s {
				p.fail("bad language tag")
			}
		}
		return literal(lex, p.src[start:p.pos], "")
	case strings.HasPrefix(p.src[p.pos:], "^^"):
		p.pos += 2
		if p.peek() == '<' {
			return literal(lex, "", p.iriRef())
		}
		if p.nt() {
			p.fail("expected a datatype <IRI> after '^^', found %s", p.found())
		}
		if t, ok := p.prefixedName(); ok {
			return literal(lex, "", t.value)
		}
		p.fail("expected a datatype IRI after '^^', found %s", p.found())
	}
	return literal(lex, "", "")
}

func (p *turtleParser) stringLiteral() string {
	start := p.pos
	q := p.src[p.pos]
	long := !p.nt() && strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3))
	if long {
		p.pos += 3
	} else {
		p.pos++
	}
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			p.failAt(start, "string is never closed")
		}
		c := p.src[p.pos]
		switch {
		case c == q && !long:
			p.pos++
			return b.String()
		case c == q && strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3)):
			// A long string may end with up to two more quote characters.
			for strings.HasPrefix(p.src[p.pos+1:], strings.Repeat(string(q), 3)) {
				b.WriteByte(q)
				p.pos++
			}
			p.pos += 3
			return b.String()
		case c == '\\':
			b.WriteRune(p.uchar(false))
			continue
		case !long && (c == '\n' || c == '\r'):
			p.fail("line break inside a string (use \\n or a \"\"\"long string\"\"\")")
		}
		b.WriteByte(c)
		p.pos++
	}
}

func (p *turtleParser) numericLiteral() term {
	start := p.pos
	i := p.pos
	if i < len(p.src) && (p.src[i] == '+' || p.src[i] == '-') {
		i++
	}
	intStart := i
	for i < len(p.src) && isDigit(p.src[i]) {
		i++
	}
	intDigits := i - intStart
	dt := xsdInteger
	if i < len(p.src) && p.src[i] == '.' {
		j := i + 1
		for j < len(p.src) && isDigit(p.src[j]) {
			j++
		}
		frac := j - i - 1
		if frac > 0 || (intDigits > 0 && j < len(p.src) && (p.src[j] == 'e' || p.src[j] == 'E')) {
			i, dt = j, xsdDecimal
		}
	}
	if intDigits == 0 && dt == xsdInteger {
		p.fail("expected a number, found %s", p.found())
	}
	if i < len(p.src) && (p.src[i] == 'e' || p.src[i] == 'E') {
		j := i + 1
		if j < len(p.src) && (p.src[j] == '+' || p.src[j] == '-') {
			j++
		}
		k := j
		for k < len(p.src) && isDigit(p.src[k]) {
			k++
		}
		if k == j {
			p.failAt(i, "exponent without digits")
		}
		i, dt = k, xsdDouble
	}
	p.pos = i
	return literal(p.src[start:i], "", dt)
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// PN_CHARS_BASE of the Turtle grammar.
func isPNCharsBase(r rune) bool {
	switch {
	case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		return true
	case r >= 0xC0 && r <= 0xD6, r >= 0xD8 && r <= 0xF6, r >= 0xF8 && r <= 0x2FF,
		r >= 0x370 && r <= 0x37D, r >= 0x37F && r <= 0x1FFF, r >= 0x200C && r <= 0x200D,
		r >= 0x2070 && r <= 0x218F, r >= 0x2C00 && r <= 0x2FEF, r >= 0x3001 && r <= 0xD7FF,
		r >= 0xF900 && r <= 0xFDCF, r >= 0xFDF0 && r <= 0xFFFD, r >= 0x10000 && r <= 0xEFFFF:
		return r != utf8.RuneError
	}
	return false
}

func isPNCharsU(r rune) bool { return isPNCharsBase(r) || r == '_' }

func isPNChars(r rune) bool {
	return isPNCharsU(r) || r == '-' || (r >= '0' && r <= '9') || r == 0xB7 ||
		(r >= 0x300 && r <= 0x36F) || (r >= 0x203F && r <= 0x2040)
}
