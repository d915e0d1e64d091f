package expand

import (
	"cmp"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	wordnetdata "github.com/changedigest/changedigest/wordnet-data"
)

// Relations of a Term to its interest (the values of changedigest.Match's
// Relation).
const (
	RelTerm     = "term"     // the interest itself, or its WordNet lemma
	RelKeyTerm  = "key term" // an interest drawn from a linked page
	RelSynonym  = "synonym"  // a word of the chosen sense, or a similar adjective
	RelHypernym = "hypernym" // a broader sense
	RelHyponym  = "hyponym"  // a narrower sense
)

// How an interest was found in WordNet (Expansion.Found).
const (
	FoundLemma = "lemma"          // as written
	FoundBase  = "base form"      // through a base form: "elections" as "election"
	FoundHead  = "head phrase"    // a multi-word term through its longest known ending
	FoundNone  = "not in WordNet" // kept as a literal phrase, not expanded
)

// What chose an interest's sense (Expansion.ChosenBy).
const (
	ChosenByUser    = "user"    // the user picked it (changedigest.Profile.Senses)
	ChosenByPage    = "page"    // the interest's own page (Interest.About, its URI)
	ChosenByProfile = "profile" // the other interests of the profile
	ChosenByPrior   = "prior"   // what people usually mean by the term as an interest
	ChosenByOnly    = "only"    // the term has one sense
)

// Option is one sense of an interest, as offered for choosing.
type Option struct {
	Sense
	Chosen bool `json:"chosen,omitempty"`
}

// MaxTermBytes bounds the length of an interest term.
const MaxTermBytes = 200

// Weights are the weights of the relations, multiplied by the interest's
// own weight. Synonyms, hypernyms and hyponyms are also multiplied by √p,
// p the share of the word's uses (all parts of speech) that are this sense
// (from the tag counts, add-one smoothed), so that an ambiguous word
// ("machine" for car, "hack" for taxi) weighs less than a word with only
// this meaning ("automobile"); and by √(n/m) when the word was tagged m
// times, more than the n times of the interest's lemma (add-one), so that
// a word far more common than the interest ("information" or "list" for
// database) does not match mostly text about something else.
type Weights struct {
	Term     float64 // the interest itself
	Synonym  float64
	Similar  float64 // adjectives similar to the interest
	Hypernym float64
	Hyponym  float64 // direct hyponyms
	Hyponym2 float64 // hyponyms of hyponyms
}

// DefaultWeights are the weights NewExpander sets.
var DefaultWeights = Weights{Term: 1, Synonym: 0.8, Similar: 0.7, Hypernym: 0.5, Hyponym: 0.6, Hyponym2: 0.45}

// Expander expands profiles through WordNet. Set its fields before use;
// it is then safe for concurrent use.
type Expander struct {
	WordNet *WordNet
	Weights Weights
	// MaxHyponyms caps the direct hyponym synsets taken per interest, and
	// MaxHyponyms2 those of the second level; the most used come first.
	MaxHyponyms, MaxHyponyms2 int
	// GeneralLimit: a hypernym with more hyponyms below it (all levels,
	// counted along every path) is too general to mean anything and is
	// left out, as are the synsets of TooGeneral. At the default 1,500,
	// "vehicle" (597) and "sport" (191) stay; "device" (2,868),
	// "activity" (3,504), "instrumentality" (6,144) and "person"
	// (12,332) go.
	GeneralLimit int
	// TooGeneral lists lemmas whose every sense is too general to be a
	// hypernym worth matching, whatever its size.
	TooGeneral []string
	// MinWeight drops expansion terms that weigh less. At the default
	// 0.15 a direct hyponym is kept if its word means that sense in 6% of
	// its uses or more ("primary" for election: 9%), a synonym at 3.5%,
	// a hypernym at 9%.
	MinWeight float64
	// Context is how much the rest of the profile counts against the
	// prior when a sense is chosen (0: the prior alone). A sense scores
	// log prior + Context·ln(1+overlap). The default, 1.0, chose best on
	// the profiles of testdata/interests.tsv with the interest prior;
	// with the frequency prior alone (Prior nil) 1.6–2.0 did, in two
	// dozen ambiguous profiles (cricket among sports, stock among soups,
	// bank beside river or loan, birds among many sports…).
	Context float64
	// Prior weighs senses by the kind of thing people list as interests
	// (see InterestPrior); nil takes the senses' frequencies alone.
	Prior *InterestPrior
	// PageContext is how much the interest's own page counts (the title
	// and opening text of the page its URI names, Interest.About, and the
	// words of the URI itself, such as the qualifier of
	// .../wiki/Java_(programming_language)): a sense scores
	// PageContext·ln(1+overlap) more, overlap the number of its
	// signature's features the page has. The page is about this very
	// interest, so it counts more than the rest of the profile.
	PageContext float64
}

