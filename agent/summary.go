package agent

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"
)

// Summary is the page summary of seed 004 §4.1: the MD5 of the useful
// content of the title, the header, the main body and the footer. The
// digester agent (agent.js) computes the same summary in the browser; the
// two implementations follow one description, kept here:
//
//   - The document is parsed as a browser parses it (HTML5, scripting on).
//     script, style, noscript, template, iframe, object, embed and
//     elements outside the HTML namespace (svg, math) are ignored with
//     all they hold.
//   - Title: the text of the first title element, ASCII whitespace
//     collapsed (document.title).
//   - Header: the first element of the body, in document order, that is a
//     header element, has role banner, or has "header" or "masthead" as a
//     word of its id or class (words split on anything but a-z and 0-9,
//     lower case), and is not inside an article or main element.
//   - Footer: likewise the last such outermost element that is a footer,
//     has role contentinfo or the word "footer", outside the header.
//   - Main body (text and link density, after Pan): among body, main,
//     article, section, div and td elements outside the header and the
//     footer, counting only text outside them, with T characters of
//     text, L of them inside links and N elements (itself included),
//     the one with L ≤ T/2 and the highest (T−L)²/N; on a tie the first
//     met in post-order (children before their parent).
//     Characters are non-whitespace UTF-16 code units.
//   - Each part's content is its text with runs of ASCII whitespace made
//     one space and trimmed; its digest is the hex MD5 of that text in
//     UTF-8 (an absent part digests the empty string).
type Summary struct {
	Title, Header, Main, Footer string
}

// String is the wire form of a summary: the four hex digests joined by dots.
func (s Summary) String() string {
	return s.Title + "." + s.Header + "." + s.Main + "." + s.Footer
}

