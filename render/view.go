package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// Event is one change event: a version of a watch that brought changes,
// with the profile matches found in each change. It is the input of feeds,
// the digest and the version page.
type Event struct {
	Watch    *changedigest.Watch
	Snapshot *changedigest.Snapshot
	// Matches holds, per change of Snapshot.Changes (same index), the
	// profile terms found in the change's text: byte spans into NewText,
	// or into OldText for a deletion (Op delete, or an empty NewText), or
	// for a match with a Unit, into its Context (the sentence or item
	// around the changed words), which is not highlighted.
	// It may be shorter than Changes (missing = no match) or nil for a
	// user without a profile. A change with at least one match is a
	// profile change; the others are general changes.
	Matches [][]changedigest.Match
	// Key, when not zero, is EventKey of the event, worked out by a
	// caller that keeps its events (the notifier): feeds then need not
	// fingerprint the event at every request. A Key that is not the
	// event's EventKey gets another event's entry.
	Key uint64 `json:"-"`
	// Load, when set with Key, gives the whole event: the feed writers
	// (Atom, RSS, JSONFeed, FeedTag) then take the event as it is, a
	// Snapshot with only Seq and FetchedAt, no Matches, and call Load
	// only when its entry is not kept from an earlier feed. Other
	// renderings need whole events.
	Load func() (Event, error) `json:"-"`
}

// check reports what makes an event unrenderable, wrapping ErrInvalidEvent.
func (ev Event) check() error {
	switch {
	case ev.Watch == nil:
		return fmt.Errorf("%w: no watch", ErrInvalidEvent)
	case ev.Snapshot == nil:
		return fmt.Errorf("%w: watch %d has no snapshot", ErrInvalidEvent, ev.Watch.ID)
	case ev.Snapshot.FetchedAt.IsZero():
		return fmt.Errorf("%w: watch %d version %d has no detection time", ErrInvalidEvent, ev.Watch.ID, ev.Snapshot.Seq)
	case len(ev.Matches) > len(ev.Snapshot.Changes):
		return fmt.Errorf("%w: watch %d version %d has %d match lists for %d changes",
			ErrInvalidEvent, ev.Watch.ID, ev.Snapshot.Seq, len(ev.Matches), len(ev.Snapshot.Changes))
	}
	return nil
}

// loads reports whether ev is to be loaded when its entry is rendered.
func (ev Event) loads() bool { return ev.Load != nil && ev.Key != 0 }

// load returns the whole event of one that loads, with the same key.
func (ev Event) load() (Event, error) {
	full, err := ev.Load()
	if err != nil {
		return Event{}, err
	}
	if err := full.check(); err != nil {
		return Event{}, err
	}
	full.Key, full.Load = ev.Key, nil
	return full, nil
}

func (ev Event) matches(i int) []changedigest.Match {
	if i < len(ev.Matches) {
		return ev.Matches[i]
	}
	return nil
}

// Told reports whether any change of the event is told to the watch's
// owner (changedigest.Notable): a version whose changes are all noise,
// markup the watch does not ask for, or left out by its filters makes no
// feed entry, digest line or push.
func (ev Event) Told() bool {
	if ev.Snapshot == nil {
		return false
	}
	for i := range ev.Snapshot.Changes {
		// A version with a change told has one that Notable passes
		// (changedigest.Told only adds to those).
		if ok, _ := changedigest.Notable(ev.Watch, ev.Snapshot, &ev.Snapshot.Changes[i], len(ev.matches(i)) > 0); ok {
			return true
		}
	}
	return false
}

// ProfileCount returns how many of the event's changes match the profile.
func (ev Event) ProfileCount() int {
	n := 0
	if ev.Snapshot == nil {
		return 0
	}
	for i := range ev.Snapshot.Changes {
		if len(ev.matches(i)) > 0 {
			n++
		}
	}
	return n
}

// ViewOptions say how much of each change a view shows.
type ViewOptions struct {
	// Context is the most unchanged words kept on each side of a change
	// or a match (as many as the change has changed words, at least
	// one); 0 keeps all the text.
	Context int
	// MaxChars caps the bytes of text shown per change; 0 for no cap.
	MaxChars int
	// SideBySide shows each change in two columns (before, after) instead
	// of one inline text.
	SideBySide bool
}