// DefaultTooGeneral are the tops of WordNet's noun hierarchy (the unique
// beginners and the synsets just below them) and the most general verbs,
// whose words say nothing about an interest. GeneralLimit catches most of
// them by size; the list catches those that are small in some sense ("act"
// as a law) or in the shallow verb hierarchy.
var DefaultTooGeneral = []string{
	"entity", "physical entity", "abstraction", "abstract entity", "object", "physical object",
	"whole", "unit", "thing", "group", "grouping", "act", "deed", "human action", "human activity",
	"event", "psychological feature", "attribute", "relation", "communication", "measure",
	"quantity", "amount", "matter", "causal agent", "cause", "causal agency", "process",
	"physical process", "artifact", "artefact", "living thing", "animate thing", "organism",
	"being", "person", "individual", "someone", "somebody", "mortal", "soul", "activity",
	"state", "location", "cognition", "knowledge", "noesis", "content", "cognitive content",
	"mental object", "part", "portion", "component part", "component", "constituent",
	"instrumentality", "instrumentation", "collection", "aggregation", "accumulation",
	"assemblage", "social group", "substance", "happening", "occurrence", "occurrent",
	"natural event", "action", "change", "property", "condition", "status", "shape", "form",
	"be", "have", "do", "make", "get", "go", "move", "change state", "turn",
}

// NewExpander returns an Expander over wn with the default knobs.
func NewExpander(wn *WordNet) *Expander {
	prior := DefaultInterestPrior
	return &Expander{
		WordNet:      wn,
		Weights:      DefaultWeights,
		MaxHyponyms:  40,
		MaxHyponyms2: 20,
		GeneralLimit: 1500,
		TooGeneral:   DefaultTooGeneral,
		MinWeight:    0.15,
		Context:      1.0,
		Prior:        &prior,
		PageContext:  2.5,
	}
}

// Term is one word or phrase to look for on behalf of an interest.
type Term struct {
	// Text is the term as WordNet spells it ("American football"), or as
	// the profile does for the interest itself.
	Text     string  `json:"text"`
	Relation string  `json:"relation"`
	Weight   float64 `json:"weight"`
	// POS is the part of speech whose inflections match; 0 for a literal
	// phrase, which inflects as a noun phrase.
	POS POS `json:"pos,omitempty"`
	// Synset is the ID of the synset the term was taken from.
	Synset string `json:"synset,omitempty"`
	// Level is 1 or 2 for hypernyms and hyponyms: how many steps away.
	Level int `json:"level,omitempty"`
}

