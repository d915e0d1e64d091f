package profile

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/changedigest/changedigest/internal/lazyregexp"
)

// This file reads an XML document into a small element tree with
// namespaces resolved, xml:lang and xml:base scoped and positions kept:
// the input of the RDF/XML grammar in rdfxml.go. encoding/xml's RawToken
// is used rather than Token because Token silently leaves undeclared
// prefixes in place; here they are errors, as XML Namespaces require.

// maxXMLDepth bounds element nesting, so hostile input cannot exhaust the stack.
const maxXMLDepth = 512

// Limits on the entities a DOCTYPE declares, checked while they are
// expanded, so that a few hundred bytes of nested declarations (the
// "billion laughs") are refused before they take memory or time.
const (
	// maxEntityExpansion bounds the text entities may add to a document,
	// and separately the text of all declared entities together.
	maxEntityExpansion = 8 << 20
	// minEntityExpansion is what entities may always add; beyond it they
	// may add at most entityAmplification times the document's size.
	minEntityExpansion = 1 << 20
	// entityAmplification bounds the expanded text against the document.
	entityAmplification = 8
	// maxEntityNesting bounds how deep entity values refer to other entities.
	maxEntityNesting = 16
	// maxEntityRefs bounds the entity references inside declarations.
	maxEntityRefs = 10000
)

// xelem is one XML element.
type xelem struct {
	ns, local, prefix string
	attrs             []xattr
	// lang and base are the xml:lang and xml:base in scope, this
	// element's own included.
	lang, base string
	kids       []xkid
	line, col  int
}

// xattr is one attribute other than a namespace declaration.
type xattr struct {
	ns, local, prefix, value string
}

// xkid is a child of an element: an element, text or a comment.
type xkid struct {
	el      *xelem
	text    string
	comment bool
}

// qname is the element's name as written.
func (e *xelem) qname() string {
	if e.prefix == "" {
		return e.local
	}
	return e.prefix + ":" + e.local
}

func (a xattr) qname() string {
	if a.prefix == "" {
		return a.local
	}
	return a.prefix + ":" + a.local
}

// text returns the concatenated text children and whether the element
// has element children.
func (e *xelem) text() (string, bool) {
	var b strings.Builder
	hasEl := false
	for _, k := range e.kids {
		switch {
		case k.el != nil:
			hasEl = true
		case !k.comment:
			b.WriteString(k.text)
		}
	}
	return b.String(), hasEl
}

