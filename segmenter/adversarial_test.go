package segmenter

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// Adversarial shapes: pages (and feeds) made to cost a detector more than
// their size, each generated at a given size as a previous and a new
// version that differ a little (or, for the shapes about comparison, a
// lot). BenchmarkAdversarial times them at several sizes; the tests in
// adversarial_cost_test.go count their steps.

// adversarialShape makes a pair of versions of about size bytes.
type adversarialShape struct {
	name string
	gen  func(size int) (old, new []byte)
}

var adversarialShapes = []adversarialShape{
	// one start tag with as many attributes as fit
	{"attributes-one-tag", func(size int) ([]byte, []byte) {
		return pageAround(size, func(b *bytes.Buffer, n int) {
			b.WriteString("<div")
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(b, " a%d=\"v%d\"", i, i)
			}
			b.WriteString(">text after the tag</div>")
		})
	}},
	// tags of 2,000 attributes each
	{"attributes-many-tags", func(size int) ([]byte, []byte) {
		return pageAround(size, func(b *bytes.Buffer, n int) {
			for k := 0; b.Len() < n; k++ {
				b.WriteString("<div")
				for i := range 2000 {
					fmt.Fprintf(b, " a%d=\"v%d\"", i, i)
				}
				fmt.Fprintf(b, ">item %d</div>\n", k)
			}
		})
	}},
	// one start tag repeating one attribute
	{"attributes-repeated", func(size int) ([]byte, []byte) {
		return pageAround(size, func(b *bytes.Buffer, n int) {
			b.WriteString("<div")
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(b, " a=\"v%d\"", i)
			}
			b.WriteString(">text after the tag</div>")
		})
	}},
	// divs nested as deep as the size allows, text at the bottom
	{"nested-divs", func(size int) ([]byte, []byte) {
		n := size / 11
		return pageAround(size, func(b *bytes.Buffer, _ int) {
			b.WriteString(strings.Repeat("<div>", n))
			b.WriteString("deep text")
			b.WriteString(strings.Repeat("</div>", n))
		})
	}},
	// inline tags opened and never closed
	{"nested-inline-unclosed", func(size int) ([]byte, []byte) {
		return pageAround(size, func(b *bytes.Buffer, n int) {
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(b, "<b><i><span>w%d ", i)
			}
		})
	}},
	// block and table tags opened and never closed
	{"unclosed-blocks", func(size int) ([]byte, []byte) {
		return pageAround(size, func(b *bytes.Buffer, n int) {
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(b, "<div><p><li><td><a>w%d ", i)
			}
		})
	}},
	// end tags of elements that are open below a block
	{"stray-end-tags", func(size int) ([]byte, []byte) {
		return pageAround(size, func(b *bytes.Buffer, n int) {
			b.WriteString("<i><div>")
			b.WriteString(strings.Repeat("<b>", 500))
			for b.Len() < n {
				b.WriteString("</i>")
			}
		})
	}},
	// many siblings of as many distinct tag names
	{"distinct-tags", func(size int) ([]byte, []byte) {
		return pageAround(size, func(b *bytes.Buffer, n int) {
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(b, "<x%d>w</x%d>", i, i)
			}
		})
	}},
	// one text node of the whole size, a word changed in every 500
	{"huge-text", func(size int) ([]byte, []byte) {
		return inParagraph(textPair(size, []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"}, 500, 0))
	}},
	// one text node repeating four words, changed at both ends (the
	// shortest edit script's worst case: every shift of the period matches)
	{"huge-periodic-text", func(size int) ([]byte, []byte) {
		return inParagraph(textPair(size, []string{"a", "b", "c", "d"}, 0, 2))
	}},
	// many tiny paragraphs, every third one changed
	{"tiny-segments", func(size int) ([]byte, []byte) {
		var o, n bytes.Buffer
		o.WriteString("<html><body>")
		n.WriteString("<html><body>")
		for i := 0; o.Len() < size; i++ {
			fmt.Fprintf(&o, "<p>p%d</p>", i)
			if i%3 == 0 {
				fmt.Fprintf(&n, "<p>q%d</p>", i)
			} else {
				fmt.Fprintf(&n, "<p>p%d</p>", i)
			}
		}
		return o.Bytes(), n.Bytes()
	}},
	// a list of paragraphs rebuilt as divs with other words
	{"rebuilt-children", func(size int) ([]byte, []byte) {
		var o, n bytes.Buffer
		o.WriteString("<html><body><div>")
		n.WriteString("<html><body><div>")
		for i := 0; o.Len() < size; i++ {
			fmt.Fprintf(&o, "<p>old words %d here</p>", i)
			fmt.Fprintf(&n, "<div>new text %d there</div>", i)
		}
		o.WriteString("</div></body></html>")
		n.WriteString("</div></body></html>")
		return o.Bytes(), n.Bytes()
	}},
	// many lists of 1,000 items, the first and last item of each changed
	{"long-lists", func(size int) ([]byte, []byte) {
		var o, n bytes.Buffer
		o.WriteString("<html><body>")
		n.WriteString("<html><body>")
		for k := 0; o.Len() < size; k++ {
			o.WriteString("<ul>")
			n.WriteString("<ul>")
			for i := range 1000 {
				fmt.Fprintf(&o, "<li>i%d</li>", i)
				if i == 0 || i == 999 {
					fmt.Fprintf(&n, "<li>j%d</li>", i)
				} else {
					fmt.Fprintf(&n, "<li>i%d</li>", i)
				}
			}
			o.WriteString("</ul>")
			n.WriteString("</ul>")
		}
		return o.Bytes(), n.Bytes()
	}},
	// sections of 50 blocks without text, each of 1,000 empty children
	// whose tag changed (blocks compared by the tags of their children)
	{"textless-blocks", func(size int) ([]byte, []byte) {
		var o, n bytes.Buffer
		o.WriteString("<html><body>")
		n.WriteString("<html><body>")
		for o.Len() < size {
			o.WriteString("<section>")
			n.WriteString("<section>")
			for range 50 {
				o.WriteString("<div>" + strings.Repeat("<x></x>", 1000) + "</div>")
				n.WriteString("<div>" + strings.Repeat("<y></y>", 1000) + "</div>")
			}
			o.WriteString("</section>")
			n.WriteString("</section>")
		}
		return o.Bytes(), n.Bytes()
	}},
	// sections of 50 paragraphs of 100 words, all rewritten (each old
	// paragraph is compared with each new one, word by word)
	{"rewritten-paragraphs", func(size int) ([]byte, []byte) {
		var o, n bytes.Buffer
		o.WriteString("<html><body>")
		n.WriteString("<html><body>")
		for k := 0; o.Len() < size; k++ {
			o.WriteString("<section>")
			n.WriteString("<section>")
			for i := range 50 {
				o.WriteString("<p>")
				n.WriteString("<p>")
				for j := range 100 {
					fmt.Fprintf(&o, "w%d ", (i*7+j*13+k)%97)
					fmt.Fprintf(&n, "v%d ", (i*11+j*5+k)%89)
				}
				o.WriteString("</p>")
				n.WriteString("</p>")
			}
			o.WriteString("</section>")
			n.WriteString("</section>")
		}
		return o.Bytes(), n.Bytes()
	}},
	// a table whose rows lose their first cell and gain one at the end
	{"table-column-moved", func(size int) ([]byte, []byte) {
		var o, n bytes.Buffer
		o.WriteString("<html><body><table>")
		n.WriteString("<html><body><table>")
		for r := 0; o.Len() < size; r++ {
			fmt.Fprintf(&o, "<tr><td>a%d</td><td>b%d</td><td>c%d</td></tr>", r, r, r)
			fmt.Fprintf(&n, "<tr><td>b%d</td><td>c%d</td><td>a%d</td></tr>", r, r, r)
		}
		return o.Bytes(), n.Bytes()
	}},
	// identical blocks, each changed
	{"repeated-blocks", func(size int) ([]byte, []byte) {
		block := "<div class=post><h2>Title</h2><p>" + strings.Repeat("same words again ", 8) + "</p><p>more</p></div>"
		var o, n bytes.Buffer
		o.WriteString("<html><body><main>")
		n.WriteString("<html><body><main>")
		for o.Len() < size {
			o.WriteString(block)
			n.WriteString(strings.Replace(block, "more", "less", 1))
		}
		return o.Bytes(), n.Bytes()
	}},
	// a feed of many items, each edited
	{"feed-many-items", func(size int) ([]byte, []byte) {
		var o, n bytes.Buffer
		head := `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>http://example.com/</link><description>d</description>`
		o.WriteString(head)
		n.WriteString(head)
		for i := 0; o.Len() < size; i++ {
			fmt.Fprintf(&o, "<item><title>Item %d</title><description>some words of item %d</description></item>", i, i)
			fmt.Fprintf(&n, "<item><title>Item %d</title><description>other words of item %d</description></item>", i, i)
		}
		o.WriteString("</channel></rss>")
		n.WriteString("</channel></rss>")
		return o.Bytes(), n.Bytes()
	}},
	// a feed of items of 8 KB whose titles and texts were all rewritten
	// (every old item is scored against every new one)
	{"feed-rewritten-items", func(size int) ([]byte, []byte) {
		ot, _ := textPair(8<<10, []string{"lorem", "ipsum", "dolor", "sit", "amet"}, 0, 0)
		nt, _ := textPair(8<<10, []string{"quick", "brown", "fox", "jumps", "over"}, 0, 0)
		old := feedOf(size, func(b *bytes.Buffer, i int) {
			fmt.Fprintf(b, "<item><title>Old %d</title><description>%s</description></item>", i, ot)
		})
		new := feedOf(size, func(b *bytes.Buffer, i int) {
			fmt.Fprintf(b, "<item><title>New %d</title><description>%s</description></item>", i, nt)
		})
		return old, new
	}},
	// a feed of items of 8 KB, each with its id, every fifth word changed
	{"feed-edited-items", func(size int) ([]byte, []byte) {
		ot, nt := textPair(8<<10, []string{"lorem", "ipsum", "dolor", "sit", "amet", "elit"}, 5, 0)
		old := feedOf(size, func(b *bytes.Buffer, i int) {
			fmt.Fprintf(b, "<item><title>Item %d</title><guid>g%d</guid><description>%s</description></item>", i, i, ot)
		})
		new := feedOf(size, func(b *bytes.Buffer, i int) {
			fmt.Fprintf(b, "<item><title>Item %d</title><guid>g%d</guid><description>%s</description></item>", i, i, nt)
		})
		return old, new
	}},
	// a feed of one item with a huge description
	{"feed-huge-item", func(size int) ([]byte, []byte) {
		ot, nt := textPair(size, []string{"lorem", "ipsum", "dolor", "sit"}, 500, 0)
		wrap := func(body []byte) []byte {
			var b bytes.Buffer
			b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>http://example.com/</link><description>d</description><item><title>One</title><guid>g1</guid><description>`)
			b.Write(body)
			b.WriteString("</description></item></channel></rss>")
			return b.Bytes()
		}
		return wrap(ot), wrap(nt)
	}},
}

// feedOf is an RSS feed of about size bytes of the items item writes.
func feedOf(size int, item func(b *bytes.Buffer, i int)) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>http://example.com/</link><description>d</description>`)
	for i := 0; b.Len() < size; i++ {
		item(&b, i)
	}
	b.WriteString("</channel></rss>")
	return b.Bytes()
}

