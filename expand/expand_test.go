package expand

import (
	"math"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// profile makes a profile of manual interests of weight 1.
func profile(terms ...string) changedigest.Profile {
	var p changedigest.Profile
	for _, t := range terms {
		p.Interests = append(p.Interests, changedigest.Interest{Term: t, Source: changedigest.SourceManual, Weight: 1})
	}
	return p
}

// mustExpand expands terms as a profile.
func mustExpand(tb testing.TB, e *Expander, terms ...string) []Expansion {
	tb.Helper()
	xs, err := e.Expand(profile(terms...))
	if err != nil {
		tb.Fatal(err)
	}
	return xs
}

// term finds a term of an expansion by text.
func term(x Expansion, text string) (Term, bool) {
	for _, t := range x.Terms {
		if strings.EqualFold(t.Text, text) {
			return t, true
		}
	}
	return Term{}, false
}

// TestSenseChoice checks that the rest of the profile moves the choice
// away from the most frequent sense where it should, on the fixture. The
// fixture lacks most of the hierarchy the interest prior walks, so these
// weigh context against the senses' frequencies alone.
func TestSenseChoice(t *testing.T) {
	e := NewExpander(fixture(t))
	e.Prior, e.Context = nil, 1.8 // the weight that balanced frequencies alone
	tests := []struct {
		name  string
		terms []string
		want  string // synset ID of the first term's sense
	}{
		{"cricket alone is the insect (sense 1)", []string{"cricket"}, "n02229544"},
		{"cricket among sports is the game", []string{"cricket", "football", "tennis"}, "n00476389"},
		{"cricket among insects is the insect", []string{"cricket", "grasshopper"}, "n02229544"},
		{"stock alone is capital", []string{"stock"}, "n13333833"},
		{"stock beside trading is capital", []string{"stock", "trading"}, "n13333833"},
		{"stock among soups is broth", []string{"stock", "soup", "cooking"}, "n07585208"},
		{"ran is the verb run", []string{"ran"}, "v01926329"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := mustExpand(t, e, tt.terms...)[0]
			if x.Sense == nil || x.Sense.ID != tt.want {
				t.Fatalf("sense = %+v, want %s", x.Sense, tt.want)
			}
		})
	}
	// Without context weight, the most frequent sense always wins.
	e0 := NewExpander(fixture(t))
	e0.Context, e0.Prior = 0, nil
	if x := mustExpand(t, e0, "cricket", "football", "tennis")[0]; x.Sense.ID != "n02229544" {
		t.Errorf("with Context 0, cricket = %s, want the insect", x.Sense.ID)
	}
}

func TestExpand(t *testing.T) {
	e := NewExpander(fixture(t))
	tests := []struct {
		term  string
		found string
		lemma string
		want  map[string]string // term text → relation
		not   []string
	}{
		{"football", FoundLemma, "football", map[string]string{
			"football": RelTerm, "football game": RelSynonym, "soccer": RelHyponym, "rugby": RelHyponym,
			"American football": RelHyponym, "association football": RelHyponym, "field game": RelHypernym, "contact sport": RelHypernym,
		}, []string{"ball"}},
		{"car", FoundLemma, "car", map[string]string{
			"automobile": RelSynonym, "auto": RelSynonym, "motor vehicle": RelHypernym, "taxi": RelHyponym,
		}, nil},
		{"elections", FoundBase, "election", map[string]string{
			"elections": RelTerm, "election": RelTerm, "primary": RelHyponym, "general election": RelHyponym, "vote": RelHypernym,
		}, nil},
		{"Geese", FoundBase, "goose", map[string]string{"Geese": RelTerm, "goose": RelTerm}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.term, func(t *testing.T) {
			x := mustExpand(t, e, tt.term)[0]
			if x.Found != tt.found || x.Lemma != tt.lemma {
				t.Errorf("found %q as %q, want %q as %q", tt.term, x.Lemma, tt.lemma, tt.found)
			}
			if x.Terms[0].Text != tt.term || x.Terms[0].Relation != RelTerm || x.Terms[0].Weight != 1 {
				t.Errorf("first term = %+v, want the interest itself", x.Terms[0])
			}
			for text, rel := range tt.want {
				got, ok := term(x, text)
				if !ok || got.Relation != rel {
					t.Errorf("term %q = %+v, %v; want relation %s", text, got, ok, rel)
				}
			}
			for _, text := range tt.not {
				if _, ok := term(x, text); ok {
					t.Errorf("term %q should not be there", text)
				}
			}
			for i := 2; i < len(x.Terms); i++ {
				if x.Terms[i].Weight > x.Terms[i-1].Weight {
					t.Errorf("terms not by falling weight at %d: %v", i, x.Terms)
				}
			}
		})
	}
}

