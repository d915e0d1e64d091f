package segmenter

import (
	"bytes"
	"github.com/changedigest/changedigest"
	"strings"
)

// MainText returns the main text of an HTML page with its boilerplate
// (navigation, footers, link lists, sidebars) removed, one block of text
// per paragraph separated by blank lines. It uses Kohlschütter and
// Nejdl's densitometry: the page's text is cut into blocks at block-level
// tags, each block gets a text density (words per 80-column line) and a
// link density (share of its words inside links), and the densitometric
// classifier of "Boilerplate detection using shallow text features"
// (2010) keeps a block by its own and its neighbours' densities. Text in
// nav, aside and footer elements and in the head is boilerplate outright.
// Bad input (empty, binary, not HTML) gives "".
func MainText(body []byte) string {
	main, _ := pageTexts(body)
	return main
}

// pageTexts returns the main text of a page (as MainText) and all its
// visible text, from one scan.
func pageTexts(body []byte) (main, all string) {
	if len(body) == 0 || len(body) > DefaultMaxBytes || binaryKind(body) != "" {
		return "", ""
	}
	d := scan(nil, decode(body), nil, step{})
	defer d.release()
	return docTexts(d)
}

// docTexts is pageTexts of a scanned page.
func docTexts(d *doc) (main, all string) {
	blocks := textBlocks(d)
	var sb, ab strings.Builder
	for i := range blocks {
		ab.WriteString(blocks[i].text)
		ab.WriteByte('\n')
		if !mainBlock(blocks, i) {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(blocks[i].text)
	}
	return sb.String(), ab.String()
}

// docPrint is printOf(docTexts(d)), each block's words read once.
func docPrint(d *doc) changedigest.TextPrint {
	blocks := textBlocks(d)
	var p textPrinter
	for i := range blocks {
		p.text(blocks[i].text, mainBlock(blocks, i))
	}
	return p.print()
}

// mainBlock reports whether block i is part of the main text.
func mainBlock(blocks []textBlock, i int) bool {
	// The last block has no successor; it stands in for its own, so a
	// page that ends with its article (no footer) keeps its last
	// paragraph.
	prev, next := textBlock{}, blocks[i]
	if i > 0 {
		prev = blocks[i-1]
	}
	if i+1 < len(blocks) {
		next = blocks[i+1]
	}
	return !blocks[i].boiler && isContent(prev, blocks[i], next)
}

// textBlock is a run of text between two block-level tags.
type textBlock struct {
	text        string
	words       int
	textDensity float64
	linkDensity float64
	boiler      bool // inside nav, aside, footer or the head
}

func textBlocks(d *doc) []textBlock {
	// The texts of the blocks are written one after the other into sb
	// and each is a part of it (a builder never changes what it holds),
	// not a string of its own; the blocks are counted first.
	n, size, text := 0, 0, false
	for i := range d.toks {
		switch t := &d.toks[i]; {
		case t.kind != tText:
			if t.flags&fBreak != 0 && text {
				n, text = n+1, false
			}
		case t.flags&fVisible != 0:
			text = true
			size += len(d.textBytes(i)) + 1
		}
	}
	if text {
		n++
	}
	blocks := make([]textBlock, 0, n)
	var sb strings.Builder
	sb.Grow(size)
	start := 0 // where the block's text starts in sb
	words, chars, links := 0, 0, 0
	boiler := false
	flush := func() {
		if words > 0 {
			blocks = append(blocks, textBlock{
				text:        sb.String()[start:],
				words:       words,
				textDensity: density(words, chars, DefaultLineWidth),
				linkDensity: float64(links) / float64(words),
				boiler:      boiler,
			})
		}
		start = sb.Len()
		words, chars, links = 0, 0, 0
		boiler = false
	}
	d.w.add(len(d.toks))
	for i := range d.toks {
		t := &d.toks[i]
		switch {
		case t.kind != tText:
			if t.flags&fBreak != 0 {
				flush()
			}
		case t.flags&fVisible != 0:
			b := d.textBytes(i)
			if sb.Len() > start {
				sb.WriteByte(' ')
			}
			sb.Write(b)
			w := 1 + bytes.Count(b, []byte{' '})
			words += w
			chars += len(b) + 1
			if t.flags&fLink != 0 {
				links += w
			}
			if inBoilerplate(d, t.elem) {
				boiler = true
			}
		}
	}
	flush()
	return blocks
}

// inBoilerplate reports whether element ei is or lies in a nav, aside,
// footer, head, title or an element with a navigation role (the scanner
// marks them, eBoiler).
func inBoilerplate(d *doc, ei int32) bool {
	return ei >= 0 && d.elems[ei].flags&eBoiler != 0
}

// isContent is the densitometric classifier (Kohlschütter, Frankhauser and
// Nejdl 2010, as boilerpipe's DensitometricClassifier): a decision tree on
// the link density of a block and its predecessor and the text density of
// the block and its neighbours.
func isContent(prev, cur, next textBlock) bool {
	if cur.linkDensity > 0.333333 {
		return false
	}
	if prev.linkDensity <= 0.555556 {
		if cur.textDensity <= 9 {
			if next.textDensity <= 10 {
				return prev.textDensity > 4
			}
			return true
		}
		return next.textDensity != 0
	}
	return next.textDensity > 11
}

// PageTitle returns the text of an HTML page's title element, its white
// space collapsed; "" when it has none or the input is not HTML.
func PageTitle(body []byte) string {
	if len(body) == 0 || len(body) > DefaultMaxBytes || binaryKind(body) != "" {
		return ""
	}
	d := scan(nil, decode(body), nil, step{})
	defer d.release()
	return strings.Join(strings.Fields(d.title), " ")
}
