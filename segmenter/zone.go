package segmenter

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/andybalholm/cascadia"
	"github.com/antchfx/htmlquery"
	"github.com/antchfx/xpath"
	"golang.org/x/net/html"
)

// regions returns the parts of d that detection is restricted to: nil for
// the whole page when zone is empty, else the outermost elements the CSS
// selector or XPath expression matches (possibly none). An invalid zone
// is an EINVALID error wrapping ErrZone.
func regions(d *doc, zone string) ([]region, error) {
	if zone == "" {
		return nil, nil
	}
	z, err := compileZone(zone)
	if err != nil {
		return nil, err
	}
	root, byNode := d.htmlTree()
	var found []int32
	for _, n := range z.queryAll(root) {
		if ei, ok := byNode[n]; ok {
			found = append(found, ei)
		}
	}
	// In document order (an XPath union need not be), so that nested
	// matches are skipped.
	slices.SortFunc(found, func(a, b int32) int { return cmp.Compare(d.elems[a].tok, d.elems[b].tok) })
	var out []region
	last := -1 // end token of the last region, to skip nested matches
	for _, ei := range found {
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

// zoneQuery is a compiled zone: a CSS selector or an XPath expression.
type zoneQuery struct {
	css   cascadia.Selector
	xpath *xpath.Expr
}

// xpathPrefix marks a zone written as XPath; a zone that starts with "/"
// is XPath too ("//main", "/html/body/div[2]").
const xpathPrefix = "xpath:"

// IsXPath reports whether zone is written as an XPath expression: it
// starts with "xpath:" or "/".
func IsXPath(zone string) bool {
	return strings.HasPrefix(zone, xpathPrefix) || strings.HasPrefix(zone, "/")
}

func compileZone(zone string) (zoneQuery, error) {
	if isJQZone(zone) {
		return zoneQuery{}, inputErrorf(ErrZone, "zone %q is a jq program, for JSON documents; this one is not JSON", zone)
	}
	if IsXPath(zone) {
		src := strings.TrimSpace(strings.TrimPrefix(zone, xpathPrefix))
		if src == "" {
			return zoneQuery{}, inputErrorf(ErrZone, "invalid zone XPath %q: the expression is empty", zone)
		}
		expr, err := compileXPath(src)
		if err != nil {
			return zoneQuery{}, inputErrorf(ErrZone, "invalid zone XPath %q: %v", zone, err)
		}
		if !selectsNodes(expr) {
			return zoneQuery{}, inputErrorf(ErrZone, "invalid zone XPath %q: it must select elements (a number, text or true/false is no zone)", zone)
		}
		return zoneQuery{xpath: expr}, nil
	}
	sel, err := cascadia.Compile(zone)
	if err != nil {
		return zoneQuery{}, inputErrorf(ErrZone, "invalid zone selector %q: %v", zone, err)
	}
	return zoneQuery{css: sel}, nil
}

// compileXPath compiles src, with a panic of the parser as an error.
func compileXPath(src string) (expr *xpath.Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			expr, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return xpath.Compile(src)
}

// selectsNodes reports whether expr evaluates to a node set, tried on an
// empty document: "count(//a)" or "'x'" compile but select nothing.
func selectsNodes(expr *xpath.Expr) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, ok = expr.Evaluate(htmlquery.CreateXPathNavigator(&html.Node{Type: html.DocumentNode})).(*xpath.NodeIterator)
	return ok
}

// queryAll returns the elements the zone matches under root. An XPath
// expression that selects text or attribute nodes matches the elements
// that hold them; one that fails while it runs matches nothing.
func (z zoneQuery) queryAll(root *html.Node) (out []*html.Node) {
	if z.css != nil {
		return cascadia.QueryAll(root, z.css)
	}
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	seen := map[*html.Node]bool{}
	for it := z.xpath.Select(htmlquery.CreateXPathNavigator(root)); it.MoveNext(); {
		nav, ok := it.Current().(*htmlquery.NodeNavigator)
		if !ok {
			continue
		}
		n := nav.Current() // an attribute's element, too
		for n != nil && n.Type != html.ElementNode {
			n = n.Parent
		}
		if n != nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
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
// selector, an XPath expression written "xpath:EXPR" or starting with
// "/", a JSON path or a jq program): nil for "" and valid zones, else an
// EINVALID error naming it.
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
