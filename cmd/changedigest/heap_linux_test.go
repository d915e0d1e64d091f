package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/changedigest/changedigest/internal/prefault"
)

func TestHugeHeapMarksTheHeap(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(mode, []byte("[never]")) {
		t.Skip("transparent huge pages are not available here")
	}
	hugeHeap()
	p := make([]byte, 1<<20) // a new span, in the heap marked above
	m, ok := heapMapping(prefault.ReadMaps(), uintptr(unsafe.Pointer(&p[0])))
	lo, hi := m.Lo, m.Hi
	if !ok {
		t.Fatalf("no mapping holds the heap object at %p", &p[0])
	}
	flags := vmFlags(t, lo)
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("mapping %x-%x has VmFlags %q, want hg (huge pages advised)", lo, hi, flags)
	}
}

// vmFlags returns the VmFlags line of the mapping starting at lo.
func vmFlags(t *testing.T, lo uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	head := fmt.Sprintf("%x-", lo)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		// The mapping's header line comes first, its VmFlags line last.
		in = in || strings.HasPrefix(line, head)
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("mapping %x not in smaps", lo)
	return ""
}
