package segmenter

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// Item mapping between two versions of a feed (seed 000, section 4.3):
// items are paired by GUID, then by link, then by identical content, then
// by title and publication date, then by similarity, 30% title and 70%
// description. Where publication dates tell a feed's items apart, items
// dated more than a day and a half apart are never the same item.
const (
	feedTitleWeight = 0.3
	feedTextWeight  = 0.7

	// feedMatchThreshold is the score two items left over by the GUID,
	// link and content passes need to be taken for the same item, when
	// the feed's identifiers do not settle it (no GUIDs or links, or all
	// of them changed, as when a blog moves host). Measured on the corpus
	// by TestFeedMatchThresholdOnCorpus: of 93 edits of one story (same
	// GUID, text changed) in the pandasthumb and newsblur histories, all
	// score 0.89 or more but a stub post later written out in full
	// (0.39); of 19,496 pairs of different stories within one feed
	// (feeds/single), 73 score 0.5 or more, 25 0.6, 11 0.7 and 8 0.8,
	// all near-identical (repeated adverts, one flat listed twice, weekly
	// calendars that differ in their dates). From 0.7 to 0.85 neither
	// count moves much; 0.8 sits in that plateau, leaning towards
	// reporting an edited story as new rather than hiding a new story as
	// an edit of an old one.
	feedMatchThreshold = 0.8

	// feedRepublishThreshold is the score needed when the feed's GUIDs or
	// links are stable (some items were paired by them) and both items
	// carry one: their identifiers differ, which says they are different
	// items unless the text is nearly the same (a story republished under
	// a corrected address: pandasthumb "Coppege"/"Coppedge" 0.96, the
	// newsblur slashdot item whose id changed 0.97). Recurring items of
	// one series (weekly calendars, "AdWords API v201509"/"v201506")
	// reach 0.90 and stay apart.
	feedRepublishThreshold = 0.95

	// feedMaxPairs bounds the item pairs scored by similarity (of the
	// pairs that can reach the threshold, see feedPairs); past it (tens of
	// thousands of unmatched items alike enough on both sides) the
	// remaining items are reported as added and removed rather than
	// compared.
	feedMaxPairs = 1 << 20

	// feedMaxWords bounds the words those scores compare, likewise: a
	// score compares the words of both items, so a thousand leftover
	// items of 8 KB on each side would compare billions.
	feedMaxWords = 1 << 25

	// feedSameProbes is how many old items of the same content an item
	// is paired with at most, the first not dated apart.
	feedSameProbes = 64

	// feedContext is how many words of unchanged text an excerpt of a
	// modified item keeps on each side of a change.
	feedContext = 8
)

// feedTokens are an item's words, lower-cased and sorted, for the
// multiset Dice coefficient. Punctuation is left out: in short texts shared
// colons, slashes and dots would make different stories look alike.
type feedTokens struct {
	title, text []string
}

// words is the number of words of both parts.
func (t *feedTokens) words() int { return len(t.title) + len(t.text) }

func feedTokenize(it *FeedItem) feedTokens {
	return feedTokens{title: feedWordBag(it.Title), text: feedWordBag(it.Text)}
}

