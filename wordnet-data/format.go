package wordnetdata

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The table file:
//
//	"CDWN" version(1 byte)
//	core part, gloss part: each method(1 byte: 0 stored, 1 gzip) uvarint(length) bytes
//
// The core part is columns of unsigned varints and bytes (columns of small
// integers compress better than rows):
//
//	counts: lemmas synsets words stored-pointers exceptions[4]
//	lemmas, front coded: per lemma the length shared with the previous
//	  one and the length of the rest; then the rests' bytes
//	exceptions: per exception the length of its form and of its base;
//	  then the bytes, form and base after each other
//	per synset its POS byte ('n','v','a','s','r'), its lexicographer file
//	  byte, its offset minus the previous synset's (absolute at a new POS),
//	  its word count
//	per word its lemma; its sense number in that lemma's POS (0 when the
//	  word repeats a lemma of the synset); its tag count; its case: the
//	  number of upper-case letters, then their positions as differences
//	per synset its stored pointer count; per pointer its Rel byte, with
//	  0x80 set when the inverse pointer (hyponym for hypernym, derivation
//	  for derivation, …) is implied on the target; the zigzag difference
//	  target-source; the source and dest word bytes
//
// Lemma senses are rebuilt from the words and the inverse pointers from the
// flags when the table is decoded.
//
// The gloss part codes the definitions as words: the synset count, the
// vocabulary (count, lengths, bytes; most frequent first), per synset its
// token count, per token 2*vocabulary index + 1 if a space precedes it.
const (
	magic   = "CDWN"
	version = 2

	methodStored = 0
	methodGzip   = 1

	relInverse = 0x80 // Rel byte flag: the inverse pointer is implied
)

// inverse returns the relation that points back.
func (r Rel) inverse() Rel {
	switch r {
	case Hypernym:
		return Hyponym
	case Hyponym:
		return Hypernym
	case InstanceHypernym:
		return InstanceHyponym
	case InstanceHyponym:
		return InstanceHypernym
	case DomainTopic:
		return DomainTopicMember
	case DomainTopicMember:
		return DomainTopic
	}
	return r // symmetric relations
}

// comparePointers is the order of a synset's pointers.
func comparePointers(a, b Pointer) int {
	return cmp.Or(cmp.Compare(a.Rel, b.Rel), cmp.Compare(a.Target, b.Target),
		cmp.Compare(a.Source, b.Source), cmp.Compare(a.Dest, b.Dest))
}

// Encode writes the table file for d. With compress the parts are gzipped
// (the embedded file); without, they are stored, which is faster to write
// and read (tables built at run time). Data that Encode cannot represent
// (unsorted, references out of range, case that is not ASCII) gives an
// error wrapping ErrFormat.
func (d *Data) Encode(w io.Writer, compress bool) error {
	if err := d.validate(); err != nil {
		return err
	}
	core, err := d.encodeCore()
	if err != nil {
		return err
	}
	gloss := d.encodeGlosses()
	var buf bytes.Buffer
	buf.WriteString(magic)
	buf.WriteByte(version)
	for _, part := range [][]byte{core, gloss} {
		if !compress {
			buf.WriteByte(methodStored)
			buf.Write(binary.AppendUvarint(nil, uint64(len(part))))
			buf.Write(part)
			continue
		}
		var z bytes.Buffer
		zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if err != nil {
			return fmt.Errorf("wordnetdata: encode: %w", err)
		}
		zw.Write(part) // writes to a bytes.Buffer do not fail
		if err := zw.Close(); err != nil {
			return fmt.Errorf("wordnetdata: encode: %w", err)
		}
		buf.WriteByte(methodGzip)
		buf.Write(binary.AppendUvarint(nil, uint64(z.Len())))
		buf.Write(z.Bytes())
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("wordnetdata: encode: %w", err)
	}
	return nil
}

