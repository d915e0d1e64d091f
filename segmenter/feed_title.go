package segmenter

import "strings"

// The same item under a title that changed at its end.
//
// A feed that says where a story stands in its title ("PTR 2.7.3 |
// Preview Blog", then "PTR 2.7.3 | Now Live"), or gives a story new text
// under the same title, leaves two leftover items after the other passes
// that a reader knows for one. titlePass pairs them when nothing better
// matched: the titles start with the same words (all of the shorter
// title, or all up to a separator such as "|"), neither is dated apart
// from the other, and each is the other's only such match.
// Items whose stable identifiers differ stay apart, as in similarityPass.

// titleMinWords is the fewest words a title shares with another to be
// taken for it.
const titleMinWords = 2

// titleSeparator reports whether w ends a part of a title (what follows
// it is the item's state, not its name).
func titleSeparator(w string) bool { return w == "|" }

// titleMaxLeft bounds the leftover items of one side that titlePass
// looks at: past it a version was rebuilt, and its items are told as
// added and removed.
const titleMaxLeft = 4096

// titleSeparators are written as "|" in titleWords.
var titleSeparators = strings.NewReplacer(":", " | ", "|", " | ", "–", " | ", "—", " | ", "·", " | ", " - ", " | ")

// titleMaxWords bounds the words of a title that are compared: a title
// is a line, and a feed's can be made of anything.
const titleMaxWords = 24

// titleWords is an item's title as lowercase words (its first
// titleMaxWords), its separators ("Monday: budget passed", "2.7.3 | Now
// Live") words "|" of their own.
func titleWords(it *FeedItem) []string {
	t := it.Title
	if len(t) > 512 {
		t = t[:512]
	}
	ws := strings.Fields(titleSeparators.Replace(" " + strings.ToLower(t) + " "))
	return ws[:min(len(ws), titleMaxWords)]
}

// sharedStart is how many words a and b start with alike.
func sharedStart(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// sameTitled reports whether titles a and b name the same item: one is
// the start of the other, or they differ after a separator ("PTR 2.7.3 |
// Preview Blog", "PTR 2.7.3 | Now Live") whose start no other title of
// the feed has (parts counts the titles of both versions by each start
// up to a separator: "Match report: …" names a series, not an item);
// with the words they share.
func sameTitled(a, b []string, parts map[string]int) (int, bool) {
	n := sharedStart(a, b)
	if n < titleMinWords {
		return n, false
	}
	if n == min(len(a), len(b)) {
		return n, true
	}
	return n, titleSeparator(a[n-1]) && parts[strings.Join(a[:n], " ")] <= 2
}

// titleParts counts the titles of items by each of their starts that
// ends at a separator (within the first titleMaxWords words).
func titleParts(w *work, versions ...[]FeedItem) map[string]int {
	parts := map[string]int{}
	for _, items := range versions {
		for i := range items {
			ws := titleWords(&items[i])
			w.add(1 + len(ws))
			for k, word := range ws {
				if titleSeparator(word) && k > 0 {
					parts[strings.Join(ws[:k+1], " ")]++
				}
			}
		}
	}
	return parts
}

func (m *feedMatching) titlePass() {
	ou, nu := feedLeftovers(m.oldTo), feedLeftovers(m.newTo)
	if len(ou) == 0 || len(nu) == 0 || len(ou) > titleMaxLeft || len(nu) > titleMaxLeft {
		return
	}
	key := func(ws []string) string { return ws[0] + " " + ws[1] }
	parts := titleParts(m.w, m.old, m.new)
	byStart := map[string][]int{} // first two words → new leftovers
	newWords := make(map[int][]string, len(nu))
	for _, n := range nu {
		ws := titleWords(&m.new[n])
		if len(ws) >= titleMinWords {
			newWords[n] = ws
			byStart[key(ws)] = append(byStart[key(ws)], n)
		}
	}
	type best struct {
		other, words int
		tie          bool
	}
	oldBest := map[int]best{}
	newBest := map[int]best{}
	better := func(bs map[int]best, i, other, words int) {
		b, ok := bs[i]
		switch {
		case !ok || words > b.words:
			bs[i] = best{other: other, words: words}
		case words == b.words && other != b.other:
			b.tie = true
			bs[i] = b
		}
	}
	for _, o := range ou {
		ws := titleWords(&m.old[o])
		if len(ws) < titleMinWords {
			continue
		}
		for _, n := range byStart[key(ws)] {
			m.w.add(1 + len(ws))
			if m.otherDate(o, n) || m.keptApart(o, n) {
				continue
			}
			if words, ok := sameTitled(ws, newWords[n], parts); ok {
				better(oldBest, o, n, words)
				better(newBest, n, o, words)
			}
		}
	}
	for o, b := range oldBest {
		if b.tie {
			continue
		}
		if nb := newBest[b.other]; nb.tie || nb.other != o {
			continue
		}
		m.oldTo[o], m.newTo[b.other] = b.other, o
	}
}

// keptApart reports whether two items carry stable identifiers of a
// feed whose identifiers paired other items: theirs differ, so they are
// two items (only a republished copy, feedRepublishThreshold alike, is
// taken for one).
func (m *feedMatching) keptApart(o, n int) bool {
	oi, ni := &m.old[o], &m.new[n]
	return m.idMatched && (oi.GUID != "" || oi.Link != "") && (ni.GUID != "" || ni.Link != "")
}