func feedWordBag(s string) []string {
	// the tokens of textdiff.Words holding a letter or a digit, read
	// twice (to count them, then to keep them) rather than listed
	n := 0
	for i := 0; i < len(s); {
		j := textdiff.TokenEnd(s, i)
		if feedIsWord(s[i:j]) {
			n++
		}
		i = j
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < len(s); {
		j := textdiff.TokenEnd(s, i)
		if w := s[i:j]; feedIsWord(w) {
			out = append(out, strings.ToLower(w))
		}
		i = j
	}
	sort.Strings(out)
	return out
}

// feedIsWord reports whether a token holds a letter or a digit.
func feedIsWord(w string) bool {
	if c := w[0]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return true
	}
	return strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// feedDice is 2·|A∩B|/(|A|+|B|) over two sorted word multisets; 1 when
// both are empty.
func feedDice(a, b []string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	return 2 * float64(common(a, b)) / float64(len(a)+len(b))
}

// feedWeigh combines a title and a text similarity 30/70. A part that is
// empty in both items says nothing and is left out of the weighting, so
// two items with no description are compared by title alone.
func feedWeigh(title, text float64, hasTitle, hasText bool) float64 {
	switch {
	case hasTitle && hasText:
		return feedTitleWeight*title + feedTextWeight*text
	case hasTitle:
		return title
	case hasText:
		return text
	}
	return 1
}

// feedScore is the mapping score of two items: the seed's 30/70 weighting
// of title and description similarity, each measured by the Dice
// coefficient of their word multisets (case and punctuation ignored).
// Every pair of leftover items is scored, so the measure must be cheap:
// Dice is linear in the text length, where textdiff.Similarity runs an
// edit script whose cost and memory grow with the square of the edit
// distance, which for two unrelated articles reaches textdiff.MaxEdits.
// Word order matters little for telling one story from another; the
// reported similarity of a mapped pair (feedSimilarity) does count it.
func feedScore(a, b *feedTokens) float64 {
	return feedWeigh(feedDice(a.title, b.title), feedDice(a.text, b.text),
		len(a.title)+len(b.title) > 0, len(a.text)+len(b.text) > 0)
}

// feedSimilarity is the similarity reported for two mapped items: the same
// weighting over textdiff.Similarity, which also counts moved words.
func feedSimilarity(bu *textdiff.Budget, a, b *FeedItem) float64 {
	if a.Title == b.Title && a.Text == b.Text {
		return 1
	}
	return feedWeigh(bu.Similarity(a.Title, b.Title), bu.Similarity(a.Text, b.Text),
		a.Title != "" || b.Title != "", a.Text != "" || b.Text != "")
}

// feedMatching is the state of mapping two versions' items.
type feedMatching struct {
	old, new     []FeedItem
	oldTo, newTo []int // index of the same item on the other side, or -1
	// idMatched is set when GUIDs or links paired some items: the feed's
	// identifiers are stable, so an item whose identifier is new is taken
	// for a new item unless its text is nearly the same.
	idMatched bool
	// dated is set when publication dates tell the items of both
	// versions apart (datesTell).
	dated bool
	w     *work
}

// feedMatch maps the items of two versions of a feed. It returns, for
// each old item, the index of the same item in the new version or -1.
//
// Passes, each over the items still unmatched: equal GUIDs, then equal
// links, each used only when the value is unique on both sides (so shared
// GUIDs or a home-page link on every item prove nothing); then identical
// content (equal Hash, duplicates in order); then the same title and
// publication date, unique on both sides; then the best-scoring pairs by
// feedScore, highest first, whose score reaches feedPairThreshold; then
// items whose titles differ only at their end (titlePass).
func feedMatch(w *work, old, new []FeedItem) []int {
	m := feedExactMatch(old, new)
	m.w = w
	m.similarityPass()
	m.titlePass()
	return m.oldTo
}

// feedExactMatch runs the GUID, link and content passes, then pairs
// items by title and publication date.
func feedExactMatch(old, new []FeedItem) *feedMatching {
	m := feedIDMatch(old, new)
	m.contentPass()
	m.titleDatePass()
	return m
}

// feedIDMatch starts a matching of old and new items by the GUIDs and
// links that each side holds once.
func feedIDMatch(old, new []FeedItem) *feedMatching {
	m := &feedMatching{old: old, new: new, oldTo: make([]int, len(old)), newTo: make([]int, len(new))}
	for i := range m.oldTo {
		m.oldTo[i] = -1
	}
	for i := range m.newTo {
		m.newTo[i] = -1
	}
	for _, field := range []func(*FeedItem) string{
		func(it *FeedItem) string { return it.GUID },
		func(it *FeedItem) string { return it.Link },
	} {
		oi, ni := uniqueItems(old, m.oldTo, field), uniqueItems(new, m.newTo, field)
		for v, o := range oi {
			if n, ok := ni[v]; ok && o >= 0 && n >= 0 {
				m.oldTo[o], m.newTo[n] = n, o
				m.idMatched = true
			}
		}
	}
	m.dated = datesTell(old) && datesTell(new)
	return m
}

// uniqueItems indexes the items not yet paired by a field's value, -1
// for a value that more than one holds.
func uniqueItems(items []FeedItem, to []int, field func(*FeedItem) string) map[string]int {
	idx := map[string]int{}
	for i := range items {
		if to[i] >= 0 {
			continue
		}
		v := field(&items[i])
		if v == "" {
			continue
		}
		if _, dup := idx[v]; dup {
			idx[v] = -1
		} else {
			idx[v] = i
		}
	}
	return idx
}

// contentPass pairs the items not yet paired whose content is the same.
func (m *feedMatching) contentPass() {
	old, new := m.old, m.new
	// The old items of each hash not yet paired, in order: a list
	// through next from the first, so that a feed of thousands of items
	// makes no list for each.
	first := make(map[[md5.Size]byte]int32, len(old))
	next := make([]int32, len(old))
	var last map[[md5.Size]byte]int32 // the list's last item, past its first
	for i := range old {
		next[i] = -1
		if m.oldTo[i] >= 0 {
			continue
		}
		h := old[i].hashSum()
		f, ok := first[h]
		if !ok {
			first[h] = int32(i)
			continue
		}
		if last == nil {
			last = map[[md5.Size]byte]int32{}
		}
		l, ok := last[h]
		if !ok {
			l = f
		}
		next[l], last[h] = int32(i), int32(i)
	}
	for n := range new {
		if m.newTo[n] >= 0 {
			continue
		}
		h := new[n].hashSum()
		o, ok := first[h]
		if !ok {
			continue
		}
		// the first of the same content not dated apart, among the
		// next few (thousands of items alike would otherwise each be
		// looked for among all the others)
		prev := int32(-1)
		for k := 0; o >= 0 && k < feedSameProbes; k++ {
			if !m.otherDate(int(o), n) {
				m.oldTo[o], m.newTo[n] = n, int(o)
				switch {
				case prev < 0 && next[o] < 0:
					delete(first, h)
				case prev < 0:
					first[h] = next[o]
				default:
					next[prev] = next[o]
				}
				break
			}
			prev, o = o, next[o]
		}
	}
}

// titleDatePass pairs the items not yet paired of the same title and
// publication date: the same story, however much its text was rewritten
// (translated, cut to a line).
func (m *feedMatching) titleDatePass() {
	if !m.dated {
		return
	}
	key := func(it *FeedItem) string {
		if it.Published.IsZero() || feedNormSpace(it.Title) == "" {
			return ""
		}
		return it.Published.UTC().Format(time.RFC3339) + "\x00" + strings.ToLower(feedNormSpace(it.Title))
	}
	oi, ni := uniqueItems(m.old, m.oldTo, key), uniqueItems(m.new, m.newTo, key)
	for v, o := range oi {
		if n, ok := ni[v]; ok && o >= 0 && n >= 0 {
			m.oldTo[o], m.newTo[n] = n, o
		}
	}
}

// datesTell reports whether a version's items carry publication dates
// that tell them apart: nearly all dated, nearly all different. A feed
// that stamps every item with the time it was built does not.
func datesTell(items []FeedItem) bool {
	if len(items) < 2 {
		return false
	}
	seen := map[int64]bool{}
	for i := range items {
		if p := items[i].Published; !p.IsZero() {
			seen[p.Unix()] = true
		}
	}
	return 10*len(seen) >= 9*len(items)
}

// otherDate reports whether two items are dated apart: dates tell the
// feed's items apart and theirs differ by more than a day (a story's
// date may be corrected by hours, not moved to another day).
func (m *feedMatching) otherDate(o, n int) bool {
	if !m.dated {
		return false
	}
	a, b := m.old[o].Published, m.new[n].Published
	if a.IsZero() || b.IsZero() {
		return false
	}
	d := a.Sub(b)
	return d > 36*time.Hour || d < -36*time.Hour
}

// feedPairThreshold is the score two leftover items need to be taken for
// the same item: feedRepublishThreshold when the feed's identifiers are
// stable and both items carry one (so theirs differ), else
// feedMatchThreshold.
func (m *feedMatching) feedPairThreshold(o, n int) float64 {
	if m.keptApart(o, n) {
		return feedRepublishThreshold
	}
	return feedMatchThreshold
}

// feedLeftovers lists the unmatched indices of one side.
func feedLeftovers(to []int) []int {
	var out []int
	for i, t := range to {
		if t < 0 {
			out = append(out, i)
		}
	}
	return out
}

// similarityPass pairs leftover items by score, best first. Only the
// pairs feedPairs finds can reach the threshold, and only those are
// scored.
func (m *feedMatching) similarityPass() {
	ou, nu := feedLeftovers(m.oldTo), feedLeftovers(m.newTo)
	if len(ou) == 0 || len(nu) == 0 {
		return
	}
	ot := make([]feedTokens, len(ou))
	oldWords := 0
	for k, i := range ou {
		ot[k] = feedTokenize(&m.old[i])
		oldWords += ot[k].words()
	}
	nt := make([]feedTokens, len(nu))
	for k, i := range nu {
		nt[k] = feedTokenize(&m.new[i])
		oldWords += nt[k].words()
	}
	m.w.add(oldWords)
	compared := 0
	type cand struct {
		o, n  int
		score float64
	}
	var cands []cand
	feedPairs(ot, nt, func(k, j int) {
		o, n := ou[k], nu[j]
		if m.otherDate(o, n) {
			return
		}
		words := ot[k].words() + nt[j].words()
		if compared+words > feedMaxWords {
			return // past the bound, the items left unpaired are added and removed
		}
		compared += words
		m.w.add(words)
		if s := feedScore(&ot[k], &nt[j]); s >= m.feedPairThreshold(o, n) {
			cands = append(cands, cand{o, n, s})
		}
	})
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.score != b.score {
			return a.score > b.score
		}
		da, db := feedAbs(a.o-a.n), feedAbs(b.o-b.n)
		if da != db {
			return da < db
		}
		if a.o != b.o {
			return a.o < b.o
		}
		return a.n < b.n
	})
	for _, c := range cands {
		if m.oldTo[c.o] < 0 && m.newTo[c.n] < 0 {
			m.oldTo[c.o], m.newTo[c.n] = c.n, c.o
		}
	}
}

