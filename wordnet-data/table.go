package wordnetdata

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Table is a decoded table: read-only, safe for concurrent use. Lemmas and
// synsets are numbered from 0 in table order; methods taking a number
// panic if it is out of range, like slice indexing.
type Table struct {
	str string // lemmas, then exception forms and bases

	lemmaOff    []uint32 // len nLemmas+1, into str
	senseStart  []uint32 // len nLemmas+1, into sense*
	senseSynset []uint32
	senseTag    []uint32
	senseNum    []uint32

	synPOS    []byte // 'n','v','a','s','r'
	synLex    []byte
	synOffset []uint32
	wordStart []uint32 // len nSynsets+1, into word*
	wordLemma []uint32
	caseStart []uint32 // len nWords+1, into casePos
	casePos   []uint8  // positions of capitals in the lemma

	ptrStart  []uint32 // len nSynsets+1, into ptr*
	ptrRel    []byte
	ptrTarget []uint32
	ptrWords  []byte // source, dest per pointer

	excStart   [5]uint32 // per POS (POSes order) ranges of exc*
	excFormOff []uint32  // start of the form in str; the base follows it
	excBaseOff []uint32  // start of the base
	excEnd     []uint32

	glossOnce   sync.Once
	glossRaw    []byte
	glossMethod byte
	glossStr    string
	glossOff    []uint32
	glossErr    error
}

// Decode decodes a table file written by Data.Encode. The core part is
// decoded now; the glosses when first needed. Errors wrap ErrFormat.
func Decode(file []byte) (*Table, error) {
	core, gloss, gm, err := splitFile(file)
	if err != nil {
		return nil, err
	}
	t := &Table{glossRaw: gloss, glossMethod: gm}
	d := &decoder{b: core}
	nLemmas := d.count("counts")
	nSynsets := d.count("counts")
	nWords := d.count("counts")
	nStored := d.count("counts")
	nExc := 0
	for i := range 4 {
		t.excStart[i] = uint32(nExc)
		nExc += d.count("counts")
	}
	t.excStart[4] = uint32(nExc)

	// Lemmas and exceptions make the string table.
	lens := d.uvs(2*nLemmas, "lemmas")
	restLen := 0
	for i := 1; i < len(lens); i += 2 {
		restLen += int(lens[i])
	}
	rests := d.bytes(restLen, "lemmas")
	excLens := d.uvs(2*nExc, "exceptions")
	excLen := 0
	for _, l := range excLens {
		excLen += int(l)
	}
	excBytes := d.bytes(excLen, "exceptions")
	if d.err != nil {
		return nil, d.err
	}
	var sb strings.Builder
	sb.Grow(restLen + 8*nLemmas + excLen)
	t.lemmaOff = make([]uint32, nLemmas+1)
	prev := 0
	for i := range nLemmas {
		shared, rest := int(lens[2*i]), int(lens[2*i+1])
		start := sb.Len()
		if shared > start-prev || rest > len(rests) {
			return nil, fmt.Errorf("%w: corrupt lemma %d", ErrFormat, i)
		}
		sb.WriteString(sb.String()[prev : prev+shared])
		sb.Write(rests[:rest])
		rests = rests[rest:]
		t.lemmaOff[i+1] = uint32(sb.Len())
		prev = start
	}
	t.excFormOff = make([]uint32, nExc)
	t.excBaseOff = make([]uint32, nExc)
	t.excEnd = make([]uint32, nExc)
	pos := uint32(sb.Len())
	sb.Write(excBytes)
	for i := range nExc {
		t.excFormOff[i] = pos
		pos += excLens[2*i]
		t.excBaseOff[i] = pos
		pos += excLens[2*i+1]
		t.excEnd[i] = pos
	}
	t.str = sb.String()

	t.synPOS = d.bytes(nSynsets, "synset POS")
	t.synLex = d.bytes(nSynsets, "synset lexicographer files")
	t.synOffset = d.uvs(nSynsets, "synset offsets")
	if d.err != nil {
		return nil, d.err
	}
	var prevPOS byte
	for i, p := range t.synPOS {
		switch p {
		case 's':
			p = 'a'
		case 'n', 'v', 'a', 'r':
		default:
			return nil, fmt.Errorf("%w: synset %d: part of speech %q", ErrFormat, i, p)
		}
		if i > 0 && p == prevPOS {
			t.synOffset[i] += t.synOffset[i-1]
		}
		prevPOS = p
	}
	t.wordStart = d.starts(nSynsets, nWords, "synset words")
	t.wordLemma = d.uvs(nWords, "synset words")
	nums := d.uvs(nWords, "sense numbers")
	tags := d.uvs(nWords, "tag counts")
	if d.err != nil {
		return nil, d.err
	}
	t.caseStart = make([]uint32, nWords+1)
	t.casePos = make([]uint8, 0, nWords/2)
	for k := range nWords {
		n := d.count("word case")
		last := 0
		for range n {
			last += d.count("word case")
			if last > 255 {
				d.fail("word case")
				break
			}
			t.casePos = append(t.casePos, uint8(last))
		}
		t.caseStart[k+1] = uint32(len(t.casePos))
	}
	storedStart := d.starts(nSynsets, nStored, "pointers")
	rels := d.bytes(nStored, "pointers")
	targets := d.uvs(nStored, "pointers")
	words := d.bytes(2*nStored, "pointers")
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the core part", ErrFormat, len(d.b))
	}
	for k, l := range t.wordLemma {
		if int(l) >= nLemmas {
			return nil, fmt.Errorf("%w: word %d: lemma out of range", ErrFormat, k)
		}
		for _, p := range t.casePos[t.caseStart[k]:t.caseStart[k+1]] {
			if int(p) >= len(t.Lemma(int(l))) {
				return nil, fmt.Errorf("%w: word %d: case out of range", ErrFormat, k)
			}
		}
	}
	if err := t.buildSenses(nums, tags); err != nil {
		return nil, err
	}
	if err := t.buildPointers(storedStart, rels, targets, words); err != nil {
		return nil, err
	}
	return t, nil
}

