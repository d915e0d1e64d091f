package segmenter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	xhtml "golang.org/x/net/html"
)

// Edit injection: known edits applied to real pages, independent of the
// package's own scanner (positions come from the x/net tokenizer).

type rawTok struct {
	tt       xhtml.TokenType
	tag      string
	off, end int
	attrs    []xhtml.Attribute
	text     string
}

func rawTokens(src []byte) []rawTok {
	z := xhtml.NewTokenizer(bytes.NewReader(src))
	var out []rawTok
	off := 0
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return out
		}
		n := len(z.Raw())
		t := z.Token()
		out = append(out, rawTok{tt: tt, tag: t.Data, off: off, end: off + n, attrs: t.Attr, text: t.Data})
		off += n
	}
}

// para is a "clean" block: <p>, <li> or <h2>–<h4> with an explicit end
// tag and only inline content and text in between.
type para struct {
	tag        string
	start, end int // byte range of the whole element
	startTag   int // index of the start token
	openEnd    int // end of the start tag
	text       string
	toks       []int // indices of text tokens inside
}

var inlineTags = map[string]bool{"a": true, "b": true, "i": true, "em": true, "strong": true, "span": true,
	"code": true, "small": true, "sup": true, "sub": true, "abbr": true, "cite": true, "q": true, "u": true, "mark": true, "time": true}

func cleanParas(src []byte, toks []rawTok) []para {
	var out []para
	inBody := false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.tt == xhtml.StartTagToken && t.tag == "body" {
			inBody = true
		}
		if !inBody || t.tt != xhtml.StartTagToken {
			continue
		}
		switch t.tag {
		case "p", "li", "h2", "h3", "h4":
		default:
			continue
		}
		p := para{tag: t.tag, start: t.off, startTag: i, openEnd: t.end}
		ok := false
		var sb strings.Builder
		for j := i + 1; j < len(toks); j++ {
			u := toks[j]
			if u.tt == xhtml.EndTagToken && u.tag == t.tag {
				p.end = u.end
				ok = true
				break
			}
			if u.tt == xhtml.TextToken {
				sb.WriteString(u.text)
				if strings.TrimSpace(u.text) != "" {
					p.toks = append(p.toks, j)
				}
				continue
			}
			if u.tt == xhtml.CommentToken {
				continue
			}
			if (u.tt == xhtml.StartTagToken || u.tt == xhtml.EndTagToken) && inlineTags[u.tag] {
				continue
			}
			break
		}
		p.text = strings.Join(strings.Fields(sb.String()), " ")
		if ok && len(strings.Fields(p.text)) >= 4 && !strings.Contains(string(src[p.start:p.end]), "<!") {
			out = append(out, p)
		}
	}
	return out
}

// injection is one edited page with the change expected from it.
type injection struct {
	name    string
	src     []byte
	typ, op string // expected; "" for a no-op rewrite
	oldWord string // content update: a word the old text must contain
	newWord string // a word the new text must contain
}

func splice(src []byte, a, b int, repl string) []byte {
	out := make([]byte, 0, len(src)+len(repl))
	out = append(out, src[:a]...)
	out = append(out, repl...)
	return append(out, src[b:]...)
}

