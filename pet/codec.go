package pet

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unsafe"
)

// key joins 64-bit integers into a big-endian key, so keys sort by them.
func key(ns ...uint64) []byte {
	b := make([]byte, 8*len(ns))
	for i, n := range ns {
		binary.BigEndian.PutUint64(b[8*i:], n)
	}
	return b
}

// id64 is key for int64 ids (always positive).
func id64(ns ...int64) []byte {
	b := make([]byte, 8*len(ns))
	for i, n := range ns {
		binary.BigEndian.PutUint64(b[8*i:], uint64(n))
	}
	return b
}

// at returns the i-th 64-bit integer of a key made by key or id64.
func at(k []byte, i int) int64 {
	if len(k) < 8*(i+1) {
		return -1
	}
	return int64(binary.BigEndian.Uint64(k[8*i:]))
}

// timeKey encodes a time so that keys sort in time order; times before
// 1970 sort first, together.
func timeKey(t time.Time) uint64 {
	if t.IsZero() || t.Unix() < 0 {
		return 0
	}
	if t.Year() >= 2262 {
		return 1<<63 - 1
	}
	return uint64(t.UnixNano())
}

func putUvarint(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }

func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// enc builds a binary record.
type enc struct{ b []byte }

func (e *enc) uint(n uint64)  { e.b = binary.AppendUvarint(e.b, n) }
func (e *enc) int(n int64)    { e.b = binary.AppendVarint(e.b, n) }
func (e *enc) byte(c byte)    { e.b = append(e.b, c) }
func (e *enc) bytes(p []byte) { e.uint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)   { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) time(t time.Time) {
	if t.IsZero() {
		e.int(0)
		return
	}
	e.int(t.UnixNano())
}

var errShort = errors.New("record is truncated")

// dec reads a record written by enc; the first failure sticks in err.
type dec struct {
	b   []byte
	err error
	// alias makes str return strings that share b's bytes, for a b
	// that is never written again: one allocation for a whole record
	// instead of one per string.
	alias bool
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *dec) uint() uint64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[k:]
	return n
}

// count reads the length of a list whose items take at least one byte
// each, and checks it against what is left.
func (d *dec) count() int {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail(fmt.Errorf("count %d exceeds the record", n))
		return 0
	}
	return int(n)
}

func (d *dec) int() int64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[k:]
	return n
}

func (d *dec) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *dec) bytes() []byte {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) str() string {
	p := d.bytes()
	if d.alias && len(p) > 0 {
		return unsafe.String(&p[0], len(p))
	}
	return string(p)
}

func (d *dec) time() time.Time {
	n := d.int()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Compression of stored blobs: one leading byte says how the rest is stored.
const (
	blobRaw   = 0
	blobFlate = 1
	// blobDict is deflated with a preset dictionary kept elsewhere (a
	// segment's text against the segment's HTML).
	blobDict = 2
	// blobSub is a text stored as the runs of a dictionary it is made of
	// (see subPack and runsUnpack).
	blobSub = 4
	// minCompress is the size below which compression is not tried.
	minCompress = 48
	// smallPack is the size below which pack deflates at BestSpeed: the
	// default level clears 640 KB of hash tables for every blob, which
	// costs more than the level gains on a short text.
	smallPack = 4 << 10
)

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(io.Discard, flate.DefaultCompression)
	return w
}}

var fastWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(io.Discard, flate.BestSpeed)
	return w
}}

var flateReaders = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// pack compresses p when that makes it smaller, with the leading byte.
func pack(p []byte) []byte {
	if len(p) >= minCompress {
		var buf bytes.Buffer
		buf.Grow(len(p)/2 + 16)
		buf.WriteByte(blobFlate)
		pool := &flateWriters
		if len(p) < smallPack {
			pool = &fastWriters
		}
		w := pool.Get().(*flate.Writer)
		w.Reset(&buf)
		_, err := w.Write(p)
		if err == nil {
			err = w.Close()
		}
		pool.Put(w)
		if err == nil && buf.Len() < len(p)+1 {
			return buf.Bytes()
		}
	}
	out := make([]byte, 1+len(p))
	out[0] = blobRaw
	copy(out[1:], p)
	return out
}

// packDict compresses p with a preset dictionary when that beats pack.
func packDict(p, dict []byte) []byte {
	plain := pack(p)
	if len(dict) == 0 || len(p) < minCompress {
		return plain
	}
	var buf bytes.Buffer
	buf.WriteByte(blobDict)
	w, err := flate.NewWriterDict(&buf, flate.DefaultCompression, dict)
	if err != nil {
		return plain
	}
	if _, err := w.Write(p); err != nil || w.Close() != nil || buf.Len() >= len(plain) {
		return plain
	}
	return buf.Bytes()
}

