// Package expand widens a profile's interests through WordNet and finds
// them in text: CaSePer's Term Expander and Term Highlighter (seed 003,
// eq. 13–16).
//
// For each interest it finds the WordNet lemma (base forms as WordNet's
// morphy finds them, multi-word terms included), chooses the sense the
// user most likely means, using the rest of the profile as context (a
// Lesk-style overlap of glosses, related words and ancestors, with sense
// frequency as the prior), and collects the sense's synonyms, hyponyms and
// hypernyms with a weight each. A Matcher compiled from the expansions
// finds those terms in text across inflections, as whole words and
// phrases, case-insensitively.
//
// A multi-word term WordNet lacks is kept as a literal phrase, matched
// with its last word inflected ("semantic webs"). If its ending of two
// words or more is a WordNet lemma ("online stock exchange" → "stock
// exchange"), that sense's words are added as hypernyms, the term being a
// kind of it. A single head word is never used: "semantic web" widened
// through "web" would match "network" and "entanglement".
//
// WordNet comes from the table embedded by package wordnetdata (Load), or
// from other dict files (LoadDir); the raw files are never parsed on the
// default path.
package expand

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	wordnetdata "github.com/changedigest/changedigest/wordnet-data"
)

// Errors.
var (
	// ErrLoad means WordNet could not be loaded.
	ErrLoad = errors.New("expand: cannot load WordNet")
)

// POS is a part of speech.
type POS = wordnetdata.POS

// Parts of speech.
const (
	Noun      = wordnetdata.Noun
	Verb      = wordnetdata.Verb
	Adjective = wordnetdata.Adjective
	Adverb    = wordnetdata.Adverb
)

// WordNet is a loaded WordNet: read-only and safe for concurrent use.
type WordNet struct {
	t *wordnetdata.Table

	excOnce sync.Once
	revExc  [4]map[string][]string // base -> irregular forms, per POS

	countOnce sync.Once
	counts    []uint32 // hyponyms below each synset
}

func newWordNet(t *wordnetdata.Table) *WordNet {
	return &WordNet{t: t}
}

// hyponymCount returns how many synsets lie below s through hyponym and
// instance hyponym pointers, all levels (a synset reached by two paths
// counts twice: this measures generality, not a set).
func (wn *WordNet) hyponymCount(s int) int {
	wn.countOnce.Do(func() {
		n := wn.t.NumSynsets()
		wn.counts = make([]uint32, n)
		const (
			todo = iota
			busy
			done
		)
		state := make([]uint8, n)
		var ptrs []wordnetdata.PointerRef
		var visit func(i int) uint32
		visit = func(i int) uint32 {
			switch state[i] {
			case done:
				return wn.counts[i]
			case busy: // a cycle: count nothing twice
				return 0
			}
			state[i] = busy
			var c uint32
			start := len(ptrs)
			ptrs = wn.t.Pointers(ptrs, i, 0)
			for k := start; k < len(ptrs); k++ {
				if p := ptrs[k]; p.Rel == wordnetdata.Hyponym || p.Rel == wordnetdata.InstanceHyponym {
					c += 1 + visit(p.Target)
				}
			}
			ptrs = ptrs[:start]
			wn.counts[i], state[i] = c, done
			return c
		}
		for i := range n {
			visit(i)
		}
	})
	return int(wn.counts[s])
}

var (
	loadOnce sync.Once
	loaded   *WordNet
	loadErr  error
)

// Load returns WordNet 3.0 from the table embedded in the binary. The table
// is decoded on the first call (about a tenth of a second); later calls
// return the same *WordNet. An error (wrapping ErrLoad) means the binary
// was built with a corrupt table.
func Load() (*WordNet, error) {
	loadOnce.Do(func() {
		t, err := wordnetdata.Embedded()
		if err != nil {
			loadErr = fmt.Errorf("%w: %w", ErrLoad, err)
			return
		}
		loaded = newWordNet(t)
	})
	return loaded, loadErr
}

// LoadDir reads WordNet from dict files in dir (data.*, index.*, *.exc and
// optionally cntlist.rev, in WordNet 3.0's format). It parses the files,
// which takes seconds and a few hundred megabytes for the full WordNet: use
// it for other versions or test fixtures, and Load otherwise. Errors wrap
// ErrLoad and say which file was wrong.
func LoadDir(dir string) (*WordNet, error) {
	d, err := wordnetdata.Build(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLoad, err)
	}
	var buf bytes.Buffer
	if err := d.Encode(&buf, false); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLoad, dir, err)
	}
	t, err := wordnetdata.Decode(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLoad, dir, err)
	}
	if err := t.LoadGlosses(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLoad, dir, err)
	}
	return newWordNet(t), nil
}

// Table returns the underlying table, for callers that need raw access.
func (wn *WordNet) Table() *wordnetdata.Table { return wn.t }

// Synset is a set of synonyms: one meaning.
type Synset struct {
	// ID is the part of speech letter and WordNet 3.0 offset, "n02958343".
	ID      string `json:"id"`
	POS     POS    `json:"pos"`
	Lexname string `json:"lexname"` // lexicographer file, "noun.artifact"
	// Words are spelled as WordNet does, with spaces: "motor vehicle".
	Words []string `json:"words"`
	Gloss string   `json:"gloss"`
}

// Sense is one meaning of a lemma.
type Sense struct {
	Synset
	Lemma    string `json:"lemma"`
	Number   int    `json:"number"`    // sense number of Lemma in its POS, from 1
	TagCount int    `json:"tag_count"` // times tagged in the semantic concordances
}

// synset returns the exported view of synset i.
func (wn *WordNet) synset(i int) Synset {
	s := Synset{ID: wn.t.ID(i), POS: wn.t.POS(i), Lexname: wordnetdata.LexName(wn.t.LexFile(i)), Gloss: wn.t.Gloss(i)}
	for w := range wn.t.NumWords(i) {
		s.Words = append(s.Words, wn.t.Word(i, w))
	}
	return s
}

// Synset returns the synset with an ID such as "n02958343".
func (wn *WordNet) Synset(id string) (Synset, bool) {
	i, ok := wn.t.FindID(id)
	if !ok {
		return Synset{}, false
	}
	return wn.synset(i), true
}

// Lookup returns the senses of a lemma exactly as given (after folding case
// and spacing; no base forms) in part of speech pos, or in all when pos is
// 0, in WordNet's order.
func (wn *WordNet) Lookup(lemma string, pos POS) []Sense {
	l := normalize(lemma)
	li, ok := wn.t.LookupLemma(l)
	if !ok {
		return nil
	}
	var out []Sense
	for _, s := range wn.t.Senses(nil, li, pos) {
		out = append(out, Sense{Synset: wn.synset(s.Synset), Lemma: l, Number: s.Number, TagCount: s.TagCount})
	}
	return out
}

// Senses returns the senses of word, found through its base forms (so
// "geese" gives the senses of "goose"), in part of speech pos or in all
// when pos is 0.
func (wn *WordNet) Senses(word string, pos POS) []Sense {
	var out []Sense
	for _, p := range posList(pos) {
		for _, b := range wn.BaseForms(word, p) {
			out = append(out, wn.Lookup(b, p)...)
		}
	}
	return out
}

func posList(pos POS) []POS {
	if pos == 0 {
		return wordnetdata.POSes[:]
	}
	return []POS{pos}
}

// normalize folds case and spacing the way the table stores lemmas:
// lower case, underscores and runs of white space turned into one space.
func normalize(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == '_' || unicode.IsSpace(r)
	}), " ")
}