// Expansion is an interest with the terms it was widened to.
type Expansion struct {
	Interest changedigest.Interest `json:"interest"`
	// Found says how the interest was found in WordNet (a Found…
	// constant); Lemma is the lemma it was found as.
	Found string `json:"found"`
	Lemma string `json:"lemma,omitempty"`
	// Sense is the chosen sense, nil when not in WordNet; Senses is how
	// many senses were considered.
	Sense  *Sense `json:"sense,omitempty"`
	Senses int    `json:"senses"`
	// ChosenBy says what chose Sense (a Chosen… constant) and Reason
	// says it for people: "sense chosen from the linked page 'Jazz –
	// Wikipedia'".
	ChosenBy string `json:"chosen_by,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Options are all the senses considered, in WordNet's order by part
	// of speech, the chosen one marked: the meanings a user may pick
	// instead (changedigest.Profile.Senses).
	Options []Option `json:"options,omitempty"`
	// Terms come first the interest itself, then by falling weight.
	Terms []Term `json:"terms"`
}

// Expand expands each interest of p, choosing each one's sense with the
// other interests as context. Interests whose term the profile excludes
// are left out, and so are expansion terms it excludes. A term that is
// empty, longer than MaxTermBytes or not UTF-8, or a weight that is
// negative or not a number, gives an EINVALID *changedigest.Error naming
// the interest.
func (e *Expander) Expand(p changedigest.Profile) ([]Expansion, error) {
	excluded := map[string]bool{}
	for _, x := range p.Excluded {
		excluded[normalize(x)] = true
	}
	var items []*item
	for i, in := range p.Interests {
		if err := checkInterest(i, in); err != nil {
			return nil, err
		}
		if excluded[normalize(in.Term)] {
			continue
		}
		items = append(items, &item{in: in})
	}
	st := e.newState()
	for _, it := range items {
		st.lookup(it)
		st.pageFeatures(it)
		it.user = -1
		if id := p.ChosenSense(it.in.Term); id != "" {
			for k, c := range it.cands {
				if st.t.ID(c.synset) == id {
					it.user = k
				}
			}
		}
	}
	st.choose(items)
	out := make([]Expansion, len(items))
	for i, it := range items {
		out[i] = st.expand(it, excluded)
	}
	return out, nil
}

// ExpandTerms expands terms given as manual interests of weight 1, each
// the others' context.
func (e *Expander) ExpandTerms(terms ...string) ([]Expansion, error) {
	p := changedigest.Profile{}
	for _, t := range terms {
		p.Interests = append(p.Interests, changedigest.Interest{Term: t, Source: changedigest.SourceManual, Weight: 1})
	}
	return e.Expand(p)
}

func checkInterest(i int, in changedigest.Interest) error {
	switch {
	case !utf8.ValidString(in.Term):
		return changedigest.Errorf(changedigest.EINVALID, "expand: interest %d: term is not valid UTF-8", i+1)
	case strings.TrimSpace(in.Term) == "":
		return changedigest.Errorf(changedigest.EINVALID, "expand: interest %d: empty term", i+1)
	case len(in.Term) > MaxTermBytes:
		return changedigest.Errorf(changedigest.EINVALID, "expand: interest %d: term longer than %d bytes", i+1, MaxTermBytes)
	case in.Weight < 0 || math.IsNaN(in.Weight) || math.IsInf(in.Weight, 0):
		return changedigest.Errorf(changedigest.EINVALID, "expand: interest %q: weight %v is not a number ≥ 0", in.Term, in.Weight)
	}
	return nil
}

// item is an interest being expanded.
type item struct {
	in    changedigest.Interest
	found string
	lemma string
	cands []cand
	lit   []int32 // features of the term's own words
	page  []int32 // features of the interest's page and URI
	best  int     // index into cands, -1 for none
	// user is the index of the sense the user chose, -1 for none.
	user int
	// narrower lists, per candidate, the other candidates below it
	// (hyponyms up to three levels down, or in its topic domain).
	narrower [][]int
	// prior is the index of the best sense by prior alone; helpers
	// names the items whose words most supported the chosen sense.
	prior   int
	helpers []string
}

// cand is a candidate sense of an item.
type cand struct {
	lemma  string
	synset int
	number int
	tags   int
	prior  float64 // log prior
	kind   float64 // the prior's kind weight
	post   float64 // posterior probability, from the last round
	score  float64
	ctx    float64 // what the other items added to score
	pg     float64 // what the item's page added to score
	sig    []int32
}

// state holds what one Expand call computes.
type state struct {
	e     *Expander
	wn    *WordNet
	t     *wordnetdata.Table
	feat  map[string]int32
	stems map[string]string
	sigs  map[int][]int32
	too   map[int]bool
	prior *priorState
	kinds map[int]float64 // kind weight of each synset asked
	above map[int]float64 // heaviest kind at or above each synset
}

func (e *Expander) newState() *state {
	return &state{e: e, wn: e.WordNet, t: e.WordNet.t, feat: map[string]int32{}, stems: map[string]string{}, sigs: map[int][]int32{}, too: map[int]bool{},
		prior: e.priorState(), kinds: map[int]float64{}, above: map[int]float64{}}
}

// posWeight is the prior weight of a part of speech: interests are mostly
// nouns.
var posWeight = map[POS]float64{Noun: 1, Verb: 0.5, Adjective: 0.5, Adverb: 0.25}

// lookup finds an item's lemma and candidate senses.
func (st *state) lookup(it *item) {
	it.best = -1
	term := normalize(it.in.Term)
	it.lit = st.words(term, nil)
	type found struct {
		lemma string
		pos   POS
	}
	var lemmas []found
	for _, p := range wordnetPOS {
		for _, b := range st.wn.BaseForms(term, p) {
			lemmas = append(lemmas, found{b, p})
		}
	}
	it.found = FoundNone
	if len(lemmas) == 0 && strings.Contains(term, " ") {
		// The longest ending of two words or more that WordNet knows.
		words := strings.Fields(term)
		for k := 1; k+2 <= len(words) && len(lemmas) == 0; k++ {
			tail := strings.Join(words[k:], " ")
			for _, b := range st.wn.BaseForms(tail, Noun) {
				lemmas = append(lemmas, found{b, Noun})
			}
		}
		if len(lemmas) > 0 {
			it.found = FoundHead
		}
	} else if len(lemmas) > 0 {
		it.found = FoundBase
		for _, l := range lemmas {
			if l.lemma == term {
				it.found = FoundLemma
			}
		}
	}
	if len(lemmas) == 0 {
		return
	}
	// Prefer the lemma as written: base forms only where it is none.
	it.lemma = lemmas[0].lemma
	for _, l := range lemmas {
		if l.lemma == term {
			it.lemma = term
		}
	}
	total := 0.0
	seen := map[int]bool{}
	for _, l := range lemmas {
		li, _ := st.t.LookupLemma(l.lemma)
		for _, s := range st.t.Senses(nil, li, l.pos) {
			if seen[s.Synset] {
				continue
			}
			seen[s.Synset] = true
			// Add-one smoothed tag counts; among untagged senses,
			// WordNet's order breaks ties.
			kind := st.kindWeight(s.Synset)
			w := posWeight[l.pos] * st.tagPower(float64(s.TagCount)+1/(1+0.1*float64(s.Number-1))) * kind
			if l.lemma != it.lemma {
				w *= 0.5
			}
			it.cands = append(it.cands, cand{lemma: l.lemma, synset: s.Synset, number: s.Number, tags: s.TagCount, prior: w, kind: kind})
			total += w
		}
	}
	for i := range it.cands {
		c := &it.cands[i]
		c.post = c.prior / total
		c.prior = math.Log(c.post)
		c.sig = st.signature(c.synset)
	}
	it.narrower = make([][]int, len(it.cands))
	for k, c := range it.cands {
		for j, d := range it.cands {
			if j != k && st.below(d.synset, c.synset, 3) {
				it.narrower[k] = append(it.narrower[k], j)
			}
		}
	}
}

// below reports whether synset a lies under b through at most depth
// hypernym (or instance hypernym) links, or belongs to its topic domain
// (jazz the 1920s dance music is in the domain of jazz the genre).
func (st *state) below(a, b, depth int) bool {
	if depth == 0 {
		return false
	}
	for _, p := range st.t.Pointers(nil, a, 0) {
		if p.Rel != wordnetdata.Hypernym && p.Rel != wordnetdata.InstanceHypernym && p.Rel != wordnetdata.DomainTopic {
			continue
		}
		if p.Target == b || st.below(p.Target, b, depth-1) {
			return true
		}
	}
	return false
}

// choose picks each item's sense: the most probable one a priori, moved by
// how much its signature overlaps the other items' (two rounds, the second
// with the first round's choices sharpened).
func (st *state) choose(items []*item) {
	weight := func(it *item) float64 {
		if it.in.Weight == 0 {
			return 1
		}
		return it.in.Weight
	}
	for round := 0; round < 2; round++ {
		// A feature counts up to 1 per item for its senses (weighted by
		// how likely each is) and litWeight more if it is one of the
		// item's own words: a sense whose gloss names another interest
		// outright is good evidence.
		total := map[int32]float64{}
		own := make([]map[int32]float64, len(items))
		for i, it := range items {
			own[i] = map[int32]float64{}
			for _, c := range it.cands {
				for _, f := range c.sig {
					own[i][f] += c.post
				}
			}
			for f, v := range own[i] {
				own[i][f] = min(v, 1)
			}
			for _, f := range it.lit {
				own[i][f] = 1 + litWeight
			}
			for f, v := range own[i] {
				total[f] += weight(it) * v
			}
		}
		for i, it := range items {
			for k := range it.cands {
				c := &it.cands[k]
				overlap := 0.0
				for _, f := range c.sig {
					ctx := total[f] - weight(it)*own[i][f]
					overlap += min(ctx, 1+litWeight)
				}
				// Diminishing returns: many interests of one kind
				// (a dozen sports) should not drown a strong prior
				// (birds are animals before they are shuttlecocks).
				c.ctx = st.e.Context * math.Log1p(overlap)
				c.pg = st.e.PageContext * math.Log1p(float64(overlapCount(c.sig, it.page)))
			}
			// What supports a narrower sense supports the broader one
			// it is a kind of (jazz the 1920s dance music is a kind
			// of jazz the genre): "music" beside jazz must not pick
			// the narrow sense over the genre.
			for k := range it.cands {
				for _, d := range it.narrower[k] {
					it.cands[k].ctx = max(it.cands[k].ctx, it.cands[d].ctx)
					it.cands[k].pg = max(it.cands[k].pg, it.cands[d].pg)
				}
			}
			for k := range it.cands {
				c := &it.cands[k]
				c.score = c.prior + c.ctx + c.pg
			}
			// Posterior for the next round.
			hi := math.Inf(-1)
			for _, c := range it.cands {
				hi = max(hi, c.score)
			}
			sum := 0.0
			for k := range it.cands {
				it.cands[k].post = math.Exp(it.cands[k].score - hi)
				sum += it.cands[k].post
			}
			it.best = -1
			for k := range it.cands {
				it.cands[k].post /= sum
				if it.best < 0 || it.cands[k].score > it.cands[it.best].score {
					it.best = k
				}
			}
			if it.user >= 0 {
				// The user's choice is certain: it is the context
				// the other items see in the next round.
				it.best = it.user
				for k := range it.cands {
					it.cands[k].post = 0
				}
				it.cands[it.user].post = 1
			}
		}
	}
	for i, it := range items {
		it.prior = -1
		for k, c := range it.cands {
			if it.prior < 0 || c.prior > it.cands[it.prior].prior {
				it.prior = k
			}
		}
		if it.best >= 0 {
			it.helpers = st.helpers(items, i)
		}
	}
}

// helpers names up to three other items whose words or senses share the
// most features with item i's chosen sense.
func (st *state) helpers(items []*item, i int) []string {
	sig := items[i].cands[items[i].best].sig
	type help struct {
		term string
		n    int
	}
	var hs []help
	for j, o := range items {
		if j == i {
			continue
		}
		fs := slices.Clone(o.lit)
		if o.best >= 0 {
			fs = append(fs, o.cands[o.best].sig...)
		}
		slices.Sort(fs)
		if n := overlapCount(sig, slices.Compact(fs)); n > 0 {
			hs = append(hs, help{o.in.Term, n})
		}
	}
	slices.SortStableFunc(hs, func(a, b help) int { return cmp.Compare(b.n, a.n) })
	var out []string
	for _, h := range hs {
		if len(out) == 3 {
			break
		}
		out = append(out, h.term)
	}
	return out
}

// overlapCount counts the features two sorted sets share.
func overlapCount(a, b []int32) int {
	n := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}

// pageFeatures reads the features of an item's own page: the title and
// text of Interest.About and the words of its URI's last path segment and
// fragment ("Java_(programming_language)"), less the term's own words.
func (st *state) pageFeatures(it *item) {
	var text []string
	if a := it.in.About; a != nil {
		text = append(text, a.Title, a.Text)
	}
	if u := it.in.URI; u != "" {
		text = append(text, uriWords(u))
	}
	if len(text) == 0 {
		return
	}
	fs := st.words(strings.Join(text, " \n "), nil)
	slices.Sort(fs)
	fs = slices.Compact(fs)
	own := slices.Clone(it.lit)
	slices.Sort(own)
	it.page = slices.DeleteFunc(fs, func(f int32) bool {
		_, found := slices.BinarySearch(own, f)
		return found
	})
}

// uriWords returns the last path segment and the fragment of an IRI,
// percent-decoded, with separators as spaces.
func uriWords(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
		if j := strings.IndexByte(u, '/'); j >= 0 {
			u = u[j:]
		} else {
			return ""
		}
	}
	frag := ""
	if i := strings.IndexByte(u, '#'); i >= 0 {
		u, frag = u[:i], u[i+1:]
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	u = strings.TrimRight(u, "/")
	if i := strings.LastIndexByte(u, '/'); i >= 0 {
		u = u[i+1:]
	}
	s := u + " " + frag
	if d, err := url.PathUnescape(s); err == nil {
		s = d
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '(' || r == ')' || r == '+' || r == '.' {
			return ' '
		}
		return r
	}, s)
}

// litWeight is the extra weight of an interest's own words as context.
const litWeight = 1

// stopwords are left out of signatures: function words and the words
// glosses use for everything.
var stopwords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also an and any are as at be
		because been before being below between both but by can could did do does doing down during each
		especially etc every few for from further had has have having he her here hers him his how i if in
		into is it its itself just least less like made make makes many may more most much must my no nor
		not of off often on once one ones only or other others our out over own per same she should so
		some something someone somebody such than that the their theirs them then there these they this
		those through to too two under until up upon used uses using usually very was we were what when
		where which while who whom whose why will with within without would you your kind kinds form
		forms type types sort part parts various several way ways thing things person people relating
		related pertaining characterized having usually typically`) {
		m[w] = true
	}
	return m
})

