package segmenter

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/mmcdole/gofeed"
)

// Errors of feed parsing. They come wrapped together with a
// *changedigest.Error of code EINVALID whose message names the problem, so
// errors.Is tells them apart and changedigest.ErrorMessage shows the user
// what was wrong.
var (
	// ErrNotFeed is returned for a body that is not an RSS, Atom or JSON
	// feed at all (an HTML page, an OPML file, an empty body).
	ErrNotFeed = errors.New("not a feed")
	// ErrBadFeed is returned for a feed too broken to recover any item from.
	ErrBadFeed = errors.New("malformed feed")
)

// feedError is an input error about a feed: a sentinel for errors.Is and a
// user-facing *changedigest.Error for the message and code.
type feedError struct {
	kind error
	user *changedigest.Error
}

func (e *feedError) Error() string   { return "segmenter: " + e.user.Message }
func (e *feedError) Unwrap() []error { return []error{e.kind, e.user} }

// newFeedError builds an EINVALID error of the given kind; the message is
// kept on one line.
func newFeedError(kind error, format string, args ...any) error {
	msg := kind.Error() + ": " + fmt.Sprintf(format, args...)
	msg = strings.Join(strings.Fields(msg), " ")
	return &feedError{kind: kind, user: changedigest.Errorf(changedigest.EINVALID, "%s", msg)}
}

// feedBOM is the UTF-8 byte order mark, which JSON decoders refuse.
var feedBOM = []byte("\ufeff")

// Feed is a parsed RSS (0.9x, 1.0, 2.0), Atom or JSON feed, reduced to what
// change detection needs.
type Feed struct {
	// Format is the feed type and version as detected, e.g. "rss 2.0",
	// "atom 1.0", "json 1.1".
	Format string
	Title  string
	// Link is the site the feed belongs to; relative item links are
	// resolved against it.
	Link  string
	Items []FeedItem
	// Warnings lists what was wrong with a feed that was still parsed
	// (for example a truncated document whose complete items were kept).
	Warnings []string

	// omitted counts the items of the document left out of Items, past
	// the item limit of a check (feedWindow).
	omitted int
}

// FeedItem is one item (RSS) or entry (Atom, JSON Feed) of a feed.
type FeedItem struct {
	// Key is the item's identity within its feed, unique in the feed; see
	// feedItemKeys for the fallback chain. It prefixes the kind of
	// evidence used: "guid:", "link:", "title:" or "md5:".
	Key  string
	GUID string
	Link string
	// Title and Text are plain text: markup removed, entities decoded,
	// runs of spaces collapsed (Text keeps one line per block). Text is the
	// item's full content when the feed has it, else its description or
	// summary.
	Title string
	Text  string
	// Published and Updated are zero when the feed does not give them.
	Published time.Time
	Updated   time.Time
	// Start and End are the byte range of the item's element (or JSON
	// object) in the raw body, -1 when it could not be located.
	Start int
	End   int
}

// Hash is the hex MD5 of the item's normalised title, link and text: the
// item's signature. Timestamps, GUIDs and the item's position are not part
// of it, so a rebuilt feed or a reordered one gives the same hashes.
func (it *FeedItem) Hash() string {
	sum := it.hashSum()
	return hex.EncodeToString(sum[:])
}

// hashSum is the MD5 Hash gives in hex.
func (it *FeedItem) hashSum() [md5.Size]byte {
	w := feedHashWriter{h: md5.New(), buf: feedHashBufs.Get().(*[]byte)}
	w.normSpace(it.Title)
	w.write(0)
	w.writeString(it.Link)
	w.write(0)
	w.normSpace(it.Text)
	w.flush()
	feedHashBufs.Put(w.buf)
	var sum [md5.Size]byte
	w.h.Sum(sum[:0])
	return sum
}

// feedHashWriter feeds a hash through a buffer, so that an item's texts
// are hashed as feedNormSpace gives them without being copied whole.
type feedHashWriter struct {
	h   hash.Hash
	buf *[]byte
}

var feedHashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (w *feedHashWriter) write(c byte) {
	if len(*w.buf) == cap(*w.buf) {
		w.flush()
	}
	*w.buf = append(*w.buf, c)
}

func (w *feedHashWriter) writeString(s string) {
	for len(s) > 0 {
		if len(*w.buf) == cap(*w.buf) {
			w.flush()
		}
		n := min(len(s), cap(*w.buf)-len(*w.buf))
		*w.buf = append(*w.buf, s[:n]...)
		s = s[n:]
	}
}

func (w *feedHashWriter) flush() {
	w.h.Write(*w.buf)
	*w.buf = (*w.buf)[:0]
}

