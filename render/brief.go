package render

import (
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// Briefs: what a person reads of a version in a list of titles (a feed
// reader, a push, an e-mail subject) and in a text-only reader.
//
// The headline names the most telling change in the page's own words:
// the title of a new item or the first words of a new block, "24 → 29"
// with the words around it for a small edit, "‘Opening hours’ rewritten"
// for a large one, what was removed; "+N more" counts the others, and a
// change that matched the reader's interests leads ("★ election"). A
// change in text is written with markers that read right with the styles
// stripped, as a word diff: "[-old-]{+new+}".

// headlineWords bounds the words of new or removed text a headline quotes.
const headlineWords = 10

// headline returns the headline of a view's told changes ("" when none
// is told), a change that matched the interests first, and the first
// interest that change matched.
func headline(v *EventView) (string, string) {
	all := append(append([]ChangeView(nil), v.Profile...), v.General...)
	if len(all) == 0 {
		return "", ""
	}
	best, bestScore := 0, -1
	for i, c := range all {
		if i >= len(v.Profile) && len(v.Profile) > 0 {
			break // a change that matched the interests leads
		}
		if s := tellingScore(c); s > bestScore {
			best, bestScore = i, s
		}
	}
	c := all[best]
	h, shown := changeHeadline(c), 1
	if len(v.Profile) == 0 {
		// A match to the interests is the title's own; others are not added to it.
		h, shown = withShortOnes(all, best, h)
	}
	if more := len(all) - shown + v.Omitted; more > 0 {
		h += " +" + strconv.Itoa(more) + " more"
	}
	lead := ""
	if len(c.Interests) > 0 {
		lead = c.Interests[0]
	}
	return h, lead
}

// Short headlines are named together: a table that gained a column and
// lost two tells them all ("‘FF 119’; removed: ‘FF 91 ESR’, ‘FF 103’")
// where one alone ("‘FF 119’") says little.
const (
	shortHeadline = 4 // words of a headline short enough to take company
	titleQuotes   = 9 // words the headlines of a title quote at most
	titleParts    = 3 // changes a title names at most
)

// withShortOnes adds to h, the short headline of all[best], the
// headlines of the next most telling short changes of text, and returns
// how many changes the result names. A value repeated in many places (a
// table's "No"), a move and an item (whose title is a headline of its
// own) name nothing new and are left to "+N more".
func withShortOnes(all []ChangeView, best int, h string) (string, int) {
	words := len(wordsIn(h))
	if words > shortHeadline || all[best].Item != nil {
		return h, 1
	}
	seen := map[string]int{}
	for _, c := range all {
		seen[PiecesText(c.Pieces)]++
	}
	order := make([]int, 0, len(all))
	for i, c := range all {
		if i != best && c.Type == changedigest.ChangeContent && c.Op != changedigest.OpMove && c.Item == nil && seen[PiecesText(c.Pieces)] == 1 {
			order = append(order, i)
		}
	}
	scores := make(map[int]int, len(order))
	for _, i := range order {
		scores[i] = tellingScore(all[i])
	}
	slices.SortStableFunc(order, func(a, b int) int { return scores[b] - scores[a] })
	parts := []string{h}
	for _, i := range order {
		if len(parts) == titleParts {
			break
		}
		p := changeHeadline(all[i])
		n := len(wordsIn(p))
		if n == 0 || n > shortHeadline || words+n > titleQuotes || slices.Contains(parts, p) {
			continue
		}
		parts = append(parts, p)
		words += n
	}
	// "removed: ‘a’; removed: ‘b’" reads "removed: ‘a’, ‘b’".
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			if r, ok := strings.CutPrefix(p, "removed: "); ok && strings.HasPrefix(parts[i-1], "removed: ") {
				b.WriteString(", " + r)
				continue
			}
			b.WriteString("; ")
		}
		b.WriteString(p)
	}
	return b.String(), len(parts)
}

// tellingScore ranks changes for the headline: new items and blocks
// first, then by the words they change; text moved after text changed.
func tellingScore(c ChangeView) int {
	// Words of three letters or more tell; numbers, codes and marks less.
	score := 0
	for _, p := range c.Pieces {
		if p.Op == "del" || p.Op == "ins" {
			for _, w := range wordsIn(p.Text) {
				if letters(w) < 3 {
					score++
					continue
				}
				// A run of Chinese or Japanese script is a phrase, not a
				// word: about two characters make a word.
				n := max(1, unspaced(w)/2)
				score += 3 * n
				if p.Op == "ins" {
					score += n
				}
			}
		}
	}
	score = min(score, 400)
	switch {
	case c.Type == changedigest.ChangeContent && c.Op == changedigest.OpMove:
		// Words that read elsewhere tell less than words that changed.
		score += 300 + min(len(wordsIn(sideText(c.Pieces, "eq"))), 100)
	case c.Type == changedigest.ChangeContent:
		score += 1000
	}
	if c.Op == changedigest.OpInsert {
		score += 30
	}
	if c.Item != nil && c.Item.Title != "" {
		score += 30
	}
	switch c.Where {
	case "in the navigation", "in the footer", "in the page header", "in the sidebar":
		score /= 2 // the page's frame tells less than its text
	}
	return score
}