// readXMLTree parses data as namespaced XML. base is the document's base IRI.
func readXMLTree(data []byte, base string) (*xelem, error) {
	data, err := decodeBOM(data)
	if err != nil {
		return nil, &SyntaxError{Format: FormatRDFXML, Msg: err.Error()}
	}
	// The entity limits count references in the bytes the decoder reads,
	// so the document is in UTF-8 before either looks at it.
	data, err = toUTF8(data)
	if err != nil {
		return nil, &SyntaxError{Format: FormatRDFXML, Msg: err.Error()}
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	// toUTF8 has decoded what the declaration names.
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }

	initial := map[string]string{"xml": xmlNS}
	var (
		root   *xelem
		stack  []*xelem
		scopes []map[string]string
		first  = true
		// text gathers the character data of the innermost open element
		// up to its next child or end tag: a run of CDATA sections or
		// processing instructions is many tokens, and joining them one
		// by one would take time quadratic in the run's length.
		text strings.Builder
	)
	flush := func() {
		if n := len(stack); n > 0 && text.Len() > 0 {
			p := stack[n-1]
			p.kids = append(p.kids, xkid{text: text.String()})
		}
		text.Reset()
	}
	for {
		line, col := d.InputPos()
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, xmlError(err, d)
		}
		switch tok.(type) {
		case xml.StartElement, xml.EndElement, xml.Comment:
			flush()
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil && len(stack) == 0 {
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
					Msg: fmt.Sprintf("second root element <%s> after the end of the document's root element", rawName(t.Name))}
			}
			if len(stack) >= maxXMLDepth {
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
					Msg: fmt.Sprintf("elements nested deeper than %d levels", maxXMLDepth)}
			}
			ns := initial
			el := &xelem{local: t.Name.Local, prefix: t.Name.Space, base: base, line: line, col: col}
			if n := len(stack); n > 0 {
				ns = scopes[n-1]
				el.lang, el.base = stack[n-1].lang, stack[n-1].base
			}
			ns, err = declareNamespaces(ns, t.Attr)
			if err != nil {
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col, Msg: err.Error()}
			}
			uri, ok := ns[el.prefix]
			if !ok && el.prefix != "" {
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
					Msg: fmt.Sprintf("namespace prefix %q of element <%s> is not declared", el.prefix, el.qname())}
			}
			el.ns = uri
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
					continue
				}
				x := xattr{local: a.Name.Local, prefix: a.Name.Space, value: normaliseAttr(a.Value)}
				if x.prefix != "" {
					u, ok := ns[x.prefix]
					if !ok {
						return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
							Msg: fmt.Sprintf("namespace prefix %q of attribute %s is not declared", x.prefix, x.qname())}
					}
					x.ns = u
				}
				if x.ns == xmlNS {
					switch x.local {
					case "lang":
						lang, ok := languageTag(x.value)
						if !ok {
							return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
								Msg: fmt.Sprintf("xml:lang=%q is not a language tag", x.value)}
						}
						el.lang = lang
					case "base":
						el.base = resolveIRI(el.base, x.value)
					}
				}
				el.attrs = append(el.attrs, x)
			}
			if n := len(stack); n > 0 {
				p := stack[n-1]
				p.kids = append(p.kids, xkid{el: el})
			} else {
				root = el
			}
			stack = append(stack, el)
			scopes = append(scopes, ns)
		case xml.EndElement:
			n := len(stack)
			if n == 0 || stack[n-1].prefix != t.Name.Space || stack[n-1].local != t.Name.Local {
				want := "no open element"
				if n > 0 {
					want = "</" + stack[n-1].qname() + "> expected"
				}
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
					Msg: fmt.Sprintf("unexpected end tag </%s> (%s)", rawName(t.Name), want)}
			}
			stack, scopes = stack[:n-1], scopes[:n-1]
		case xml.CharData:
			n := len(stack)
			if n == 0 {
				if s := strings.TrimSpace(string(t)); s != "" {
					where := "before"
					if root != nil {
						where = "after"
					}
					return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
						Msg: fmt.Sprintf("text %q %s the root element", abbreviate(s, 30), where)}
				}
				break
			}
			text.Write(t)
		case xml.Comment:
			if n := len(stack); n > 0 {
				p := stack[n-1]
				p.kids = append(p.kids, xkid{text: string(t), comment: true})
			}
		case xml.ProcInst:
			if t.Target == "xml" && !first {
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
					Msg: "the XML declaration <?xml ...?> is not at the start of the document"}
			}
		case xml.Directive:
			if root != nil {
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
					Msg: "<!" + abbreviate(string(t), 20) + "> inside the document"}
			}
			if !bytes.HasPrefix(t, []byte("DOCTYPE")) {
				break
			}
			if d.Entity != nil {
				return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col, Msg: "a second <!DOCTYPE>"}
			}
			// The entities are read from the declaration as the decoder
			// delimited it, and their references counted in the bytes it
			// reads next, before it expands any of them.
			ents, err := declaredEntities(t, data[d.InputOffset():], len(data))
			if err != nil {
				var se *SyntaxError
				if errors.As(err, &se) {
					se.Line += line - 1
				}
				return nil, err
			}
			d.Entity = ents
		}
		first = false
	}
	if n := len(stack); n > 0 {
		line, col := d.InputPos()
		return nil, &SyntaxError{Format: FormatRDFXML, Line: line, Column: col,
			Msg: fmt.Sprintf("unexpected end of document: <%s> (line %d) is not closed", stack[n-1].qname(), stack[n-1].line)}
	}
	if root == nil {
		return nil, fmt.Errorf("%w: no XML element in the document", ErrEmpty)
	}
	return root, nil
}

// languageTag checks an xml:lang value against the BCP 47 syntax
// (letters, then '-'-separated letters and digits), accepting '_' for '-'
// as some documents write "en_GB". The empty value is valid: it removes
// the language in scope.
func languageTag(s string) (string, bool) {
	if s == "" {
		return "", true
	}
	s = strings.ReplaceAll(strings.TrimSpace(s), "_", "-")
	for i, part := range strings.Split(s, "-") {
		if part == "" || len(part) > 8 {
			return "", false
		}
		for j := 0; j < len(part); j++ {
			if !isAlpha(part[j]) && (i == 0 || !isDigit(part[j])) {
				return "", false
			}
		}
	}
	return s, true
}

