package expand

import (
	"slices"
	"sync"
	"testing"
)

var (
	fixtureOnce sync.Once
	fixtureWN   *WordNet
	fixtureErr  error
)

// fixture returns the hand-cut WordNet of testdata/dict.
func fixture(tb testing.TB) *WordNet {
	tb.Helper()
	fixtureOnce.Do(func() { fixtureWN, fixtureErr = LoadDir("testdata/dict") })
	if fixtureErr != nil {
		tb.Fatal(fixtureErr)
	}
	return fixtureWN
}

// real returns the embedded WordNet.
func real(tb testing.TB) *WordNet {
	tb.Helper()
	wn, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return wn
}

func TestBaseForms(t *testing.T) {
	wn := fixture(t)
	tests := []struct {
		name string
		word string
		pos  POS
		want []string
	}{
		{"lemma itself", "election", Noun, []string{"election"}},
		{"regular plural", "elections", Noun, []string{"election"}},
		{"case and spaces", "  ELECTIONS ", Noun, []string{"election"}},
		{"exception list", "geese", Noun, []string{"goose"}},
		{"irregular past is a verb only", "ran", Verb, []string{"run"}},
		{"irregular past as a noun", "ran", Noun, nil},
		{"exception list for -ing", "running", Verb, []string{"run"}},
		{"verb -s", "runs", Verb, []string{"run"}},
		{"noun -s of the same word", "runs", Noun, []string{"run"}},
		{"collocation", "general elections", Noun, []string{"general election"}},
		{"collocation with underscores", "Motor_Vehicles", Noun, []string{"motor vehicle"}},
		{"collocation with a hyphen", "motor-vehicles", Noun, []string{"motor vehicle"}},
		{"not in WordNet", "semantic web", Noun, nil},
		{"unknown word", "blorptastic", Noun, nil},
		{"empty", "   ", Noun, nil},
		{"bad part of speech", "car", POS('x'), nil},
		{"no rules for adverbs", "cars", Adverb, nil},
		{"-ss nouns keep their s", "grass", Noun, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wn.BaseForms(tt.word, tt.pos); !slices.Equal(got, tt.want) {
				t.Errorf("BaseForms(%q, %v) = %q, want %q", tt.word, tt.pos, got, tt.want)
			}
		})
	}
}

// TestBaseFormsReal checks morphy on the full WordNet, where a form has
// several bases.
func TestBaseFormsReal(t *testing.T) {
	wn := real(t)
	tests := []struct {
		word string
		pos  POS
		want []string
	}{
		{"glasses", Noun, []string{"glasses", "glass"}},
		{"better", Adjective, []string{"better", "good", "well"}},
		{"axes", Noun, []string{"ax", "axis"}},
		{"boxesful", Noun, []string{"boxful"}},
		{"attorneys general", Noun, []string{"attorney general"}},
		{"ran away", Verb, []string{"run away"}},
		{"e-mails", Noun, []string{"e-mail"}},
		{"stopped", Verb, []string{"stop"}},
		{"hardest", Adjective, []string{"hard"}},
	}
	for _, tt := range tests {
		if got := wn.BaseForms(tt.word, tt.pos); !slices.Equal(got, tt.want) {
			t.Errorf("BaseForms(%q, %v) = %q, want %q", tt.word, tt.pos, got, tt.want)
		}
	}
}

func TestInflections(t *testing.T) {
	wn := fixture(t)
	tests := []struct {
		lemma string
		pos   POS
		want  []string // must all be there
		not   []string // must not
	}{
		{"goose", Noun, []string{"goose", "geese"}, nil},
		{"run", Verb, []string{"run", "ran", "running", "runs"}, []string{"runes"}},
		{"run", Noun, []string{"run", "runs"}, []string{"ran", "running"}},
		{"car", Noun, []string{"car", "cars"}, nil},
		{"general election", Noun, []string{"general election", "general elections"}, []string{"generals election"}},
		{"Motor Vehicle", Noun, []string{"motor vehicle", "motor vehicles"}, nil},
		{"run away", Verb, []string{"run away", "ran away", "running away", "runs away"}, nil},
		{"stop", Verb, []string{"stops", "stopped", "stopping"}, nil},
		{"carry", Verb, []string{"carries", "carried", "carrying"}, nil},
		{"taxi", Noun, []string{"taxis"}, nil},
		{"box", Noun, []string{"boxes"}, nil},
		{"tie", Verb, []string{"ties", "tied", "tying"}, nil},
		{"big", Adjective, []string{"bigger", "biggest"}, nil},
		{"visit", Verb, []string{"visited", "visiting"}, []string{"visitted"}},
		{"fast", Adverb, []string{"fast"}, []string{"fasts"}},
	}
	for _, tt := range tests {
		got := wn.Inflections(tt.lemma, tt.pos)
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("Inflections(%q, %v) = %q, missing %q", tt.lemma, tt.pos, got, w)
			}
		}
		for _, w := range tt.not {
			if slices.Contains(got, w) {
				t.Errorf("Inflections(%q, %v) = %q, has %q", tt.lemma, tt.pos, got, w)
			}
		}
	}
}