// validate checks the order and the references Encode relies on. Errors
// wrap ErrFormat.
func (d *Data) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)
	}
	if len(d.Senses) != len(d.Lemmas) {
		return bad("%d sense lists for %d lemmas", len(d.Senses), len(d.Lemmas))
	}
	for i := 1; i < len(d.Lemmas); i++ {
		if d.Lemmas[i-1] >= d.Lemmas[i] {
			return bad("lemmas not sorted at %q", d.Lemmas[i])
		}
	}
	n := uint32(len(d.Synsets))
	for i, s := range d.Synsets {
		if s.POS.index() < 0 || (s.Satellite && s.POS != Adjective) {
			return bad("synset %d: part of speech %q", i, s.POS)
		}
		if i > 0 {
			p := d.Synsets[i-1]
			if p.POS.index() > s.POS.index() || (p.POS == s.POS && p.Offset >= s.Offset) {
				return bad("synsets not sorted at %d", i)
			}
		}
		for _, w := range s.Words {
			if int(w.Lemma) >= len(d.Lemmas) {
				return bad("synset %d: lemma %d out of range", i, w.Lemma)
			}
			if _, ok := caseMask(d.Lemmas[w.Lemma], w.Display); !ok {
				return bad("synset %d: word %q is not its lemma %q with ASCII capitals", i, w.Display, d.Lemmas[w.Lemma])
			}
		}
		for k, p := range s.Pointers {
			if p.Target >= n || p.Rel == 0 || p.Rel >= maxRel {
				return bad("synset %d: bad pointer", i)
			}
			if k > 0 && comparePointers(s.Pointers[k-1], p) >= 0 {
				return bad("synset %d: pointers not sorted", i)
			}
		}
	}
	// Every sense is a word of its synset, numbered 1, 2, … per POS.
	for li, ss := range d.Senses {
		var last POS
		num := 0
		for _, s := range ss {
			if s.Synset >= n {
				return bad("lemma %q: synset %d out of range", d.Lemmas[li], s.Synset)
			}
			syn := d.Synsets[s.Synset]
			if syn.POS.index() < last.index() {
				return bad("lemma %q: senses not in POS order", d.Lemmas[li])
			}
			if syn.POS != last {
				last, num = syn.POS, 0
			}
			num++
			if !slices.ContainsFunc(syn.Words, func(w Word) bool { return w.Lemma == uint32(li) }) {
				return bad("lemma %q: sense %d is not a word of synset %d", d.Lemmas[li], num, s.Synset)
			}
		}
	}
	return nil
}

// caseMask returns the positions where display has a capital letter that
// lemma has in lower case; ok is false if display is not lemma so capitalised.
func caseMask(lemma, display string) (pos []int, ok bool) {
	if len(lemma) != len(display) {
		return nil, false
	}
	for i := 0; i < len(lemma); i++ {
		l, c := lemma[i], display[i]
		switch {
		case l == c:
		case 'a' <= l && l <= 'z' && c == l-'a'+'A':
			pos = append(pos, i)
		default:
			return nil, false
		}
	}
	return pos, true
}

type encoder struct{ b []byte }

func (e *encoder) uv(x uint64) { e.b = binary.AppendUvarint(e.b, x) }

func zigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

type ptrKey struct {
	from, to uint32
	rel      Rel
	src, dst uint8
}

