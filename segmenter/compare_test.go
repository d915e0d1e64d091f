package segmenter

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// TestNestedBlockTextReportedOnce: when a block's own text and a block
// nested in it both change, each reports its own text; the outer one does
// not repeat the inner one's.
func TestNestedBlockTextReportedOnce(t *testing.T) {
	page := func(title string) []byte {
		return []byte(`<html><body><main><ul><li><a href="/story/1">` + title + `</a><p>` + title +
			`: the full story, with comments from people who live here and what happens next.</p></li>` +
			`<li><a href="/story/2">Bridge repairs finish early</a><p>Bridge repairs finish early: the full story.</p></li></ul></main></body></html>`)
	}
	d, err := New().DiffPages(page("Theatre announces its winter season"), page("Rugby club celebrates its season"), "")
	if err != nil {
		t.Fatal(err)
	}
	var content []changedigest.Change
	for _, c := range d.Changes {
		if c.Type == changedigest.ChangeContent {
			content = append(content, c)
		}
	}
	if len(content) != 2 {
		t.Fatalf("%d content changes, want 2 (the link text and the paragraph): %+v", len(content), d.Changes)
	}
	for _, c := range content {
		if n := strings.Count(c.NewText, "Rugby club"); n != 1 {
			t.Errorf("change at %s holds the new title %d times: %q", c.Path, n, c.NewText)
		}
	}
}

// shiftedList is a front page of posts, newest first, whose posts fill
// the list in the order given (as indices into a fixed set of posts).
func shiftedList(order ...int) []byte {
	posts := []struct{ slug, title, by, date, text string }{
		{"echium", "Echium candicans", "Matt Young", "July 14", "Photograph by John Trawick."},
		{"chimp", "Human and Chimpanzee: how different are we", "Dan Ford", "July 12", "Creationists claim the difference is large."},
		{"scopes", "The hundredth anniversary of the Scopes trial", "Nick Matzke", "July 9", "The expert testimony was blocked."},
		{"anhinga", "Anhinga melanogaster", "Matt Young", "July 7", "Photograph by John Harshman."},
		{"jay", "Garrulus glandarius", "Matt Young", "July 21", "Photograph by Philip Abrams."},
	}
	words := strings.Fields("the river runs past old stone walls where herons wait and the morning light falls on reeds while a boat drifts slowly toward the bridge under clouds")
	prose := func(seed, n int) string {
		f := make([]string, n)
		for i := range f {
			f[i] = words[(seed*7+i*3)%len(words)]
		}
		return strings.Join(f, " ")
	}
	var b strings.Builder
	b.WriteString(`<html><head><title>The Thumb</title></head><body><nav><a href="/">Main</a> <a href="/archives">Archives</a></nav><section class="main">` + "\n")
	for _, k := range order {
		p := posts[k]
		fmt.Fprintf(&b, `<div class="grid item"><div class="unit whole"><article class="blogpost"><header><h1><a href="/archives/%[1]s.html">%[2]s</a></h1>`+
			`<div class="byline">By %[3]s</div><div class="attrline"><span><time>%[4]s, 2025 11:00</time></span> <span><a href="/archives/%[1]s.html#comments">0 Comments</a></span></div></header>`+
			`<p>%[5]s</p><p>%[1]s %[6]s.</p><p>%[1]s %[7]s.</p><p><a href="/archives/%[1]s.html">Continue reading</a></p></article></div></div>`+"\n",
			p.slug, p.title, p.by, p.date, p.text, prose(k, 120), prose(k+1, 120))
	}
	b.WriteString(`<div class="pager"><ul>`)
	for i := 2; i < 9; i++ {
		fmt.Fprintf(&b, `<li><a href="/page/%d">Page %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></div></section><footer><h3>Recent comments</h3><ul>`)
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, `<li><a href="/c/%d">Comment %d</a> on <a href="/p/%d">a post</a></li>`, i, i, i)
	}
	b.WriteString(`</ul><p>To see earlier posts, select the Archives at the top of this page.</p></footer></body></html>`)
	return []byte(b.String())
}

