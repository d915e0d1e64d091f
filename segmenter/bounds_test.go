package segmenter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// depthOf is the nesting depth of each element of d (1 at top level).
func depthOf(d *doc) []int {
	depth := make([]int, len(d.elems))
	for i := range d.elems {
		depth[i] = 1
		if p := d.elems[i].parent; p >= 0 {
			depth[i] = depth[p] + 1
		}
	}
	return depth
}

// TestAttributesBounded: a tag with thousands of attributes (one took 12 s
// at 25,000) keeps its first maxAttrs in its normalised form, sorted, and
// the page around it is still compared. Repeated keys count once.
func TestAttributesBounded(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		repeat      int
	}{
		{"plain", "", 1},
		{"with a character reference", " title='a &amp; b'", 1},
		{"each key three times", "", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			page := func(word string) []byte {
				var b strings.Builder
				b.WriteString("<html><body><div")
				for i := range 3000 {
					for range c.repeat {
						fmt.Fprintf(&b, " a%d=v%d", i, i)
					}
				}
				b.WriteString(c.extra + ">text</div><p>one " + word + "</p></body></html>")
				return []byte(b.String())
			}
			d := scan(nil, page("two"), nil, step{})
			defer d.release()
			var div *elem
			for i := range d.elems {
				if d.tagOf(int32(i)) == "div" {
					div = &d.elems[i]
				}
			}
			if div == nil {
				t.Fatal("no div")
			}
			if div.nattr != maxAttrs {
				t.Fatalf("div keeps %d attributes, want %d", div.nattr, maxAttrs)
			}
			// the first maxAttrs in the source, sorted by name
			if v, ok := d.attr(div, "a0"); !ok || v != "v0" {
				t.Errorf("a0 = %q, %v; want v0", v, ok)
			}
			if _, ok := d.attr(div, fmt.Sprintf("a%d", maxAttrs-1)); !ok {
				t.Errorf("a%d left out", maxAttrs-1)
			}
			if _, ok := d.attr(div, fmt.Sprintf("a%d", maxAttrs)); ok {
				t.Errorf("a%d kept", maxAttrs)
			}
			recs := d.attrs[div.attr0 : div.attr0+div.nattr]
			for k := 1; k < len(recs); k++ {
				if string(d.norm[recs[k-1].k0:recs[k-1].k1]) >= string(d.norm[recs[k].k0:recs[k].k1]) {
					t.Fatalf("attributes not sorted at %d", k)
				}
			}
			diff, err := New().DiffPages(page("two"), page("three"), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(diff.Changes) != 1 || diff.Changes[0].OldText != "two" || diff.Changes[0].NewText != "three" {
				t.Fatalf("changes %s, want two → three", dump(diff.Changes))
			}
		})
	}
}

// TestDepthBounded: elements nest at most maxDepth deep, however deep the
// markup (100,000 nested divs took 14 s and 383 MB); a start tag past it
// closes the innermost element and becomes its sibling, as browsers
// flatten such trees. Every element is kept and the text at the bottom is
// still compared.
func TestDepthBounded(t *testing.T) {
	const n = 3000
	for _, c := range []struct {
		name  string
		page  func(word string) string
		elems int // elements the page opens
	}{
		{"nested divs", func(w string) string {
			return "<html><body>" + strings.Repeat("<div>", n) + "deep " + w + strings.Repeat("</div>", n) + "</body></html>"
		}, n + 2},
		{"inline tags never closed", func(w string) string {
			return "<html><body>" + strings.Repeat("<b><i><span>", n) + "deep " + w
		}, 3*n + 2},
		{"block and table tags never closed", func(w string) string {
			return "<html><body>" + strings.Repeat("<div><p><li><td><a>x ", n) + "deep " + w
		}, 5*n + 2},
		{"a table in each cell", func(w string) string {
			return "<html><body>" + strings.Repeat("<table><tr><td>", n) + "deep " + w
		}, 4*n + 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, new := c.page("one"), c.page("two")
			d := scan(nil, []byte(old), nil, step{})
			defer d.release()
			deepest := 0
			for _, x := range depthOf(d) {
				deepest = max(deepest, x)
			}
			if deepest > maxDepth {
				t.Errorf("elements nest %d deep, want at most %d", deepest, maxDepth)
			}
			if len(d.elems) != c.elems {
				t.Errorf("%d elements, want %d", len(d.elems), c.elems)
			}
			diff, err := New().DiffPages([]byte(old), []byte(new), "")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, ch := range diff.Changes {
				found = found || ch.Type == changedigest.ChangeContent && ch.OldText == "one" && ch.NewText == "two"
			}
			if !found {
				t.Fatalf("changes %s, want one → two", dump(diff.Changes))
			}
		})
	}
}

// TestManyChangesToldByGroup: a page changed in more places than are worth
// telling one by one (every third of 100,000 paragraphs: each change took
// microseconds to find, tell, store and show) is told group by group as
// its old and new text.
func TestManyChangesToldByGroup(t *testing.T) {
	var o, n strings.Builder
	o.WriteString("<html><body>")
	n.WriteString("<html><body>")
	for i := range 100_000 {
		fmt.Fprintf(&o, "<p>p%d</p>", i)
		if i%3 == 0 {
			fmt.Fprintf(&n, "<p>q%d</p>", i)
		} else {
			fmt.Fprintf(&n, "<p>p%d</p>", i)
		}
	}
	d, err := New().Diff([]byte(o.String()), []byte(n.String()), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) == 0 || len(d.Changes) > maxChanges/10 {
		t.Fatalf("%d changes, want the groups of segments that changed told whole", len(d.Changes))
	}
	found := false
	for _, c := range d.Changes {
		found = found || c.Type == changedigest.ChangeContent && strings.Contains(c.NewText, "q99999") && strings.Contains(c.OldText, "p99999")
	}
	if !found || d.Similarity >= 1 {
		t.Fatalf("the last paragraph's change is not told: %d changes, similarity %v", len(d.Changes), d.Similarity)
	}
}