// stem returns the base a signature uses for a gloss word.
func (st *state) stem(w string) string {
	if s, ok := st.stems[w]; ok {
		return s
	}
	s := w
	for _, p := range []POS{Noun, Verb, Adjective} {
		if b := st.wn.BaseForms(w, p); len(b) > 0 {
			s = b[0]
			break
		}
	}
	st.stems[w] = s
	return s
}

// words appends the features of the content words of text to dst.
func (st *state) words(text string, dst []int32) []int32 {
	start := -1
	for i := 0; i <= len(text); i++ {
		letter := i < len(text) && ('a' <= text[i]|0x20 && text[i]|0x20 <= 'z')
		if letter && start < 0 {
			start = i
		}
		if !letter && start >= 0 {
			w := strings.ToLower(text[start:i])
			start = -1
			if len(w) < 3 || stopwords()[w] {
				continue
			}
			dst = append(dst, st.intern(st.stem(w)))
		}
	}
	return dst
}

func (st *state) intern(f string) int32 {
	if id, ok := st.feat[f]; ok {
		return id
	}
	id := int32(len(st.feat))
	st.feat[f] = id
	return id
}

// Caps on what a signature takes from long pointer lists, and the size
// above which an ancestor is too general to be a feature of it.
const (
	sigHyponyms = 20
	sigMembers  = 30
	sigGeneral  = 5000
)

