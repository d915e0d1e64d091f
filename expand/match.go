package expand

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

// Matcher finds a profile's terms, original and expanded, in text. Make
// one with Compile, Expander.Matcher or New; it is read-only and safe for
// concurrent use.
type Matcher struct {
	exps    []Expansion
	entries []entry
	phrases []phrase
	first   map[string][]int32 // first token of a form → phrases
	wn      *WordNet
	// evidence holds, per interest, the forms of the content words of
	// its sense's definition (each mapped to its base form): what a
	// hypernym needs beside it.
	evidence map[string]map[string]string
}

// MaxHypernymLevel is the farthest hypernym a Matcher finds: a broader
// term more than this many levels above the interest never matches.
const MaxHypernymLevel = 2

// MinEvidence is how many distinct words of an interest's definition a
// text must hold beside a hypernym for the hypernym to match, when no
// other term of the interest is in the text: "boat" alone is not about
// the ferry (a boat that transports people or vehicles across a body of
// water…), "the boat carries vehicles across the water" is.
const MinEvidence = 2

// entry is what a match reports.
type entry struct {
	interest, term, relation string
	weight                   float64
}

// phrase is one surface form of a term, as tokens.
type phrase struct {
	rest  []string // tokens after the first
	gaps  []byte   // before each of rest: gapLoose, gapHyphen or gapDot
	entry int32
	// head and tail are symbols the term has before its first word or
	// after its last (".NET", "C++", "C#"), which the text must have too.
	head, tail string
}

// Kinds of gap between the words of a term, and what they match in text.
const (
	gapLoose  byte = 0 // a space: white space, hyphens or underscores
	gapHyphen byte = 1 // a hyphen ("A-list", "e-mail"): hyphens only
	gapDot    byte = 2 // a full stop ("S.U.V."): a full stop only
)

// New compiles a matcher for profile p over the embedded WordNet with the
// default knobs. Errors are those of Load and Expander.Expand.
func New(p changedigest.Profile) (*Matcher, error) {
	wn, err := Load()
	if err != nil {
		return nil, err
	}
	return NewExpander(wn).Matcher(p)
}

// Matcher expands p and compiles the result.
func (e *Expander) Matcher(p changedigest.Profile) (*Matcher, error) {
	exps, err := e.Expand(p)
	if err != nil {
		return nil, err
	}
	return e.WordNet.Compile(exps), nil
}

// Compile builds a matcher for expansions: every form of every term (its
// inflections in its part of speech, a literal phrase as a noun phrase; a
// hyphenated term also written solid, "e-mail" as "email") becomes a
// phrase of tokens. Where two terms share a form, the heavier wins, and at
// equal weight the earlier.
func (wn *WordNet) Compile(exps []Expansion) *Matcher {
	m := &Matcher{exps: slices.Clone(exps), first: map[string][]int32{}, wn: wn, evidence: map[string]map[string]string{}}
	byForm := map[string]int32{} // form key → entry
	var forms []phrase
	var firsts []string
	for _, x := range exps {
		if x.Sense != nil {
			m.evidence[x.Interest.Term] = wn.definitionWords(x.Sense.Gloss, x.Interest.Term)
		}
		for _, t := range x.Terms {
			if t.Relation == RelHypernym && t.Level > MaxHypernymLevel {
				continue
			}
			pos := t.POS
			if pos == 0 {
				pos = Noun
			}
			en := entry{interest: x.Interest.Term, term: t.Text, relation: t.Relation, weight: t.Weight}
			var variants []string
			for _, f := range wn.Inflections(t.Text, pos) {
				variants = append(variants, f)
				if strings.Contains(f, "-") {
					variants = append(variants, strings.ReplaceAll(f, "-", ""))
				}
			}
			for _, f := range variants {
				ph, first, ok := termPhrase(f)
				if !ok {
					continue
				}
				key := ph.head + "\x03" + first + string(ph.gaps) + "\x03" + strings.Join(ph.rest, "\x00") + "\x03" + ph.tail
				if i, ok := byForm[key]; ok {
					if m.entries[i].weight < en.weight {
						m.entries[i] = en
					}
					continue
				}
				byForm[key] = int32(len(m.entries))
				ph.entry = int32(len(m.entries))
				m.entries = append(m.entries, en)
				forms = append(forms, ph)
				firsts = append(firsts, first)
			}
		}
	}
	for i, ph := range forms {
		m.first[firsts[i]] = append(m.first[firsts[i]], int32(len(m.phrases)))
		m.phrases = append(m.phrases, ph)
	}
	return m
}

// Expansions returns the expansions the matcher was compiled from.
func (m *Matcher) Expansions() []Expansion { return slices.Clone(m.exps) }

