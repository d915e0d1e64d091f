package segmenter

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
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
// ancestors, outermost first.
func feedXMLScan(body []byte, each func(start, end int, open []string)) {
	d := xml.NewDecoder(bytes.NewReader(feedScanBytes(body)))
	d.Strict = false
	d.CharsetReader = feedIdentityCharset
	var stack []string // raw names, "prefix:local"
	var locals []string
	// open counts the elements of each name on the stack, so that an end
	// tag matching none is ignored at once: searching the stack for each
	// took time quadratic in the nesting (100,000 stray end tags in a
	// 700 KB feed took 23 s of CPU).
	open := map[string]int{}
	itemDepth, itemStart := -1, 0
	for {
		off := int(d.InputOffset())
		tok, err := d.RawToken()
		if err != nil {
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			local := strings.ToLower(t.Name.Local)
			if itemDepth < 0 && feedIsItem(local, locals) {
				itemDepth, itemStart = len(stack), off
			}
			raw := t.Name.Local
			if t.Name.Space != "" {
				raw = t.Name.Space + ":" + raw
			}
			stack = append(stack, raw)
			locals = append(locals, local)
			open[raw]++
		case xml.EndElement:
			raw := t.Name.Local
			if t.Name.Space != "" {
				raw = t.Name.Space + ":" + raw
			}
			// Close the innermost element of that name, and any left open
			// inside it; an end tag matching nothing is ignored.
			if open[raw] == 0 {
				continue
			}
			i := len(stack) - 1
			for stack[i] != raw {
				i--
			}
			for _, name := range stack[i:] {
				open[name]--
			}
			stack, locals = stack[:i], locals[:i]
			if itemDepth >= 0 && i <= itemDepth {
				if i == itemDepth {
					each(itemStart, int(d.InputOffset()), stack)
				}
				itemDepth = -1
			}
		}
	}
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
	feedXMLScan(body, func(start, end int, _ []string) { out = append(out, [2]int{start, end}) })
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
