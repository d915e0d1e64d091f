package crawl

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"

	"github.com/changedigest/changedigest/internal/lazyregexp"
	"github.com/changedigest/changedigest/pdftext"
)

// boms maps byte order marks to encoding labels, longest first.
var boms = []struct {
	bom   []byte
	label string
}{
	{[]byte{0xEF, 0xBB, 0xBF}, "utf-8"},
	{[]byte{0xFE, 0xFF}, "utf-16be"},
	{[]byte{0xFF, 0xFE}, "utf-16le"},
}

// xmlDecl matches an XML declaration at the start of a document and
// captures the value of its encoding pseudo-attribute.
var xmlDecl = lazyregexp.New(`^\s*<\?xml\s[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["'][^>]*\?>`)

// toUTF8 finds the character encoding of body and returns the body in
// UTF-8 with the canonical (WHATWG) name of the encoding. The order:
//
//  1. a byte order mark;
//  2. the charset parameter of the Content-Type header;
//  3. for XML documents the encoding of the XML declaration, for HTML the
//     <meta> prescan of the first 1024 bytes (then the XML declaration);
//  4. UTF-8 when the whole body is valid UTF-8;
//  5. windows-1252 (what browsers assume; a superset of ISO-8859-1).
//
// When the body is already valid UTF-8 without a BOM the same slice is
// returned. Invalid UTF-8 sequences become U+FFFD. When an XML document is
// converted, the encoding of its declaration is rewritten to UTF-8 so that
// a feed parser does not decode it a second time.
func toUTF8(body []byte, contentType string) ([]byte, string, error) {
	enc, name := detectEncoding(body, contentType)
	if name == "utf-8" {
		body = bytes.TrimPrefix(body, boms[0].bom)
		if utf8.Valid(body) {
			return body, name, nil
		}
		return bytes.ToValidUTF8(body, []byte("\uFFFD")), name, nil
	}
	if asciiCompatible(name) && isASCII(body) {
		return body, name, nil
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return nil, "", fmt.Errorf("%w: decoding %s: %w", ErrBadEncoding, name, err)
	}
	// UTF-16 decoders keep a BOM as U+FEFF; drop it.
	out = bytes.TrimPrefix(out, boms[0].bom)
	if loc := xmlDecl.FindSubmatchIndex(out); loc != nil {
		out = append(append(append([]byte{}, out[:loc[2]]...), "UTF-8"...), out[loc[3]:]...)
	}
	return out, name, nil
}

func detectEncoding(body []byte, contentType string) (encoding.Encoding, string) {
	for _, b := range boms {
		if bytes.HasPrefix(body, b.bom) {
			return lookup(b.label)
		}
	}
	mediaType, params, _ := mime.ParseMediaType(contentType)
	if cs := params["charset"]; cs != "" {
		if e, name := lookup(cs); e != nil {
			return e, name
		}
	}
	head := body[:min(len(body), 1024)]
	xml := isXML(mediaType, head)
	if xml {
		if e, name := fromXMLDecl(head); e != nil {
			return e, name
		}
	} else if bytes.Contains(bytes.ToLower(head), []byte("charset")) {
		// The HTML prescan found a <meta charset> or http-equiv
		// Content-Type; DetermineEncoding would otherwise guess from the
		// first 1024 bytes only, so it is asked only when a meta exists.
		if e, name, _ := charset.DetermineEncoding(head, ""); e != nil {
			if e, name := lookup(name); e != nil {
				return e, name
			}
		}
	} else if e, name := fromXMLDecl(head); e != nil {
		return e, name
	}
	if utf8.Valid(body) {
		return unicode.UTF8, "utf-8"
	}
	return lookup("windows-1252")
}

// lookup finds an encoding by label. UTF-16 is mapped to the x/text
// decoder that honours a BOM over the label's byte order.
func lookup(label string) (encoding.Encoding, string) {
	e, name := charset.Lookup(label)
	if e == nil {
		return nil, ""
	}
	switch name {
	case "utf-8":
		return unicode.UTF8, name
	case "utf-16be":
		return unicode.UTF16(unicode.BigEndian, unicode.UseBOM), name
	case "utf-16le":
		return unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), name
	}
	return e, name
}

func fromXMLDecl(head []byte) (encoding.Encoding, string) {
	m := xmlDecl.FindSubmatch(head)
	if m == nil {
		return nil, ""
	}
	return lookup(string(m[1]))
}

// isXML reports whether the media type (or, when it says nothing useful,
// the start of the body) marks an XML document such as a feed.
func isXML(mediaType string, head []byte) bool {
	switch {
	case mediaType == "text/html":
		return false
	case mediaType == "text/xml", mediaType == "application/xml",
		strings.HasSuffix(mediaType, "+xml"):
		return true
	}
	return bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("<?xml"))
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiCompatible reports whether an encoding decodes bytes below 0x80 to
// the same ASCII characters: all WHATWG encodings but UTF-16, the 7-bit
// ISO-2022-JP (its escapes are ASCII bytes) and "replacement".
func asciiCompatible(name string) bool {
	return !strings.HasPrefix(name, "utf-16") && name != "iso-2022-jp" && name != "replacement"
}

// ToUTF8 returns a stored body in UTF-8, decoded by the rules of the
// fetcher (byte order mark, the Content-Type charset, <meta> or the XML
// declaration, else UTF-8 or windows-1252). Undecodable bytes become U+FFFD.
// A PDF is returned as it is: it is read by its text (package pdftext).
func ToUTF8(body []byte, contentType string) []byte {
	if pdftext.IsPDF(body) {
		return body // read by its text, as Fetch returns it
	}
	out, _, err := toUTF8(body, contentType)
	if err != nil {
		return bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	return out
}
