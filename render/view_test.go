package render

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// at places a match on the first occurrence of term in text.
func at(text, interest, term, relation string) changedigest.Match {
	i := strings.Index(text, term)
	if i < 0 {
		panic("term not in text: " + term)
	}
	return changedigest.Match{Interest: interest, Term: term, Relation: relation, Start: i, End: i + len(term)}
}

func TestPieces(t *testing.T) {
	long := strings.Repeat("word ", 40)
	tests := []struct {
		name   string
		change changedigest.Change
		ms     []changedigest.Match
		opt    ViewOptions
		want   string
		labels int
	}{
		{
			name:   "update with a match in the new text",
			change: changedigest.Change{Op: "update", OldText: "the football club lost", NewText: "the soccer club won"},
			ms:     []changedigest.Match{at("the soccer club won", "football", "soccer", "synonym")},
			want:   "the [-football-]{+**soccer**+} club [-lost-]{+won+}",
			labels: 1,
		},
		{
			name:   "changed words with context before and after, a match in the new words",
			change: changedigest.Change{Op: "update", OldText: "football", NewText: "soccer", Before: "the ", After: " club won"},
			ms:     []changedigest.Match{at("soccer", "football", "soccer", "synonym")},
			want:   "the [-football-]{+**soccer**+} club won",
			labels: 1,
		},
		{
			name:   "match in an unchanged word",
			change: changedigest.Change{Op: "update", OldText: "rugby news today", NewText: "rugby news tonight"},
			ms:     []changedigest.Match{at("rugby news tonight", "rugby", "rugby", "term")},
			want:   "**rugby** news [-today-]{+tonight+}",
			labels: 1,
		},
		{
			name:   "a match in the sentence around the changed words is told, not marked",
			change: changedigest.Change{Op: "update", OldText: "24", NewText: "29", Before: "The kettle now costs ", After: " euros."},
			ms: []changedigest.Match{{Interest: "kettle", Term: "kettle", Relation: "term", Start: 4, End: 10,
				Unit: changedigest.UnitSentence, Context: "The kettle now costs 29 euros."}},
			want:   "The kettle now costs [-24-]{+29+} euros.",
			labels: 1,
		},
		{
			name:   "deletion marks the old text",
			change: changedigest.Change{Op: "delete", OldText: "ontology tools meetup"},
			ms:     []changedigest.Match{at("ontology tools meetup", "ontology", "ontology", "term")},
			want:   "[-**ontology** tools meetup-]",
			labels: 1,
		},
		{
			name:   "overlapping matches merge",
			change: changedigest.Change{Op: "insert", NewText: "new semantic web tools"},
			ms: []changedigest.Match{
				at("new semantic web tools", "semantic web", "semantic web", "term"),
				at("new semantic web tools", "web", "web", "term"),
			},
			want:   "{+new **semantic web** tools+}",
			labels: 2,
		},
		{
			name:   "a span out of range or inside a rune is not marked but still labelled",
			change: changedigest.Change{Op: "insert", NewText: "café au lait"},
			ms: []changedigest.Match{
				{Interest: "coffee", Term: "café", Start: 0, End: 4}, // ends inside é
				{Interest: "milk", Term: "lait", Start: 10, End: 99},
				{Interest: "tea", Term: "x", Start: 3, End: 2},
			},
			want:   "{+café au lait+}",
			labels: 3,
		},
		{
			name:   "unchanged text is shortened around the change, as many words as changed",
			change: changedigest.Change{Op: "update", OldText: long + "old " + long, NewText: long + "new " + long},
			opt:    ViewOptions{Context: 3},
			want:   "… word word [-old-]{+new+} word word …",
		},
		{
			name:   "at most Context words around a larger change",
			change: changedigest.Change{Op: "update", OldText: long + "old one " + long, NewText: long + "new two three " + long},
			opt:    ViewOptions{Context: 3},
			want:   "… word word word [-old one-]{+new two three+} word word word …",
			labels: 0,
		},
		{
			name:   "a moved block keeps its head",
			change: changedigest.Change{Op: "move", OldText: long, NewText: long},
			opt:    ViewOptions{Context: 2},
			want:   "word word word word …",
		},
		{
			name:   "a mark in a long unchanged run is kept with its context",
			change: changedigest.Change{Op: "update", OldText: long + "chess " + long + "x", NewText: long + "chess " + long + "y"},
			ms:     []changedigest.Match{at(long+"chess "+long+"y", "chess", "chess", "term")},
			opt:    ViewOptions{Context: 1},
			want:   "… word **chess** word … word [-x-]{+y+}",
			labels: 1,
		},
		{
			name:   "the text is cut at MaxChars",
			change: changedigest.Change{Op: "insert", NewText: "one two three four five six seven"},
			opt:    ViewOptions{MaxChars: 14},
			want:   "{+one two three+} …",
		},
		{
			name:   "control characters are dropped, invalid UTF-8 replaced",
			change: changedigest.Change{Op: "insert", NewText: "a\x00b\x1bc\u0085d\xffe\tf"},
			want:   "{+abcd\ufffde\tf+}",
		},
		{
			name:   "no text on either side",
			change: changedigest.Change{Op: "update", Type: "cosmetic"},
			want:   "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := changeView(0, tt.change, tt.ms, tt.opt, false)
			if got := PiecesText(cv.Pieces); got != tt.want {
				t.Errorf("pieces = %q, want %q", got, tt.want)
			}
			if len(cv.Labels) != tt.labels {
				t.Errorf("labels = %q, want %d", cv.Labels, tt.labels)
			}
			if cv.Profile() != (tt.labels > 0) {
				t.Errorf("Profile() = %v with %d labels", cv.Profile(), tt.labels)
			}
		})
	}
}

