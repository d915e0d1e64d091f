package render

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/changedigest/changedigest"
)

// The Atom document is written from private structs with encoding/xml
// rather than with gorilla/feeds: gorilla/feeds v1.2.0 uses the link as the
// feed id (Feed.Id is ignored), writes one link only (no rel="self"), and
// writes categories as text elements where Atom wants term and scheme
// attributes.

const atomNS = "http://www.w3.org/2005/Atom"

type atomFeed struct {
	XMLName   xml.Name      `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string        `xml:"id"`
	Title     atomText      `xml:"title"`
	Subtitle  *atomText     `xml:"subtitle,omitempty"`
	Updated   string        `xml:"updated"`
	Links     []atomLink    `xml:"link"`
	Author    atomPerson    `xml:"author"`
	Generator atomGenerator `xml:"generator"`
	Entries   []atomEntry   `xml:"entry"`
}

type atomText struct {
	Type string `xml:"type,attr,omitempty"`
	Body string `xml:",chardata"`
}

type atomLink struct {
	Rel   string `xml:"rel,attr"`
	Type  string `xml:"type,attr,omitempty"`
	Href  string `xml:"href,attr"`
	Title string `xml:"title,attr,omitempty"`
}

type atomPerson struct {
	Name string `xml:"name"`
	URI  string `xml:"uri,omitempty"`
}

type atomGenerator struct {
	URI     string `xml:"uri,attr,omitempty"`
	Version string `xml:"version,attr,omitempty"`
	Name    string `xml:",chardata"`
}

type atomCategory struct {
	Term   string `xml:"term,attr"`
	Scheme string `xml:"scheme,attr,omitempty"`
	Label  string `xml:"label,attr,omitempty"`
}

type atomEntry struct {
	ID         string         `xml:"id"`
	Title      atomText       `xml:"title"`
	Updated    string         `xml:"updated"`
	Published  string         `xml:"published"`
	Links      []atomLink     `xml:"link"`
	Categories []atomCategory `xml:"category"`
	Content    atomText       `xml:"content"`
}

// Category schemes of the feed entries.
const (
	SchemeChangeType = Project + "#change-type"
	SchemeInterest   = Project + "#interest"
	SchemeTag        = Project + "#tag"
)

// FeedInfo describes one feed: a user's, a watch's or a tag's. Build it
// with Engine.UserFeed, WatchFeed or TagFeed, which fill every field.
type FeedInfo struct {
	// ID is the feed's permanent id, a tag: URI.
	ID    string
	Title string
	// Subtitle is an optional line under the title.
	Subtitle string
	// SelfURL is the feed's own address (rel="self"), with whatever
	// secret token the server puts in it; PageURL is the web page showing
	// the same changes (rel="alternate").
	SelfURL string
	PageURL string
	// Updated is the feed's time when it has no entries (the newest entry's
	// time otherwise); the creation time of the user or watch.
	Updated time.Time
	// Author names who the feed is for.
	Author string
	// RSSURL and JSONURL are the same feed as RSS 2.0 and JSON Feed 1.1,
	// advertised as alternates (optional).
	RSSURL, JSONURL string
	// HubURL is the WebSub hub that pushes the feed (rel="hub"), when
	// one runs.
	HubURL string
}

// tagURI builds "tag:AUTHORITY,DATE:specific"; DATE is the day (UTC) the
// named thing was created, so the id never changes.
func (e *Engine) tagURI(created time.Time, specific string) string {
	return "tag:" + e.Authority + "," + created.UTC().Format("2006-01-02") + ":" + specific
}

// UserFeed describes the feed of all of a user's watches. selfURL is the
// feed's address as the server serves it.
func (e *Engine) UserFeed(u *changedigest.User, selfURL string) FeedInfo {
	return FeedInfo{
		ID:      e.tagURI(u.CreatedAt, "user/"+strconv.FormatInt(u.ID, 10)),
		Title:   e.Name + ": changes for " + oneLine(u.Name),
		SelfURL: selfURL,
		PageURL: e.URL("/"),
		Updated: u.CreatedAt,
		Author:  oneLine(u.Name),
	}
}

// WatchFeed describes the feed of one watch.
func (e *Engine) WatchFeed(u *changedigest.User, w *changedigest.Watch, selfURL string) FeedInfo {
	return FeedInfo{
		ID:       e.tagURI(w.CreatedAt, "watch/"+strconv.FormatInt(w.ID, 10)),
		Title:    e.Name + ": " + oneLine(w.Name()),
		Subtitle: "Changes of " + oneLine(w.URL),
		SelfURL:  selfURL,
		PageURL:  e.URL(watchPath(w.ID)),
		Updated:  w.CreatedAt,
		Author:   oneLine(u.Name),
	}
}

// TagFeed describes the feed of a user's watches that carry tag.
func (e *Engine) TagFeed(u *changedigest.User, tag, selfURL string) FeedInfo {
	return FeedInfo{
		ID:      e.tagURI(u.CreatedAt, "user/"+strconv.FormatInt(u.ID, 10)+"/tag/"+url.PathEscape(tag)),
		Title:   e.Name + ": changes tagged " + oneLine(tag),
		SelfURL: selfURL,
		PageURL: e.URL("/tags/" + url.PathEscape(tag)),
		Updated: u.CreatedAt,
		Author:  oneLine(u.Name),
	}
}

// EntryID returns the permanent id of the entry for version seq of w:
// tag:AUTHORITY,YYYY-MM-DD:watch/ID/version/SEQ, the date being the
// watch's creation day.
func (e *Engine) EntryID(w *changedigest.Watch, seq int) string {
	return e.tagURI(w.CreatedAt, "watch/"+strconv.FormatInt(w.ID, 10)+"/version/"+strconv.Itoa(seq))
}

func atomTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Atom writes an Atom 1.0 feed of events, one entry per event, newest
// first, at most MaxEntries. Events without changes are skipped. The
// feed's updated time is the newest entry's detection time (feed.Updated
// when there is none); nothing reads the clock. The document is built in
// memory and written only when complete.
//
// It returns an error wrapping ErrInvalidFeed when the feed has no id or
// title, or its self or page URL is not an absolute http or https URL,
// and one wrapping ErrInvalidEvent for an event View rejects.
func (e *Engine) Atom(w io.Writer, feed FeedInfo, events []Event) error {
	evs, err := e.feedEvents(feed, events)
	if err != nil {
		return err
	}

	author := oneLine(feed.Author)
	if author == "" {
		author = e.Name
	}
	f := atomFeed{
		ID:        oneLine(feed.ID),
		Title:     atomText{Type: "text", Body: oneLine(feed.Title)},
		Updated:   atomTime(feed.Updated),
		Links:     []atomLink{{Rel: "self", Type: "application/atom+xml", Href: safeURL(feed.SelfURL)}},
		Author:    atomPerson{Name: author},
		Generator: atomGenerator{URI: Project, Version: oneLine(e.Version), Name: e.Name},
	}
	if feed.PageURL != "" {
		f.Links = append(f.Links, atomLink{Rel: "alternate", Type: "text/html", Href: safeURL(feed.PageURL)})
	}
	if u := safeURL(feed.RSSURL); u != "" {
		f.Links = append(f.Links, atomLink{Rel: "alternate", Type: "application/rss+xml", Href: u, Title: "RSS 2.0"})
	}
	if u := safeURL(feed.JSONURL); u != "" {
		f.Links = append(f.Links, atomLink{Rel: "alternate", Type: "application/feed+json", Href: u, Title: "JSON Feed"})
	}
	if u := safeURL(feed.HubURL); u != "" {
		f.Links = append(f.Links, atomLink{Rel: "hub", Href: u})
	}
	if s := oneLine(feed.Subtitle); s != "" {
		f.Subtitle = &atomText{Type: "text", Body: s}
	}
	if len(evs) > 0 {
		f.Updated = atomTime(evs[0].Snapshot.FetchedAt)
	}
	// Entries are encoded one by one (and kept: see entryCache), then
	// written into the encoded feed before its end tag.
	entries, err := e.feedItems(evs, atomSalt, func(content *bytes.Buffer, ev Event) ([]byte, error) {
		entry, err := e.entry(content, ev)
		if err != nil {
			return nil, err
		}
		var eb bytes.Buffer
		enc := xml.NewEncoder(&eb)
		enc.Indent("  ", "  ")
		if err := enc.EncodeElement(entry, xml.StartElement{Name: xml.Name{Local: "entry"}}); err != nil {
			return nil, fmt.Errorf("render: encode an entry of feed %s: %w", feed.ID, err)
		}
		return eb.Bytes(), nil
	})
	if err != nil {
		return err
	}

	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("render: encode feed %s: %w", feed.ID, err)
	}
	out := buf.Bytes()
	end := bytes.LastIndex(out, []byte("\n</feed>"))
	if end < 0 {
		return fmt.Errorf("render: encode feed %s: no end tag", feed.ID)
	}
	return writeSpliced(w, out[:end], entries, newline, newline, out[end:], newline)
}

var newline = []byte{'\n'}

// errWriter writes to w until a write fails, and keeps the first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) write(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

// feedEvents checks a feed and its events and returns the events it
// shows: those with a change told (Event.Told) or to be loaded (whose
// lister chose them for what they tell), newest first, at most
// MaxEntries.
func (e *Engine) feedEvents(feed FeedInfo, events []Event) ([]Event, error) {
	switch {
	case feed.ID == "":
		return nil, fmt.Errorf("%w: no id", ErrInvalidFeed)
	case oneLine(feed.Title) == "":
		return nil, fmt.Errorf("%w %s: no title", ErrInvalidFeed, feed.ID)
	case safeURL(feed.SelfURL) == "":
		return nil, fmt.Errorf("%w %s: self link %q is not an absolute http or https URL", ErrInvalidFeed, feed.ID, feed.SelfURL)
	case feed.PageURL != "" && safeURL(feed.PageURL) == "":
		return nil, fmt.Errorf("%w %s: page link %q is not an absolute http or https URL", ErrInvalidFeed, feed.ID, feed.PageURL)
	}
	for _, ev := range events {
		if err := ev.check(); err != nil {
			return nil, err
		}
	}
	evs := make([]Event, 0, len(events))
	for _, ev := range events {
		if ev.loads() || ev.Told() {
			evs = append(evs, ev)
		}
	}
	slices.SortStableFunc(evs, func(a, b Event) int {
		if c := b.Snapshot.FetchedAt.Compare(a.Snapshot.FetchedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Watch.ID, b.Watch.ID); c != 0 {
			return c
		}
		return cmp.Compare(b.Snapshot.Seq, a.Snapshot.Seq)
	})
	if max := e.MaxEntries; max > 0 && len(evs) > max {
		evs = evs[:max]
	}
	return evs, nil
}

// entry builds the Atom entry of one event; content is a scratch buffer.
func (e *Engine) entry(content *bytes.Buffer, ev Event) (atomEntry, error) {
	v, err := e.View(ev, ViewOptions{Context: e.Context, MaxChars: e.MaxChangeChars})
	if err != nil {
		return atomEntry{}, err
	}
	if err := e.fitEntry(content, &v); err != nil {
		return atomEntry{}, err
	}
	at := atomTime(ev.Snapshot.FetchedAt)
	entry := atomEntry{
		ID:        e.EntryID(ev.Watch, ev.Snapshot.Seq),
		Title:     atomText{Type: "text", Body: v.Title()},
		Updated:   at,
		Published: at,
		Links:     []atomLink{{Rel: "alternate", Type: "text/html", Href: v.URL}},
		Content:   atomText{Type: "html", Body: content.String()},
	}
	if v.WatchURL != "" {
		entry.Links = append(entry.Links, atomLink{Rel: "related", Type: "text/html", Href: v.WatchURL, Title: v.WatchName})
	}
	for _, t := range v.Types {
		entry.Categories = append(entry.Categories, atomCategory{Term: string(t), Scheme: SchemeChangeType, Label: string(t) + " change"})
	}
	for _, in := range v.Interests {
		entry.Categories = append(entry.Categories, atomCategory{Term: in, Scheme: SchemeInterest, Label: "interest: " + in})
	}
	for _, t := range ev.Watch.Tags {
		if t = oneLine(t); t != "" {
			entry.Categories = append(entry.Categories, atomCategory{Term: t, Scheme: SchemeTag, Label: t})
		}
	}
	return entry, nil
}

// fitEntry renders the entry's HTML into buf, leaving out the last
// changes (general ones first) until it fits MaxEntryBytes; at least one
// change is always kept. Nothing is ever cut inside the HTML, so the
// content stays well-formed.
func (e *Engine) fitEntry(buf *bytes.Buffer, v *EventView) error {
	render := func() error {
		buf.Reset()
		if err := e.inline.ExecuteTemplate(buf, "feed-entry", v); err != nil {
			return fmt.Errorf("render: feed entry for watch %d version %d: %w", v.WatchID, v.Seq, err)
		}
		return nil
	}
	if err := render(); err != nil {
		return err
	}
	limit := e.MaxEntryBytes
	if limit <= 0 || buf.Len() <= limit {
		return nil
	}
	// Measure each change once, then keep a prefix that fits.
	var one bytes.Buffer
	size := func(c ChangeView) int {
		one.Reset()
		if err := e.inline.ExecuteTemplate(&one, "change", c); err != nil {
			return limit
		}
		return one.Len()
	}
	frame := buf.Len()
	all := slices.Concat(v.Profile, v.General)
	sizes := make([]int, len(all))
	for i, c := range all {
		sizes[i] = size(c)
		frame -= sizes[i]
	}
	budget := limit - frame - 200 // room for the "…and N more" line
	keep, used := 0, 0
	for keep < len(all) && (keep == 0 || used+sizes[keep] <= budget) {
		used += sizes[keep]
		keep++
	}
	np := min(keep, len(v.Profile))
	v.Omitted += len(all) - keep
	v.Profile = v.Profile[:np]
	v.General = v.General[:keep-np]
	return render()
}