// encodeCore returns the uncompressed core part.
func (d *Data) encodeCore() ([]byte, error) {
	// Sense number and tag count per (lemma, synset).
	type sense struct{ num, tag uint32 }
	senses := map[[2]uint32]sense{}
	for li, ss := range d.Senses {
		var last POS
		num := uint32(0)
		for _, s := range ss {
			if p := d.Synsets[s.Synset].POS; p != last {
				last, num = p, 0
			}
			num++
			senses[[2]uint32{uint32(li), s.Synset}] = sense{num, s.TagCount}
		}
	}
	// Pointers: one of each pair of inverses is stored.
	all := map[ptrKey]bool{}
	for i, s := range d.Synsets {
		for _, p := range s.Pointers {
			all[ptrKey{uint32(i), p.Target, p.Rel, p.Source, p.Dest}] = true
		}
	}
	type stored struct {
		Pointer
		flag byte
	}
	ptrs := make([][]stored, len(d.Synsets))
	nPtrs := 0
	for i, s := range d.Synsets {
		for _, p := range s.Pointers {
			k := ptrKey{uint32(i), p.Target, p.Rel, p.Source, p.Dest}
			inv := ptrKey{p.Target, uint32(i), p.Rel.inverse(), p.Dest, p.Source}
			switch {
			case inv == k || !all[inv]:
				ptrs[i] = append(ptrs[i], stored{p, 0})
			case canonical(k):
				ptrs[i] = append(ptrs[i], stored{p, relInverse})
			default:
				continue // implied by the inverse
			}
			nPtrs++
		}
	}

	e := &encoder{}
	nWords := 0
	for _, s := range d.Synsets {
		nWords += len(s.Words)
	}
	for _, n := range []int{len(d.Lemmas), len(d.Synsets), nWords, nPtrs} {
		e.uv(uint64(n))
	}
	for _, x := range d.Exceptions {
		e.uv(uint64(len(x)))
	}

	prev := ""
	for _, l := range d.Lemmas {
		shared := 0
		for shared < len(l) && shared < len(prev) && l[shared] == prev[shared] {
			shared++
		}
		e.uv(uint64(shared))
		e.uv(uint64(len(l) - shared))
		prev = l
	}
	prev = ""
	for _, l := range d.Lemmas {
		shared := 0
		for shared < len(l) && shared < len(prev) && l[shared] == prev[shared] {
			shared++
		}
		e.b = append(e.b, l[shared:]...)
		prev = l
	}

	for _, x := range d.Exceptions {
		for _, ex := range x {
			e.uv(uint64(len(ex.Form)))
			e.uv(uint64(len(ex.Base)))
		}
	}
	for _, x := range d.Exceptions {
		for _, ex := range x {
			e.b = append(e.b, ex.Form...)
			e.b = append(e.b, ex.Base...)
		}
	}

	for _, s := range d.Synsets {
		p := byte(s.POS)
		if s.Satellite {
			p = 's'
		}
		e.b = append(e.b, p)
	}
	for _, s := range d.Synsets {
		e.b = append(e.b, s.LexFile)
	}
	var prevOff uint32
	var prevPOS POS
	for _, s := range d.Synsets {
		if s.POS != prevPOS {
			prevOff = 0
		}
		e.uv(uint64(s.Offset - prevOff)) // validate checked the order
		prevOff, prevPOS = s.Offset, s.POS
	}
	for _, s := range d.Synsets {
		e.uv(uint64(len(s.Words)))
	}
	for _, s := range d.Synsets {
		for _, w := range s.Words {
			e.uv(uint64(w.Lemma))
		}
	}
	for i, s := range d.Synsets {
		seen := map[uint32]bool{}
		for _, w := range s.Words {
			if sn, ok := senses[[2]uint32{w.Lemma, uint32(i)}]; ok && !seen[w.Lemma] {
				e.uv(uint64(sn.num))
			} else {
				e.uv(0)
			}
			seen[w.Lemma] = true
		}
	}
	for i, s := range d.Synsets {
		seen := map[uint32]bool{}
		for _, w := range s.Words {
			if sn, ok := senses[[2]uint32{w.Lemma, uint32(i)}]; ok && !seen[w.Lemma] {
				e.uv(uint64(sn.tag))
			} else {
				e.uv(0)
			}
			seen[w.Lemma] = true
		}
	}
	for _, s := range d.Synsets {
		for _, w := range s.Words {
			pos, _ := caseMask(d.Lemmas[w.Lemma], w.Display)
			e.uv(uint64(len(pos)))
			last := 0
			for _, p := range pos {
				e.uv(uint64(p - last))
				last = p
			}
		}
	}

	for _, ps := range ptrs {
		e.uv(uint64(len(ps)))
	}
	for _, ps := range ptrs {
		for _, p := range ps {
			e.b = append(e.b, byte(p.Rel)|p.flag)
		}
	}
	for i, ps := range ptrs {
		for _, p := range ps {
			e.uv(zigzag(int64(p.Target) - int64(i)))
		}
	}
	for _, ps := range ptrs {
		for _, p := range ps {
			e.b = append(e.b, p.Source, p.Dest)
		}
	}
	return e.b, nil
}

// canonical reports whether k is the stored one of a pair of inverse
// pointers: the hypernym side, or for symmetric relations the one from the
// lower synset (lower word at a tie).
func canonical(k ptrKey) bool {
	switch k.rel {
	case Hypernym, InstanceHypernym, DomainTopic:
		return true
	case Hyponym, InstanceHyponym, DomainTopicMember:
		return false
	}
	return k.from < k.to || (k.from == k.to && k.src < k.dst)
}

