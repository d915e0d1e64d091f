package pet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The page tree of pet.db read from the file, before bbolt walks it.
//
// bbolt trusts its pages: a branch page whose child points back up the
// tree sends a cursor down forever (its stack grows until memory runs
// out), and a key or value position past its page makes it read outside
// the file. checkTree reads the tree of every bucket from the file with
// its own reads, each page at most once, and says what is wrong before
// anything follows the pages: the work is bounded by the file's size
// whatever the bytes say.

// Layout of bbolt's file format (version 2), as its internal/common
// package defines it.
const (
	pageHeaderSize   = 16 // id uint64, flags uint16, count uint16, overflow uint32
	branchElemSize   = 16 // pos uint32, ksize uint32, pgid uint64
	leafElemSize     = 16 // flags uint32, pos uint32, ksize uint32, vsize uint32
	bucketHeaderSize = 16 // root pgid uint64, sequence uint64
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	bucketLeafFlag   = 0x01
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	metaSumBytes     = 56 // the meta fields before its checksum
	maxTreeDepth     = 64
	// maxPageBytes bounds a page with its overflow: no record of the
	// store comes near it.
	maxPageBytes = 256 << 20
)

// errTree is a page tree that does not hold together.
var errTree = errors.New("page tree damaged")

// checkTree checks the page tree of the bbolt file at path.
func checkTree(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	t, root, err := newTreeCheck(f, false)
	if err != nil {
		return err
	}
	return t.page(root, 0)
}

// newTreeCheck reads f's meta page and returns the walk of its tree and
// the root page. A lenient walk reads the pages a file cut short still
// has; a strict one calls such a file damaged.
func newTreeCheck(f *os.File, lenient bool) (*treeCheck, uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	root, hwm, pageSize, err := readMeta(f)
	if err != nil {
		return nil, 0, err
	}
	if pageSize < 512 || pageSize > 1<<20 {
		return nil, 0, fmt.Errorf("%w: page size %d", errTree, pageSize)
	}
	pages := uint64(fi.Size()) / uint64(pageSize)
	switch {
	case lenient:
		hwm = min(hwm, pages)
	case hwm > pages || hwm < 4:
		return nil, 0, fmt.Errorf("%w: %d pages in use in a file of %d", errTree, hwm, pages)
	}
	t := &treeCheck{f: f, pageSize: int(pageSize), hwm: hwm, seen: make([]uint64, (hwm+63)/64),
		budget: treeBudget(fi.Size()), lenient: lenient}
	return t, root, nil
}

// treeBudget bounds the elements a walk of a file of size bytes reads:
// an element takes 16 bytes of a page.
func treeBudget(size int64) int { return int(min(size/leafElemSize, 1<<40)) + 1024 }

// readMeta returns the root page, the number of pages in use and the page
// size from the newer of the two meta pages whose checksum holds, as
// bbolt chooses.
func readMeta(r io.ReaderAt) (root, hwm uint64, pageSize uint32, err error) {
	var best uint64
	found := false
	buf := make([]byte, pageHeaderSize+64)
	// meta reads the meta page at off, when its checksum holds.
	meta := func(off int64) bool {
		if _, err := r.ReadAt(buf, off); err != nil {
			return false
		}
		m := buf[pageHeaderSize:]
		h := fnv.New64a()
		h.Write(m[:metaSumBytes])
		if binary.LittleEndian.Uint32(m) != boltMagic || binary.LittleEndian.Uint32(m[4:]) != boltVersion ||
			h.Sum64() != binary.LittleEndian.Uint64(m[56:]) {
			return false
		}
		if txid := binary.LittleEndian.Uint64(m[48:]); !found || txid > best {
			best, found = txid, true
			pageSize = binary.LittleEndian.Uint32(m[8:])
			root = binary.LittleEndian.Uint64(m[16:])
			hwm = binary.LittleEndian.Uint64(m[40:])
		}
		return true
	}
	if meta(0) {
		meta(int64(pageSize)) // the second meta, one page on
	} else {
		// The first is damaged: look for the second where each page
		// size would put it, as bbolt does.
		for ps := int64(1024); ps <= 16<<20; ps *= 2 {
			if meta(ps) && int64(pageSize) == ps {
				break
			}
		}
	}
	if !found {
		return 0, 0, 0, fmt.Errorf("%w: no meta page holds", errTree)
	}
	return root, hwm, pageSize, nil
}