// normSpace writes feedNormSpace(s): its runs of non-space characters,
// one space between two.
func (w *feedHashWriter) normSpace(s string) {
	started := false
	run := -1 // start of the run being read
	for i := 0; i < len(s); {
		sp, size := feedSpaceAt(s, i)
		switch {
		case sp && run >= 0:
			if started {
				w.write(' ')
			}
			w.writeString(s[run:i])
			started, run = true, -1
		case !sp && run < 0:
			run = i
		}
		i += size
	}
	if run >= 0 {
		if started {
			w.write(' ')
		}
		w.writeString(s[run:])
	}
}

// SearchText is the item's title and text, for search and interest matching.
func (it *FeedItem) SearchText() string {
	switch {
	case it.Title == "":
		return it.Text
	case it.Text == "":
		return it.Title
	}
	return it.Title + "\n" + it.Text
}

// date is the item's date for identity: published, else updated.
func (it *FeedItem) date() time.Time {
	if !it.Published.IsZero() {
		return it.Published
	}
	return it.Updated
}

// ParseFeed parses an RSS, Atom or JSON feed with gofeed and adapts it to
// a Feed: plain-text titles and texts, absolute links, identity keys and
// byte ranges of the items.
//
// Parsing is lenient, as feed readers are: unescaped ampersands, unknown
// entities and mis-nested tags are tolerated, a body with bytes that are
// not UTF-8 and no declared encoding is read as Windows-1252, and a feed cut
// short (a truncated download) keeps its complete items, with the problem
// recorded in Warnings. A body that is no feed at all yields an error
// wrapping ErrNotFeed, a feed from which nothing can be recovered one
// wrapping ErrBadFeed; both carry the code EINVALID and a one-line message.
func ParseFeed(body []byte) (*Feed, error) {
	return parseFeedRanges(body, feedItemRanges(body))
}

// parseFeedRanges is ParseFeed given the item ranges of body
// (feedItemRanges).
func parseFeedRanges(body []byte, ranges [][2]int) (*Feed, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, newFeedError(ErrNotFeed, "the document is empty")
	}
	var warnings []string
	input, note := feedUTF8(bytes.TrimPrefix(body, feedBOM))
	if note != "" {
		warnings = append(warnings, note)
	}
	gf, err := feedParse(input)
	if err != nil && errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
		return nil, newFeedError(ErrNotFeed, "%s", feedRootDescription(body))
	}
	if err != nil {
		// A feed that breaks off (or goes wrong) after some complete
		// items: keep those, closing the elements still open.
		fixed, ok := feedTruncateRepair(input)
		var gf2 *gofeed.Feed
		var err2 error
		if ok {
			gf2, err2 = feedParse(fixed)
		}
		if !ok || err2 != nil || len(gf2.Items) == 0 {
			return nil, newFeedError(ErrBadFeed, "%s", feedErrText(err))
		}
		warnings = append(warnings, fmt.Sprintf("kept the %d complete items before an error: %s", len(gf2.Items), feedErrText(err)))
		gf = gf2
	}
	if gf.FeedType == "json" && !strings.Contains(gf.FeedVersion, "jsonfeed.org") && len(gf.Items) == 0 {
		return nil, newFeedError(ErrNotFeed, "%s", feedRootDescription(body))
	}
	f := feedAdapt(gf)
	f.Warnings = warnings
	if len(ranges) == len(f.Items) {
		for i, r := range ranges {
			f.Items[i].Start, f.Items[i].End = r[0], r[1]
		}
	}
	return f, nil
}

// feedParse runs gofeed on a body, turning its panics into errors (a
// JSON Feed item that is null makes it dereference nil). gofeed's search
// of each RSS item's HTML for an image, which parses that HTML into a
// tree, is turned off: nothing here uses the image, and it was two thirds
// of what parsing a feed of short items allocated.
func feedParse(body []byte) (f *gofeed.Feed, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, errors.New("the parser could not make sense of the document's structure")
		}
	}()
	p := gofeed.NewParser()
	p.RSSTranslator = &gofeed.DefaultRSSTranslator{DisableContentImageScan: true}
	return p.Parse(bytes.NewReader(body))
}

// feedErrText is a parser error as one line a user can read: JSON errors
// without Go type names, no package prefixes.
func feedErrText(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if i := strings.LastIndex(field, "alias."); i >= 0 {
			field = field[i+len("alias."):]
		}
		return fmt.Sprintf("JSON field %q has the wrong type (%s)", field, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("JSON syntax error at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(syntaxErr.Error(), "json: "))
	}
	s := strings.TrimPrefix(err.Error(), "gofeed: ")
	return strings.Join(strings.Fields(s), " ")
}

// feedRootDescription says what a body that is not a feed starts with.
func feedRootDescription(body []byte) string {
	b := bytes.TrimSpace(bytes.TrimPrefix(body, feedBOM))
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		return "the document is gzip-compressed"
	}
	if name := feedRootElement(b); name != "" {
		return fmt.Sprintf("the root element is <%s>, not <rss>, <rdf:RDF> or <feed>", name)
	}
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return "the JSON document is not a JSON Feed (no jsonfeed.org version, no items)"
	}
	start := b
	if len(start) > 20 {
		start = start[:20]
	}
	if !utf8.Valid(start) {
		return "the document is binary, not RSS, Atom or JSON Feed"
	}
	return fmt.Sprintf("the document starts with %q, not an RSS, Atom or JSON Feed root", start)
}

