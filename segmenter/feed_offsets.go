package segmenter

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// feedScanBytes is a copy of an XML body that encoding/xml accepts
// whatever its encoding, with every byte at the same offset: bytes that are
// not UTF-8 become '?' and control characters a space. Markup is ASCII in
// every encoding feeds use, so element boundaries stay where they were.
func feedScanBytes(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out[i] = '?'
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			out[i] = ' '
		case r == 0xfffe || r == 0xffff:
			for j := range n {
				out[i+j] = '?'
			}
		}
		i += n
	}
	return out
}

// feedIdentityCharset leaves the bytes as they are whatever encoding the
// document declares (offsets must stay those of the raw body).
func feedIdentityCharset(_ string, r io.Reader) (io.Reader, error) { return r, nil }

// feedXMLScan walks the elements of an XML feed and reports each complete
// top-level item (an RSS <item> below <channel> or the root, an Atom
// <entry> below the root) with its byte range, and the names of its open
// ancestors, outermost first. The elements are those encoding/xml's
// RawToken gives (not strict): read from the bytes when the feed keeps to
// the markup feedFastScan reads the same way, else with encoding/xml.
func feedXMLScan(body []byte, each func(start, end int, open []string)) {
	b := feedScanBytes(body)
	if feedFastScan(b, newFeedScanState(nil)) {
		feedFastScan(b, newFeedScanState(each))
		return
	}
	feedXMLDecode(b, each)
}

// feedXMLDecode is feedXMLScan of b (as feedScanBytes leaves it) with
// encoding/xml.
func feedXMLDecode(b []byte, each func(start, end int, open []string)) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	d.CharsetReader = feedIdentityCharset
	st := newFeedScanState(each)
	for {
		off := int(d.InputOffset())
		tok, err := d.RawToken()
		if err != nil {
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			st.start(t.Name, off)
		case xml.EndElement:
			st.end(t.Name, int(d.InputOffset()))
		}
	}
}

// feedScanState follows the open elements of a feed for feedXMLScan.
type feedScanState struct {
	each   func(start, end int, open []string)
	stack  []string // raw names, "prefix:local"
	locals []string
	// open counts the elements of each name on the stack, so that an end
	// tag matching none is ignored at once: searching the stack for each
	// took time quadratic in the nesting (100,000 stray end tags in a
	// 700 KB feed took 23 s of CPU).
	open                 map[string]int
	itemDepth, itemStart int
}

func newFeedScanState(each func(start, end int, open []string)) *feedScanState {
	return &feedScanState{each: each, open: map[string]int{}, itemDepth: -1}
}

