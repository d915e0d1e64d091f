package pet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// Query is a full-text search over all stored history.
type Query struct {
	// Text is what to look for: words (all must occur, in any form the
	// English stemmer relates: "changes" finds "changed") and "quoted
	// phrases". Required, at most 1000 bytes.
	Text string
	// UserID restricts hits to the user's watches; AnyUser searches all.
	UserID int64
	// WatchID restricts hits to one watch (0: all).
	WatchID int64
	// Since and Until keep segments that were on the page at some time in
	// [Since, Until]: first seen at or before Until and last seen at or
	// after Since (or still there). They apply at whole hours (UTC): the
	// hours holding Since and Until count in full. Zero means unbounded.
	Since, Until time.Time
	// Types keeps segments brought by a change of one of these types.
	Types []changedigest.ChangeType
	// Limit defaults to 20, at most 100; Offset at most 10000.
	Limit, Offset int
}

// Results is one page of hits, newest first, and the number of hits in all.
type Results struct {
	Total int
	Hits  []Hit
}

// Hit is a segment whose text matched: where it appeared and when.
type Hit struct {
	WatchID int64
	// Seq and Time are the oldest stored version holding the segment
	// (where it appeared, unless retention removed that version) and its
	// fetch time; Segment and Path its place there.
	Seq     int
	Time    time.Time
	Segment int
	Path    string
	Hash    string
	// LastSeq and LastSeen are the newest version holding the segment once
	// it has left the page; 0 and zero while it is in the latest version.
	LastSeq  int
	LastSeen time.Time
	// Types are the types of the changes that brought the segment; none
	// for a segment of a watch's first version.
	Types   []changedigest.ChangeType
	Snippet Snippet
}

// Snippet is an excerpt of a hit's text, as plain text with the byte
// ranges of the matched words. Text is page text: escape it before
// putting it in HTML, or use HTML.
type Snippet struct {
	Text    string
	Matches []Span
}

// Span is a byte range [Start, End) of a snippet's Text.
type Span struct{ Start, End int }