// signature is the set of features a synset is known by: the content words
// of its own words and gloss, of its hypernyms' words and glosses, of some
// hyponyms, topic domain members and derived words, and its ancestors (up
// to three levels, as concepts rather than words) unless too general.
func (st *state) signature(s int) []int32 {
	if sig, ok := st.sigs[s]; ok {
		return sig
	}
	var sig []int32
	synWords := func(t int) {
		for w := range st.t.NumWords(t) {
			sig = st.words(st.t.Lemma(st.t.WordLemma(t, w)), sig)
		}
	}
	synWords(s)
	sig = st.words(st.t.Gloss(s), sig)
	var ptrs []wordnetdata.PointerRef
	level := []int{s}
	for depth := 1; depth <= 3; depth++ {
		var next []int
		for _, x := range level {
			for _, p := range st.t.Pointers(ptrs[:0], x, 0) {
				if p.Rel != wordnetdata.Hypernym && p.Rel != wordnetdata.InstanceHypernym {
					continue
				}
				next = append(next, p.Target)
				if st.wn.hyponymCount(p.Target) > sigGeneral {
					continue
				}
				sig = append(sig, st.intern("#"+st.t.ID(p.Target)))
				if depth == 1 {
					synWords(p.Target)
					sig = st.words(st.t.Gloss(p.Target), sig)
				}
			}
		}
		level = next
	}
	hypos, members := 0, 0
	for _, p := range st.t.Pointers(ptrs[:0], s, 0) {
		switch p.Rel {
		case wordnetdata.Hyponym, wordnetdata.InstanceHyponym:
			if hypos++; hypos <= sigHyponyms {
				synWords(p.Target)
			}
		case wordnetdata.DomainTopic:
			sig = append(sig, st.intern("#"+st.t.ID(p.Target)))
			synWords(p.Target)
		case wordnetdata.DomainTopicMember:
			if members++; members <= sigMembers {
				synWords(p.Target)
			}
		case wordnetdata.Derivation, wordnetdata.SimilarTo:
			synWords(p.Target)
		}
	}
	slices.Sort(sig)
	sig = slices.Compact(sig)
	st.sigs[s] = sig
	return sig
}

