package render

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"golang.org/x/net/html"
)

// parsedFeed is what the tests read back from a rendered Atom feed.
type parsedFeed struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string   `xml:"id"`
	Title   string   `xml:"title"`
	Updated string   `xml:"updated"`
	Links   []struct {
		Rel  string `xml:"rel,attr"`
		Href string `xml:"href,attr"`
	} `xml:"link"`
	Author    string `xml:"author>name"`
	Generator string `xml:"generator"`
	Entries   []struct {
		ID        string `xml:"id"`
		Title     string `xml:"title"`
		Updated   string `xml:"updated"`
		Published string `xml:"published"`
		Links     []struct {
			Rel  string `xml:"rel,attr"`
			Href string `xml:"href,attr"`
		} `xml:"link"`
		Categories []struct {
			Term   string `xml:"term,attr"`
			Scheme string `xml:"scheme,attr"`
		} `xml:"category"`
		Content struct {
			Type string `xml:"type,attr"`
			Body string `xml:",chardata"`
		} `xml:"content"`
	} `xml:"entry"`
}

func mustParseFeed(tb testing.TB, b []byte) parsedFeed {
	tb.Helper()
	var f parsedFeed
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&f); err != nil {
		tb.Fatalf("feed does not parse as XML: %v", err)
	}
	return f
}

func (f parsedFeed) link(rel string) string {
	for _, l := range f.Links {
		if l.Rel == rel {
			return l.Href
		}
	}
	return ""
}

const testSelf = testSite + "/feeds/7.atom?token=s3cret"

func renderUserFeed(tb testing.TB, e *Engine, fx fixture) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := e.Atom(&buf, e.UserFeed(fx.User, testSelf), fx.Events); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestAtomGolden(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	out := renderUserFeed(t, e, fx)
	golden(t, "user.atom", out)

	f := mustParseFeed(t, out)
	if f.ID != "tag:changes.example.org,2026-01-05:user/7" {
		t.Errorf("feed id = %q", f.ID)
	}
	if f.Updated != "2026-03-14T17:05:00Z" {
		t.Errorf("feed updated = %q, want the newest entry's time", f.Updated)
	}
	if f.link("self") != testSelf || f.link("alternate") != testSite+"/" {
		t.Errorf("links = %+v", f.Links)
	}
	if f.Generator != "changedigest" || f.Author != "ada" {
		t.Errorf("generator %q, author %q", f.Generator, f.Author)
	}
	wantIDs := []string{
		"tag:changes.example.org,2026-03-01:watch/3/version/2",
		"tag:changes.example.org,2026-02-01:watch/2/version/4",
		"tag:changes.example.org,2026-01-10:watch/1/version/12",
		"tag:changes.example.org,2026-01-10:watch/1/version/11",
	}
	if len(f.Entries) != len(wantIDs) {
		t.Fatalf("%d entries, want %d", len(f.Entries), len(wantIDs))
	}
	for i, en := range f.Entries {
		if en.ID != wantIDs[i] {
			t.Errorf("entry %d id = %q, want %q", i, en.ID, wantIDs[i])
		}
		if en.Updated != en.Published || en.Updated == "" {
			t.Errorf("entry %d updated %q published %q", i, en.Updated, en.Published)
		}
		if en.Content.Type != "html" {
			t.Errorf("entry %d content type %q", i, en.Content.Type)
		}
	}
	sport := f.Entries[2]
	if sport.Title != "★ football: City sports news: ‘the soccer club won the derby 3-1 on Saturday evening…’ +1 more" {
		t.Errorf("title = %q", sport.Title)
	}
	if sport.Links[0].Rel != "alternate" || sport.Links[0].Href != testSite+"/watches/1/versions/12" {
		t.Errorf("entry links = %+v", sport.Links)
	}
	var terms []string
	for _, c := range sport.Categories {
		terms = append(terms, c.Term+"@"+c.Scheme[strings.IndexByte(c.Scheme, '#')+1:])
	}
	if got := strings.Join(terms, " "); got != "content@change-type football@interest sport@tag local@tag" {
		t.Errorf("categories = %s", got)
	}
	for _, want := range []string{
		`<mark class="cd-mark" style="`, `><strong>soccer</strong></mark>`,
		`★ matches your interest football (synonym: soccer)`,
		`<del class="cd-del" style="`, `>[-</span>football<span class="cd-mk" style="display:none;">-]</span></del>`, `won<span class="cd-mk"`,
	} {
		if !strings.Contains(sport.Content.Body, want) {
			t.Errorf("content lacks %q", want)
		}
	}
	checkSafeHTML(t, "entry of watch 3", f.Entries[0].Content.Body)
}