// feedSameHash reports whether two items have the same Hash, reading
// their texts side by side up to their first difference rather than
// hashing both whole. Texts holding a NUL byte, which Hash writes between
// the fields, are hashed: only there could two items of other fields
// give the same bytes to hash.
func feedSameHash(a, b *FeedItem) bool {
	if feedHasNUL(a) || feedHasNUL(b) {
		return a.Hash() == b.Hash()
	}
	return a.Link == b.Link && feedSameNormSpace(a.Title, b.Title) && feedSameNormSpace(a.Text, b.Text)
}

// feedHasNUL reports whether a field Hash reads holds a NUL byte.
func feedHasNUL(it *FeedItem) bool {
	return strings.IndexByte(it.Title, 0) >= 0 || strings.IndexByte(it.Link, 0) >= 0 || strings.IndexByte(it.Text, 0) >= 0
}

func feedAbs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// feedCompare maps two parsed versions and lists their changes: updates
// and insertions in new-item order, then deletions in old-item order. It
// also returns the similarity of the versions: twice the summed similarity
// of mapped items over the item count of both (1 for two empty feeds).
//
// When a version is the window of a larger feed (feedWindow), an item
// without a counterpart that the other version's window would have left
// out (feedOutside) is neither added nor removed, and does not count in
// the similarity.
func feedCompare(w *work, old, new *Feed) ([]changedigest.Change, float64) {
	oldTo := feedMatch(w, old.Items, new.Items)
	newTo := make([]int, len(new.Items))
	for i := range newTo {
		newTo[i] = -1
	}
	for o, n := range oldTo {
		if n >= 0 {
			newTo[n] = o
		}
	}
	entered, left := feedOutside(new, old, newTo), feedOutside(old, new, oldTo)
	// at most a change for each new item (but those outside the window)
	// and each old item gone
	most := 0
	for n, o := range newTo {
		if o >= 0 || !entered(n) {
			most++
		}
	}
	for o, n := range oldTo {
		if n < 0 && !left(o) {
			most++
		}
	}
	changes := make([]changedigest.Change, 0, most)
	sum, total := 0.0, len(old.Items)+len(new.Items)
	for n := range new.Items {
		w.add(1)
		ni := &new.Items[n]
		o := newTo[n]
		if o < 0 {
			if entered(n) {
				total--
				continue
			}
			changes = append(changes, feedChange(nil, changedigest.OpInsert, nil, ni, -1, n, 0))
			continue
		}
		oi := &old.Items[o]
		if feedSameHash(oi, ni) {
			sum++
			continue
		}
		w.add(1 + (len(oi.Text)+len(ni.Text))/8)
		sim := feedSimilarity(w.budget(), oi, ni)
		sum += sim
		changes = append(changes, feedChange(w.budget(), changedigest.OpUpdate, oi, ni, o, n, sim))
	}
	for o := range old.Items {
		if oldTo[o] < 0 {
			if left(o) {
				total--
				continue
			}
			changes = append(changes, feedChange(nil, changedigest.OpDelete, &old.Items[o], nil, o, -1, 0))
		}
	}
	if total == 0 {
		return changes, 1
	}
	return changes, 2 * sum / float64(total)
}