// token is a word of the text: its byte span and its folded form.
type token struct {
	start, end int
	norm       string
}

// isWordRune reports whether r belongs to a word.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }

func isApostrophe(r rune) bool { return r == '\'' || r == '’' }

// tokens splits text into words: runs of letters, digits and marks, with
// apostrophes between letters kept inside ("don't", "election's").
func tokens(text string, dst []token) []token {
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += n
			continue
		}
		start := i
		i += n
		for i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if isWordRune(r) {
				i += n
				continue
			}
			if isApostrophe(r) && i+n < len(text) {
				if r2, _ := utf8.DecodeRuneInString(text[i+n:]); isWordRune(r2) {
					i += n
					continue
				}
			}
			break
		}
		dst = append(dst, token{start: start, end: i, norm: fold(text[start:i])})
	}
	return dst
}

// fold lower-cases a word and writes its apostrophes as '.
func fold(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ReplaceAll(strings.ToLower(w), "’", "'")
		}
	}
	return w
}

// termPhrase splits a term's form into its first folded token and a
// phrase: the other tokens, the kinds of the gaps between them, and the
// symbols before and after.
// ok is false if the form has no word.
func termPhrase(f string) (ph phrase, first string, ok bool) {
	ts := tokens(f, nil)
	if len(ts) == 0 {
		return phrase{}, "", false
	}
	for i, t := range ts {
		if i == 0 {
			continue
		}
		gap := f[ts[i-1].end:t.start]
		switch {
		case gap == ".":
			ph.gaps = append(ph.gaps, gapDot)
		case strings.ContainsAny(gap, "-‐‑"):
			ph.gaps = append(ph.gaps, gapHyphen)
		default:
			ph.gaps = append(ph.gaps, gapLoose)
		}
		ph.rest = append(ph.rest, t.norm)
	}
	// A final full stop or apostrophe is punctuation more often than
	// part of the term ("S.U.V." in "an S.U.V"); a leading one is not
	// (".NET").
	ph.head = strings.TrimSpace(f[:ts[0].start])
	ph.tail = strings.TrimRight(strings.TrimSpace(f[ts[len(ts)-1].end:]), ".'’ ")
	return ph, ts[0].norm, true
}

// possessive returns a word without a final 's or ’s, and the byte length
// of that ending in the original text.
func possessive(norm, orig string) (string, int, bool) {
	base, ok := strings.CutSuffix(norm, "'s")
	if !ok || base == "" {
		return "", 0, false
	}
	if strings.HasSuffix(orig, "’s") || strings.HasSuffix(orig, "’S") {
		return base, len("’s"), true
	}
	return base, 2, true
}

// gapOK reports whether two words of a phrase may be separated by gap in
// text: for a space in the term, white space, hyphens, underscores and
// apostrophes but no other punctuation; for a hyphen, hyphens only; for a
// full stop, a full stop.
func gapOK(gap string, kind byte) bool {
	if gap == "" {
		return false
	}
	switch kind {
	case gapDot:
		return gap == "."
	case gapHyphen:
		return gap == "-" || gap == "‐" || gap == "‑"
	}
	for _, r := range gap {
		switch {
		case unicode.IsSpace(r), r == '-', r == '_', r == '‐', r == '‑', isApostrophe(r):
		default:
			return false
		}
	}
	return true
}

// candidate is a match before overlaps are resolved.
type candidate struct {
	first, last int // token range, last exclusive
	start, end  int // byte span
	entry       int32
}

// Match finds the profile's terms in text: whole words and phrases
// (words a term separates by a space may be separated by white space,
// hyphens or underscores; a hyphen in a term, as in "A-list", must be one
// in the text), case-insensitively, across the inflections of each term
// and with a possessive 's allowed at the end. Where matches overlap, the
// one with more words wins, then the heavier, then the earlier. The result
// is sorted by position; spans are byte offsets into text, on rune
// boundaries. Text that is not UTF-8 is matched as far as it decodes.
func (m *Matcher) Match(text string) []changedigest.Match {
	if m == nil || len(m.phrases) == 0 || text == "" {
		return nil
	}
	toks := tokens(text, make([]token, 0, len(text)/6))
	var cands []candidate
	for i, tk := range toks {
		for _, pi := range m.first[tk.norm] {
			if c, ok := m.extend(text, toks, i, pi, tk.end); ok {
				cands = append(cands, c)
			}
		}
		if base, n, ok := possessive(tk.norm, text[tk.start:tk.end]); ok {
			for _, pi := range m.first[base] {
				if ph := m.phrases[pi]; len(ph.rest) == 0 && ph.head == "" && ph.tail == "" {
					cands = append(cands, candidate{first: i, last: i + 1, start: tk.start, end: tk.end - n, entry: m.phrases[pi].entry})
				}
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.last-b.first, a.last-a.first),
			cmp.Compare(m.entries[b.entry].weight, m.entries[a.entry].weight),
			cmp.Compare(a.start, b.start), cmp.Compare(a.entry, b.entry))
	})
	taken := make([]bool, len(toks))
	var kept []candidate
	for _, c := range cands {
		free := true
		for k := c.first; k < c.last && free; k++ {
			free = !taken[k]
		}
		if !free {
			continue
		}
		for k := c.first; k < c.last; k++ {
			taken[k] = true
		}
		kept = append(kept, c)
	}
	slices.SortFunc(kept, func(a, b candidate) int { return cmp.Compare(a.start, b.start) })
	kept = m.corroborated(kept, toks)
	if len(kept) == 0 {
		return nil
	}
	out := make([]changedigest.Match, len(kept))
	for i, c := range kept {
		e := m.entries[c.entry]
		out[i] = changedigest.Match{Interest: e.interest, Term: e.term, Relation: e.relation, Weight: e.weight, Start: c.start, End: c.end}
	}
	return out
}

