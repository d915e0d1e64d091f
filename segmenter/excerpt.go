package segmenter

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// What a change shows of its texts.
//
// The comparison works on whole texts: an inserted or deleted block has
// its full text, an updated block its full text before and after. A
// content update of a block is then shown as its hunks: each run of
// changed words (runs apart by at most hunkGap unchanged words are one
// hunk, unless it only deletes or only inserts) becomes one change whose OldText and NewText hold only the words
// of that run, with up to Context unchanged words before and after it in
// Before and After. So one changed word in a long table cell or pre block
// shows that word and its neighbours, not the cell. Hunks whose words are
// the same on both sides (only spacing differs) are no change.
//
// Nothing is cut silently: with MaxText set, a longer text is cut at a
// word boundary, Truncated is set and OldLen and NewLen give the full
// lengths. Similarity always comes from the full texts.

// hunkGap is the number of unchanged words that may separate two changed
// runs of one hunk: a one-word gap ("the") reads better inside the hunk
// than as two changes.
const hunkGap = 2

// editKind says whether edits delete (kindDel), insert (kindIns) or both.
func editKind(es []textdiff.Edit) uint8 {
	var k uint8
	for _, e := range es {
		k |= opKind(e.Op)
	}
	return k
}

// hunk is one run of changed words of an update, with its context.
type hunk struct {
	before, old, new, after string
}

// hunks splits the update of old into new into runs of changed words with
// up to ctx words of context on each side. Runs whose words do not differ
// (spacing only) are left out. ctx < 0 gives one hunk with both texts
// whole.
func hunks(bu *textdiff.Budget, old, new string, ctx int) []hunk {
	if ctx < 0 {
		if sameWordTokens(old, new) {
			return nil
		}
		return []hunk{{old: old, new: new}}
	}
	edits := bu.WordDiff(old, new)
	// runs of changes: [i, j) ranges of edits that are not Equal, with
	// short equal runs between them folded in
	type run struct{ i, j int }
	var runs []run
	for i := 0; i < len(edits); {
		if edits[i].Op == textdiff.Equal {
			i++
			continue
		}
		j := i
		for j < len(edits) && edits[j].Op != textdiff.Equal {
			j++
		}
		if n := len(runs); n > 0 && runs[n-1].j == i-1 && !moreWords(edits[i-1].Text, hunkGap) {
			runs[n-1].j = j
		} else {
			runs = append(runs, run{i, j})
		}
		i = j
	}
	// A run of only deleted or only inserted words keeps the words
	// between its parts out: they would show on one side and the other
	// ("</i>Urophora cardui</i>" → "Urophora cardui").
	var split []run
	for _, r := range runs {
		if k := editKind(edits[r.i:r.j]); k != kindDel && k != kindIns {
			split = append(split, r)
			continue
		}
		a := r.i
		for b := r.i; b < r.j; b++ {
			if edits[b].Op == textdiff.Equal && moreWords(edits[b].Text, 0) {
				if a < b {
					split = append(split, run{a, b})
				}
				a = b + 1
			}
		}
		if a < r.j {
			split = append(split, run{a, r.j})
		}
	}
	runs = split
	var out []hunk
	for _, r := range runs {
		var ob, nb strings.Builder
		for _, e := range edits[r.i:r.j] {
			if e.Op != textdiff.Insert {
				ob.WriteString(e.Text)
			}
			if e.Op != textdiff.Delete {
				nb.WriteString(e.Text)
			}
		}
		rawOld, rawNew := ob.String(), nb.String()
		h := hunk{old: strings.TrimSpace(rawOld), new: strings.TrimSpace(rawNew)}
		if sameWordTokens(h.old, h.new) {
			continue
		}
		// Before and After keep the spaces that separate them from the
		// changed words, so before+old+after is the old text's passage.
		if r.i > 0 {
			h.before = lastWordsOf(edits[r.i-1].Text, ctx)
		}
		if strings.HasPrefix(rawOld, " ") || strings.HasPrefix(rawNew, " ") {
			h.before += " "
		}
		if r.j < len(edits) {
			h.after = firstWordsOf(edits[r.j].Text, ctx)
		}
		if strings.HasSuffix(rawOld, " ") || strings.HasSuffix(rawNew, " ") {
			h.after = " " + h.after
		}
		if strings.TrimSpace(h.before) == "" {
			h.before = ""
		}
		if strings.TrimSpace(h.after) == "" {
			h.after = ""
		}
		out = append(out, h)
	}
	return out
}

