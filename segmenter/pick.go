package segmenter

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/changedigest/changedigest"
	"golang.org/x/net/html"
)

// Picked is an element of a page chosen by its path, with a zone (a CSS
// selector) that selects it and nothing else in that page.
type Picked struct {
	// Path is the element's readable path ("html|body|div-main|p[2]").
	Path string
	// Selector is the zone: valid for CheckZone, it selects exactly this
	// element of the page it was picked from.
	Selector string
	// Text is the element's visible text.
	Text string
}

// Pick finds in body, an HTML page, the elements named by paths (as the
// segmenter writes paths, and as a screenshot's boxes name elements),
// and picks the first of them with visible text, else the first found.
// Its selector is, by preference, its id, a combination of its stable
// classes, or a path of tag:nth-of-type steps from the nearest ancestor
// with an id (else from body); each candidate is checked to select that
// element alone. Errors: ErrNoElement (ENOTFOUND) when no path names an
// element; ErrZone when no selector selects it alone (an element of a
// tree too deep to walk).
func Pick(body []byte, paths ...string) (*Picked, error) {
	noElement := &inputError{kind: ErrNoElement, user: changedigest.Errorf(changedigest.ENOTFOUND, "the picked element is not in the stored page")}
	if len(paths) == 0 {
		return nil, noElement
	}
	d := scan(nil, body, nil, step{})
	defer d.release()
	want := make(map[string]int, len(paths))
	for i, p := range paths {
		if _, ok := want[p]; !ok {
			want[p] = i
		}
	}
	found := make([]int32, len(paths))
	for i := range found {
		found[i] = -1
	}
	for ei := range d.elems {
		if i, ok := want[d.path(int32(ei))]; ok && found[i] < 0 {
			found[i] = int32(ei)
		}
	}
	pick, text := int32(-1), ""
	for _, ei := range found {
		if ei < 0 {
			continue
		}
		e := &d.elems[ei]
		t := d.visibleText(int(e.tok), int(e.endTok)+1)
		if pick < 0 || strings.TrimSpace(text) == "" && strings.TrimSpace(t) != "" {
			pick, text = ei, t
		}
		if strings.TrimSpace(text) != "" {
			break
		}
	}
	if pick < 0 {
		return nil, noElement
	}
	root, byNode := d.htmlTree()
	var node *html.Node
	for n, ei := range byNode {
		if ei == pick {
			node = n
			break
		}
	}
	if node == nil {
		return nil, noElement
	}
	sel, ok := selectorFor(root, node)
	if !ok {
		return nil, inputErrorf(ErrZone, "no selector selects the picked element alone")
	}
	return &Picked{Path: d.path(pick), Selector: sel, Text: strings.TrimSpace(text)}, nil
}

// selectorFor returns a selector that selects n alone under root.
func selectorFor(root, n *html.Node) (string, bool) {
	if sel := ownSelector(root, n, true); sel != "" {
		return sel, true
	}
	// A path of steps up to an ancestor with an id or a class of its
	// own, else body.
	steps := []string{typeStep(n)}
	for m := n.Parent; m != nil && m.Type == html.ElementNode; m = m.Parent {
		if sel := ownSelector(root, m, false); sel != "" {
			steps = append(steps, sel)
			break
		}
		if m.Data == "body" || m.Data == "html" {
			steps = append(steps, m.Data)
			break
		}
		steps = append(steps, typeStep(m))
	}
	slices.Reverse(steps)
	if sel := strings.Join(steps, " > "); selectsAlone(root, n, sel) {
		return sel, true
	}
	return "", false
}

// ownSelector returns a selector made of n's own id or stable classes
// (pairs of them too when pairs is set) that selects n alone under
// root; "" when there is none.
func ownSelector(root, n *html.Node, pairs bool) string {
	if id := idSelector(n); id != "" && selectsAlone(root, n, id) {
		return id
	}
	var classes []string
	for _, c := range strings.Fields(attrVal(n, "class")) {
		if stableClass(c) && !slices.Contains(classes, "."+c) {
			classes = append(classes, "."+c)
		}
	}
	for _, c := range classes {
		if sel := n.Data + c; selectsAlone(root, n, sel) {
			return sel
		}
	}
	if !pairs {
		return ""
	}
	for i := range classes {
		for _, c := range classes[i+1:] {
			if sel := n.Data + classes[i] + c; selectsAlone(root, n, sel) {
				return sel
			}
		}
	}
	return ""
}

// selectsAlone reports whether zone sel is valid and selects n and
// nothing else under root.
func selectsAlone(root, n *html.Node, sel string) bool {
	if CheckZone(sel) != nil {
		return false
	}
	z, err := compileZone(sel)
	if err != nil {
		return false
	}
	got := z.queryAll(root)
	return len(got) == 1 && got[0] == n
}

// typeStep is the step of a path to element n: its tag, with
// :nth-of-type when a sibling has the same tag.
func typeStep(n *html.Node) string {
	k, total := 0, 0
	for s := n.Parent.FirstChild; s != nil; s = s.NextSibling {
		if s.Type != html.ElementNode || s.Data != n.Data {
			continue
		}
		total++
		if s == n {
			k = total
		}
	}
	if total == 1 {
		return n.Data
	}
	return fmt.Sprintf("%s:nth-of-type(%d)", n.Data, k)
}

// idSelector is the selector of n's id, "" when it has none; an id that
// is no plain CSS identifier is matched as an attribute.
func idSelector(n *html.Node) string {
	id := attrVal(n, "id")
	if strings.TrimSpace(id) == "" {
		return ""
	}
	if ident.MatchString(id) {
		return "#" + id
	}
	return n.Data + `[id="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(id) + `"]`
}

func attrVal(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// ident is a plain CSS identifier, written without escapes.
var ident = regexp.MustCompile(`^-?[A-Za-z_][A-Za-z0-9_-]*$`)

// generated matches class names that build tools generate and change at
// every build ("css-1q2w3e", "sc-bdVaJa", "jsx-2931"), and state classes
// that come and go as the page is used.
var generated = regexp.MustCompile(`^(css|sc|jsx|emotion|svelte|tw)-|[0-9]{3,}|[_-][A-Za-z0-9]*[0-9][A-Za-z0-9]*$|^(is|has)-|^(active|selected|current|open|hover|focus|visible|hidden|show|in)$`)

// stableClass reports whether class c is a plain identifier that looks
// written by hand, not generated.
func stableClass(c string) bool {
	return len(c) <= 40 && ident.MatchString(c) && !generated.MatchString(c)
}
