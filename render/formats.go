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

// jsonFeedDoc is gorilla/feeds' JSON Feed with "items" always present.
type jsonFeedDoc struct {
	*feeds.JSONFeed
	Items []*feeds.JSONItem `json:"items"`
}

// commonFeed builds the format-neutral feed of events (see Atom for the
// choice and order of events) and the tags of each item.
func (e *Engine) commonFeed(feed FeedInfo, events []Event) (*feeds.Feed, [][]string, error) {
	evs, err := e.feedEvents(feed, events)
	if err != nil {
		return nil, nil, err
	}
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
	tags := make([][]string, len(evs))
	var content bytes.Buffer
	for i, ev := range evs {
		entry, err := e.entryParts(&content, ev)
		if err != nil {
			return nil, nil, err
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
		for _, c := range entry.Categories {
			if c.Scheme != SchemeChangeType {
				tags[i] = append(tags[i], c.Term)
			}
		}
		f.Items = append(f.Items, item)
	}
	return f, tags, nil
}

// partsSalt keeps the entry parts apart from the encoded Atom entries of
// the same event in the entry cache.
const partsSalt = 0x9e3779b97f4a7c15

// entryParts is entry, kept in the entry cache (as JSON) like the Atom
// entries, since rendering the change list is most of a feed's cost.
func (e *Engine) entryParts(content *bytes.Buffer, ev Event) (atomEntry, error) {
	key := eventKey(ev) ^ partsSalt
	var entry atomEntry
	if b, ok := e.entries.get(key); ok && json.Unmarshal(b, &entry) == nil {
		return entry, nil
	}
	entry, err := e.entry(content, ev)
	if err != nil {
		return entry, err
	}
	if b, err := json.Marshal(entry); err == nil {
		e.entries.put(key, b)
	}
	return entry, nil
}

// RSS writes the feed as RSS 2.0: one item per event as in Atom, with
// the change list as content:encoded, a guid that is the Atom entry id
// (isPermaLink="false"), and atom:link elements naming the feed's own
// address (feed.RSSURL) and its hub. Errors as Atom's, and
// ErrInvalidFeed when RSSURL is not an absolute http or https URL.
func (e *Engine) RSS(w io.Writer, feed FeedInfo, events []Event) error {
	self := safeURL(feed.RSSURL)
	if self == "" {
		return fmt.Errorf("%w %s: RSS address %q is not an absolute http or https URL", ErrInvalidFeed, feed.ID, feed.RSSURL)
	}
	f, _, err := e.commonFeed(feed, events)
	if err != nil {
		return err
	}
	ch := (&feeds.Rss{Feed: f}).RssFeed()
	ch.Generator = e.Name
	doc := rssDoc{Version: "2.0", ContentNS: "http://purl.org/rss/1.0/modules/content/", AtomNS: atomNS,
		Channel: rssChannel{RssFeed: ch, AtomLinks: []rssAtomLink{{Rel: "self", Type: "application/rss+xml", Href: self}}}}
	if u := safeURL(feed.HubURL); u != "" {
		doc.Channel.AtomLinks = append(doc.Channel.AtomLinks, rssAtomLink{Rel: "hub", Href: u})
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("render: encode RSS feed %s: %w", feed.ID, err)
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// JSONFeed writes the feed as JSON Feed 1.1: one item per event as in
// Atom, content_html the change list, tags the interests matched and the
// watch's tags, feed_url feed.JSONURL and the hub under "hubs". Errors as
// Atom's, and ErrInvalidFeed when JSONURL is not an absolute http or
// https URL.
func (e *Engine) JSONFeed(w io.Writer, feed FeedInfo, events []Event) error {
	self := safeURL(feed.JSONURL)
	if self == "" {
		return fmt.Errorf("%w %s: JSON Feed address %q is not an absolute http or https URL", ErrInvalidFeed, feed.ID, feed.JSONURL)
	}
	f, tags, err := e.commonFeed(feed, events)
	if err != nil {
		return err
	}
	if a := oneLine(feed.Author); a != "" {
		f.Author = &feeds.Author{Name: a}
	}
	jf := (&feeds.JSON{Feed: f}).JSONFeed()
	jf.FeedUrl = self
	jf.Author = nil // deprecated in 1.1: "authors" only
	if u := safeURL(feed.HubURL); u != "" {
		jf.Hubs = []*feeds.JSONHub{{Type: "WebSub", Url: u}}
	}
	doc := jsonFeedDoc{JSONFeed: jf, Items: jf.Items}
	if doc.Items == nil {
		doc.Items = []*feeds.JSONItem{}
	}
	for i, it := range doc.Items {
		it.Tags = tags[i]
		if it.PublishedDate != nil {
			t := it.PublishedDate.UTC().Truncate(time.Second)
			it.PublishedDate = &t
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("render: encode JSON feed %s: %w", feed.ID, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
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
