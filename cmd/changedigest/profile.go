package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/profile"
)

func init() {
	commands["profile"] = command{summary: "read a FOAF file and print the interest profile", run: runProfile}
}

func runProfile(ctx context.Context, e *env) error {
	flags := newFlagSet(e, "profile", "FOAF_FILE [--json] [--fetch]")
	asJSON := flags.Bool("json", false, "print the profile as JSON")
	fetch := flags.Bool("fetch", false, "also read the linked pages and add their key terms, and the pages interests name")
	allowPrivate := flags.Bool("allow-private", false, "with --fetch: allow private, loopback and link-local addresses")
	wordnetDir := flags.String("wordnet-dir", "", "read WordNet from these dict files instead of the embedded table (slow)")
	args, err := e.parse(flags, e.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		flags.Usage()
		return usagef("want one FOAF file (or - for standard input), got %d arguments", len(args))
	}
	doc, closeDoc, err := openFOAF(args[0], e.stdin)
	if err != nil {
		return err
	}
	defer closeDoc()

	b := profile.NewBuilder()
	b.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *fetch {
		f := crawl.NewFetcher()
		f.AllowPrivate = *allowPrivate
		b.Fetch = pageText(f)
		b.Describe = interestPage(f)
	}
	p, pageErrs, err := b.Build(ctx, doc)
	if err != nil {
		return err
	}
	view := profileView{Profile: p}
	for _, pe := range pageErrs {
		view.PageErrors = append(view.PageErrors, pe.URL+": "+pe.Err.Error())
	}
	wn, _, err := loadWordNet(*wordnetDir)
	if err != nil {
		return err
	}
	exps, err := expand.NewExpander(wn).Expand(*p)
	if err != nil {
		return err
	}
	view.Expansions = map[string][]expand.Term{}
	for _, x := range exps {
		for _, t := range x.Terms {
			if t.Relation != expand.RelTerm && t.Relation != expand.RelKeyTerm {
				view.Expansions[x.Interest.Term] = append(view.Expansions[x.Interest.Term], t)
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(view)
	}
	return view.print(e.stdout)
}

// openFOAF opens the FOAF file named on the command line ("-" is standard input).
func openFOAF(name string, stdin io.Reader) (profile.Document, func(), error) {
	if name == "-" {
		return profile.Document{Body: stdin, Name: "standard input"}, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return profile.Document{}, nil, usagef("cannot read %s: %v", name, errors.Unwrap(err))
		}
		return profile.Document{}, nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return profile.Document{}, nil, usagef("%s is a directory, not a FOAF file", name)
	}
	if abs, err := filepath.Abs(name); err == nil {
		name = abs
	}
	return profile.Document{Body: f, Name: name}, func() { f.Close() }, nil
}

// profileView is what `changedigest profile` prints: the profile, the
// linked pages that could not be read and the WordNet expansions of each
// interest (keyed by term).
type profileView struct {
	*changedigest.Profile
	PageErrors []string                 `json:"page_errors,omitempty"`
	Expansions map[string][]expand.Term `json:"expansions,omitempty"`
}

func (v profileView) print(w io.Writer) error {
	p := v.Profile
	fmt.Fprintf(w, "Name: %s\n", orNone(p.Name))
	fmt.Fprintf(w, "Nick: %s\n", orNone(p.Nick))
	fmt.Fprintf(w, "\nInterests (%d):\n", len(p.Interests))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, in := range p.Interests {
		source := in.Source
		if in.Weight != 1 {
			source = fmt.Sprintf("%s %.2f", in.Source, in.Weight)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", in.Term, source, in.URI)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Expansions) > 0 {
		fmt.Fprintf(w, "\nWordNet expansions:\n")
		for _, in := range p.Interests {
			ex := v.Expansions[in.Term]
			if len(ex) == 0 {
				continue
			}
			words := make([]string, len(ex))
			for i, t := range ex {
				words[i] = t.Text + " (" + t.Relation + ")"
			}
			fmt.Fprintf(w, "  %s: %s\n", in.Term, strings.Join(words, ", "))
		}
	}
	if len(p.Excluded) > 0 {
		fmt.Fprintf(w, "\nExcluded: %s\n", strings.Join(p.Excluded, ", "))
	}
	fmt.Fprintf(w, "\nLinked pages (%d):\n", len(p.Pages))
	tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, pg := range p.Pages {
		fmt.Fprintf(tw, "  %s\t%s\n", pg.Property, pg.URL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.PageErrors) > 0 {
		fmt.Fprintf(w, "\nPages not read (%d):\n", len(v.PageErrors))
		for _, pe := range v.PageErrors {
			fmt.Fprintf(w, "  %s\n", pe)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