// corroborated drops the hypernym matches that stand alone: a broader
// term ("boat" for ferry, "physics" for astronomy) says little of the
// interest by itself, so it matches only where the text also holds
// another term of the same interest, or MinEvidence words of the
// interest's definition outside the match.
func (m *Matcher) corroborated(kept []candidate, toks []token) []candidate {
	hyper := false
	for _, c := range kept {
		hyper = hyper || m.entries[c.entry].relation == RelHypernym
	}
	if !hyper {
		return kept
	}
	other := map[string]bool{} // interests matched by a term that is no hypernym
	for _, c := range kept {
		if e := m.entries[c.entry]; e.relation != RelHypernym {
			other[e.interest] = true
		}
	}
	out := kept[:0]
	for _, c := range kept {
		e := m.entries[c.entry]
		if e.relation != RelHypernym || other[e.interest] {
			out = append(out, c)
			continue
		}
		ev := m.evidence[e.interest]
		found := map[string]bool{}
		for i := 0; i < len(toks) && len(found) < MinEvidence; i++ {
			if i >= c.first && i < c.last {
				continue
			}
			if b, ok := ev[toks[i].norm]; ok {
				found[b] = true
			}
		}
		if len(found) >= MinEvidence {
			out = append(out, c)
		}
	}
	return out
}

// definitionWords returns the content words of a definition (four
// letters or more, not stop words, not the interest's own words) in all
// their inflections, each mapped to its base form.
func (wn *WordNet) definitionWords(gloss, interest string) map[string]string {
	own := map[string]bool{}
	for _, w := range strings.Fields(normalize(interest)) {
		own[w] = true
	}
	out := map[string]string{}
	for _, tk := range tokens(gloss, nil) {
		w := tk.norm
		if len(w) < 4 || stopwords()[w] || own[w] {
			continue
		}
		out[w] = w
		for _, pos := range []POS{Noun, Verb} {
			for _, b := range wn.BaseForms(w, pos) {
				if own[b] || stopwords()[b] {
					continue
				}
				out[w] = b
				for _, f := range wn.Inflections(b, pos) {
					if _, ok := out[fold(f)]; !ok {
						out[fold(f)] = b
					}
				}
			}
		}
	}
	return out
}

// extend checks whether phrase pi matches the tokens from i on.
func (m *Matcher) extend(text string, toks []token, i int, pi int32, end int) (candidate, bool) {
	ph := m.phrases[pi]
	j := i
	for k, w := range ph.rest {
		j++
		if j >= len(toks) || !gapOK(text[toks[j-1].end:toks[j].start], ph.gaps[k]) {
			return candidate{}, false
		}
		tk := toks[j]
		switch {
		case tk.norm == w:
			end = tk.end
		case k == len(ph.rest)-1:
			base, n, ok := possessive(tk.norm, text[tk.start:tk.end])
			if !ok || base != w {
				return candidate{}, false
			}
			end = tk.end - n
		default:
			return candidate{}, false
		}
	}
	start := toks[i].start
	if ph.head != "" {
		if start < len(ph.head) || !strings.EqualFold(text[start-len(ph.head):start], ph.head) {
			return candidate{}, false
		}
		start -= len(ph.head)
	}
	if ph.tail != "" {
		if end != toks[j].end || len(text)-end < len(ph.tail) || !strings.EqualFold(text[end:end+len(ph.tail)], ph.tail) {
			return candidate{}, false
		}
		end += len(ph.tail)
	}
	return candidate{first: i, last: j + 1, start: start, end: end, entry: ph.entry}, true
}
