package segmenter

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// feedFixture reads a hand-written feed from testdata/feeds.
func feedFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "feeds", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// mustParseFeed parses a feed or fails the test.
func mustParseFeed(tb testing.TB, body []byte) *Feed {
	tb.Helper()
	f, err := ParseFeed(body)
	if err != nil {
		tb.Fatalf("ParseFeed: %v", err)
	}
	return f
}

func TestParseFeed(t *testing.T) {
	type item struct{ key, link, title, text string }
	tests := []struct {
		name, file    string
		format, title string
		link          string
		items         []item
	}{
		{
			name: "rss 2.0", file: "rss2_v1.xml", format: "rss 2.0", title: "Harbour Notes", link: "https://harbour.example/",
			items: []item{
				{"guid:harbour-101", "https://harbour.example/news/ferry-timetable", "Ferry timetable changes", "From Monday the morning ferry leaves at 7:15 instead of 7:00."},
				{"guid:harbour-100", "https://harbour.example/news/lighthouse-open-day", "Lighthouse open day", "The lighthouse opens its doors on Saturday. Guided tours start every hour from ten."},
				{"guid:harbour-99", "https://harbour.example/news/mooring-fees", "New mooring fees", "Mooring fees rise by five percent from July. Residents keep their discount."},
				{"guid:harbour-98", "https://harbour.example/news/fish-market", "Fish market moves indoors", "The Friday fish market moves into the old customs hall for the summer."},
			},
		},
		{
			name: "rss 1.0 rdf without guid", file: "rdf_v1.xml", format: "rss 1.0", title: "Town Hall News", link: "https://town.example/",
			items: []item{
				{"link:https://town.example/budget", "https://town.example/budget", "Council approves budget", "The council approved next year's budget by eleven votes to four."},
				{"link:https://town.example/library", "https://town.example/library", "Library hours extended", "The library stays open until eight on weekdays from July."},
				{"link:https://town.example/roadworks", "https://town.example/roadworks", "Road works on Main Street", "Main Street is closed between the bridge and the station for two weeks."},
			},
		},
		{
			name: "atom with relative links, html title and script", file: "atom_v1.xml", format: "atom 1.0", title: "Field & Stream Notes", link: "https://blog.example/",
			items: []item{
				{"guid:https://blog.example/2025/06/otters", "https://blog.example/2025/06/otters", "Otters are back", "After ten years, otters have been seen again below the mill.\nPhoto: A. Reader"},
				{"guid:https://blog.example/2025/05/dragonflies", "https://blog.example/2025/05/dragonflies", "Counting dragonflies", "We counted 14 species of dragonfly at the pond this spring."},
			},
		},
		{
			name: "json feed", file: "json_v1.json", format: "json 1.1", title: "Allotment Diary", link: "https://allotment.example/",
			items: []item{
				{"guid:42", "https://allotment.example/posts/42", "Beans are up", "The runner beans are up, a week later than last year."},
				{"guid:41", "https://allotment.example/posts/41", "Slug patrol", "Went out with a torch at ten and collected forty slugs."},
				{"guid:40", "https://allotment.example/posts/40", "Compost bins", "Built two new compost bins from old pallets."},
			},
		},
		{
			name: "every item has the same guid", file: "sameguid_v1.xml", format: "rss 2.0", title: "Club Announcements", link: "https://club.example/",
			items: []item{
				{"link:https://club.example/agm", "https://club.example/agm", "AGM on Friday", "The annual general meeting is on Friday at seven in the club house."},
				{"link:https://club.example/subs", "https://club.example/subs", "Subscriptions due", "Please pay this year's subscription before the end of the month."},
				{"link:https://club.example/volunteers", "https://club.example/volunteers", "Volunteers wanted", "We need three people to help paint the fence next Sunday."},
			},
		},
		{
			name: "items without guid or link", file: "noid_v1.xml", format: "rss 0.91", title: "Weather Station", link: "https://weather.example/",
			items: []item{
				{"title:Rain gauge report", "", "Rain gauge report", "Twelve millimetres of rain fell overnight, most of it before midnight."},
				{"title:Wind report", "", "Wind report", "Gusts reached sixty kilometres an hour on the hill at noon."},
				{"title:Frost warning", "", "Frost warning", "Ground frost is likely in sheltered valleys tonight."},
			},
		},
		{
			name: "unescaped ampersands and html entities", file: "sloppy.xml", format: "rss 2.0", title: "Fish & Chips Weekly", link: "https://chips.example/?a=1&b=2",
			items: []item{
				{"link:https://chips.example/story?id=7&ref=rss", "https://chips.example/story?id=7&ref=rss", "Salt & vinegar", "Cod — or haddock?"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := feedFixture(t, tt.file)
			f := mustParseFeed(t, body)
			if f.Format != tt.format || f.Title != tt.title || f.Link != tt.link {
				t.Errorf("feed = %q %q %q, want %q %q %q", f.Format, f.Title, f.Link, tt.format, tt.title, tt.link)
			}
			if len(f.Warnings) != 0 {
				t.Errorf("warnings %q on a well-formed feed", f.Warnings)
			}
			if len(f.Items) != len(tt.items) {
				t.Fatalf("%d items, want %d", len(f.Items), len(tt.items))
			}
			for i, want := range tt.items {
				it := f.Items[i]
				got := item{it.Key, it.Link, it.Title, it.Text}
				if got != want {
					t.Errorf("item %d = %q\nwant       %q", i, got, want)
				}
				// The byte range covers exactly the item's element or object.
				if it.Start < 0 || it.End > len(body) || it.Start >= it.End {
					t.Fatalf("item %d range [%d,%d) of %d bytes", i, it.Start, it.End, len(body))
				}
				raw := string(body[it.Start:it.End])
				ok := strings.HasPrefix(raw, "<item") && strings.HasSuffix(raw, "</item>") ||
					strings.HasPrefix(raw, "<entry") && strings.HasSuffix(raw, "</entry>") ||
					strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}")
				if !ok || !strings.Contains(raw, it.Title[:4]) {
					t.Errorf("item %d range holds %q", i, raw)
				}
				if i > 0 && it.Start < f.Items[i-1].End {
					t.Errorf("item %d range overlaps the one before", i)
				}
			}
		})
	}
}