func TestAtomFeeds(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	e.Authority = "old.example.org"
	w := fx.Events[0].Watch
	tests := []struct {
		name   string
		feed   FeedInfo
		events []Event
		id     string
		alt    string
	}{
		{"watch", e.WatchFeed(fx.User, w, testSelf), fx.Events[:2], "tag:old.example.org,2026-01-10:watch/1", testSite + "/watches/1"},
		{"tag", e.TagFeed(fx.User, "sport & co", testSelf), fx.Events[:2], "tag:old.example.org,2026-01-05:user/7/tag/sport%20&%20co", testSite + "/tags/sport%20&%20co"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := e.Atom(&buf, tt.feed, tt.events); err != nil {
				t.Fatal(err)
			}
			f := mustParseFeed(t, buf.Bytes())
			if f.ID != tt.id || f.link("alternate") != tt.alt {
				t.Errorf("id %q alternate %q", f.ID, f.link("alternate"))
			}
			if len(f.Entries) != 2 || !strings.HasPrefix(f.Entries[0].ID, "tag:old.example.org,2026-01-10:watch/1/version/12") {
				t.Errorf("entries: %d, first %q", len(f.Entries), f.Entries[0].ID)
			}
		})
	}
}

func TestAtomEmpty(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	// An event without changes makes no entry.
	quiet := Event{Watch: fx.Events[0].Watch, Snapshot: &changedigest.Snapshot{Seq: 13, FetchedAt: time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)}}
	var buf bytes.Buffer
	if err := e.Atom(&buf, e.UserFeed(fx.User, testSelf), []Event{quiet}); err != nil {
		t.Fatal(err)
	}
	f := mustParseFeed(t, buf.Bytes())
	if len(f.Entries) != 0 || f.Updated != "2026-01-05T09:30:00Z" {
		t.Errorf("%d entries, updated %q; want none, the user's creation time", len(f.Entries), f.Updated)
	}
}

func TestAtomErrors(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	good := e.UserFeed(fx.User, testSelf)
	tests := []struct {
		name   string
		feed   func(FeedInfo) FeedInfo
		events []Event
		want   error
	}{
		{"no id", func(f FeedInfo) FeedInfo { f.ID = ""; return f }, nil, ErrInvalidFeed},
		{"no title", func(f FeedInfo) FeedInfo { f.Title = " \n"; return f }, nil, ErrInvalidFeed},
		{"relative self", func(f FeedInfo) FeedInfo { f.SelfURL = "/feeds/7.atom"; return f }, nil, ErrInvalidFeed},
		{"javascript page", func(f FeedInfo) FeedInfo { f.PageURL = "javascript:alert(1)"; return f }, nil, ErrInvalidFeed},
		{"event without watch", func(f FeedInfo) FeedInfo { return f }, []Event{{Snapshot: fx.Events[0].Snapshot}}, ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := e.Atom(&buf, tt.feed(good), tt.events)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Atom: %v, want %v", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error", buf.Len())
			}
		})
	}
}

// manyChanges returns an event of watch w with n changes, every third
// one matching the profile.
func manyChanges(w *changedigest.Watch, seq, n int, when time.Time) Event {
	s := &changedigest.Snapshot{WatchID: w.ID, Seq: seq, FetchedAt: when}
	ev := Event{Watch: w, Snapshot: s, Matches: make([][]changedigest.Match, n)}
	for i := range n {
		old := fmt.Sprintf("Paragraph %d says the match ended in a draw after a long and even game.", i)
		nw := fmt.Sprintf("Paragraph %d says the football match ended in a win after a long and even game.", i)
		s.Changes = append(s.Changes, changedigest.Change{Segment: i, Path: fmt.Sprintf("html|body|p[%d]", i), Type: "content", Op: "update", OldText: old, NewText: nw})
		if i%3 == 0 {
			ev.Matches[i] = []changedigest.Match{at(nw, "football", "football", "term")}
		}
	}
	return ev
}

