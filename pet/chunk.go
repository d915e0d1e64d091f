package pet

import (
	"crypto/sha256"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// Content-defined chunking: used for the whole body when a snapshot has no
// byte ranges, and inside any piece longer than cdcLarge.
const (
	cdcMin   = 512
	cdcMask  = 1<<11 - 1 // average chunk ~2 KiB past the minimum
	cdcMax   = 16 << 10
	cdcLarge = 16 << 10
)

// gear is the rolling-hash table; fixed forever, since it decides where
// chunks are cut and so what deduplicates against what is stored.
var gear = func() (t [256]uint64) {
	x := uint64(0x9e3779b97f4a7c15)
	for i := range t {
		// splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		t[i] = z ^ (z >> 31)
	}
	return t
}()

// cdc appends to cuts the content-defined cut points inside p (offsets
// relative to base), excluding both ends.
func cdc(cuts []int, p []byte, base int) []int {
	for start := 0; len(p)-start > cdcMin; {
		var h uint64
		end := len(p)
		limit := min(start+cdcMax, len(p))
		for i := start + cdcMin; i < limit; i++ {
			h = h<<1 + gear[p[i]]
			if h&cdcMask == 0 {
				end = i + 1
				break
			}
		}
		if end == len(p) && limit < len(p) {
			end = limit
		}
		if end >= len(p) {
			break
		}
		cuts = append(cuts, base+end)
		start = end
	}
	return cuts
}

// piece is one chunk of a body: a slice of it and the hash of its bytes.
type piece struct {
	sum  [16]byte
	data []byte
}

func sum16(p []byte) [16]byte {
	full := sha256.Sum256(p)
	var s [16]byte
	copy(s[:], full[:16])
	return s
}

// split cuts body into chunks at the segments' byte ranges: each segment
// and each gap between segments is a chunk; pieces longer than cdcLarge,
// and the whole body when no segment has a range, are cut further by
// content-defined chunking. The chunks concatenate to body. Ranges must
// have been checked by checkRanges.
func split(body []byte, segs []changedigest.Segment) []piece {
	var bounds []int
	for _, s := range segs {
		if s.Start < 0 {
			continue
		}
		bounds = append(bounds, s.Start, s.End)
	}
	var cuts []int
	prev := 0
	emit := func(end int) {
		if end <= prev {
			return
		}
		if len(bounds) == 0 || end-prev > cdcLarge {
			cuts = cdc(cuts, body[prev:end], prev)
		}
		cuts = append(cuts, end)
		prev = end
	}
	for _, b := range bounds {
		emit(b)
	}
	emit(len(body))
	pieces := make([]piece, 0, len(cuts))
	start := 0
	for _, c := range cuts {
		p := body[start:c]
		pieces = append(pieces, piece{sum: sum16(p), data: p})
		start = c
	}
	return pieces
}

// checkRanges checks that the known segment ranges lie in the body, in
// order and without overlap.
func checkRanges(segs []changedigest.Segment, size int) error {
	prev := 0
	for i, s := range segs {
		if s.Start == -1 && s.End == -1 {
			continue
		}
		switch {
		case s.Start < 0 || s.End < s.Start:
			return invalidf("segment %d has byte range %d..%d (want 0 <= start <= end, or -1..-1 when unknown)", i, s.Start, s.End)
		case s.End > size:
			return invalidf("segment %d ends at byte %d, past the end of the %d-byte body", i, s.End, size)
		case s.Start < prev:
			return invalidf("segment %d starts at byte %d, before the end of the segment before it (%d)", i, s.Start, prev)
		}
		prev = s.End
	}
	return nil
}

// chunkStore adds and drops references to chunks inside one write
// transaction. Chunks are global: identical bytes in two watches are
// stored once.
type chunkStore struct {
	hash, data, refs *bolt.Bucket
}

func newChunkStore(tx *bolt.Tx) *chunkStore {
	c := &chunkStore{hash: tx.Bucket(bChunkHash), data: tx.Bucket(bChunkData), refs: tx.Bucket(bChunkRefs)}
	// ids are assigned in increasing order: pack pages full.
	c.data.FillPercent = 0.95
	c.refs.FillPercent = 0.95
	return c
}

// lookup returns the id of the chunk with this hash, 0 if none.
func (c *chunkStore) lookup(sum [16]byte) uint64 {
	if v := c.hash.Get(sum[:]); v != nil {
		return uint64(at(v, 0))
	}
	return 0
}

// ref adds one reference to the chunk with bytes p (hash sum), storing it
// if new. packed, when not nil, is p already encoded, as a delta against
// chunk base when base is not 0 (see deltaPack).
func (c *chunkStore) ref(sum [16]byte, p, packed []byte, base uint64) (uint64, error) {
	if id := c.lookup(sum); id != 0 {
		k := key(id)
		n, _ := uvarint(c.refs.Get(k))
		return id, c.refs.Put(k, append(putUvarint(nil, n+1), sum[:]...))
	}
	id, err := c.data.NextSequence()
	if err != nil {
		return 0, err
	}
	if base != 0 && c.data.Get(key(base)) == nil {
		packed = nil // the base went away meanwhile
	}
	if packed == nil {
		packed, base = pack(p), 0
	}
	if base != 0 {
		// The delta keeps its base alive.
		if err := c.addRef(base); err != nil {
			return 0, err
		}
	}
	k := key(id)
	if err := c.data.Put(k, packed); err != nil {
		return 0, err
	}
	if err := c.hash.Put(sum[:], k); err != nil {
		return 0, err
	}
	return id, c.refs.Put(k, append(putUvarint(nil, 1), sum[:]...))
}

// addRef adds one reference to a stored chunk.
func (c *chunkStore) addRef(id uint64) error {
	k := key(id)
	v := c.refs.Get(k)
	n, w := uvarint(v)
	if v == nil || w <= 0 {
		return corruptf("chunk %d has no reference count", id)
	}
	return c.refs.Put(k, append(putUvarint(nil, n+1), v[w:]...))
}

// maxChunk bounds one stored chunk: body pieces are at most 16 KiB,
// layouts at most maxLayout.
const maxChunk = maxLayout

// unref drops one reference, deleting the chunk with its last one (and
// then dropping the reference it held on its delta base).
func (c *chunkStore) unref(id uint64) error {
	for id != 0 {
		k := key(id)
		v := c.refs.Get(k)
		if v == nil {
			return corruptf("chunk %d has no reference count", id)
		}
		n, w := uvarint(v)
		if w <= 0 || len(v) != w+16 {
			return corruptf("chunk %d has a bad reference record", id)
		}
		if n > 1 {
			return c.refs.Put(k, append(putUvarint(nil, n-1), v[w:]...))
		}
		_, base, _ := deltaHeader(c.data.Get(k))
		if err := c.hash.Delete(v[w:]); err != nil {
			return err
		}
		if err := c.data.Delete(k); err != nil {
			return err
		}
		if err := c.refs.Delete(k); err != nil {
			return err
		}
		id = base
	}
	return nil
}

// Delta chunks: a changed piece stored against the piece that held its
// place in the previous version, as [blobRuns][depth][uvarint base][runs
// of the base (see deltaRuns), packed]; chunks written before are
// [blobDelta][depth][uvarint base][deflate with the base as dictionary].
// Depth bounds the chain a read must resolve.
const (
	blobDelta     = 3
	blobRuns      = 5
	maxDeltaDepth = 8
)

// deltaHeader returns the depth and base of a delta chunk, and where its
// payload starts; base is 0 for other chunks.
func deltaHeader(v []byte) (depth int, base uint64, rest int) {
	if len(v) < 3 || v[0] != blobDelta && v[0] != blobRuns {
		return 0, 0, 0
	}
	b, w := uvarint(v[2:])
	if w <= 0 {
		return 0, 0, 0
	}
	return int(v[1]), b, 2 + w
}

// deltaPack encodes p against baseData, the bytes of chunk base stored as
// baseBlob; it returns nil when the chain would be too deep or p shares
// too little with baseData. The caller keeps it when it is smaller than
// pack(p).
func deltaPack(p []byte, base uint64, baseBlob, baseData []byte) []byte {
	depth, _, _ := deltaHeader(baseBlob)
	if depth+1 > maxDeltaDepth || len(p) < minCompress || len(baseData) == 0 {
		return nil
	}
	runs := deltaRuns(p, baseData)
	if runs == nil || len(runs) >= len(p) {
		return nil
	}
	out := append([]byte{blobRuns, byte(depth + 1)}, putUvarint(nil, base)...)
	return append(out, pack(runs)...)
}

// readChunk returns the bytes of chunk id, resolving delta chains. The
// bytes may be shared with other readers: callers must not modify them.
func readChunk(tx *bolt.Tx, id uint64, limit int) ([]byte, error) {
	if p, ok := recent.get(tx.DB(), id); ok && len(p) <= limit {
		return p, nil
	}
	p, err := readChunkDepth(tx, id, limit, maxDeltaDepth)
	if err == nil && !tx.Writable() {
		recent.put(tx.DB(), id, p)
	}
	return p, err
}

// readStoredChunk is readChunk from the database alone, for the store
// check, which must see what is on disk.
func readStoredChunk(tx *bolt.Tx, id uint64, limit int) ([]byte, error) {
	return readChunkDepth(tx, id, limit, maxDeltaDepth)
}

// recent keeps the chunks read last. Reading a version reads each of its
// chunks twice, once as the dictionary of a segment's text and once for
// the body, and the base of a delta chain is read for every link: each
// was a full inflate. A chunk id comes from NextSequence and a committed
// chunk never changes, so a chunk read in a read-only transaction (which
// sees only committed data) may be kept by id; chunks read in a write
// transaction, which may yet roll back and give the id again, are not.
var recent = chunkCache{max: 8 << 20}

type chunkKey struct {
	db *bolt.DB
	id uint64
}

// chunkCache is a byte-bounded cache of chunks, the oldest dropped first.
type chunkCache struct {
	max   int
	mu    sync.Mutex
	m     map[chunkKey][]byte
	order []chunkKey
	size  int
}

func (c *chunkCache) get(db *bolt.DB, id uint64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[chunkKey{db, id}]
	return p, ok
}

func (c *chunkCache) put(db *bolt.DB, id uint64, p []byte) {
	if len(p) > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := chunkKey{db, id}
	if _, ok := c.m[k]; ok {
		return
	}
	if c.m == nil {
		c.m = map[chunkKey][]byte{}
	}
	for c.size+len(p) > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.m[old])
		delete(c.m, old)
	}
	c.m[k], c.order = p, append(c.order, k)
	c.size += len(p)
}

