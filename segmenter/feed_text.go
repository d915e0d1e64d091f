package segmenter

import (
	"bytes"
	"encoding/xml"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/changedigest/changedigest/internal/lazyregexp"
)

// feedNormSpace collapses every run of white space to one space and trims.
func feedNormSpace(s string) string {
	// strings.Join(strings.Fields(s), " "), without the list of fields,
	// and s itself when it has no space to collapse.
	clean, space := true, true // space: after a space or at the start
	for i := 0; i < len(s) && clean; {
		sp, size := feedSpaceAt(s, i)
		clean = !sp || s[i] == ' ' && !space
		space = sp
		i += size
	}
	if clean && !space {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	pending := false
	for i := 0; i < len(s); {
		sp, size := feedSpaceAt(s, i)
		switch {
		case sp:
			pending = sb.Len() > 0
		default:
			if pending {
				sb.WriteByte(' ')
				pending = false
			}
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	return sb.String()
}

// feedSameNormSpace reports whether feedNormSpace(a) == feedNormSpace(b),
// comparing the words of both as it reads them.
func feedSameNormSpace(a, b string) bool {
	if a == b {
		return true
	}
	i, j := 0, 0
	for {
		a0, a1 := feedNextField(a, i)
		b0, b1 := feedNextField(b, j)
		if a0 < 0 || b0 < 0 {
			return a0 < 0 && b0 < 0
		}
		if a[a0:a1] != b[b0:b1] {
			return false
		}
		i, j = a1, b1
	}
}

// feedNextField returns the next run of non-space characters of s from
// byte i on (-1, -1: none).
func feedNextField(s string, i int) (int, int) {
	start := -1
	for i < len(s) {
		sp, size := feedSpaceAt(s, i)
		if sp {
			if start >= 0 {
				return start, i
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		return start, len(s)
	}
	return -1, -1
}

// feedSpaceAt reports whether the character at byte i of s is white
// space (as strings.Fields counts it), and its size.
func feedSpaceAt(s string, i int) (bool, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r', 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r), size
}

// feedSkipText are elements whose content is not text a reader sees.
var feedSkipText = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Noembed: true, atom.Noframes: true,
}

// feedBlock are elements that break a line of text.
var feedBlock = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Br: true, atom.Dd: true, atom.Div: true, atom.Dl: true, atom.Dt: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.H1: true,
	atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Header: true, atom.Hr: true, atom.Li: true, atom.Main: true, atom.Nav: true,
	atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true, atom.Table: true,
	atom.Td: true, atom.Th: true, atom.Tr: true, atom.Ul: true,
}

// feedHTMLText reduces an HTML fragment (an item's description or content,
// or a title that may hold markup or entities) to its visible text: tags
// dropped, scripts and styles skipped, entities decoded. With oneLine all
// white space collapses to single spaces; otherwise each block element
// starts a line and spaces collapse within lines.
func feedHTMLText(s string, oneLine bool) string {
	if !strings.ContainsAny(s, "<&") {
		return feedTidyLines(s, oneLine)
	}
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	skip := 0
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			return feedTidyLines(b.String(), oneLine)
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if feedSkipText[a] && tt == html.StartTagToken {
				skip++
			}
			if feedBlock[a] {
				b.WriteByte('\n')
			} else if a == atom.Img {
				b.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if feedSkipText[a] && skip > 0 {
				skip--
			}
			if feedBlock[a] {
				b.WriteByte('\n')
			}
		}
	}
}

// feedTidyLines collapses spaces within lines and drops empty lines, or
// makes one line of everything.
func feedTidyLines(s string, oneLine bool) string {
	if oneLine {
		return feedNormSpace(s)
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = feedNormSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// feedEncodingDecl matches the encoding of an XML declaration.
var feedEncodingDecl = lazyregexp.New(`^\s*<\?xml[^>]*?\bencoding\s*=\s*["']([^"']*)["']`)

// feedUTF8 prepares a body for the XML parser and says what it changed:
//
//   - a body that is valid UTF-8 but declares another encoding has been
//     decoded already (the fetcher hands over UTF-8); its declaration is
//     changed to UTF-8 so the text is not decoded twice;
//   - a body that is not valid UTF-8 and declares no other encoding gets
//     each stray byte read as Windows-1252, the usual mislabelled case;
//   - a body declaring a legacy encoding is left to the parser to decode.
func feedUTF8(body []byte) ([]byte, string) {
	head := body
	if len(head) > 512 {
		head = head[:512]
	}
	label := ""
	if m := feedEncodingDecl.FindSubmatchIndex(head); m != nil {
		label = strings.ToLower(string(head[m[2]:m[3]]))
	}
	isUTF8 := label == "" || label == "utf-8" || label == "utf8"
	if utf8.Valid(body) {
		if isUTF8 || label == "us-ascii" || label == "ascii" || !feedHasNonASCII(body) {
			return body, ""
		}
		m := feedEncodingDecl.FindSubmatchIndex(head)
		out := make([]byte, 0, len(body))
		out = append(out, body[:m[2]]...)
		out = append(out, "utf-8"...)
		out = append(out, body[m[3]:]...)
		return out, ""
	}
	if !isUTF8 {
		return body, ""
	}
	if bytes.HasPrefix(body, []byte{0xfe, 0xff}) || bytes.HasPrefix(body, []byte{0xff, 0xfe}) {
		return body, "" // UTF-16: the parser reports it
	}
	var out []byte
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, feedCP1252(body[i]))
		} else {
			out = append(out, body[i:i+n]...)
		}
		i += n
	}
	return out, "bytes that are not UTF-8 were read as Windows-1252"
}

func feedHasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// feedCP1252High maps Windows-1252 bytes 0x80–0x9F; the rest of the upper
// half is Latin-1.
var feedCP1252High = [32]rune{
	'€', '\u0081', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u008d', 'Ž', '\u008f',
	'\u0090', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u009d', 'ž', 'Ÿ',
}

func feedCP1252(c byte) rune {
	if c >= 0x80 && c < 0xa0 {
		return feedCP1252High[c-0x80]
	}
	return rune(c)
}

// feedRootElement is the name (with its prefix) of the first element of
// an XML document, "" when there is none.
func feedRootElement(b []byte) string {
	d := xml.NewDecoder(bytes.NewReader(feedScanBytes(b)))
	d.Strict = false
	d.CharsetReader = feedIdentityCharset
	for range 256 {
		tok, err := d.RawToken()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Space != "" {
				return se.Name.Space + ":" + se.Name.Local
			}
			return se.Name.Local
		}
	}
	return ""
}