// sameWordTokens reports whether two texts have the same tokens but for
// whitespace.
func sameWordTokens(a, b string) bool {
	if a == b {
		return true
	}
	i, j := 0, 0
	for {
		i, j = nextWord(a, i), nextWord(b, j)
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		ei, ej := textdiff.TokenEnd(a, i), textdiff.TokenEnd(b, j)
		if a[i:ei] != b[j:ej] {
			return false
		}
		i, j = ei, ej
	}
}

// nextWord is where the first token of s from byte i on that is not
// whitespace starts (len(s): none).
func nextWord(s string, i int) int {
	for i < len(s) {
		j := textdiff.TokenEnd(s, i)
		if !textdiff.IsSpace(s[i:j]) {
			return i
		}
		i = j
	}
	return len(s)
}

// moreWords reports whether s has more than n tokens that are not
// whitespace, reading no further than the (n+1)-th.
func moreWords(s string, n int) bool {
	for i := nextWord(s, 0); i < len(s); i = nextWord(s, textdiff.TokenEnd(s, i)) {
		if n == 0 {
			return true
		}
		n--
	}
	return false
}

// firstWordsOf is the start of s up to the end of its n-th
// space-separated word (leading spaces kept).
func firstWordsOf(s string, n int) string {
	if n <= 0 {
		return ""
	}
	k := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && (i+1 == len(s) || s[i+1] == ' ') {
			k++
			if k == n {
				return s[:i+1]
			}
		}
	}
	return s
}

// lastWordsOf is the end of s from the start of its n-th space-separated
// word before the end (trailing spaces kept).
func lastWordsOf(s string, n int) string {
	if n <= 0 {
		return ""
	}
	k := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != ' ' && (i == 0 || s[i-1] == ' ') {
			k++
			if k == n {
				return s[i:]
			}
		}
	}
	return s
}

// present turns the changes found with whole texts into what is reported:
// content updates split into hunks with context, texts capped at MaxText
// (saying so). A change's other fields are kept in each of its hunks.
func (s *Segmenter) present(w *work, cs []changedigest.Change) []changedigest.Change {
	out := cs[:0:0]
	for _, c := range cs {
		w.add(1 + (len(c.OldText)+len(c.NewText))/64)
		if c.Type == changedigest.ChangeContent && c.Op == changedigest.OpUpdate && c.OldText != "" && c.NewText != "" &&
			c.Before == "" && c.After == "" { // not already a hunk of the text pass
			for _, h := range hunks(w.budget(), c.OldText, c.NewText, s.Context) {
				d := c
				d.OldText, d.NewText, d.Before, d.After = h.old, h.new, h.before, h.after
				switch {
				case d.NewText == "":
					d.Op = changedigest.OpDelete // words taken out of the text
				case d.OldText == "":
					d.Op = changedigest.OpInsert
				}
				if s.Context >= 0 {
					narrow(&d)
				}
				out = append(out, s.capped(w.budget(), d))
			}
			continue
		}
		if c.Type == changedigest.ChangeContent && c.Op == changedigest.OpUpdate && s.Context >= 0 && (c.Before != "" || c.After != "") {
			narrow(&c) // a run of the text pass
		}
		out = append(out, s.capped(w.budget(), c))
	}
	return out
}

// narrow moves the pieces at the start and end that the old and new text
// of a content update share into Before and After. Words are compared
// whole ("3.6", "Kentucky's", "2021-04-07" are one word each), so a word
// that only gained a part or changed a mark shows as the part that
// changed: "3.6" → "3.6.2" is ".2" inserted after "3.6", "Kentucky's" →
// "Kentucky’s" is the apostrophe. Pieces are runs of letters and digits
// and single other characters; a word is never cut inside such a run. A
// side left empty makes the update an insert or a delete.
func narrow(c *changedigest.Change) {
	before, old, new, after, ok := sharedAffixes(c.OldText, c.NewText, false)
	if !ok {
		return
	}
	c.Before += before
	c.After = after + c.After
	c.OldText, c.NewText = old, new
	switch {
	case old == "":
		c.Op = changedigest.OpInsert
	case new == "":
		c.Op = changedigest.OpDelete
	}
}

