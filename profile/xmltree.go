package profile

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// This file reads an XML document into a small element tree with
// namespaces resolved, xml:lang and xml:base scoped and positions kept:
// the input of the RDF/XML grammar in rdfxml.go. encoding/xml's RawToken
// is used rather than Token because Token silently leaves undeclared
// prefixes in place; here they are errors, as XML Namespaces require.

// maxXMLDepth bounds element nesting, so hostile input cannot exhaust the stack.
const maxXMLDepth = 512

// maxEntityExpansion bounds the text that DOCTYPE entities may add.
const maxEntityExpansion = 8 << 20

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
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return r, nil
		case "utf-16", "utf-16le", "utf-16be", "ucs-2":
			// decodeBOM has already turned UTF-16 with a BOM into UTF-8;
			// reaching here means the bytes are ASCII-compatible.
			return r, nil
		}
		cr, err := charset.NewReaderLabel(label, r)
		if err != nil {
			return nil, fmt.Errorf("unsupported character encoding %q", label)
		}
		return cr, nil
	}
	entities, err := declaredEntities(data)
	if err != nil {
		return nil, err
	}
	d.Entity = entities

	initial := map[string]string{"xml": xmlNS}
	var (
		root   *xelem
		stack  []*xelem
		scopes []map[string]string
		first  = true
	)
	for {
		line, col := d.InputPos()
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, xmlError(err, d)
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
			p := stack[n-1]
			if k := len(p.kids); k > 0 && p.kids[k-1].el == nil && !p.kids[k-1].comment {
				p.kids[k-1].text += string(t)
			} else {
				p.kids = append(p.kids, xkid{text: string(t)})
			}
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

var (
	doctypeRE = regexp.MustCompile(`(?s)<!DOCTYPE\s[^\[>]*\[(.*?)\]\s*>`)
	entityRE  = regexp.MustCompile(`<!ENTITY\s+([^\s%]+)\s+(?:"([^"]*)"|'([^']*)')\s*>`)
	entRefRE  = regexp.MustCompile(`&([A-Za-z_][\w.\-]*);`)
)

// declaredEntities reads the general entities of the DOCTYPE's internal
// subset (RDF/XML documents often declare namespace IRIs as entities:
// <!ENTITY foaf "http://xmlns.com/foaf/0.1/">). It refuses declarations
// whose use would expand the document beyond maxEntityExpansion.
func declaredEntities(data []byte) (map[string]string, error) {
	ents := map[string]string{}
	if !bytes.Contains(data, []byte("<!DOCTYPE")) {
		return ents, nil
	}
	m := doctypeRE.FindSubmatch(data)
	if m == nil {
		return ents, nil
	}
	for _, e := range entityRE.FindAllSubmatch(m[1], -1) {
		name := string(e[1])
		val := string(e[2]) + string(e[3])
		val = entRefRE.ReplaceAllStringFunc(val, func(ref string) string {
			if v, ok := ents[ref[1:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
		val = expandCharRefs(val)
		if _, dup := ents[name]; !dup {
			ents[name] = val
		}
	}
	total := 0
	for _, r := range entRefRE.FindAllSubmatch(data, -1) {
		total += len(ents[string(r[1])])
		if total > maxEntityExpansion {
			return nil, &SyntaxError{Format: FormatRDFXML, Msg: fmt.Sprintf("DOCTYPE entities expand to more than %d bytes", maxEntityExpansion)}
		}
	}
	return ents, nil
}

var charRefRE = regexp.MustCompile(`&#(x[0-9A-Fa-f]+|[0-9]+);`)

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
