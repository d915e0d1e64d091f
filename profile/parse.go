package profile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// DefaultMaxSize is the largest FOAF document read by default: 2 MB.
const DefaultMaxSize = 2 << 20

// Document is a FOAF document to read.
type Document struct {
	// Body is the document's content.
	Body io.Reader
	// Name is the file name or URL the document came from. It names the
	// document in error messages, its extension helps tell the format,
	// and it gives the base IRI: an absolute URL is the base itself, a
	// file name becomes a file: IRI.
	Name string
	// ContentType is the media type the document was served or uploaded
	// with, if known; it decides the format when it names an RDF syntax.
	ContentType string
	// Base, when set, overrides the base IRI taken from Name.
	Base string
}

// label is how the document is named in messages.
func (d Document) label() string {
	if d.Name == "" {
		return "the document"
	}
	return d.Name
}

// baseIRI is the IRI relative references in the document resolve against.
func (d Document) baseIRI() string {
	if d.Base != "" {
		return d.Base
	}
	if p := splitIRI(d.Name); p.hasScheme && len(p.scheme) > 1 {
		return d.Name
	}
	name := d.Name
	if name == "" {
		name = "profile"
	}
	return "file:///" + escapePath(strings.TrimPrefix(filepath.ToSlash(name), "/"))
}

// escapePath percent-encodes the characters a file name may hold that an
// IRI path may not.
func escapePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("<>\"{}|^`\\%#?", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// readBody reads the document up to max bytes.
func readBody(d Document, max int64) ([]byte, error) {
	if d.Body == nil {
		return nil, invalid(ErrEmpty, "%s is empty", d.label())
	}
	data, err := io.ReadAll(io.LimitReader(d.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("profile: read %s: %w", d.label(), err)
	}
	if int64(len(data)) > max {
		return nil, tooLarge(d.label(), max)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, invalid(ErrEmpty, "%s is empty", d.label())
	}
	return data, nil
}

// parseGraph reads data in the given format into triples. Errors are
// *SyntaxError or wrap ErrNotRDF or ErrEmpty; they do not name the document.
func parseGraph(data []byte, f Format, base string) ([]triple, error) {
	switch f {
	case FormatRDFXML:
		return parseRDFXML(data, base)
	case FormatTurtle:
		return parseTurtle(string(data), base)
	case FormatNTriples:
		return parseNTriples(string(data))
	}
	return nil, fmt.Errorf("%w: unknown format %q", ErrNotRDF, f)
}

// readTriples reads a document into triples, turning every failure into
// an error that names the document and what was wrong.
func readTriples(d Document, max int64) ([]triple, Format, error) {
	data, err := readBody(d, max)
	if err != nil {
		return nil, "", err
	}
	f, declared := DetectFormat(d.Name, d.ContentType, data)
	if !declared && looksLikeHTML(data) {
		return nil, f, invalid(ErrNotRDF, "%s is an HTML page, not a FOAF document (RDF/XML, Turtle or N-Triples)", d.label())
	}
	ts, err := parseGraph(data, f, d.baseIRI())
	if err != nil {
		how := ""
		if !declared {
			how = fmt.Sprintf(" (read as %s, guessed from its content)", f.Name())
		}
		var se *SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, f, invalid(err, "%s%s: %v", d.label(), how, err)
		case errors.Is(err, ErrNotRDF), errors.Is(err, ErrEmpty):
			return nil, f, invalid(err, "%s%s: %v", d.label(), how, err)
		}
		return nil, f, fmt.Errorf("profile: %s: %w", d.label(), err)
	}
	if len(ts) == 0 {
		return nil, f, invalid(ErrEmpty, "%s holds no RDF statements", d.label())
	}
	return ts, f, nil
}

// looksLikeHTML reports whether data starts like an HTML page.
func looksLikeHTML(data []byte) bool {
	s := bytes.TrimLeft(bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF}), " \t\r\n")
	if len(s) > 64 {
		s = s[:64]
	}
	l := strings.ToLower(string(s))
	if !utf8.ValidString(l) {
		return false
	}
	return strings.HasPrefix(l, "<!doctype html") || strings.HasPrefix(l, "<html")
}