func TestSides(t *testing.T) {
	cv := changeView(0, changedigest.Change{Op: "update", OldText: "a b c", NewText: "a x c"}, nil, ViewOptions{}, false)
	if got := PiecesText(cv.OldPieces()); got != "a [-b-] c" {
		t.Errorf("old side = %q", got)
	}
	if got := PiecesText(cv.NewPieces()); got != "a {+x+} c" {
		t.Errorf("new side = %q", got)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		total, profile int
		want           string
	}{
		{0, 0, "no change"},
		{1, 0, "1 change"},
		{1, 1, "1 change, matching your interests"},
		{3, 1, "3 changes, 1 matches your interests"},
		{3, 2, "3 changes, 2 match your interests"},
		{2, 2, "2 changes, all matching your interests"},
	}
	for _, tt := range tests {
		if got := summary(tt.total, tt.profile); got != tt.want {
			t.Errorf("summary(%d, %d) = %q, want %q", tt.total, tt.profile, got, tt.want)
		}
	}
}

func TestViewErrors(t *testing.T) {
	e := MustEngine(t)
	w := &changedigest.Watch{ID: 1, URL: "https://example.org/", CreatedAt: time.Unix(0, 0)}
	s := &changedigest.Snapshot{Seq: 2, FetchedAt: time.Unix(100, 0), Changes: []changedigest.Change{{Op: "insert", NewText: "x"}}}
	tests := []struct {
		name string
		ev   Event
	}{
		{"no watch", Event{Snapshot: s}},
		{"no snapshot", Event{Watch: w}},
		{"no detection time", Event{Watch: w, Snapshot: &changedigest.Snapshot{Seq: 2}}},
		{"more match lists than changes", Event{Watch: w, Snapshot: s, Matches: make([][]changedigest.Match, 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.View(tt.ev, ViewOptions{})
			if !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("View: %v, want ErrInvalidEvent", err)
			}
		})
	}
}

