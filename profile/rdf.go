package profile

import (
	"strconv"
	"strings"
)

// This file holds the RDF data model the readers produce: terms, triples
// and the IRI resolution all three syntaxes share. The types are private:
// they are the wire form of a FOAF document, adapted into a
// changedigest.Profile by foaf.go.

// termKind says what an RDF term is.
type termKind uint8

const (
	iriTerm termKind = iota + 1
	blankTerm
	literalTerm
)

// term is an RDF term: an IRI, a blank node or a literal.
type term struct {
	kind termKind
	// value is the IRI, the blank node label or the literal's lexical form.
	value string
	// lang is a literal's language tag; datatype a literal's datatype IRI,
	// empty for plain (xsd:string) and language-tagged literals.
	lang     string
	datatype string
}

// triple is one RDF statement.
type triple struct {
	s, p, o term
}

func iri(s string) term   { return term{kind: iriTerm, value: s} }
func blank(s string) term { return term{kind: blankTerm, value: s} }

// literal makes a literal term. Language tags are case-insensitive (BCP
// 47); they are kept in lower case, as raptor writes them.
func literal(s, lang, datatype string) term {
	return term{kind: literalTerm, value: s, lang: strings.ToLower(lang), datatype: datatype}
}

func (t term) isIRI() bool     { return t.kind == iriTerm }
func (t term) isBlank() bool   { return t.kind == blankTerm }
func (t term) isLiteral() bool { return t.kind == literalTerm }

// String writes the term as in N-Triples.
func (t term) String() string {
	switch t.kind {
	case iriTerm:
		return "<" + escapeIRI(t.value) + ">"
	case blankTerm:
		return "_:" + t.value
	case literalTerm:
		s := `"` + escapeLiteral(t.value) + `"`
		if t.lang != "" {
			return s + "@" + t.lang
		}
		if t.datatype != "" && t.datatype != xsdString {
			return s + "^^<" + escapeIRI(t.datatype) + ">"
		}
		return s
	}
	return "?"
}

func (t triple) String() string {
	return t.s.String() + " " + t.p.String() + " " + t.o.String() + " ."
}

