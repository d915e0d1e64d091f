package segmenter

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// sniffLimit is how much of a document Sniff looks at.
const sniffLimit = 64 << 10

// Sniff tells whether body is an HTML page or a feed (RSS 0.9x, 1.0 and
// 2.0, RDF, Atom, JSON Feed); text without any tags is a page. Empty or
// blank input, binary content, JSON and XML that are not feeds give an EINVALID error (wrapping ErrEmpty,
// ErrBinary or ErrNotDocument) whose one-line message says what it saw.
func Sniff(body []byte) (changedigest.Kind, error) {
	if bytes.HasPrefix(body, []byte("\xfe\xff")) || bytes.HasPrefix(body, []byte("\xff\xfe")) {
		body = decode(body) // UTF-16
	}
	b := bytes.TrimLeft(body, " \t\r\n\f")
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	b = bytes.TrimLeft(b, " \t\r\n\f")
	if len(b) == 0 {
		return "", inputErrorf(ErrEmpty, "empty document")
	}
	if what := binaryKind(b); what != "" {
		return "", inputErrorf(ErrBinary, "binary content (%s), not HTML or a feed", what)
	}
	if b[0] == '{' || b[0] == '[' {
		var jf struct {
			Version string `json:"version"`
		}
		if b[0] == '{' && json.Unmarshal(b, &jf) == nil && strings.HasPrefix(jf.Version, "https://jsonfeed.org/version/") {
			return changedigest.KindFeed, nil
		}
		return "", inputErrorf(ErrNotDocument, "JSON that is not a JSON Feed, neither HTML nor a feed")
	}
	head := b[:min(len(b), sniffLimit)]
	z := html.NewTokenizer(bytes.NewReader(head))
	first := ""
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if first != "" {
				return "", inputErrorf(ErrNotDocument, "XML document with root <%s>, neither HTML nor a feed", first)
			}
			// Text without tags is a page, as browsers show it: a page
			// that is (for a while) only "Coming soon" or a plain-text
			// notice is still watched and compared.
			return changedigest.KindPage, nil
		case html.DoctypeToken:
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(string(z.Text()))), "html") {
				return changedigest.KindPage, nil
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			if first == "" {
				switch {
				case tag == "rss" || tag == "feed":
					return changedigest.KindFeed, nil
				case tag == "rdf:rdf" || strings.HasSuffix(tag, ":rdf"):
					if isRSS1(head) {
						return changedigest.KindFeed, nil
					}
				}
				first = tag
			}
			if a := atom.Lookup(name); a != 0 && htmlRoots[a] {
				return changedigest.KindPage, nil
			}
		}
	}
}

// htmlRoots are elements that make a document HTML wherever they appear.
var htmlRoots = map[atom.Atom]bool{
	atom.Html: true, atom.Head: true, atom.Body: true, atom.Title: true, atom.Meta: true, atom.Div: true,
	atom.P: true, atom.A: true, atom.Span: true, atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Li: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Img: true,
	atom.Br: true, atom.Hr: true, atom.Script: true, atom.Style: true, atom.Link: true, atom.Form: true,
	atom.Section: true, atom.Article: true, atom.Nav: true, atom.Header: true, atom.Footer: true,
	atom.Main: true, atom.Pre: true, atom.Blockquote: true, atom.Em: true, atom.Strong: true, atom.B: true,
	atom.I: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Tr: true, atom.Td: true, atom.Th: true,
	atom.Ins: true, atom.Del: true, atom.Center: true, atom.Font: true, atom.Frameset: true, atom.Iframe: true,
	atom.Input: true, atom.Button: true, atom.Select: true, atom.Textarea: true, atom.Label: true,
	atom.Figure: true, atom.Aside: true, atom.Noscript: true, atom.Code: true, atom.Small: true,
}

func isRSS1(head []byte) bool {
	l := bytes.ToLower(head)
	return bytes.Contains(l, []byte("purl.org/rss/1.0")) || bytes.Contains(l, []byte("<channel")) ||
		bytes.Contains(l, []byte(":channel")) || bytes.Contains(l, []byte("my.netscape.com/rdf/simple/0.9"))
}

// binaryKind names the binary format of b, or returns "" for text.
func binaryKind(b []byte) string {
	magics := []struct{ prefix, name string }{
		{"%PDF-", "PDF"}, {"\x89PNG", "PNG image"}, {"GIF87a", "GIF image"}, {"GIF89a", "GIF image"},
		{"\xff\xd8\xff", "JPEG image"}, {"PK\x03\x04", "ZIP archive"}, {"\x1f\x8b", "gzip data"},
		{"BZh", "bzip2 data"}, {"\xfd7zXZ\x00", "xz data"}, {"RIFF", "RIFF media"}, {"OggS", "Ogg media"},
		{"ID3", "MP3 audio"}, {"fLaC", "FLAC audio"}, {"wOFF", "font"}, {"wOF2", "font"}, {"\x7fELF", "executable"},
		{"\x00asm", "WebAssembly"}, {"\xca\xfe\xba\xbe", "Java class"}, {"7z\xbc\xaf\x27\x1c", "7z archive"},
		{"\x00\x00\x01\x00", "icon"}, {"II*\x00", "TIFF image"}, {"MM\x00*", "TIFF image"},
	}
	for _, m := range magics {
		if bytes.HasPrefix(b, []byte(m.prefix)) {
			return m.name
		}
	}
	if len(b) > 12 && string(b[4:8]) == "ftyp" {
		return "MP4 media"
	}
	head := b[:min(len(b), 8192)]
	if bytes.HasPrefix(head, []byte("\xfe\xff")) || bytes.HasPrefix(head, []byte("\xff\xfe")) {
		return "" // UTF-16 text
	}
	ctrl := 0
	for _, c := range head {
		switch {
		case c == 0:
			return "NUL bytes"
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f':
			ctrl++
		}
	}
	if ctrl*10 > len(head) {
		return "control characters"
	}
	return ""
}

// decode returns body as UTF-8: unchanged when it already is (less a
// byte-order mark), else converted from the charset its BOM or meta tag
// declares, or windows-1252 as browsers assume.
func decode(body []byte) []byte {
	if utf8.Valid(body) && !bytes.HasPrefix(body, []byte("\xfe\xff")) && !bytes.HasPrefix(body, []byte("\xff\xfe")) {
		return bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	}
	enc, _, _ := charset.DetermineEncoding(body, "text/html")
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return body
	}
	return bytes.TrimPrefix(out, []byte("\xef\xbb\xbf"))
}