// letters counts the letters of w.
func letters(w string) int {
	n := 0
	for _, r := range w {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// unspaced counts the letters of w in scripts written without spaces
// between words (Han, Hiragana, Katakana).
func unspaced(w string) int {
	n := 0
	for _, r := range w {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) {
			n++
		}
	}
	return n
}

// changedWords counts the words deleted and inserted in pieces.
func changedWords(ps []Piece) (del, ins int) {
	for _, p := range ps {
		n := len(wordsIn(p.Text))
		switch p.Op {
		case "del":
			del += n
		case "ins":
			ins += n
		}
	}
	return del, ins
}

// wordsIn splits text into words (no spaces).
func wordsIn(text string) []string {
	var out []string
	for _, t := range textdiff.Words(text) {
		if !textdiff.IsSpace(t) && strings.IndexFunc(t, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			out = append(out, t)
		}
	}
	return out
}

// changeHeadline says one change in a few words.
func changeHeadline(c ChangeView) string {
	if c.Item != nil && c.Item.Title != "" && c.Item.Title != untitledItem {
		switch c.Op {
		case changedigest.OpInsert:
			return c.Item.Title
		case changedigest.OpDelete:
			return "removed: " + c.Item.Title
		}
		if h := editHeadline(c.Pieces); h != "" {
			return c.Item.Title + ": " + h
		}
		return c.Item.Title + " (updated)"
	}
	del, ins := changedWords(c.Pieces)
	switch c.Op {
	case changedigest.OpInsert:
		if ins <= 3 {
			// A word or two added inside a sentence: the sentence there.
			if t := quoteWords(newFrom(c.Pieces), headlineWords); t != "" {
				return t
			}
		}
		if t := quoteWords(sideText(c.Pieces, "ins"), headlineWords); t != "" {
			return t
		}
	case changedigest.OpDelete:
		t := quoteWords(sideText(c.Pieces, "del"), headlineWords)
		if t != "" && del <= 3 {
			if around := quoteWords(sideText(c.Pieces, "eq"), headlineWords/2); around != "" {
				return "removed " + t + " from " + around
			}
		}
		if t != "" {
			return "removed: " + t
		}
	case changedigest.OpMove:
		if t := quoteWords(sideText(c.Pieces, "eq"), headlineWords); t != "" {
			return t + " (moved)"
		}
	}
	if h := editHeadline(c.Pieces); h != "" {
		return h
	}
	if del, ins := changedWords(c.Pieces); del+ins > 2*headlineWords && strings.HasPrefix(c.Where, "under ‘") {
		return strings.TrimPrefix(c.Where, "under ") + " rewritten"
	}
	if t := quoteWords(newFrom(c.Pieces), headlineWords); t != "" {
		return t
	}
	return kindHeadline(c)
}

// newFrom is the new text of pieces from the word before the first
// change on: what a sentence now says where it changed.
func newFrom(ps []Piece) string {
	var b strings.Builder
	started := false
	for i, p := range ps {
		switch {
		case p.Op == "del" || p.Op == "gap":
			started = started || p.Op == "del"
			if started && p.Op == "gap" {
				b.WriteString(" … ")
			}
		case !started && p.Op == "eq":
			if i+1 < len(ps) && (ps[i+1].Op == "ins" || ps[i+1].Op == "del") {
				if w := wordsIn(p.Text); len(w) > 0 {
					b.WriteString(w[len(w)-1] + " ")
				}
			}
		default:
			started = true
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// editHeadline writes a small edit as "price 24 → 29 euros": the words
// deleted and inserted, with a word of their own on each side; "" when
// the edit is too long for a title.
func editHeadline(ps []Piece) string {
	del, ins := changedWords(ps)
	if del == 0 || ins == 0 || del > 12 || ins > 12 {
		return ""
	}
	first, last := -1, -1
	for i, p := range ps {
		if p.Op == "del" || p.Op == "ins" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	// The edits of one place: a run of changes with few words between.
	for i := first + 1; i <= last; i++ {
		if ps[i].Op == "eq" && len(wordsIn(ps[i].Text)) > 3 {
			last = i - 1
			break
		}
	}
	var old, new strings.Builder
	for _, p := range ps[first : last+1] {
		switch p.Op {
		case "del":
			old.WriteString(p.Text)
		case "ins":
			new.WriteString(p.Text)
		default:
			old.WriteString(p.Text)
			new.WriteString(p.Text)
		}
	}
	o, n := oneLine(old.String()), oneLine(new.String())
	if len(wordsIn(o)) > 6 || len(wordsIn(n)) > 6 {
		return ""
	}
	h := o + " → " + n
	// A word on each side, joined as the text joins it.
	if first > 0 && ps[first-1].Op == "eq" {
		t := ps[first-1].Text
		if w := strings.Fields(t); len(w) > 0 {
			sep := ""
			if strings.TrimRightFunc(t, unicode.IsSpace) != t {
				sep = " "
			}
			h = w[len(w)-1] + sep + h
		}
	}
	if last+1 < len(ps) && ps[last+1].Op == "eq" {
		t := ps[last+1].Text
		if w := strings.Fields(t); len(w) > 0 {
			sep := ""
			if strings.TrimLeftFunc(t, unicode.IsSpace) != t {
				sep = " "
			}
			h += sep + w[0]
		}
	}
	return h
}

// sideText is the text of pieces of one op.
func sideText(ps []Piece, op string) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Op == op {
			b.WriteString(p.Text)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// quoteWords quotes the first n words of text, "…" when there are more.
func quoteWords(text string, n int) string {
	f := strings.Fields(text)
	if len(f) == 0 {
		return ""
	}
	if len(f) > n {
		return "‘" + strings.Join(f[:n], " ") + "…’"
	}
	return "‘" + strings.Join(f, " ") + "’"
}

// kindHeadline says a change without text in words: "markup changed".
func kindHeadline(c ChangeView) string {
	switch c.Type {
	case changedigest.ChangeStructural:
		return "markup " + c.OpLabel()
	case changedigest.ChangeCosmetic:
		return "styles changed"
	case changedigest.ChangeBehavioural:
		return "scripts " + c.OpLabel()
	}
	return "text " + c.OpLabel()
}

// BriefLine writes one told change on one line for text-only channels:
// where it is, the item, the words changed with markers (the interests it
// matched are the caller's to say, with their labels).
func BriefLine(c ChangeView) string {
	var b strings.Builder
	if c.Where != "" {
		b.WriteString(c.Where + ": ")
	}
	if c.Item != nil && c.Item.Title != "" {
		switch c.Op {
		case changedigest.OpInsert:
			b.WriteString(c.Item.Added() + ": ")
		case changedigest.OpDelete:
			b.WriteString(c.Item.Removed() + ": ")
		}
		b.WriteString(c.Item.Title)
		b.WriteString(": ")
	}
	if t := strings.TrimSpace(PiecesText(c.Pieces)); t != "" {
		b.WriteString(t)
	} else {
		b.WriteString(kindHeadline(c))
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// Headline says the change in a few words, for a change whose text
// shows nothing ("markup changed").
func (c ChangeView) Headline() string { return changeHeadline(c) }

// Title is the one-line title of a version, for a feed entry, a push or
// an e-mail subject: "Watch name: headline", led by the interest the
// headline's change matched ("★ election: Watch name: headline"); the
// summary of counts when nothing is told.
func (v EventView) Title() string {
	if v.Headline == "" {
		return v.WatchName + ": " + v.Summary
	}
	t := v.WatchName + ": " + v.Headline
	if v.Lead != "" {
		t = "★ " + v.Lead + ": " + t
	}
	return t
}

// dropTitle takes an item's title off the start of its text, where feeds
// repeat it.
func dropTitle(ps []Piece, title string) []Piece {
	if len(ps) == 0 || title == "" || title == untitledItem {
		return ps
	}
	// The title may span pieces: a word of it marked as an interest
	// is a piece of its own.
	out := append([]Piece(nil), ps...)
	rest := title
	i := 0
	for ; i < len(out) && rest != ""; i++ {
		t := out[i].Text
		if i == 0 || strings.HasPrefix(rest, " ") {
			t = strings.TrimLeftFunc(t, unicode.IsSpace)
			rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		}
		switch {
		case strings.HasPrefix(rest, t):
			rest = rest[len(t):]
			out[i].Text = ""
		case strings.HasPrefix(t, rest):
			out[i].Text = strings.TrimLeftFunc(t[len(rest):], unicode.IsSpace)
			rest = ""
		default:
			return ps
		}
	}
	if rest != "" {
		return ps // the text is the title, or shorter: keep it
	}
	for len(out) > 0 && out[0].Text == "" {
		out = out[1:]
	}
	if len(out) == 0 {
		return ps
	}
	return out
}