// escapeLiteral escapes a literal's lexical form for N-Triples.
func escapeLiteral(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < ' ' || r == 0x7f {
				b.WriteString(`\u` + strconv.FormatInt(int64(0x10000+r), 16)[1:])
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func escapeIRI(s string) string {
	if !strings.ContainsFunc(s, iriEscaped) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if iriEscaped(r) {
			b.WriteString(`\u` + strconv.FormatInt(int64(0x10000+r), 16)[1:])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// iriEscaped reports whether N-Triples writes r in an IRI as \uXXXX:
// every control character and space, and the characters IRIREF excludes.
func iriEscaped(r rune) bool {
	return r <= ' ' || strings.ContainsRune("<>\"{}|^`\\", r)
}

// Vocabulary.
const (
	rdfNS   = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	rdfsNS  = "http://www.w3.org/2000/01/rdf-schema#"
	xsdNS   = "http://www.w3.org/2001/XMLSchema#"
	foafNS  = "http://xmlns.com/foaf/0.1/"
	xmlNS   = "http://www.w3.org/XML/1998/namespace"
	xmlnsNS = "http://www.w3.org/2000/xmlns/"

	rdfType       = rdfNS + "type"
	rdfFirst      = rdfNS + "first"
	rdfRest       = rdfNS + "rest"
	rdfNil        = rdfNS + "nil"
	rdfStatement  = rdfNS + "Statement"
	rdfSubject    = rdfNS + "subject"
	rdfPredicate  = rdfNS + "predicate"
	rdfObject     = rdfNS + "object"
	rdfXMLLiteral = rdfNS + "XMLLiteral"
	rdfsLabel     = rdfsNS + "label"

	xsdString  = xsdNS + "string"
	xsdInteger = xsdNS + "integer"
	xsdDecimal = xsdNS + "decimal"
	xsdDouble  = xsdNS + "double"
	xsdBoolean = xsdNS + "boolean"
)

// resolveIRI resolves ref against base following RFC 3986 section 5.2.
// It works on strings so that IRIs (non-ASCII characters) and unusual
// schemes pass through unchanged, unlike net/url, which re-escapes them
// and keeps the base's fragment for an empty reference. An empty or
// relative base leaves ref as it is.
func resolveIRI(base, ref string) string {
	r := splitIRI(ref)
	if r.hasScheme {
		r.path = removeDotSegments(r.path)
		return r.String()
	}
	b := splitIRI(base)
	if !b.hasScheme {
		return ref
	}
	var t iriParts
	t.hasScheme, t.scheme = true, b.scheme
	t.hasFragment, t.fragment = r.hasFragment, r.fragment
	switch {
	case r.hasAuthority:
		t.hasAuthority, t.authority = true, r.authority
		t.path = removeDotSegments(r.path)
		t.hasQuery, t.query = r.hasQuery, r.query
		return t.String()
	case r.path == "":
		t.path = b.path
		if r.hasQuery {
			t.hasQuery, t.query = true, r.query
		} else {
			t.hasQuery, t.query = b.hasQuery, b.query
		}
	case strings.HasPrefix(r.path, "/"):
		t.path = removeDotSegments(r.path)
		t.hasQuery, t.query = r.hasQuery, r.query
	default:
		var merged string
		if b.hasAuthority && b.path == "" {
			merged = "/" + r.path
		} else if i := strings.LastIndexByte(b.path, '/'); i >= 0 {
			merged = b.path[:i+1] + r.path
		} else {
			merged = r.path
		}
		t.path = removeDotSegments(merged)
		t.hasQuery, t.query = r.hasQuery, r.query
	}
	t.hasAuthority, t.authority = b.hasAuthority, b.authority
	return t.String()
}

// iriParts are the five components of RFC 3986 appendix B.
type iriParts struct {
	scheme, authority, path, query, fragment       string
	hasScheme, hasAuthority, hasQuery, hasFragment bool
}

func splitIRI(s string) iriParts {
	var p iriParts
	if i := strings.IndexAny(s, ":/?#"); i > 0 && s[i] == ':' && validScheme(s[:i]) {
		p.hasScheme, p.scheme, s = true, s[:i], s[i+1:]
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		p.hasFragment, p.fragment, s = true, s[i+1:], s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		p.hasQuery, p.query, s = true, s[i+1:], s[:i]
	}
	if strings.HasPrefix(s, "//") {
		s = s[2:]
		i := strings.IndexByte(s, '/')
		if i < 0 {
			i = len(s)
		}
		p.hasAuthority, p.authority, s = true, s[:i], s[i:]
	}
	p.path = s
	return p
}

func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

func (p iriParts) String() string {
	var b strings.Builder
	if p.hasScheme {
		b.WriteString(p.scheme)
		b.WriteByte(':')
	}
	if p.hasAuthority {
		b.WriteString("//")
		b.WriteString(p.authority)
	}
	b.WriteString(p.path)
	if p.hasQuery {
		b.WriteByte('?')
		b.WriteString(p.query)
	}
	if p.hasFragment {
		b.WriteByte('#')
		b.WriteString(p.fragment)
	}
	return b.String()
}

// removeDotSegments is RFC 3986 section 5.2.4.
func removeDotSegments(in string) string {
	if !strings.Contains(in, ".") {
		return in
	}
	var out []string // output segments, each with its leading "/" if any
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "/..":
			in = "/"
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "." || in == "..":
			in = ""
		default:
			i := strings.IndexByte(in[1:], '/')
			if i < 0 {
				out, in = append(out, in), ""
			} else {
				out, in = append(out, in[:i+1]), in[i+1:]
			}
		}
	}
	return strings.Join(out, "")
}

// stripFragment returns an IRI without its fragment.
func stripFragment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}
