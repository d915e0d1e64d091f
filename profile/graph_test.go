package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// canonicalGraph returns the triples as sorted N-Triples lines with every
// blank node renamed after a hash of its surroundings, so two graphs that
// differ only in blank node names give the same lines. The hash is refined
// iteratively (colour refinement): a blank node's colour is the hash of its
// previous colour and of the sorted edges (direction, predicate, other
// end's colour). Isomorphic graphs always compare equal; non-isomorphic
// ones could collide only for regular structures FOAF files do not hold.
func canonicalGraph(ts []triple) []string {
	colour := map[string]string{}
	for _, t := range ts {
		for _, x := range []term{t.s, t.o} {
			if x.isBlank() {
				colour[x.value] = "b"
			}
		}
	}
	name := func(x term) string {
		if x.isBlank() {
			return "_:" + colour[x.value]
		}
		return x.String()
	}
	for round := 0; round <= len(colour) && round < 64; round++ {
		edges := map[string][]string{}
		for _, t := range ts {
			if t.s.isBlank() {
				edges[t.s.value] = append(edges[t.s.value], "out "+t.p.String()+" "+name(t.o))
			}
			if t.o.isBlank() {
				edges[t.o.value] = append(edges[t.o.value], "in "+t.p.String()+" "+name(t.s))
			}
		}
		next := map[string]string{}
		classes := map[string]bool{}
		for b := range colour {
			e := edges[b]
			sort.Strings(e)
			h := sha256.Sum256([]byte(colour[b] + "|" + strings.Join(e, "\n")))
			next[b] = hex.EncodeToString(h[:8])
			classes[next[b]] = true
		}
		oldClasses := map[string]bool{}
		for _, c := range colour {
			oldClasses[c] = true
		}
		colour = next
		if len(classes) == len(oldClasses) && round > 0 {
			break
		}
	}
	lines := make([]string, len(ts))
	for i, t := range ts {
		lines[i] = name(t.s) + " " + t.p.String() + " " + name(t.o) + " ."
	}
	sort.Strings(lines)
	// A graph is a set: drop duplicate statements.
	out := lines[:0]
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}

// graphDiff returns the lines only in a and only in b.
func graphDiff(a, b []triple) (onlyA, onlyB []string) {
	ca, cb := canonicalGraph(a), canonicalGraph(b)
	i, j := 0, 0
	for i < len(ca) || j < len(cb) {
		switch {
		case j >= len(cb) || (i < len(ca) && ca[i] < cb[j]):
			onlyA = append(onlyA, ca[i])
			i++
		case i >= len(ca) || cb[j] < ca[i]:
			onlyB = append(onlyB, cb[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}
