package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gorilla/feeds"
)

// The same feeds as RSS 2.0 and JSON Feed 1.1, written with gorilla/feeds
// from the entries the Atom feed has: same events, same order, same
// titles, links and HTML content. gorilla/feeds has no place for the
// feed's own address and hub in RSS, so the channel is wrapped to add
// them as atom:link elements (the usual RSS extension), and its JSON Feed
// leaves out an empty "items", which JSON Feed requires.

// rssDoc is gorilla/feeds' RSS document with atom:link self and hub.
type rssDoc struct {
	XMLName   xml.Name   `xml:"rss"`
	Version   string     `xml:"version,attr"`
	ContentNS string     `xml:"xmlns:content,attr"`
	AtomNS    string     `xml:"xmlns:atom,attr"`
	Channel   rssChannel `xml:"channel"`
}

type rssChannel struct {
	AtomLinks []rssAtomLink `xml:"atom:link"`
	*feeds.RssFeed
}

type rssAtomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

// rssItem is gorilla/feeds' RSS item with one category element per
// category of the Atom entry (gorilla/feeds has room for one), its
// scheme as the domain.
type rssItem struct {
	XMLName xml.Name `xml:"item"`
	*feeds.RssItem
	Categories []rssCategory `xml:"category"`
}

type rssCategory struct {
	Domain string `xml:"domain,attr,omitempty"`
	Term   string `xml:",chardata"`
}

// jsonFeedDoc is gorilla/feeds' JSON Feed with "items" always present.
type jsonFeedDoc struct {
	*feeds.JSONFeed
	Items []*feeds.JSONItem `json:"items"`
}

// feedHead is the format-neutral feed of evs (as feedEvents returns
// them) without its items.
func (e *Engine) feedHead(feed FeedInfo, evs []Event) *feeds.Feed {
	f := &feeds.Feed{
		Title:       oneLine(feed.Title),
		Description: oneLine(feed.Subtitle),
		Id:          oneLine(feed.ID),
		Updated:     feed.Updated,
	}
	if f.Description == "" {
		f.Description = f.Title
	}
	if u := safeURL(feed.PageURL); u != "" {
		f.Link = &feeds.Link{Href: u}
	} else {
		f.Link = &feeds.Link{Href: e.URL("/")}
	}
	if len(evs) > 0 {
		f.Updated = evs[0].Snapshot.FetchedAt
	}
	return f
}

// feedItem is the format-neutral item of ev, with its tags and the
// categories of its Atom entry.
func (e *Engine) feedItem(content *bytes.Buffer, ev Event) (*feeds.Item, []string, []atomCategory, error) {
	entry, err := e.entry(content, ev)
	if err != nil {
		return nil, nil, nil, err
	}
	at := ev.Snapshot.FetchedAt.UTC()
	item := &feeds.Item{
		Title:       entry.Title.Body,
		Id:          entry.ID,
		IsPermaLink: "false", // a tag: URI, not an address
		Created:     at,
		Content:     entry.Content.Body,
		Description: entry.Title.Body,
	}
	for _, l := range entry.Links {
		switch l.Rel {
		case "alternate":
			item.Link = &feeds.Link{Href: l.Href}
		case "related":
			item.Source = &feeds.Link{Href: l.Href}
		}
	}
	var tags []string
	for _, c := range entry.Categories {
		if c.Scheme != SchemeChangeType {
			tags = append(tags, c.Term)
		}
	}
	return item, tags, entry.Categories, nil
}

// Salts keep each format's encoded items apart in the entry cache.
const (
	atomSalt = 0
	rssSalt  = 0x9e3779b97f4a7c15
	jsonSalt = 0xc2b2ae3d27d4eb4f
)

