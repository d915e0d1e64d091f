// Command changedigest watches web pages and feeds, keeps every version in
// a searchable history, finds what changed and tells each user through an
// Atom feed and a daily digest. See `changedigest help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/changedigest/changedigest/internal/lazyregexp"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	// Maps the executable's code at start-up in one call, before the
	// other packages' init runs: see the package.
	_ "github.com/changedigest/changedigest/internal/prefault"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tuneGC(os.Args[1:])
	stopProfile := profileCPU(os.Getenv("CHANGEDIGEST_CPUPROFILE"))
	code := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	profileAllocs(os.Getenv("CHANGEDIGEST_ALLOCPROFILE"))
	os.Exit(code)
}

// profileAllocs writes a profile of the memory allocated over the whole
// run to path when it is not empty (CHANGEDIGEST_ALLOCPROFILE).
func profileAllocs(path string) {
	if path == "" {
		return
	}
	// The profile is as of the last collection: one now counts the whole run.
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "changedigest: CHANGEDIGEST_ALLOCPROFILE:", err)
	}
}

// profileCPU writes a CPU profile of the run to path when it is not
// empty (CHANGEDIGEST_CPUPROFILE: for `go tool pprof`), from the start or
// after CHANGEDIGEST_CPUPROFILE_AFTER (a duration), to the end or for
// CHANGEDIGEST_CPUPROFILE_FOR, and returns the function that ends it.
func profileCPU(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "changedigest: CHANGEDIGEST_CPUPROFILE:", err)
		return func() {}
	}
	after, _ := time.ParseDuration(os.Getenv("CHANGEDIGEST_CPUPROFILE_AFTER"))
	span, _ := time.ParseDuration(os.Getenv("CHANGEDIGEST_CPUPROFILE_FOR"))
	var mu sync.Mutex
	started, stopped := false, false
	start := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "changedigest: CHANGEDIGEST_CPUPROFILE:", err)
			return
		}
		started = true
	}
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if started && !stopped {
			pprof.StopCPUProfile()
		}
		if !stopped {
			f.Close()
		}
		stopped = true
	}
	if after > 0 {
		time.AfterFunc(after, start)
	} else {
		start()
	}
	if span > 0 {
		time.AfterFunc(after+span, stop)
	}
	return stop
}

// tuneGC lets the garbage of a short command (check, diff, history…)
// grow to five times its live heap before a collection, instead of
// twice: such a process lives for a second or two, and collecting less
// often saves about a tenth of its CPU for some tens of megabytes. A
// memory limit of 1 GiB makes the collector work harder rather than go
// past it. serve and client run for days and keep the defaults (serve
// has a memory limit of its own). GOGC and GOMEMLIMIT, when set, win.
func tuneGC(args []string) {
	_, rest, err := parseGlobal(args)
	if err != nil || len(rest) == 0 || rest[0] == "serve" || rest[0] == "client" {
		return
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(1 << 30)
	}
	// Nobody reads a short command's heap profile, except through
	// CHANGEDIGEST_ALLOCPROFILE: sampling costs a stack walk per 512 KB
	// allocated and the memory of its buckets.
	if os.Getenv("CHANGEDIGEST_ALLOCPROFILE") == "" {
		runtime.MemProfileRate = 0
	}
	shortLived = true
}

// shortLived says that tuneGC set the collector for a short command: a
// check of several pages then backs its heap with huge pages (hugeHeap).
// Commands run by tests keep the test binary's heap as it is.
var shortLived bool

// hugeHeapChecks is the number of pages likely to bring a new version
// (likelyNewVersions) from which a short check backs its heap with huge
// pages: making it so costs about what the heap of four such checks
// gains, and more than a run of "not modified" answers uses.
const hugeHeapChecks = 4

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad arguments or bad input
)

// env is what a sub-command runs with: its arguments and standard streams.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// global are the global flags given before the command, as
	// "--name=value", for parse.
	global []string
}

// command is one sub-command.
type command struct {
	summary string
	run     func(ctx context.Context, e *env) error
}

// commands lists the sub-commands; each lives in a file of its own name.
var commands = map[string]command{}

