package segmenter

import "math/bits"

// hashTable maps 64-bit hashes to int32 values: an open-addressing
// table with linear probing, sized once for the keys it is to hold. The
// comparisons look up hashes of nodes by the hundred thousand, for which
// it is faster than a Go map (no hashing of its own beyond a multiply,
// one flat array, no growth).
type hashTable struct {
	slots []hashSlot
	shift uint
}

type hashSlot struct {
	key uint64
	val int32 // the value + 2; 0: an empty slot
}

// newHashTable returns a table for up to n keys.
func newHashTable(n int) *hashTable {
	size := 8
	if n > 3 {
		size = 1 << bits.Len(uint(2*n-1)) // at most half full
	}
	return &hashTable{slots: make([]hashSlot, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

func (t *hashTable) slot(k uint64) int {
	i := int((k * 0x9E3779B97F4A7C15) >> t.shift)
	for t.slots[i].val != 0 && t.slots[i].key != k {
		i = (i + 1) & (len(t.slots) - 1)
	}
	return i
}

// get returns the value of key k and whether k is in the table.
func (t *hashTable) get(k uint64) (int32, bool) {
	s := &t.slots[t.slot(k)]
	return s.val - 2, s.val != 0
}

// put sets the value of key k (-1 to 1<<31 - 3).
func (t *hashTable) put(k uint64, v int32) {
	s := &t.slots[t.slot(k)]
	s.key, s.val = k, v+2
}
