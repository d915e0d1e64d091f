package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/textdiff"
	"github.com/changedigest/changedigest/segmenter"
)

func init() {
	commands["diff"] = command{summary: "compare two versions of a page or feed", run: runDiff}
}

func runDiff(ctx context.Context, e *env) error {
	fs := newFlagSet(e, "diff", "OLD NEW [--json] [--zone SELECTOR] [--show-noise]")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	showNoise := fs.Bool("show-noise", false, "list the changes of markup, styles and scripts that are noise (generated tokens, one edit repeated at many places); by default they are counted, not listed")
	zone := fs.String("zone", "", "CSS `selector` restricting the comparison to part of a page; of JSON documents also a JSON path or a jq program (jq:…)")
	allowPrivate := fs.Bool("allow-private", false, "allow fetching private, loopback and link-local addresses")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 2 {
		return usagef("diff takes two files, OLD and NEW (got %d arguments)", len(args))
	}
	s := segmenter.New()
	f := crawl.NewFetcher()
	f.AllowPrivate = *allowPrivate
	f.MaxBodySize = int64(s.MaxBytes)
	old, err := readDocument(ctx, f, args[0], s.MaxBytes)
	if err != nil {
		return err
	}
	new, err := readDocument(ctx, f, args[1], s.MaxBytes)
	if err != nil {
		return err
	}
	d, err := s.DiffContext(ctx, old, new, *zone)
	if err != nil {
		return err
	}
	var folded *foldedNoise
	if !*showNoise {
		folded = foldNoise(d)
	}
	if d.Changes == nil {
		d.Changes = []changedigest.Change{}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			*changedigest.Diff
			Noise *foldedNoise `json:"noise_folded,omitempty"`
		}{d, folded})
	}
	return writeDiffReport(e.stdout, d, folded, useColour(e.stdout))
}

// foldedNoise counts the changes a diff leaves out of its list: noise
// that shows no text a reader sees (generated tokens in attributes and
// scripts, an edit repeated at many places), by reason.
type foldedNoise struct {
	Changes int            `json:"changes"`
	Reasons map[string]int `json:"reasons"`
}

// foldNoise takes the changes of markup, styles and scripts that are
// noise out of d and counts them; content changes that are noise (a
// comment counter) stay listed with their reason. Nil when none.
func foldNoise(d *changedigest.Diff) *foldedNoise {
	var f *foldedNoise
	kept := d.Changes[:0]
	for _, c := range d.Changes {
		if c.Noise == "" || c.Type == changedigest.ChangeContent {
			kept = append(kept, c)
			continue
		}
		if f == nil {
			f = &foldedNoise{Reasons: map[string]int{}}
		}
		f.Changes++
		reason := c.Noise
		if i := strings.IndexByte(reason, ':'); i > 0 {
			reason = reason[:i] // "repeated edit: as at …"
		}
		f.Reasons[reason]++
	}
	d.Changes = kept
	return f
}

// readDocument reads a file of at most max bytes, or fetches a URL
// through the guarded fetcher (decoded to UTF-8).
func readDocument(ctx context.Context, fetcher *crawl.Fetcher, name string, max int) ([]byte, error) {
	if strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://") {
		res, err := fetcher.Fetch(ctx, crawl.Request{URL: name})
		if err != nil {
			var he *crawl.HTTPError
			if errors.As(err, &he) || errors.Is(err, crawl.ErrPrivateAddress) || errors.Is(err, crawl.ErrBadURL) {
				return nil, changedigest.Errorf(changedigest.EINVALID, "%s: %v", name, err)
			}
			if errors.Is(err, crawl.ErrTooLarge) {
				return nil, changedigest.Errorf(changedigest.ETOOLARGE, "%s: %v", name, err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return res.Body, nil
	}
	f, err := os.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, changedigest.Errorf(changedigest.EINVALID, "%s: %v", name, pe.Err)
		}
		return nil, changedigest.Errorf(changedigest.EINVALID, "%s: %v", name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		if st.IsDir() {
			return nil, changedigest.Errorf(changedigest.EINVALID, "%s: is a directory, not a file", name)
		}
		if st.Size() > int64(max) {
			return nil, changedigest.Errorf(changedigest.ETOOLARGE, "%s: %d bytes is larger than the limit of %d bytes", name, st.Size(), max)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, changedigest.Errorf(changedigest.EINVALID, "%s: %v", name, err)
	}
	if len(b) > max {
		return nil, changedigest.Errorf(changedigest.ETOOLARGE, "%s: larger than the limit of %d bytes", name, max)
	}
	return b, nil
}

// useColour reports whether w is a terminal and NO_COLOR is unset.
func useColour(w io.Writer) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	return isTerminal(w)
}

const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// writeDiffReport prints a diff for people: a summary line, then each
// change with its segment, type, operation, location and a word-level
// difference of its texts.
func writeDiffReport(w io.Writer, d *changedigest.Diff, folded *foldedNoise, colour bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s: old %d segments (%d bytes), new %d segments (%d bytes), similarity %.3f\n",
		d.Kind, d.Old.Segments, d.Old.Bytes, d.New.Segments, d.New.Bytes, d.Similarity)
	if folded != nil {
		reasons := make([]string, 0, len(folded.Reasons))
		for r, n := range folded.Reasons {
			reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
		}
		slices.Sort(reasons)
		what := "changes that are noise"
		if folded.Changes == 1 {
			what = "change that is noise"
		}
		fmt.Fprintf(bw, "%d %s not listed (%s; --show-noise lists them)\n", folded.Changes, what, strings.Join(reasons, ", "))
	}
	if len(d.Changes) == 0 {
		if folded != nil {
			fmt.Fprintln(bw, "no other changes")
			return bw.Flush()
		}
		fmt.Fprintln(bw, "no changes")
		return bw.Flush()
	}
	noun := "changes"
	if len(d.Changes) == 1 {
		noun = "change"
	}
	segments := d.ChangedSegments
	if folded != nil {
		// the segments of the changes listed
		seen := map[int]bool{}
		for _, c := range d.Changes {
			seen[c.Segment] = true
		}
		segments = len(seen)
	}
	fmt.Fprintf(bw, "%d %s in %d segments\n", len(d.Changes), noun, segments)
	writeChanges(bw, d.Kind, d.Changes, colour)
	return bw.Flush()
}

