package segmenter

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

// Places in people's words.
//
// A change's Path ("html|body|div-main|article[2]|p[3]") is for programs;
// a reader is told where a change is as the page shows it (Change.Where):
// under the nearest heading before it ("under ‘Opening hours’"), in a
// part of the page that has a name (an aria-label, a landmark: "in the
// navigation", "in the footer"), or nothing when the page gives neither.

// maxPlace bounds the characters of a heading or label quoted in a place.
const maxPlace = 60

// places names the places of changes in one scan of a page, remembering
// the headings it walked.
type places struct {
	d *doc
	// heading[i] is the element of the last heading that ended before
	// token i (-1 for none); made on first use.
	heading []int32
}

// placeOf names where node n is (a text, or an element) in its page.
func (p *places) placeOf(n *tnode) string {
	if n == nil || n.d != p.d || int(n.tokA) < 0 || int(n.tokA) >= len(p.d.toks) {
		return ""
	}
	d := p.d
	ei := n.elem
	if ei < 0 {
		ei = n.encl
	}
	// A named part of the page around it.
	for e, depth := ei, 0; e >= 0 && depth < 256; e, depth = d.elems[e].parent, depth+1 {
		if d.elems[e].tok < 0 {
			break // a phantom ancestor of a partial scan
		}
		if page, ok := d.attr(&d.elems[e], pdfPageAttr); ok && page != "" {
			return "on page " + clipPlace(page) // a page of a PDF (pdfdoc.go)
		}
		if e != ei {
			if label, ok := d.attr(&d.elems[e], "aria-label"); ok && strings.TrimSpace(label) != "" {
				return "in ‘" + clipPlace(label) + "’"
			}
		}
		if name := landmark(d, e); name != "" {
			return "in the " + name
		}
	}
	if h := p.headingBefore(int(n.tokA)); h >= 0 && p.headingBefore(min(int(n.tokB), len(d.toks)-1)) == h {
		// (A change that holds a heading of its own, a story or a
		// section, is not said to be under the one before it.)
		e := &d.elems[h]
		if text := d.visibleText(int(e.tok), int(e.endTok)); text != "" {
			return "under ‘" + clipWords(text, maxPlaceWords) + "’"
		}
	}
	return ""
}

// maxPlaceWords bounds the words of a heading quoted in a place.
const maxPlaceWords = 5

// clipWords keeps the first n words of s, "…" when there are more.
func clipWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		return clipPlace(strings.Join(f[:n], " ")) + "…"
	}
	return clipPlace(s)
}

// landmark names the part of a page element e is, for a landmark that
// repeats across pages (its navigation, header, footer, sidebar); "" for
// another element.
func landmark(d *doc, e int32) string {
	role, _ := d.attr(&d.elems[e], "role")
	tag := d.tagOf(e)
	switch {
	case tag == "nav" || role == "navigation":
		return "navigation"
	case tag == "footer" && !inArticle(d, e) || role == "contentinfo":
		return "footer"
	case tag == "header" && !inArticle(d, e) || role == "banner":
		return "page header"
	case tag == "aside" || role == "complementary":
		return "sidebar"
	}
	// Pages older than those elements name the parts by class or id
	// (div.sphinxsidebar, div#footer, ul.navbar): whole names only, so
	// that a page's wrapper "has-sidebar" or a restaurant's "menu" is not
	// taken for one.
	if tag == "div" || tag == "ul" || tag == "section" || tag == "td" {
		id, _ := d.attr(&d.elems[e], "id")
		class, _ := d.attr(&d.elems[e], "class")
		for _, w := range strings.Fields(strings.ToLower(id + " " + class)) {
			switch w {
			case "sidebar", "sphinxsidebar", "side-bar", "left-sidebar", "right-sidebar":
				return "sidebar"
			case "navbar", "nav", "navigation", "main-nav", "mainnav", "main-menu", "mainmenu", "site-nav":
				return "navigation"
			case "footer", "site-footer", "page-footer", "pagefooter":
				if !inArticle(d, e) {
					return "footer"
				}
			}
		}
	}
	return ""
}

