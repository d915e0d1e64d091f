package pet

import (
	"bytes"
	"compress/flate"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"

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
	// Text is loaded only when asked for (decodeSeg).
	Hash  string
	Index int
	Path  string
	Text  string
	// Dict is the chunk (the segment's HTML) that the stored text was
	// deflated against, 0 for none; the record holds a reference on it.
	Dict uint64
	// packed is the stored text; hasText says it is not blank.
	packed  []byte
	hasText bool
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
	if r.hasText {
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
	e.uint(r.Dict)
	e.bytes(r.packed)
	return e.b
}

// decodeSeg decodes a segment record, with its text when withText.
func decodeSeg(tx *bolt.Tx, v []byte, withText bool) (*segRec, error) {
	d := dec{b: v}
	flags := d.byte()
	r := &segRec{Live: flags&segLive != 0, hasText: flags&segIndexable != 0}
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
	r.Dict = d.uint()
	r.packed = bytes.Clone(d.bytes())
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Errorf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return nil, d.err
	}
	if withText {
		if err := r.readText(tx, nil); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readText sets r.Text from its packed form. dict, when not nil, is the
// bytes of chunk r.Dict, which is then not read.
func (r *segRec) readText(tx *bolt.Tx, dict []byte) error {
	if dict == nil && r.Dict != 0 {
		var err error
		if dict, err = readChunk(tx, r.Dict, maxChunk); err != nil {
			return err
		}
	}
	text, err := unpackDict(r.packed, dict, maxText)
	if err != nil {
		return err
	}
	// unpackDict's bytes are new and nothing else holds them.
	r.Text = unsafe.String(unsafe.SliceData(text), len(text))
	return nil
}

// snapshot is the version the header describes, without its segments,
// layout or screenshot.
func (h *versionHeader) snapshot(watchID int64, seq int) *changedigest.Snapshot {
	return &changedigest.Snapshot{
		WatchID: watchID, Seq: seq, FetchedAt: timeOf(h.FetchedAt),
		Status: h.Status, ETag: h.ETag, LastModified: h.LastModified, ContentType: h.ContentType,
		FinalURL: h.FinalURL, Kind: h.Kind, Title: h.Title, Zone: h.Zone, Size: h.Size, BodyHash: h.BodyHash,
		Changes: h.Changes, Similarity: h.Similarity, Significance: h.Significance, Print: h.Print,
		FeedItems: h.FeedItems, Value: h.Value,
	}
}

// maxText bounds one segment's text.
const maxText = 4 << 20

// versionHeader is the part of a version record that is not the segment
// table: fetch metadata and the change set.
type versionHeader struct {
	FetchedAt    int64
	Status       int
	ETag         string
	LastModified string
	ContentType  string
	FinalURL     string
	Kind         changedigest.Kind
	Title        string
	Zone         string
	Size         int
	BodyHash     string
	Similarity   float64
	Significance float64
	Print        *changedigest.TextPrint
	FeedItems    int
	Changes      []changedigest.Change
	// Value is the value the watch read from the version; a record with
	// one is written in recordFormatExt, whose header ends with an
	// extension byte of flags (extValue) and the fields they announce.
	Value *changedigest.Value
	// ext says the header has the extension (records in recordFormatExt).
	ext bool
	// CRC is the body's CRC-32C, checked on read when hasCRC. Records
	// written before it have Sum instead, the first 8 bytes of the body's
	// SHA-256, unless BodyHash is the body's MD5 (then that is checked).
	CRC    uint32
	hasCRC bool
	Sum    uint64
	// bodyMD5 says that BodyHash is a hex MD5, kept as its 16 bytes; in
	// a record without CRC, the MD5 of the body.
	bodyMD5 bool
}

// Header flags.
const (
	hdrBodyMD5 = 1 << iota // BodyHash is the body's MD5, stored as 16 bytes
	hdrSimilarity
	hdrZone         // a zone selector follows the similarity
	hdrSignificance // the significance follows the zone
	hdrPrint        // the text print follows the significance
	hdrCRC          // the body's CRC-32C follows its hash, in place of Sum
	hdrFeedItems    // a feed's item count past the item limit follows the print
	// bits from the top down for later fields
	hdrPlaces = 1 << 7 // each change's place (Where) follows the changes
)

// Change flags: which optional fields follow.
const (
	chOldItem = 1 << iota
	chNewItem
	chTitle
	chLink
	chSimilarity
	chNoise // the noise reason follows the similarity
	// bits from the top down for later fields, so that fields added in
	// parallel do not collide
	chTruncated = 1 << 7 // full old and new lengths follow
	chContext   = 1 << 6 // the words before and after follow
)

func (h *versionHeader) encode(e *enc) {
	var flags byte
	if h.bodyMD5 {
		flags |= hdrBodyMD5
	}
	if h.Similarity != 0 {
		flags |= hdrSimilarity
	}
	if h.Zone != "" {
		flags |= hdrZone
	}
	if h.Significance != 0 {
		flags |= hdrSignificance
	}
	if h.Print != nil {
		flags |= hdrPrint
	}
	if h.hasCRC {
		flags |= hdrCRC
	}
	if h.FeedItems > 0 {
		flags |= hdrFeedItems
	}
	for _, c := range h.Changes {
		if c.Where != "" {
			flags |= hdrPlaces
		}
	}
	e.byte(flags)
	e.int(h.FetchedAt)
	e.int(int64(h.Status))
	for _, s := range []string{h.ETag, h.LastModified, h.ContentType, h.FinalURL, string(h.Kind), h.Title} {
		e.str(s)
	}
	e.uint(uint64(h.Size))
	if h.bodyMD5 {
		b, _ := hex.DecodeString(h.BodyHash)
		e.b = append(e.b, b...)
	} else {
		e.str(h.BodyHash)
	}
	if h.hasCRC {
		e.b = binary.BigEndian.AppendUint32(e.b, h.CRC)
	} else if !h.bodyMD5 {
		e.b = binary.BigEndian.AppendUint64(e.b, h.Sum)
	}
	if h.Similarity != 0 {
		e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(h.Similarity))
	}
	if h.Zone != "" {
		e.str(h.Zone)
	}
	if h.Significance != 0 {
		e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(h.Significance))
	}
	if p := h.Print; p != nil {
		e.uint(uint64(p.Version))
		e.uint(uint64(p.MainWords))
		e.uint(uint64(p.AllWords))
		e.b = binary.BigEndian.AppendUint64(e.b, p.MainHash)
		e.b = binary.BigEndian.AppendUint64(e.b, p.AllHash)
	}
	if h.FeedItems > 0 {
		e.uint(uint64(h.FeedItems))
	}
	e.uint(uint64(len(h.Changes)))
	for _, c := range h.Changes {
		var cf byte
		if c.OldItem != nil {
			cf |= chOldItem
		}
		if c.NewItem != nil {
			cf |= chNewItem
		}
		if c.Title != "" {
			cf |= chTitle
		}
		if c.Link != "" {
			cf |= chLink
		}
		if c.Similarity != nil {
			cf |= chSimilarity
		}
		if c.Noise != "" {
			cf |= chNoise
		}
		if c.Truncated {
			cf |= chTruncated
		}
		if c.Before != "" || c.After != "" {
			cf |= chContext
		}
		e.byte(cf)
		e.int(int64(c.Segment))
		e.str(c.Path)
		e.str(string(c.Type))
		e.str(string(c.Op))
		e.str(c.OldText)
		e.str(c.NewText)
		if c.OldItem != nil {
			e.int(int64(*c.OldItem))
		}
		if c.NewItem != nil {
			e.int(int64(*c.NewItem))
		}
		if c.Title != "" {
			e.str(c.Title)
		}
		if c.Link != "" {
			e.str(c.Link)
		}
		if c.Similarity != nil {
			e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(*c.Similarity))
		}
		if c.Noise != "" {
			e.str(c.Noise)
		}
		if c.Truncated {
			e.uint(uint64(c.OldLen))
			e.uint(uint64(c.NewLen))
		}
		if c.Before != "" || c.After != "" {
			e.str(c.Before)
			e.str(c.After)
		}
	}
	if flags&hdrPlaces != 0 {
		for _, c := range h.Changes {
			e.str(c.Where)
		}
	}
	if h.ext {
		var xf byte
		var value []byte
		if h.Value != nil {
			// A number that is not finite does not marshal: the value is
			// then left out.
			if b, err := json.Marshal(h.Value); err == nil {
				xf, value = xf|extValue, b
			}
		}
		e.byte(xf)
		if xf&extValue != 0 {
			e.str(string(value))
		}
	}
}

