package segmenter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"
)

// JSON documents.
//
// A JSON response that is not a JSON Feed (an API's answer, a price list,
// a status document) is watched as the page a person would read it as:
// each object a section headed by its key, each value a line "key:
// value" under it, the objects of an array headed by their name (their
// "name", "title", "id" or first text field) or their index. Its changes
// are then told as any page's are, in people's words and placed under the
// heading of the object they are in: "under ‘offers’: price: [-24-]{+29+}",
// an added object by its name. The order of keys is the document's.

// jsonMaxDepth bounds the nesting of a JSON document read as a page.
const jsonMaxDepth = 64

// jsonLabelKeys are the fields that name an object of an array, in order.
var jsonLabelKeys = []string{"name", "title", "label", "id", "key", "slug", "itemType", "type", "code", "LongName", "Location"}

// isJSONDocument reports whether body is JSON that is not a JSON Feed.
func isJSONDocument(body []byte) bool {
	b := bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimLeft(body, " \t\r\n\f"), []byte("\xef\xbb\xbf")), " \t\r\n\f")
	if len(b) == 0 || b[0] != '{' && b[0] != '[' {
		return false
	}
	k, err := Sniff(body)
	return err != nil && errors.Is(err, ErrNotDocument) && k == "" && (json.Valid(b) || json.Valid(quoteNonNumbers(b)))
}

// quoteNonNumbers writes the NaN, Infinity and -Infinity that some
// encoders (Python's) put in JSON as strings, outside strings, so that
// the document reads.
func quoteNonNumbers(b []byte) []byte {
	var out []byte
	in, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
		case c == '"':
			in = true
		default:
			for _, w := range []string{"NaN", "Infinity", "-Infinity"} {
				if bytes.HasPrefix(b[i:], []byte(w)) {
					if out == nil {
						out = append(make([]byte, 0, len(b)+64), b[:i]...)
					}
					out = append(out, '"')
					out = append(out, w...)
					out = append(out, '"')
					i += len(w) - 1
					goto next
				}
			}
		}
		if out != nil {
			out = append(out, c)
		}
	next:
	}
	if out == nil {
		return b
	}
	return out
}

// jsonNode is a JSON value with its object keys in document order.
type jsonNode struct {
	kind   byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	scalar string
	keys   []string
	kids   []*jsonNode
}

// jsonPage renders a JSON document as an HTML page (see above); with a
// zone that is a JSON path, only the part it selects (an empty page when
// none).
func jsonPage(body []byte, zone string) ([]byte, error) {
	return jsonPageContext(context.Background(), body, zone, 0)
}