// EventView is an Event ready for the templates ("event-changes",
// "feed-entry", the version page). All strings are cleaned; URLs are
// absolute http or https, or empty.
type EventView struct {
	WatchID   int64
	WatchName string
	// WatchURL is the watched page itself; WatchPage the service's page of
	// the watch; URL the service's page of this version (the diff).
	WatchURL  string
	WatchPage string
	URL       string
	Seq       int
	Detected  time.Time
	// Summary reads like "3 changes, 1 matches your interests".
	Summary string
	// Headline names the most telling change told, in the page's words,
	// with "+N more" ("" when none is told); see brief.go.
	Headline string
	// Lead is the interest the headline's change matched, "" when it
	// matched none.
	Lead string
	// Profile and General are the changes with and without a profile
	// match, in the snapshot's order.
	Profile []ChangeView
	General []ChangeView
	// Omitted counts changes left out of Profile and General by a cap.
	Omitted int
	// Folded are the changes that are not told (changedigest.Notable:
	// noise, or left out by the watch's filters), each with its Why; views
	// show them collapsed.
	Folded []ChangeView
	// Significance of the version, 0..1 (0: not scored).
	Significance float64
	// Types and Interests list the distinct change types and matched
	// interests, in order of first appearance.
	Types     []changedigest.ChangeType
	Interests []string
	// Screenshot says the version has a screenshot (its page shows it).
	Screenshot bool
}

// ChangeView is one change ready for the "change" template.
type ChangeView struct {
	// Index is the change's position in the snapshot's change list.
	Index int
	Type  changedigest.ChangeType
	Op    changedigest.Op
	Path  string
	// Where is the change's place as the page shows it ("under
	// ‘Opening hours’"), "" when the page gives it no name.
	Where string
	// Pieces is the text, word-level: runs kept, inserted, deleted, cut
	// ("gap") and matched.
	Pieces []Piece
	// Labels are the distinct match labels ("matches your interest …"),
	// at most maxLabels; MoreLabels counts the others. Labels is empty for
	// a general change.
	Labels     []string
	MoreLabels int
	Interests  []string
	// Item is set for a change of a feed item.
	Item       *ItemView
	SideBySide bool
	// Why says why a folded change is not told ("noise: generated value").
	Why string
}

// ItemView is the feed item a change is about, or the block of a page
// told by its headline (a story added to or removed from a front page).
type ItemView struct {
	Title string
	Link  string // absolute http or https, or ""
	// Story is set for a page's block: "New:" rather than "New item:".
	Story bool
}

// Added is how a change's item is introduced when it is new.
func (it ItemView) Added() string {
	if it.Story {
		return "New"
	}
	return "New item"
}

// Removed is how a change's item is introduced when it is gone.
func (it ItemView) Removed() string {
	if it.Story {
		return "Removed"
	}
	return "Item removed"
}

// Piece is a run of a change's text with one look.
type Piece struct {
	// Op is "eq" (in both versions), "ins", "del" or "gap" (text left out,
	// shown as "…").
	Op   string
	Text string
	// Mark is the label of the profile match this run is, or "".
	Mark string
}

// Run is a stretch of pieces with the same Op, drawn as one <ins>, <del>,
// gap or plain text, with the matched pieces inside it in <mark>.
type Run struct {
	Op     string
	Pieces []Piece
}

// runs groups consecutive pieces of the same Op.
func runs(ps []Piece) []Run {
	var out []Run
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].Op == p.Op {
			out[n-1].Pieces = append(out[n-1].Pieces, p)
			continue
		}
		out = append(out, Run{Op: p.Op, Pieces: []Piece{p}})
	}
	return out
}

// Profile reports whether the change matched the user's profile.
func (c ChangeView) Profile() bool { return len(c.Labels) > 0 }

// Classes returns the style classes of the change's box.
func (c ChangeView) Classes() string {
	if c.Profile() {
		return "cd-change cd-profile"
	}
	return "cd-change"
}

// OpLabel says what happened in a word: added, removed, changed or moved.
func (c ChangeView) OpLabel() string {
	switch c.Op {
	case changedigest.OpInsert:
		return "added"
	case changedigest.OpDelete:
		return "removed"
	case changedigest.OpMove:
		return "moved"
	}
	return "changed"
}

// Kind says in words what kind of change it is, e.g. "Text changed",
// "Structural change: element added", "Cosmetic change (style only)".
func (c ChangeView) Kind() string {
	switch c.Type {
	case changedigest.ChangeStructural:
		switch c.Op {
		case changedigest.OpInsert, changedigest.OpDelete, changedigest.OpMove:
			return "Structural change: element " + c.OpLabel()
		}
		return "Structural change"
	case changedigest.ChangeCosmetic:
		return "Cosmetic change (style only)"
	case changedigest.ChangeBehavioural:
		return "Behavioural change: script " + c.OpLabel()
	case changedigest.ChangeContent:
		return "Text " + c.OpLabel()
	}
	return string(c.Type) + " change, " + c.OpLabel()
}