// expand collects an item's terms.
func (st *state) expand(it *item, excluded map[string]bool) Expansion {
	e := st.e
	x := Expansion{Interest: it.in, Found: it.found, Lemma: it.lemma, Senses: len(it.cands)}
	iw := it.in.Weight
	if iw == 0 {
		iw = 1
	}
	rel := RelTerm
	if it.in.Source == changedigest.SourcePage {
		rel = RelKeyTerm
	}
	text := strings.Join(strings.Fields(it.in.Term), " ")
	if it.best < 0 {
		x.Terms = []Term{{Text: text, Relation: rel, Weight: e.Weights.Term * iw}}
		return x
	}
	c := it.cands[it.best]
	pos := st.t.POS(c.synset)
	sense := Sense{Synset: st.wn.synset(c.synset), Lemma: c.lemma, Number: c.number, TagCount: c.tags}
	x.Sense = &sense
	id := st.t.ID(c.synset)
	x.ChosenBy, x.Reason = st.reason(it)
	for k, o := range it.cands {
		opt := Option{Sense: sense, Chosen: k == it.best}
		if k != it.best {
			opt.Sense = Sense{Synset: st.wn.synset(o.synset), Lemma: o.lemma, Number: o.number, TagCount: o.tags}
		}
		x.Options = append(x.Options, opt)
	}

	terms := map[string]*Term{}
	var order []string
	add := func(t Term) {
		k := normalize(t.Text)
		if k == "" || (t.Relation != rel && (excluded[k] || !meaningful(k))) {
			return
		}
		if old, ok := terms[k]; ok {
			if t.Weight > old.Weight {
				*old = t
			}
			return
		}
		terms[k] = &t
		order = append(order, k)
	}
	li, _ := st.t.LookupLemma(c.lemma)
	own := st.tagTotal(li)
	words := func(s int, relation string, w float64, level int) {
		for k := range st.t.NumWords(s) {
			word, wl := st.t.Word(s, k), st.t.WordLemma(s, k)
			// A word far more common than the interest's own lemma
			// ("information" for database, "list" for database) would
			// match mostly text about something else.
			common := min(1, math.Sqrt(float64(own+1)/float64(st.tagTotal(wl)+1)))
			add(Term{Text: word, Relation: relation, Weight: w * iw * st.share(wl, s) * common, POS: st.t.POS(s), Synset: st.t.ID(s), Level: level})
		}
	}
	if it.found == FoundHead {
		// "online stock exchange" is a kind of "stock exchange": the
		// words of that sense are broader terms, and its hyponyms are
		// siblings, not narrower terms.
		add(Term{Text: text, Relation: rel, Weight: e.Weights.Term * iw})
		words(c.synset, RelHypernym, e.Weights.Hypernym, 1)
		return st.finish(x, terms, order)
	}
	x.Lemma = c.lemma
	if c.lemma == normalize(text) {
		x.Found = FoundLemma
	} else {
		x.Found = FoundBase
	}
	add(Term{Text: text, Relation: rel, Weight: e.Weights.Term * iw, POS: pos})
	add(Term{Text: c.lemma, Relation: rel, Weight: e.Weights.Term * iw, POS: pos, Synset: id})
	words(c.synset, RelSynonym, e.Weights.Synonym, 0)
	var ptrs []wordnetdata.PointerRef
	var hypo []int
	for _, p := range st.t.Pointers(ptrs[:0], c.synset, 0) {
		switch p.Rel {
		case wordnetdata.SimilarTo:
			words(p.Target, RelSynonym, e.Weights.Similar, 0)
		case wordnetdata.Hypernym, wordnetdata.InstanceHypernym:
			if !st.tooGeneral(p.Target) {
				words(p.Target, RelHypernym, e.Weights.Hypernym, 1)
			}
		case wordnetdata.Hyponym, wordnetdata.InstanceHyponym:
			hypo = append(hypo, p.Target)
		}
	}
	hypo = st.mostUsed(hypo, e.MaxHyponyms)
	var hypo2 []int
	for _, h := range hypo {
		words(h, RelHyponym, e.Weights.Hyponym, 1)
		for _, p := range st.t.Pointers(ptrs[:0], h, 0) {
			if p.Rel == wordnetdata.Hyponym || p.Rel == wordnetdata.InstanceHyponym {
				hypo2 = append(hypo2, p.Target)
			}
		}
	}
	for _, h := range st.mostUsed(hypo2, e.MaxHyponyms2) {
		words(h, RelHyponym, e.Weights.Hyponym2, 2)
	}

	return st.finish(x, terms, order)
}

