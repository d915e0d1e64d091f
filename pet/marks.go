package pet

import (
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Where a search's words are in a hit's text. The index is asked for
// the matching documents only, without scores or term locations: for a
// common word over a million segment versions, decoding every hit's
// frequencies and locations cost more than the search, and a
// conjunction of plain terms is then an intersection of bitmaps. The
// few hits shown are analysed again here, with the field's analyzer,
// and marked where the index would have placed them: a word's every
// token, and a phrase's tokens where they stand at the phrase's
// relative positions (the gaps of dropped stop words included).

// marks is what a search text marks in a hit: its words and its phrases.
type marks struct {
	words   map[string]bool
	phrases [][]phraseTerm
}

// phraseTerm is a phrase's term and its position after the phrase's first.
type phraseTerm struct {
	term string
	off  int
}

// newMarks reads text as textQuery does: "quoted" parts are phrases,
// the other words are words.
func newMarks(a analysis.Analyzer, text string) *marks {
	m := &marks{words: map[string]bool{}}
	for i, chunk := range strings.Split(text, `"`) {
		toks := a.Analyze([]byte(chunk))
		if i%2 == 0 || len(toks) < 2 {
			for _, t := range toks {
				m.words[string(t.Term)] = true
			}
			continue
		}
		ph := make([]phraseTerm, len(toks))
		for k, t := range toks {
			ph[k] = phraseTerm{string(t.Term), t.Position - toks[0].Position}
		}
		m.phrases = append(m.phrases, ph)
	}
	return m
}

// spans gives the byte ranges of text that m marks, in order, without
// overlaps.
func (m *marks) spans(a analysis.Analyzer, text string) []Span {
	toks := a.Analyze([]byte(text))
	var out []Span
	var at map[int]*analysis.Token
	if len(m.phrases) > 0 {
		at = make(map[int]*analysis.Token, len(toks))
		for _, t := range toks {
			at[t.Position] = t
		}
	}
	for _, t := range toks {
		if m.words[string(t.Term)] {
			out = append(out, Span{t.Start, t.End})
		}
		for _, ph := range m.phrases {
			if string(t.Term) != ph[0].term || !phraseAt(at, t.Position, ph) {
				continue
			}
			for _, p := range ph {
				u := at[t.Position+p.off]
				out = append(out, Span{u.Start, u.End})
			}
		}
	}
	slices.SortFunc(out, func(a, b Span) int { return a.Start - b.Start })
	// One mark for a token that is both a word and in a phrase, or in two
	// phrases (tokens do not overlap).
	return slices.Compact(out)
}

// phraseAt reports whether the tokens at pos onwards are the phrase ph.
func phraseAt(at map[int]*analysis.Token, pos int, ph []phraseTerm) bool {
	for _, p := range ph {
		u, ok := at[pos+p.off]
		if !ok || string(u.Term) != p.term {
			return false
		}
	}
	return true
}