// unpack reverses pack. limit bounds the output, against corrupt data.
func unpack(p []byte, limit int) ([]byte, error) { return unpackDict(p, nil, limit) }

// unpackDict reverses pack and packDict; dict is the dictionary packDict
// was given (nil for blobs made by pack).
func unpackDict(p, dict []byte, limit int) ([]byte, error) {
	if len(p) == 0 {
		return nil, errShort
	}
	switch p[0] {
	case blobRaw:
		if len(p)-1 > limit {
			return nil, fmt.Errorf("blob exceeds %d bytes", limit)
		}
		return bytes.Clone(p[1:]), nil
	case blobFlate:
		dict = nil
	case blobDict:
		if dict == nil {
			return nil, fmt.Errorf("blob needs a dictionary")
		}
	case blobSub:
		if dict == nil {
			return nil, fmt.Errorf("blob needs a dictionary")
		}
		return runsUnpack(p[1:], dict, limit)
	default:
		return nil, fmt.Errorf("unknown blob encoding %d", p[0])
	}
	// A decompressor holds a 32 KB window and its tables: reused, not
	// made for every piece read.
	r := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(p[1:]), dict); err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return inflate(r, limit)
}

// inflateBufs hold inflated bytes while their size is not known yet.
var inflateBufs = sync.Pool{New: func() any { return new([]byte) }}

// keepInflateBuf is the largest buffer put back in inflateBufs.
const keepInflateBuf = 1 << 20

// inflate reads r to its end into a reused buffer and returns a copy of
// exactly the bytes read: growing a buffer of its own by doubling would
// allocate, and touch, about twice as much for every piece read. More
// than limit bytes is an error.
func inflate(r io.Reader, limit int) ([]byte, error) {
	bp := inflateBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 32<<10)
	}
	var err error
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				break
			}
			buf = append(buf, 0)[:len(buf)]
		}
		var n int
		n, err = r.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if err != nil || len(buf) > limit {
			break
		}
	}
	var out []byte
	switch {
	case err != nil && err != io.EOF:
		err = fmt.Errorf("inflate: %w", err)
	case len(buf) > limit:
		err = fmt.Errorf("inflated data exceeds %d bytes", limit)
	default:
		err = nil
		out = bytes.Clone(buf) // buf is never nil: an empty blob reads as []byte{}
	}
	if cap(buf) <= keepInflateBuf {
		*bp = buf[:0]
		inflateBufs.Put(bp)
	}
	return out, err
}

// subPack stores a text that is mostly made of runs of dict, in order (a
// segment's visible text against its HTML: the text nodes with their
// entities decoded and their white space collapsed), as a list of
// operations: copy these bytes, skip that many bytes of dict, copy that
// many bytes of it. It returns nil when p is not mostly made of dict;
// it costs a few passes over p and dict, not a compressor's tables.
//
// The runs are encoded as runsUnpack reads them.
func subPack(p, dict []byte) []byte {
	const (
		anchor = 8       // bytes of p looked up in dict
		near   = 2 << 10 // how far ahead in dict a run is first looked for
		misses = 1024    // literal bytes after which p is not made of dict
	)
	out := make([]byte, 1, 16+len(p)/4)
	out[0] = blobSub
	emit := func(lit []byte, skip, n int) { out = appendRun(out, lit, skip, n) }
	i, j, lit, miss, streak := 0, 0, 0, 0, 0
	for i < len(p) {
		m := min(anchor, len(p)-i)
		if m < 4 {
			break // a short tail is kept as it is
		}
		if c := p[i]; c == ' ' || c == '\n' || c == '\t' {
			// A space in the text is often white space collapsed or put
			// between two elements: kept as it is, and the run looked
			// up from the word after it.
			i++
			continue
		}
		rest := dict[j:]
		k := bytes.Index(rest[:min(len(rest), near)], p[i:i+m])
		if k < 0 && streak >= 2 && streak&(streak-1) == 0 && len(rest) > near {
			// Past a long stretch of markup (a script, an inline image):
			// look through the rest of dict, after 2, 4, 8… misses in a
			// row.
			if k = bytes.Index(rest[near:], p[i:i+m]); k >= 0 {
				k += near
			}
		}
		if k < 0 {
			i++
			streak++
			if miss++; miss > misses {
				return nil
			}
			continue
		}
		streak = 0
		n := m
		for i+n < len(p) && j+k+n < len(dict) && p[i+n] == dict[j+k+n] {
			n++
		}
		emit(p[lit:i], k, n)
		i += n
		j += k + n
		lit = i
	}
	if lit < len(p) {
		emit(p[lit:], 0, 0)
	}
	if len(out) >= len(p)+1 {
		return nil
	}
	return out
}