// inArticle reports whether element e is inside an article or main
// element (whose header and footer are its own, not the page's).
func inArticle(d *doc, e int32) bool {
	for p, depth := d.elems[e].parent, 0; p >= 0 && depth < 256; p, depth = d.elems[p].parent, depth+1 {
		if t := d.tagOf(p); t == "article" || t == "main" {
			return true
		}
	}
	return false
}

// headingBefore returns the element of the last heading that ended before
// token i, -1 for none.
func (p *places) headingBefore(i int) int32 {
	if p.heading == nil {
		d := p.d
		p.heading = make([]int32, len(d.toks))
		last := int32(-1)
		for j := range d.toks {
			p.heading[j] = last
			t := &d.toks[j]
			// The page's own title (h1) names the page, not a part of it.
			if t.kind == tEnd && t.elem >= 0 && d.elems[t.elem].info&tiHeading != 0 && d.tagOf(t.elem) != "h1" {
				last = t.elem
			}
		}
	}
	return p.heading[i]
}

// clipPlace collapses s and cuts it to maxPlace characters.
func clipPlace(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxPlace {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:maxPlace-1])) + "…"
}

// pageName is what names the page: its title; without one, the title it
// gives to links shared (og:title), its h1, or its first h2 or h3. A
// fragment of a page served alone often has no title, and a watch named
// by its address reads badly in a list of titles.
func (d *doc) pageName() string {
	if d.title != "" {
		return d.title
	}
	best, rank := "", 4
	for i := range d.elems {
		e := &d.elems[i]
		if e.tok < 0 {
			continue
		}
		if e.info&tiHeading == 0 {
			if rank > 0 && e.tagKey == uint32(atom.Meta) {
				if p, _ := d.attr(e, "property"); p == "og:title" {
					if c, _ := d.attr(e, "content"); strings.TrimSpace(c) != "" {
						best, rank = c, 0
					}
				}
			}
			continue
		}
		r := int(d.tagOf(int32(i))[1] - '0')
		if r >= rank || e.flags&eBoiler != 0 {
			continue
		}
		if t := strings.TrimSpace(d.visibleText(int(e.tok), int(e.endTok))); t != "" {
			best, rank = t, r
		}
	}
	return clipTitle(best)
}

// maxTitle bounds the characters of a heading taken as a change's title.
const maxTitle = 200

// clipTitle collapses the white space of s and cuts it to maxTitle
// characters.
func clipTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxTitle {
		s = string([]rune(s)[:maxTitle-1]) + "…"
	}
	return s
}

// headingScan bounds the tokens looked at for the heading a block starts
// with.
const headingScan = 256

// ownHeading returns the heading a block added or removed starts with (a
// story of a front page: its headline, then its text) and the address of
// the link in it: the change's title, as a feed item has one. "" when
// the block's text does not start with an h2 to h6, or is only the
// heading. The h1 names the page.
func (p *places) ownHeading(n *tnode) (title, link string) {
	if n == nil || n.elem < 0 || n.d != p.d || int(n.tokA) < 0 || int(n.tokB) > len(p.d.toks) {
		return "", ""
	}
	d := p.d
	for i := int(n.tokA); i < int(n.tokB) && i < int(n.tokA)+headingScan; i++ {
		t := &d.toks[i]
		if t.kind == tText && t.flags&fVisible != 0 {
			return "", "" // text before any heading
		}
		if t.kind != tStart || t.elem < 0 || t.elem == n.elem {
			continue
		}
		e := &d.elems[t.elem]
		if e.info&tiHeading == 0 {
			continue
		}
		if d.tagOf(t.elem) == "h1" || int(e.endTok) >= int(n.tokB) {
			return "", ""
		}
		title = clipTitle(d.visibleText(int(e.tok), int(e.endTok)))
		if title == "" || strings.TrimSpace(d.visibleText(int(e.endTok), int(n.tokB))) == "" {
			return "", ""
		}
		for j := int(e.tok); j < int(e.endTok); j++ {
			if a := d.toks[j].elem; d.toks[j].kind == tStart && a >= 0 && d.tagOf(a) == "a" {
				if href, ok := d.attr(&d.elems[a], "href"); ok {
					link = strings.TrimSpace(href)
				}
				break
			}
		}
		return title, link
	}
	return "", ""
}
