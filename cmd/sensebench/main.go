// Command sensebench measures how often the sense chosen for an interest
// term is the one a person means, before and after the interest prior, and
// what a wrong sense costs: how many sentences of real pages its
// expansion would have matched.
//
//	go run ./cmd/sensebench [-list expand/testdata/interests.tsv] [-corpus ../shared/corpus] [-all]
//
// For each term of the list (profile, term, the right synsets; see
// expand/testdata/interests.tsv) it expands the term alone and within the
// rest of its profile, with the expander's defaults ("now") and with the
// senses' frequencies alone ("before": no interest prior, the context
// weight of then). For each term whose sense differs between the two, or
// with -all for each term, it prints both senses and how many sentences of
// the corpus's pages (pages/readability, main text) each sense's
// expansion matches beyond the term itself: the matches a wrong sense
// adds to a digest. It ends with the share of right senses per half of the
// list (the held-out half: profiles with an even number).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/internal/senseeval"
	"github.com/changedigest/changedigest/segmenter"
)

func main() {
	list := flag.String("list", "expand/testdata/interests.tsv", "the list of terms with their right senses")
	corpus := flag.String("corpus", "../shared/corpus", "the test corpus (its pages/readability/pages/*/source.html are matched)")
	all := flag.Bool("all", false, "print every term, not only those whose sense changed")
	flag.Parse()
	if err := run(*list, *corpus, *all); err != nil {
		fmt.Fprintln(os.Stderr, "sensebench:", err)
		os.Exit(1)
	}
}

func run(list, corpus string, all bool) error {
	f, err := os.Open(list)
	if err != nil {
		return err
	}
	cases, err := senseeval.Read(f)
	f.Close()
	if err != nil {
		return err
	}
	wn, err := expand.Load()
	if err != nil {
		return err
	}
	now := expand.NewExpander(wn)
	before := expand.NewExpander(wn)
	before.Prior, before.Context = nil, 1.8
	rNow, err := senseeval.Run(now, cases)
	if err != nil {
		return err
	}
	rBefore, err := senseeval.Run(before, cases)
	if err != nil {
		return err
	}
	sentences, pages, err := corpusSentences(corpus)
	if err != nil {
		return err
	}
	fmt.Printf("%d terms in %s; %d sentences of %d corpus pages\n\n", len(cases), list, len(sentences), pages)

	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "term\talone before\talone now\tin context before → now\tsentences matched by before's sense\tby now's sense")
	wrongBefore, wrongNow := 0, 0
	for i, r := range rNow {
		b := rBefore[i]
		if !all && b.Alone == r.Alone {
			continue
		}
		nb, err := matchedSentences(wn, r.Term, b.Alone, sentences)
		if err != nil {
			return err
		}
		nn, err := matchedSentences(wn, r.Term, r.Alone, sentences)
		if err != nil {
			return err
		}
		if !b.AloneRight {
			wrongBefore += nb
		}
		if !r.AloneRight {
			wrongNow += nn
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s → %s\t%d\t%d\n", r.Term, sense(wn, b.Alone, b.AloneRight), sense(wn, r.Alone, r.AloneRight),
			mark(b.ContextRight), mark(r.ContextRight), nb, nn)
	}
	tw.Flush()
	fmt.Printf("\nsentences matched through a wrong sense chosen alone (of the terms shown): before %d, now %d\n\n", wrongBefore, wrongNow)
	for _, half := range []struct {
		name string
		keep func(senseeval.Result) bool
	}{
		{"designed on", func(r senseeval.Result) bool { return !r.HeldOut() }},
		{"held out", func(r senseeval.Result) bool { return r.HeldOut() }},
		{"all", nil},
	} {
		ab, cb, n := senseeval.Share(rBefore, half.keep)
		an, cn, _ := senseeval.Share(rNow, half.keep)
		fmt.Printf("%-12s %3d terms: right alone %5.1f%% → %5.1f%%, with their profile %5.1f%% → %5.1f%%\n", half.name, n, 100*ab, 100*an, 100*cb, 100*cn)
	}
	return nil
}

// sense names a synset for the table: its first word and the start of
// its gloss, with ✓ or ✗.
func sense(wn *expand.WordNet, id string, right bool) string {
	s, ok := wn.Synset(id)
	if !ok {
		return mark(right) + " (none)"
	}
	g := s.Gloss
	if len(g) > 34 {
		g = g[:34] + "…"
	}
	return mark(right) + " " + g
}

func mark(right bool) string {
	if right {
		return "✓"
	}
	return "✗"
}

// matchedSentences counts the sentences in which the expansion of term in
// sense synset matches something other than the term itself.
func matchedSentences(wn *expand.WordNet, term, synset string, sentences []string) (int, error) {
	if synset == "" {
		return 0, nil
	}
	p := changedigest.Profile{Interests: []changedigest.Interest{{Term: term, Source: changedigest.SourceManual, Weight: 1}},
		Senses: []changedigest.SenseChoice{{Term: term, Synset: synset}}}
	m, err := expand.NewExpander(wn).Matcher(p)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range sentences {
		if slices.ContainsFunc(m.Match(s), func(mt changedigest.Match) bool { return mt.Relation != expand.RelTerm }) {
			n++
		}
	}
	return n, nil
}

// corpusSentences reads the main text of the corpus's pages, cut into
// sentences.
func corpusSentences(corpus string) ([]string, int, error) {
	files, err := filepath.Glob(filepath.Join(corpus, "pages", "readability", "pages", "*", "source.html"))
	if err != nil {
		return nil, 0, err
	}
	if len(files) == 0 {
		return nil, 0, fmt.Errorf("no pages under %s/pages/readability/pages", corpus)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, 0, err
		}
		for _, para := range strings.Split(segmenter.MainText(b), "\n") {
			for _, s := range splitSentences(para) {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out, len(files), nil
}

// splitSentences cuts a paragraph after each full stop, question or
// exclamation mark followed by a space.
func splitSentences(p string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(p); i++ {
		if (p[i] == '.' || p[i] == '!' || p[i] == '?') && p[i+1] == ' ' {
			out = append(out, p[start:i+1])
			start = i + 2
		}
	}
	return append(out, p[start:])
}