// Extension flags (records in recordFormatExt): which fields follow the
// changes' places.
const (
	extValue = 1 << iota // the version's value follows, as JSON
)

func (d *dec) fixed(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail(errShort)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) float() float64 {
	p := d.fixed(8)
	if p == nil {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(p))
}

func (h *versionHeader) decode(d *dec) {
	flags := d.byte()
	h.FetchedAt = d.int()
	h.Status = int(d.int())
	h.ETag, h.LastModified, h.ContentType, h.FinalURL = d.str(), d.str(), d.str(), d.str()
	h.Kind, h.Title = changedigest.Kind(d.str()), d.str()
	h.Size = int(d.uint())
	h.bodyMD5, h.hasCRC = flags&hdrBodyMD5 != 0, flags&hdrCRC != 0
	if h.bodyMD5 {
		h.BodyHash = hex.EncodeToString(d.fixed(md5.Size))
	} else {
		h.BodyHash = d.str()
	}
	if h.hasCRC {
		if p := d.fixed(4); p != nil {
			h.CRC = binary.BigEndian.Uint32(p)
		}
	} else if !h.bodyMD5 {
		if p := d.fixed(8); p != nil {
			h.Sum = binary.BigEndian.Uint64(p)
		}
	}
	if flags&hdrSimilarity != 0 {
		h.Similarity = d.float()
	}
	if flags&hdrZone != 0 {
		h.Zone = d.str()
	}
	if flags&hdrSignificance != 0 {
		h.Significance = d.float()
	}
	if flags&hdrPrint != 0 {
		p := &changedigest.TextPrint{Version: int(d.uint()), MainWords: int(d.uint()), AllWords: int(d.uint())}
		if b := d.fixed(16); b != nil {
			p.MainHash, p.AllHash = binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])
		}
		h.Print = p
	}
	if flags&hdrFeedItems != 0 {
		h.FeedItems = int(d.uint())
	}
	n := d.count()
	if n > 0 {
		h.Changes = make([]changedigest.Change, n)
	}
	for i := range h.Changes {
		c := &h.Changes[i]
		cf := d.byte()
		c.Segment = int(d.int())
		c.Path = d.str()
		c.Type = changedigest.ChangeType(d.str())
		c.Op = changedigest.Op(d.str())
		c.OldText, c.NewText = d.str(), d.str()
		if cf&chOldItem != 0 {
			v := int(d.int())
			c.OldItem = &v
		}
		if cf&chNewItem != 0 {
			v := int(d.int())
			c.NewItem = &v
		}
		if cf&chTitle != 0 {
			c.Title = d.str()
		}
		if cf&chLink != 0 {
			c.Link = d.str()
		}
		if cf&chSimilarity != 0 {
			v := d.float()
			c.Similarity = &v
		}
		if cf&chNoise != 0 {
			c.Noise = d.str()
		}
		if cf&chTruncated != 0 {
			c.Truncated = true
			c.OldLen, c.NewLen = int(d.uint()), int(d.uint())
		}
		if cf&chContext != 0 {
			c.Before, c.After = d.str(), d.str()
		}
	}
	if flags&hdrPlaces != 0 {
		for i := range h.Changes {
			h.Changes[i].Where = d.str()
		}
	}
	if h.ext {
		xf := d.byte()
		if xf&extValue != 0 {
			raw := d.str()
			if d.err == nil {
				var v changedigest.Value
				if err := json.Unmarshal([]byte(raw), &v); err != nil {
					d.fail(fmt.Errorf("version value: %w", err))
				} else {
					h.Value = &v
				}
			}
		}
	}
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
	// lens are the chunks' lengths, to read a byte range of the body
	// without the chunks before it; nil in records written before them.
	lens []int
}

