package segmenter

import (
	"strings"
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
		if untypeset(c.OldText) == untypeset(c.NewText) {
			c.Noise = NoiseTypography
		}
	}
}

// untypeset is s without its typographic characters, its spaces
// collapsed.
func untypeset(s string) string {
	s = strings.Map(func(r rune) rune {
		if typographic(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
