// Command changedigest watches web pages and feeds, keeps every version in
// a searchable history, finds what changed and tells each user through an
// Atom feed and a daily digest. See `changedigest help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/changedigest/changedigest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

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

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// Run runs the sub-command named by args[0] and returns the exit status.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "changedigest: unknown command %q (see 'changedigest help')\n", args[0])
		return exitUsage
	}
	err := cmd.run(ctx, &env{args: args[1:], stdin: stdin, stdout: stdout, stderr: stderr})
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "changedigest %s: %v\n", args[0], err)
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
	fmt.Fprintln(w, "Run 'changedigest COMMAND -h' for the flags of a command.")
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
