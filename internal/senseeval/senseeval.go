// Package senseeval measures how often the expander chooses the sense a
// person means by an interest term: on a list of terms with their right
// senses, each term alone and with the rest of its profile as context.
// The expand tests and the sensebench command share it.
package senseeval

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
)

// Case is one term of the list.
type Case struct {
	Profile string   // the profile the term belongs to ("p01")
	Term    string   // as a person would write it
	Right   []string // synset IDs that are right
	Note    string   // the meaning, for people
}

// HeldOut reports whether the case is in the held-out half: profiles with
// an even number.
func (c Case) HeldOut() bool {
	n := 0
	fmt.Sscanf(strings.TrimLeft(c.Profile, "p"), "%d", &n)
	return n%2 == 0
}

// Read parses the list: tab-separated profile, term, right synsets
// (comma-separated) and note; blank lines and lines starting with # are
// skipped.
func Read(r io.Reader) ([]Case, error) {
	var out []Case
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Split(s, "\t")
		if len(f) < 3 {
			return nil, fmt.Errorf("senseeval: line %d: want profile, term and synsets separated by tabs", line)
		}
		c := Case{Profile: f[0], Term: f[1], Right: strings.Split(f[2], ",")}
		if len(f) > 3 {
			c.Note = f[3]
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("senseeval: %w", err)
	}
	return out, nil
}

// Result is how one case came out.
type Result struct {
	Case
	Alone, InContext         string // the synset chosen, "" for none
	AloneRight, ContextRight bool
}

// Run expands each term alone and within its profile.
func Run(e *expand.Expander, cases []Case) ([]Result, error) {
	profiles := map[string][]string{}
	for _, c := range cases {
		profiles[c.Profile] = append(profiles[c.Profile], c.Term)
	}
	inContext := map[string]string{} // profile + term → synset
	for name, terms := range profiles {
		p := changedigest.Profile{}
		for _, t := range terms {
			p.Interests = append(p.Interests, changedigest.Interest{Term: t, Source: "foaf:interest", Weight: 1})
		}
		xs, err := e.Expand(p)
		if err != nil {
			return nil, err
		}
		for _, x := range xs {
			if x.Sense != nil {
				inContext[name+"\x00"+x.Interest.Term] = x.Sense.ID
			}
		}
	}
	out := make([]Result, len(cases))
	for i, c := range cases {
		xs, err := e.ExpandTerms(c.Term)
		if err != nil {
			return nil, err
		}
		r := Result{Case: c, InContext: inContext[c.Profile+"\x00"+c.Term]}
		if len(xs) == 1 && xs[0].Sense != nil {
			r.Alone = xs[0].Sense.ID
		}
		r.AloneRight = slices.Contains(c.Right, r.Alone)
		r.ContextRight = slices.Contains(c.Right, r.InContext)
		out[i] = r
	}
	return out, nil
}

// Share is the share of results, among those keep selects, that are right
// alone and with context, and how many were selected.
func Share(rs []Result, keep func(Result) bool) (alone, context float64, n int) {
	var a, c int
	for _, r := range rs {
		if keep != nil && !keep(r) {
			continue
		}
		n++
		if r.AloneRight {
			a++
		}
		if r.ContextRight {
			c++
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	return float64(a) / float64(n), float64(c) / float64(n), n
}
