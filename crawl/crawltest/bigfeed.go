package crawltest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// BigFeedConfig describes a generated feed of many short items and a
// second version of it, as a publisher that lists its whole archive
// serves: tens of thousands of items of a line or two each.
type BigFeedConfig struct {
	// Items is the number of items of the first version (default 40,000).
	Items int
	// Atom writes Atom 1.0, JSON a JSON Feed 1.1, instead of RSS 2.0.
	Atom, JSON bool
	// NoIDs leaves out GUIDs and links (items are told apart by title,
	// date and text); NoDates leaves out the dates too.
	NoIDs, NoDates bool
	// Words is the length of an item's description in words (default 5).
	Words int
	// Added items go on top of the second version, Removed ones are
	// dropped from its bottom (the oldest), Edited ones, spread evenly
	// over the items kept, get two words more in their description.
	Added, Removed, Edited int
	// Seed makes the texts reproducible; feeds of different seeds share
	// no item.
	Seed uint64
}

// BigFeedItem is what a generated item holds.
type BigFeedItem struct {
	ID          int // unique in the feed's versions; the GUID ends in it
	Title, Text string
	Date        time.Time
	Edited      bool // its text in the second version differs
}

// bigFeedWords are the words item texts are made of: 4,096 made-up
// words of two or three syllables, drawn with the skewed frequencies of
// a natural language (Zipf's law), so that some words are in many items
// and most in few.
var bigFeedWords = func() []string {
	syl := strings.Fields(`ba be bi bo bu da de di do du fa fe fi fo ga ge go ka ke ki ko la le li lo
		lu ma me mi mo na ne ni no pa pe pi po ra re ri ro sa se si so ta te ti to va ve vi zo`)
	r := rand.New(rand.NewPCG(1, 1))
	seen := map[string]bool{}
	var out []string
	for len(out) < 4096 {
		w := syl[r.IntN(len(syl))] + syl[r.IntN(len(syl))]
		if r.IntN(2) == 0 {
			w += syl[r.IntN(len(syl))]
		}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}()

// BigFeed returns the items of both versions of a generated feed, newest
// first: the second version has cfg.Added new items on top, the
// cfg.Removed oldest ones dropped and cfg.Edited items with a longer
// description. Items are dated ten minutes apart.
func BigFeed(cfg BigFeedConfig) (v1, v2 []BigFeedItem) {
	if cfg.Items <= 0 {
		cfg.Items = 40000
	}
	if cfg.Words <= 0 {
		cfg.Words = 5
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x6269676665656420))
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(bigFeedWords)-1))
	sentence := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(bigFeedWords[zipf.Uint64()])
		}
		return b.String()
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := int(cfg.Seed%1000) * 1_000_000
	v1 = make([]BigFeedItem, cfg.Items)
	for i := range v1 {
		v1[i] = BigFeedItem{ID: id + cfg.Items - i, Title: sentence(4), Text: sentence(cfg.Words),
			Date: base.Add(-time.Duration(i) * 10 * time.Minute)}
	}
	v2 = make([]BigFeedItem, 0, cfg.Items+cfg.Added)
	for i := range cfg.Added {
		v2 = append(v2, BigFeedItem{ID: id + cfg.Items + 1 + i, Title: sentence(4), Text: sentence(cfg.Words),
			Date: base.Add(time.Duration(cfg.Added-i) * 10 * time.Minute)})
	}
	kept := v1[:max(0, len(v1)-cfg.Removed)]
	step := 0
	if cfg.Edited > 0 {
		step = max(1, len(kept)/cfg.Edited)
	}
	edited := 0
	for i, it := range kept {
		if step > 0 && edited < cfg.Edited && i%step == step/2 {
			it.Text += " " + sentence(2)
			it.Edited = true
			edited++
		}
		v2 = append(v2, it)
	}
	return v1, v2
}

// BigFeedBody writes items as an RSS 2.0, Atom 1.0 or JSON Feed 1.1
// document.
func BigFeedBody(cfg BigFeedConfig, items []BigFeedItem) []byte {
	var b bytes.Buffer
	b.Grow(len(items) * 200)
	if cfg.JSON {
		b.WriteString(`{"version":"https://jsonfeed.org/version/1.1","title":"Big feed","home_page_url":"https://example.com/","items":[` + "\n")
		for i, it := range items {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString("{")
			if !cfg.NoIDs {
				fmt.Fprintf(&b, `"id":"https://example.com/%d","url":"https://example.com/%d",`, it.ID, it.ID)
			}
			if !cfg.NoDates {
				fmt.Fprintf(&b, `"date_published":"%s",`, it.Date.Format(time.RFC3339))
			}
			fmt.Fprintf(&b, `"title":"%s","content_text":"%s"}`, it.Title, it.Text)
		}
		b.WriteString("\n]}\n")
		return b.Bytes()
	}
	if cfg.Atom {
		b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" +
			`<feed xmlns="http://www.w3.org/2005/Atom"><title>Big feed</title><id>urn:bigfeed</id>` +
			`<updated>2026-01-02T00:00:00Z</updated><link href="https://example.com/"/>` + "\n")
		for _, it := range items {
			b.WriteString("<entry>")
			if !cfg.NoIDs {
				fmt.Fprintf(&b, `<id>https://example.com/%d</id><link href="https://example.com/%d"/>`, it.ID, it.ID)
			}
			fmt.Fprintf(&b, "<title>%s</title>", it.Title)
			if !cfg.NoDates {
				fmt.Fprintf(&b, "<updated>%s</updated>", it.Date.Format(time.RFC3339))
			}
			fmt.Fprintf(&b, "<summary>%s</summary></entry>\n", it.Text)
		}
		b.WriteString("</feed>\n")
		return b.Bytes()
	}
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" +
		`<rss version="2.0"><channel><title>Big feed</title><link>https://example.com/</link>` +
		`<description>A long feed</description>` + "\n")
	for _, it := range items {
		b.WriteString("<item>")
		if !cfg.NoIDs {
			fmt.Fprintf(&b, "<guid>https://example.com/%d</guid>", it.ID)
		}
		fmt.Fprintf(&b, "<title>%s</title>", it.Title)
		if !cfg.NoDates {
			fmt.Fprintf(&b, "<pubDate>%s</pubDate>", it.Date.Format(time.RFC1123Z))
		}
		fmt.Fprintf(&b, "<description>%s</description></item>\n", it.Text)
	}
	b.WriteString("</channel></rss>\n")
	return b.Bytes()
}
