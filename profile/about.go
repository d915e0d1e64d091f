package profile

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

// Interest pages. A FOAF interest is usually a page (foaf:interest
// <http://en.wikipedia.org/wiki/Jazz>, a DBpedia resource, a project's home
// page): its title and opening text say which meaning of the term is
// meant. Build reads them through Builder.Describe and keeps them in
// Interest.About; the expand package takes them as context.

// Defaults of a Builder's interest pages.
const (
	DefaultMaxInterestPages = 30
	DefaultAboutCacheSize   = 2000
	DefaultAboutCacheTTL    = 7 * 24 * time.Hour
)

// aboutCache keeps the pages read lately, so that a profile uploaded again
// (or another profile naming the same Wikipedia article) reads none of
// them twice. It is bounded in entries and age; failures are not kept.
type aboutCache struct {
	mu      sync.Mutex
	entries map[string]aboutEntry
}

type aboutEntry struct {
	about changedigest.About
	at    time.Time
}

func (c *aboutCache) get(url string, now time.Time, ttl time.Duration) (changedigest.About, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[url]
	if !ok || now.Sub(e.at) > ttl {
		return changedigest.About{}, false
	}
	return e.about, true
}

func (c *aboutCache) put(url string, a changedigest.About, now time.Time, size int, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]aboutEntry{}
	}
	if len(c.entries) >= size {
		// Drop the expired entries, then the oldest until there is room.
		for k, e := range c.entries {
			if now.Sub(e.at) > ttl {
				delete(c.entries, k)
			}
		}
		for len(c.entries) >= size {
			oldest, at := "", now
			for k, e := range c.entries {
				if oldest == "" || e.at.Before(at) {
					oldest, at = k, e.at
				}
			}
			delete(c.entries, oldest)
		}
	}
	c.entries[url] = aboutEntry{about: a, at: now}
}

// describeInterests fills in the About of the interests that name a web
// page, up to MaxInterestPages of them, from the cache or through
// Describe. A page that cannot be read leaves its interest without About
// (it is logged); only ctx's end is an error.
func (b *Builder) describeInterests(ctx context.Context, p *changedigest.Profile) error {
	if b.Describe == nil {
		return nil
	}
	read := 0
	for i := range p.Interests {
		in := &p.Interests[i]
		if in.About != nil || !isWebURL(in.URI) {
			continue
		}
		if a, ok := b.cache.get(in.URI, b.now(), b.aboutTTL()); ok {
			in.About = &a
			continue
		}
		if read >= b.maxInterestPages() {
			continue
		}
		read++
		a, err := b.Describe(ctx, in.URI)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.logger().Info("interest page not read", "url", in.URI, "error", err)
			continue
		}
		a = TrimAbout(a)
		if a.URL == "" {
			a.URL = in.URI
		}
		if a.Title == "" && a.Text == "" {
			continue
		}
		b.cache.put(in.URI, a, b.now(), b.aboutCacheSize(), b.aboutTTL())
		in.About = &a
	}
	return nil
}

func (b *Builder) maxInterestPages() int {
	if b.MaxInterestPages > 0 {
		return b.MaxInterestPages
	}
	return DefaultMaxInterestPages
}

func (b *Builder) aboutCacheSize() int {
	if b.AboutCacheSize > 0 {
		return b.AboutCacheSize
	}
	return DefaultAboutCacheSize
}

func (b *Builder) aboutTTL() time.Duration {
	if b.AboutCacheTTL > 0 {
		return b.AboutCacheTTL
	}
	return DefaultAboutCacheTTL
}

// TrimAbout collapses the white space of an About's title and text and
// cuts the text to changedigest.MaxAboutText bytes at a word boundary.
func TrimAbout(a changedigest.About) changedigest.About {
	a.Title = cleanText(a.Title)
	if len(a.Title) > 300 {
		a.Title = cutText(a.Title, 300)
	}
	a.Text = cleanText(a.Text)
	if len(a.Text) > changedigest.MaxAboutText {
		a.Text = cutText(a.Text, changedigest.MaxAboutText)
	}
	return a
}

// cutText cuts s to at most n bytes, at a space when there is one in the
// second half, else at a rune boundary.
func cutText(s string, n int) string {
	cut := n
	if i := strings.LastIndexByte(s[:n], ' '); i > n/2 {
		cut = i
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Properties that give a resource's description, best first.
var abstractProperties = []string{
	"http://dbpedia.org/ontology/abstract", rdfsNS + "comment", "http://purl.org/dc/terms/description",
	"http://purl.org/dc/elements/1.1/description", "http://schema.org/description", "https://schema.org/description",
	"http://www.w3.org/2004/02/skos/core#definition",
}

// DescribeRDF reads what an RDF document (RDF/XML, Turtle or N-Triples,
// as a DBpedia resource is served) says of the resource url: its label
// (dc:title, rdfs:label, foaf:name, skos:prefLabel) and its description
// (dbo:abstract, rdfs:comment, dc:description…), in English or without a
// language where it can. ok is false when the document is not RDF or says
// nothing of url.
func DescribeRDF(body []byte, contentType, url string) (a changedigest.About, ok bool) {
	ts, _, err := readTriples(Document{Body: bytes.NewReader(body), Name: url, ContentType: contentType}, DefaultMaxSize)
	if err != nil {
		return changedigest.About{}, false
	}
	g := newGraph(ts)
	s := iri(url)
	if len(g.bySubject[s]) == 0 {
		// http and https, with or without a final slash.
		for _, alt := range []string{strings.Replace(url, "https://", "http://", 1), strings.Replace(url, "http://", "https://", 1)} {
			if len(g.bySubject[iri(alt)]) > 0 {
				s = iri(alt)
				break
			}
		}
	}
	a = changedigest.About{URL: url, Title: g.literalValue(s, labelProperties...), Text: g.literalValue(s, abstractProperties...)}
	if a.Title == "" && a.Text == "" {
		return changedigest.About{}, false
	}
	return TrimAbout(a), true
}
