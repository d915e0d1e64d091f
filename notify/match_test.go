package notify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/segmenter"
)

func mustMatcher(t *testing.T, terms ...string) *expand.Matcher {
	t.Helper()
	p := changedigest.Profile{}
	for _, term := range terms {
		p.Interests = append(p.Interests, changedigest.Interest{Term: term, Source: changedigest.SourceManual, Weight: 1})
	}
	m, err := expand.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMatchChangeUnits checks that a change is matched on the unit that
// changed: its words, else their sentence, else its item or section, and
// that the label says which.
func TestMatchChangeUnits(t *testing.T) {
	m := mustMatcher(t, "kettle", "ferry", "chess")
	tests := []struct {
		name   string
		change changedigest.Change
		labels []string
	}{
		{"the changed words", changedigest.Change{Op: changedigest.OpUpdate, OldText: "tea pot", NewText: "kettle", Before: "a new ", After: " for sale"},
			[]string{"matches your interest kettle"}},
		{"the sentence of a price", changedigest.Change{Op: changedigest.OpUpdate, OldText: "24", NewText: "29",
			Before: "Old stock. The blue kettle now costs ", After: " euros. Free delivery"},
			[]string{"matches your interest kettle in the sentence 'The blue kettle now costs 29 euros.'"}},
		{"the sentence of a time", changedigest.Change{Op: changedigest.OpUpdate, OldText: "15", NewText: "45",
			Before: "The ferry leaves at 8:", After: " from pier 3."},
			[]string{"matches your interest ferry in the sentence 'The ferry leaves at 8:45 from pier 3.'"}},
		{"not past the sentence", changedigest.Change{Op: changedigest.OpUpdate, OldText: "15", NewText: "45",
			Before: "Take the ferry! The bus leaves at 8:", After: " daily."}, nil},
		{"the item of a page", changedigest.Change{Op: changedigest.OpUpdate, OldText: "24", NewText: "29",
			Before: "Now only ", After: " euros", Where: "under ‘Blue kettle, 1.7 l’"},
			[]string{"matches your interest kettle in the item 'Blue kettle, 1.7 l'"}},
		{"the title of a feed item", changedigest.Change{Op: changedigest.OpUpdate, OldText: "3 comments", NewText: "4 comments",
			Title: "Chess olympiad: round 5", Where: "under ‘Ignored’"},
			[]string{"matches your interest chess in the item 'Chess olympiad: round 5'"}},
		{"the deleted words", changedigest.Change{Op: changedigest.OpDelete, OldText: "Ferry times", Where: "in ‘Chess club’"},
			[]string{"matches your interest ferry"}},
		{"nothing", changedigest.Change{Op: changedigest.OpUpdate, OldText: "24", NewText: "29", Before: "It costs ", After: " euros.", Where: "under ‘Red toaster’"}, nil},
		{"a landmark names no item", changedigest.Change{Op: changedigest.OpUpdate, OldText: "a", NewText: "b", Where: "in the navigation"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := MatchChange(m, tt.change)
			var got []string
			for _, mt := range ms {
				got = append(got, mt.Label())
				if mt.Unit != "" && mt.Context[mt.Start:mt.End] == "" {
					t.Errorf("match %+v: empty span in its context", mt)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.labels, "|") {
				t.Errorf("labels %q, want %q", got, tt.labels)
			}
		})
	}
	if got := Match(m, []changedigest.Change{tests[1].change, tests[7].change}); len(got) != 2 || len(got[0]) != 1 || len(got[1]) != 0 {
		t.Errorf("Match = %+v", got)
	}
}

// TestMatchDetectedChanges runs the cases through the segmenter:
// a price and a departure time change, and the interests kettle and ferry
// are matched through the sentence or the item the changed numbers are in.
func TestMatchDetectedChanges(t *testing.T) {
	page := `<html><head><title>Shop</title></head><body><h1>Kitchen</h1>
<div class="product"><h3>Blue kettle, 1.7 l</h3><p>Now only 24 euros, delivered free.</p></div>
<div class="product"><h3>Red toaster</h3><p>Two slots, 800 W. It costs 35 euros.</p></div>
<h2>Harbour</h2><ul><li>The ferry leaves at 8:15 from pier 3 every morning.</li><li>The bus leaves at 9:00.</li></ul>
</body></html>`
	edited := strings.NewReplacer("only 24", "only 29", "8:15", "8:45", "35 euros", "39 euros").Replace(page)
	d, err := segmenter.New().Diff([]byte(page), []byte(edited), "")
	if err != nil {
		t.Fatal(err)
	}
	m := mustMatcher(t, "kettle", "ferry")
	got := map[string][]string{}
	for i, ms := range Match(m, d.Changes) {
		for _, mt := range ms {
			got[d.Changes[i].NewText] = append(got[d.Changes[i].NewText], mt.Label())
		}
	}
	want := map[string][]string{
		"29": {"matches your interest kettle in the item 'Blue kettle, 1.7 l'"},
		"45": {"matches your interest ferry in the sentence 'The ferry leaves at 8:45 from pier 3 every morning.'"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v (changes %+v)", got, want, d.Changes)
	}
}
