package expand

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

// hand builds an expansion by hand: term text, relation, weight, POS.
func hand(interest string, terms ...Term) Expansion {
	return Expansion{Interest: changedigest.Interest{Term: interest, Weight: 1}, Terms: terms}
}

// show renders matches as "text=interest/relation/term" for comparison.
func show(text string, ms []changedigest.Match) string {
	var b []string
	for _, m := range ms {
		b = append(b, fmt.Sprintf("%s=%s/%s/%s", text[m.Start:m.End], m.Interest, m.Relation, m.Term))
	}
	return strings.Join(b, " ")
}

// TestMatchHypernymNeedsEvidence checks that a broader term matches only
// beside another term of the interest or words of its definition.
func TestMatchHypernymNeedsEvidence(t *testing.T) {
	wn := fixture(t)
	ferry := hand("ferry", Term{Text: "ferry", Relation: RelTerm, Weight: 1, POS: Noun},
		Term{Text: "boat", Relation: RelHypernym, Weight: 0.5, POS: Noun, Level: 1},
		Term{Text: "craft", Relation: RelHypernym, Weight: 0.5, POS: Noun, Level: 3})
	ferry.Sense = &Sense{Synset: Synset{ID: "n03329663", Gloss: "a boat that transports people or vehicles across a body of water and operates on a regular schedule"}}
	m := wn.Compile([]Expansion{ferry, hand("car", Term{Text: "car", Relation: RelTerm, Weight: 1, POS: Noun})})
	tests := []struct {
		name, text, want string
	}{
		{"alone", "The boat leaves at 8:45.", ""},
		{"one word of the definition", "The boat leaves on schedule.", ""},
		{"two words of the definition", "The boat now transports vehicles.", "boat=ferry/hypernym/boat"},
		{"beside the interest", "The ferry is a boat.", "ferry=ferry/term/ferry boat=ferry/hypernym/boat"},
		{"another interest is no evidence", "A car on the boat.", "car=car/term/car"},
		{"more than two levels up never", "a craft that transports vehicles across water", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(tt.text, m.Match(tt.text)); got != tt.want {
				t.Errorf("Match(%q)\n got %s\nwant %s", tt.text, got, tt.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	wn := fixture(t)
	m := wn.Compile([]Expansion{
		hand("car", Term{Text: "car", Relation: RelTerm, Weight: 1, POS: Noun},
			Term{Text: "automobile", Relation: RelSynonym, Weight: 0.8, POS: Noun},
			Term{Text: "motor vehicle", Relation: RelHyponym, Weight: 0.5, POS: Noun},
			Term{Text: "S.U.V.", Relation: RelHyponym, Weight: 0.6, POS: Noun}),
		hand("motors", Term{Text: "motor", Relation: RelTerm, Weight: 1, POS: Noun}),
		hand("run", Term{Text: "run", Relation: RelTerm, Weight: 1, POS: Verb}),
		hand("score", Term{Text: "run", Relation: RelHyponym, Weight: 0.6, POS: Noun}),
		hand("geese", Term{Text: "goose", Relation: RelTerm, Weight: 1, POS: Noun}),
		hand("semantic web", Term{Text: "semantic web", Relation: RelTerm, Weight: 1}),
		hand("mail", Term{Text: "e-mail", Relation: RelTerm, Weight: 1, POS: Noun}),
		hand("fame", Term{Text: "A-list", Relation: RelHyponym, Weight: 0.45, POS: Noun}),
		hand("C++", Term{Text: "C++", Relation: RelTerm, Weight: 1}),
		hand(".NET", Term{Text: ".NET", Relation: RelTerm, Weight: 1}),
		hand("node", Term{Text: "Node.js", Relation: RelTerm, Weight: 1}),
		hand("elections", Term{Text: "general election", Relation: RelHyponym, Weight: 0.6, POS: Noun},
			Term{Text: "election", Relation: RelTerm, Weight: 1, POS: Noun}),
	})
	tests := []struct {
		name, text, want string
	}{
		{"inflection and case", "Cars and AUTOMOBILES", "Cars=car/term/car AUTOMOBILES=car/synonym/automobile"},
		{"whole words only", "carpet scar cart", ""},
		{"longest wins over a heavier part", "two motor vehicles", "motor vehicles=car/hyponym/motor vehicle"},
		{"the part alone", "a motor", "motor=motors/term/motor"},
		{"phrase over a hyphen", "motor-vehicle", "motor-vehicle=car/hyponym/motor vehicle"},
		{"phrase over a line break", "motor\n  vehicle", "motor\n  vehicle=car/hyponym/motor vehicle"},
		{"phrase over an underscore", "motor_vehicle", "motor_vehicle=car/hyponym/motor vehicle"},
		{"not over punctuation", "motor. Vehicle", "motor=motors/term/motor"},
		{"irregular verb", "she ran home", "ran=run/term/run"},
		{"heavier at equal length", "runs", "runs=run/term/run"},
		{"irregular noun", "two geese", "geese=geese/term/goose"},
		{"literal phrase inflects its head", "semantic webs", "semantic webs=semantic web/term/semantic web"},
		{"literal phrase with a hyphen", "Semantic-Web", "Semantic-Web=semantic web/term/semantic web"},
		{"possessive", "the car's door, the automobile’s", "car=car/term/car automobile=car/synonym/automobile"},
		{"possessive phrase", "motor vehicle's", "motor vehicle=car/hyponym/motor vehicle"},
		{"hyphenated term written solid", "email and e-mails", "email=mail/term/e-mail e-mails=mail/term/e-mail"},
		{"acronym with dots", "an S.U.V. here", "S.U.V=car/hyponym/S.U.V."},
		{"acronym needs its dots", "S U V, S-U-V", ""},
		{"a hyphen in the term must be one in the text", "a list, A-lists, a_list", "A-lists=fame/hyponym/A-list"},
		{"symbols of a term must be in the text", "C, C#, c++ and .net, a net, node.js", "c++=C++/term/C++ .net=.NET/term/.NET node.js=node/term/Node.js"},
		{"longer phrase over its term", "general elections", "general elections=elections/hyponym/general election"},
		{"non-ASCII around", "naïve «car» — élection", "car=car/term/car"},
		{"sorted by position", "elections, cars", "elections=elections/term/election cars=car/term/car"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(tt.text, m.Match(tt.text)); got != tt.want {
				t.Errorf("Match(%q)\n got %s\nwant %s", tt.text, got, tt.want)
			}
		})
	}
}

// TestMatchPOS checks that "ran" matches "run" only as a verb.
func TestMatchPOS(t *testing.T) {
	wn := fixture(t)
	noun := wn.Compile([]Expansion{hand("run", Term{Text: "run", Relation: RelTerm, Weight: 1, POS: Noun})})
	if got := show("ran, runs", noun.Match("ran, runs")); got != "runs=run/term/run" {
		t.Errorf("noun run: %s", got)
	}
	verb := wn.Compile([]Expansion{hand("run", Term{Text: "run", Relation: RelTerm, Weight: 1, POS: Verb})})
	if got := show("ran, running", verb.Match("ran, running")); got != "ran=run/term/run running=run/term/run" {
		t.Errorf("verb run: %s", got)
	}
}

// TestMatchProfile runs the whole way on the embedded WordNet: profile,
// expansion, compile, match.
func TestMatchProfile(t *testing.T) {
	m, err := New(profile("football", "car", "election", "geese", "semantic web"))
	if err != nil {
		t.Fatal(err)
	}
	text := "Soccer fans drove their automobiles to the polls: the general elections and two by-elections. A goose, three Geese; the Semantic Web."
	got := show(text, m.Match(text))
	want := "Soccer=football/hyponym/soccer automobiles=car/synonym/automobile general elections=election/hyponym/general election " +
		"by-elections=election/hyponym/by-election goose=geese/term/goose Geese=geese/term/geese Semantic Web=semantic web/term/semantic web"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, x := range m.Match(text) {
		if x.Weight <= 0 || x.Weight > 1 {
			t.Errorf("%+v: weight out of (0, 1]", x)
		}
	}
	if len(m.Expansions()) != 5 {
		t.Errorf("%d expansions", len(m.Expansions()))
	}
}

func TestMatchNil(t *testing.T) {
	var m *Matcher
	if got := m.Match("anything"); got != nil {
		t.Errorf("nil matcher matched %v", got)
	}
	if got := fixture(t).Compile(nil).Match("car"); got != nil {
		t.Errorf("empty matcher matched %v", got)
	}
}

// checkMatches checks the invariants of Match's result.
func checkMatches(t *testing.T, text string, ms []changedigest.Match) {
	t.Helper()
	// Rune boundaries as decoding steps them, so that a stray byte of
	// text that is not UTF-8 counts as a rune of its own.
	boundary := map[int]bool{len(text): true}
	for i := 0; i < len(text); {
		boundary[i] = true
		_, n := utf8.DecodeRuneInString(text[i:])
		i += n
	}
	prevEnd := 0
	for i, m := range ms {
		if m.Start < 0 || m.End > len(text) || m.Start >= m.End {
			t.Fatalf("match %d: span [%d,%d) outside text of %d bytes", i, m.Start, m.End, len(text))
		}
		if !boundary[m.Start] || !boundary[m.End] {
			t.Fatalf("match %d: span [%d,%d) not on rune boundaries", i, m.Start, m.End)
		}
		if m.Start < prevEnd {
			t.Fatalf("match %d at %d overlaps or precedes the previous one ending at %d", i, m.Start, prevEnd)
		}
		if m.Interest == "" || m.Term == "" || m.Relation == "" || m.Weight <= 0 {
			t.Fatalf("match %d: incomplete %+v", i, m)
		}
		prevEnd = m.End
	}
}

func FuzzMatch(f *testing.F) {
	m, err := New(profile("football", "car", "election", "geese", "semantic web", "run", "e-mail", "rock 'n' roll", "S.U.V.", "C++", ".NET"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"Soccer fans drove automobiles to the general elections.",
		"motor-vehicle's e-mails ran; GEESE, Semantic-Webs",
		"naïve «car» — élection \xff\xfe car's’s ’ '",
		"rock 'n' roll, rock-'n'-roll, S.U.V.s",
		"C++ .NET c++, x.net .net's c+",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkMatches(t, text, m.Match(text))
	})
}