// jsonPageContext is jsonPage under ctx, for a zone that may also be a
// jq program (jq.go), run for at most jqTimeout (0: DefaultJQTimeout).
func jsonPageContext(ctx context.Context, body []byte, zone string, jqTimeout time.Duration) ([]byte, error) {
	body = bytes.TrimPrefix(bytes.TrimLeft(body, " \t\r\n\f"), []byte("\xef\xbb\xbf"))
	steps, isPath, err := parseJSONPath(zone)
	if err != nil {
		return nil, err
	}
	isJQ := isJQZone(zone)
	if isJQ {
		if _, err := parseJQ(zone); err != nil {
			return nil, err
		}
	}
	if !json.Valid(body) {
		body = quoteNonNumbers(body)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	root, err := readJSON(d, 0)
	if err != nil {
		return nil, inputErrorf(ErrNotDocument, "JSON document: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, inputErrorf(ErrNotDocument, "JSON document: more than one value")
	}
	name := ""
	switch {
	case isPath:
		root = selectJSON(root, steps)
		name = zone
	case isJQ:
		if root, err = runJQ(ctx, root, zone, jqTimeout, len(body)); err != nil {
			return nil, err
		}
		if root != nil && root.label() != "" {
			// One named object (select(.id == …)): headed by its name,
			// as in an array, so that its changes are told under it.
			root = &jsonNode{kind: 'a', kids: []*jsonNode{root}}
		}
	}
	var b bytes.Buffer
	b.Grow(len(body) + len(body)/2)
	b.WriteString("<!DOCTYPE html><html><head></head><body><main>")
	if root != nil {
		// The page is bounded by the document's size: past the bound
		// (many tiny objects render to more than they take) the rest is
		// left out.
		jw := &jsonWriter{b: &b, limit: b.Len() + 3*len(body) + 64<<10}
		jw.write(root, name, 2)
	}
	b.WriteString("</main></body></html>")
	return b.Bytes(), nil
}

func readJSON(d *json.Decoder, depth int) (*jsonNode, error) {
	if depth > jsonMaxDepth {
		return nil, fmt.Errorf("nested deeper than %d", jsonMaxDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case json.Delim:
		n := &jsonNode{kind: 'a'}
		if v == '{' {
			n.kind = 'o'
		}
		for d.More() {
			if n.kind == 'o' {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				n.keys = append(n.keys, k)
			}
			kid, err := readJSON(d, depth+1)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kid)
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &jsonNode{kind: 's', scalar: v}, nil
	case json.Number:
		return &jsonNode{kind: 'n', scalar: v.String()}, nil
	case bool:
		return &jsonNode{kind: 'b', scalar: strconv.FormatBool(v)}, nil
	}
	return &jsonNode{kind: 'z', scalar: "null"}, nil
}

func (n *jsonNode) scalarKind() bool { return n.kind != 'o' && n.kind != 'a' }

// label names an object of an array: its first naming field, else its
// first text field, else "".
func (n *jsonNode) label() string {
	if n.kind != 'o' {
		return ""
	}
	for _, want := range jsonLabelKeys {
		for i, k := range n.keys {
			if strings.EqualFold(k, want) && n.kids[i].scalarKind() && n.kids[i].kind != 'z' && n.kids[i].scalar != "" {
				return n.kids[i].scalar
			}
		}
	}
	for i := range n.keys {
		if n.kids[i].kind == 's' && n.kids[i].scalar != "" && len(n.kids[i].scalar) <= 80 {
			return n.kids[i].scalar
		}
	}
	return ""
}

// jsonWriter writes a document's page up to limit bytes.
type jsonWriter struct {
	b     *bytes.Buffer
	limit int
}

func (jw *jsonWriter) full() bool { return jw.b.Len() > jw.limit }

// write writes n, found under name (its key, "" for the root), with
// headings of level h for the objects and arrays it holds.
func (jw *jsonWriter) write(n *jsonNode, name string, h int) {
	b, esc := jw.b, html.EscapeString
	hn := strconv.Itoa(min(h, 6))
	switch n.kind {
	case 'o':
		// Scalars first as lines, then the nested values as sections.
		for i, k := range n.keys {
			if kid := n.kids[i]; kid.scalarKind() && !jw.full() {
				b.WriteString("<p>" + esc(k) + ": " + esc(kid.scalar) + "</p>")
			}
		}
		for i, k := range n.keys {
			if kid := n.kids[i]; !kid.scalarKind() && !jw.full() {
				b.WriteString("<section><h" + hn + ">" + esc(k) + "</h" + hn + ">")
				jw.write(kid, k, h+1)
				b.WriteString("</section>")
			}
		}
	case 'a':
		allScalar := true
		for _, kid := range n.kids {
			allScalar = allScalar && kid.scalarKind()
		}
		if allScalar {
			b.WriteString("<ul>")
			for _, kid := range n.kids {
				if jw.full() {
					break
				}
				b.WriteString("<li>" + esc(kid.scalar) + "</li>")
			}
			b.WriteString("</ul>")
			return
		}
		short := clipPlace(name) // a long key is not repeated for each object
		for i, kid := range n.kids {
			if jw.full() {
				return
			}
			if kid.scalarKind() {
				b.WriteString("<p>" + esc(kid.scalar) + "</p>")
				continue
			}
			title := clipPlace(kid.label())
			if title == "" {
				title = fmt.Sprintf("%s[%d]", short, i)
			}
			b.WriteString("<article><h" + hn + ">" + esc(title) + "</h" + hn + ">")
			jw.write(kid, title, h+1)
			b.WriteString("</article>")
		}
	default:
		b.WriteString("<p>" + esc(n.scalar) + "</p>")
	}
}

// JSON zones.
//
// A watch of a JSON document may restrict itself to part of it with a
// zone that is a path instead of a CSS selector: "$.offers", "$.offers[0]",
// "$.offers[*].price", "$['opening hours']", "$..price" is not supported.
// The part the path selects (every match of a wildcard, as an array) is
// what is read as the page.

// jsonStep is one step of a JSON path: a key, an index, or every member
// (wild).
type jsonStep struct {
	key   string
	index int // -1 for a key or wild
	wild  bool
}

// parseJSONPath reads a zone that is a JSON path; ok is false when zone
// is not one (it does not start with "$").
func parseJSONPath(zone string) (steps []jsonStep, ok bool, err error) {
	if !strings.HasPrefix(zone, "$") {
		return nil, false, nil
	}
	bad := func(why string) ([]jsonStep, bool, error) {
		return nil, true, inputErrorf(ErrZone, "invalid JSON path %q: %s", zone, why)
	}
	p := zone[1:]
	for p != "" {
		switch {
		case strings.HasPrefix(p, ".."):
			return bad("recursive descent (..) is not supported")
		case p[0] == '.':
			p = p[1:]
			n := strings.IndexAny(p, ".[")
			if n < 0 {
				n = len(p)
			}
			if n == 0 {
				return bad("a key is missing after '.'")
			}
			if p[:n] == "*" {
				steps = append(steps, jsonStep{index: -1, wild: true})
			} else {
				steps = append(steps, jsonStep{key: p[:n], index: -1})
			}
			p = p[n:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return bad("a '[' is not closed")
			}
			in := strings.TrimSpace(p[1:end])
			switch {
			case in == "*":
				steps = append(steps, jsonStep{index: -1, wild: true})
			case len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0]:
				steps = append(steps, jsonStep{key: in[1 : len(in)-1], index: -1})
			default:
				i, err := strconv.Atoi(in)
				if err != nil || i < 0 {
					return bad(fmt.Sprintf("%q is not an index, a quoted key or *", in))
				}
				steps = append(steps, jsonStep{index: i})
			}
			p = p[end+1:]
		default:
			return bad(fmt.Sprintf("unexpected %q", p[:1]))
		}
		if len(steps) > 64 {
			return bad("more than 64 steps")
		}
	}
	return steps, true, nil
}

// splitJSONZone tells a JSON document's zone apart: a JSON path or a jq
// program picks the part of the document rendered (path), anything else is a CSS selector
// of the rendered page (css).
func splitJSONZone(zone string) (path, css string) {
	if _, isPath, _ := parseJSONPath(zone); isPath || isJQZone(zone) {
		return zone, ""
	}
	return "", zone
}

// selectJSON applies steps to n: the one value they lead to, an array of
// every value when a step is a wildcard, or nil when none.
func selectJSON(n *jsonNode, steps []jsonStep) *jsonNode {
	cur := []*jsonNode{n}
	wild := false
	for _, st := range steps {
		var next []*jsonNode
		for _, c := range cur {
			switch {
			case st.wild:
				next = append(next, c.kids...)
			case st.key != "" || st.index < 0:
				if c.kind == 'o' {
					for i, k := range c.keys {
						if k == st.key {
							next = append(next, c.kids[i])
							break
						}
					}
				}
			case c.kind == 'a' && st.index < len(c.kids):
				next = append(next, c.kids[st.index])
			}
		}
		wild = wild || st.wild
		cur = next
	}
	switch {
	case len(cur) == 0:
		return nil
	case !wild:
		return cur[0]
	}
	return &jsonNode{kind: 'a', kids: cur}
}
