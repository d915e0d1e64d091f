package render

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/gorilla/feeds"
)

const (
	testRSS  = "https://changes.example.org/feeds/SECRET/rss.xml"
	testJSON = "https://changes.example.org/feeds/SECRET/feed.json"
	testHub  = "https://changes.example.org/websub"
)

func formatsFeed(e *Engine, fx fixture) FeedInfo {
	f := e.UserFeed(fx.User, testSelf)
	f.RSSURL, f.JSONURL, f.HubURL = testRSS, testJSON, testHub
	return f
}

func TestAtomAdvertisesAlternatesAndHub(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	var buf bytes.Buffer
	if err := e.Atom(&buf, formatsFeed(e, fx), fx.Events); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<link rel="alternate" type="application/rss+xml" href="` + testRSS + `" title="RSS 2.0"></link>`,
		`<link rel="alternate" type="application/feed+json" href="` + testJSON + `" title="JSON Feed"></link>`,
		`<link rel="hub" href="` + testHub + `"></link>`,
		`<link rel="self" type="application/atom+xml" href="` + strings.ReplaceAll(testSelf, "&", "&amp;") + `"></link>`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the Atom feed lacks %s", want)
		}
	}
}

// TestRSSFeedparser reads the RSS feed with Python's feedparser: it is
// well-formed RSS 2.0 with the Atom feed's entries, ids, titles, links
// and content, and its self and hub links.
func TestRSSFeedparser(t *testing.T) {
	py := python(t, "feedparser")
	fx := MustFixture(t)
	e := MustEngine(t)
	var buf bytes.Buffer
	if err := e.RSS(&buf, formatsFeed(e, fx), fx.Events); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", feedparserScript)
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("feedparser: %v", err)
	}
	var r feedparserResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("feedparser output: %v\n%s", err, out)
	}
	if r.Bozo {
		t.Fatalf("feedparser calls the RSS feed malformed: %s\n%s", r.BozoException, buf.String())
	}
	if r.Version != "rss20" {
		t.Errorf("version %q, want rss20", r.Version)
	}
	rels := map[string]string{}
	for _, l := range r.Links {
		rels[l.Rel] = l.Href
	}
	if rels["self"] != testRSS || rels["hub"] != testHub {
		t.Errorf("links %v: want self %s and hub %s", r.Links, testRSS, testHub)
	}
	want := mustParseFeed(t, renderUserFeed(t, e, fx))
	if len(r.Entries) != len(want.Entries) || len(r.Entries) == 0 {
		t.Fatalf("%d RSS items, want %d", len(r.Entries), len(want.Entries))
	}
	for i, got := range r.Entries {
		w := want.Entries[i]
		if got.ID != w.ID || got.Title != w.Title || got.Link == "" {
			t.Errorf("item %d: id %q title %q link %q, want id %q title %q", i, got.ID, got.Title, got.Link, w.ID, w.Title)
		}
		if !strings.Contains(got.Content, "<ins") && !strings.Contains(got.Content, "<del") {
			t.Errorf("item %d: content lacks the marked-up change: %.200q", i, got.Content)
		}
		if got.Published == "" {
			t.Errorf("item %d has no date", i)
		}
		var atomTags []string
		for _, c := range w.Categories {
			atomTags = append(atomTags, c.Term)
		}
		if !slices.Equal(got.Tags, atomTags) || len(got.Tags) == 0 {
			t.Errorf("item %d: categories %q, want the Atom entry's %q", i, got.Tags, atomTags)
		}
	}
}

// TestRSSNewsboat fetches the RSS feed with newsboat over HTTP, headless.
func TestRSSNewsboat(t *testing.T) {
	nb := testenv.Tool(t, "newsboat")
	fx := MustFixture(t)
	e := MustEngine(t)
	var feed bytes.Buffer
	if err := e.RSS(&feed, formatsFeed(e, fx), fx.Events); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		w.Write(feed.Bytes())
	}))
	defer srv.Close()
	dir := t.TempDir()
	urls, conf, cache := filepath.Join(dir, "urls"), filepath.Join(dir, "config"), filepath.Join(dir, "cache.db")
	for name, body := range map[string]string{urls: srv.URL + "/rss.xml\n", conf: ""} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"-x", "reload"}, {"-x", "print-unread"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, nb, append([]string{"-u", urls, "-C", conf, "-c", cache}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("newsboat %v: %v\n%s", args, err, out)
		}
		if args[1] == "print-unread" && !strings.Contains(string(out), "4 unread articles") {
			t.Errorf("print-unread: %q, want 4 unread articles", out)
		}
	}
}

// TestJSONFeed checks the JSON Feed 1.1 structure: the required version,
// title and items; feed_url, home_page_url, hubs and authors; each item's
// unique id, url, content_html and RFC 3339 date.
func TestJSONFeed(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	var buf bytes.Buffer
	if err := e.JSONFeed(&buf, formatsFeed(e, fx), fx.Events); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["version"] != "https://jsonfeed.org/version/1.1" {
		t.Errorf("version %v", doc["version"])
	}
	if doc["title"] == "" || doc["feed_url"] != testJSON || doc["home_page_url"] == nil {
		t.Errorf("title %v feed_url %v home_page_url %v", doc["title"], doc["feed_url"], doc["home_page_url"])
	}
	if _, ok := doc["author"]; ok {
		t.Error(`the feed has the deprecated "author"`)
	}
	if a, _ := doc["authors"].([]any); len(a) != 1 {
		t.Errorf("authors %v", doc["authors"])
	}
	hubs, _ := doc["hubs"].([]any)
	if len(hubs) != 1 || hubs[0].(map[string]any)["type"] != "WebSub" || hubs[0].(map[string]any)["url"] != testHub {
		t.Errorf("hubs %v", doc["hubs"])
	}
	items, _ := doc["items"].([]any)
	want := mustParseFeed(t, renderUserFeed(t, e, fx))
	if len(items) != len(want.Entries) {
		t.Fatalf("%d items, want %d", len(items), len(want.Entries))
	}
	seen := map[string]bool{}
	for i, x := range items {
		it := x.(map[string]any)
		id, _ := it["id"].(string)
		if id != want.Entries[i].ID || seen[id] {
			t.Errorf("item %d id %q, want %q (unique)", i, id, want.Entries[i].ID)
		}
		seen[id] = true
		if u, _ := it["url"].(string); !strings.HasPrefix(u, "https://") {
			t.Errorf("item %d url %v", i, it["url"])
		}
		if c, _ := it["content_html"].(string); c == "" {
			t.Errorf("item %d has no content_html", i)
		}
		if _, err := time.Parse(time.RFC3339, it["date_published"].(string)); err != nil {
			t.Errorf("item %d date: %v", i, err)
		}
	}
	// An empty feed still has "items".
	buf.Reset()
	if err := e.JSONFeed(&buf, formatsFeed(e, fx), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"items": []`) {
		t.Errorf("empty feed: %s", buf.String())
	}
	// A feed without its own address is refused.
	f := formatsFeed(e, fx)
	f.JSONURL = "feed.json"
	if err := e.JSONFeed(&buf, f, fx.Events); !errors.Is(err, ErrInvalidFeed) {
		t.Errorf("relative feed_url: %v", err)
	}
}

