package expand

import (
	"slices"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
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
		// Alone, the interest prior takes the game over the insect.
		{[]string{"cricket"}, "a game played with a ball and bat"},
		{[]string{"cricket", "grasshopper", "beetle"}, "leaping insect"},
		{[]string{"cricket", "football", "tennis"}, "a game played with a ball and bat"},
		{[]string{"football", "cricket", "tennis"}, "any of various games"}, // the others keep theirs
		{[]string{"stock"}, "the capital raised by a corporation"},
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

// TestRealFrequencyPrior checks that without the interest prior the
// senses' frequencies decide, as WordNet orders them.
func TestRealFrequencyPrior(t *testing.T) {
	e := NewExpander(real(t))
	e.Prior = nil
	tests := []struct {
		term  string
		gloss string
	}{
		{"cricket", "leaping insect"},
		{"run", "move fast by using one's feet"},
		{"jazz", "empty rhetoric"},
		{"chess", "weedy annual"},
	}
	for _, tt := range tests {
		x := mustExpand(t, e, tt.term)[0]
		if x.Sense == nil || !strings.HasPrefix(x.Sense.Gloss, tt.gloss) {
			t.Errorf("%s: sense = %+v, want %q…", tt.term, x.Sense, tt.gloss)
		}
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

// TestRealPageContext checks that an interest's own page and URI choose
// its sense, and that the reason says so.
func TestRealPageContext(t *testing.T) {
	e := NewExpander(real(t))
	tests := []struct {
		name   string
		in     changedigest.Interest
		others []string
		gloss  string
		reason string
	}{
		{"java by its URI", changedigest.Interest{Term: "Java", URI: "http://dbpedia.org/resource/Java_(programming_language)"},
			nil, "a platform-independent object-oriented programming language", "sense chosen from the linked page 'http://dbpedia.org/resource/Java_(programming_language)'"},
		{"java island by its page, among drinks", changedigest.Interest{Term: "Java", URI: "http://en.wikipedia.org/wiki/Java",
			About: &changedigest.About{URL: "http://en.wikipedia.org/wiki/Java", Title: "Java – Wikipedia",
				Text: "Java is one of the Greater Sunda Islands in Indonesia. It is bordered by the Indian Ocean to the south and the Java Sea to the north. With a population of 156 million people, Java is the world's most populous island."}},
			[]string{"tea", "coffee"}, "an island in Indonesia", "sense chosen from the linked page 'Java – Wikipedia'"},
		{"jazz by its page", changedigest.Interest{Term: "Jazz", URI: "http://en.wikipedia.org/wiki/Jazz",
			About: &changedigest.About{URL: "http://en.wikipedia.org/wiki/Jazz", Title: "Jazz – Wikipedia",
				Text: "Jazz is a music genre that originated in the African-American communities of New Orleans, Louisiana, in the late 19th and early 20th centuries, with its roots in blues and ragtime."}},
			nil, "a genre of popular music that originated in New Orleans", "sense chosen from the linked page 'Jazz – Wikipedia'"},
		{"cricket by the profile", changedigest.Interest{Term: "cricket"}, []string{"grasshopper", "beetle"},
			"leaping insect", "sense chosen from your other interests (grasshopper, beetle)"},
		{"chess by the prior", changedigest.Interest{Term: "chess"}, nil,
			"a board game for two players", "the sense people usually mean by chess as an interest"},
		{"tennis has one sense", changedigest.Interest{Term: "tennis"}, nil,
			"a game played with rackets", "the only sense WordNet has for tennis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Source, tt.in.Weight = changedigest.SourceManual, 1
			p := profile(tt.others...)
			p.Interests = append([]changedigest.Interest{tt.in}, p.Interests...)
			xs, err := e.Expand(p)
			if err != nil {
				t.Fatal(err)
			}
			x := xs[0]
			if x.Sense == nil || !strings.HasPrefix(x.Sense.Gloss, tt.gloss) {
				t.Fatalf("sense = %+v, want %q…", x.Sense, tt.gloss)
			}
			if x.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", x.Reason, tt.reason)
			}
		})
	}
}

// TestRealUserChoice checks that a sense the user chose wins over the
// prior and the context, that every sense is offered with the chosen one
// marked, and that a choice WordNet does not know for the term is
// ignored.
func TestRealUserChoice(t *testing.T) {
	e := NewExpander(real(t))
	p := profile("jazz", "music")
	p.Senses = []changedigest.SenseChoice{{Term: "JAZZ", Synset: "n07136711"}} // empty rhetoric
	x := mustExpandProfile(t, e, p)[0]
	if x.Sense == nil || x.Sense.ID != "n07136711" || x.ChosenBy != ChosenByUser || x.Reason != "sense chosen by you" {
		t.Fatalf("sense = %+v, chosen by %q (%q); want the user's n07136711", x.Sense, x.ChosenBy, x.Reason)
	}
	if _, ok := term(x, "malarkey"); !ok {
		t.Errorf("terms %v lack the chosen sense's malarkey", x.Terms)
	}
	chosen := 0
	for _, o := range x.Options {
		if o.Chosen {
			chosen++
			if o.ID != "n07136711" {
				t.Errorf("option %s marked chosen", o.ID)
			}
		}
		if o.Gloss == "" {
			t.Errorf("option %s has no gloss", o.ID)
		}
	}
	if len(x.Options) != x.Senses || chosen != 1 {
		t.Errorf("%d options (%d chosen) for %d senses", len(x.Options), chosen, x.Senses)
	}
	p.Senses = []changedigest.SenseChoice{{Term: "jazz", Synset: "n02084071"}} // dog: not a sense of jazz
	if x := mustExpandProfile(t, e, p)[0]; x.Sense == nil || x.Sense.ID != "n07062697" || x.ChosenBy == ChosenByUser {
		t.Errorf("with a foreign choice, sense = %+v by %q; want the genre, not the user's", x.Sense, x.ChosenBy)
	}
}

func mustExpandProfile(tb testing.TB, e *Expander, p changedigest.Profile) []Expansion {
	tb.Helper()
	xs, err := e.Expand(p)
	if err != nil {
		tb.Fatal(err)
	}
	return xs
}

// TestRealBroadTerms checks that broad hypernyms do not match alone
// (ferry → boat, astronomy → physics) and that narrower terms still do.
func TestRealBroadTerms(t *testing.T) {
	e := NewExpander(real(t))
	m, err := e.Matcher(profile("ferry", "astronomy"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range m.Expansions() {
		for _, tm := range x.Terms {
			if tm.Relation == RelHypernym && tm.Level > MaxHypernymLevel {
				t.Errorf("%s: hypernym %q is %d levels up", x.Interest.Term, tm.Text, tm.Level)
			}
		}
	}
	tests := []struct{ text, want string }{
		{"The boat leaves at 8:45.", ""},
		{"New results in physics this week.", ""},
		{"The ferry leaves at 8:45.", "ferry"},
		{"A car-ferry sank.", "car-ferry"},
		{"Physics of celestial bodies and the universe", "Physics"},
		{"radio astronomy", "radio astronomy"},
	}
	for _, tt := range tests {
		var got []string
		for _, mt := range m.Match(tt.text) {
			got = append(got, tt.text[mt.Start:mt.End])
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("Match(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
