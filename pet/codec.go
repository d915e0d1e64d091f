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

func (d *dec) str() string { return string(d.bytes()) }

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
	// minCompress is the size below which compression is not tried.
	minCompress = 48
)

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(io.Discard, flate.DefaultCompression)
	return w
}}

var flateReaders = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// pack compresses p when that makes it smaller, with the leading byte.
func pack(p []byte) []byte {
	if len(p) >= minCompress {
		var buf bytes.Buffer
		buf.Grow(len(p)/2 + 16)
		buf.WriteByte(blobFlate)
		w := flateWriters.Get().(*flate.Writer)
		w.Reset(&buf)
		_, err := w.Write(p)
		if err == nil {
			err = w.Close()
		}
		flateWriters.Put(w)
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
	// Deflate rarely shrinks markup below a third: start the output there.
	out := bytes.NewBuffer(make([]byte, 0, min(3*len(p), limit+1)))
	_, err := out.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	if out.Len() > limit {
		return nil, fmt.Errorf("inflated data exceeds %d bytes", limit)
	}
	return out.Bytes(), nil
}