// feedChange builds the change record of one item.
func feedChange(bu *textdiff.Budget, op changedigest.Op, oi, ni *FeedItem, o, n int, sim float64) changedigest.Change {
	c := changedigest.Change{
		Type:       changedigest.ChangeContent,
		Op:         op,
		OldItem:    &o,
		NewItem:    &n,
		Similarity: &sim,
	}
	switch op {
	case changedigest.OpInsert:
		c.Segment, c.Path, c.Title, c.Link = n, ni.Key, ni.Title, ni.Link
		c.NewText = ni.SearchText()
	case changedigest.OpDelete:
		c.Segment, c.Path, c.Title, c.Link = o, oi.Key, oi.Title, oi.Link
		c.OldText = oi.SearchText()
	default:
		c.Segment, c.Path, c.Title, c.Link = n, ni.Key, ni.Title, ni.Link
		if feedSameNormSpace(oi.Title, ni.Title) && feedSameNormSpace(oi.Text, ni.Text) {
			c.Type = changedigest.ChangeStructural
		}
		c.OldText, c.NewText = feedExcerpts(bu, oi, ni)
	}
	return c
}

// feedExcerpts says what changed in a modified item: the changed words of
// its title and text with a few words of context on each side ("…" where
// text was left out), and the old and new link when it changed.
func feedExcerpts(bu *textdiff.Budget, oi, ni *FeedItem) (string, string) {
	var ob, nb strings.Builder
	edits := bu.WordDiff(oi.SearchText(), ni.SearchText())
	changed := false
	for _, e := range edits {
		if e.Op != textdiff.Equal {
			changed = true
			break
		}
	}
	if changed {
		for i, e := range edits {
			switch e.Op {
			case textdiff.Delete:
				ob.WriteString(e.Text)
			case textdiff.Insert:
				nb.WriteString(e.Text)
			default:
				ctx := feedTrimContext(e.Text, i == 0, i == len(edits)-1)
				ob.WriteString(ctx)
				nb.WriteString(ctx)
			}
		}
	}
	oldS, newS := strings.TrimSpace(ob.String()), strings.TrimSpace(nb.String())
	if oldS == newS && oi.Link == ni.Link {
		// The words are the same but sit in other fields (text moved
		// into the title): show the fields.
		oldS = strings.TrimSpace("Title: " + oi.Title + "\n" + oi.Text)
		newS = strings.TrimSpace("Title: " + ni.Title + "\n" + ni.Text)
	}
	if oi.Link != ni.Link {
		oldS = strings.TrimSpace(oldS + "\nLink: " + oi.Link)
		newS = strings.TrimSpace(newS + "\nLink: " + ni.Link)
	}
	return oldS, newS
}

