package profile

import (
	"bytes"
	"mime"
	"path"
	"strings"
)

// Format is an RDF syntax a FOAF document may be written in.
type Format string

// Formats.
const (
	FormatRDFXML   Format = "rdfxml"
	FormatTurtle   Format = "turtle"
	FormatNTriples Format = "ntriples"
)

// Name is the format's usual name, e.g. "RDF/XML".
func (f Format) Name() string {
	switch f {
	case FormatRDFXML:
		return "RDF/XML"
	case FormatTurtle:
		return "Turtle"
	case FormatNTriples:
		return "N-Triples"
	}
	return string(f)
}

// DetectFormat says which syntax a document is in: from its content type
// if that names an RDF syntax, else from the file name's extension, else
// by looking at the content. The second result is false when the format
// was guessed from the content.
func DetectFormat(name, contentType string, data []byte) (Format, bool) {
	if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err == nil {
			switch mt {
			case "application/rdf+xml", "application/xml", "text/xml", "application/xhtml+xml":
				return FormatRDFXML, true
			case "text/turtle", "application/x-turtle", "application/turtle", "text/n3", "text/rdf+n3":
				return FormatTurtle, true
			case "application/n-triples", "text/ntriples":
				return FormatNTriples, true
			}
		}
	}
	if name != "" {
		base := name
		if i := strings.IndexAny(base, "?#"); i >= 0 && strings.Contains(base, "://") {
			base = base[:i]
		}
		switch strings.ToLower(path.Ext(base)) {
		case ".rdf", ".xml", ".owl", ".foaf", ".rdfs", ".xrdf":
			return FormatRDFXML, true
		case ".ttl", ".turtle", ".n3":
			return FormatTurtle, true
		case ".nt", ".ntriples":
			return FormatNTriples, true
		}
	}
	return sniffFormat(data), false
}

// sniffFormat guesses the syntax from the content: XML starts with an
// XML declaration, a comment, a DOCTYPE or an element with a name
// followed by attributes or '>'; anything else is read as Turtle, which
// includes N-Triples.
func sniffFormat(data []byte) Format {
	s := bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})
	if bytes.HasPrefix(s, []byte{0xFE, 0xFF}) || bytes.HasPrefix(s, []byte{0xFF, 0xFE}) {
		return FormatRDFXML // UTF-16 text with a BOM: only XML declares its encoding
	}
	s = bytes.TrimLeft(s, " \t\r\n")
	switch {
	case bytes.HasPrefix(s, []byte("<?xml")), bytes.HasPrefix(s, []byte("<!")):
		return FormatRDFXML
	case bytes.HasPrefix(s, []byte("<")):
		// <rdf:RDF xmlns:...> or <foaf:Person> versus <http://a/b> <p> <o> .
		end := bytes.IndexByte(s, '>')
		if end < 0 {
			end = len(s)
		}
		tag := s[1:end]
		switch {
		case bytes.ContainsAny(tag, " \t\r\n=\""):
			return FormatRDFXML // an element with attributes
		case len(tag) == 0 || tag[0] == '#' || bytes.Contains(tag, []byte(":/")):
			return FormatTurtle // <>, <#me>, <http://...>
		case bytes.HasSuffix(tag, []byte("/")) || bytes.Contains(s, []byte("</")):
			return FormatRDFXML // <foaf:Person/> or an element with an end tag
		}
	}
	return FormatTurtle
}
