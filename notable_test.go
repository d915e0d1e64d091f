package changedigest

import (
	"slices"
	"strings"
	"testing"
)

func TestNotable(t *testing.T) {
	snap := &Snapshot{Significance: 0.05}
	text := func(old, new string) *Change {
		return &Change{Type: ChangeContent, Op: OpUpdate, OldText: old, NewText: new}
	}
	for _, tc := range []struct {
		name     string
		w        Watch
		s        *Snapshot
		c        *Change
		interest bool
		want     bool
		why      string
	}{
		{"plain change", Watch{}, snap, text("a", "b"), false, true, ""},
		{"noise", Watch{}, snap, &Change{Type: ChangeBehavioural, Op: OpUpdate, Noise: "generated value"}, false, false, "noise: generated value"},
		{"noise shown", Watch{ShowNoise: true, NotifyTypes: ChangeTypes}, snap, &Change{Type: ChangeBehavioural, Op: OpUpdate, Noise: "generated value"}, false, true, ""},
		{"markup not told by default", Watch{}, snap, &Change{Type: ChangeStructural, Op: OpUpdate}, false, false, "structural changes are not told unless the watch asks for them"},
		{"text moved told by default", Watch{}, snap, &Change{Type: ChangeStructural, Op: OpMove, OldText: "United Kingdom", NewText: "United Kingdom"}, false, true, ""},
		{"markup moved not told by default", Watch{}, snap, &Change{Type: ChangeStructural, Op: OpMove, OldText: `<link rel="alternate">`, NewText: `<link rel="alternate">`}, false, false, "structural changes are not told"},
		{"text moved not told when text only asked for", Watch{NotifyTypes: []ChangeType{ChangeContent}}, snap, &Change{Type: ChangeStructural, Op: OpMove, NewText: "United Kingdom"}, false, false, "structural changes are not told for this watch"},
		{"scripts told when asked for", Watch{NotifyTypes: ChangeTypes}, snap, &Change{Type: ChangeBehavioural, Op: OpUpdate}, false, true, ""},
		{"type not told", Watch{NotifyTypes: []ChangeType{ChangeContent}}, snap, &Change{Type: ChangeCosmetic, Op: OpUpdate}, false, false, "cosmetic changes are not told"},
		{"type told", Watch{NotifyTypes: []ChangeType{ChangeContent}}, snap, text("a", "b"), false, true, ""},
		{"minor version", Watch{MinSignificance: 0.1}, snap, text("a", "b"), false, false, "minor version: significance 0.05 < 0.1"},
		{"significant version", Watch{MinSignificance: 0.01}, snap, text("a", "b"), false, true, ""},
		{"unscored version passes", Watch{MinSignificance: 0.5}, &Snapshot{}, text("a", "b"), false, true, ""},
		{"ignored counter", Watch{IgnoreText: []string{`/\d+ views/`}}, snap, text("Story. 41 views", "Story. 42 views"), false, false, "only ignored text changed"},
		{"ignored text next to a real edit", Watch{IgnoreText: []string{`/\d+ views/`}}, snap, text("Story. 41 views", "Story corrected. 42 views"), false, true, ""},
		{"ignored plain text any case", Watch{IgnoreText: []string{"advertisement"}}, snap, &Change{Type: ChangeContent, Op: OpInsert, NewText: "ADVERTISEMENT"}, false, false, "only ignored text changed"},
		{"ignored counter, words with context", Watch{IgnoreText: []string{`/\d+ views/`}}, snap, &Change{Type: ChangeContent, Op: OpUpdate, Before: "Story. ", OldText: "41", NewText: "42", After: " views"}, false, false, "only ignored text changed"},
		{"trigger phrase across the context", Watch{TriggerText: []string{"sold out"}}, snap, &Change{Type: ChangeContent, Op: OpUpdate, Before: "Tickets ", OldText: "available", NewText: "sold", After: " out"}, false, true, ""},
		{"trigger appears", Watch{TriggerText: []string{"sold out"}}, snap, text("Tickets available", "Tickets Sold Out"), false, true, ""},
		{"trigger disappears", Watch{TriggerText: []string{"/sold\\s+out/"}}, snap, text("sold out", "back in stock"), false, true, ""},
		{"trigger stays", Watch{TriggerText: []string{"sold out"}}, snap, text("sold out since May", "sold out since June"), false, false, "no trigger text appeared or disappeared"},
		{"only interests, no match", Watch{OnlyInterests: true}, snap, text("a", "b"), false, false, "does not match your interests"},
		{"only interests, match", Watch{OnlyInterests: true}, snap, text("a", "b"), true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := Notable(&tc.w, tc.s, tc.c, tc.interest)
			if ok != tc.want || !strings.HasPrefix(why, tc.why) {
				t.Errorf("Notable = %v, %q; want %v, %q", ok, why, tc.want, tc.why)
			}
		})
	}
	if ok, _ := Notable(nil, nil, &Change{Noise: "x"}, false); ok {
		t.Error("noise without a watch must not be told")
	}
}

func TestWatchFiltersValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Watch
		err  string
	}{
		{"bad regexp", Watch{IgnoreText: []string{"/a(/"}}, "ignore text \"/a(/\" is not a valid regular expression"},
		{"empty-matching regexp", Watch{TriggerText: []string{"/x*/"}}, "trigger text \"/x*/\" is not a valid regular expression: it matches the empty text"},
		{"significance above 1", Watch{MinSignificance: 1.5}, "minimum significance 1.5 is not between 0 and 1"},
		{"negative significance", Watch{MinSignificance: -0.1}, "minimum significance -0.1 is not between 0 and 1"},
		{"unknown type", Watch{NotifyTypes: []ChangeType{"visual"}}, `unknown change type "visual"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.URL = "https://example.org/"
			err := tc.w.Validate()
			if err == nil || ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Validate() = %v, want EINVALID containing %q", err, tc.err)
			}
		})
	}
	w := Watch{URL: "https://example.org/", IgnoreText: []string{" a ", "", "a", "/b+/"},
		NotifyTypes: []ChangeType{"Content", "structural", "cosmetic", "behavioural"}}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(w.IgnoreText) != 2 || w.IgnoreText[0] != "a" || !slices.Equal(w.NotifyTypes, ChangeTypes) {
		t.Errorf("normalised filters: ignore %q, types %v; want [a /b+/] and every type, lower-cased", w.IgnoreText, w.NotifyTypes)
	}
}

// TestToldTypography checks that a change of typography only is told
// with the other changes of a version that is told, never alone.
func TestToldTypography(t *testing.T) {
	w := &Watch{ID: 1, URL: "https://example.org/"}
	quotes := Change{Type: ChangeContent, Op: OpUpdate, OldText: "’", NewText: "???", Noise: NoiseTypography}
	counter := Change{Type: ChangeContent, Op: OpUpdate, OldText: "42", NewText: "43", Noise: "counter or relative time"}
	story := Change{Type: ChangeContent, Op: OpInsert, NewText: "Tennis courts reopen"}
	none := func(int) bool { return false }
	if told, why := Told(w, &Snapshot{Changes: []Change{quotes, counter}}, none); told[0] || told[1] || why[0] != "noise: typography only" {
		t.Errorf("alone: told %v, why %q", told, why)
	}
	if told, _ := Told(w, &Snapshot{Changes: []Change{quotes, counter, story}}, none); !told[0] || told[1] || !told[2] {
		t.Errorf("with a story: told %v, want the quotes and the story", told)
	}
}