// TestListShiftKeepsRemovedBlock: a new post on top of a front page
// pushes the last one off. The last post's boundary lands on the post
// before it, whose content the previous version had at another segment:
// the post that went is told as deleted (it was once not told at all, the
// new post's insert being the only change), and the posts that only
// moved down are not told as changed.
func TestListShiftKeepsRemovedBlock(t *testing.T) {
	old, new := shiftedList(0, 1, 2, 3), shiftedList(4, 0, 1, 2)
	check := func(t *testing.T, changes []changedigest.Change) {
		t.Helper()
		var inserted, deleted bool
		for _, c := range changes {
			if c.Type != changedigest.ChangeContent {
				continue
			}
			switch {
			case c.Op == changedigest.OpInsert && strings.Contains(c.NewText, "Garrulus glandarius"):
				inserted = true
			case c.Op == changedigest.OpDelete && strings.Contains(c.OldText, "Anhinga melanogaster By Matt Young July 7"):
				deleted = true
			case strings.Contains(c.OldText+c.NewText, "Scopes") || strings.Contains(c.OldText+c.NewText, "Chimpanzee"):
				t.Errorf("a post that only moved down is told as changed: %s %s %q -> %q", c.Type, c.Op, c.OldText, c.NewText)
			}
		}
		if !inserted || !deleted {
			t.Errorf("new post told: %v, removed post told: %v; changes: %+v", inserted, deleted, changes)
		}
	}
	s := New()
	t.Run("diff", func(t *testing.T) {
		d, err := s.DiffPages(old, new, "")
		if err != nil {
			t.Fatal(err)
		}
		check(t, d.Changes)
	})
	t.Run("detect", func(t *testing.T) {
		first, err := s.DetectPage(Input{Body: old})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := s.DetectPage(Input{Body: new, Prev: first, PrevBody: old})
		if err != nil {
			t.Fatal(err)
		}
		check(t, snap.Changes)
	})
}

// TestMovedLineKeepsItsWords: a press release's date line moved before
// its title changes the order the page reads in; the move is told with
// the words of one of the two lines (the shorter: the title, moved after
// the date line, which reads the same), not as a start tag only (which
// told the reader a tag moved, not what).
func TestMovedLineKeepsItsWords(t *testing.T) {
	body := "The council approved the new budget for the coming year after a long debate about road repairs, schools and the library opening hours in the old town."
	page := func(dateFirst bool) []byte {
		date := `<p class="date">Published on 3 March 2024 by the press office</p>`
		title := `<h1>Council approves the budget for next year</h1>`
		head := title + date
		if dateFirst {
			head = date + title
		}
		return []byte(`<html><head><title>Press</title></head><body><nav><a href="/">Home</a> <a href="/press">Press</a></nav><main><article>` +
			head + `<p>` + body + `</p><p>Questions go to the press office, which answers on weekdays.</p></article></main>` +
			`<footer><p>City hall, Main square 1, open on weekdays.</p></footer></body></html>`)
	}
	d, err := New().DiffPages(page(false), page(true), "")
	if err != nil {
		t.Fatal(err)
	}
	told := false
	for _, c := range d.Changes {
		for _, line := range []string{"Published on 3 March 2024", "Council approves the budget"} {
			if c.Op == changedigest.OpMove && strings.Contains(c.OldText, line) && strings.Contains(c.NewText, line) {
				told = true
			}
		}
	}
	if !told {
		t.Errorf("the move is not told with the words of a line: %+v", d.Changes)
	}
}

// TestMoveInPlace: words that now read elsewhere are told as moved text;
// words whose wrapping markup was rebuilt, standing between the same
// words as before, as markup moved (a privacy policy whose editor
// re-nested a paragraph's spans).
func TestMoveInPlace(t *testing.T) {
	s := New()
	old := `<html><body><h1>Languages</h1><ul><li>France</li><li>Germany</li><li>United Kingdom</li><li>Italy</li></ul></body></html>`
	new := `<html><body><h1>Languages</h1><ul><li>United Kingdom</li><li>France</li><li>Germany</li><li>Italy</li></ul></body></html>`
	d, err := s.Diff([]byte(old), []byte(new), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 1 || !d.Changes[0].MovedText() || d.Changes[0].Type != changedigest.ChangeContent || d.Changes[0].NewText != "United Kingdom" {
		t.Errorf("changes %+v, want United Kingdom moved", d.Changes)
	}

	dir := testenv.Corpus(t, "versions", "doubao-privacy-zh")
	a := mustRead(t, filepath.Join(dir, "0002_2024-03-04T123033_345628b1bf.html"))
	b := mustRead(t, filepath.Join(dir, "0003_2024-03-05T123034_ba615eb252.html"))
	d, err = s.Diff(a, b, "")
	if err != nil {
		t.Fatal(err)
	}
	var markup int
	for _, c := range d.Changes {
		if c.MovedText() {
			t.Errorf("text told as moved where it reads as before: %s %q", c.Path, c.NewText)
		}
		if c.Op == changedigest.OpMove && !c.MovedText() {
			markup++
		}
	}
	if markup == 0 {
		t.Errorf("no markup moved among %d changes", len(d.Changes))
	}
}