// feedTrimContext shortens unchanged text between changes to feedContext
// words on each side that touches a change.
func feedTrimContext(s string, first, last bool) string {
	toks := textdiff.Words(s)
	var words []int // token index of each word
	for i, t := range toks {
		if !textdiff.IsSpace(t) {
			words = append(words, i)
		}
	}
	keepHead, keepTail := feedContext, feedContext
	if first {
		keepHead = 0
	}
	if last {
		keepTail = 0
	}
	if first && last {
		return s
	}
	if len(words) <= keepHead+keepTail {
		return s
	}
	var b strings.Builder
	if keepHead > 0 {
		b.WriteString(strings.Join(toks[:words[keepHead-1]+1], ""))
	}
	b.WriteString(" … ")
	if keepTail > 0 {
		b.WriteString(strings.Join(toks[words[len(words)-keepTail]:], ""))
	}
	return b.String()
}

// DiffFeeds compares two versions of a feed item by item and fills the
// `diff --json` contract for kind "feed": one change per item added
// (insert), removed (delete) or modified (update: content, or structural
// when only its link changed). A feed whose items are only reordered or
// re-dated, or whose own <updated> or build date changed, has no change;
// Changes is then empty, never nil. Either version failing to parse gives
// an error wrapping ErrNotFeed or ErrBadFeed with code EINVALID and a
// one-line message naming the version.
func DiffFeeds(old, new []byte) (*changedigest.Diff, error) {
	return diffFeeds(nil, old, new)
}