const recordFormat = 1

// recordFormatExt is recordFormat with a header extension (versionHeader.ext);
// records without extended fields are written as before.
const recordFormatExt = 2

// encode writes the record: a format byte, then the packed body. Ids are
// delta-coded, so a version that shares most segments and chunks with the
// one before costs about a byte per segment and chunk.
func (r *versionRec) encode() ([]byte, error) {
	var e enc
	r.hdr.ext = r.hdr.Value != nil
	r.hdr.encode(&e)
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
	// The lengths come last, so that records without them read as before.
	if len(r.lens) == len(r.chunks) && len(r.lens) > 0 {
		for _, n := range r.lens {
			e.uint(uint64(n))
		}
	}
	format := byte(recordFormat)
	if r.hdr.ext {
		format = recordFormatExt
	}
	return append([]byte{format}, pack(e.b)...), nil
}

// decodeHeader decodes the header alone of a stored version record: it
// comes first, so only as much of the record is inflated as it takes
// (its changes, a few kilobytes), not the segment list after it. The
// header's strings share one copy of its bytes.
func decodeHeader(v []byte) (*versionHeader, error) {
	if len(v) < 2 || v[0] != recordFormat && v[0] != recordFormatExt {
		return nil, fmt.Errorf("unknown version record format")
	}
	ext := v[0] == recordFormatExt
	if v[1] != blobFlate {
		rec, err := decodeVersion(v)
		if err != nil {
			return nil, err
		}
		return &rec.hdr, nil
	}
	r := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(v[2:]), nil); err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	bp := inflateBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	defer func() {
		if cap(buf) <= keepInflateBuf {
			*bp = buf[:0]
			inflateBufs.Put(bp)
		}
	}()
	// Inflate a prefix, try the header on it, and inflate more until it
	// decodes or the record ends (where the error is the record's).
	want := 4 << 10
	for {
		if cap(buf) < want {
			buf = append(buf[:cap(buf)], make([]byte, want-cap(buf))...)[:len(buf)]
		}
		n, err := io.ReadFull(r, buf[len(buf):want])
		buf = buf[:len(buf)+n]
		end := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !end {
			return nil, fmt.Errorf("inflate: %w", err)
		}
		// This try's strings share buf, which is reused: it is dropped.
		try := versionHeader{ext: ext}
		d := dec{b: buf, alias: true}
		try.decode(&d)
		if d.err == nil {
			// Decoded again from a copy of its bytes alone, which its
			// strings then share.
			h := &versionHeader{ext: ext}
			d = dec{b: bytes.Clone(buf[:len(buf)-len(d.b)]), alias: true}
			h.decode(&d)
			return h, d.err
		}
		if end {
			return nil, d.err
		}
		if want *= 2; want > 1<<30 {
			return nil, fmt.Errorf("version header exceeds %d bytes", 1<<30)
		}
	}
}

func decodeVersion(v []byte) (*versionRec, error) {
	if len(v) < 2 || v[0] != recordFormat && v[0] != recordFormatExt {
		return nil, fmt.Errorf("unknown version record format")
	}
	body, err := unpack(v[1:], 1<<30)
	if err != nil {
		return nil, err
	}
	d := dec{b: body}
	r := &versionRec{hdr: versionHeader{ext: v[0] == recordFormatExt}}
	r.hdr.decode(&d)
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
	if d.err == nil && len(d.b) != 0 && n > 0 {
		r.lens = make([]int, n)
		size := 0
		for i := range r.lens {
			r.lens[i] = int(d.uint())
			size += r.lens[i]
		}
		if d.err == nil && size != r.hdr.Size {
			d.fail(fmt.Errorf("chunk lengths add up to %d bytes, not the body's %d", size, r.hdr.Size))
		}
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