func TestParseFeedDates(t *testing.T) {
	f := mustParseFeed(t, feedFixture(t, "atom_v2.xml"))
	it := f.Items[1]
	if want := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC); !it.Published.Equal(want) {
		t.Errorf("published %v, want %v", it.Published, want)
	}
	if want := time.Date(2025, 6, 4, 12, 0, 0, 0, time.UTC); !it.Updated.Equal(want) {
		t.Errorf("updated %v, want %v", it.Updated, want)
	}
}

// TestParseFeedLenient: broken feeds a reader would still show are parsed,
// saying what was wrong.
func TestParseFeedLenient(t *testing.T) {
	tests := []struct {
		name, file string
		titles     []string
		warning    string // part of the single expected warning; "" for none
	}{
		{"truncated download keeps complete items", "truncated.xml", []string{"First story", "Second story"}, "kept the 2 complete items before an error: XML syntax error on line 21: unexpected EOF"},
		{"latin-1 bytes without a declaration", "latin1.xml", []string{"Crème brûlée"}, "not UTF-8 were read as Windows-1252"},
		{"bare ampersands", "sloppy.xml", []string{"Salt & vinegar"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParseFeed(t, feedFixture(t, tt.file))
			var titles []string
			for _, it := range f.Items {
				titles = append(titles, it.Title)
			}
			if strings.Join(titles, "|") != strings.Join(tt.titles, "|") {
				t.Errorf("titles %q, want %q", titles, tt.titles)
			}
			switch {
			case tt.warning == "" && len(f.Warnings) > 0:
				t.Errorf("unexpected warnings %q", f.Warnings)
			case tt.warning != "" && (len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], tt.warning)):
				t.Errorf("warnings %q, want one containing %q", f.Warnings, tt.warning)
			}
		})
	}
}

// TestParseFeedAlreadyDecoded: the fetcher hands over UTF-8 even when the
// document declares another encoding; the text must not be decoded twice.
func TestParseFeedAlreadyDecoded(t *testing.T) {
	body := []byte(`<?xml version="1.0" encoding="windows-1251"?><rss version="2.0"><channel><title>Новости</title><item><title>Погода</title><link>https://n.example/1</link></item></channel></rss>`)
	f := mustParseFeed(t, body)
	if f.Title != "Новости" || len(f.Items) != 1 || f.Items[0].Title != "Погода" {
		t.Fatalf("got %q / %+v", f.Title, f.Items)
	}
	if it := f.Items[0]; !bytes.HasPrefix(body[it.Start:], []byte("<item>")) {
		t.Errorf("range starts at %q", body[it.Start:])
	}
	// The same document in its declared encoding is decoded by the parser.
	legacy := []byte("<?xml version=\"1.0\" encoding=\"windows-1251\"?><rss version=\"2.0\"><channel><title>\xcd\xee\xe2\xee\xf1\xf2\xe8</title></channel></rss>")
	if f := mustParseFeed(t, legacy); f.Title != "Новости" {
		t.Errorf("legacy title %q", f.Title)
	}
}