// injections returns the edits that apply to src, at sites picked by rng.
func injections(src []byte, rng *rand.Rand) []injection {
	toks := rawTokens(src)
	paras := cleanParas(src, toks)
	var out []injection
	pick := func(ps []para) (para, bool) {
		if len(ps) == 0 {
			return para{}, false
		}
		return ps[rng.IntN(len(ps))], true
	}
	// a word changed in a text
	if p, ok := pick(paras); ok {
		for _, ti := range p.toks {
			t := toks[ti]
			raw := string(src[t.off:t.end])
			words := strings.Fields(raw)
			var cands []string
			for _, w := range words {
				if len(w) >= 3 && !strings.ContainsAny(w, "&;<>") {
					cands = append(cands, w)
				}
			}
			if len(cands) == 0 {
				continue
			}
			w := cands[rng.IntN(len(cands))]
			k := strings.Index(raw, w)
			out = append(out, injection{name: "change a word", src: splice(src, t.off+k, t.off+k+len(w), "zyxwvut"),
				typ: "content", op: "update", oldWord: w, newWord: "zyxwvut"})
			break
		}
	}
	// a paragraph inserted after a block
	if p, ok := pick(paras); ok {
		ins := "<p>Injected paragraph about quantum zebras grazing.</p>"
		if p.tag == "li" {
			ins = "<li>Injected item about quantum zebras grazing.</li>"
		}
		out = append(out, injection{name: "insert a paragraph", src: splice(src, p.end, p.end, ins),
			typ: "content", op: "insert", newWord: "zebras"})
	}
	// a block deleted
	if p, ok := pick(paras); ok {
		out = append(out, injection{name: "delete a block", src: splice(src, p.start, p.end, ""),
			typ: "content", op: "delete", oldWord: firstWord(p.text)})
	}
	// only a style attribute changed
	if p, ok := pick(paras); ok {
		out = append(out, injection{name: "change a style attribute", src: setAttr(src, toks[p.startTag], "style", "color: #c00; font-weight: bold"),
			typ: "cosmetic", op: "update"})
	}
	// only the class changed
	if p, ok := pick(paras); ok {
		out = append(out, injection{name: "change a class", src: setAttr(src, toks[p.startTag], "class", "injected-class"),
			typ: "cosmetic", op: "update"})
	}
	// an event handler added
	if p, ok := pick(paras); ok {
		out = append(out, injection{name: "add an event handler", src: setAttr(src, toks[p.startTag], "onclick", "track(1)"),
			typ: "behavioural", op: "update"})
	}
	// a script changed
	for _, i := range rng.Perm(len(toks)) {
		t := toks[i]
		if t.tt != xhtml.StartTagToken || t.tag != "script" || i+1 >= len(toks) {
			continue
		}
		if n := toks[i+1]; n.tt == xhtml.TextToken && strings.TrimSpace(n.text) != "" {
			out = append(out, injection{name: "change a script", src: splice(src, n.off, n.off, "var injectedFlag = 1;"),
				typ: "behavioural", op: "update"})
			break
		}
		if src0, ok := attrOf(t, "src"); ok {
			out = append(out, injection{name: "change a script", src: setAttr(src, t, "src", src0+"?v=2"),
				typ: "behavioural", op: "update"})
			break
		}
	}
	// a script inserted, an iframe inserted
	if p, ok := pick(paras); ok && p.tag != "li" {
		out = append(out, injection{name: "insert a script", src: splice(src, p.end, p.end, `<script>window.injected = true;</script>`),
			typ: "behavioural", op: "insert"})
	}
	if p, ok := pick(paras); ok && p.tag != "li" {
		out = append(out, injection{name: "insert an iframe", src: splice(src, p.end, p.end, `<iframe src="https://example.com/embed"></iframe>`),
			typ: "behavioural", op: "insert"})
	}
	// an element without text inserted
	if p, ok := pick(paras); ok && p.tag != "li" {
		out = append(out, injection{name: "insert a rule", src: splice(src, p.end, p.end, "<hr>"),
			typ: "structural", op: "insert"})
	}
	// an image deleted, a link target changed
	var imgs, links []rawTok
	inBody := false
	for _, t := range toks {
		if t.tt == xhtml.StartTagToken && t.tag == "body" {
			inBody = true
		}
		if !inBody {
			continue
		}
		if (t.tt == xhtml.StartTagToken || t.tt == xhtml.SelfClosingTagToken) && t.tag == "img" {
			imgs = append(imgs, t)
		}
		if t.tt == xhtml.StartTagToken && t.tag == "a" {
			if h, ok := attrOf(t, "href"); ok && h != "" && !strings.HasPrefix(h, "#") {
				links = append(links, t)
			}
		}
	}
	if len(imgs) > 0 {
		t := imgs[rng.IntN(len(imgs))]
		out = append(out, injection{name: "delete an image", src: splice(src, t.off, t.end, ""),
			typ: "structural", op: "delete"})
	}
	if len(links) > 0 {
		t := links[rng.IntN(len(links))]
		h, _ := attrOf(t, "href")
		out = append(out, injection{name: "change a link target", src: setAttr(src, t, "href", h+"-moved"),
			typ: "structural", op: "update"})
	}
	// two sibling blocks swapped
	var pairs [][2]para
	for k := 0; k+1 < len(paras); k++ {
		a, b := paras[k], paras[k+1]
		if a.tag == b.tag && strings.TrimSpace(string(src[a.end:b.start])) == "" && a.text != b.text {
			pairs = append(pairs, [2]para{a, b})
		}
	}
	if len(pairs) > 0 {
		pr := pairs[rng.IntN(len(pairs))]
		a, b := pr[0], pr[1]
		swapped := string(src[b.start:b.end]) + string(src[a.end:b.start]) + string(src[a.start:a.end])
		out = append(out, injection{name: "swap two sibling blocks", src: splice(src, a.start, b.end, swapped),
			typ: "structural", op: "move"})
	}
	// an element moved elsewhere
	if len(paras) > 4 {
		a := paras[rng.IntN(len(paras)/2)]
		b := paras[len(paras)/2+rng.IntN(len(paras)-len(paras)/2)]
		if b.start > a.end && a.tag == b.tag {
			moved := string(src[a.start:a.end])
			out2 := splice(src, b.end, b.end, moved)
			out2 = splice(out2, a.start, a.end, "")
			out = append(out, injection{name: "move an element", src: out2, typ: "structural", op: "move"})
		}
	}
	// no-op rewrites
	out = append(out,
		injection{name: "no-op: identical", src: append([]byte(nil), src...)},
		injection{name: "no-op: re-indented", src: reindent(src, toks)},
		injection{name: "no-op: attributes reordered", src: rewriteTags(src, toks, true, '"')},
		injection{name: "no-op: single quotes", src: rewriteTags(src, toks, false, '\'')},
		injection{name: "no-op: comments changed", src: recomment(src, toks)},
		injection{name: "no-op: br styles", src: brStyles(src, toks)},
		injection{name: "no-op: character references", src: entities(src, toks)},
	)
	return out
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func attrOf(t rawTok, k string) (string, bool) {
	for _, a := range t.attrs {
		if a.Key == k {
			return a.Val, true
		}
	}
	return "", false
}

// setAttr rewrites start tag t with attribute k set to v.
func setAttr(src []byte, t rawTok, k, v string) []byte {
	var sb strings.Builder
	sb.WriteString("<" + t.tag)
	done := false
	for _, a := range t.attrs {
		val := a.Val
		if a.Key == k {
			val, done = v, true
		}
		writeRawAttr(&sb, a.Key, val, '"')
	}
	if !done {
		writeRawAttr(&sb, k, v, '"')
	}
	sb.WriteString(">")
	return splice(src, t.off, t.end, sb.String())
}

func writeRawAttr(sb *strings.Builder, k, v string, q byte) {
	sb.WriteString(" " + k + "=" + string(q))
	e := strings.ReplaceAll(v, "&", "&amp;")
	if q == '"' {
		e = strings.ReplaceAll(e, `"`, "&quot;")
	} else {
		e = strings.ReplaceAll(e, `'`, "&#39;")
	}
	sb.WriteString(e + string(q))
}

// rewriteTags re-serialises every start tag, attributes in reverse order
// or in quotes q.
func rewriteTags(src []byte, toks []rawTok, reverse bool, q byte) []byte {
	var out bytes.Buffer
	last := 0
	for _, t := range toks {
		if t.tt != xhtml.StartTagToken && t.tt != xhtml.SelfClosingTagToken {
			continue
		}
		out.Write(src[last:t.off])
		var sb strings.Builder
		sb.WriteString("<" + t.tag)
		attrs := append([]xhtml.Attribute(nil), t.attrs...)
		if reverse {
			for i, j := 0, len(attrs)-1; i < j; i, j = i+1, j-1 {
				attrs[i], attrs[j] = attrs[j], attrs[i]
			}
		}
		seen := map[string]bool{}
		for _, a := range attrs {
			if seen[a.Key] {
				continue
			}
			seen[a.Key] = true
			writeRawAttr(&sb, a.Key, a.Val, q)
		}
		if t.tt == xhtml.SelfClosingTagToken {
			sb.WriteString("/")
		}
		sb.WriteString(">")
		out.WriteString(sb.String())
		last = t.end
	}
	out.Write(src[last:])
	return out.Bytes()
}

var rawTextTags = map[string]bool{"script": true, "style": true, "textarea": true, "title": true, "pre": true,
	"xmp": true, "iframe": true, "noscript": true, "noembed": true, "noframes": true, "plaintext": true}

// reindent replaces the whitespace between tags by newlines and indents,
// and puts a newline between tags that had none.
func reindent(src []byte, toks []rawTok) []byte {
	var out bytes.Buffer
	depth, raw := 0, 0
	last := 0
	for i, t := range toks {
		switch t.tt {
		case xhtml.StartTagToken:
			if rawTextTags[t.tag] {
				raw++
			}
			depth++
		case xhtml.EndTagToken:
			if rawTextTags[t.tag] && raw > 0 {
				raw--
			}
			depth = max(0, depth-1)
		}
		if raw > 0 {
			continue
		}
		if t.tt == xhtml.TextToken && strings.TrimSpace(t.text) == "" && strings.TrimSpace(string(src[t.off:t.end])) == "" {
			out.Write(src[last:t.off])
			out.WriteString("\n" + strings.Repeat("  ", min(depth, 20)))
			last = t.end
			continue
		}
		// a newline between two adjacent block tags
		if i+1 < len(toks) && (t.tt == xhtml.EndTagToken) && (toks[i+1].tt == xhtml.StartTagToken) &&
			blockElements[t.tag] && blockElements[toks[i+1].tag] {
			out.Write(src[last:t.end])
			out.WriteString("\n")
			last = t.end
		}
	}
	out.Write(src[last:])
	return out.Bytes()
}

func recomment(src []byte, toks []rawTok) []byte {
	var out bytes.Buffer
	last := 0
	added := false
	for _, t := range toks {
		if t.tt == xhtml.CommentToken {
			out.Write(src[last:t.off])
			out.WriteString("<!-- rewritten comment -->")
			last = t.end
		}
		if !added && t.tt == xhtml.EndTagToken && t.tag == "p" {
			out.Write(src[last:t.end])
			out.WriteString("<!-- a new comment -->")
			last = t.end
			added = true
		}
	}
	out.Write(src[last:])
	return out.Bytes()
}

func brStyles(src []byte, toks []rawTok) []byte {
	var out bytes.Buffer
	last := 0
	for _, t := range toks {
		if t.tag != "br" || (t.tt != xhtml.StartTagToken && t.tt != xhtml.SelfClosingTagToken) || len(t.attrs) > 0 {
			continue
		}
		out.Write(src[last:t.off])
		if t.tt == xhtml.SelfClosingTagToken {
			out.WriteString("<br>")
		} else {
			out.WriteString("<br />")
		}
		last = t.end
	}
	out.Write(src[last:])
	return out.Bytes()
}

// entities writes text characters as character references and back.
func entities(src []byte, toks []rawTok) []byte {
	var out bytes.Buffer
	last := 0
	raw := 0
	for _, t := range toks {
		switch t.tt {
		case xhtml.StartTagToken:
			if rawTextTags[t.tag] {
				raw++
			}
		case xhtml.EndTagToken:
			if rawTextTags[t.tag] && raw > 0 {
				raw--
			}
		case xhtml.TextToken:
			if raw > 0 {
				continue
			}
			out.Write(src[last:t.off])
			var sb strings.Builder
			for _, r := range t.text {
				switch {
				case r == '&':
					sb.WriteString("&amp;")
				case r == '<':
					sb.WriteString("&lt;")
				case r == '>':
					sb.WriteString("&gt;")
				case r == '\'' || r == '"' || r > 127:
					fmt.Fprintf(&sb, "&#%d;", r)
				case r == 'e':
					sb.WriteString("&#x65;")
				default:
					sb.WriteRune(r)
				}
			}
			out.WriteString(sb.String())
			last = t.end
		}
	}
	out.Write(src[last:])
	return out.Bytes()
}

// block is a well-formed element in the source: every non-void element
// inside it has an explicit end tag.
type block struct {
	tag        string
	start, end int // byte range of the whole element
	startTag   int // index of the start token
	text       string
	parent     int // start offset of the enclosing block (-1 if none found)
}

var voidTags = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
	"img": true, "input": true, "link": true, "meta": true, "param": true, "source": true, "track": true, "wbr": true}

