package expand

import (
	"math"
	"strings"

	wordnetdata "github.com/changedigest/changedigest/wordnet-data"
)

// InterestPrior weighs the senses of an interest by the kind of thing
// each one is. WordNet's sense order and tag counts say how often a word
// means each thing in running text, which is not what a person means by
// it in a list of interests: rock is a stone in text and rock music in a
// profile, chess a weedy grass first and a board game second, jazz empty
// rhetoric first. People list activities, sports, games, arts, fields of
// study, foods and drinks; the same words also name plants, insects,
// objects and actions, which they mean far less often.
//
// A sense's prior is its frequency (tag count, add-one smoothed, WordNet's
// order breaking ties among untagged senses) raised to TagExponent, times
// the weight of its kind: the heaviest of Kinds that is the sense itself
// or one of its hypernyms (any number of levels, instance hypernyms
// included) or, for a noun, whose head word its definition begins with
// ("the art or sport of fighting with swords" is a sport, though WordNet
// files fencing under fights), else the weight of its lexicographer file in Lexfiles,
// else Other. Kinds and files not in the loaded WordNet are ignored.
type InterestPrior struct {
	// Kinds are synsets (WordNet 3.0 IDs) whose hyponyms are things people
	// list as interests, with a weight each.
	Kinds map[string]float64
	// Lexfiles weigh the senses under no kind by lexicographer file.
	Lexfiles map[string]float64
	// Other is the weight of the senses under no kind whose file
	// Lexfiles does not list.
	Other float64
	// TagExponent damps the tag counts (0 < TagExponent ≤ 1): at 1 a
	// word's commonest sense in running text keeps its full lead, at 0.5
	// a sense tagged 16 times weighs four times one never tagged.
	TagExponent float64
}

// DefaultInterestPrior is the prior NewExpander sets. Its kinds are the
// broad classes of interests (sport, game, recreation, hobby, art, music,
// dance, literature, drama, film, field of study, language, travel,
// crafts, cooking) at full weight and food and drink at half, above any
// sense not under them; of the others, activities, fields, works and
// foods (noun.act, noun.cognition, noun.communication, noun.food) weigh
// more than animals, plants, objects and places, which weigh more than
// people, states and attributes, and verbs and adjectives weigh least: an
// interest is rarely a verb. The weights were set on half of the
// evaluation list in testdata/interests.tsv and checked on the other half.
var DefaultInterestPrior = InterestPrior{
	Kinds: map[string]float64{
		// activities
		"n00523513": 1,   // sport, athletics
		"n00455599": 1,   // game: a contest with rules
		"n00430606": 1,   // game: an amusement or pastime
		"n00426928": 1,   // diversion, recreation
		"n00432689": 1,   // avocation, hobby
		"n00431552": 1,   // pastime, interest, pursuit
		"n00933420": 1,   // art, artistic creation
		"n00428270": 1,   // dancing
		"n00295701": 1,   // travel
		"n00714944": 1,   // handicraft
		"n00243918": 1,   // cooking
		"n07456188": 0.5, // contest: races, tournaments
		"n00900375": 1,   // pictorial representation: painting, photography, film
		"n00908492": 0.5, // creation, creative activity: crafts, writing, programming
		// arts and works
		"n02743547": 1, // art, fine art
		"n07020895": 1, // music
		"n07071942": 1, // music genre
		"n07020538": 1, // dance
		"n06364641": 1, // literature
		"n06365102": 1, // literature: writings in a style
		"n06364329": 1, // literary composition: fiction, poetry, drama
		"n06157326": 1, // performing arts
		"n07006119": 1, // dramaturgy, theatre
		"n06613686": 1, // movie, film
		"n06262567": 1, // film, cinema
		"n08246613": 1, // musical organization: orchestra, choir, band
		// fields of study and languages
		"n05996646": 1, // discipline, field of study
		"n06153846": 1, // humanities
		"n05999797": 1, // science
		"n06898352": 1, // programming language
		"n06904171": 1, // natural language
		// food and drink
		"n00021265": 0.5, // food, nutrient
		"n07555863": 0.5, // food, solid food
		"n07881800": 0.5, // beverage
		"n07557434": 0.5, // dish
		"n07571324": 0.5, // cuisine
	},
	Lexfiles: map[string]float64{
		"noun.animal": 0.3, "noun.food": 0.3, "noun.cognition": 0.25, "noun.communication": 0.25,
		"noun.plant": 0.25, "noun.act": 0.2, "noun.artifact": 0.2, "noun.object": 0.2,
		"noun.location": 0.2, "noun.group": 0.1, "noun.substance": 0.1, "noun.event": 0.1,
		"noun.process": 0.1, "noun.phenomenon": 0.1, "noun.possession": 0.2, "noun.Tops": 0.2,
	},
	Other:       0.05,
	TagExponent: 0.5,
}