func TestAtomCaps(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	e.MaxEntries = 3
	e.MaxEntryBytes = 8 << 10
	w := fx.Events[0].Watch
	var evs []Event
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		evs = append(evs, manyChanges(w, i+1, 60, base.Add(time.Duration(i)*time.Hour)))
	}
	var buf bytes.Buffer
	if err := e.Atom(&buf, e.WatchFeed(fx.User, w, testSelf), evs); err != nil {
		t.Fatal(err)
	}
	f := mustParseFeed(t, buf.Bytes())
	if len(f.Entries) != 3 || !strings.HasSuffix(f.Entries[0].ID, "/version/5") || !strings.HasSuffix(f.Entries[2].ID, "/version/3") {
		t.Fatalf("want the 3 newest entries, got %d", len(f.Entries))
	}
	for _, en := range f.Entries {
		body := en.Content.Body
		if len(body) > e.MaxEntryBytes {
			t.Errorf("%s: content %d bytes, cap %d", en.ID, len(body), e.MaxEntryBytes)
		}
		if !regexp.MustCompile(`>\+\d+ more</a>`).MatchString(body) {
			t.Errorf("%s: no “+N more” line", en.ID)
		}
		// The truncated content is still well-formed markup.
		dec := xml.NewDecoder(strings.NewReader("<root>" + body + "</root>"))
		dec.Strict = true
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: content is not well-formed after truncation: %v", en.ID, err)
			}
		}
		// Profile changes are kept before general ones.
		if !strings.Contains(body, "cd-profile") {
			t.Errorf("%s: profile changes were dropped first", en.ID)
		}
	}
	if !strings.HasPrefix(f.Entries[0].Title, "★ football: ") || !strings.HasSuffix(f.Entries[0].Title, " +59 more") {
		t.Errorf("title %q should lead with the interest and count all changes", f.Entries[0].Title)
	}
}

