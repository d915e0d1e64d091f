package pet

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
)

// typeMask is a set of change types, one bit each.
type typeMask uint8

func maskOf(t changedigest.ChangeType) typeMask {
	for i, x := range changedigest.ChangeTypes {
		if x == t {
			return 1 << i
		}
	}
	return 0
}

func masks(ts []changedigest.ChangeType) typeMask {
	var m typeMask
	for _, t := range ts {
		m |= maskOf(t)
	}
	return m
}

func (m typeMask) types() []changedigest.ChangeType {
	var out []changedigest.ChangeType
	for i, t := range changedigest.ChangeTypes {
		if m&(1<<i) != 0 {
			out = append(out, t)
		}
	}
	return out
}

// changeMask is the set of types of a change list.
func changeMask(cs []changedigest.Change) typeMask {
	var m typeMask
	for _, c := range cs {
		m |= maskOf(c.Type)
	}
	return m
}

// trackMeta is the state of one watch's track: versions Oldest..Latest
// are stored (retention removes the oldest first, so there are no holes).
type trackMeta struct {
	Oldest, Latest int
	// NextSeg numbers the distinct segments of the watch.
	NextSeg uint64
}

func (m trackMeta) count() int {
	if m.Latest == 0 {
		return 0
	}
	return m.Latest - m.Oldest + 1
}

func (m trackMeta) encode() []byte {
	var e enc
	e.uint(uint64(m.Oldest))
	e.uint(uint64(m.Latest))
	e.uint(m.NextSeg)
	return e.b
}

func decodeTrack(v []byte) (trackMeta, error) {
	d := dec{b: v}
	m := trackMeta{Oldest: int(d.uint()), Latest: int(d.uint()), NextSeg: d.uint()}
	return m, d.err
}

// segRec is one distinct segment (by hash) of a watch's track, with the
// span of versions it was seen in. Only segments that appear or disappear
// are rewritten when a version is added.
type segRec struct {
	// Live is true while the segment is in the latest version.
	Live bool
	// FirstSeq is the oldest stored version holding the segment;
	// FirstIndex and FirstPath are its place there ("" = Path), Types the
	// types of the changes that brought it.
	FirstSeq   int
	FirstTime  time.Time
	FirstIndex int
	FirstPath  string
	Types      typeMask
	// LastSeq is the newest version holding it, once it is not live.
	LastSeq  int
	LastTime time.Time
	// Hash, Index, Path and Text are the segment as first stored; they
	// never change, and a version records only where it differs from them.
	Hash  string
	Index int
	Path  string
	Text  string
}

// firstPath is the segment's path in its first stored version.
func (r *segRec) firstPath() string {
	if r.FirstPath != "" {
		return r.FirstPath
	}
	return r.Path
}

const (
	segIndexable = 1 << iota // has text to index
	segLive
)

func indexable(text string) bool { return strings.TrimSpace(text) != "" }

func (r *segRec) encode() []byte {
	var e enc
	var flags byte
	if indexable(r.Text) {
		flags |= segIndexable
	}
	if r.Live {
		flags |= segLive
	}
	e.byte(flags)
	e.uint(uint64(r.FirstSeq))
	e.time(r.FirstTime)
	e.uint(uint64(r.FirstIndex))
	e.str(r.FirstPath)
	e.byte(byte(r.Types))
	e.uint(uint64(r.LastSeq))
	e.time(r.LastTime)
	e.uint(uint64(r.Index))
	e.str(r.Hash)
	e.str(r.Path)
	e.bytes(pack([]byte(r.Text)))
	return e.b
}

func decodeSeg(v []byte) (*segRec, error) {
	d := dec{b: v}
	flags := d.byte()
	r := &segRec{Live: flags&segLive != 0}
	r.FirstSeq = int(d.uint())
	r.FirstTime = d.time()
	r.FirstIndex = int(d.uint())
	r.FirstPath = d.str()
	r.Types = typeMask(d.byte())
	r.LastSeq = int(d.uint())
	r.LastTime = d.time()
	r.Index = int(d.uint())
	r.Hash = d.str()
	r.Path = d.str()
	packed := d.bytes()
	if d.err != nil {
		return nil, d.err
	}
	text, err := unpack(packed, maxText)
	if err != nil {
		return nil, err
	}
	r.Text = string(text)
	return r, nil
}

// maxText bounds one segment's text.
const maxText = 4 << 20

