package prefault

import (
	"syscall"
	"time"
)

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14): map the pages of a
// range, reading them in where they are not cached, without faulting them
// in one by one. Older kernels refuse it, and nothing happens.
const madvPopulateRead = 22

// The package imports syscall and time alone, so that its init runs as
// soon as theirs have.
func init() {
	dear = probeFaults()
	if !dear {
		return
	}
	for _, m := range executableMappings(ReadMaps()) {
		syscall.Syscall(syscall.SYS_MADVISE, m.Lo, m.Hi-m.Lo, madvPopulateRead)
	}
}

// dear is SmallFaultsDear's answer, measured at init.
var dear bool

// DearFault is the mean cost of a first touch of a small page from which
// mapping memory ahead of use pays for itself.
const DearFault = 4 * time.Microsecond

// probePages is how many fresh small pages probeFaults touches.
const probePages = 64

// SmallFaultsDear reports whether a first touch of a small page of fresh
// memory cost DearFault or more when the program started. Where a page
// fault is a trap into a hypervisor (about 10 µs on some virtual machines
// measured) mapping memory ahead of use pays: the executable is mapped at
// start-up, and a short command may back its heap with huge pages. Where
// a fault costs 1.5 µs (other machines measured) mapping the executable
// ahead cost more than the faults it saved (1.5 ms against 0.3 ms at the
// start of a command).
func SmallFaultsDear() bool { return dear }

// probeFaults touches probePages small pages of a mapping of its own and
// reports whether they cost DearFault each or more (about 0.1 ms where
// faults are cheap).
func probeFaults() bool {
	page := syscall.Getpagesize()
	b, err := syscall.Mmap(-1, 0, probePages*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return false
	}
	defer syscall.Munmap(b)
	syscall.Madvise(b, syscall.MADV_NOHUGEPAGE)
	start := time.Now()
	for i := 0; i < len(b); i += page {
		b[i] = 1
	}
	return time.Since(start) >= probePages*DearFault
}

// Mapping is a line of /proc/self/maps: the address range [Lo, Hi), its
// permissions ("r-xp"), whether it is anonymous memory (no file behind
// it: the heap, stacks) and the file or name it shows ("" for none).
type Mapping struct {
	Lo, Hi uintptr
	Perm   string
	Anon   bool
	Path   string
}

// Writable reports whether the mapping may be written.
func (m Mapping) Writable() bool { return len(m.Perm) > 1 && m.Perm[1] == 'w' }

// ReadMaps returns the mappings of this process, from /proc/self/maps;
// nil when it cannot be read.
func ReadMaps() []Mapping { return parseMaps(readMaps()) }

// readMaps returns /proc/self/maps, nil when it cannot be read.
func readMaps() []byte {
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 16<<10)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if n == 0 {
			return buf
		}
		buf = buf[:len(buf)+n]
	}
}

// parseMaps reads the lines of a maps listing; lines it cannot read are
// left out.
func parseMaps(maps []byte) []Mapping {
	var out []Mapping
	for len(maps) > 0 {
		line := maps
		if i := indexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		// 00400000-0142f000 r-xp 00000000 fd:01 1234    /usr/bin/changedigest
		var f [5][]byte
		for k := range f {
			f[k], line = field(line)
		}
		dash := indexByte(f[0], '-')
		if dash < 0 || len(f[4]) == 0 {
			continue
		}
		lo, ok1 := hex(f[0][:dash])
		hi, ok2 := hex(f[0][dash+1:])
		if !ok1 || !ok2 || hi <= lo {
			continue
		}
		out = append(out, Mapping{Lo: lo, Hi: hi, Perm: string(f[1]),
			Anon: string(f[4]) == "0", Path: string(trimSpace(line))})
	}
	return out
}

// executableMappings returns the mappings of the executable (the first
// file in the listing) that are not writable: its code and read-only
// data. Writable data is left to fault as it is used: mapped ahead, each
// written page would be copied once more.
func executableMappings(ms []Mapping) []Mapping {
	var exe string
	var out []Mapping
	for _, m := range ms {
		if m.Path == "" || m.Path[0] != '/' {
			continue
		}
		if exe == "" {
			exe = m.Path
		}
		if m.Path == exe && !m.Writable() {
			out = append(out, m)
		}
	}
	return out
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// field returns the first space-separated field of b and what follows it.
func field(b []byte) (f, rest []byte) {
	b = trimSpace(b)
	i := indexByte(b, ' ')
	if i < 0 {
		return b, nil
	}
	return b[:i], b[i:]
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func hex(b []byte) (uintptr, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uintptr
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		v = v<<4 | uintptr(c)
	}
	return v, true
}
