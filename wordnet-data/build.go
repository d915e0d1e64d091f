package wordnetdata

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fluhus/gostuff/nlp/wordnet"
)

// Errors returned by Build and Decode.
var (
	// ErrDict means the dict files are missing, unreadable or inconsistent.
	ErrDict = errors.New("wordnetdata: bad WordNet dict files")
	// ErrFormat means a table file is not one this package wrote.
	ErrFormat = errors.New("wordnetdata: bad table file")
)

// POS is a part of speech, as WordNet spells it in its files.
type POS byte

// Parts of speech. Adjective satellites ('s' in the data files) are
// adjectives here; Synset.Satellite tells them apart.
const (
	Noun      POS = 'n'
	Verb      POS = 'v'
	Adjective POS = 'a'
	Adverb    POS = 'r'
)

// POSes lists the parts of speech in table order.
var POSes = [4]POS{Noun, Verb, Adjective, Adverb}

func (p POS) String() string {
	switch p {
	case Noun:
		return "noun"
	case Verb:
		return "verb"
	case Adjective:
		return "adjective"
	case Adverb:
		return "adverb"
	}
	return "pos(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText writes the part of speech as its name ("noun").
func (p POS) MarshalText() ([]byte, error) {
	if p.index() < 0 {
		return nil, fmt.Errorf("wordnetdata: no part of speech %d", byte(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads a part of speech by name ("noun") or letter ("n").
func (p *POS) UnmarshalText(b []byte) error {
	q, ok := ParsePOS(string(b))
	if !ok {
		return fmt.Errorf("wordnetdata: unknown part of speech %q", b)
	}
	*p = q
	return nil
}

// ParsePOS reads a part of speech by name ("noun", "adj") or letter ("n",
// "s" for adjective satellites).
func ParsePOS(s string) (POS, bool) {
	switch strings.ToLower(s) {
	case "n", "noun":
		return Noun, true
	case "v", "verb":
		return Verb, true
	case "a", "s", "adj", "adjective":
		return Adjective, true
	case "r", "adv", "adverb":
		return Adverb, true
	}
	return 0, false
}

// index returns p's position in POSes, or -1.
func (p POS) index() int {
	switch p {
	case Noun:
		return 0
	case Verb:
		return 1
	case Adjective:
		return 2
	case Adverb:
		return 3
	}
	return -1
}

// Rel is the kind of a pointer between synsets.
type Rel uint8

// Pointer kinds kept in the table (WordNet symbol in brackets).
const (
	Hypernym          Rel = iota + 1 // @
	InstanceHypernym                 // @i
	Hyponym                          // ~
	InstanceHyponym                  // ~i
	SimilarTo                        // &
	Derivation                       // + (lexical: between words)
	AlsoSee                          // ^
	VerbGroup                        // $
	DomainTopic                      // ;c
	DomainTopicMember                // -c
	maxRel
)

var relSymbols = map[string]Rel{
	wordnet.Hypernym:                  Hypernym,
	wordnet.InstanceHypernym:          InstanceHypernym,
	wordnet.Hyponym:                   Hyponym,
	wordnet.InstanceHyponym:           InstanceHyponym,
	wordnet.SimilarTo:                 SimilarTo,
	wordnet.DerivationallyRelatedForm: Derivation,
	wordnet.AlsoSee:                   AlsoSee,
	wordnet.VerbGroup:                 VerbGroup,
	wordnet.DomainOfSynsetTopic:       DomainTopic,
	wordnet.MemberOfThisDomainTopic:   DomainTopicMember,
}

func (r Rel) String() string {
	switch r {
	case Hypernym:
		return "hypernym"
	case InstanceHypernym:
		return "instance hypernym"
	case Hyponym:
		return "hyponym"
	case InstanceHyponym:
		return "instance hyponym"
	case SimilarTo:
		return "similar to"
	case Derivation:
		return "derivation"
	case AlsoSee:
		return "also see"
	case VerbGroup:
		return "verb group"
	case DomainTopic:
		return "topic domain"
	case DomainTopicMember:
		return "topic domain member"
	}
	return "rel(" + strconv.Itoa(int(r)) + ")"
}

// Data is WordNet as Build reads it, before it is encoded: plain slices in
// the order the table stores them.
type Data struct {
	// Lemmas are the lemmas of the index files, lower case, words joined
	// by single spaces ("motor vehicle"), sorted bytewise.
	Lemmas []string
	// Senses holds, per lemma, its senses: nouns, verbs, adjectives, then
	// adverbs, each in WordNet's sense order.
	Senses [][]Sense
	// Synsets are sorted by part of speech (in POSes order), then offset.
	Synsets []Synset
	// Exceptions are the morphological exception lists per part of speech
	// (in POSes order), sorted by Form then Base.
	Exceptions [4][]Exception
}

// Sense is one sense of a lemma.
type Sense struct {
	Synset   uint32 // index into Data.Synsets
	TagCount uint32 // times the sense was tagged in the semantic concordances
}

// Synset is one set of synonyms.
type Synset struct {
	Offset    uint32 // byte offset in the data file: the WordNet 3.0 identifier
	POS       POS
	Satellite bool  // an adjective satellite
	LexFile   uint8 // lexicographer file number, see LexName
	Words     []Word
	Gloss     string // the definition, without usage examples
	Pointers  []Pointer
}

// Word is one word of a synset.
type Word struct {
	Lemma   uint32 // index into Data.Lemmas
	Display string // spelling with case, words joined by spaces
}

// Pointer is a relation from a synset (or one of its words) to another.
type Pointer struct {
	Rel    Rel
	Target uint32 // synset index
	// Source and Dest are 1-based word numbers for lexical pointers
	// (derivation), 0 for pointers between whole synsets.
	Source, Dest uint8
}

// Exception maps an irregular form to a base form ("geese" to "goose").
type Exception struct {
	Form, Base string
}

// Build reads the WordNet 3.0 dict files in dir (data.*, index.*, *.exc and,
// if present, cntlist.rev). Synsets and exception lists come from gostuff's
// parser; the index files give the sense order, cntlist.rev the tag counts
// and the data file headers the lexicographer files and lex ids that sense
// keys need. Errors wrap ErrDict and name the file.
func Build(dir string) (*Data, error) {
	wn, err := wordnet.Parse(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDict, dir, err)
	}
	if len(wn.Synset) == 0 {
		return nil, fmt.Errorf("%w: %s: no synsets", ErrDict, dir)
	}
	heads, err := readDataHeads(dir)
	if err != nil {
		return nil, err
	}
	index, err := readIndexes(dir)
	if err != nil {
		return nil, err
	}

	d := &Data{}
	// Synsets in table order.
	ids := make([]string, 0, len(wn.Synset))
	for id := range wn.Synset {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := cmp.Compare(POS(a[0]).index(), POS(b[0]).index()); c != 0 {
			return c
		}
		return strings.Compare(a[1:], b[1:]) // offsets have 8 digits
	})
	synIndex := make(map[string]uint32, len(ids))
	for i, id := range ids {
		synIndex[id] = uint32(i)
	}

	// Lemmas: every lemma of the index files.
	lemmaSet := map[string]bool{}
	for _, e := range index {
		lemmaSet[e.lemma] = true
	}
	d.Lemmas = make([]string, 0, len(lemmaSet))
	for l := range lemmaSet {
		d.Lemmas = append(d.Lemmas, l)
	}
	slices.Sort(d.Lemmas)
	lemmaIndex := make(map[string]uint32, len(d.Lemmas))
	for i, l := range d.Lemmas {
		lemmaIndex[l] = uint32(i)
	}

	d.Synsets = make([]Synset, len(ids))
	for i, id := range ids {
		ss := wn.Synset[id]
		h, ok := heads[id]
		if !ok || len(h.lexIDs) != len(ss.Word) {
			return nil, fmt.Errorf("%w: synset %s: data file header does not match the parsed synset", ErrDict, id)
		}
		off, err := strconv.ParseUint(ss.Offset, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: synset %s: bad offset %q", ErrDict, id, ss.Offset)
		}
		s := Synset{
			Offset:    uint32(off),
			POS:       POS(id[0]),
			Satellite: ss.Pos == "s",
			LexFile:   h.lexFile,
			Gloss:     definition(ss.Gloss),
		}
		for _, w := range ss.Word {
			disp := displayForm(w)
			li, ok := lemmaIndex[strings.ToLower(disp)]
			if !ok {
				return nil, fmt.Errorf("%w: synset %s: word %q is in no index file", ErrDict, id, w)
			}
			s.Words = append(s.Words, Word{Lemma: li, Display: disp})
		}
		for _, p := range ss.Pointer {
			rel, ok := relSymbols[p.Symbol]
			if !ok {
				continue
			}
			t, ok := synIndex[p.Synset]
			if !ok {
				return nil, fmt.Errorf("%w: synset %s: pointer %s to missing synset %s", ErrDict, id, p.Symbol, p.Synset)
			}
			if p.Source >= 254 || p.Target >= 254 {
				return nil, fmt.Errorf("%w: synset %s: pointer word number out of range", ErrDict, id)
			}
			s.Pointers = append(s.Pointers, Pointer{Rel: rel, Target: t, Source: uint8(p.Source + 1), Dest: uint8(p.Target + 1)})
		}
		slices.SortFunc(s.Pointers, comparePointers)
		s.Pointers = slices.Compact(s.Pointers)
		d.Synsets[i] = s
	}

	// Senses in index order, with tag counts from sense keys.
	tags, err := readTagCounts(dir, d, ids, heads)
	if err != nil {
		return nil, err
	}
	d.Senses = make([][]Sense, len(d.Lemmas))
	for _, e := range index { // index is in POS order already
		li := lemmaIndex[e.lemma]
		ranked := wn.LemmaRanked[string(e.pos)+"."+strings.ReplaceAll(e.lemma, " ", "_")]
		for k, off := range e.offsets {
			id := string(e.pos) + off
			si, ok := synIndex[id]
			if !ok {
				return nil, fmt.Errorf("%w: %s: lemma %q: sense %d is missing synset %s", ErrDict, e.file, e.lemma, k+1, id)
			}
			if k < len(ranked) && ranked[k] != id {
				return nil, fmt.Errorf("%w: %s: lemma %q: sense order differs from gostuff's (%s vs %s)", ErrDict, e.file, e.lemma, id, ranked[k])
			}
			d.Senses[li] = append(d.Senses[li], Sense{Synset: si, TagCount: tags[tagKey{li, si}]})
		}
	}

	// Exceptions.
	for key, bases := range wn.Exception {
		pos, form, ok := strings.Cut(key, ".")
		pi := POS(pos[0]).index()
		if !ok || len(pos) != 1 || pi < 0 {
			return nil, fmt.Errorf("%w: exception %q", ErrDict, key)
		}
		for _, b := range bases {
			_, base, _ := strings.Cut(b, ".")
			d.Exceptions[pi] = append(d.Exceptions[pi], Exception{Form: displayForm(form), Base: displayForm(base)})
		}
	}
	for i := range d.Exceptions {
		slices.SortFunc(d.Exceptions[i], func(a, b Exception) int {
			return cmp.Or(strings.Compare(a.Form, b.Form), strings.Compare(a.Base, b.Base))
		})
		d.Exceptions[i] = slices.Compact(d.Exceptions[i])
	}
	return d, nil
}

// displayForm turns a WordNet word into how people write it: underscores
// become spaces and adjective markers such as "(p)" are dropped.
func displayForm(w string) string {
	if i := strings.IndexByte(w, '('); i > 0 && strings.HasSuffix(w, ")") {
		w = w[:i]
	}
	return strings.ReplaceAll(w, "_", " ")
}

// definition cuts the usage examples off a gloss: they start at the first
// `; "`.
func definition(gloss string) string {
	g := strings.TrimSpace(gloss)
	for i := 0; i < len(g); i++ {
		if g[i] != ';' {
			continue
		}
		rest := strings.TrimLeft(g[i+1:], " ")
		if strings.HasPrefix(rest, `"`) {
			return strings.TrimSpace(g[:i])
		}
	}
	return g
}

var dataFiles = [4]string{"data.noun", "data.verb", "data.adj", "data.adv"}
var indexFiles = [4]string{"index.noun", "index.verb", "index.adj", "index.adv"}

// dataHead is what gostuff leaves out of a data file line.
type dataHead struct {
	lexFile uint8
	lexIDs  []uint8
}

// readDataHeads reads the lexicographer file number and the lex id of each
// word from the data files, keyed by synset id ("n02958343").
func readDataHeads(dir string) (map[string]dataHead, error) {
	heads := map[string]dataHead{}
	for i, name := range dataFiles {
		pos := string(POSes[i])
		err := eachLine(dir, name, func(n int, line string) error {
			f := strings.Fields(line)
			if len(f) < 4 {
				return fmt.Errorf("line %d: too few fields", n)
			}
			lex, err := strconv.ParseUint(f[1], 10, 8)
			if err != nil {
				return fmt.Errorf("line %d: bad lexicographer file %q", n, f[1])
			}
			wc, err := strconv.ParseUint(f[3], 16, 8)
			if err != nil || len(f) < 4+2*int(wc) {
				return fmt.Errorf("line %d: bad word count %q", n, f[3])
			}
			h := dataHead{lexFile: uint8(lex)}
			for w := range int(wc) {
				id, err := strconv.ParseUint(f[5+2*w], 16, 8)
				if err != nil {
					return fmt.Errorf("line %d: bad lex id %q", n, f[5+2*w])
				}
				h.lexIDs = append(h.lexIDs, uint8(id))
			}
			heads[pos+f[0]] = h
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return heads, nil
}

// indexEntry is one line of an index file.
type indexEntry struct {
	file    string
	lemma   string // display form, lower case
	pos     POS
	offsets []string
}

// readIndexes reads the index files in POS order; gostuff keeps only the
// tagged senses in order, so the sense order is read here.
func readIndexes(dir string) ([]indexEntry, error) {
	var out []indexEntry
	for i, name := range indexFiles {
		err := eachLine(dir, name, func(n int, line string) error {
			f := strings.Fields(line)
			if len(f) < 6 {
				return fmt.Errorf("line %d: too few fields", n)
			}
			if f[1] != string(POSes[i]) {
				return fmt.Errorf("line %d: part of speech %q in %s", n, f[1], name)
			}
			sc, err1 := strconv.Atoi(f[2])
			pc, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil || sc < 1 || pc < 0 || len(f) != 6+pc+sc {
				return fmt.Errorf("line %d: bad counts", n)
			}
			out = append(out, indexEntry{file: name, lemma: displayForm(f[0]), pos: POSes[i], offsets: f[6+pc:]})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

type tagKey struct{ lemma, synset uint32 }

// readTagCounts reads cntlist.rev ("sense_key sense_number tag_cnt") and
// maps each sense key to its lemma and synset. The sense numbers in that
// file do not always agree with the index files, so the key itself is
// resolved: lemma%ss_type:lex_filenum:lex_id:head_word:head_id. A missing
// file gives no counts; keys that name no sense are skipped.
func readTagCounts(dir string, d *Data, ids []string, heads map[string]dataHead) (map[tagKey]uint32, error) {
	out := map[tagKey]uint32{}
	if _, err := os.Stat(filepath.Join(dir, "cntlist.rev")); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	keys := map[string]tagKey{}
	for si, s := range d.Synsets {
		st := map[POS]int{Noun: 1, Verb: 2, Adjective: 3, Adverb: 4}[s.POS]
		head := ""
		if s.Satellite {
			st = 5
			for _, p := range s.Pointers {
				if p.Rel == SimilarTo {
					hs := d.Synsets[p.Target]
					head = fmt.Sprintf("%s:%02d", strings.ReplaceAll(d.Lemmas[hs.Words[0].Lemma], " ", "_"), heads[ids[p.Target]].lexIDs[0])
					break
				}
			}
		} else {
			head = ":"
		}
		for wi, w := range s.Words {
			k := fmt.Sprintf("%s%%%d:%02d:%02d:%s", strings.ReplaceAll(d.Lemmas[w.Lemma], " ", "_"), st, s.LexFile, heads[ids[si]].lexIDs[wi], head)
			keys[k] = tagKey{w.Lemma, uint32(si)}
		}
	}
	err := eachLine(dir, "cntlist.rev", func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) != 3 {
			return fmt.Errorf("line %d: want 3 fields", n)
		}
		c, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return fmt.Errorf("line %d: bad tag count %q", n, f[2])
		}
		if k, ok := keys[strings.ToLower(f[0])]; ok {
			out[k] += uint32(c)
		}
		return nil
	})
	return out, err
}

// eachLine calls fn for each line of a dict file that is not part of the
// licence header (those start with two spaces).
func eachLine(dir, name string, fn func(n int, line string) error) error {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDict, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(line, "  ") || strings.TrimSpace(line) == "" {
			continue
		}
		if err := fn(n, line); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrDict, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDict, name, err)
	}
	return nil
}

// LexName returns the name of a lexicographer file, e.g. "noun.animal".
func LexName(n uint8) string {
	if int(n) < len(lexNames) {
		return lexNames[n]
	}
	return "lexfile." + strconv.Itoa(int(n))
}

// lexNames are the lexicographer files of WordNet 3.0 (lexnames(5WN)).
var lexNames = [...]string{
	"adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal",
	"noun.artifact", "noun.attribute", "noun.body", "noun.cognition",
	"noun.communication", "noun.event", "noun.feeling", "noun.food",
	"noun.group", "noun.location", "noun.motive", "noun.object",
	"noun.person", "noun.phenomenon", "noun.plant", "noun.possession",
	"noun.process", "noun.quantity", "noun.relation", "noun.shape",
	"noun.state", "noun.substance", "noun.time", "verb.body",
	"verb.change", "verb.cognition", "verb.communication", "verb.competition",
	"verb.consumption", "verb.contact", "verb.creation", "verb.emotion",
	"verb.motion", "verb.perception", "verb.possession", "verb.social",
	"verb.stative", "verb.weather", "adj.ppl",
}