// versionHeader is the part of a version record that is not the segment
// table: fetch metadata and the change set.
type versionHeader struct {
	FetchedAt    int64                 `json:"t"`
	Status       int                   `json:"s,omitempty"`
	ETag         string                `json:"e,omitempty"`
	LastModified string                `json:"lm,omitempty"`
	ContentType  string                `json:"ct,omitempty"`
	FinalURL     string                `json:"u,omitempty"`
	Kind         changedigest.Kind     `json:"k,omitempty"`
	Title        string                `json:"ti,omitempty"`
	Size         int                   `json:"n"`
	BodyHash     string                `json:"bh,omitempty"`
	Similarity   float64               `json:"sim,omitempty"`
	Changes      []changedigest.Change `json:"c,omitempty"`
	// Sum is the first 8 bytes of the body's SHA-256, checked on read.
	Sum uint64 `json:"sum"`
}

// segRef is one segment of a version: the watch's segment id and what
// differs in this version from the segment record.
type segRef struct {
	id         uint64
	start, end int
	path       string
	index      int
	text       string
	flags      byte
}

const (
	refRanged = 1 << iota
	refPath
	refIndex
	refText
)

// versionRec is one stored version: header, layout chunk, segment table
// and the chunks of the body in order.
type versionRec struct {
	hdr    versionHeader
	layout uint64
	segs   []segRef
	chunks []uint64
}

const recordFormat = 1

// encode writes the record: a format byte, then the packed body. Ids are
// delta-coded, so a version that shares most segments and chunks with the
// one before costs about a byte per segment and chunk.
func (r *versionRec) encode() ([]byte, error) {
	hdr, err := json.Marshal(r.hdr)
	if err != nil {
		return nil, err
	}
	var e enc
	e.bytes(hdr)
	e.uint(r.layout)
	e.uint(uint64(len(r.segs)))
	var prevID uint64
	prevEnd := 0
	for _, s := range r.segs {
		e.int(int64(s.id - prevID))
		prevID = s.id
		e.byte(s.flags)
		if s.flags&refRanged != 0 {
			e.uint(uint64(s.start - prevEnd))
			e.uint(uint64(s.end - s.start))
			prevEnd = s.end
		}
		if s.flags&refPath != 0 {
			e.str(s.path)
		}
		if s.flags&refIndex != 0 {
			e.int(int64(s.index))
		}
		if s.flags&refText != 0 {
			e.str(s.text)
		}
	}
	e.uint(uint64(len(r.chunks)))
	prevID = 0
	for _, c := range r.chunks {
		e.int(int64(c - prevID))
		prevID = c
	}
	return append([]byte{recordFormat}, pack(e.b)...), nil
}

func decodeVersion(v []byte) (*versionRec, error) {
	if len(v) < 2 || v[0] != recordFormat {
		return nil, fmt.Errorf("unknown version record format")
	}
	body, err := unpack(v[1:], 1<<30)
	if err != nil {
		return nil, err
	}
	d := dec{b: body}
	r := &versionRec{}
	hdr := d.bytes()
	if d.err == nil {
		if err := json.Unmarshal(hdr, &r.hdr); err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
	}
	r.layout = d.uint()
	n := d.count()
	r.segs = make([]segRef, n)
	var prevID uint64
	prevEnd := 0
	for i := range r.segs {
		s := &r.segs[i]
		s.id = prevID + uint64(d.int())
		prevID = s.id
		s.flags = d.byte()
		s.start, s.end, s.index = -1, -1, i
		if s.flags&refRanged != 0 {
			s.start = prevEnd + int(d.uint())
			s.end = s.start + int(d.uint())
			prevEnd = s.end
		}
		if s.flags&refPath != 0 {
			s.path = d.str()
		}
		if s.flags&refIndex != 0 {
			s.index = int(d.int())
		}
		if s.flags&refText != 0 {
			s.text = d.str()
		}
	}
	n = d.count()
	r.chunks = make([]uint64, n)
	prevID = 0
	for i := range r.chunks {
		r.chunks[i] = prevID + uint64(d.int())
		prevID = r.chunks[i]
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Errorf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// segIDs is the set of segment ids of a version.
func (r *versionRec) segIDs() map[uint64]bool {
	m := make(map[uint64]bool, len(r.segs))
	for _, s := range r.segs {
		m[s.id] = true
	}
	return m
}

// timeOf decodes a header time.
func timeOf(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
