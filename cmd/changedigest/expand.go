package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
)

func init() {
	commands["expand"] = command{summary: "show how WordNet widens interest terms", run: runExpand}
}

const expandUsage = "TERM… [--json] [--wordnet-dir DIR]"

func runExpand(ctx context.Context, e *env) error {
	fs := newFlagSet(e, "expand", expandUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	dir := fs.String("wordnet-dir", "", "read WordNet from these dict files instead of the embedded table (slow)")
	terms, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(terms) == 0 {
		return usagef("no term given (usage: changedigest expand %s)", expandUsage)
	}
	for i, t := range terms {
		switch {
		case !utf8.ValidString(t):
			return usagef("term %d is not valid UTF-8", i+1)
		case strings.TrimSpace(t) == "":
			return usagef("term %d is empty", i+1)
		case len(t) > expand.MaxTermBytes:
			return usagef("term %d is longer than %d bytes", i+1, expand.MaxTermBytes)
		}
	}
	wn, source, err := loadWordNet(*dir)
	if err != nil {
		return err
	}
	exps, err := expand.NewExpander(wn).ExpandTerms(terms...)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			WordNet    string             `json:"wordnet"`
			Expansions []expand.Expansion `json:"expansions"`
		}{source, exps})
	}
	for i, x := range exps {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printExpansion(e.stdout, x)
	}
	return nil
}

// printExpansion writes one expansion for people.
func printExpansion(w io.Writer, x expand.Expansion) {
	term := x.Interest.Term
	switch x.Found {
	case expand.FoundNone:
		fmt.Fprintf(w, "%s: not in WordNet; kept as a literal phrase\n", term)
		return
	case expand.FoundBase:
		fmt.Fprintf(w, "%s → %s (base form)", term, x.Lemma)
	case expand.FoundHead:
		fmt.Fprintf(w, "%s: not in WordNet; through its ending %q", term, x.Lemma)
	default:
		fmt.Fprint(w, term)
	}
	s := x.Sense
	considered := "1 sense considered"
	if x.Senses != 1 {
		considered = fmt.Sprintf("%d senses considered", x.Senses)
	}
	fmt.Fprintf(w, ": %s, sense %d (%s, %s; %s)\n", s.POS, s.Number, s.ID, s.Lexname, considered)
	fmt.Fprintf(w, "  %s\n", s.Gloss)
	if x.Reason != "" {
		fmt.Fprintf(w, "  (%s)\n", x.Reason)
	}
	if len(s.Words) > 1 {
		fmt.Fprintf(w, "  words: %s\n", strings.Join(s.Words, ", "))
	}
	for _, rel := range []struct{ name, relation string }{
		{"synonyms", expand.RelSynonym}, {"hypernyms", expand.RelHypernym}, {"hyponyms", expand.RelHyponym},
	} {
		var parts []string
		for _, t := range x.Terms {
			if t.Relation == rel.relation {
				parts = append(parts, fmt.Sprintf("%s %.2f", t.Text, t.Weight))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "  %-10s %s\n", rel.name+":", strings.Join(parts, ", "))
		}
	}
}

// loadWordNet loads the embedded WordNet table, or the dict files in dir
// when it is set (--wordnet-dir), and says which it used.
func loadWordNet(dir string) (*expand.WordNet, string, error) {
	if dir == "" {
		wn, err := expand.Load()
		return wn, "embedded", err
	}
	wn, err := expand.LoadDir(dir)
	if err != nil {
		return nil, "", changedigest.Errorf(changedigest.EINVALID, "--wordnet-dir: %v", err)
	}
	return wn, dir, nil
}