// checkSafeHTML parses s as HTML and fails on any script element, event
// handler attribute or javascript:, vbscript: or data: URL.
func checkSafeHTML(t *testing.T, what, s string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "iframe", "frame", "object", "embed", "applet", "img", "base":
				t.Errorf("%s: a <%s> element got through", what, n.Data)
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				v := strings.ToLower(strings.Join(strings.Fields(a.Val), ""))
				if strings.HasPrefix(k, "on") {
					t.Errorf("%s: event handler attribute %s=%q on <%s>", what, a.Key, a.Val, n.Data)
				}
				if k == "href" || k == "src" || k == "action" || k == "formaction" || k == "xlink:href" {
					if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "#") {
						t.Errorf("%s: %s=%q on <%s> is not an http(s) or site link", what, a.Key, a.Val, n.Data)
					}
				}
				if k == "style" && (strings.Contains(v, "url(") || strings.Contains(v, "expression")) {
					t.Errorf("%s: style %q", what, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// BenchmarkAtom500 renders a feed of 500 entries of 4 changes each.
func BenchmarkAtom500(b *testing.B) {
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
	feed := e.UserFeed(fx.User, testSelf)
	var buf bytes.Buffer
	if err := e.Atom(&buf, feed, evs); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "cached-entries"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if !warm {
					e.entries.Reset()
				}
				buf.Reset()
				if err := e.Atom(&buf, feed, evs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAtomEntryCache: entries are kept between renderings, and what an
// entry is rendered from (the matches, the watch's name) is part of its key.
func TestAtomEntryCache(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	first := renderUserFeed(t, e, fx)
	if again := renderUserFeed(t, e, fx); !bytes.Equal(first, again) {
		t.Fatal("a second rendering from the cache differs")
	}
	fresh := renderUserFeed(t, MustEngine(t), fx)
	if !bytes.Equal(first, fresh) {
		t.Fatal("a cached rendering differs from a fresh one")
	}
	// Without matches the profile marks go; with a new name, the title changes.
	noMatch := fx
	noMatch.Events = nil
	for _, ev := range fx.Events {
		ev.Matches = nil
		w := *ev.Watch
		w.Title = "Renamed watch"
		ev.Watch = &w
		noMatch.Events = append(noMatch.Events, ev)
	}
	out := renderUserFeed(t, e, noMatch)
	if bytes.Contains(out, []byte("matches your interest")) || !bytes.Contains(out, []byte("Renamed watch")) {
		t.Error("the cache served entries rendered from other matches or another watch name")
	}
}

// lazily is events as the notifier gives them to the feed writers: each
// with its key, a snapshot with only its number and time, and a Load
// that gives the whole event and counts its calls.
func lazily(evs []Event, loads *atomic.Int32) []Event {
	out := make([]Event, len(evs))
	for i, ev := range evs {
		full := ev
		out[i] = Event{Watch: ev.Watch, Key: EventKey(ev),
			Snapshot: &changedigest.Snapshot{WatchID: ev.Snapshot.WatchID, Seq: ev.Snapshot.Seq, FetchedAt: ev.Snapshot.FetchedAt},
			Load: func() (Event, error) {
				loads.Add(1)
				time.Sleep(5 * time.Millisecond) // the concurrent writers meet
				return full, nil
			}}
	}
	return out
}

// TestFeedsOfLazyEvents checks that events given by key, loaded when
// their entries are rendered, give the same feeds and tags as whole
// events, in every format; that an entry kept is not loaded again; and
// that writers of the same feed at the same time load and render each
// new entry once.
func TestFeedsOfLazyEvents(t *testing.T) {
	fx := MustFixture(t)
	feed := formatsFeed(MustEngine(t), fx)
	writers := map[string]func(*Engine) func(io.Writer, FeedInfo, []Event) error{
		"atom": func(e *Engine) func(io.Writer, FeedInfo, []Event) error { return e.Atom },
		"rss":  func(e *Engine) func(io.Writer, FeedInfo, []Event) error { return e.RSS },
		"json": func(e *Engine) func(io.Writer, FeedInfo, []Event) error { return e.JSONFeed },
	}
	for format, writer := range writers {
		t.Run(format, func(t *testing.T) {
			var want, got bytes.Buffer
			whole := MustEngine(t)
			if err := writer(whole)(&want, feed, fx.Events); err != nil {
				t.Fatal(err)
			}
			e := MustEngine(t)
			var loads atomic.Int32
			lazy := lazily(fx.Events, &loads)
			wantTag, _ := whole.FeedTag(format, feed, fx.Events)
			if tag, err := e.FeedTag(format, feed, lazy); err != nil || tag != wantTag {
				t.Errorf("tag %s, %v; want %s", tag, err, wantTag)
			}
			if loads.Load() != 0 {
				t.Errorf("the tag loaded %d events", loads.Load())
			}
			var wg sync.WaitGroup
			outs := make([]bytes.Buffer, 8)
			for i := range outs {
				wg.Go(func() {
					if err := writer(e)(&outs[i], feed, lazy); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			for i := range outs {
				if !bytes.Equal(outs[i].Bytes(), want.Bytes()) {
					t.Fatalf("writer %d: the feed of lazy events differs from the feed of whole events", i)
				}
			}
			shown := min(len(fx.Events), e.MaxEntries)
			if n := int(loads.Load()); n != shown {
				t.Errorf("8 writers at once loaded %d events, want %d (each entry once)", n, shown)
			}
			if err := writer(e)(&got, feed, lazy); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) || int(loads.Load()) != shown {
				t.Errorf("a later feed: same %v, %d loads in all", bytes.Equal(got.Bytes(), want.Bytes()), loads.Load())
			}
		})
	}
}

// TestAtomWriters checks that the feed written to a plain writer, in the
// many writes Atom makes, is the feed written to a buffer, and that a
// failing writer's error is returned.
func TestAtomWriters(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	want := renderUserFeed(t, e, fx)
	var sb strings.Builder
	if err := e.Atom(&sb, e.UserFeed(fx.User, testSelf), fx.Events); err != nil {
		t.Fatal(err)
	}
	if sb.String() != string(want) {
		t.Errorf("the feed written to a strings.Builder differs from the one written to a bytes.Buffer")
	}
	for _, after := range []int{0, 100, len(want) / 2, len(want) - 1} {
		fw := &failingWriter{left: after}
		err := e.Atom(fw, e.UserFeed(fx.User, testSelf), fx.Events)
		if !errors.Is(err, errWriteFailed) {
			t.Errorf("writer failing after %d bytes: err = %v, want the write error", after, err)
		}
	}
}

var errWriteFailed = errors.New("write failed")

// failingWriter accepts left bytes, then fails.
type failingWriter struct{ left int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n := f.left
		f.left = 0
		return n, errWriteFailed
	}
	f.left -= len(p)
	return len(p), nil
}
