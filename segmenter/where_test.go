package segmenter

import (
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// detectTwo detects the changes from old to new as a check does.
func detectTwo(t *testing.T, old, new string) []changedigest.Change {
	t.Helper()
	s := New()
	prev, err := s.Detect(Input{Body: []byte(old)})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Detect(Input{Body: []byte(new), Prev: prev, PrevBody: []byte(old), History: [][]string{prev.Hashes()}})
	if err != nil {
		t.Fatal(err)
	}
	return snap.Changes
}

const frontPage = `<html><head><title>Riverside Daily</title></head><body>
<nav aria-label="Sections"><a href="/">Home</a> <a href="/sport">Sport</a> <a href="/city">City</a></nav>
<main><h1>Riverside Daily</h1>
<section><h2>Opening hours</h2><p>The library is open from 9 to 17 on weekdays and from 10 to 14 on Saturdays.</p></section>
%s
<article><h2><a href="/story/3">Tennis courts reopen after repairs</a></h2><p>The courts by the river are open again after a month of repairs to their surface and fences.</p></article>
</main>
<footer><p>Riverside Daily, 4 Mill Lane. Call us on weekdays.</p></footer>
</body></html>`

func page(story string) string { return strings.Replace(frontPage, "%s", story, 1) }

// TestWhere checks the places changes are said to be in, in people's
// words: under the heading before them, in a named part of the page, and
// a story added or removed told by its headline and link, not placed
// under the heading of the story before it.
func TestWhere(t *testing.T) {
	story := `<article><h2><a href="/story/7">General election date announced</a></h2><p>The prime minister announced that the general election will be held on the second Thursday of May.</p></article>`
	base := page("")

	t.Run("story added", func(t *testing.T) {
		cs := detectTwo(t, base, page(story))
		c := only(t, cs, changedigest.OpInsert)
		if c.Title != "General election date announced" || c.Link != "/story/7" || c.Where != "" {
			t.Errorf("title %q, link %q, where %q; want the headline, its link and no place", c.Title, c.Link, c.Where)
		}
	})
	t.Run("story removed", func(t *testing.T) {
		cs := detectTwo(t, page(story), base)
		c := only(t, cs, changedigest.OpDelete)
		if c.Title != "General election date announced" || c.Link != "/story/7" {
			t.Errorf("title %q, link %q; want the headline and its link", c.Title, c.Link)
		}
	})
	t.Run("edit under a heading", func(t *testing.T) {
		cs := detectTwo(t, base, strings.Replace(base, "from 9 to 17", "from 8 to 18", 1))
		c := only(t, cs, changedigest.OpUpdate)
		if c.Where != "under ‘Opening hours’" || c.Title != "" {
			t.Errorf("where %q, title %q; want under ‘Opening hours’ and no title", c.Where, c.Title)
		}
	})
	t.Run("in a named part", func(t *testing.T) {
		cs := detectTwo(t, base, strings.Replace(base, ">City<", ">Town hall<", 1))
		for _, c := range cs {
			if c.Type == changedigest.ChangeContent && c.Where != "in the navigation" {
				t.Errorf("%v: where %q, want in the navigation", c, c.Where)
			}
		}
		cs = detectTwo(t, base, strings.Replace(base, "on weekdays.</p></footer>", "on weekdays and Saturdays.</p></footer>", 1))
		for _, c := range cs {
			if c.Type == changedigest.ChangeContent && c.Where != "in the footer" {
				t.Errorf("%v: where %q, want in the footer", c, c.Where)
			}
		}
	})
	t.Run("parts named by class", func(t *testing.T) {
		old := `<html><body><div class="document"><h2>News</h2><p>The release notes of version 2.0 are out today for everyone.</p></div>
<div class="sphinxsidebar"><h3>Table Of Contents</h3><ul><li>News 2011</li><li>News 2010</li></ul></div>
<div id="footer">© Copyright 2011, the team.</div></body></html>`
		new := strings.NewReplacer("<li>News 2011</li>", "<li>News 2012</li><li>News 2011</li>", "2011, the team", "2012, the team").Replace(old)
		want := map[string]bool{"in the sidebar": false, "in the footer": false}
		for _, c := range detectTwo(t, old, new) {
			if c.Type != changedigest.ChangeContent {
				continue
			}
			if _, ok := want[c.Where]; !ok {
				t.Errorf("%v: where %q", c, c.Where)
			}
			want[c.Where] = true
		}
		for w, seen := range want {
			if !seen {
				t.Errorf("no change %s", w)
			}
		}
	})
	t.Run("a paragraph added is no story", func(t *testing.T) {
		cs := detectTwo(t, base, strings.Replace(base, "on Saturdays.</p>", "on Saturdays.</p><p>It is closed on public holidays and during the first week of August.</p>", 1))
		for _, c := range cs {
			if c.Title != "" {
				t.Errorf("%v: title %q, want none", c, c.Title)
			}
		}
	})
}

// only returns the one content change of op in cs.
func only(t *testing.T, cs []changedigest.Change, op changedigest.Op) changedigest.Change {
	t.Helper()
	var found []changedigest.Change
	for _, c := range cs {
		if c.Type == changedigest.ChangeContent && c.Op == op {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d content changes of op %s in %v, want 1", len(found), op, cs)
	}
	return found[0]
}

// TestPageName checks what names a page: its title, else og:title, else
// its h1, else its first h2 or h3, never a heading of its footer or one
// below h3.
func TestPageName(t *testing.T) {
	cases := []struct{ name, page, want string }{
		{"title", `<html><head><title> Riverside
 Daily </title><meta property="og:title" content="Shared"></head><body><h1>Front</h1></body></html>`, "Riverside Daily"},
		{"og:title", `<html><head><meta property="og:title" content="Riverside Daily"></head><body><h1>Front</h1></body></html>`, "Riverside Daily"},
		{"h1 after h2", `<body><h2>News</h2><p>a</p><h1>Riverside <b>Daily</b></h1></body>`, "Riverside Daily"},
		{"first h2", `<body><footer><h2>Contact</h2></footer><div><h3>Terms</h3><h2>Terms of service</h2><h2>Privacy</h2></div></body>`, "Terms of service"},
		{"no name", `<body><h4>(January 12, 2022 to January 11, 2026)</h4><p>text</p></body>`, ""},
	}
	for _, c := range cases {
		snap, err := New().Detect(Input{Body: []byte(c.page)})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Title != c.want {
			t.Errorf("%s: %q, want %q", c.name, snap.Title, c.want)
		}
	}
}