// usageError marks errors in the command line itself (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// subcommandHelp prints usage to e's standard output when sub asks for
// help (-h, --help, help), and reports whether it did.
func subcommandHelp(e *env, sub, usage string) bool {
	if sub != "-h" && sub != "--help" && sub != "help" {
		return false
	}
	fmt.Fprintln(e.stdout, usage)
	return true
}

// packagePrefix is the name of one of the module's packages at the start
// of an error's text, or of a part of it ("crawl: GET …: pet: …"), which
// says where in the code it was made: not for the person reading it.
var packagePrefix = lazyregexp.New(`(^|: )(?:crawl|pet|segmenter|server|notify|cluster|profile|expand|render|agent|browser|visual|demo|metrics|backup|userdata): `)

// plainError is err's text without the package names of its parts.
func plainError(err error) string {
	return packagePrefix.ReplaceAllString(err.Error(), "$1")
}

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// Run runs the sub-command named by args[0], after any global flags,
// and returns the exit status.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		return exitOK
	}
	global, args, err := parseGlobal(args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "changedigest: %v (see 'changedigest help')\n", err)
		return exitUsage
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "changedigest: unknown command %q (see 'changedigest help')\n", args[0])
		return exitUsage
	}
	err = cmd.run(ctx, &env{args: args[1:], stdin: stdin, stdout: stdout, stderr: stderr, global: global})
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "changedigest %s: %s\n", args[0], plainError(err))
	var ue *usageError
	if errors.As(err, &ue) || changedigest.ErrorCode(err) == changedigest.EINVALID || changedigest.ErrorCode(err) == changedigest.ETOOLARGE {
		return exitUsage
	}
	return exitFailure
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: changedigest COMMAND [ARGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "global flags, taken before the command too (there, a command ignores those it has no use for):")
	fmt.Fprintln(w, "  --data DIR        data directory (default ./"+defaultDataDir+", env CHANGEDIGEST_DATA)")
	fmt.Fprintln(w, "  --allow-private   allow fetching private, loopback and link-local addresses")
	fmt.Fprintln(w, "  --matrix N        versions in the signature matrix (m)")
	fmt.Fprintln(w, "  --user NAME       the user a command acts for")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'changedigest COMMAND -h' for the flags of a command.")
}

// globalFlags are the flags that may come before the command, as git and
// docker accept them (changedigest --data DIR watch list): the flags
// every command that opens the store shares.
var globalFlags = []string{"data", "allow-private", "matrix", "user"}

// parseGlobal reads the global flags before the command. It returns them
// as "--name=value" in the order given, and the command with its
// arguments. Errors: a flag that is not global, a bad value, or no
// command after the flags.
func parseGlobal(args []string) ([]string, []string, error) {
	fs := flag.NewFlagSet("changedigest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.String("data", "", "")
	fs.Bool("allow-private", false, "")
	fs.Int("matrix", 0, "")
	fs.String("user", "", "")
	var global []string
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0] != "--" {
		name, _, _ := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if name == "h" || name == "help" {
			return nil, nil, flag.ErrHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, nil, fmt.Errorf("unknown flag %s before the command: only %s go there; a command's own flags go after it",
				args[0], "--"+strings.Join(globalFlags, ", --"))
		}
		// Parse one flag (with its value) at a time, to keep their order.
		n := 1
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); !isBool && !strings.Contains(args[0], "=") {
			n = 2
		}
		if len(args) < n {
			return nil, nil, fmt.Errorf("flag %s needs a value", args[0])
		}
		if err := fs.Parse(args[:n]); err != nil {
			return nil, nil, err
		}
		global = append(global, "--"+name+"="+f.Value.String())
		args = args[n:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil, nil, errors.New("want a command after the global flags")
	}
	return global, args, nil
}

// parse parses a command's flags as parseFlags does, after the global
// flags given before the command that fs defines (so that the same flag
// after the command wins); the others are no concern of this command.
func (e *env) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var mine []string
	for _, g := range e.global {
		name, _, _ := strings.Cut(strings.TrimPrefix(g, "--"), "=")
		if fs.Lookup(name) != nil {
			mine = append(mine, g)
		}
	}
	return parseFlags(fs, append(mine, args...))
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: changedigest %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given
}

// parseFlags parses flags that may come before or after positional
// arguments, and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