// sharedAffixes cuts old and new into pieces and returns the pieces they
// share at the start and at the end, and what differs between them. With
// bothSides, neither middle is left empty: the shared piece next to it
// stays in both. ok is false when they share nothing, when both middles
// (with bothSides, either) would be empty, or when a middle starts or
// ends with a space (a change of spacing next to the shared part).
func sharedAffixes(old, new string, bothSides bool) (before, o, n, after string, ok bool) {
	decided := false
	if len(old)+len(new) >= longAffixes {
		before, o, n, after, ok, decided = sharedAffixesLong(old, new, bothSides)
	}
	if !decided {
		po, pn := pieces(old), pieces(new)
		p, q := textdiff.Affixes(po, pn)
		if bothSides && p > 0 && (p == len(po)-q || p == len(pn)-q) {
			p--
		}
		before, after = strings.Join(po[:p], ""), strings.Join(po[len(po)-q:], "")
		o, n = strings.Join(po[p:len(po)-q], ""), strings.Join(pn[p:len(pn)-q], "")
		ok = p > 0 || q > 0
	}
	if !ok || o == "" && n == "" || bothSides && (o == "" || n == "") ||
		strings.TrimSpace(o) != o || strings.TrimSpace(n) != n {
		return "", "", "", "", false
	}
	return before, o, n, after, true
}

// longAffixes is the length of two texts from which sharedAffixes cuts
// only the parts around their first and last difference into pieces.
const longAffixes = 4 << 10

// sharedAffixesLong is what sharedAffixes finds (ok: old and new share a
// piece at the start or the end), for long texts whose first and last
// difference are apart: only the pieces around those are cut, the rest
// being the same bytes in both, so a change at each end of a megabyte of
// text does not cut the megabyte into pieces. decided is false when that
// does not apply; the pieces of both are then to be cut whole.
func sharedAffixesLong(old, new string, bothSides bool) (before, o, n, after string, ok, decided bool) {
	if !utf8.ValidString(old) || !utf8.ValidString(new) {
		return // pieces of invalid text do not join back to it
	}
	short := min(len(old), len(new))
	pre := 0 // bytes the same at the start
	for pre < short && old[pre] == new[pre] {
		pre++
	}
	suf := 0 // and at the end
	for suf < short && old[len(old)-1-suf] == new[len(new)-1-suf] {
		suf++
	}
	if pre+suf+16 > short {
		return // the shared start and end meet: cut the pieces whole
	}
	// Pieces start and end between a space and what is not one (pieceCut).
	// The pieces before a cut that both texts have at the same place are
	// the same, so are those after a cut at the same distance from the
	// end, and only the windows between such a cut and the first (last)
	// difference are cut into pieces.
	dn := len(new) - len(old)
	from := pre // the window of the start: old[from:oe], new[from:ne]
	for from > 0 && !(pieceCut(old, from) && pieceCut(new, from)) {
		from--
	}
	oe, ne := pre+1, pre+1
	for oe < len(old) && !pieceCut(old, oe) {
		oe++
	}
	for ne < len(new) && !pieceCut(new, ne) {
		ne++
	}
	to := len(old) - suf // the window of the end: old[os:to], new[ns:to+dn]
	for to < len(old) && !(pieceCut(old, to) && pieceCut(new, to+dn)) {
		to++
	}
	os, ns := len(old)-suf-1, len(new)-suf-1
	for os > 0 && !pieceCut(old, os) {
		os--
	}
	for ns > 0 && !pieceCut(new, ns) {
		ns--
	}
	if oe > os || ne > ns {
		return // the windows meet
	}
	po, pn := pieces(old[from:oe]), pieces(new[from:ne])
	p, pb, last := 0, from, 0 // shared pieces of the window, bytes of the shared start
	for p < len(po) && p < len(pn) && po[p] == pn[p] {
		pb += len(po[p])
		last = len(po[p])
		p++
	}
	qo, qn := pieces(old[os:to]), pieces(new[ns:to+dn])
	q, sb := 0, len(old)-to
	for q < len(qo) && q < len(qn) && qo[len(qo)-1-q] == qn[len(qn)-1-q] {
		sb += len(qo[len(qo)-1-q])
		q++
	}
	if p == len(po) || p == len(pn) || q == len(qo) || q == len(qn) {
		return // a window shared whole: the difference is not in it
	}
	if bothSides && pb > 0 && (pb == len(old)-sb || pb == len(new)-sb) {
		if p == 0 {
			return // the shared piece to give back is before the window
		}
		pb -= last
	}
	ok = pb > 0 || sb > 0
	return old[:pb], old[pb : len(old)-sb], new[pb : len(new)-sb], old[len(old)-sb:], ok, true
}