func diffFeeds(w *work, old, new []byte) (*changedigest.Diff, error) {
	of, err := ParseFeed(old)
	if err != nil {
		return nil, feedErrorPrefix(err, "old version")
	}
	w.check()
	nf, err := ParseFeed(new)
	if err != nil {
		return nil, feedErrorPrefix(err, "new version")
	}
	w.check()
	changes, sim := feedCompare(w, of, nf)
	return &changedigest.Diff{
		Kind:            changedigest.KindFeed,
		Old:             changedigest.DocumentStat{Segments: len(of.Items), Bytes: len(old)},
		New:             changedigest.DocumentStat{Segments: len(nf.Items), Bytes: len(new)},
		ChangedSegments: len(changes),
		Similarity:      sim,
		Changes:         changes,
	}, nil
}

// feedErrorPrefix puts which document failed in front of a feed error.
func feedErrorPrefix(err error, which string) error {
	var fe *feedError
	if errors.As(err, &fe) {
		return &feedError{kind: fe.kind, user: changedigest.Errorf(fe.user.Code, "%s: %s", which, fe.user.Message)}
	}
	return err
}

// feedSegments are the items of a parsed feed as track segments: Path is
// the identity key, Hash the item's content hash, Text its title and text.
func feedSegments(f *Feed) []changedigest.Segment {
	segs := make([]changedigest.Segment, len(f.Items))
	for i := range f.Items {
		it := &f.Items[i]
		segs[i] = changedigest.Segment{
			Index: i,
			Hash:  it.Hash(),
			Path:  it.Key,
			Text:  it.SearchText(),
			Start: it.Start,
			End:   it.End,
		}
	}
	return segs
}

// DetectFeed segments a new version of a watched feed into items and finds
// its changes against the previous version (in.Prev, in.PrevBody): items
// added, removed and modified. An added or modified item whose content
// hash appears in any row of in.History (the signature matrix of the last
// versions) is not new, so an item that flips back to an earlier text, or
// returns after dropping out, is no change. Without a previous body only
// additions are found, by hash. in.Zone does not apply to feeds.
//
// Of a feed with more than DefaultMaxItems items only the newest are kept
// and compared (Segmenter.MaxItems; see feedWindow): the snapshot's
// FeedItems then says how many the feed had, and an item that only left
// the kept ones, or came into them from the older ones, is no change.
//
// The snapshot has Kind feed, the feed title, one segment per item kept,
// no Layout, the changes and the similarity to the previous version (0
// for a first version). A body that is not a parsable feed gives an error
// wrapping ErrNotFeed or ErrBadFeed, code EINVALID; a previous body that no
// longer parses is treated as an empty feed.
func DetectFeed(in Input) (*changedigest.Snapshot, error) {
	return detectFeed(nil, in, DefaultMaxItems)
}

// detectFeed is DetectFeed keeping at most maxItems items of a version,
// its work counted in w (nil: unbounded, never stopped).
func detectFeed(w *work, in Input, maxItems int) (*changedigest.Snapshot, error) {
	nf, err := feedWindow(in.Body, maxItems)
	if err != nil {
		return nil, err
	}
	sum := md5.Sum(in.Body)
	snap := &changedigest.Snapshot{
		Kind:     changedigest.KindFeed,
		Title:    nf.Title,
		Size:     len(in.Body),
		BodyHash: hex.EncodeToString(sum[:]),
		Segments: feedSegments(nf),
	}
	if nf.omitted > 0 {
		snap.FeedItems = len(nf.Items) + nf.omitted
	}
	if in.Prev == nil {
		return snap, nil
	}
	seen := map[string]bool{}
	for _, row := range in.History {
		for _, h := range row {
			seen[h] = true
		}
	}
	for _, h := range in.Prev.Hashes() {
		seen[h] = true
	}
	of := &Feed{}
	if in.PrevBody != nil {
		w.check()
		if f, err := feedWindow(in.PrevBody, maxItems); err == nil {
			of = f
		}
	}
	w.check()
	changes, sim := feedCompare(w, of, nf)
	snap.Similarity = sim
	for _, c := range changes {
		if c.Op != changedigest.OpDelete && seen[snap.Segments[*c.NewItem].Hash] {
			continue
		}
		snap.Changes = append(snap.Changes, c)
	}
	return snap, nil
}