// verbWeight is the kind weight of verbs, adjectives and adverbs, which
// no kind and no noun file covers.
const verbWeight = 0.02

// priorState resolves an InterestPrior against a WordNet.
type priorState struct {
	kinds map[int]float64 // synset → weight
	heads map[string]float64
	files map[uint8]float64
}

func (e *Expander) priorState() *priorState {
	p := e.Prior
	if p == nil {
		return nil
	}
	ps := &priorState{kinds: map[int]float64{}, heads: map[string]float64{}, files: map[uint8]float64{}}
	for id, w := range p.Kinds {
		if i, ok := e.WordNet.t.FindID(id); ok {
			ps.kinds[i] = w
			if e.WordNet.t.NumWords(i) > 0 {
				h := e.WordNet.t.Lemma(e.WordNet.t.WordLemma(i, 0))
				ps.heads[h] = max(ps.heads[h], w)
			}
		}
	}
	for i := range 64 {
		if w, ok := p.Lexfiles[wordnetdata.LexName(uint8(i))]; ok {
			ps.files[uint8(i)] = w
		}
	}
	return ps
}

// kindWeight is the weight of synset s's kind.
func (st *state) kindWeight(s int) float64 {
	ps := st.prior
	if ps == nil {
		return 1
	}
	if w, ok := st.kinds[s]; ok {
		return w
	}
	best := st.kindAbove(s, 0)
	if best == 0 && st.t.POS(s) == Noun {
		for _, g := range genus(st.t.Gloss(s)) {
			best = max(best, ps.heads[g])
		}
	}
	if best == 0 {
		if st.t.POS(s) != Noun {
			best = verbWeight
		} else if w, ok := ps.files[st.t.LexFile(s)]; ok {
			best = w
		} else {
			best = st.e.Prior.Other
		}
	}
	st.kinds[s] = best
	return best
}

// tagPower raises a sense frequency to the prior's exponent.
func (st *state) tagPower(f float64) float64 {
	if st.prior == nil || st.e.Prior.TagExponent <= 0 || st.e.Prior.TagExponent == 1 {
		return f
	}
	return math.Pow(f, st.e.Prior.TagExponent)
}

// genus returns the words and two-word phrases of the genus of a
// definition, the words before what sets the thing apart: "the art or
// sport of fighting with swords" gives art, or, sport (and the pairs); "a
// board game for two players" board, game, board game. A leading topic
// in parentheses ("(music) low loudness") is skipped.
func genus(gloss string) []string {
	g := strings.TrimSpace(gloss)
	if strings.HasPrefix(g, "(") {
		if i := strings.IndexByte(g, ')'); i > 0 {
			g = g[i+1:]
		}
	}
	if i := strings.IndexAny(g, ";:,()"); i >= 0 {
		g = g[:i]
	}
	var words []string
	for _, w := range strings.Fields(strings.ToLower(g)) {
		if genusEnd[w] {
			break
		}
		if w == "a" || w == "an" || w == "the" || w == "any" {
			continue
		}
		words = append(words, w)
	}
	out := words
	for i := 0; i+1 < len(words); i++ {
		out = append(out, words[i]+" "+words[i+1])
	}
	return out
}

// genusEnd are the words that end a definition's genus.
var genusEnd = map[string]bool{
	"of": true, "for": true, "in": true, "on": true, "that": true, "which": true, "who": true,
	"with": true, "by": true, "to": true, "from": true, "as": true, "at": true, "where": true,
	"when": true, "played": true, "used": true, "made": true, "consisting": true, "resembling": true,
	"having": true, "usually": true, "especially": true, "typically": true, "between": true,
}

// kindAbove is the heaviest kind that is synset s or one of its
// hypernyms, 0 for none; memoised per state.
func (st *state) kindAbove(s, depth int) float64 {
	if w, ok := st.above[s]; ok {
		return w
	}
	if depth > 20 { // no WordNet hierarchy is this deep; a cycle
		return 0
	}
	st.above[s] = 0 // a cycle reads 0
	w := st.prior.kinds[s]
	for _, p := range st.t.Pointers(nil, s, 0) {
		if p.Rel == wordnetdata.Hypernym || p.Rel == wordnetdata.InstanceHypernym {
			w = max(w, st.kindAbove(p.Target, depth+1))
		}
	}
	st.above[s] = w
	return w
}
