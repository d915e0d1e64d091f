// Package prefault maps the program's code and read-only data into the
// process when it starts, in one call, instead of one page fault at a time
// as they are first used.
//
// A command such as `changedigest check` runs for tens of milliseconds,
// and its start touches code and tables spread over tens of megabytes of
// the executable: some hundreds of page faults. Where a page fault is a
// trap into a hypervisor (about 10 µs each on the virtual machines
// measured), they cost a fifth of a short command's CPU. Mapping the
// executable's read-only pages ahead of use (they are in the page cache
// once the program has run) costs less than a tenth of that. Where a
// fault costs 1.5 µs it costs more than it saves, so the package first
// times the first touch of a few fresh pages, and maps the executable
// only where faults are dear (SmallFaultsDear).
//
// ReadMaps gives the process's mappings as it reads them, for other
// start-up work on memory (the huge-page heap of a short command).
//
// Import it for its effect, first among the imports of package main, so that
// it runs before the other packages' init:
//
//	import _ "github.com/changedigest/changedigest/internal/prefault"
package prefault