// pageAround wraps the markup body writes (until its buffer holds about n
// bytes) in a page with a short article before it, whose one word differs
// between the two versions.
func pageAround(size int, body func(b *bytes.Buffer, n int)) ([]byte, []byte) {
	var b bytes.Buffer
	body(&b, size)
	page := func(word string) []byte {
		var p bytes.Buffer
		p.Grow(b.Len() + 200)
		p.WriteString("<!doctype html><html><head><title>t</title></head><body><div><h1>A title</h1><p>Some introduction with ")
		p.WriteString(word)
		p.WriteString(" words in it.</p></div>")
		p.Write(b.Bytes())
		p.WriteString("</body></html>")
		return p.Bytes()
	}
	return page("a few"), page("a few more")
}

// textPair is a text of size bytes cycling through words; the new
// version changes every every-th word (0: none) and the first and last
// ends words.
func textPair(size int, words []string, every, ends int) ([]byte, []byte) {
	var o, n bytes.Buffer
	var ws []string
	for total := 0; total < size; total += len(ws[len(ws)-1]) + 1 {
		ws = append(ws, words[len(ws)%len(words)])
	}
	for i, w := range ws {
		o.WriteString(w)
		o.WriteByte(' ')
		if every > 0 && i%every == every/2 || i < ends || i >= len(ws)-ends {
			n.WriteString("changed ")
		} else {
			n.WriteString(w)
			n.WriteByte(' ')
		}
	}
	return o.Bytes(), n.Bytes()
}

