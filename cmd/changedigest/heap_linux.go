package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"unsafe"
)

// heapReserve is how much heap a short command asks for at once, to back
// with huge pages: more than a check of the readability pages or a
// history replay grows to. Beyond it the heap grows in small pages as
// before.
const heapReserve = 64 << 20

// hugeHeap backs the heap of a short command with transparent huge pages
// where the kernel leaves them to the process (madvise mode). A command
// that checks a page touches some tens of megabytes of fresh heap; on a
// virtual machine, where each first touch of a small page is a trap into
// the hypervisor (about 10 µs on the machines measured: a fifth of a
// check run's CPU), one huge page replaces 512 of them. The heap is made to
// grow by heapReserve at once, by an object freed at once, and the
// mappings holding it and the heap before it are marked for huge pages.
// Nothing changes where the kernel does not allow it.
func hugeHeap() {
	// The reserve would start a collection of its own, and one under way
	// when it is made would keep it to the next: the collector is off
	// until the one collection that frees it.
	gcPercent := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gcPercent)
	heapProbe = new([16]byte)
	big := make([]byte, heapReserve)
	for _, a := range []uintptr{uintptr(unsafe.Pointer(heapProbe)), uintptr(unsafe.Pointer(&big[0]))} {
		if lo, hi, ok := mappingOf(a); ok {
			adviseHuge(lo, hi)
		}
	}
	big = nil
	runtime.GC()
}

// heapProbe is an object of the heap before the reserve.
var heapProbe *[16]byte

// mappingOf returns the writable anonymous mapping holding address a,
// from /proc/self/maps.
func mappingOf(a uintptr) (lo, hi uintptr, ok bool) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f0bc5b00000-7f0bc7c00000 rw-p 00000000 00:00 0 [name]
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 5 || !bytes.HasPrefix(fields[1], []byte("rw")) || string(fields[4]) != "0" {
			continue
		}
		from, to, found := bytes.Cut(fields[0], []byte("-"))
		if !found {
			continue
		}
		l, err1 := strconv.ParseUint(string(from), 16, 64)
		h, err2 := strconv.ParseUint(string(to), 16, 64)
		if err1 == nil && err2 == nil && uintptr(l) <= a && a < uintptr(h) {
			return uintptr(l), uintptr(h), true
		}
	}
	return 0, 0, false
}

// adviseHuge marks [lo, hi) for transparent huge pages.
func adviseHuge(lo, hi uintptr) {
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_HUGEPAGE)
}