// feedItems returns the encoded item of each event, from the entry cache
// (key Event.Key or EventKey, ^ salt) or made by encode and kept: rendering the change
// list and encoding it is most of a feed's cost, and a version's item
// never changes. content is a buffer encode may use for the change list.
func (e *Engine) feedItems(evs []Event, salt uint64, encode func(content *bytes.Buffer, ev Event) ([]byte, error)) ([][]byte, error) {
	out := make([][]byte, 0, len(evs))
	var content bytes.Buffer
	for _, ev := range evs {
		x, err := e.entries.Do(keyOf(ev)^salt, func() ([]byte, int, error) {
			if ev.loads() {
				var err error
				if ev, err = ev.load(); err != nil {
					return nil, 0, err
				}
			}
			x, err := encode(&content, ev)
			return x, len(x) + 64, err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// rssDocument is the RSS document of f (its channel and items) with the
// feed's own address and hub as atom:link elements.
func (e *Engine) rssDocument(feed FeedInfo, f *feeds.Feed) rssDoc {
	ch := (&feeds.Rss{Feed: f}).RssFeed()
	ch.Generator = e.Name
	doc := rssDoc{Version: "2.0", ContentNS: "http://purl.org/rss/1.0/modules/content/", AtomNS: atomNS,
		Channel: rssChannel{RssFeed: ch, AtomLinks: []rssAtomLink{{Rel: "self", Type: "application/rss+xml", Href: safeURL(feed.RSSURL)}}}}
	if u := safeURL(feed.HubURL); u != "" {
		doc.Channel.AtomLinks = append(doc.Channel.AtomLinks, rssAtomLink{Rel: "hub", Href: u})
	}
	return doc
}

// jsonDocument is the JSON Feed document of f, its items made by
// jsonItem, "items" present even when empty.
func (e *Engine) jsonDocument(feed FeedInfo, f *feeds.Feed, tags [][]string) jsonFeedDoc {
	if a := oneLine(feed.Author); a != "" {
		f.Author = &feeds.Author{Name: a}
	}
	jf := (&feeds.JSON{Feed: f}).JSONFeed()
	jf.FeedUrl = safeURL(feed.JSONURL)
	jf.Author = nil // deprecated in 1.1: "authors" only
	if u := safeURL(feed.HubURL); u != "" {
		jf.Hubs = []*feeds.JSONHub{{Type: "WebSub", Url: u}}
	}
	doc := jsonFeedDoc{JSONFeed: jf, Items: jf.Items}
	if doc.Items == nil {
		doc.Items = []*feeds.JSONItem{}
	}
	for i, it := range doc.Items {
		jsonItem(it, tags[i])
	}
	return doc
}

// jsonItem completes an item gorilla/feeds made: its tags, and its
// publication time in whole seconds, UTC.
func jsonItem(it *feeds.JSONItem, tags []string) {
	it.Tags = tags
	if it.PublishedDate != nil {
		t := it.PublishedDate.UTC().Truncate(time.Second)
		it.PublishedDate = &t
	}
}

// RSS writes the feed as RSS 2.0: one item per event as in Atom, with
// the change list as content:encoded, a guid that is the Atom entry id
// (isPermaLink="false"), the entry's categories (change types, interests
// matched, the watch's tags, each with its scheme as domain), and atom:link elements naming the feed's own
// address (feed.RSSURL) and its hub. Errors as Atom's, and
// ErrInvalidFeed when RSSURL is not an absolute http or https URL.
func (e *Engine) RSS(w io.Writer, feed FeedInfo, events []Event) error {
	if safeURL(feed.RSSURL) == "" {
		return fmt.Errorf("%w %s: RSS address %q is not an absolute http or https URL", ErrInvalidFeed, feed.ID, feed.RSSURL)
	}
	evs, err := e.feedEvents(feed, events)
	if err != nil {
		return err
	}
	// Items are encoded one by one, as they sit in the document (depth
	// 2), and written into the encoded channel before its end tag.
	items, err := e.feedItems(evs, rssSalt, func(content *bytes.Buffer, ev Event) ([]byte, error) {
		item, _, cats, err := e.feedItem(content, ev)
		if err != nil {
			return nil, err
		}
		ri := rssItem{RssItem: (&feeds.Rss{Feed: &feeds.Feed{Items: []*feeds.Item{item}}}).RssFeed().Items[0]}
		for _, c := range cats {
			ri.Categories = append(ri.Categories, rssCategory{Domain: c.Scheme, Term: c.Term})
		}
		var b bytes.Buffer
		enc := xml.NewEncoder(&b)
		enc.Indent("    ", "  ")
		if err := enc.Encode(ri); err != nil {
			return nil, fmt.Errorf("render: encode an item of RSS feed %s: %w", feed.ID, err)
		}
		return b.Bytes(), nil
	})
	if err != nil {
		return err
	}
	doc := e.rssDocument(feed, e.feedHead(feed, evs))
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("render: encode RSS feed %s: %w", feed.ID, err)
	}
	out := buf.Bytes()
	end := bytes.LastIndex(out, []byte("\n  </channel>"))
	if end < 0 {
		return fmt.Errorf("render: encode RSS feed %s: no channel end tag", feed.ID)
	}
	return writeSpliced(w, out[:end], items, newline, newline, out[end:], newline)
}

// writeSpliced writes head, then each item after sep (the first after
// first), then tail and end: the items of a feed go to w as they are,
// not through a buffer that grows to hold them.
func writeSpliced(w io.Writer, head []byte, items [][]byte, first, sep, tail, end []byte) error {
	if g, ok := w.(interface{ Grow(int) }); ok {
		n := len(head) + len(tail) + len(end)
		for _, x := range items {
			n += len(sep) + len(x)
		}
		g.Grow(n)
	}
	ew := errWriter{w: w}
	ew.write(head)
	for i, x := range items {
		if i == 0 {
			ew.write(first)
		} else {
			ew.write(sep)
		}
		ew.write(x)
	}
	ew.write(tail)
	ew.write(end)
	return ew.err
}

// JSONFeed writes the feed as JSON Feed 1.1: one item per event as in
// Atom, content_html the change list, tags the interests matched and the
// watch's tags, feed_url feed.JSONURL and the hub under "hubs". Errors as
// Atom's, and ErrInvalidFeed when JSONURL is not an absolute http or
// https URL.
func (e *Engine) JSONFeed(w io.Writer, feed FeedInfo, events []Event) error {
	if safeURL(feed.JSONURL) == "" {
		return fmt.Errorf("%w %s: JSON Feed address %q is not an absolute http or https URL", ErrInvalidFeed, feed.ID, feed.JSONURL)
	}
	evs, err := e.feedEvents(feed, events)
	if err != nil {
		return err
	}
	// Items are encoded one by one, indented as they sit in the document
	// (depth 2), and written into the encoded feed's "items" array.
	items, err := e.feedItems(evs, jsonSalt, func(content *bytes.Buffer, ev Event) ([]byte, error) {
		item, tags, _, err := e.feedItem(content, ev)
		if err != nil {
			return nil, err
		}
		it := (&feeds.JSON{Feed: &feeds.Feed{Items: []*feeds.Item{item}}}).JSONFeed().Items[0]
		jsonItem(it, tags)
		b, err := json.MarshalIndent(it, "    ", "  ")
		if err != nil {
			return nil, fmt.Errorf("render: encode an item of JSON feed %s: %w", feed.ID, err)
		}
		return b, nil
	})
	if err != nil {
		return err
	}
	doc := e.jsonDocument(feed, e.feedHead(feed, evs), nil)
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("render: encode JSON feed %s: %w", feed.ID, err)
	}
	if len(items) == 0 {
		_, err = w.Write(append(b, '\n'))
		return err
	}
	// "items" is the document's last member: its empty array is opened
	// and the items written into it.
	at := bytes.LastIndex(b, []byte(`"items": []`))
	if at < 0 {
		return fmt.Errorf("render: encode JSON feed %s: no items member", feed.ID)
	}
	open := at + len(`"items": [`)
	return writeSpliced(w, b[:open], items, []byte("\n    "), []byte(",\n    "), []byte("\n  "), append(b[open:len(b):len(b)], '\n'))
}

// AlternateURLs returns the RSS and JSON Feed addresses of the feed whose
// Atom address is atomURL: …/atom.xml gives …/rss.xml and …/feed.json,
// …/NAME.xml gives …/NAME.rss and …/NAME.json; "" for anything else.
func AlternateURLs(atomURL string) (rss, json string) {
	if base, ok := strings.CutSuffix(atomURL, "/atom.xml"); ok {
		return base + "/rss.xml", base + "/feed.json"
	}
	if base, ok := strings.CutSuffix(atomURL, ".xml"); ok {
		return base + ".rss", base + ".json"
	}
	return "", ""
}