// buildSenses inverts the synset words into the senses of each lemma.
func (t *Table) buildSenses(nums, tags []uint32) error {
	nLemmas := t.NumLemmas()
	count := make([]uint32, nLemmas+1)
	for k, l := range t.wordLemma {
		if nums[k] > 0 {
			count[l+1]++
		}
	}
	for i := range nLemmas {
		count[i+1] += count[i]
	}
	t.senseStart = slices.Clone(count)
	n := count[nLemmas]
	t.senseSynset = make([]uint32, n)
	t.senseTag = make([]uint32, n)
	t.senseNum = make([]uint32, n)
	for i := range t.synPOS {
		for k := t.wordStart[i]; k < t.wordStart[i+1]; k++ {
			if nums[k] == 0 {
				continue
			}
			l := t.wordLemma[k]
			at := count[l]
			count[l]++
			t.senseSynset[at], t.senseTag[at], t.senseNum[at] = uint32(i), tags[k], nums[k]
		}
	}
	// Synsets are in POS order already; within a POS, sort by number.
	for l := range nLemmas {
		lo, hi := int(t.senseStart[l]), int(t.senseStart[l+1])
		for a := lo + 1; a < hi; a++ { // insertion sort: lists are short
			for b := a; b > lo && t.POS(int(t.senseSynset[b])) == t.POS(int(t.senseSynset[b-1])) && t.senseNum[b] < t.senseNum[b-1]; b-- {
				t.senseSynset[b], t.senseSynset[b-1] = t.senseSynset[b-1], t.senseSynset[b]
				t.senseTag[b], t.senseTag[b-1] = t.senseTag[b-1], t.senseTag[b]
				t.senseNum[b], t.senseNum[b-1] = t.senseNum[b-1], t.senseNum[b]
			}
		}
		var last POS
		want := uint32(0)
		for k := lo; k < hi; k++ {
			if p := t.POS(int(t.senseSynset[k])); p != last {
				last, want = p, 0
			}
			want++
			if t.senseNum[k] != want {
				return fmt.Errorf("%w: lemma %q: sense numbers are not 1, 2, …", ErrFormat, t.Lemma(l))
			}
		}
	}
	return nil
}