// TestWeights checks the order of the relations and the interest's weight.
func TestWeights(t *testing.T) {
	e := NewExpander(fixture(t))
	p := profile("football")
	p.Interests[0].Weight = 0.5
	xs, err := e.Expand(p)
	if err != nil {
		t.Fatal(err)
	}
	x := xs[0]
	w := func(text string) float64 {
		tm, ok := term(x, text)
		if !ok {
			t.Fatalf("no term %q in %v", text, x.Terms)
		}
		return tm.Weight
	}
	if got := w("football"); got != 0.5 {
		t.Errorf("the interest weighs %v, want 0.5 (its own weight)", got)
	}
	if !(w("football") > w("football game") && w("football game") > w("soccer") && w("soccer") > w("field game")) {
		t.Errorf("want term > synonym > hyponym > hypernym: %v", x.Terms)
	}
	for _, tm := range x.Terms {
		if tm.Weight <= 0 || tm.Weight > 0.5 || math.IsNaN(tm.Weight) {
			t.Errorf("term %q weighs %v", tm.Text, tm.Weight)
		}
	}
}

func TestExpandLiteralAndHead(t *testing.T) {
	e := NewExpander(fixture(t))
	xs := mustExpand(t, e, "semantic web", "European general elections")
	if x := xs[0]; x.Found != FoundNone || x.Sense != nil || len(x.Terms) != 1 || x.Terms[0].Text != "semantic web" || x.Terms[0].POS != 0 {
		t.Errorf("semantic web = %+v, want a literal phrase alone", x)
	}
	x := xs[1]
	if x.Found != FoundHead || x.Lemma != "general election" {
		t.Fatalf("European general elections found %q as %q, want head phrase general election", x.Lemma, x.Found)
	}
	if tm, ok := term(x, "general election"); !ok || tm.Relation != RelHypernym {
		t.Errorf("general election = %+v, want a hypernym of the literal term", tm)
	}
	if x.Terms[0].Text != "European general elections" || x.Terms[0].Relation != RelTerm {
		t.Errorf("first term = %+v", x.Terms[0])
	}
}

func TestExpandProfileFields(t *testing.T) {
	e := NewExpander(fixture(t))
	p := profile("car", "football", "soup")
	p.Interests[1].Source = changedigest.SourcePage
	p.Excluded = []string{"Soup", "taxi"}
	xs, err := e.Expand(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 2 {
		t.Fatalf("%d expansions, want 2 (soup is excluded)", len(xs))
	}
	if _, ok := term(xs[0], "taxi"); ok {
		t.Error("excluded term taxi is among car's terms")
	}
	if xs[1].Terms[0].Relation != RelKeyTerm {
		t.Errorf("a term from a linked page has relation %q, want %q", xs[1].Terms[0].Relation, RelKeyTerm)
	}
}

func TestTooGeneral(t *testing.T) {
	e := NewExpander(fixture(t))
	e.TooGeneral = append(e.TooGeneral, "field game")
	x := mustExpand(t, e, "football")[0]
	if _, ok := term(x, "field game"); ok {
		t.Error("field game is listed as too general but is a term")
	}
	if _, ok := term(x, "contact sport"); !ok {
		t.Error("contact sport is missing")
	}
	// In the fixture, football and its four hyponyms lie below both field
	// game and contact sport.
	e.GeneralLimit = 3
	x = mustExpand(t, e, "football")[0]
	for _, tm := range x.Terms {
		if tm.Relation == RelHypernym {
			t.Errorf("hypernym %q kept with GeneralLimit 3", tm.Text)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	e := NewExpander(fixture(t))
	tests := []struct {
		name string
		in   changedigest.Interest
		msg  string
	}{
		{"empty", changedigest.Interest{Term: "  "}, "empty term"},
		{"not UTF-8", changedigest.Interest{Term: "caf\xe9"}, "not valid UTF-8"},
		{"too long", changedigest.Interest{Term: strings.Repeat("word ", 50)}, "longer than"},
		{"negative weight", changedigest.Interest{Term: "car", Weight: -1}, "weight"},
		{"NaN weight", changedigest.Interest{Term: "car", Weight: math.NaN()}, "weight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Expand(changedigest.Profile{Interests: []changedigest.Interest{tt.in}})
			if changedigest.ErrorCode(err) != changedigest.EINVALID || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want EINVALID mentioning %q", err, tt.msg)
			}
		})
	}
	if xs, err := e.Expand(changedigest.Profile{}); err != nil || len(xs) != 0 {
		t.Errorf("empty profile: %v, %v", xs, err)
	}
}
