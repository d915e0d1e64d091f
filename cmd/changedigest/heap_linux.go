package main

import (
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"

	"github.com/changedigest/changedigest/internal/prefault"
)

// heapReserve is how much heap a short command asks for at once, to back
// with huge pages: more than a check of the readability pages or a
// history replay grows to. Beyond it the heap grows in small pages as
// before.
const heapReserve = 64 << 20

// hugeHeap backs the heap of a short command with transparent huge pages
// where the kernel leaves them to the process (madvise mode); a command
// calls it when first touches of small pages are dear
// (prefault.SmallFaultsDear).
// A command that checks a page touches some tens of megabytes of fresh
// heap; on a virtual machine, where each first touch of a small page may
// be a trap into the hypervisor (about 10 µs on some machines measured: a
// fifth of a check run's CPU), one huge page replaces 512 of them. Where
// small faults are cheap (1.5 µs on others), huge pages cost more than
// they save: each is zeroed whole, and on a virtual machine whose host
// has not yet backed that memory, zeroing one took 4.4 ms (against
// 0.18 ms once backed), which made a check of 60 pages spend a fifth of
// its CPU there. The heap is made to grow by heapReserve at once, by an
// object freed at once, and the mappings holding it and the heap before
// it are marked for huge pages. Nothing changes where the kernel does not
// allow it.
func hugeHeap() {
	// The reserve would start a collection of its own, and one under way
	// when it is made would keep it to the next: the collector is off
	// until the one collection that frees it.
	gcPercent := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gcPercent)
	heapProbe = new([16]byte)
	big := make([]byte, heapReserve)
	maps := prefault.ReadMaps()
	for _, a := range []uintptr{uintptr(unsafe.Pointer(heapProbe)), uintptr(unsafe.Pointer(&big[0]))} {
		if m, ok := heapMapping(maps, a); ok {
			adviseHuge(m.Lo, m.Hi)
		}
	}
	big = nil
	runtime.GC()
}

// heapProbe is an object of the heap before the reserve.
var heapProbe *[16]byte

// heapMapping returns the writable anonymous mapping holding address a.
func heapMapping(maps []prefault.Mapping, a uintptr) (prefault.Mapping, bool) {
	for _, m := range maps {
		if m.Anon && m.Writable() && m.Lo <= a && a < m.Hi {
			return m, true
		}
	}
	return prefault.Mapping{}, false
}

// adviseHuge marks [lo, hi) for transparent huge pages.
func adviseHuge(lo, hi uintptr) {
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_HUGEPAGE)
}