type treeCheck struct {
	f        *os.File
	pageSize int
	hwm      uint64
	seen     []uint64 // pages reached, a bit each

	// With lenient set, a damaged page or element is noted in problems
	// and passed over, and the walk goes on; visit is given every key
	// and value of the buckets (path: the bucket names from the top),
	// and bucket every bucket with its sequence.
	lenient  bool
	problems []string
	// elems counts the elements read, against budget (bounded by the
	// file's size): inline buckets are not pages, and damaged ones could
	// point at each other's bytes.
	elems, budget int
	visit         func(path [][]byte, k, v []byte) error
	bucket        func(path [][]byte, seq uint64) error
	path          [][]byte
}

// fail returns err, or notes it and returns nil when the walk is lenient.
func (t *treeCheck) fail(err error) error {
	if !t.lenient {
		return err
	}
	t.problems = append(t.problems, err.Error())
	return nil
}

// page checks the page id and the tree under it.
func (t *treeCheck) page(id uint64, depth int) error {
	if depth > maxTreeDepth {
		return t.fail(fmt.Errorf("%w: deeper than %d pages", errTree, maxTreeDepth))
	}
	if id < 2 || id >= t.hwm {
		return t.fail(fmt.Errorf("%w: page %d is outside the %d pages in use", errTree, id, t.hwm))
	}
	if t.seen[id/64]&(1<<(id%64)) != 0 {
		return t.fail(fmt.Errorf("%w: page %d is reached twice", errTree, id))
	}
	t.seen[id/64] |= 1 << (id % 64)
	head := make([]byte, pageHeaderSize)
	if _, err := t.f.ReadAt(head, int64(id)*int64(t.pageSize)); err != nil {
		return t.fail(fmt.Errorf("%w: page %d: %v", errTree, id, err))
	}
	overflow := uint64(binary.LittleEndian.Uint32(head[12:]))
	if binary.LittleEndian.Uint64(head) != id || id+overflow >= t.hwm || (overflow+1)*uint64(t.pageSize) > maxPageBytes {
		return t.fail(fmt.Errorf("%w: page %d says it is page %d of %d more", errTree, id, binary.LittleEndian.Uint64(head), overflow))
	}
	for o := id + 1; o <= id+overflow; o++ {
		if t.seen[o/64]&(1<<(o%64)) != 0 {
			return t.fail(fmt.Errorf("%w: page %d is reached twice", errTree, o))
		}
		t.seen[o/64] |= 1 << (o % 64)
	}
	buf := make([]byte, int(overflow+1)*t.pageSize)
	if _, err := t.f.ReadAt(buf, int64(id)*int64(t.pageSize)); err != nil {
		return t.fail(fmt.Errorf("%w: page %d: %v", errTree, id, err))
	}
	return t.node(buf, depth, fmt.Sprintf("page %d", id))
}