// buildPointers adds the implied inverse pointers and sorts each synset's.
func (t *Table) buildPointers(storedStart []uint32, rels []byte, targets []uint32, words []byte) error {
	nSyn := len(t.synPOS)
	count := make([]uint32, nSyn+1)
	for i := range nSyn {
		for k := storedStart[i]; k < storedStart[i+1]; k++ {
			r := Rel(rels[k] &^ relInverse)
			tgt := int64(i) + unzigzag(uint64(targets[k]))
			if r == 0 || r >= maxRel || tgt < 0 || tgt >= int64(nSyn) {
				return fmt.Errorf("%w: synset %d: bad pointer", ErrFormat, i)
			}
			targets[k] = uint32(tgt)
			count[i+1]++
			if rels[k]&relInverse != 0 {
				count[tgt+1]++
			}
		}
	}
	for i := range nSyn {
		count[i+1] += count[i]
	}
	t.ptrStart = slices.Clone(count)
	n := count[nSyn]
	t.ptrRel = make([]byte, n)
	t.ptrTarget = make([]uint32, n)
	t.ptrWords = make([]byte, 2*n)
	put := func(from int, r Rel, to uint32, src, dst byte) {
		at := count[from]
		count[from]++
		t.ptrRel[at], t.ptrTarget[at], t.ptrWords[2*at], t.ptrWords[2*at+1] = byte(r), to, src, dst
	}
	for i := range nSyn {
		for k := storedStart[i]; k < storedStart[i+1]; k++ {
			r := Rel(rels[k] &^ relInverse)
			put(i, r, targets[k], words[2*k], words[2*k+1])
			if rels[k]&relInverse != 0 {
				put(int(targets[k]), r.inverse(), uint32(i), words[2*k+1], words[2*k])
			}
		}
	}
	var ps []PointerRef
	for i := range nSyn {
		lo, hi := int(t.ptrStart[i]), int(t.ptrStart[i+1])
		if hi-lo < 2 {
			continue
		}
		ps = t.Pointers(ps[:0], i, 0)
		slices.SortFunc(ps, func(a, b PointerRef) int {
			return cmp.Or(cmp.Compare(a.Rel, b.Rel), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Dest, b.Dest))
		})
		for k, p := range ps {
			at := lo + k
			t.ptrRel[at], t.ptrTarget[at], t.ptrWords[2*at], t.ptrWords[2*at+1] = byte(p.Rel), uint32(p.Target), byte(p.Source), byte(p.Dest)
		}
	}
	return nil
}

// Stats counts what a table holds.
type Stats struct {
	Lemmas, Synsets, Senses, Words, Pointers, Exceptions int
}

// Stats returns the table's counts.
func (t *Table) Stats() Stats {
	return Stats{
		Lemmas: t.NumLemmas(), Synsets: t.NumSynsets(), Senses: len(t.senseSynset),
		Words: len(t.wordLemma), Pointers: len(t.ptrRel), Exceptions: int(t.excStart[4]),
	}
}

// NumLemmas returns the number of lemmas.
func (t *Table) NumLemmas() int { return len(t.lemmaOff) - 1 }

// NumSynsets returns the number of synsets.
func (t *Table) NumSynsets() int { return len(t.synPOS) }

// Lemma returns lemma i: lower case, words joined by spaces.
func (t *Table) Lemma(i int) string { return t.str[t.lemmaOff[i]:t.lemmaOff[i+1]] }

// LookupLemma finds a lemma (lower case, words joined by single spaces)
// and returns its number.
func (t *Table) LookupLemma(s string) (int, bool) {
	n := t.NumLemmas()
	i := sort.Search(n, func(i int) bool { return t.Lemma(i) >= s })
	if i < n && t.Lemma(i) == s {
		return i, true
	}
	return 0, false
}

// SenseRef is one sense of a lemma.
type SenseRef struct {
	Synset   int
	TagCount int
	Number   int // 1-based sense number within the part of speech
}

// Senses appends the senses of lemma i in part of speech pos (all parts of
// speech when pos is 0) to dst, in WordNet's sense order.
func (t *Table) Senses(dst []SenseRef, lemma int, pos POS) []SenseRef {
	for k := t.senseStart[lemma]; k < t.senseStart[lemma+1]; k++ {
		s := int(t.senseSynset[k])
		if pos == 0 || t.POS(s) == pos {
			dst = append(dst, SenseRef{Synset: s, TagCount: int(t.senseTag[k]), Number: int(t.senseNum[k])})
		}
	}
	return dst
}