// ShowMeta reports whether the change's kind line says more than its item
// line: always for pages, for feed items only when the change is not a
// plain text change or has a location of its own.
func (c ChangeView) ShowMeta() bool {
	return c.Item == nil || c.Type != changedigest.ChangeContent || c.Path != ""
}

// OldPieces returns the pieces of the old text (kept and deleted runs).
func (c ChangeView) OldPieces() []Piece { return side(c.Pieces, "del") }

// NewPieces returns the pieces of the new text (kept and inserted runs).
func (c ChangeView) NewPieces() []Piece { return side(c.Pieces, "ins") }

func side(ps []Piece, keep string) []Piece {
	var out []Piece
	for _, p := range ps {
		if p.Op == "eq" || p.Op == "gap" || p.Op == keep {
			out = append(out, p)
		}
	}
	return out
}

// View builds the view of an event. It returns an error wrapping
// ErrInvalidEvent when the event has no watch, snapshot or detection
// time, or more match lists than changes. Match spans that do not fit
// the text are not highlighted, but their labels still count.
func (e *Engine) View(ev Event, o ViewOptions) (EventView, error) {
	if err := ev.check(); err != nil {
		return EventView{}, err
	}
	w, s := ev.Watch, ev.Snapshot
	v := EventView{
		WatchID:      w.ID,
		WatchName:    oneLine(w.Name()),
		WatchURL:     safeURL(w.URL),
		WatchPage:    e.URL(watchPath(w.ID)),
		URL:          e.URL(versionPath(w.ID, s.Seq)),
		Seq:          s.Seq,
		Detected:     s.FetchedAt.UTC(),
		Significance: s.Significance,

		Screenshot: s.Screenshot != nil,
	}
	if v.WatchName == "" {
		v.WatchName = "watch " + strconv.FormatInt(w.ID, 10)
	}
	feed := w.Kind == changedigest.KindFeed || s.Kind == changedigest.KindFeed
	told, whys := changedigest.Told(w, s, func(i int) bool { return len(ev.matches(i)) > 0 })
	for i, c := range s.Changes {
		cv := changeView(i, c, ev.matches(i), o, feed)
		if !told[i] {
			cv.Why = oneLine(whys[i])
			v.Folded = append(v.Folded, cv)
			continue
		}
		if !slices.Contains(v.Types, c.Type) && c.Type != "" {
			v.Types = append(v.Types, c.Type)
		}
		for _, in := range cv.Interests {
			if !slices.Contains(v.Interests, in) {
				v.Interests = append(v.Interests, in)
			}
		}
		if cv.Profile() {
			v.Profile = append(v.Profile, cv)
		} else {
			v.General = append(v.General, cv)
		}
	}
	v.Summary = summary(len(v.Profile)+len(v.General), len(v.Profile))
	if n := len(v.Folded); n > 0 {
		if len(v.Profile)+len(v.General) == 0 {
			v.Summary = strconv.Itoa(n) + " " + plural(n, "change", "changes") + ", none told (noise or filters)"
		} else {
			v.Summary += ", " + strconv.Itoa(n) + " not told (noise or filters)"
		}
	}
	if s.Significance > 0 {
		v.Summary += " · significance " + strconv.FormatFloat(s.Significance, 'f', 2, 64)
	}
	v.Headline, v.Lead = headline(&v)
	// A place is said once for the changes in a row that share it.
	for _, cs := range [][]ChangeView{v.Profile, v.General} {
		for i := len(cs) - 1; i > 0; i-- {
			if cs[i].Where == cs[i-1].Where {
				cs[i].Where = ""
			}
		}
	}
	return v, nil
}

// summary reads "3 changes, 1 matches your interests".
func summary(total, profile int) string {
	s := strconv.Itoa(total) + " " + plural(total, "change", "changes")
	switch {
	case total == 0:
		return "no change"
	case profile == 1 && total == 1:
		return "1 change, matching your interests"
	case profile == total:
		return s + ", all matching your interests"
	case profile == 1:
		return s + ", 1 matches your interests"
	case profile > 1:
		return s + ", " + strconv.Itoa(profile) + " match your interests"
	}
	return s
}

// Paths of the service's pages that views link to; the server must route them.
func watchPath(id int64) string { return "/watches/" + strconv.FormatInt(id, 10) }

func versionPath(id int64, seq int) string {
	return watchPath(id) + "/versions/" + strconv.Itoa(seq)
}

