// Package pdftext reads the text of a PDF document page by page with
// poppler's pdftotext (Debian package poppler-utils), run as a child
// process under limits: a wall-clock time, an address-space (memory)
// limit and a CPU-time limit set on the child with setrlimit, a page
// limit and a cap on the text read from it. A PDF is parsed only in that
// child, never in the service's own process: a document built to make
// its reader run out of time or memory (a "PDF bomb") costs the child,
// which is stopped, and the check fails with an error naming the limit.
//
// The limits are set with prlimit(1) from util-linux (an essential
// package on Debian), or, where it is missing, with the shell's ulimit
// before it executes pdftotext.
package pdftext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
)

// Defaults of the Extractor knobs.
const (
	DefaultProgram   = "pdftotext"
	DefaultTimeout   = 20 * time.Second
	DefaultMaxMemory = 1 << 30
	DefaultMaxPages  = 500
	DefaultMaxOutput = 8 << 20
)

// Errors. Each error Pages returns for a document wraps one of these and
// carries a changedigest error code with a message safe to show to users.
var (
	// ErrNotInstalled: pdftotext was not found (EUNAVAILABLE).
	ErrNotInstalled = errors.New("pdftext: pdftotext is not installed")
	// ErrEncrypted: the document needs a password (EINVALID).
	ErrEncrypted = errors.New("pdftext: encrypted document")
	// ErrCorrupt: pdftotext could not read the document (EINVALID).
	ErrCorrupt = errors.New("pdftext: unreadable document")
	// ErrLimit: reading the document went over one of the limits
	// (ETOOLARGE); the message names which. ErrTimeLimit, ErrMemoryLimit
	// and ErrOutputLimit are kinds of it.
	ErrLimit = errors.New("pdftext: over a limit")
	// ErrTimeLimit: the wall-clock or CPU time limit passed.
	ErrTimeLimit error = &subError{"pdftext: over the time limit", ErrLimit}
	// ErrMemoryLimit: pdftotext failed at its memory limit.
	ErrMemoryLimit error = &subError{"pdftext: over the memory limit", ErrLimit}
	// ErrOutputLimit: the text is larger than MaxOutput.
	ErrOutputLimit error = &subError{"pdftext: over the output limit", ErrLimit}
)

type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// docError is a user-facing error: errors.Is matches its sentinel,
// changedigest.ErrorCode and ErrorMessage read its code and message.
type docError struct {
	kind error
	user *changedigest.Error
}

func (e *docError) Error() string   { return "pdftext: " + e.user.Message }
func (e *docError) Unwrap() []error { return []error{e.kind, e.user} }

func errorf(kind error, format string, args ...any) error {
	code := changedigest.EINVALID
	switch {
	case errors.Is(kind, ErrLimit):
		code = changedigest.ETOOLARGE
	case kind == ErrNotInstalled:
		code = changedigest.EUNAVAILABLE
	}
	return &docError{kind: kind, user: changedigest.Errorf(code, format, args...)}
}

// Extractor runs pdftotext. Its exported fields are the knobs; New sets
// their defaults and a zero or negative value means the default. An
// Extractor is not changed by use and is safe for concurrent use.
type Extractor struct {
	// Program is the pdftotext to run: a name looked up in PATH, or a path.
	Program string
	// Timeout bounds each run in wall-clock time (the context's deadline
	// too, when earlier); the CPU-time limit is set to the same.
	Timeout time.Duration
	// MaxMemory is the child's address-space limit, in bytes (RLIMIT_AS).
	MaxMemory int64
	// MaxPages is the number of pages read; the text of a longer document
	// ends there and Text.More says so.
	MaxPages int
	// MaxOutput bounds the text read from pdftotext, in bytes.
	MaxOutput int64

	// limiter, set by tests, forces "prlimit" or "sh".
	limiter string
}

// New returns an Extractor with the default knobs: pdftotext from PATH,
// 20 s, 1 GiB of address space, 500 pages, 8 MiB of text (the page it
// renders to stays near the segmenter's 10 MiB document limit).
func New() *Extractor {
	return &Extractor{
		Program:   DefaultProgram,
		Timeout:   DefaultTimeout,
		MaxMemory: DefaultMaxMemory,
		MaxPages:  DefaultMaxPages,
		MaxOutput: DefaultMaxOutput,
	}
}