// TestInflectionsRoundTrip checks that morphy takes the regular forms of
// WordNet lemmas back to the lemma (doubled consonants aside).
func TestInflectionsRoundTrip(t *testing.T) {
	wn := real(t)
	for _, c := range []struct {
		lemma string
		pos   POS
	}{{"election", Noun}, {"church", Noun}, {"city", Noun}, {"walk", Verb}, {"hope", Verb}, {"cry", Verb}, {"tall", Adjective}, {"motor vehicle", Noun}} {
		for _, f := range wn.Inflections(c.lemma, c.pos) {
			if !slices.Contains(wn.BaseForms(f, c.pos), c.lemma) {
				t.Errorf("%s of %q: BaseForms(%q) = %q", c.pos, c.lemma, f, wn.BaseForms(f, c.pos))
			}
		}
	}
}

func TestLookup(t *testing.T) {
	wn := fixture(t)
	senses := wn.Lookup("Cricket", 0)
	if len(senses) != 3 {
		t.Fatalf("Lookup(cricket) = %d senses, want 3 (two nouns, one verb)", len(senses))
	}
	want := []struct {
		id  string
		num int
	}{{"n02229544", 1}, {"n00476389", 2}, {"v01076035", 1}}
	for i, w := range want {
		if senses[i].ID != w.id || senses[i].Number != w.num || senses[i].Lemma != "cricket" {
			t.Errorf("sense %d = %s #%d of %q, want %s #%d", i, senses[i].ID, senses[i].Number, senses[i].Lemma, w.id, w.num)
		}
	}
	if senses[0].Lexname != "noun.animal" || senses[1].Lexname != "noun.act" {
		t.Errorf("lexnames %q, %q", senses[0].Lexname, senses[1].Lexname)
	}
	if got := wn.Senses("geese", Noun); len(got) != 1 || got[0].Lemma != "goose" {
		t.Errorf("Senses(geese) = %+v", got)
	}
	s, ok := wn.Synset("n02958343")
	if !ok || !slices.Equal(s.Words, []string{"car", "auto", "automobile", "machine", "motorcar"}) {
		t.Errorf("Synset(n02958343) = %+v, %v", s, ok)
	}
	if _, ok := wn.Synset("n99999999"); ok {
		t.Error("Synset(n99999999) found")
	}
}

func TestRegularForms(t *testing.T) {
	tests := []struct {
		w    string
		pos  POS
		want []string
	}{
		{"match", Noun, []string{"matches"}},
		{"lady", Noun, []string{"ladies"}},
		{"day", Noun, []string{"days"}},
		{"chairman", Noun, []string{"chairmans", "chairmen"}},
		{"hope", Verb, []string{"hopes", "hoped", "hoping"}},
		{"see", Verb, []string{"sees", "seed", "seeing"}},
		{"echo", Verb, []string{"echoes", "echos", "echoed", "echoing"}},
		{"jog", Verb, []string{"jogs", "jogged", "jogging", "joged", "joging"}},
		{"large", Adjective, []string{"larger", "largest"}},
		{"happy", Adjective, []string{"happier", "happiest"}},
		{"naïve", Adjective, nil},
		{"x", Noun, nil},
	}
	for _, tt := range tests {
		if got := regularForms(tt.w, tt.pos); !slices.Equal(got, tt.want) {
			t.Errorf("regularForms(%q, %v) = %q, want %q", tt.w, tt.pos, got, tt.want)
		}
	}
}