// inParagraph makes pages of one paragraph of texts.
func inParagraph(old, new []byte) ([]byte, []byte) {
	wrap := func(t []byte) []byte {
		return append(append([]byte("<html><body><p>"), t...), "</p></body></html>"...)
	}
	return wrap(old), wrap(new)
}

// adversarialSizes are the sizes BenchmarkAdversarial runs each shape at.
// The last is the 10 MB body limit (see underLimit).
var adversarialSizes = []int{1 << 20, 2 << 20, 4 << 20, 8 << 20, DefaultMaxBytes}

// underLimit generates shape sh at about size bytes, smaller when a
// version would be over the body limit (DefaultMaxBytes), as some shapes
// grow past what they are asked.
func underLimit(sh adversarialShape, size int) (old, new []byte) {
	for {
		old, new = sh.gen(size)
		n := max(len(old), len(new))
		if n <= DefaultMaxBytes {
			return old, new
		}
		size = int(float64(size) * float64(DefaultMaxBytes) / float64(n) * 0.995)
	}
}

// BenchmarkAdversarial diffs each adversarial shape at 1, 2, 4, 8 and 10 MB
// (go test ./segmenter -run XXX -bench Adversarial -benchmem): the time
// per op grows in proportion to the size (MB/s stays about level), and
// stays under 2 s of CPU at 8 MB. cpu-ms/op is the CPU time of the
// process per diff (garbage collection included), which a loaded machine
// does not inflate as it does the wall clock.
func BenchmarkAdversarial(b *testing.B) {
	s := New()
	for _, sh := range adversarialShapes {
		for _, size := range adversarialSizes {
			b.Run(fmt.Sprintf("%s/%dMB", sh.name, (size+1<<19)>>20), func(b *testing.B) {
				old, new := underLimit(sh, size)
				b.SetBytes(int64(len(old) + len(new)))
				b.ReportAllocs()
				c0 := cpuTime()
				for b.Loop() {
					if _, err := s.DiffContext(context.Background(), old, new, ""); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