// wellFormedBlocks finds elements with tags in want whose content is
// balanced, with their visible text.
func wellFormedBlocks(src []byte, toks []rawTok, want map[string]bool) []block {
	var out []block
	inBody := false
	var opens []int // start offsets of open elements, for parents
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.tt == xhtml.StartTagToken && t.tag == "body" {
			inBody = true
		}
		if !inBody || t.tt != xhtml.StartTagToken || !want[t.tag] {
			continue
		}
		var stack []string
		var sb strings.Builder
		ok := false
		end := 0
		raw := 0
	scan:
		for j := i + 1; j < len(toks); j++ {
			u := toks[j]
			switch u.tt {
			case xhtml.StartTagToken:
				if voidTags[u.tag] {
					continue
				}
				if rawTextTags[u.tag] {
					raw++
				}
				stack = append(stack, u.tag)
			case xhtml.EndTagToken:
				if len(stack) == 0 {
					if u.tag == t.tag {
						ok, end = true, u.end
					}
					break scan
				}
				if stack[len(stack)-1] != u.tag {
					break scan
				}
				if rawTextTags[u.tag] {
					raw--
				}
				stack = stack[:len(stack)-1]
			case xhtml.TextToken:
				if raw == 0 {
					sb.WriteString(u.text + " ")
				}
			}
		}
		text := strings.Join(strings.Fields(sb.String()), " ")
		if ok && len(strings.Fields(text)) >= 3 && !bytes.Contains(src[t.off:end], []byte("<!")) {
			parent := -1
			if len(opens) > 0 {
				parent = opens[len(opens)-1]
			}
			out = append(out, block{tag: t.tag, start: t.off, end: end, startTag: i, text: text, parent: parent})
		}
		_ = opens
	}
	return out
}

