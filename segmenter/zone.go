package segmenter

import (
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// regions returns the parts of d that detection is restricted to: nil for
// the whole page when zone is empty, else the outermost elements the CSS
// selector matches (possibly none). An invalid selector is an EINVALID
// error wrapping ErrZone.
func regions(d *doc, zone string) ([]region, error) {
	if zone == "" {
		return nil, nil
	}
	sel, err := compileZone(zone)
	if err != nil {
		return nil, err
	}
	root, byNode := d.htmlTree()
	var out []region
	last := -1 // end token of the last region, to skip nested matches
	for _, n := range cascadia.QueryAll(root, sel) {
		ei, ok := byNode[n]
		if !ok {
			continue
		}
		e := &d.elems[ei]
		if int(e.tok) < last {
			continue
		}
		out = append(out, region{elem: ei, a: int(e.tok), b: int(e.endTok) + 1})
		last = int(e.endTok) + 1
	}
	if out == nil {
		out = []region{}
	}
	return out, nil
}

func compileZone(zone string) (cascadia.Selector, error) {
	if isJQZone(zone) {
		return nil, inputErrorf(ErrZone, "zone %q is a jq program, for JSON documents; this one is not JSON", zone)
	}
	sel, err := cascadia.Compile(zone)
	if err != nil {
		return nil, inputErrorf(ErrZone, "invalid zone selector %q: %v", zone, err)
	}
	return sel, nil
}

// htmlTree converts the light DOM into an *html.Node tree for selectors.
func (d *doc) htmlTree() (*html.Node, map[*html.Node]int32) {
	root := &html.Node{Type: html.DocumentNode}
	byNode := make(map[*html.Node]int32, len(d.elems))
	nodes := make([]*html.Node, len(d.elems))
	parentOf := func(ei int32) *html.Node {
		if ei < 0 || nodes[ei] == nil {
			return root
		}
		return nodes[ei]
	}
	for i, t := range d.toks {
		switch t.kind {
		case tStart, tVoid:
			e := &d.elems[t.elem]
			n := &html.Node{Type: html.ElementNode, Data: d.tagOf(t.elem)}
			for _, a := range d.attrs[e.attr0 : e.attr0+e.nattr] {
				n.Attr = append(n.Attr, html.Attribute{Key: string(d.norm[a.k0:a.k1]), Val: string(d.norm[a.v0:a.v1])})
			}
			parentOf(e.parent).AppendChild(n)
			nodes[t.elem] = n
			byNode[n] = t.elem
		case tText:
			parentOf(t.elem).AppendChild(&html.Node{Type: html.TextNode, Data: d.textOf(i)})
		}
	}
	return root, byNode
}

// CheckZone reports whether zone is a zone the segmenter accepts (a CSS
// selector, a JSON path or a jq program): nil for "" and valid zones,
// else an EINVALID error naming it.
func CheckZone(zone string) error {
	if zone == "" {
		return nil
	}
	if _, isPath, err := parseJSONPath(zone); isPath {
		return err // a JSON document's zone
	}
	if isJQZone(zone) {
		_, err := parseJQ(zone) // a JSON document's zone
		return err
	}
	_, err := compileZone(zone)
	return err
}
