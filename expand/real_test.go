package expand

import (
	"slices"
	"strings"
	"testing"
)

// TestRealExpansions checks well-known expansions on the embedded WordNet.
func TestRealExpansions(t *testing.T) {
	e := NewExpander(real(t))
	tests := []struct {
		term  string
		sense string            // synset ID
		want  map[string]string // term → relation
		not   []string
	}{
		// football n.1, "any of various games played with a ball ...":
		// American football, rugby and soccer are its hyponyms.
		{"football", "n00468480", map[string]string{"soccer": RelHyponym, "rugby": RelHyponym, "American football": RelHyponym, "association football": RelHyponym, "football game": RelSynonym}, nil},
		{"car", "n02958343", map[string]string{"automobile": RelSynonym, "auto": RelSynonym, "motorcar": RelSynonym, "motor vehicle": RelHypernym, "sports car": RelHyponym, "taxi": RelHyponym}, nil},
		{"election", "n00181781", map[string]string{"primary": RelHyponym, "general election": RelHyponym, "by-election": RelHyponym, "reelection": RelHyponym}, nil},
		// Its hypernym, election, is tagged 68 times to its once: too
		// common a word to stand for it.
		{"general election", "n00182435", map[string]string{"general election": RelTerm}, nil},
		{"database", "n06637824", map[string]string{"electronic database": RelHyponym}, []string{"information", "list"}},
		{"geese", "n01855672", map[string]string{"goose": RelTerm, "gander": RelHyponym, "gosling": RelHyponym}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.term, func(t *testing.T) {
			x := mustExpand(t, e, tt.term)[0]
			if x.Sense == nil || x.Sense.ID != tt.sense {
				t.Fatalf("sense = %+v, want %s", x.Sense, tt.sense)
			}
			for text, rel := range tt.want {
				if got, ok := term(x, text); !ok || got.Relation != rel {
					t.Errorf("term %q = %+v, %v; want %s", text, got, ok, rel)
				}
			}
			for _, text := range tt.not {
				if got, ok := term(x, text); ok {
					t.Errorf("term %q = %+v should be left out", text, got)
				}
			}
		})
	}
}

// TestRealSenseChoice checks sense choice with the profile as context.
func TestRealSenseChoice(t *testing.T) {
	e := NewExpander(real(t))
	tests := []struct {
		terms []string
		gloss string // the start of the first term's chosen gloss
	}{
		{[]string{"cricket"}, "leaping insect"},
		{[]string{"cricket", "football", "tennis"}, "a game played with a ball and bat"},
		{[]string{"football", "cricket", "tennis"}, "any of various games"}, // the others keep theirs
		{[]string{"stock", "trading"}, "the capital raised by a corporation"},
		{[]string{"stock", "shares", "investment"}, "the capital raised by a corporation"},
		{[]string{"stock", "soup", "cooking"}, "liquid in which meat and vegetables are simmered"},
		{[]string{"bank", "river", "fishing"}, "sloping land"},
		{[]string{"bank", "loan", "mortgage"}, "a financial institution"},
		{[]string{"java", "coffee", "tea"}, "a beverage"},
		{[]string{"java", "programming", "software"}, "a platform-independent object-oriented programming language"},
		{[]string{"mercury", "venus", "mars"}, "the smallest planet"},
		{[]string{"mercury", "lead", "arsenic"}, "a heavy silvery toxic univalent and bivalent metallic element"},
		{[]string{"plant", "flower", "garden"}, "(botany) a living organism"},
		{[]string{"crane", "heron", "stork"}, "large long-necked wading bird"},
		{[]string{"run"}, "move fast by using one's feet"},
		{[]string{"birds", "football", "tennis", "cricket", "rugby", "cycling", "badminton"}, "warm-blooded egg-laying vertebrates"},
		{[]string{"gardening", "cooking", "wine"}, "the cultivation of plants"},
		{[]string{"marathon", "cycling", "football", "running"}, "a footrace"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.terms, ","), func(t *testing.T) {
			x := mustExpand(t, e, tt.terms...)[0]
			if x.Sense == nil || !strings.HasPrefix(x.Sense.Gloss, tt.gloss) {
				t.Fatalf("sense = %+v, want %q…", x.Sense, tt.gloss)
			}
		})
	}
}

// TestRealNoTopHypernyms checks that no expansion offers the tops of the
// hierarchy.
func TestRealNoTopHypernyms(t *testing.T) {
	e := NewExpander(real(t))
	xs := mustExpand(t, e, "teacher", "dog", "idea", "running", "happiness", "rock", "team", "walk", "water", "mountain", "company", "game")
	tops := []string{"entity", "physical entity", "object", "whole", "abstraction", "thing", "act", "activity", "group", "person", "organism", "artifact", "instrumentality", "psychological feature", "event", "attribute", "matter", "substance"}
	for _, x := range xs {
		for _, tm := range x.Terms {
			if tm.Relation == RelHypernym && slices.Contains(tops, strings.ToLower(tm.Text)) {
				t.Errorf("%s: hypernym %q is too general", x.Interest.Term, tm.Text)
			}
		}
	}
}