// BenchmarkFormats500 renders a feed of 500 entries of 4 changes each as
// RSS and JSON Feed, cold and with the entries cached.
func BenchmarkFormats500(b *testing.B) {
	fx := MustFixture(b)
	e := MustEngine(b)
	e.MaxEntries = 500
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var evs []Event
	for i := range 500 {
		ev := fx.Events[i%3]
		s := *ev.Snapshot
		s.Seq = 100 + i
		s.FetchedAt = base.Add(time.Duration(i) * time.Minute)
		ev.Snapshot = &s
		evs = append(evs, ev)
	}
	feed := formatsFeed(e, fx)
	for _, format := range []string{"rss", "json"} {
		write := e.RSS
		if format == "json" {
			write = e.JSONFeed
		}
		for _, warm := range []bool{false, true} {
			name := format + "/cold"
			if warm {
				name = format + "/cached-entries"
			}
			var buf bytes.Buffer
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if !warm {
						e.entries.Reset()
					}
					buf.Reset()
					if err := write(&buf, feed, evs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestFormatsSpliced checks that the RSS and JSON feeds, whose items are
// encoded one by one (and cached) and written into the encoded document,
// are byte for byte the documents gorilla/feeds encodes whole: cold, with
// the items cached, with and without a hub, and without items.
func TestFormatsSpliced(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	noHub := formatsFeed(e, fx)
	noHub.HubURL = ""
	cases := []struct {
		name   string
		feed   FeedInfo
		events []Event
	}{
		{"all", formatsFeed(e, fx), fx.Events},
		{"no hub", noHub, fx.Events},
		{"one", formatsFeed(e, fx), fx.Events[:1]},
		{"none", formatsFeed(e, fx), nil},
	}
	for _, c := range cases {
		for _, format := range []string{"rss", "json"} {
			write, ref := e.RSS, rssWhole
			if format == "json" {
				write, ref = e.JSONFeed, jsonWhole
			}
			want, err := ref(e, c.feed, c.events)
			if err != nil {
				t.Fatal(err)
			}
			for _, pass := range []string{"cold", "cached"} {
				if pass == "cold" {
					e.entries.Reset()
				}
				var buf bytes.Buffer
				if err := write(&buf, c.feed, c.events); err != nil {
					t.Fatal(err)
				}
				if buf.String() != string(want) {
					t.Errorf("%s %s %s: spliced document differs from the whole one:\n%s\n---- want\n%s", c.name, format, pass, buf.String(), want)
				}
			}
		}
	}
}

// wholeFeed is the feed of events with its items, for rssWhole and
// jsonWhole.
func wholeFeed(e *Engine, feed FeedInfo, events []Event) (*feeds.Feed, [][]string, [][]atomCategory, error) {
	evs, err := e.feedEvents(feed, events)
	if err != nil {
		return nil, nil, nil, err
	}
	f := e.feedHead(feed, evs)
	var tags [][]string
	var cats [][]atomCategory
	var content bytes.Buffer
	for _, ev := range evs {
		item, ts, cs, err := e.feedItem(&content, ev)
		if err != nil {
			return nil, nil, nil, err
		}
		f.Items = append(f.Items, item)
		tags = append(tags, ts)
		cats = append(cats, cs)
	}
	return f, tags, cats, nil
}

// rssWhole encodes the RSS document in one piece.
func rssWhole(e *Engine, feed FeedInfo, events []Event) ([]byte, error) {
	f, _, cats, err := wholeFeed(e, feed, events)
	if err != nil {
		return nil, err
	}
	// The channel's items with their categories, in the place of
	// gorilla/feeds' items (its last field).
	type channel struct {
		AtomLinks []rssAtomLink `xml:"atom:link"`
		*feeds.RssFeed
		Items []rssItem `xml:"item"`
	}
	type document struct {
		XMLName   xml.Name `xml:"rss"`
		Version   string   `xml:"version,attr"`
		ContentNS string   `xml:"xmlns:content,attr"`
		AtomNS    string   `xml:"xmlns:atom,attr"`
		Channel   channel  `xml:"channel"`
	}
	d := e.rssDocument(feed, f)
	doc := document{XMLName: d.XMLName, Version: d.Version, ContentNS: d.ContentNS, AtomNS: d.AtomNS,
		Channel: channel{AtomLinks: d.Channel.AtomLinks, RssFeed: d.Channel.RssFeed}}
	for i, it := range d.Channel.Items {
		ri := rssItem{RssItem: it}
		for _, c := range cats[i] {
			ri.Categories = append(ri.Categories, rssCategory{Domain: c.Scheme, Term: c.Term})
		}
		doc.Channel.Items = append(doc.Channel.Items, ri)
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// jsonWhole encodes the JSON Feed document in one piece.
func jsonWhole(e *Engine, feed FeedInfo, events []Event) ([]byte, error) {
	f, tags, _, err := wholeFeed(e, feed, events)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(e.jsonDocument(feed, f, tags), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