func TestParseFeedErrors(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		kind error
		msg  string
	}{
		{"empty", nil, ErrNotFeed, "not a feed: the document is empty"},
		{"white space", []byte(" \n\t"), ErrNotFeed, "not a feed: the document is empty"},
		{"html page", feedFixture(t, "notfeed.html"), ErrNotFeed, "not a feed: the root element is <html>, not <rss>, <rdf:RDF> or <feed>"},
		{"opml", []byte(`<?xml version="1.0"?><opml version="1.0"><body/></opml>`), ErrNotFeed, "not a feed: the root element is <opml>"},
		{"gzip", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0}, ErrNotFeed, "not a feed: the document is gzip-compressed"},
		{"plain text", []byte("hello\nworld"), ErrNotFeed, `not a feed: the document starts with "hello\nworld"`},
		{"json that is not a feed", []byte(`[1,2,3]`), ErrNotFeed, "not a feed"},
		{"broken before any item", feedFixture(t, "broken.xml"), ErrBadFeed, "malformed feed: XML syntax error on line 6: unexpected EOF"},
		{"json object that is not a feed", []byte(`{"status":"ok"}`), ErrNotFeed, "not a feed: the JSON document is not a JSON Feed"},
		{"broken json feed", []byte(`{"version":"https://jsonfeed.org/version/1.1","items":[{"id":`), ErrBadFeed, "malformed feed: JSON syntax error at byte"},
		{"json feed items of the wrong type", []byte(`{"version":"https://jsonfeed.org/version/1.1","items":{}}`), ErrBadFeed, `malformed feed: JSON field "items" has the wrong type (object)`},
		{"json feed with a null item", []byte(`{"version":"https://jsonfeed.org/version/1.1","items":[null]}`), ErrBadFeed, "malformed feed: the parser could not make sense"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFeed(tt.body)
			if err == nil {
				t.Fatalf("no error, parsed %+v", f)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v is not %v", err, tt.kind)
			}
			if c := changedigest.ErrorCode(err); c != changedigest.EINVALID {
				t.Errorf("code %q, want %q", c, changedigest.EINVALID)
			}
			msg := changedigest.ErrorMessage(err)
			if !strings.HasPrefix(msg, tt.msg) {
				t.Errorf("message %q, want it to start with %q", msg, tt.msg)
			}
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "segmenter: ") {
				t.Errorf("error %q is not one line prefixed by the package", err)
			}
		})
	}
}

// TestFeedItemKeys is the identity table: each item gets a key unique in
// its feed, from the first evidence that is present and unique.
func TestFeedItemKeys(t *testing.T) {
	day := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		items []FeedItem
		want  []string
	}{
		{
			name:  "distinct guids",
			items: []FeedItem{{GUID: "a", Link: "https://x/1"}, {GUID: "b", Link: "https://x/1"}},
			want:  []string{"guid:a", "guid:b"},
		},
		{
			name: "every item has the same GUID",
			items: []FeedItem{
				{GUID: "same", Link: "https://x/1", Title: "One"},
				{GUID: "same", Link: "https://x/2", Title: "Two"},
				{GUID: "same", Link: "https://x/3", Title: "Three"},
			},
			want: []string{"link:https://x/1", "link:https://x/2", "link:https://x/3"},
		},
		{
			name: "same guid and same link fall back to title and date",
			items: []FeedItem{
				{GUID: "g", Link: "https://x/", Title: "One", Published: day},
				{GUID: "g", Link: "https://x/", Title: "Two", Updated: day},
				{GUID: "g", Link: "https://x/", Title: "Two", Published: day.Add(time.Hour)},
			},
			want: []string{"title:One@2025-06-01T12:00:00Z", "title:Two@2025-06-01T12:00:00Z", "title:Two@2025-06-01T13:00:00Z"},
		},
		{
			name: "only some guids repeat",
			items: []FeedItem{
				{GUID: "dup", Link: "https://x/1"},
				{GUID: "solo", Link: "https://x/2"},
				{GUID: "dup", Link: "https://x/3"},
			},
			want: []string{"link:https://x/1", "guid:solo", "link:https://x/3"},
		},
		{
			name: "no guid, link or title: content hash, duplicates numbered",
			items: []FeedItem{
				{Text: "same words"},
				{Text: "other words"},
				{Text: "same words"},
			},
			want: []string{
				"md5:" + (&FeedItem{Text: "same words"}).Hash(),
				"md5:" + (&FeedItem{Text: "other words"}).Hash(),
				"md5:" + (&FeedItem{Text: "same words"}).Hash() + "#2",
			},
		},
		{
			name:  "empty feed",
			items: nil,
			want:  []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := feedItemKeys(tt.items)
			if strings.Join(got, " ") != strings.Join(tt.want, " ") || len(got) != len(tt.want) {
				t.Errorf("keys\n got %q\nwant %q", got, tt.want)
			}
			seen := map[string]bool{}
			for _, k := range got {
				if seen[k] {
					t.Errorf("key %q given twice", k)
				}
				seen[k] = true
			}
		})
	}
}