// node checks a page held in p (a page of the file, or a bucket's inline
// page): its elements lie within it, and the pages and buckets they lead
// to hold together.
func (t *treeCheck) node(p []byte, depth int, name string) error {
	if depth > maxTreeDepth {
		return t.fail(fmt.Errorf("%w: deeper than %d pages", errTree, maxTreeDepth))
	}
	if len(p) < pageHeaderSize {
		return t.fail(fmt.Errorf("%w: %s is cut short", errTree, name))
	}
	flags := binary.LittleEndian.Uint16(p[8:])
	count := int(binary.LittleEndian.Uint16(p[10:]))
	if pageHeaderSize+count*leafElemSize > len(p) {
		return t.fail(fmt.Errorf("%w: %s says it has %d elements", errTree, name, count))
	}
	if t.elems += count; t.elems > t.budget {
		// Not lenient: the walk would not end.
		return fmt.Errorf("%w: more elements than the file can hold (%s)", errTree, name)
	}
	switch flags {
	case branchPageFlag:
		if count == 0 {
			return t.fail(fmt.Errorf("%w: %s is an empty branch", errTree, name))
		}
		for i := range count {
			e := pageHeaderSize + i*branchElemSize
			if _, err := span(p, e, binary.LittleEndian.Uint32(p[e:]), binary.LittleEndian.Uint32(p[e+4:])); err != nil {
				if err := t.fail(fmt.Errorf("%w: %s, key %d: %v", errTree, name, i, err)); err != nil {
					return err
				}
				// The key only guides a search: the child is read still.
			}
			if err := t.page(binary.LittleEndian.Uint64(p[e+8:]), depth+1); err != nil {
				return err
			}
		}
	case leafPageFlag:
		for i := range count {
			e := pageHeaderSize + i*leafElemSize
			pos, ksize, vsize := binary.LittleEndian.Uint32(p[e+4:]), binary.LittleEndian.Uint32(p[e+8:]), binary.LittleEndian.Uint32(p[e+12:])
			end, err := span(p, e, pos, ksize)
			if err == nil {
				_, err = span(p, e, pos+ksize, vsize)
			}
			if err != nil {
				if err := t.fail(fmt.Errorf("%w: %s, element %d: key or value outside it", errTree, name, i)); err != nil {
					return err
				}
				continue
			}
			k, v := p[end-int(ksize):end], p[end:end+int(vsize)]
			if binary.LittleEndian.Uint32(p[e:])&bucketLeafFlag == 0 {
				if t.visit != nil {
					if err := t.visit(t.path, k, v); err != nil {
						return err
					}
				}
				continue
			}
			if len(v) < bucketHeaderSize {
				if err := t.fail(fmt.Errorf("%w: %s, element %d: a bucket of %d bytes", errTree, name, i, len(v))); err != nil {
					return err
				}
				continue
			}
			t.path = append(t.path, k)
			err = nil
			if t.bucket != nil {
				err = t.bucket(t.path, binary.LittleEndian.Uint64(v[8:]))
			}
			if err == nil {
				if root := binary.LittleEndian.Uint64(v); root != 0 {
					err = t.page(root, depth+1)
				} else {
					err = t.node(v[bucketHeaderSize:], depth+1, name+" (an inline bucket)")
				}
			}
			t.path = t.path[:len(t.path)-1]
			if err != nil {
				return err
			}
		}
	default:
		return t.fail(fmt.Errorf("%w: %s is neither branch nor leaf (flags %#x)", errTree, name, flags))
	}
	return nil
}

// walkTree reads every bucket, key and value of the bbolt file at path
// that its pages lead to, each page once, passing over damaged pages and
// elements (returned, one line each); visit and bucket are as in
// treeCheck. An error of visit or bucket ends the walk.
func walkTree(path string, visit func(path [][]byte, k, v []byte) error, bucket func(path [][]byte, seq uint64) error) (problems []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, root, err := newTreeCheck(f, true)
	if err != nil {
		return nil, err
	}
	t.visit, t.bucket = visit, bucket
	err = t.page(root, 0)
	return t.problems, err
}

// span returns the end of the bytes at pos from element offset e, of n
// bytes, when they lie within p.
func span(p []byte, e int, pos, n uint32) (int, error) {
	start := uint64(e) + uint64(pos)
	end := start + uint64(n)
	if end > uint64(len(p)) {
		return 0, fmt.Errorf("bytes %d to %d of %d", start, end, len(p))
	}
	return int(end), nil
}