// feedAdapt turns gofeed's universal feed into a Feed.
func feedAdapt(gf *gofeed.Feed) *Feed {
	version := gf.FeedVersion
	if v, ok := strings.CutPrefix(version, "https://jsonfeed.org/version/"); ok {
		version = v
	}
	f := &Feed{
		Format: strings.TrimSpace(gf.FeedType + " " + version),
		Title:  feedHTMLText(gf.Title, true),
		Link:   strings.TrimSpace(gf.Link),
	}
	base, _ := url.Parse(f.Link)
	if base != nil && !base.IsAbs() {
		base = nil
	}
	f.Items = make([]FeedItem, 0, len(gf.Items))
	for _, gi := range gf.Items {
		if gi == nil {
			continue
		}
		it := FeedItem{
			GUID:  strings.TrimSpace(gi.GUID),
			Link:  feedResolve(base, feedItemLink(gi)),
			Title: feedHTMLText(gi.Title, true),
			Start: -1,
			End:   -1,
		}
		content := gi.Content
		if strings.TrimSpace(content) == "" {
			content = gi.Description
		}
		it.Text = feedHTMLText(content, false)
		if gi.PublishedParsed != nil {
			it.Published = *gi.PublishedParsed
		}
		if gi.UpdatedParsed != nil {
			it.Updated = *gi.UpdatedParsed
		}
		f.Items = append(f.Items, it)
	}
	keys := feedItemKeys(f.Items)
	for i := range f.Items {
		f.Items[i].Key = keys[i]
	}
	return f
}

// feedItemLink picks an item's article link: FeedBurner's original link
// (the article, not a tracking redirect), the item link, its first other
// link, else a GUID that is an absolute web address (RSS permalinks).
func feedItemLink(gi *gofeed.Item) string {
	if fb, ok := gi.Extensions["feedburner"]; ok {
		for _, e := range fb["origLink"] {
			if v := strings.TrimSpace(e.Value); v != "" {
				return v
			}
		}
	}
	if l := strings.TrimSpace(gi.Link); l != "" {
		return l
	}
	for _, l := range gi.Links {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	g := strings.TrimSpace(gi.GUID)
	if u, err := url.Parse(g); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return g
	}
	return ""
}

// feedResolve makes link absolute against base when it can.
func feedResolve(base *url.URL, link string) string {
	if base == nil || link == "" {
		return link
	}
	u, err := url.Parse(link)
	if err != nil || u.IsAbs() {
		return link
	}
	return base.ResolveReference(u).String()
}

// feedItemKeys gives each item of one feed its identity key, trying in
// turn the evidence below and taking the first one that is present and
// unique within the feed (a publisher that gives every item the same GUID,
// or links every item to its home page, must not make all items one):
//
//  1. "guid:" + the GUID (RSS guid, Atom id, JSON Feed id);
//  2. "link:" + the article link;
//  3. "title:" + the title, with "@" and the published (else updated)
//     date in RFC 3339 when it has one, for items with a title;
//  4. "md5:" + the item's content hash (Hash), with "#2", "#3" … added for
//     exact duplicates in feed order.
//
// The returned keys are unique, in item order. Keys identify an item
// within one version; mapping items between versions (feedMatch) compares
// GUIDs, links and texts directly.
func feedItemKeys(items []FeedItem) []string {
	count := func(field func(*FeedItem) string) map[string]int {
		n := map[string]int{}
		for i := range items {
			if v := field(&items[i]); v != "" {
				n[v]++
			}
		}
		return n
	}
	guid := func(it *FeedItem) string { return it.GUID }
	link := func(it *FeedItem) string { return it.Link }
	titleDate := func(it *FeedItem) string {
		if it.Title == "" {
			return ""
		}
		if t := it.date(); !t.IsZero() {
			return it.Title + "@" + t.UTC().Format(time.RFC3339)
		}
		return it.Title
	}
	chain := []struct {
		prefix string
		field  func(*FeedItem) string
		n      map[string]int
	}{
		{"guid:", guid, count(guid)},
		{"link:", link, count(link)},
		{"title:", titleDate, count(titleDate)},
	}
	keys := make([]string, len(items))
	dup := map[string]int{}
	for i := range items {
		it := &items[i]
		for _, c := range chain {
			if v := c.field(it); v != "" && c.n[v] == 1 {
				keys[i] = c.prefix + v
				break
			}
		}
		if keys[i] == "" {
			h := "md5:" + it.Hash()
			dup[h]++
			if dup[h] > 1 {
				h += "#" + strconv.Itoa(dup[h])
			}
			keys[i] = h
		}
	}
	return keys
}
