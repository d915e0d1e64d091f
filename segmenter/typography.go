package segmenter

import (
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

// Typography.
//
// "it's" → "it’s", "9 – 17" → "9 — 17", or a page whose curly quotes,
// "©" and emoji now come out as "???" (its encoding broke on the server):
// the words read the same, so it is not news. A change of text that only
// changes quotes, question marks, and punctuation and symbols beyond
// ASCII (dashes, ellipses, "©", emoji) is noise (NoiseTypography). Full
// stops, commas, hyphens and plus signs can be part of a number ("1.5" →
// "15", "-5" → "+5"), and currency and mathematical signs mean something
// ("€" → "$", "≤" → "≥"): those are told.

// NoiseTypography is the reason of a change of typography only.
const NoiseTypography = changedigest.NoiseTypography

// typographic reports whether r is a character a change of typography
// only changes.
func typographic(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '\'' || r == '"' || r == '`' || r == '?'
	}
	return unicode.IsPunct(r) || unicode.Is(unicode.So, r) || r == utf8.RuneError
}

// markTypography marks content changes that change typography only: with
// the typographic characters taken out, both sides read the same.
func markTypography(changes []changedigest.Change) {
	for i := range changes {
		c := &changes[i]
		if c.Noise != "" || c.Type != changedigest.ChangeContent || c.Op == changedigest.OpMove || c.OldText == c.NewText {
			continue
		}
		if sameUntypeset(c.OldText, c.NewText) {
			c.Noise = NoiseTypography
		}
	}
}

// sameUntypeset reports whether a and b read the same without their
// typographic characters, their spaces collapsed, as untypeset gives them
// (typography_test.go), compared as they are read rather than made: the
// texts of a change can be a whole page's.
func sameUntypeset(a, b string) bool {
	ra, rb := untypesetReader{s: a}, untypesetReader{s: b}
	for {
		ca, oka := ra.next()
		cb, okb := rb.next()
		if ca != cb || oka != okb {
			return false
		}
		if !oka {
			return true
		}
	}
}

// untypesetReader reads the characters of a text as untypeset gives
// them: its words (runs of characters neither spaces nor typographic),
// one space between two.
type untypesetReader struct {
	s       string
	i       int
	started bool // a word was read
	space   bool // a space is owed before the next word
}

// next returns the next character, false at the end.
func (r *untypesetReader) next() (rune, bool) {
	for r.i < len(r.s) {
		c, n := rune(r.s[r.i]), 1
		if c >= utf8.RuneSelf {
			c, n = utf8.DecodeRuneInString(r.s[r.i:])
		}
		if typographic(c) || unicode.IsSpace(c) {
			r.i += n
			r.space = r.started
			continue
		}
		if r.space {
			r.space = false
			return ' ', true
		}
		r.i += n
		r.started = true
		return c, true
	}
	return 0, false
}