func rawName(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

// start is a start tag at offset off.
func (st *feedScanState) start(n xml.Name, off int) {
	local := strings.ToLower(n.Local)
	if st.itemDepth < 0 && feedIsItem(local, st.locals) {
		st.itemDepth, st.itemStart = len(st.stack), off
	}
	raw := rawName(n)
	st.stack = append(st.stack, raw)
	st.locals = append(st.locals, local)
	st.open[raw]++
}

// end is an end tag that ends at offset off.
func (st *feedScanState) end(n xml.Name, off int) {
	raw := rawName(n)
	// Close the innermost element of that name, and any left open
	// inside it; an end tag matching nothing is ignored.
	if st.open[raw] == 0 {
		return
	}
	i := len(st.stack) - 1
	for st.stack[i] != raw {
		i--
	}
	for _, name := range st.stack[i:] {
		st.open[name]--
	}
	st.stack, st.locals = st.stack[:i], st.locals[:i]
	if st.itemDepth >= 0 && i <= st.itemDepth {
		if i == st.itemDepth && st.each != nil {
			st.each(st.itemStart, off, st.stack)
		}
		st.itemDepth = -1
	}
}

// feedFastScan reads the start and end tags of b (as feedScanBytes
// leaves it) into st as encoding/xml's RawToken reads them, not strict,
// with their offsets, and reports true; or it reports false, having
// stopped, where b holds markup it does not read (a name that is not
// ASCII, a start or end tag RawToken rejects, a character reference to
// a character XML does not allow, "]]>" in text, more than a few
// processing instructions or declarations, which it hands to
// encoding/xml one by one). At the end of b it stops as RawToken does.
func feedFastScan(b []byte, st *feedScanState) bool {
	names := map[string]xml.Name{}
	// name reads a name at i: its end, and whether RawToken would read it
	// as this one (ASCII, one colon at most, a valid first character)
	name := func(i int) (xml.Name, int, bool) {
		j := i
		for j < len(b) && b[j] < utf8.RuneSelf && isXMLNameByte(b[j]) {
			j++
		}
		if j == len(b) || b[j] >= utf8.RuneSelf || j == i {
			return xml.Name{}, j, false
		}
		if c := b[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':') {
			return xml.Name{}, j, false
		}
		if n, ok := names[string(b[i:j])]; ok {
			return n, j, true
		}
		s := string(b[i:j])
		var n xml.Name
		if strings.Count(s, ":") > 1 {
			return xml.Name{}, j, false
		} else if space, local, ok := strings.Cut(s, ":"); !ok || space == "" || local == "" {
			n.Local = s
		} else {
			n.Space, n.Local = space, local
		}
		names[s] = n
		return n, j, true
	}
	space := func(i int) int {
		for i < len(b) && (b[i] == ' ' || b[i] == '\r' || b[i] == '\n' || b[i] == '\t') {
			i++
		}
		return i
	}
	others := 0 // processing instructions and declarations handed over
	for i := 0; i < len(b); {
		if b[i] != '<' {
			// text, up to the next tag
			j := bytes.IndexByte(b[i:], '<')
			if j < 0 {
				return true // text to the end
			}
			if bytes.Contains(b[i:i+j], []byte("]]>")) || !feedRefsAllowed(b[i:i+j]) {
				return false
			}
			i += j
			continue
		}
		if i+1 >= len(b) {
			return true // RawToken stops at the end
		}
		switch b[i+1] {
		case '/':
			n, j, ok := name(i + 2)
			if !ok {
				return false
			}
			j = space(j)
			if j >= len(b) {
				return true
			}
			if b[j] != '>' {
				return false
			}
			st.end(n, j+1)
			i = j + 1
		case '!':
			if bytes.HasPrefix(b[i:], []byte("<!--")) {
				k := bytes.Index(b[i+4:], []byte("--"))
				if k < 0 {
					return true
				}
				j := i + 4 + k + 2
				if j >= len(b) {
					return true
				}
				if b[j] != '>' {
					return false
				}
				i = j + 1
				continue
			}
			if bytes.HasPrefix(b[i:], []byte("<![CDATA[")) {
				k := bytes.Index(b[i+9:], []byte("]]>"))
				if k < 0 {
					return true
				}
				i += 9 + k + 3
				continue
			}
			fallthrough
		case '?':
			// a declaration or processing instruction, read by
			// encoding/xml from here
			if others++; others > 64 {
				return false
			}
			d := xml.NewDecoder(bytes.NewReader(b[i:]))
			d.Strict = false
			d.CharsetReader = feedIdentityCharset
			tok, err := d.RawToken()
			if err != nil {
				return false
			}
			switch tok.(type) {
			case xml.ProcInst, xml.Directive:
			default:
				return false
			}
			i += int(d.InputOffset())
		default:
			n, j, ok := name(i + 1)
			if !ok {
				return false
			}
			// attributes
			for {
				j = space(j)
				if j >= len(b) {
					return true
				}
				if b[j] == '/' {
					if j+1 >= len(b) {
						return true
					}
					if b[j+1] != '>' {
						return false
					}
					st.start(n, i)
					st.end(n, j+2)
					i = j + 2
					break
				}
				if b[j] == '>' {
					st.start(n, i)
					i = j + 1
					break
				}
				if _, j, ok = name(j); !ok {
					return false
				}
				j = space(j)
				if j >= len(b) {
					return true
				}
				if b[j] != '=' {
					continue // a name without a value
				}
				j = space(j + 1)
				if j >= len(b) {
					return true
				}
				if q := b[j]; q == '"' || q == '\'' {
					k := bytes.IndexByte(b[j+1:], q)
					if k < 0 {
						return true
					}
					v := b[j+1 : j+1+k]
					if bytes.IndexByte(v, '<') >= 0 || !feedRefsAllowed(v) {
						return false
					}
					j += 1 + k + 1
					continue
				}
				// unquoted, as RawToken reads it when not strict
				for j < len(b) && (b[j] >= 'a' && b[j] <= 'z' || b[j] >= 'A' && b[j] <= 'Z' ||
					b[j] >= '0' && b[j] <= '9' || b[j] == '_' || b[j] == ':' || b[j] == '-') {
					j++
				}
				if j >= len(b) {
					return true
				}
			}
		}
	}
	return true
}

func isXMLNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '_' || c == ':' || c == '.' || c == '-'
}