// HasLemma reports whether s is a lemma with a sense in part of speech pos
// (any part of speech when pos is 0).
func (t *Table) HasLemma(s string, pos POS) bool {
	i, ok := t.LookupLemma(s)
	if !ok {
		return false
	}
	if pos == 0 {
		return true
	}
	for k := t.senseStart[i]; k < t.senseStart[i+1]; k++ {
		if t.POS(int(t.senseSynset[k])) == pos {
			return true
		}
	}
	return false
}

// POS returns synset i's part of speech (Adjective for satellites).
func (t *Table) POS(i int) POS {
	if p := t.synPOS[i]; p != 's' {
		return POS(p)
	}
	return Adjective
}

// Satellite reports whether synset i is an adjective satellite.
func (t *Table) Satellite(i int) bool { return t.synPOS[i] == 's' }

// LexFile returns the lexicographer file of synset i; see LexName.
func (t *Table) LexFile(i int) uint8 { return t.synLex[i] }

// Offset returns synset i's offset in its WordNet 3.0 data file.
func (t *Table) Offset(i int) uint32 { return t.synOffset[i] }

// ID returns synset i's identifier: POS letter and offset, "n02958343".
func (t *Table) ID(i int) string { return fmt.Sprintf("%c%08d", t.POS(i), t.synOffset[i]) }

// FindID returns the synset with an identifier made by ID.
func (t *Table) FindID(id string) (int, bool) {
	var p byte
	var off uint32
	if _, err := fmt.Sscanf(id, "%c%d", &p, &off); err != nil {
		return 0, false
	}
	pi := POS(p).index()
	if pi < 0 {
		return 0, false
	}
	// Synsets are sorted by POS then offset.
	i := sort.Search(len(t.synPOS), func(i int) bool {
		if c := t.POS(i).index(); c != pi {
			return c > pi
		}
		return t.synOffset[i] >= off
	})
	if i < len(t.synPOS) && t.POS(i) == POS(p) && t.synOffset[i] == off {
		return i, true
	}
	return 0, false
}

// NumWords returns the number of words of synset i.
func (t *Table) NumWords(i int) int { return int(t.wordStart[i+1] - t.wordStart[i]) }

// WordLemma returns the lemma number of word w (0-based) of synset i.
func (t *Table) WordLemma(i, w int) int { return int(t.wordLemma[int(t.wordStart[i])+w]) }

// Word returns word w (0-based) of synset i as WordNet spells it, with
// case, e.g. "American football".
func (t *Table) Word(i, w int) string {
	k := int(t.wordStart[i]) + w
	l := t.Lemma(int(t.wordLemma[k]))
	caps := t.casePos[t.caseStart[k]:t.caseStart[k+1]]
	if len(caps) == 0 {
		return l
	}
	b := []byte(l)
	for _, p := range caps {
		b[p] -= 'a' - 'A'
	}
	return string(b)
}

// PointerRef is one pointer of a synset.
type PointerRef struct {
	Rel    Rel
	Target int
	// Source and Dest are 1-based word numbers of a lexical pointer, 0 for
	// a pointer between synsets.
	Source, Dest int
}

// Pointers appends synset i's pointers of kind rel (all kinds when rel is
// 0) to dst.
func (t *Table) Pointers(dst []PointerRef, i int, rel Rel) []PointerRef {
	for k := t.ptrStart[i]; k < t.ptrStart[i+1]; k++ {
		if r := Rel(t.ptrRel[k]); rel == 0 || r == rel {
			dst = append(dst, PointerRef{Rel: r, Target: int(t.ptrTarget[k]), Source: int(t.ptrWords[2*k]), Dest: int(t.ptrWords[2*k+1])})
		}
	}
	return dst
}

// Gloss returns the definition of synset i. The glosses are decoded on the
// first call; a corrupt gloss part gives "" for every synset (Decode of an
// embedded or freshly built table never leaves one).
func (t *Table) Gloss(i int) string {
	if err := t.LoadGlosses(); err != nil {
		return ""
	}
	return t.glossStr[t.glossOff[i]:t.glossOff[i+1]]
}

// LoadGlosses decodes the glosses now rather than on the first call of
// Gloss, and reports whether they are sound (errors wrap ErrFormat).
func (t *Table) LoadGlosses() error {
	t.glossOnce.Do(func() {
		raw, err := inflate(t.glossRaw, t.glossMethod)
		if err == nil {
			err = t.decodeGlosses(raw)
		}
		t.glossErr = err
		t.glossRaw = nil
	})
	return t.glossErr
}