// normaliseAttr applies XML 1.0 attribute-value normalisation (section
// 3.3.3), which encoding/xml leaves out: each tab or line break becomes a
// space.
func normaliseAttr(s string) string {
	if !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// declareNamespaces returns the scope for an element: ns with the
// element's own xmlns declarations added (copied on write).
func declareNamespaces(ns map[string]string, attrs []xml.Attr) (map[string]string, error) {
	copied := false
	for _, a := range attrs {
		var prefix string
		switch {
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			prefix = ""
		case a.Name.Space == "xmlns":
			prefix = a.Name.Local
			if a.Value == "" {
				return nil, fmt.Errorf("namespace prefix %q is declared with an empty name", prefix)
			}
			if (prefix == "xml") != (a.Value == xmlNS) || prefix == "xmlns" || a.Value == xmlnsNS {
				return nil, fmt.Errorf("reserved namespace prefix or name in xmlns:%s=%q", prefix, a.Value)
			}
		default:
			continue
		}
		if !copied {
			m := make(map[string]string, len(ns)+2)
			for k, v := range ns {
				m[k] = v
			}
			ns, copied = m, true
		}
		ns[prefix] = a.Value
	}
	return ns, nil
}

// xmlError turns an encoding/xml error into a *SyntaxError.
func xmlError(err error, d *xml.Decoder) error {
	line, col := d.InputPos()
	msg := err.Error()
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		msg = se.Msg
		if se.Line != line {
			line, col = se.Line, 0
		}
	}
	return &SyntaxError{Format: FormatRDFXML, Line: line, Column: col, Msg: "not well-formed XML: " + msg}
}

func rawName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

// decodeBOM turns UTF-16 with a byte order mark into UTF-8 and drops a
// UTF-8 BOM. Other encodings are left to the XML declaration.
func decodeBOM(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return data[3:], nil
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}), bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		out, _, err := transform.Bytes(unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder(), data)
		if err != nil {
			return nil, fmt.Errorf("bad UTF-16 text: %v", err)
		}
		return out, nil
	}
	return data, nil
}

// xmlDeclRE finds the encoding an XML declaration names.
var xmlDeclRE = lazyregexp.New(`^<\?xml\s[^>]*?\bencoding\s*=\s*["']([^"']*)["']`)

// toUTF8 decodes a document whose XML declaration names an encoding other
// than UTF-8 (decodeBOM has turned UTF-16 with a byte order mark into
// UTF-8 already; UTF-16 named without one leaves ASCII-compatible bytes).
// Errors: an encoding it does not know.
func toUTF8(data []byte) ([]byte, error) {
	m := xmlDeclRE.FindSubmatch(data)
	if m == nil {
		return data, nil
	}
	label := strings.ToLower(strings.TrimSpace(string(m[1])))
	switch label {
	case "utf-8", "utf8", "us-ascii", "ascii", "utf-16", "utf-16le", "utf-16be", "ucs-2":
		return data, nil
	}
	enc, _ := charset.Lookup(label)
	if enc == nil {
		return nil, fmt.Errorf("unsupported character encoding %q", string(m[1]))
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return nil, fmt.Errorf("bad %s text: %v", label, err)
	}
	return out, nil
}

var (
	// internalSubsetRE finds the internal subset of a DOCTYPE directive.
	internalSubsetRE = lazyregexp.New(`(?s)^DOCTYPE\s[^\[]*\[(.*)\]\s*$`)
	entityRE         = lazyregexp.New(`<!ENTITY\s+([^\s%]+)\s+(?:"([^"]*)"|'([^']*)')\s*>`)
	entRefRE         = lazyregexp.New(`&([A-Za-z_][\w.\-]*);`)
)

// predefinedEntities are the entities XML declares itself.
var predefinedEntities = map[string]string{"amp": "&", "lt": "<", "gt": ">", "quot": `"`, "apos": "'"}

// entityBudget is how many bytes entities may expand to in a document of
// n bytes: entityAmplification times its size, at least
// minEntityExpansion and at most maxEntityExpansion.
func entityBudget(n int) int {
	return min(max(entityAmplification*n, minEntityExpansion), maxEntityExpansion)
}