func TestCleanText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"tab\tnl\ncr\r", "tab\tnl\ncr\r"},
		{"nul\x00 bell\a esc\x1b del\x7f", "nul bell esc del"},
		{"c1\u0080\u009f", "c1"},
		{"bad\xc3(utf8", "bad\ufffd(utf8"},
		{"nonchar\uffff\ufffe", "nonchar"},
		{"emoji 🎉 ok", "emoji 🎉 ok"},
	}
	for _, tt := range tests {
		if got := cleanText(tt.in); got != tt.want {
			t.Errorf("cleanText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSafeURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://example.org/a?b=c#d", "https://example.org/a?b=c#d"},
		{"HTTP://Example.org/", "http://Example.org/"},
		{"  https://example.org/  ", "https://example.org/"},
		{"javascript:alert(1)", ""},
		{"JaVaScRiPt:alert(1)", ""},
		{"java\tscript:alert(1)", ""},
		{"data:text/html,<script>alert(1)</script>", ""},
		{"vbscript:x", ""},
		{"//example.org/x", ""},
		{"/relative", ""},
		{"https://user:pw@example.org/", ""},
		{"https://example.org/\"onmouseover=x", ""},
		{"https://exa mple.org/", ""},
		{"https://example.org/\x00", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := safeURL(tt.in); got != tt.want {
			t.Errorf("safeURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseInlineCSS(t *testing.T) {
	tests := []struct {
		name, css string
		ok        bool
	}{
		{"rules", "/* c */ .a { color: red; margin: 0 } .b-c{padding:1px;}", true},
		{"descendant selector", ".a .b { color: red }", false},
		{"element selector", "p { color: red }", false},
		{"media query", "@media (min-width: 1px) { .a { color: red } }", false},
		{"quote", `.a { font-family: "x" }`, false},
		{"url", ".a { background: url(x.png) }", false},
		{"not a declaration", ".a { red }", false},
		{"unclosed", ".a { color: red", false},
		{"twice", ".a { color: red } .a { color: blue }", false},
		{"stray text", ".a { color: red } junk", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := parseInlineCSS(tt.css)
			if (err == nil) != tt.ok {
				t.Fatalf("parseInlineCSS: %v, want ok=%v", err, tt.ok)
			}
			if tt.ok && (len(rules["a"]) != 2 || rules["a"][0] != (decl{"color", "red"})) {
				t.Errorf("rules = %v", rules)
			}
		})
	}
}

func TestClassAttr(t *testing.T) {
	e := MustEngine(t)
	if got := e.classAttr("cd-change cd-profile", false); got != ` class="cd-change cd-profile"` {
		t.Errorf("web: %s", got)
	}
	got := string(e.classAttr("cd-change cd-profile", true))
	// cd-profile's border-left overrides cd-change's, in cd-change's place.
	if strings.Count(got, "border-left:") != 1 || !strings.Contains(got, "style=\"border-left:6px solid #e36209;") {
		t.Errorf("inline: %s", got)
	}
}

func TestLimits(t *testing.T) {
	if got := oneLine(strings.Repeat("long title ", 100)); len(got) > maxLine+len("…") || !strings.HasSuffix(got, "title…") {
		t.Errorf("oneLine of a long title: %d bytes, %q", len(got), got[len(got)-20:])
	}
	if got := oneLine(" a\n\tb  c "); got != "a b c" {
		t.Errorf("oneLine folds space: %q", got)
	}
	text := "one two three four five six seven eight"
	var ms []changedigest.Match
	for _, w := range strings.Fields(text) {
		ms = append(ms, at(text, w, w, "term"))
	}
	cv := changeView(0, changedigest.Change{Op: "insert", NewText: text}, ms, ViewOptions{}, false)
	if len(cv.Labels) != maxLabels || cv.MoreLabels != 3 || len(cv.Interests) != 8 {
		t.Errorf("%d labels, %d more, %d interests; want %d, 3, 8", len(cv.Labels), cv.MoreLabels, len(cv.Interests), maxLabels)
	}
	e := MustEngine(t)
	var buf bytes.Buffer
	if err := e.inline.ExecuteTemplate(&buf, "change", cv); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "★ and 3 more interests</p>") {
		t.Errorf("no “and 3 more interests” label:\n%s", buf.String())
	}
}

// TestTypographyGoesAlong checks that a change of quotes alone makes
// nothing to tell, and that in a version told anyway it is shown with
// the rest, while other noise stays folded.
func TestTypographyGoesAlong(t *testing.T) {
	e := MustEngine(t)
	w := &changedigest.Watch{ID: 1, URL: "https://example.org/", CreatedAt: time.Unix(0, 0)}
	quotes := changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "’", NewText: "???",
		Before: "Putin", After: "s new missile", Noise: changedigest.NoiseTypography}
	counter := changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "42", NewText: "43",
		After: " comments", Noise: "counter or relative time"}
	story := changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpInsert, NewText: "Tennis courts reopen"}
	view := func(cs ...changedigest.Change) EventView {
		t.Helper()
		v, err := e.View(Event{Watch: w, Snapshot: &changedigest.Snapshot{Seq: 2, FetchedAt: time.Unix(100, 0), Changes: cs}}, ViewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := view(quotes, counter); len(v.General)+len(v.Profile) != 0 || len(v.Folded) != 2 {
		t.Errorf("quotes alone: %d told, %d folded; want none told", len(v.General)+len(v.Profile), len(v.Folded))
	}
	v := view(quotes, counter, story)
	if len(v.General) != 2 || len(v.Folded) != 1 || v.Folded[0].Why != "noise: counter or relative time" {
		t.Errorf("quotes with a story: %d told, %d folded; want the quotes and the story told, the counter folded", len(v.General), len(v.Folded))
	}
}