// ParseSummary reads the wire form made by String.
func ParseSummary(v string) (Summary, error) {
	p := strings.Split(v, ".")
	if len(p) != 4 {
		return Summary{}, fmt.Errorf("agent: summary %q does not have four parts", clip(v))
	}
	for _, x := range p {
		if len(x) != 32 || strings.Trim(x, "0123456789abcdef") != "" {
			return Summary{}, fmt.Errorf("agent: summary %q is not four hex MD5 digests", clip(v))
		}
	}
	return Summary{p[0], p[1], p[2], p[3]}, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Parts names the parts of s that differ from o.
func (s Summary) Parts(o Summary) []string {
	var d []string
	if s.Title != o.Title {
		d = append(d, "title")
	}
	if s.Header != o.Header {
		d = append(d, "header")
	}
	if s.Main != o.Main {
		d = append(d, "main")
	}
	if s.Footer != o.Footer {
		d = append(d, "footer")
	}
	return d
}

// partNames name a summary's parts, in order (as Parts names them).
var partNames = [4]string{"title", "header", "main", "footer"}

// differs says which parts of s differ from o, in the order of partNames.
func (s Summary) differs(o Summary) [4]bool {
	return [4]bool{s.Title != o.Title, s.Header != o.Header, s.Main != o.Main, s.Footer != o.Footer}
}

// Content is the text of each part, before hashing.
type Content struct {
	Title, Header, Main, Footer string
}

// Summary hashes the parts.
func (c Content) Summary() Summary {
	return Summary{digest(c.Title), digest(c.Header), digest(c.Main), digest(c.Footer)}
}

func digest(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Summarize computes the summary of an HTML page given its raw bytes and
// its Content-Type header (for the charset; may be empty).
func Summarize(body []byte, contentType string) Summary {
	return Extract(body, contentType).Summary()
}

// Extract finds the useful content of the four parts of a page.
func Extract(body []byte, contentType string) Content {
	doc, err := html.Parse(decode(body, contentType))
	if err != nil {
		return Content{}
	}
	var c Content
	var bodyEl *html.Node
	titleSeen := false
	var find func(n *html.Node)
	find = func(n *html.Node) {
		for k := n.FirstChild; k != nil; k = k.NextSibling {
			if k.Type != html.ElementNode || k.Namespace != "" || k.DataAtom == atom.Template {
				continue
			}
			if k.DataAtom == atom.Title && !titleSeen {
				titleSeen = true
				c.Title = collapse(childText(k))
			}
			if (k.DataAtom == atom.Body || k.DataAtom == atom.Frameset) && bodyEl == nil && n.DataAtom == atom.Html {
				bodyEl = k
			}
			find(k)
		}
	}
	find(doc)
	if bodyEl == nil {
		return c
	}
	x := &extractor{}
	x.regions(bodyEl, false)
	if x.header != nil {
		c.Header = collapse(text(x.header))
	}
	if x.footer != nil {
		c.Footer = collapse(text(x.footer))
	}
	x.best = nil
	x.score(bodyEl)
	if x.best != nil {
		c.Main = collapse(x.mainText(x.best))
	}
	return c
}

// decode reads the page in UTF-8 as a browser does: a byte order mark,
// the header's charset, else a <meta> charset found as Chromium looks for
// one (see metaCharset), else windows-1252. Browsers do not take a page
// for UTF-8 because it is valid UTF-8, as the fetcher does: the agent
// must see the text the visitor sees.
func decode(body []byte, contentType string) *bytes.Reader {
	enc, _, certain := charset.DetermineEncoding(body, contentType)
	if !certain {
		enc = charmap.Windows1252
		if label := metaCharset(body); label != "" {
			if e, _ := charset.Lookup(label); e != nil {
				enc = e
			}
		}
	}
	var out []byte
	if enc == charmap.Windows1252 {
		out = windows1252(body)
	} else if b, err := enc.NewDecoder().Bytes(body); err == nil {
		out = b
	} else {
		out = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	out = bytes.TrimPrefix(out, []byte("\uFEFF"))
	return bytes.NewReader(out)
}

// windows1252 decodes as the WHATWG Encoding standard does: the five
// bytes windows-1252 leaves undefined become the C1 controls of the same
// value, not U+FFFD.
func windows1252(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/8)
	for _, c := range b {
		if c < 0x80 {
			out = append(out, c)
			continue
		}
		r := charmap.Windows1252.DecodeByte(c)
		if r == utf8.RuneError {
			r = rune(c)
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

// metaCharset finds the charset a <meta> element declares as Chromium's
// meta charset parser does: it reads tags, skipping the content of
// scripts and styles, for the first 1024 bytes and beyond them while it
// is still in the head (only script, noscript, style, link, meta,
// object, title, base, html and head tags seen).
func metaCharset(body []byte) string {
	z := html.NewTokenizer(bytes.NewReader(body))
	consumed, inHead := 0, true
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return ""
		}
		consumed += len(z.Raw())
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken || tt == html.EndTagToken {
			name, hasAttr := z.TagName()
			tag := string(name)
			if tt != html.EndTagToken && tag == "meta" && hasAttr {
				var cs, equiv, content string
				for {
					k, v, more := z.TagAttr()
					switch strings.ToLower(string(k)) {
					case "charset":
						cs = string(v)
					case "http-equiv":
						equiv = strings.ToLower(string(v))
					case "content":
						content = string(v)
					}
					if !more {
						break
					}
				}
				if cs = strings.TrimSpace(cs); cs != "" {
					return cs
				}
				if equiv == "content-type" {
					if i := strings.Index(strings.ToLower(content), "charset="); i >= 0 {
						v := strings.Trim(content[i+8:], "\"' ")
						if j := strings.IndexAny(v, "; \"'"); j >= 0 {
							v = v[:j]
						}
						if v != "" {
							return v
						}
					}
				}
			}
			switch tag {
			case "script", "noscript", "style", "link", "meta", "object", "title", "base":
			case "html", "head":
				if tt == html.EndTagToken {
					inHead = false
				}
			default:
				inHead = false
			}
		}
		if !inHead && consumed >= 1024 {
			return ""
		}
	}
}

// skipped reports whether n and all it holds are ignored.
func skipped(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return n.Type != html.TextNode
	}
	if n.Namespace != "" {
		return true
	}
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Object, atom.Embed:
		return true
	}
	return false
}

func childText(n *html.Node) string {
	var b strings.Builder
	for k := n.FirstChild; k != nil; k = k.NextSibling {
		if k.Type == html.TextNode {
			b.WriteString(k.Data)
		}
	}
	return b.String()
}

// text is the text of n's subtree, skipped elements left out.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for k := n.FirstChild; k != nil; k = k.NextSibling {
			if skipped(k) {
				continue
			}
			if k.Type == html.TextNode {
				b.WriteString(k.Data)
				continue
			}
			walk(k)
		}
	}
	walk(n)
	return b.String()
}