// declaredEntities reads the general entities of the internal subset of
// doctype, a <!DOCTYPE> declaration as the decoder returns it (without
// "<!" and ">"). RDF/XML documents often declare namespace IRIs as
// entities: <!ENTITY foaf "http://xmlns.com/foaf/0.1/">. A reference in a
// value to an entity declared before it, or to one XML predefines, is
// replaced by that entity's text; any other reference stays as it is
// written. Parameter and
// external entities are not read, so references to them fail as
// undeclared.
//
// The expansion is bounded while it happens, so that a few hundred bytes
// of nested declarations (the "billion laughs") are refused at once: a
// *SyntaxError (its line counted from the declaration's) refuses
// declarations nested deeper than maxEntityNesting, holding more than
// maxEntityRefs references in all or whose text together would exceed
// entityBudget(size), where size is the document's length; and it
// refuses references in rest, the rest of the document, that would add
// more than entityBudget(size) bytes. The decoder inserts an entity's
// text once for each reference in the bytes it reads and never scans the
// inserted text again, so counting them in rest bounds what it expands.
func declaredEntities(doctype, rest []byte, size int) (map[string]string, error) {
	ents := map[string]string{}
	m := internalSubsetRE.FindSubmatchIndex(doctype)
	if m == nil {
		return ents, nil
	}
	budget := entityBudget(size)
	// refused locates an error at byte at of the declaration (at <=
	// len(doctype)) or of rest (at > len(doctype), counted from the
	// start of the declaration): lines are counted only on failure.
	refused := func(at int, format string, args ...any) error {
		line := 1 + bytes.Count(doctype[:min(at, len(doctype))], []byte("\n"))
		if at > len(doctype) {
			line += bytes.Count(rest[:at-len(doctype)], []byte("\n"))
		}
		return &SyntaxError{Format: FormatRDFXML, Line: line, Msg: "entity expansion refused: " + fmt.Sprintf(format, args...)}
	}
	subset := doctype[m[2]:m[3]]
	depth := map[string]int{} // how deep each entity's value refers to others
	total, refs := 0, 0       // text of the entities so far; references in their values
	for _, e := range entityRE.FindAllSubmatchIndex(subset, -1) {
		name := string(subset[e[2]:e[3]])
		var val []byte // the value within its quotes, double or single
		if e[4] >= 0 {
			val = subset[e[4]:e[5]]
		} else {
			val = subset[e[6]:e[7]]
		}
		at := m[2] + e[0]
		var b strings.Builder
		d := 0
		for len(val) > 0 {
			r := entRefRE.FindSubmatchIndex(val)
			if r == nil {
				r = []int{len(val), len(val), len(val), len(val)}
			}
			lit := val[:r[0]]
			ref := string(val[r[2]:r[3]])
			v, ok := ents[ref]
			if !ok {
				v, ok = predefinedEntities[ref]
			}
			if !ok {
				lit = val[:r[1]] // not declared before: kept as written
			}
			if total+b.Len()+len(lit)+len(v) > budget {
				return nil, refused(at, "the DOCTYPE's entities, up to %q, expand to more than %d bytes, the limit for a document of %d bytes",
					name, budget, size)
			}
			b.Write(lit)
			if ok {
				if refs++; refs > maxEntityRefs {
					return nil, refused(at, "the DOCTYPE's entities, up to %q, hold more than %d entity references", name, maxEntityRefs)
				}
				if d = max(d, depth[ref]+1); d > maxEntityNesting {
					return nil, refused(at, "DOCTYPE entity %q nests entity references more than %d deep", name, maxEntityNesting)
				}
				b.WriteString(v)
			}
			val = val[r[1]:]
		}
		if _, dup := ents[name]; !dup {
			v := expandCharRefs(b.String())
			ents[name], depth[name] = v, d
			total += len(v)
		}
	}
	added := 0
	for pos := 0; ; {
		r := entRefRE.FindSubmatchIndex(rest[pos:])
		if r == nil {
			break
		}
		if added += len(ents[string(rest[pos+r[2]:pos+r[3]])]); added > budget {
			return nil, refused(len(doctype)+1+pos+r[0],
				"the document's entity references expand to more than %d bytes, the limit for a document of %d bytes", budget, size)
		}
		pos += r[1]
	}
	return ents, nil
}

var charRefRE = lazyregexp.New(`&#(x[0-9A-Fa-f]+|[0-9]+);`)

func expandCharRefs(s string) string {
	return charRefRE.ReplaceAllStringFunc(s, func(ref string) string {
		var r rune
		var err error
		body := ref[2 : len(ref)-1]
		if body[0] == 'x' {
			_, err = fmt.Sscanf(body[1:], "%x", &r)
		} else {
			_, err = fmt.Sscanf(body, "%d", &r)
		}
		if err != nil || !utf8.ValidRune(r) {
			return ref
		}
		return string(r)
	})
}

// abbreviate shortens s to about n runes for messages.
func abbreviate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
