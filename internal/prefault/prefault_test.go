//go:build linux

package prefault

import (
	"os"
	"testing"
)

// TestExecutableMappings reads a maps listing and finds the code and
// read-only data of the executable in it, leaving out its writable data,
// other files, anonymous memory and the stack.
func TestExecutableMappings(t *testing.T) {
	maps := []byte(`00400000-0142f000 r-xp 00000000 fd:01 1234                               /usr/local/bin/change digest
0142f000-024c1000 r--p 0102f000 fd:01 1234                               /usr/local/bin/change digest
024c1000-029cf000 rw-p 020c1000 fd:01 1234                               /usr/local/bin/change digest
029cf000-04a20000 rw-p 00000000 00:00 0
1c661bc00000-1c661c000000 rw-p 00000000 00:00 0
7f8cb5500000-7f8cb7600000 r--p 00000000 fd:01 99                         /usr/lib/locale/C.utf8/LC_CTYPE
7f8cfbf94000-7f8cfbf96000 r-xp 00000000 00:00 0                          [vdso]
7ffe7688d000-7ffe768ae000 rw-p 00000000 00:00 0                          [stack]
`)
	got := executableMappings(parseMaps(maps))
	want := []Mapping{
		{Lo: 0x400000, Hi: 0x142f000, Perm: "r-xp", Path: "/usr/local/bin/change digest"},
		{Lo: 0x142f000, Hi: 0x24c1000, Perm: "r--p", Path: "/usr/local/bin/change digest"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("mappings %+v, want %+v", got, want)
	}
	if got := executableMappings(parseMaps(nil)); len(got) != 0 {
		t.Errorf("an empty listing gives %+v", got)
	}
	// The heap's line: anonymous, writable, no name; the stack's is named.
	all := parseMaps(maps)
	if len(all) != 8 {
		t.Fatalf("%d mappings read, want 8", len(all))
	}
	if h := all[4]; h.Lo != 0x1c661bc00000 || !h.Anon || !h.Writable() || h.Path != "" {
		t.Errorf("heap mapping read as %+v", h)
	}
	if st := all[7]; !st.Anon || st.Path != "[stack]" {
		t.Errorf("stack mapping read as %+v", st)
	}
	// This test's own executable has code to map.
	self, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps:", err)
	}
	if len(executableMappings(parseMaps(self))) == 0 {
		t.Errorf("no mappings of the executable in\n%s", self)
	}
}