func changeView(i int, c changedigest.Change, ms []changedigest.Match, o ViewOptions, feed bool) ChangeView {
	cv := ChangeView{
		Index:      i,
		Type:       changedigest.ChangeType(oneLine(string(c.Type))),
		Op:         changedigest.Op(oneLine(string(c.Op))),
		Path:       oneLine(c.Path),
		Where:      oneLine(c.Where),
		SideBySide: o.SideBySide,
	}
	if cv.Type == "" {
		cv.Type = changedigest.ChangeContent
	}
	for _, m := range ms {
		if l := oneLine(m.Label()); !slices.Contains(cv.Labels, l) {
			if len(cv.Labels) == maxLabels {
				cv.MoreLabels++
			} else {
				cv.Labels = append(cv.Labels, l)
			}
		}
		if in := oneLine(m.Interest); in != "" && !slices.Contains(cv.Interests, in) {
			cv.Interests = append(cv.Interests, in)
		}
	}
	if feed || c.OldItem != nil || c.NewItem != nil || c.Title != "" || c.Link != "" {
		it := &ItemView{Title: oneLine(c.Title), Link: safeURL(c.Link), Story: !feed && c.OldItem == nil && c.NewItem == nil}
		if it.Title == "" {
			it.Title = untitledItem
		}
		cv.Item = it
		if c.Path == c.Link {
			cv.Path = "" // the item's link is shown already
		}
	}
	cv.Pieces = pieces(c, ms, o)
	if cv.Item != nil && (c.Op == changedigest.OpInsert || c.Op == changedigest.OpDelete) && !o.SideBySide {
		cv.Pieces = dropTitle(cv.Pieces, cv.Item.Title) // said by the item line
	}
	return cv
}

// maxLabels caps the match labels shown per change.
const maxLabels = 5

// untitledItem stands for the title of a feed item that has none.
const untitledItem = "(untitled item)"

// markedOld reports whether a change's matches are spans into its old text.
func markedOld(c changedigest.Change) bool {
	return c.Op == changedigest.OpDelete || c.NewText == ""
}

// span is a highlighted byte range of the marked text.
type span struct {
	start, end int
	label      string
}