// writeChanges prints changes readably: type, op, location and a
// word-level diff, coloured when colour is set.
func writeChanges(bw *bufio.Writer, kind changedigest.Kind, changes []changedigest.Change, colour bool) {
	paint := func(code, s string) string {
		if !colour || s == "" {
			return s
		}
		return code + s + ansiReset
	}
	for _, c := range changes {
		fmt.Fprintln(bw)
		what := "segment"
		if kind == changedigest.KindFeed {
			what = "item"
		}
		fmt.Fprintf(bw, "%s %d  %s  %s\n", what, c.Segment, paint(ansiBold, string(c.Type)+" "+string(c.Op)), paint(ansiDim, location(c)))
		if c.Noise != "" {
			fmt.Fprintf(bw, "  %s\n", paint(ansiDim, "noise: "+c.Noise))
		}
		hasContext := c.Before != "" || c.After != ""
		switch {
		case c.OldText == "" && c.NewText == "":
			// counted with others (the more places of a script): its
			// place says it
		case c.Op == changedigest.OpInsert && !hasContext:
			fmt.Fprintf(bw, "  %s\n", paint(ansiGreen, "+ "+shorten(c.NewText, 400)))
		case c.Op == changedigest.OpDelete && !hasContext:
			fmt.Fprintf(bw, "  %s\n", paint(ansiRed, "- "+shorten(c.OldText, 400)))
		case c.Op == changedigest.OpMove:
			fmt.Fprintf(bw, "  moved: %s\n", shorten(c.NewText, 400))
		default:
			// the unchanged words around the change, as the views show them
			fmt.Fprintf(bw, "  %s%s%s\n", c.Before, wordDiff(c.OldText, c.NewText, colour), c.After)
		}
		if c.Truncated {
			fmt.Fprintf(bw, "  %s\n", paint(ansiDim, fmt.Sprintf("(cut from %d and %d bytes)", c.OldLen, c.NewLen)))
		}
	}
}

func location(c changedigest.Change) string {
	var parts []string
	if c.Where != "" {
		parts = append(parts, c.Where) // "under ‘Prices’", "on page 2"
	}
	if c.Title != "" {
		parts = append(parts, fmt.Sprintf("%q", c.Title))
	}
	if c.Path != "" {
		parts = append(parts, c.Path)
	}
	if c.Link != "" && c.Link != c.Path {
		parts = append(parts, c.Link)
	}
	return strings.Join(parts, " ")
}

// shorten cuts s to about n bytes at a word boundary.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	if k := strings.LastIndexByte(s[:cut], ' '); k > n/2 {
		cut = k
	}
	return s[:cut] + " …"
}

// wordDiff marks the words deleted from old and inserted in new, keeping a
// few words of context around each difference.
func wordDiff(old, new string, colour bool) string {
	const context = 6
	var sb strings.Builder
	edits := textdiff.Readable(textdiff.WordDiff(old, new))
	for i, ed := range edits {
		switch ed.Op {
		case textdiff.Delete:
			if colour {
				sb.WriteString(ansiRed + "[-" + ed.Text + "-]" + ansiReset)
			} else {
				sb.WriteString("[-" + ed.Text + "-]")
			}
		case textdiff.Insert:
			if colour {
				sb.WriteString(ansiGreen + "{+" + ed.Text + "+}" + ansiReset)
			} else {
				sb.WriteString("{+" + ed.Text + "+}")
			}
		default:
			sb.WriteString(elide(ed.Text, context, i > 0, i < len(edits)-1))
		}
	}
	return sb.String()
}

// elide keeps n words at the start of s (when head) and at its end (when
// tail), replacing what lies between with "…".
func elide(s string, n int, head, tail bool) string {
	toks := textdiff.Words(s)
	var idx []int // positions of the words
	for k, t := range toks {
		if !textdiff.IsSpace(t) {
			idx = append(idx, k)
		}
	}
	keep := 0
	if head {
		keep += n
	}
	if tail {
		keep += n
	}
	if len(idx) <= keep+2 {
		return s
	}
	var sb strings.Builder
	if head {
		sb.WriteString(strings.Join(toks[:idx[n-1]+1], ""))
		sb.WriteString(" ")
	}
	sb.WriteString("…")
	if tail {
		sb.WriteString(" ")
		sb.WriteString(strings.Join(toks[idx[len(idx)-n]:], ""))
	}
	return sb.String()
}