// glossToken splits a gloss into tokens: runs of ASCII letters and digits,
// or single other bytes. A single space before a token is a flag of the
// token rather than a token.
func glossTokens(g string, fn func(tok string, space bool)) {
	space := false
	for i := 0; i < len(g); {
		c := g[i]
		if c == ' ' && !space {
			space = true
			i++
			continue
		}
		j := i + 1
		if isAlnum(c) {
			for j < len(g) && isAlnum(g[j]) {
				j++
			}
		}
		fn(g[i:j], space)
		space = false
		i = j
	}
	if space {
		fn(" ", false)
	}
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// encodeGlosses returns the uncompressed gloss part.
func (d *Data) encodeGlosses() []byte {
	freq := map[string]int{}
	for _, s := range d.Synsets {
		glossTokens(s.Gloss, func(tok string, _ bool) { freq[tok]++ })
	}
	vocab := make([]string, 0, len(freq))
	for t := range freq {
		vocab = append(vocab, t)
	}
	slices.SortFunc(vocab, func(a, b string) int { return cmp.Or(cmp.Compare(freq[b], freq[a]), strings.Compare(a, b)) })
	id := make(map[string]uint64, len(vocab))
	for i, t := range vocab {
		id[t] = uint64(i)
	}
	e := &encoder{}
	e.uv(uint64(len(d.Synsets)))
	e.uv(uint64(len(vocab)))
	for _, t := range vocab {
		e.uv(uint64(len(t)))
	}
	for _, t := range vocab {
		e.b = append(e.b, t...)
	}
	for _, s := range d.Synsets {
		n := 0
		glossTokens(s.Gloss, func(string, bool) { n++ })
		e.uv(uint64(n))
	}
	for _, s := range d.Synsets {
		glossTokens(s.Gloss, func(tok string, space bool) {
			x := 2 * id[tok]
			if space {
				x++
			}
			e.uv(x)
		})
	}
	return e.b
}

// splitFile returns the two parts of a table file, uncompressing the core;
// the gloss part is returned as stored, with its method.
func splitFile(file []byte) (core []byte, gloss []byte, glossMethod byte, err error) {
	if len(file) < len(magic)+1 || string(file[:len(magic)]) != magic {
		return nil, nil, 0, fmt.Errorf("%w: no %q header", ErrFormat, magic)
	}
	if file[len(magic)] != version {
		return nil, nil, 0, fmt.Errorf("%w: version %d, want %d", ErrFormat, file[len(magic)], version)
	}
	rest := file[len(magic)+1:]
	var parts [2][]byte
	var methods [2]byte
	for i := range parts {
		if len(rest) < 1 {
			return nil, nil, 0, fmt.Errorf("%w: truncated", ErrFormat)
		}
		methods[i] = rest[0]
		n, k := binary.Uvarint(rest[1:])
		if k <= 0 || n > uint64(len(rest)-1-k) {
			return nil, nil, 0, fmt.Errorf("%w: truncated", ErrFormat)
		}
		parts[i] = rest[1+k : 1+k+int(n)]
		rest = rest[1+k+int(n):]
		if methods[i] != methodStored && methods[i] != methodGzip {
			return nil, nil, 0, fmt.Errorf("%w: unknown method %d", ErrFormat, methods[i])
		}
	}
	if len(rest) != 0 {
		return nil, nil, 0, fmt.Errorf("%w: %d bytes after the parts", ErrFormat, len(rest))
	}
	core, err = inflate(parts[0], methods[0])
	if err != nil {
		return nil, nil, 0, err
	}
	return core, parts[1], methods[1], nil
}

func inflate(b []byte, method byte) ([]byte, error) {
	if method == methodStored {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	zr.Multistream(false)
	var out bytes.Buffer
	if isize := gzipSize(b); isize > 0 {
		out.Grow(isize)
	}
	if _, err := out.ReadFrom(zr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return out.Bytes(), nil
}

// gzipSize reads the uncompressed size from a gzip member's trailer, so the
// output buffer is allocated once.
func gzipSize(b []byte) int {
	if len(b) < 18 {
		return 0
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	if n > 1<<28 {
		return 0
	}
	return n + bytes.MinRead
}

// decoder reads the columns of a part; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or corrupt %s", ErrFormat, what)
	}
	d.b = nil
}

func (d *decoder) uv(what string) uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return x
}

// count reads a count and checks it against a sanity bound.
func (d *decoder) count(what string) int {
	x := d.uv(what)
	if x > 1<<26 {
		d.fail(what)
		return 0
	}
	return int(x)
}

// uvs reads n varints into a new slice.
func (d *decoder) uvs(n int, what string) []uint32 {
	if n > len(d.b) { // every varint takes a byte at least
		d.fail(what)
		return make([]uint32, 0)
	}
	out := make([]uint32, n)
	b := d.b
	for i := range out {
		if len(b) > 0 && b[0] < 0x80 { // one-byte values: most of them
			out[i] = uint32(b[0])
			b = b[1:]
			continue
		}
		x, k := binary.Uvarint(b)
		if k <= 0 || x > 1<<32-1 {
			d.fail(what)
			return make([]uint32, n)
		}
		out[i] = uint32(x)
		b = b[k:]
	}
	d.b = b
	return out
}

// starts reads n counts and returns n+1 running starts; the last must be
// total unless total is negative.
func (d *decoder) starts(n int, total int, what string) []uint32 {
	counts := d.uvs(n, what)
	out := make([]uint32, n+1)
	for i, c := range counts {
		out[i+1] = out[i] + c
		if out[i+1] < out[i] {
			d.fail(what)
			return make([]uint32, n+1)
		}
	}
	if d.err == nil && total >= 0 && int(out[n]) != total {
		d.fail(what)
	}
	return out
}

func (d *decoder) bytes(n int, what string) []byte {
	if n < 0 || n > len(d.b) {
		d.fail(what)
		return make([]byte, max(n, 0))
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}