// HTML returns the snippet as escaped HTML with the matches in <mark>.
func (s Snippet) HTML() string {
	var b strings.Builder
	pos := 0
	for _, m := range s.Matches {
		if m.Start < pos || m.End > len(s.Text) || m.Start > m.End {
			continue
		}
		b.WriteString(html.EscapeString(s.Text[pos:m.Start]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(s.Text[m.Start:m.End]))
		b.WriteString("</mark>")
		pos = m.End
	}
	b.WriteString(html.EscapeString(s.Text[pos:]))
	return b.String()
}

const maxQueryText = 1000

// Search finds the segments of stored versions whose text matches q,
// newest first (by the time they appeared). Errors: EINVALID for an
// empty or overlong text or an unknown change type; ENOTFOUND when
// q.WatchID is not q.UserID's. An index failure is returned, not hidden.
func (s *Store) Search(ctx context.Context, q Query) (*Results, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if err := s.ensureIndex(ctx); err != nil {
		return nil, err
	}
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return nil, invalidf("search text is empty")
	}
	if len(text) > maxQueryText {
		return nil, invalidf("search text is longer than %d bytes", maxQueryText)
	}
	for _, t := range q.Types {
		if _, err := changedigest.ParseChangeType(string(t)); err != nil {
			return nil, domainErr(err)
		}
	}
	limit := clampLimit(q.Limit, 20, 100)
	if q.Offset < 0 || q.Offset > 10000 {
		return nil, invalidf("search offset %d is not between 0 and 10000", q.Offset)
	}
	if q.WatchID != 0 {
		if _, err := s.Watch(ctx, q.UserID, q.WatchID); err != nil {
			return nil, err
		}
	}
	if s.behind.Load() {
		// Pending work is applied first. A failed catch-up leaves the newest versions out; what the
		// index holds is still worth answering with.
		if err := s.syncIndex(); err != nil && !errors.Is(err, errIndexReadOnly) {
			s.Logger.Warn("searching an index that is behind the store", "err", err)
		}
	}

	conj := []query.Query{textQuery(text)}
	if q.UserID != AnyUser {
		conj = append(conj, fieldTerm(fUser, strconv.FormatInt(q.UserID, 10)))
	}
	if q.WatchID != 0 {
		conj = append(conj, fieldTerm(fWatch, strconv.FormatInt(q.WatchID, 10)))
	}
	if len(q.Types) > 0 {
		var dis []query.Query
		for _, t := range q.Types {
			dis = append(dis, fieldTerm(fTypes, string(t)))
		}
		conj = append(conj, bleve.NewDisjunctionQuery(dis...))
	}
	if !q.Since.IsZero() {
		// Last seen at or after Since, or still there.
		_, hi := s.timeSpan()
		conj = append(conj, anyTerm(fLast, append(cover(q.Since, hi), liveTerm)))
	}
	// The hits only, newest first: no scores, no term locations (see
	// marks), and not every hit ordered (see searchNewest).
	hits, total, a, err := s.searchNewest(ctx, conj, q.Until, q.Offset, limit)
	if errors.Is(err, errIndexPanic) {
		// A panic inside the index (Bleve closes in-memory segments a
		// failed persist leaves behind) makes it untrustworthy: it is
		// marked failed, reopened read-only from what is on disk, and the
		// search is tried once more there.
		s.indexFailed(err)
		s.syncMu.Lock()
		rerr := s.recoverIndex()
		s.syncMu.Unlock()
		if rerr == nil || errors.Is(rerr, errIndexReadOnly) {
			hits, total, a, err = s.searchNewest(ctx, conj, q.Until, q.Offset, limit)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pet: search %q: %w", text, err)
	}
	out := &Results{Total: int(total)}
	m := newMarks(a, text)
	err = s.db.View(func(tx *bolt.Tx) error {
		for _, h := range hits {
			hit, ok, err := resolveHit(tx, h, a, m)
			if err != nil {
				return err
			}
			if ok {
				out.Hits = append(out.Hits, hit)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "search %q", text)
	}
	return out, nil
}

// CompareHits orders hits as Search lists them: newest first, then by
// index document ID, descending, which between hits of two watches is
// their watch IDs' decimal digits, descending. Hits of one watch and one
// time (segments of one version) it leaves as they are: merging the hits
// of several stores, each holding its own watches, a stable sort by it
// gives the list one store holding them all would.
func CompareHits(a, b Hit) int {
	if c := clampTime(b.Time).Compare(clampTime(a.Time)); c != 0 || a.WatchID == b.WatchID {
		return c
	}
	var ka, kb [24]byte
	idA := append(strconv.AppendInt(ka[:0], a.WatchID, 10), '/')
	idB := append(strconv.AppendInt(kb[:0], b.WatchID, 10), '/')
	return bytes.Compare(idB, idA)
}

// fieldTerm is the query for the term value in field.
func fieldTerm(field, value string) query.Query {
	tq := bleve.NewTermQuery(value)
	tq.SetField(field)
	return tq
}

// anyTerm is the query for any of the terms values in field.
func anyTerm(field string, values []string) query.Query {
	dis := make([]query.Query, len(values))
	for i, v := range values {
		dis[i] = fieldTerm(field, v)
	}
	return bleve.NewDisjunctionQuery(dis...)
}

// textQuery turns the search text into a query: "quoted" parts are
// phrases, the other words must all occur.
func textQuery(text string) query.Query {
	var parts []query.Query
	words := func(w string) {
		if strings.TrimSpace(w) == "" {
			return
		}
		mq := bleve.NewMatchQuery(w)
		mq.SetField(fText)
		mq.SetOperator(query.MatchQueryOperatorAnd)
		parts = append(parts, mq)
	}
	for i, chunk := range strings.Split(text, `"`) {
		if i%2 == 0 {
			words(chunk)
		} else if strings.TrimSpace(chunk) != "" {
			pq := bleve.NewMatchPhraseQuery(chunk)
			pq.SetField(fText)
			parts = append(parts, pq)
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	if len(parts) == 0 {
		return bleve.NewMatchNoneQuery()
	}
	return bleve.NewConjunctionQuery(parts...)
}

// resolveHit reads a hit's segment record; ok is false when the record
// went away since the search (a concurrent deletion).
func resolveHit(tx *bolt.Tx, h *search.DocumentMatch, a analysis.Analyzer, m *marks) (Hit, bool, error) {
	wid, sid, ok := parseDocID(h.ID)
	if !ok {
		return Hit{}, false, nil
	}
	v := tx.Bucket(bSegs).Get(key(uint64(wid), sid))
	if v == nil {
		return Hit{}, false, nil
	}
	r, err := decodeSeg(tx, v, true)
	if err != nil {
		return Hit{}, false, corruptf("segment %d of watch %d: %v", sid, wid, err)
	}
	hit := Hit{
		WatchID: wid, Seq: r.FirstSeq, Time: r.FirstTime, Segment: r.FirstIndex, Path: r.firstPath(),
		Hash: r.Hash, Types: r.Types.types(),
	}
	if !r.Live {
		hit.LastSeq, hit.LastSeen = r.LastSeq, r.LastTime
	}
	hit.Snippet = makeSnippet(r.Text, m.spans(a, r.Text))
	return hit, true, nil
}

// Snippet shape.
const (
	snippetLen    = 240 // bytes of source text at most
	snippetBefore = 60  // bytes of context before the first match
)

// makeSnippet cuts a window of text around the first matches, on word
// and UTF-8 boundaries, collapses white space, marks the matches that
// fall inside, and adds "…" where text was cut.
func makeSnippet(text string, spans []Span) Snippet {
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
	start := 0
	if len(spans) > 0 && spans[0].Start > snippetBefore {
		start = spans[0].Start - snippetBefore
		// Start after a space, when one is near.
		if i := strings.IndexFunc(text[start:spans[0].Start], unicode.IsSpace); i >= 0 {
			start += i
		}
	}
	for start < len(text) && !utf8.RuneStart(text[start]) {
		start++
	}
	end := min(len(text), start+snippetLen)
	if end < len(text) {
		if i := strings.LastIndexFunc(text[start:end], unicode.IsSpace); i > snippetLen/2 {
			end = start + i
		}
		for end > start && !utf8.RuneStart(text[end]) {
			end--
		}
	}
	var b strings.Builder
	var out []Span
	if start > 0 {
		b.WriteString("… ")
	}
	lead := b.Len()
	sep := func() {
		if b.Len() > lead {
			b.WriteByte(' ')
		}
	}
	si := 0
	space := false
	for i := start; i < end; {
		for si < len(spans) && spans[si].Start < i {
			si++
		}
		if si < len(spans) && spans[si].Start == i && spans[si].End <= end {
			if space {
				sep()
			}
			space = false
			m := Span{Start: b.Len()}
			b.WriteString(strings.ToValidUTF8(text[spans[si].Start:spans[si].End], "\uFFFD"))
			m.End = b.Len()
			out = append(out, m)
			i = spans[si].End
			si++
			continue
		}
		r, w := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
			space = true
		default:
			if space {
				sep()
			}
			space = false
			if r == utf8.RuneError && w == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.WriteString(text[i : i+w])
			}
		}
		i += w
	}
	if end < len(text) {
		b.WriteString(" …")
	}
	return Snippet{Text: b.String(), Matches: out}
}

// errIndexPanic marks a panic inside Bleve turned into an error.
var errIndexPanic = errors.New("index panicked")

// searchIndex runs req on the open index, newest first, turning a panic
// inside Bleve into an error wrapping errIndexPanic. It also gives the
// analyzer of the index's text field.
func (s *Store) searchIndex(ctx context.Context, req *bleve.SearchRequest) (res *bleve.SearchResult, a analysis.Analyzer, err error) {
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	if s.idx == nil {
		return nil, nil, userErr(changedigest.EUNAVAILABLE, ErrClosed, "the store is not open")
	}
	m := s.idx.Mapping()
	if req.Size > 0 {
		// Newest first, as the index in use orders its documents. A count
		// (no hits asked) orders nothing.
		req.SortBy(newestFirst(m))
	}
	if a = m.AnalyzerNamed(m.AnalyzerNameForPath(fText)); a == nil {
		return nil, nil, fmt.Errorf("the index has no analyzer for its field %q", fText)
	}
	defer func() {
		if r := recover(); r != nil {
			res, a, err = nil, nil, fmt.Errorf("%w: %v", errIndexPanic, r)
		}
	}()
	res, err = s.idx.SearchInContext(ctx, req)
	return res, a, err
}