func TestFeedItemHash(t *testing.T) {
	base := FeedItem{GUID: "g", Link: "https://x/1", Title: "Title", Text: "Some text here.", Published: time.Unix(1, 0)}
	h := base.Hash()
	same := []FeedItem{
		{GUID: "other", Link: "https://x/1", Title: "Title", Text: "Some text here."},
		{GUID: "g", Link: "https://x/1", Title: " Title ", Text: "Some\n text   here.", Updated: time.Unix(99, 0), Start: 5, End: 9},
	}
	for i, it := range same {
		if it.Hash() != h {
			t.Errorf("variant %d (ids, dates, spacing, position) changed the hash", i)
		}
	}
	differ := []FeedItem{
		{Link: "https://x/2", Title: "Title", Text: "Some text here."},
		{Link: "https://x/1", Title: "Title!", Text: "Some text here."},
		{Link: "https://x/1", Title: "Title", Text: "Some text there."},
		{Link: "https://x/1", Title: "TitleSome", Text: "text here."},
	}
	for i, it := range differ {
		if it.Hash() == h {
			t.Errorf("variant %d has the same hash", i)
		}
	}
	if len(h) != 32 {
		t.Errorf("hash %q is not hex MD5", h)
	}
}

func TestFeedHTMLText(t *testing.T) {
	tests := []struct {
		name, in string
		oneLine  bool
		want     string
	}{
		{"plain", "  two   words ", false, "two words"},
		{"entities", "Fish &amp; chips &mdash; &#8220;fresh&#8221;", true, "Fish & chips — “fresh”"},
		{"blocks become lines", "<p>One <b>bold</b> line.</p><p>Two</p><ul><li>a</li><li>b</li></ul>", false, "One bold line.\nTwo\na\nb"},
		{"one line", "<p>One</p><p>Two</p>", true, "One Two"},
		{"scripts and styles dropped", "<style>p{}</style>Text<script>alert(1)</script> after", true, "Text after"},
		{"br", "a<br>b<br/>c", false, "a\nb\nc"},
		{"unclosed tag", "<p>open <b>bold", true, "open bold"},
		{"less-than in text", "a < b", true, "a < b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := feedHTMLText(tt.in, tt.oneLine); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseFeedByteOrderMark: a UTF-8 byte order mark (which JSON decoders
// refuse) is skipped, and byte ranges still count it.
func TestParseFeedByteOrderMark(t *testing.T) {
	for _, name := range []string{"json_v1.json", "atom_v1.xml"} {
		t.Run(name, func(t *testing.T) {
			plain := feedFixture(t, name)
			body := append([]byte("\ufeff"), plain...)
			f := mustParseFeed(t, body)
			want := mustParseFeed(t, plain)
			if len(f.Items) != len(want.Items) {
				t.Fatalf("%d items, want %d", len(f.Items), len(want.Items))
			}
			for i, it := range f.Items {
				w := want.Items[i]
				if it.Key != w.Key || it.Start != w.Start+3 || it.End != w.End+3 {
					t.Errorf("item %d: %q [%d,%d), want %q [%d,%d)+3", i, it.Key, it.Start, it.End, w.Key, w.Start, w.End)
				}
			}
		})
	}
}