// forget drops the chunks of db (a store being closed).
func (c *chunkCache) forget(db *bolt.DB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.order[:0]
	for _, k := range c.order {
		if k.db == db {
			c.size -= len(c.m[k])
			delete(c.m, k)
		} else {
			kept = append(kept, k)
		}
	}
	c.order = kept
}

func readChunkDepth(tx *bolt.Tx, id uint64, limit, depthLeft int) ([]byte, error) {
	v := tx.Bucket(bChunkData).Get(key(id))
	if v == nil {
		return nil, corruptf("chunk %d is missing", id)
	}
	depth, base, rest := deltaHeader(v)
	if base == 0 {
		if len(v) > 0 && (v[0] == blobDelta || v[0] == blobRuns) {
			return nil, corruptf("chunk %d has a bad delta header", id)
		}
		p, err := unpack(v, limit)
		if err != nil {
			return nil, corruptf("chunk %d: %v", id, err)
		}
		return p, nil
	}
	if depth < 1 || depth > depthLeft {
		return nil, corruptf("chunk %d: delta chain deeper than %d", id, maxDeltaDepth)
	}
	dict, err := readChunkDepth(tx, base, maxChunk, depth-1)
	if err != nil {
		return nil, err
	}
	var p []byte
	if v[0] == blobRuns {
		var runs []byte
		if runs, err = unpack(v[rest:], 4*limit+64); err == nil {
			p, err = runsUnpack(runs, dict, limit)
		}
	} else {
		p, err = unpackDict(append([]byte{blobDict}, v[rest:]...), dict, limit)
	}
	if err != nil {
		return nil, corruptf("chunk %d: %v", id, err)
	}
	return p, nil
}

func (p piece) String() string { return fmt.Sprintf("%x(%d)", p.sum[:4], len(p.data)) }

// hasChunk reports whether a chunk with p's bytes is stored (b is the
// chunk_hash bucket).
func hasChunk(b *bolt.Bucket, p []byte) bool {
	sum := sum16(p)
	return b.Get(sum[:]) != nil
}
