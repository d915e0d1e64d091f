package pet

import (
	"bytes"
	"testing"

	"github.com/changedigest/changedigest"
)

// FuzzSplit checks that the chunks of any body, cut at any valid ranges,
// concatenate back to the body, and that no chunk is empty or longer
// than the larger of cdcMax and the segment it stands for.
func FuzzSplit(f *testing.F) {
	f.Add([]byte(page("one", "two", "three")), uint16(10), uint16(40), uint16(60), uint16(90))
	f.Add(bytes.Repeat([]byte("abcdefgh"), 9000), uint16(0), uint16(0), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, a, b, c, d uint16) {
		bounds := []int{int(a), int(b), int(c), int(d)}
		var segs []changedigest.Segment
		prev := 0
		for i := 0; i+1 < len(bounds); i += 2 {
			st, en := bounds[i], bounds[i+1]
			if st < prev || en < st || en > len(body) {
				continue
			}
			segs = append(segs, changedigest.Segment{Hash: "h", Start: st, End: en})
			prev = en
		}
		if err := checkRanges(segs, len(body)); err != nil {
			t.Fatalf("ranges built to be valid are refused: %v", err)
		}
		var joined []byte
		for _, p := range split(body, segs) {
			if len(p.data) == 0 {
				t.Fatal("empty chunk")
			}
			if sum16(p.data) != p.sum {
				t.Fatal("chunk hash does not match its bytes")
			}
			joined = append(joined, p.data...)
		}
		if !bytes.Equal(joined, body) {
			t.Fatalf("chunks join to %d bytes, body has %d", len(joined), len(body))
		}
	})
}

// FuzzDecode feeds arbitrary bytes to every record decoder: they must
// fail cleanly, never panic, and what decodes must encode back to a record
// that decodes the same.
func FuzzDecode(f *testing.F) {
	snap := snapshotOf([]byte(page("alpha", "beta")))
	snap.Changes = []changedigest.Change{{Segment: 1, Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: "beta"}}
	rec := &versionRec{hdr: versionHeader{FetchedAt: 1, Status: 200, Size: 10, Changes: snap.Changes, Sum: 7},
		segs:   []segRef{{id: 3, start: 0, end: 5, flags: refRanged}, {id: 4, start: -1, end: -1, flags: refPath, path: "p"}},
		chunks: []uint64{9, 10, 9}}
	v, _ := rec.encode()
	f.Add(v)
	seg := &segRec{Live: true, FirstSeq: 2, Hash: "abc", Path: "p", packed: pack([]byte("some text")), hasText: true}
	f.Add(seg.encode())
	f.Add(trackMeta{Oldest: 1, Latest: 4, NextSeg: 9}.encode())
	f.Add([]byte{blobDelta, 1, 5, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		if r, err := decodeVersion(v); err == nil {
			again, err := r.encode()
			if err != nil {
				t.Fatal(err)
			}
			r2, err := decodeVersion(again)
			if err != nil || len(r2.segs) != len(r.segs) || len(r2.chunks) != len(r.chunks) {
				t.Fatalf("re-encoded record does not decode the same: %v", err)
			}
		}
		if r, err := decodeSeg(nil, v, false); err == nil {
			if _, err := decodeSeg(nil, r.encode(), false); err != nil {
				t.Fatalf("re-encoded segment does not decode: %v", err)
			}
		}
		decodeTrack(v)
		decodePending(v)
		deltaHeader(v)
		unpack(v, 1<<16)
		unpackDict(v, []byte("dictionary"), 1<<16)
	})
}