// decodeGlosses decodes the gloss part (see format.go).
func (t *Table) decodeGlosses(raw []byte) error {
	d := &decoder{b: raw}
	n := d.count("glosses")
	if d.err == nil && n != t.NumSynsets() {
		return fmt.Errorf("%w: %d glosses for %d synsets", ErrFormat, n, t.NumSynsets())
	}
	nv := d.count("gloss vocabulary")
	vlens := d.uvs(nv, "gloss vocabulary")
	voff := make([]int, nv+1)
	for i, l := range vlens {
		voff[i+1] = voff[i] + int(l)
	}
	vocab := d.bytes(voff[nv], "gloss vocabulary")
	ntok := d.starts(n, -1, "glosses")
	toks := d.uvs(int(ntok[n]), "glosses")
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the gloss part", ErrFormat, len(d.b))
	}
	out := make([]byte, 0, 6*len(toks))
	t.glossOff = make([]uint32, n+1)
	for i := range n {
		for _, x := range toks[ntok[i]:ntok[i+1]] {
			v := int(x >> 1)
			if v >= nv {
				return fmt.Errorf("%w: synset %d: gloss word out of range", ErrFormat, i)
			}
			if x&1 != 0 {
				out = append(out, ' ')
			}
			out = append(out, vocab[voff[v]:voff[v+1]]...)
		}
		t.glossOff[i+1] = uint32(len(out))
	}
	t.glossStr = string(out)
	return nil
}

// Exceptions appends to dst the base forms the exception list of pos gives
// for form (lower case, words joined by spaces).
func (t *Table) Exceptions(dst []string, form string, pos POS) []string {
	pi := pos.index()
	if pi < 0 {
		return dst
	}
	lo, hi := int(t.excStart[pi]), int(t.excStart[pi+1])
	i := lo + sort.Search(hi-lo, func(k int) bool { return t.excForm(lo+k) >= form })
	for ; i < hi && t.excForm(i) == form; i++ {
		dst = append(dst, t.excBase(i))
	}
	return dst
}

// EachException calls fn for every exception of pos, in form order.
func (t *Table) EachException(pos POS, fn func(form, base string)) {
	pi := pos.index()
	if pi < 0 {
		return
	}
	for i := t.excStart[pi]; i < t.excStart[pi+1]; i++ {
		fn(t.excForm(int(i)), t.excBase(int(i)))
	}
}

func (t *Table) excForm(i int) string { return t.str[t.excFormOff[i]:t.excBaseOff[i]] }
func (t *Table) excBase(i int) string { return t.str[t.excBaseOff[i]:t.excEnd[i]] }

// Data returns the table as plain slices, as Build made them; used to check
// a table against the dict files it came from.
func (t *Table) Data() (*Data, error) {
	if err := t.LoadGlosses(); err != nil {
		return nil, err
	}
	d := &Data{Lemmas: make([]string, t.NumLemmas()), Senses: make([][]Sense, t.NumLemmas()), Synsets: make([]Synset, t.NumSynsets())}
	for i := range d.Lemmas {
		d.Lemmas[i] = t.Lemma(i)
		for k := t.senseStart[i]; k < t.senseStart[i+1]; k++ {
			d.Senses[i] = append(d.Senses[i], Sense{Synset: t.senseSynset[k], TagCount: t.senseTag[k]})
		}
	}
	for i := range d.Synsets {
		s := Synset{Offset: t.Offset(i), POS: t.POS(i), Satellite: t.Satellite(i), LexFile: t.LexFile(i), Gloss: t.Gloss(i)}
		for w := range t.NumWords(i) {
			s.Words = append(s.Words, Word{Lemma: uint32(t.WordLemma(i, w)), Display: t.Word(i, w)})
		}
		for _, p := range t.Pointers(nil, i, 0) {
			s.Pointers = append(s.Pointers, Pointer{Rel: p.Rel, Target: uint32(p.Target), Source: uint8(p.Source), Dest: uint8(p.Dest)})
		}
		d.Synsets[i] = s
	}
	for pi, p := range POSes {
		t.EachException(p, func(form, base string) {
			d.Exceptions[pi] = append(d.Exceptions[pi], Exception{Form: strings.Clone(form), Base: strings.Clone(base)})
		})
	}
	return d, nil
}