// spans turns matches into sorted, merged ranges that fit text and fall
// on rune boundaries; the others are dropped, and so are matches found
// around the changed words (their offsets are into their Context).
func spans(text string, ms []changedigest.Match) []span {
	var out []span
	for _, m := range ms {
		if m.Unit != "" || m.Start < 0 || m.End > len(text) || m.Start >= m.End ||
			!utf8.RuneStart(text[m.Start]) || (m.End < len(text) && !utf8.RuneStart(text[m.End])) {
			continue
		}
		out = append(out, span{m.Start, m.End, oneLine(m.Label())})
	}
	slices.SortStableFunc(out, func(a, b span) int { return a.start - b.start })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// pieces computes the word-level diff of a change with its matches
// highlighted, shortened as o says.
func pieces(c changedigest.Change, ms []changedigest.Match, o ViewOptions) []Piece {
	var edits []textdiff.Edit
	switch {
	case c.OldText == "" && c.NewText == "":
	case c.OldText == "":
		edits = []textdiff.Edit{{Op: textdiff.Insert, Text: c.NewText}}
	case c.NewText == "":
		edits = []textdiff.Edit{{Op: textdiff.Delete, Text: c.OldText}}
	case c.OldText == c.NewText:
		edits = []textdiff.Edit{{Op: textdiff.Equal, Text: c.NewText}}
	default:
		edits = textdiff.Readable(textdiff.WordDiff(c.OldText, c.NewText))
	}
	// the unchanged words around a content update's changed words
	if c.Before != "" {
		edits = append([]textdiff.Edit{{Op: textdiff.Equal, Text: c.Before}}, edits...)
	}
	if c.After != "" {
		edits = append(edits, textdiff.Edit{Op: textdiff.Equal, Text: c.After})
	}
	onOld := markedOld(c)
	marked := c.NewText
	if onOld {
		marked = c.OldText
	}
	// the edits run over Before, the text and After: so do the offsets
	if c.Before != "" || c.After != "" {
		marked = c.Before + marked + c.After
		shifted := make([]changedigest.Match, len(ms))
		for i, m := range ms {
			m.Start, m.End = m.Start+len(c.Before), m.End+len(c.Before)
			shifted[i] = m
		}
		ms = shifted
	}
	sp := spans(marked, ms)

	var ps []Piece
	off := 0 // offset of the edit in the marked text
	for _, ed := range edits {
		op := opName(ed.Op)
		onMarked := ed.Op == textdiff.Equal || (ed.Op == textdiff.Delete) == onOld
		if !onMarked || len(sp) == 0 {
			ps = append(ps, Piece{Op: op, Text: ed.Text})
			if onMarked {
				off += len(ed.Text)
			}
			continue
		}
		// Split the edit at the spans that overlap it.
		start, end := off, off+len(ed.Text)
		pos := start
		for _, s := range sp {
			if s.end <= pos || s.start >= end {
				continue
			}
			if s.start > pos {
				ps = append(ps, Piece{Op: op, Text: marked[pos:s.start]})
				pos = s.start
			}
			e := min(s.end, end)
			ps = append(ps, Piece{Op: op, Text: marked[pos:e], Mark: s.label})
			pos = e
		}
		if pos < end {
			ps = append(ps, Piece{Op: op, Text: marked[pos:end]})
		}
		off = end
	}
	if o.Context > 0 {
		// As many unchanged words around as changed, at most Context: a
		// word inserted is shown between a word on each side, a sentence
		// rewritten with the words that place it.
		ctx := o.Context
		if del, ins := changedWords(ps); del+ins > 0 {
			ctx = min(ctx, del+ins)
		}
		ps = elide(ps, ctx)
	}
	if o.MaxChars > 0 {
		ps = capPieces(ps, o.MaxChars)
	}
	out := ps[:0]
	for _, p := range ps {
		if p.Op != "gap" {
			p.Text = cleanText(p.Text)
		}
		p.Mark = cleanText(p.Mark)
		if p.Text != "" {
			out = append(out, p)
		}
	}
	return out
}

func opName(op textdiff.Op) string {
	switch op {
	case textdiff.Insert:
		return "ins"
	case textdiff.Delete:
		return "del"
	}
	return "eq"
}

const ellipsis = "…"

// elide shortens unmarked runs of unchanged text to ctx words next to the
// changes and matches around them.
func elide(ps []Piece, ctx int) []Piece {
	interesting := func(p Piece) bool { return p.Op != "eq" || p.Mark != "" }
	var out []Piece
	for i, p := range ps {
		if interesting(p) {
			out = append(out, p)
			continue
		}
		before := i > 0 && interesting(ps[i-1])
		after := i+1 < len(ps) && interesting(ps[i+1])
		toks := textdiff.Words(p.Text)
		words := 0
		for _, t := range toks {
			if !textdiff.IsSpace(t) {
				words++
			}
		}
		headWords := ctx
		if !before && !after {
			// Nothing changed next to it (a move, or a change without
			// visible text change): keep a longer head.
			before, headWords = true, 2*ctx
		}
		keep := 0
		if before {
			keep += headWords
		}
		if after {
			keep += ctx
		}
		if words <= keep {
			out = append(out, p)
			continue
		}
		head, tail := "", ""
		if before {
			head = firstWords(toks, headWords)
		}
		if after {
			tail = lastWords(toks, ctx)
		}
		if head != "" {
			out = append(out, Piece{Op: "eq", Text: head})
		}
		out = append(out, Piece{Op: "gap", Text: gapText(head, tail)})
		if tail != "" {
			out = append(out, Piece{Op: "eq", Text: tail})
		}
	}
	return out
}

// gapText is the ellipsis with the spaces that keep words apart.
func gapText(head, tail string) string {
	s := ellipsis
	if head != "" {
		s = " " + s
	}
	if tail != "" {
		s += " "
	}
	return s
}

// firstWords returns the tokens up to and including the n-th word.
func firstWords(toks []string, n int) string {
	var b strings.Builder
	for _, t := range toks {
		if n == 0 {
			break
		}
		b.WriteString(t)
		if !textdiff.IsSpace(t) {
			n--
		}
	}
	return strings.TrimRightFunc(b.String(), isSpaceRune)
}

// lastWords returns the tokens from the n-th word before the end.
func lastWords(toks []string, n int) string {
	i := len(toks)
	for i > 0 && n > 0 {
		i--
		if !textdiff.IsSpace(toks[i]) {
			n--
		}
	}
	return strings.TrimLeftFunc(strings.Join(toks[i:], ""), isSpaceRune)
}

func isSpaceRune(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u00a0'
}

// capPieces keeps at most n bytes of text, cutting the last piece and
// adding a gap.
func capPieces(ps []Piece, n int) []Piece {
	total := 0
	for i, p := range ps {
		if total+len(p.Text) <= n {
			total += len(p.Text)
			continue
		}
		out := slices.Clone(ps[:i])
		if t, _ := clip(p.Text, n-total); t != "" {
			p.Text = t
			out = append(out, p)
		}
		return append(out, Piece{Op: "gap", Text: " " + ellipsis})
	}
	return ps
}