func isSpace(c rune) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// collapse makes runs of ASCII whitespace one space and trims the ends.
func collapse(s string) string {
	var b strings.Builder
	space := false
	for _, c := range s {
		if isSpace(c) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(c)
	}
	return b.String()
}

// units counts the non-whitespace UTF-16 code units of s.
func units(s string) int {
	n := 0
	for _, c := range s {
		switch {
		case isSpace(c):
		case c >= 0x10000:
			n += 2
		default:
			n++
		}
	}
	return n
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == name {
			return a.Val
		}
	}
	return ""
}

// hasWord reports whether one of n's id and class words is one of words.
func hasWord(n *html.Node, words ...string) bool {
	s := strings.ToLower(attr(n, "id") + " " + attr(n, "class"))
	for _, f := range strings.FieldsFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
	}) {
		for _, w := range words {
			if f == w {
				return true
			}
		}
	}
	return false
}

func isHeader(n *html.Node) bool {
	return n.DataAtom == atom.Header || strings.ToLower(attr(n, "role")) == "banner" || hasWord(n, "header", "masthead")
}

func isFooter(n *html.Node) bool {
	return n.DataAtom == atom.Footer || strings.ToLower(attr(n, "role")) == "contentinfo" || hasWord(n, "footer")
}

type extractor struct {
	header, footer *html.Node
	best           *html.Node
	bestScore      float64
}

// regions finds the header and the footer below n; inArticle says n is
// inside an article or main element.
func (x *extractor) regions(n *html.Node, inArticle bool) {
	for k := n.FirstChild; k != nil; k = k.NextSibling {
		if k.Type != html.ElementNode || skipped(k) {
			continue
		}
		if !inArticle {
			if x.header == nil && isHeader(k) {
				x.header = k
				continue
			}
			if isFooter(k) {
				x.footer = k
				continue
			}
		}
		x.regions(k, inArticle || k.DataAtom == atom.Article || k.DataAtom == atom.Main)
	}
}

// stats are the counts of a subtree outside the header and the footer.
type stats struct{ t, l, n int }

// score computes the counts of n's subtree and keeps the best candidate.
func (x *extractor) score(n *html.Node) stats {
	st := stats{n: 1}
	for k := n.FirstChild; k != nil; k = k.NextSibling {
		if skipped(k) || k == x.header || k == x.footer {
			continue
		}
		if k.Type == html.TextNode {
			st.t += units(k.Data)
			continue
		}
		ks := x.score(k)
		if k.DataAtom == atom.A {
			ks.l = ks.t
		}
		st.t += ks.t
		st.l += ks.l
		st.n += ks.n
	}
	switch n.DataAtom {
	case atom.Body, atom.Main, atom.Article, atom.Section, atom.Div, atom.Td:
		if st.t > 0 && 2*st.l <= st.t {
			d := float64(st.t - st.l)
			s := d * d / float64(st.n)
			if x.best == nil || s > x.bestScore {
				x.best, x.bestScore = n, s
			}
		}
	}
	return st
}

// mainText is the text of the main body, the header and footer left out.
func (x *extractor) mainText(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for k := n.FirstChild; k != nil; k = k.NextSibling {
			if skipped(k) || k == x.header || k == x.footer {
				continue
			}
			if k.Type == html.TextNode {
				b.WriteString(k.Data)
				continue
			}
			walk(k)
		}
	}
	walk(n)
	return b.String()
}
