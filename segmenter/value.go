package segmenter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/andybalholm/cascadia"
	"github.com/antchfx/htmlquery"
	"github.com/antchfx/xpath"
	"golang.org/x/net/html"

	"github.com/changedigest/changedigest"
)

// maxValueBody bounds the body a value is read from.
const maxValueBody = 32 << 20

// CheckValueSelector reports whether sel is a value selector ReadValue
// accepts: "" (the page's offer), a CSS selector, an XPath expression
// ("xpath:EXPR" or starting with "/"; it may select elements, attributes
// or text, or compute a string or number) or a JSON path ("$.price").
// Errors: EINVALID naming the value selector.
func CheckValueSelector(sel string) error {
	_, err := compileValue(sel)
	return err
}

// valueQuery is a compiled value selector.
type valueQuery struct {
	css    cascadia.Selector
	xpath  *xpath.Expr
	path   []jsonStep
	isPath bool
}

func compileValue(sel string) (valueQuery, error) {
	sel = strings.TrimSpace(sel)
	if sel == "" {
		return valueQuery{}, nil
	}
	if steps, isPath, err := parseJSONPath(sel); isPath {
		if err != nil {
			return valueQuery{}, inputErrorf(ErrZone, "invalid value selector: %v", err)
		}
		return valueQuery{path: steps, isPath: true}, nil
	}
	if isJQZone(sel) {
		return valueQuery{}, inputErrorf(ErrZone, "invalid value selector %q: jq programs are not read as values; use a JSON path ($.offer.price)", sel)
	}
	if IsXPath(sel) {
		src := strings.TrimSpace(strings.TrimPrefix(sel, xpathPrefix))
		expr, err := compileXPath(src)
		if err != nil || src == "" {
			if err == nil {
				err = fmt.Errorf("the expression is empty")
			}
			return valueQuery{}, inputErrorf(ErrZone, "invalid value selector XPath %q: %v", sel, err)
		}
		return valueQuery{xpath: expr}, nil
	}
	c, err := cascadia.Compile(sel)
	if err != nil {
		return valueQuery{}, inputErrorf(ErrZone, "invalid value selector %q: %v", sel, err)
	}
	return valueQuery{css: c}, nil
}

// ReadValue reads the value a watch follows from a version's body
// (UTF-8): the text the value selector sel picks (the first match of a
// CSS selector or XPath expression in a page, the value a JSON path
// leads to in a JSON document), or with sel "" the first offer in the
// page's structured data (an ld+json Offer or AggregateOffer, its price
// and availability). The text is read as a number (a price) and an
// availability (changedigest.Value.ReadValueText). When nothing is found,
// the value's Error says why.
func ReadValue(body []byte, sel string) *changedigest.Value {
	v := &changedigest.Value{}
	q, err := compileValue(sel)
	if err != nil {
		v.Error = changedigest.ErrorMessage(err)
		return v
	}
	if len(body) > maxValueBody {
		v.Error = fmt.Sprintf("the page is over %d bytes", maxValueBody)
		return v
	}
	var text string
	var found bool
	var price *float64
	switch {
	case q.isPath:
		text, price, found, err = jsonValue(body, q.path)
		if err != nil {
			v.Error = err.Error()
			return v
		}
		if !found {
			v.Error = fmt.Sprintf("the value selector %q leads to nothing in the document", sel)
			return v
		}
	case sel == "":
		text, price, found = offerValue(body)
		if !found {
			v.Error = "no offer (price, availability) in the page's structured data; set a value selector"
			return v
		}
	default:
		root, err := html.Parse(bytes.NewReader(body))
		if err != nil {
			v.Error = "the page does not read as HTML: " + err.Error()
			return v
		}
		text, found = q.htmlValue(root)
		if !found {
			v.Error = fmt.Sprintf("the value selector %q matched nothing", sel)
			return v
		}
	}
	v.ReadValueText(text)
	if price != nil {
		v.Number = price
	}
	if v.Number == nil && v.Avail == "" {
		v.Error = fmt.Sprintf("no number or availability in %q", v.Text)
		v.Text = ""
	}
	return v
}

// htmlValue is the text of the first node q selects in root: an
// element's visible text (or its content or value attribute when it has
// none: <meta itemprop="price" content="19.50">), an attribute's value,
// or what an XPath expression computes.
func (q valueQuery) htmlValue(root *html.Node) (text string, found bool) {
	if q.css != nil {
		n := cascadia.Query(root, q.css)
		if n == nil {
			return "", false
		}
		return elementValue(n), true
	}
	defer func() {
		if recover() != nil {
			text, found = "", false
		}
	}()
	switch r := q.xpath.Evaluate(htmlquery.CreateXPathNavigator(root)).(type) {
	case *xpath.NodeIterator:
		if !r.MoveNext() {
			return "", false
		}
		nav, ok := r.Current().(*htmlquery.NodeNavigator)
		if !ok {
			return r.Current().Value(), true
		}
		if nav.NodeType() == xpath.ElementNode {
			return elementValue(nav.Current()), true
		}
		return nav.Value(), true
	case string:
		return r, strings.TrimSpace(r) != ""
	case float64:
		return strconv.FormatFloat(r, 'f', -1, 64), true
	}
	return "", false
}