// finish rounds the weights, drops light terms and sorts the rest by
// weight after the interest itself.
func (st *state) finish(x Expansion, terms map[string]*Term, order []string) Expansion {
	for i, k := range order {
		t := terms[k]
		t.Weight = math.Round(t.Weight*1000) / 1000
		if i > 0 && t.Weight < st.e.MinWeight {
			continue
		}
		x.Terms = append(x.Terms, *t)
	}
	slices.SortStableFunc(x.Terms[1:], func(a, b Term) int { return cmp.Compare(b.Weight, a.Weight) })
	return x
}

// share is √p, p the share of lemma's tagged uses, in all parts of speech,
// that are synset s (add-one smoothed): how likely the word, met in text,
// means this sense. The noun "electric" (an electric car) is rare beside
// the adjective, so it weighs little.
func (st *state) share(lemma, s int) float64 {
	senses := st.t.Senses(nil, lemma, 0)
	total, mine := 0.0, 0.0
	for _, x := range senses {
		total += float64(x.TagCount + 1)
		if x.Synset == s {
			mine = float64(x.TagCount + 1)
		}
	}
	if total == 0 {
		return 1
	}
	return math.Sqrt(mine / total)
}

// tagTotal is how often a lemma was tagged, all senses.
func (st *state) tagTotal(lemma int) int {
	n := 0
	for _, x := range st.t.Senses(nil, lemma, 0) {
		n += x.TagCount
	}
	return n
}