// pieceCut reports whether pieces of s (as pieces cuts them) may start at
// byte i: at either end, or between a space and a character that is not
// one.
func pieceCut(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	if !utf8.RuneStart(s[i]) {
		return false
	}
	r1, _ := utf8.DecodeLastRuneInString(s[:i])
	r2, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r1) != unicode.IsSpace(r2)
}

// narrowMarkup shows an edit of attributes (a change whose texts list
// them, as attrs writes them) as the part that changed, as narrow does
// for words: the start and end the old and new listings share go to
// Before and After, at most Context words each: `href="…/tree/3.6.4"` →
// `href="…/tree/3.6.5"` is "4" → "5" after `href="…/tree/3.6.`. It runs after the noise marking, which reads
// whole listings. The change stays an update with both sides: a side
// that would be empty keeps the shared piece next to it.
func (s *Segmenter) narrowMarkup(w *work, cs []changedigest.Change) {
	if s.Context < 0 {
		return
	}
	for i := range cs {
		c := &cs[i]
		w.add(1 + (len(c.OldText)+len(c.NewText))/64)
		if c.Type == changedigest.ChangeContent || c.Op != changedigest.OpUpdate || c.Truncated ||
			c.OldText == "" || c.NewText == "" || c.OldText == c.NewText || c.Before != "" || c.After != "" ||
			!isAttrListing(c.OldText) || !isAttrListing(c.NewText) {
			continue
		}
		before, old, new, after, ok := sharedAffixes(c.OldText, c.NewText, true)
		if !ok {
			continue
		}
		c.Before, c.After = lastWordsOf(before, s.Context), firstWordsOf(after, s.Context)
		c.OldText, c.NewText = old, new
	}
}

// isAttrListing reports whether s starts as attrs lists attributes:
// name="value".
func isAttrListing(s string) bool {
	i := strings.IndexByte(s, '=')
	if i <= 0 || !strings.HasPrefix(s[i:], `="`) {
		return false
	}
	for _, r := range s[:i] {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(":._-", r) {
			return false
		}
	}
	return true
}

// pieces splits s into runs of letters and digits, runs of whitespace and
// single other characters.
func pieces(s string) []string {
	var out []string
	for _, w := range textdiff.Words(s) {
		start := 0
		for i, r := range w {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.IsSpace(r) {
				continue
			}
			if start < i {
				out = append(out, w[start:i])
			}
			out = append(out, string(r))
			start = i + utf8.RuneLen(r)
		}
		if start < len(w) {
			out = append(out, w[start:])
		}
	}
	return out
}

// capped cuts the texts of c to MaxText bytes when that is set, and says so.
func (s *Segmenter) capped(bu *textdiff.Budget, c changedigest.Change) changedigest.Change {
	n := s.MaxText
	if n <= 0 || (len(c.OldText) <= n && len(c.NewText) <= n) {
		return c
	}
	c.Truncated, c.OldLen, c.NewLen = true, len(c.OldText), len(c.NewText)
	if c.Op == changedigest.OpUpdate && c.Type == changedigest.ChangeContent {
		c.OldText, c.NewText = window(bu, c.OldText, c.NewText, n)
	} else {
		c.OldText, c.NewText = clip(c.OldText, n), clip(c.NewText, n)
	}
	return c
}