func (x *Extractor) knobs() Extractor {
	var c Extractor
	if x != nil {
		c = *x
	}
	if c.Program == "" {
		c.Program = DefaultProgram
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = DefaultMaxMemory
	}
	if c.MaxPages <= 0 {
		c.MaxPages = DefaultMaxPages
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	return c
}

// Text is the text of a document.
type Text struct {
	// Pages holds the text of each page read, in order, its lines as
	// pdftotext laid them out (columns kept apart by spaces, a blank line
	// between blocks).
	Pages []string
	// More is set when the document has more pages than were read.
	More bool
}

// IsPDF reports whether b is a PDF document: "%PDF-" in its first 1024
// bytes, where PDF readers look for it, after nothing that could be the
// start of a page or a JSON document ('<', '{', '[').
func IsPDF(b []byte) bool {
	i := bytes.Index(b[:min(len(b), 1024)], []byte("%PDF-"))
	return i >= 0 && !bytes.ContainsAny(b[:i], "<{[")
}

// IsPDFType reports whether a Content-Type header names a PDF.
func IsPDFType(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/pdf" || mt == "application/x-pdf"
}

// Available reports whether the Extractor's pdftotext can be found, or
// the ErrNotInstalled error saying how to install it.
func (x *Extractor) Available() error {
	c := x.knobs()
	if _, err := exec.LookPath(c.Program); err != nil {
		return notInstalled(c.Program)
	}
	return nil
}

func notInstalled(program string) error {
	return errorf(ErrNotInstalled, "reading a PDF needs %s, which is not installed: install poppler-utils (apt-get install poppler-utils)", program)
}

// Pages reads the text of pdf page by page under the limits. The
// document is passed to pdftotext on its standard input, nothing is
// written to disk. Failures wrap ErrNotInstalled, ErrEncrypted,
// ErrCorrupt or a kind of ErrLimit (see above), or ctx's error when ctx
// ended first.
func (x *Extractor) Pages(ctx context.Context, pdf []byte) (*Text, error) {
	c := x.knobs()
	prog, err := exec.LookPath(c.Program)
	if err != nil {
		return nil, notInstalled(c.Program)
	}
	runCtx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	secs := int64((c.Timeout + time.Second - 1) / time.Second)
	args := []string{prog, "-layout", "-enc", "UTF-8", "-eol", "unix",
		"-f", "1", "-l", strconv.Itoa(c.MaxPages + 1), "-", "-"}
	cmd := limited(runCtx, c.limiter, c.MaxMemory, secs, args)
	cmd.Stdin = bytes.NewReader(pdf)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, n: 4 << 10}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("pdftext: %w", err)
	}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pdftext: start %s: %w", prog, err)
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, c.MaxOutput+1))
	over := int64(len(out)) > c.MaxOutput
	if over || readErr != nil {
		cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("pdftext: %w", ctx.Err())
	case over:
		return nil, errorf(ErrOutputLimit, "PDF: its text is over the output limit of %s", changedigest.FormatBytes(c.MaxOutput))
	case runCtx.Err() != nil:
		return nil, errorf(ErrTimeLimit, "PDF: reading its text took longer than the time limit of %s", c.Timeout)
	case waitErr != nil:
		return nil, c.failure(waitErr, stderr.String())
	case readErr != nil:
		return nil, fmt.Errorf("pdftext: read the output of %s: %w", prog, readErr)
	}
	return split(out, c.MaxPages)
}

// failure tells why pdftotext failed from its exit status and what it
// wrote on standard error.
func (c *Extractor) failure(err error, stderr string) error {
	msg := firstLine(stderr)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("pdftext: %w", err)
	}
	low := strings.ToLower(stderr)
	ws, _ := ee.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && (ws.Signal() == syscall.SIGXCPU):
		return errorf(ErrTimeLimit, "PDF: reading its text went over the CPU-time limit of %s", c.Timeout)
	case ws.Signaled() || strings.Contains(low, "alloc") || strings.Contains(low, "out of memory") ||
		strings.Contains(low, "failed to map") || strings.Contains(low, "cannot allocate"):
		// Out of address space, C++ code throws bad_alloc and aborts, C
		// code may crash; the loader fails to map its libraries.
		return errorf(ErrMemoryLimit, "PDF: reading its text went over the memory limit of %s (%s)", changedigest.FormatBytes(c.MaxMemory), cmp(msg, ee.String()))
	case strings.Contains(low, "incorrect password") || ee.ExitCode() == 3:
		return errorf(ErrEncrypted, "PDF: the document is encrypted and needs a password to be read")
	case ee.ExitCode() == 127 || strings.Contains(low, "not found"):
		return notInstalled(c.Program)
	}
	if msg == "" {
		msg = ee.String()
	}
	return errorf(ErrCorrupt, "PDF: the document cannot be read (%s)", msg)
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// firstLine is the first line of s that says something, clipped.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return ""
}

// split cuts pdftotext's output into pages at its form feeds.
func split(out []byte, maxPages int) (*Text, error) {
	parts := strings.Split(string(out), "\f")
	if n := len(parts); n > 0 && strings.TrimSpace(parts[n-1]) == "" {
		parts = parts[:n-1] // after the last page's form feed
	}
	if len(parts) == 0 {
		return nil, errorf(ErrCorrupt, "PDF: the document has no pages")
	}
	t := &Text{Pages: parts}
	if len(parts) > maxPages {
		t.Pages, t.More = parts[:maxPages], true
	}
	return t, nil
}

// limited returns the command running args with the limits set on it.
func limited(ctx context.Context, limiter string, mem, secs int64, args []string) *exec.Cmd {
	if limiter == "" {
		limiter = "sh"
		if _, err := exec.LookPath("prlimit"); err == nil {
			limiter = "prlimit"
		}
	}
	if limiter == "prlimit" {
		pre := []string{"--as=" + strconv.FormatInt(mem, 10), "--cpu=" + strconv.FormatInt(secs, 10), "--"}
		return exec.CommandContext(ctx, "prlimit", append(pre, args...)...)
	}
	script := fmt.Sprintf(`ulimit -v %d && ulimit -t %d && exec "$@"`, (mem+1023)/1024, secs)
	return exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