// elementValue is the visible text of n, or its content or value
// attribute when it shows none.
func elementValue(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
			b.WriteByte(' ')
		case n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style" || n.Data == "template" || n.Data == "noscript"):
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	if s := strings.TrimSpace(b.String()); s != "" {
		return s
	}
	for _, a := range n.Attr {
		if a.Key == "content" || a.Key == "value" {
			return a.Val
		}
	}
	return ""
}

// jsonValue is the text of the value steps lead to in a JSON document:
// a scalar as written, an object or array as its scalars, space-separated;
// num is a JSON number read exactly (1234.567 is not a shop's "1.234"),
// nil for any other value.
func jsonValue(body []byte, steps []jsonStep) (text string, num *float64, found bool, err error) {
	body = bytes.TrimPrefix(bytes.TrimLeft(body, " \t\r\n\f"), []byte("\xef\xbb\xbf"))
	if !json.Valid(body) {
		body = quoteNonNumbers(body)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	root, err := readJSON(d, 0)
	if err != nil {
		return "", nil, false, fmt.Errorf("the document does not read as JSON: %v", err)
	}
	n := selectJSON(root, steps)
	if n == nil {
		return "", nil, false, nil
	}
	if n.kind == 'n' {
		if f, err := strconv.ParseFloat(n.scalar, 64); err == nil && !math.IsInf(f, 0) {
			num = &f
		}
	}
	var parts []string
	var walk func(*jsonNode)
	walk = func(n *jsonNode) {
		if n.scalarKind() {
			parts = append(parts, n.scalar)
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(n)
	return strings.Join(parts, " "), num, true, nil
}

// offerValue finds the first offer in the ld+json scripts of a page and
// writes its price, currency and availability as one text ("19.5 EUR
// https://schema.org/InStock"), with the price read as schema.org writes
// it (a JSON number, or a string with a dot for decimals and no
// thousands separator: "1234.567" is not read as a shop's "1.234"); price
// is nil when the offer has none in that form.
func offerValue(body []byte) (text string, price *float64, ok bool) {
	root, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return "", nil, false
	}
	for _, s := range cascadia.QueryAll(root, ldJSON) {
		if s.FirstChild == nil {
			continue
		}
		var doc any
		src := strings.TrimSpace(s.FirstChild.Data)
		if len(src) > maxJSON || json.Unmarshal([]byte(src), &doc) != nil {
			continue
		}
		if o := findOffer(doc, 0); o != nil {
			text, price := offerText(o)
			return text, price, true
		}
	}
	return "", nil, false
}

var ldJSON = cascadia.MustCompile(`script[type="application/ld+json" i]`)

// findOffer walks structured data for the first object typed Offer or
// AggregateOffer (or an "offers" object with a price), depth first.
func findOffer(v any, depth int) map[string]any {
	if depth > jsonMaxDepth {
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		if isOffer(x) {
			return x
		}
		// The offers of a product before anything else it holds.
		if o, ok := x["offers"]; ok {
			if m, ok := o.(map[string]any); ok && (m["price"] != nil || m["lowPrice"] != nil || m["availability"] != nil) {
				return m
			}
			if f := findOffer(o, depth+1); f != nil {
				return f
			}
		}
		for _, k := range []string{"@graph", "mainEntity", "itemListElement", "item"} {
			if f := findOffer(x[k], depth+1); f != nil {
				return f
			}
		}
	case []any:
		for _, e := range x {
			if f := findOffer(e, depth+1); f != nil {
				return f
			}
		}
	}
	return nil
}

func isOffer(m map[string]any) bool {
	is := func(t any) bool {
		s, _ := t.(string)
		s = strings.TrimPrefix(strings.TrimPrefix(s, "http://schema.org/"), "https://schema.org/")
		return s == "Offer" || s == "AggregateOffer"
	}
	switch t := m["@type"].(type) {
	case string:
		return is(t)
	case []any:
		for _, e := range t {
			if is(e) {
				return true
			}
		}
	}
	return false
}

// offerText writes an offer's price (or low price), currency and
// availability, and returns the price read.
func offerText(o map[string]any) (string, *float64) {
	var parts []string
	var num *float64
	price := o["price"]
	if price == nil {
		price = o["lowPrice"]
	}
	if spec, ok := o["priceSpecification"].(map[string]any); ok && price == nil {
		price = spec["price"]
	}
	switch p := price.(type) {
	case float64:
		num = &p
		parts = append(parts, strconv.FormatFloat(p, 'f', -1, 64))
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(p), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			num = &f
		}
		parts = append(parts, p) // else read as a shop writes it
	}
	if c, ok := o["priceCurrency"].(string); ok {
		parts = append(parts, c)
	}
	if a, ok := o["availability"].(string); ok {
		parts = append(parts, a)
	}
	return strings.Join(parts, " "), num
}