// hardInjections edits arbitrary sites of a page: any visible text, any
// well-formed block.
func hardInjections(src []byte, rng *rand.Rand) []injection {
	toks := rawTokens(src)
	var out []injection
	// a word in any visible text of the body
	inBody, raw := false, 0
	var texts []rawTok
	for _, t := range toks {
		switch t.tt {
		case xhtml.StartTagToken:
			if t.tag == "body" {
				inBody = true
			}
			if rawTextTags[t.tag] || t.tag == "option" || t.tag == "select" {
				raw++
			}
		case xhtml.EndTagToken:
			if (rawTextTags[t.tag] || t.tag == "option" || t.tag == "select") && raw > 0 {
				raw--
			}
		case xhtml.TextToken:
			if inBody && raw == 0 {
				texts = append(texts, t)
			}
		}
	}
	for _, k := range rng.Perm(len(texts)) {
		t := texts[k]
		rawText := string(src[t.off:t.end])
		var cands []string
		for _, w := range strings.Fields(rawText) {
			if len(w) >= 3 && !strings.ContainsAny(w, "&;<>") && strings.Count(rawText, w) == 1 {
				cands = append(cands, w)
			}
		}
		if len(cands) == 0 {
			continue
		}
		w := cands[rng.IntN(len(cands))]
		p := strings.Index(rawText, w)
		out = append(out, injection{name: "hard: change a word anywhere", src: splice(src, t.off+p, t.off+p+len(w), "qxzvwk"),
			typ: "content", op: "update", oldWord: w, newWord: "qxzvwk"})
		break
	}
	blocks := wellFormedBlocks(src, toks, map[string]bool{"div": true, "section": true, "ul": true, "ol": true,
		"table": true, "article": true, "li": true, "p": true, "blockquote": true, "h2": true, "h3": true, "dl": true})
	if len(blocks) == 0 {
		return out
	}
	pick := func() block { return blocks[rng.IntN(len(blocks))] }
	b := pick()
	out = append(out, injection{name: "hard: delete a block", src: splice(src, b.start, b.end, ""), typ: "content", op: "delete", oldWord: firstWord(b.text)})
	b = pick()
	out = append(out, injection{name: "hard: style a block", src: setAttr(src, toks[b.startTag], "style", "border: 1px solid red"), typ: "cosmetic", op: "update"})
	b = pick()
	if b.tag != "li" {
		out = append(out, injection{name: "hard: insert a paragraph after a block", src: splice(src, b.end, b.end, "<p>Injected paragraph about quantum zebras grazing.</p>"),
			typ: "content", op: "insert", newWord: "zebras"})
	}
	// two adjacent blocks of the same tag swapped
	var pairs [][2]block
	for k := 0; k+1 < len(blocks); k++ {
		x, y := blocks[k], blocks[k+1]
		for m := k + 1; m < len(blocks) && blocks[m].start < x.end; m++ {
			y = blocks[min(m+1, len(blocks)-1)]
		}
		if x.tag == y.tag && y.start >= x.end && strings.TrimSpace(string(src[x.end:y.start])) == "" && x.text != y.text {
			pairs = append(pairs, [2]block{x, y})
		}
	}
	if len(pairs) > 0 {
		pr := pairs[rng.IntN(len(pairs))]
		x, y := pr[0], pr[1]
		sw := string(src[y.start:y.end]) + string(src[x.end:y.start]) + string(src[x.start:x.end])
		out = append(out, injection{name: "hard: swap two sibling blocks", src: splice(src, x.start, y.end, sw), typ: "structural", op: "move"})
	}
	// a block moved after another, unrelated one (not into a link)
	x, y := pick(), pick()
	if y.start > x.end && y.tag != "li" && x.tag != "li" && !insideLink(toks, y.end) {
		moved := splice(src, y.end, y.end, string(src[x.start:x.end]))
		moved = splice(moved, x.start, x.end, "")
		out = append(out, injection{name: "hard: move a block", src: moved, typ: "structural", op: "move"})
	}
	return out
}

// insideLink reports whether byte offset off lies inside an <a> element.
func insideLink(toks []rawTok, off int) bool {
	depth := 0
	for _, t := range toks {
		if t.off >= off {
			break
		}
		if t.tag == "a" && t.tt == xhtml.StartTagToken {
			depth++
		}
		if t.tag == "a" && t.tt == xhtml.EndTagToken && depth > 0 {
			depth--
		}
	}
	return depth > 0
}