// mostUsed returns at most n of the synsets, the most tagged first, in
// table order at a tie, without repeats.
func (st *state) mostUsed(ss []int, n int) []int {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	ss = slices.Compact(ss)
	used := make(map[int]int, len(ss))
	var senses []wordnetdata.SenseRef
	for _, s := range ss {
		for w := range st.t.NumWords(s) {
			senses = st.t.Senses(senses[:0], st.t.WordLemma(s, w), st.t.POS(s))
			for _, x := range senses {
				if x.Synset == s {
					used[s] += x.TagCount
				}
			}
		}
	}
	slices.SortStableFunc(ss, func(a, b int) int { return cmp.Compare(used[b], used[a]) })
	if len(ss) > n {
		ss = ss[:n]
	}
	return ss
}

// tooGeneral reports whether a hypernym is too general to match: one of
// TooGeneral's words, or more than GeneralLimit hyponyms below it.
func (st *state) tooGeneral(s int) bool {
	if v, ok := st.too[s]; ok {
		return v
	}
	v := st.wn.hyponymCount(s) > st.e.GeneralLimit
	for w := range st.t.NumWords(s) {
		if slices.Contains(st.e.TooGeneral, st.t.Lemma(st.t.WordLemma(s, w))) {
			v = true
		}
	}
	st.too[s] = v
	return v
}

// meaningful reports whether an expansion term is worth matching: three
// letters at least and not a stop word, so that vitamin A's "A" does not
// match every article.
func meaningful(k string) bool {
	letters := 0
	for _, r := range k {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return letters >= 3 && !stopwords()[k]
}

// reason says what chose an item's sense, as a ChosenBy… constant and a
// sentence: the user; else the item's own page, when it supports the
// chosen sense more than any other; else the other interests, when they
// moved the choice off the prior's; else the prior.
func (st *state) reason(it *item) (by, why string) {
	c := it.cands[it.best]
	first := func(f func(cand) float64) bool { // the chosen sense leads on f
		for k, o := range it.cands {
			if k != it.best && f(o) >= f(c) {
				return false
			}
		}
		return true
	}
	switch {
	case it.user >= 0:
		return ChosenByUser, "sense chosen by you"
	case len(it.cands) == 1:
		return ChosenByOnly, "the only sense WordNet has for " + c.lemma
	case c.pg > 0 && first(func(o cand) float64 { return o.pg }):
		page := ""
		if a := it.in.About; a != nil {
			page = a.Title
			if page == "" {
				page = a.URL
			}
		}
		if page == "" {
			page = it.in.URI
		}
		return ChosenByPage, "sense chosen from the linked page '" + page + "'"
	case it.best != it.prior:
		if len(it.helpers) == 0 {
			return ChosenByProfile, "sense chosen from your other interests"
		}
		return ChosenByProfile, "sense chosen from your other interests (" + strings.Join(it.helpers, ", ") + ")"
	}
	if st.prior != nil && c.kind >= 0.5 {
		return ChosenByPrior, "the sense people usually mean by " + c.lemma + " as an interest"
	}
	return ChosenByPrior, "the most common sense of " + c.lemma
}