// feedRefsAllowed reports whether the character references in text all
// stand for characters XML allows (encoding/xml stops at one that does
// not; references it does not read stay as they are).
func feedRefsAllowed(t []byte) bool {
	for i := 0; ; i++ {
		k := bytes.Index(t[i:], []byte("&#"))
		if k < 0 {
			return true
		}
		i += k + 2
		base := 10
		if i < len(t) && t[i] == 'x' {
			base = 16
			i++
		}
		j := i
		for j < len(t) && ('0' <= t[j] && t[j] <= '9' || base == 16 && ('a' <= t[j] && t[j] <= 'f' || 'A' <= t[j] && t[j] <= 'F')) {
			j++
		}
		if j < len(t) && t[j] == ';' {
			n, err := strconv.ParseUint(string(t[i:j]), base, 64)
			if err == nil && n <= unicode.MaxRune {
				r, _ := utf8.DecodeRuneInString(string(rune(n)))
				if !xmlCharAllowed(r) {
					return false
				}
			}
		}
		i = j - 1
	}
}

// xmlCharAllowed is encoding/xml's character range.
func xmlCharAllowed(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// feedIsItem reports whether an element named local with the given
// ancestors is a feed item as gofeed counts them.
func feedIsItem(local string, ancestors []string) bool {
	if len(ancestors) == 0 {
		return false
	}
	root, parent := ancestors[0], ancestors[len(ancestors)-1]
	switch local {
	case "item":
		return (root == "rss" || root == "rdf") && (parent == "channel" || len(ancestors) == 1)
	case "entry":
		return root == "feed" && len(ancestors) == 1
	}
	return false
}

// feedItemRanges finds the byte range of every item of a feed body: XML
// elements or the objects of a JSON Feed's "items" array. Items that
// cannot be located are left out, so callers compare counts.
func feedItemRanges(body []byte) [][2]int {
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if !bytes.HasPrefix(body, feedBOM) {
			return feedJSONRanges(body)
		}
		out := feedJSONRanges(body[len(feedBOM):])
		for i := range out {
			out[i][0] += len(feedBOM)
			out[i][1] += len(feedBOM)
		}
		return out
	}
	var out [][2]int
	each := func(start, end int, _ []string) { out = append(out, [2]int{start, end}) }
	// the byte scan reports items as it goes: they are dropped when it
	// hands the feed over to encoding/xml
	b := feedScanBytes(body)
	if feedFastScan(b, newFeedScanState(each)) {
		return out
	}
	out = nil
	feedXMLDecode(b, each)
	return out
}

// feedJSONRanges finds the objects of the top-level "items" array.
func feedJSONRanges(body []byte) [][2]int {
	d := json.NewDecoder(bytes.NewReader(body))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return nil
		}
		if key != "items" {
			var skip json.RawMessage
			if d.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
			return nil
		}
		var out [][2]int
		for d.More() {
			start := int(d.InputOffset())
			for start < len(body) && (body[start] == ',' || body[start] == ' ' || body[start] == '\t' || body[start] == '\n' || body[start] == '\r') {
				start++
			}
			var item json.RawMessage
			if d.Decode(&item) != nil {
				return nil
			}
			out = append(out, [2]int{start, int(d.InputOffset())})
		}
		return out
	}
	return nil
}

// feedTruncateRepair cuts an XML feed after its last complete item and
// closes the elements still open there, so a feed that breaks off (a
// truncated download, garbage at the end) keeps what came before. It
// reports false when no complete item was found.
func feedTruncateRepair(body []byte) ([]byte, bool) {
	// The first pass finds the end of the last complete item; the
	// second, up to it, copies that item's open ancestors. (Copying them
	// for every item took time in items times depth.)
	cut := -1
	feedXMLScan(body, func(_, end int, _ []string) { cut = end })
	if cut < 0 {
		return nil, false
	}
	var open []string
	feedXMLScan(body[:cut], func(_, end int, o []string) {
		if end == cut {
			open = append([]string(nil), o...)
		}
	})
	if len(open) == 0 {
		return nil, false
	}
	out := make([]byte, 0, cut+64)
	out = append(out, body[:cut]...)
	for i := len(open) - 1; i >= 0; i-- {
		out = append(out, "</"+open[i]+">"...)
	}
	return out, true
}
