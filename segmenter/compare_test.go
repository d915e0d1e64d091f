package segmenter

import (
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
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