// appendRun appends one operation of runs: copy lit, move skip bytes
// (back when negative) in the dictionary, copy n bytes of it. Encoding:
// uvarint len(lit), lit, varint skip, uvarint n.
func appendRun(out, lit []byte, skip, n int) []byte {
	out = binary.AppendUvarint(out, uint64(len(lit)))
	out = append(out, lit...)
	out = binary.AppendVarint(out, int64(skip))
	return binary.AppendUvarint(out, uint64(n))
}

// runsUnpack rebuilds the bytes that runs (see appendRun) make of dict.
// Corrupt runs give an error, never a read outside dict or more than
// limit bytes.
func runsUnpack(p, dict []byte, limit int) ([]byte, error) {
	// The first pass checks the runs and sums their lengths, so that the
	// output is made once, at its size.
	size, err := runsWalk(p, dict, limit, nil)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, size)
	_, err = runsWalk(p, dict, limit, func(b []byte) { out = append(out, b...) })
	return out, err
}

// runsWalk reads the runs of p against dict, calling emit (when not nil)
// with each stretch of output in order, and returns the output's size.
func runsWalk(p, dict []byte, limit int, emit func([]byte)) (int, error) {
	j, size := 0, 0
	for len(p) > 0 {
		n, w := binary.Uvarint(p)
		if w <= 0 || n > uint64(len(p)-w) {
			return 0, fmt.Errorf("bad runs: literal of %d bytes", n)
		}
		if emit != nil {
			emit(p[w : w+int(n)])
		}
		size += int(n)
		p = p[w+int(n):]
		skip, w := binary.Varint(p)
		if w <= 0 {
			return 0, fmt.Errorf("bad runs: no skip")
		}
		p = p[w:]
		cp, w := binary.Uvarint(p)
		if w <= 0 {
			return 0, fmt.Errorf("bad runs: no copy")
		}
		p = p[w:]
		if skip < -int64(j) || skip > int64(len(dict)-j) || cp > uint64(len(dict)-j-int(skip)) {
			return 0, fmt.Errorf("bad runs: outside the dictionary")
		}
		j += int(skip)
		if emit != nil {
			emit(dict[j : j+int(cp)])
		}
		size += int(cp)
		j += int(cp)
		if size > limit {
			return 0, fmt.Errorf("runs exceed %d bytes", limit)
		}
	}
	return size, nil
}

// deltaRuns returns runs (see appendRun) that make p of base, for a
// changed piece of a page against the piece that held its place in the
// previous version. Blocks of base are indexed every 16 bytes, so any
// stretch of 24 bytes or more that p shares with base is copied, wherever
// it moved; the rest is literal. It costs about one map lookup per literal
// byte, where deflating against base as a preset dictionary built a
// compressor of a megabyte for every piece.
func deltaRuns(p, base []byte) []byte {
	const block = 16
	if len(base) < block || len(p) < block {
		return nil
	}
	word := func(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
	idx := make(map[uint64]int32, len(base)/block+1)
	for q := 0; q+8 <= len(base); q += block {
		if _, ok := idx[word(base[q:])]; !ok {
			idx[word(base[q:])] = int32(q)
		}
	}
	out := make([]byte, 0, 64)
	i, j, lit := 0, 0, 0
	for i+8 <= len(p) {
		c := -1
		if j+8 <= len(base) && word(p[i:]) == word(base[j:]) {
			c = j // the run goes on where the last one ended
		} else if q, ok := idx[word(p[i:])]; ok {
			c = int(q)
			for i > lit && c > 0 && p[i-1] == base[c-1] {
				i, c = i-1, c-1 // the run began before its indexed block
			}
		}
		if c < 0 {
			i++
			continue
		}
		n := 0
		for i+n < len(p) && c+n < len(base) && p[i+n] == base[c+n] {
			n++
		}
		out = appendRun(out, p[lit:i], c-j, n)
		i += n
		j = c + n
		lit = i
	}
	if lit < len(p) {
		out = appendRun(out, p[lit:], 0, 0)
	}
	return out
}
