package server

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// watchSummary is what an import sets on a watch.
type watchSummary struct {
	URL, Title string
	Tags       []string
}

func (e *testEnv) summaries(u *changedigest.User) []watchSummary {
	e.t.Helper()
	ws, err := e.store.Watches(context.Background(), u.ID, "")
	if err != nil {
		e.t.Fatal(err)
	}
	var out []watchSummary
	for _, w := range ws {
		if !w.NextCheck.Equal(e.clock()) {
			e.t.Errorf("%s: next check %v, want now", w.URL, w.NextCheck)
		}
		out = append(out, watchSummary{w.URL, w.Title, w.Tags})
	}
	slices.SortFunc(out, func(a, b watchSummary) int { return strings.Compare(a.URL, b.URL) })
	return out
}

// opmlResult is the API's answer to an import.
type opmlResult struct {
	Imported        int
	Skipped         int
	AlreadyWatched  int `json:"already_watched"`
	Invalid         int
	Message         string
	Watches         []apiWatch
	SkippedOutlines []opmlSkip `json:"skipped_outlines"`
}

func TestOPMLImportRealWorld(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	e.mustWatch(ann, "https://lwn.net/headlines/rss")
	c := e.api(ann)
	data, err := os.ReadFile("testdata/opml/realworld.opml")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := c.raw("POST", "/opml", "text/x-opml", data)
	if resp.StatusCode != 200 {
		t.Fatalf("import: %d %s", resp.StatusCode, body)
	}
	var res opmlResult
	if err := jsonUnmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Imported != 5 || res.Skipped != 5 || res.AlreadyWatched != 2 || res.Invalid != 3 || len(res.Watches) != 5 ||
		res.Message != "Imported 5 watches, skipped 5 (2 already watched, 3 invalid)." {
		t.Errorf("result %+v", res)
	}
	want := []watchSummary{
		{"http://www.seriouseats.com/feeds/all", "Serious Eats", []string{"café & food"}},
		{"https://go.dev/blog/feed.atom", "The Go Blog", []string{"tech", "go"}},
		{"https://golangweekly.com/rss/", "Go weekly", []string{"tech", "go", "newsletters", "weekly"}},
		{"https://lwn.net/headlines/rss", "", nil},
		{"https://news.example.org/rss.xml", "", nil},
		{"https://recipes.example.com/", "A recipe site", []string{"café & food"}}, // a link outline: a page
	}
	if got := e.summaries(ann); !reflect.DeepEqual(got, want) {
		t.Errorf("watches after import:\n%q\nwant\n%q", got, want)
	}
	reasons := map[string]string{}
	for _, s := range res.SkippedOutlines {
		reasons[cmpOr(s.URL, s.Title)] = s.Reason
	}
	for k, want := range map[string]string{
		"https://lwn.net/headlines/rss": "already watched",
		"https://go.dev/blog/feed.atom": "already watched",
		"javascript:alert(1)":           "not an absolute http or https URL",
		"/feed.xml":                     "not an absolute http or https URL",
		"Empty folder":                  "no xmlUrl",
	} {
		if !strings.Contains(reasons[k], want) {
			t.Errorf("skip reason of %s: %q, want %q", k, reasons[k], want)
		}
	}
	// Importing again adds nothing.
	resp, body = c.raw("POST", "/opml", "application/xml", data)
	if err := jsonUnmarshal(body, &res); err != nil || resp.StatusCode != 200 || res.Imported != 0 || res.AlreadyWatched != 7 {
		t.Errorf("second import: %d %+v", resp.StatusCode, res)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestOPMLRoundTrip(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	bob := e.mustUser("bob", "battery staple")
	a, b := e.api(ann), e.api(bob)

	// Ann watches two fetched feeds, one not fetched yet and a page.
	town := e.mustWatch(ann, "https://town.example/feed.xml", "news", "local")
	e.addVersion(town, rssFeed("Town & country news", "https://town.example/", []rssItem{{"Cup final", "https://town.example/a", "The soccer club won."}}))
	e.setKind(town, changedigest.KindFeed)
	blog := e.mustWatch(ann, "https://blog.example/atom.xml")
	if _, err := e.store.UpdateWatch(context.Background(), ann.ID, blog.ID, func(w *changedigest.Watch) error {
		w.Title, w.Kind = "Ann's \"own\" <blog>", changedigest.KindFeed
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.mustWatch(ann, "https://new.example/rss", "local")
	page := e.mustWatch(ann, "https://town.example/", "local")
	e.addVersion(page, pageV1)
	e.setKind(page, changedigest.KindPage)

	resp, out := a.raw("GET", "/opml", "", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/x-opml") ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "changedigest-ann.opml") {
		t.Fatalf("export: %d %q %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), out)
	}
	// The export is OPML 2.0 as feed readers read it.
	var doc struct {
		Version string `xml:"version,attr"`
		Head    struct {
			Title       string `xml:"title"`
			DateCreated string `xml:"dateCreated"`
		} `xml:"head"`
		Body []struct {
			Text     string `xml:"text,attr"`
			XMLURL   string `xml:"xmlUrl,attr"`
			HTMLURL  string `xml:"htmlUrl,attr"`
			Title    string `xml:"title,attr"`
			Category string `xml:"category,attr"`
			Children []struct {
				Type     string `xml:"type,attr"`
				Text     string `xml:"text,attr"`
				XMLURL   string `xml:"xmlUrl,attr"`
				HTMLURL  string `xml:"htmlUrl,attr"`
				URL      string `xml:"url,attr"`
				Category string `xml:"category,attr"`
			} `xml:"outline"`
		} `xml:"body>outline"`
	}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Version != "2.0" || !strings.Contains(doc.Head.Title, "ann") {
		t.Errorf("head: %+v", doc)
	}
	if _, err := time.Parse(time.RFC1123Z, doc.Head.DateCreated); err != nil {
		t.Errorf("dateCreated: %v", err)
	}
	if len(doc.Body) != 3 || doc.Body[0].Text != "local" || doc.Body[1].Text != "news" || doc.Body[2].XMLURL != blog.URL {
		t.Fatalf("outlines:\n%s", out)
	}
	if lc := doc.Body[0].Children; len(lc) != 2 || lc[0].XMLURL != "https://new.example/rss" || lc[0].Type != "rss" ||
		lc[1].Type != "link" || lc[1].URL != "https://town.example/" || lc[1].XMLURL != "" {
		t.Errorf("folder local (a feed not fetched yet, and the page as a link):\n%s", out)
	}
	tw := doc.Body[1].Children
	if len(tw) != 1 || tw[0].XMLURL != town.URL || tw[0].HTMLURL != "https://town.example/" || tw[0].Text != "Town & country news" ||
		tw[0].Category != "news,local" {
		t.Errorf("town feed: %+v", tw)
	}
	if doc.Body[2].Text != "Ann's \"own\" <blog>" || doc.Body[2].Category != "" {
		t.Errorf("blog: %+v", doc.Body[2])
	}

	// Bob imports it and watches the same feeds with the same tags.
	var res opmlResult
	resp, body := b.raw("POST", "/opml", "text/x-opml", out)
	if err := jsonUnmarshal(body, &res); err != nil || resp.StatusCode != 200 || res.Imported != 4 || res.Skipped != 0 {
		t.Fatalf("import: %d %s", resp.StatusCode, body)
	}
	want := []watchSummary{
		{"https://blog.example/atom.xml", "Ann's \"own\" <blog>", nil},
		{"https://new.example/rss", "", []string{"local"}},
		{"https://town.example/", "", []string{"local"}},
		{"https://town.example/feed.xml", "Town & country news", []string{"news", "local"}},
	}
	if got := e.summaries(bob); !reflect.DeepEqual(got, want) {
		t.Errorf("bob's watches:\n%q\nwant\n%q", got, want)
	}
	// And exports them as Ann did (the town feed's link is Ann's to know).
	_, again := b.raw("GET", "/opml", "", nil)
	strip := func(b []byte) string {
		s := string(b)
		s = strings.ReplaceAll(s, "bob", "ann")
		return strings.ReplaceAll(s, ` htmlUrl="https://town.example/"`, "")
	}
	if strip(again) != strip(out) {
		t.Errorf("bob's export differs:\n%s\nann's:\n%s", again, out)
	}
	// A tag restricts the export.
	_, local := a.raw("GET", "/opml?tag=Local", "", nil)
	if !bytes.Contains(local, []byte("new.example")) || !bytes.Contains(local, []byte("town.example/feed.xml")) || bytes.Contains(local, []byte("blog.example")) {
		t.Errorf("export of tag local:\n%s", local)
	}
	// No feeds: an empty body, still OPML.
	carl := e.mustUser("carl", "correct horse")
	_, empty := e.api(carl).raw("GET", "/opml", "", nil)
	if !bytes.Contains(empty, []byte("<body></body>")) {
		t.Errorf("empty export:\n%s", empty)
	}
}

func TestOPMLBadInput(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	many := func(n int) string {
		return `<opml version="2.0"><body>` + strings.Repeat(`<outline text="f" xmlUrl="https://x.example/"/>`, n) + `</body></opml>`
	}
	deep := `<opml version="2.0"><body>` + strings.Repeat(`<outline text="folder">`, 40) + strings.Repeat(`</outline>`, 40) + `</body></opml>`
	// Nine levels of ten copies each: "&lol9;" would be 3 GB of text.
	bomb := "<?xml version=\"1.0\"?>\n<!DOCTYPE opml [\n<!ENTITY lol \"lol\">\n"
	for i := 1; i <= 9; i++ {
		bomb += fmt.Sprintf("<!ENTITY lol%d \"%s\">\n", i, strings.Repeat(fmt.Sprintf("&lol%d;", i-1), 10))
	}
	bomb = strings.Replace(bomb, "&lol0;", "&lol;", -1) + `]>
<opml version="2.0"><head><title>&lol9;</title></head>
<body><outline text="&lol9;" xmlUrl="https://a.example/&lol9;"/></body></opml>`
	tests := []struct {
		name, ctype, body string
		status            int
		code              string
		wants             []string
	}{
		{"entity bomb", "text/x-opml", bomb, 400, "invalid", []string{"declares entities in its <!DOCTYPE> (ending at line 13)", "remove the DOCTYPE"}},
		{"unclosed element", "text/x-opml", `<opml version="2.0"><body><outline text="a" xmlUrl="https://a.example/"></body></opml>`, 400, "invalid", []string{"not well-formed", "line 1"}},
		{"bad attribute", "text/x-opml", "<opml version=\"2.0\">\n<body>\n<outline text=a/></body></opml>", 400, "invalid", []string{"not well-formed", "line 3"}},
		{"unknown entity", "text/x-opml", `<opml><body><outline text="&bogus;" xmlUrl="https://a.example/"/></body></opml>`, 400, "invalid", []string{"not well-formed"}},
		{"truncated", "text/x-opml", `<?xml version="1.0"?><opml version="2.0"><body><outline text="a" xmlUrl="https://a.example/"/>`, 400, "invalid", []string{"ends early"}},
		{"an RSS feed", "application/xml", rssFeed("x", "https://a.example/", nil), 400, "invalid", []string{"not an OPML file", "<rss>"}},
		{"an HTML page", "text/xml", pageV1, 400, "invalid", []string{"not"}},
		{"JSON", "text/x-opml", `{"feeds":["https://a.example/"]}`, 400, "invalid", []string{"not an OPML file"}},
		{"no body", "text/x-opml", `<opml version="2.0"><head><title>x</title></head></opml>`, 400, "invalid", []string{"<body>"}},
		{"empty", "text/x-opml", "  \n", 400, "invalid", []string{"empty"}},
		{"too many outlines", "text/x-opml", many(maxOPMLOutlines + 1), 413, "too_large", []string{"1000 outlines"}},
		{"too deep", "text/x-opml", deep, 400, "invalid", []string{"deep"}},
		{"wrong type", "application/json", many(1), 415, "invalid", []string{"text/x-opml"}},
		{"form", "application/x-www-form-urlencoded", many(1), 415, "invalid", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = e.t }()
			c.callErr("POST", "/opml", tt.ctype, []byte(tt.body), tt.status, tt.code, tt.wants...)
		})
	}
	if ws := e.summaries(ann); len(ws) != 0 {
		t.Errorf("bad input created watches: %v", ws)
	}
	// Exactly the cap is fine; an outline after the root is ignored.
	resp, body := c.raw("POST", "/opml", "text/x-opml", []byte(many(maxOPMLOutlines)+`<outline xmlUrl="https://late.example/"/>`))
	var res opmlResult
	if err := jsonUnmarshal(body, &res); err != nil || resp.StatusCode != 200 || res.Imported != 1 || res.AlreadyWatched != maxOPMLOutlines-1 {
		t.Errorf("import at the cap: %d %+v", resp.StatusCode, res)
	}
}

// multipartPost sends an OPML file as the web form does, with the CSRF
// token of the client's session unless csrf is false.
func (c *client) multipartPost(path, field, filename string, data []byte, csrf bool) *http.Response {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if csrf {
		mw.WriteField("csrf_token", c.csrf())
	}
	if data != nil {
		fw, err := mw.CreateFormFile(field, filename)
		if err != nil {
			c.t.Fatal(err)
		}
		fw.Write(data)
	}
	mw.Close()
	resp, err := c.http.Post(c.base+path, mw.FormDataContentType(), &buf)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// flash reads the flash message a response set.
func flash(resp *http.Response) string {
	for _, ck := range resp.Cookies() {
		if ck.Name == flashCookie && ck.MaxAge >= 0 {
			v, _ := url.QueryUnescape(ck.Value)
			return v
		}
	}
	return ""
}

func TestOPMLWeb(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	e.mustWatch(ann, "https://lwn.net/headlines/rss")
	data, err := os.ReadFile("testdata/opml/realworld.opml")
	if err != nil {
		t.Fatal(err)
	}
	// Visitors are sent to the login form.
	resp, _ := e.client().get("/opml")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("visitor: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	c := e.login("ann", "correct horse")

	// Without the CSRF token nothing is imported.
	resp = c.multipartPost("/opml", "opml", "subs.opml", data, false)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without CSRF token: %d", resp.StatusCode)
	}
	if n := len(e.summaries(ann)); n != 1 {
		t.Fatalf("a form without CSRF token imported: %d watches", n)
	}

	resp = c.multipartPost("/opml", "opml", "subs.opml", data, true)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("import: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got, want := flash(resp), "info:Imported 5 watches, skipped 5 (2 already watched, 3 invalid)."; got != want {
		t.Errorf("flash %q, want %q", got, want)
	}
	if n := len(e.summaries(ann)); n != 6 {
		t.Errorf("after the import: %d watches", n)
	}

	for _, tt := range []struct {
		name  string
		field string
		data  []byte
		want  string
	}{
		{"no file", "opml", nil, "error:Nothing was imported: choose an OPML file"},
		{"wrong field", "file", data, "error:Nothing was imported: choose an OPML file"},
		{"not OPML", "opml", []byte(pageV1), "error:Nothing was imported: this is not an OPML file"},
		{"malformed", "opml", []byte(`<opml><body><outline></body>`), "error:Nothing was imported: the OPML file is not well-formed XML"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := c.multipartPost("/opml", tt.field, "x.opml", tt.data, true)
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(flash(resp), tt.want) {
				t.Errorf("%d %q, want a redirect with %q", resp.StatusCode, flash(resp), tt.want)
			}
		})
	}
	// An upload over the limit is refused before it is read.
	resp = c.multipartPost("/opml", "opml", "big.opml", bytes.Repeat([]byte("x"), int(e.srv.MaxUpload)+1), true)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized upload: %d", resp.StatusCode)
	}

	resp, body := c.get("/opml")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/x-opml") ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("web export: %d %v", resp.StatusCode, resp.Header)
	}
	// Nothing has been fetched yet: every watch's kind is unknown, so all are exported.
	if n := strings.Count(body, "xmlUrl="); n != 5 {
		t.Errorf("web export has %d feeds:\n%s", n, body)
	}
	if !strings.Contains(body, `<outline text="café &amp; food" title="café &amp; food">`) {
		t.Errorf("web export lacks the folder of the first tag:\n%s", body)
	}
}

func TestOPMLFeeds(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		feeds []opmlFeed
		skips int
	}{
		{"flat", `<opml version="2.0"><body><outline text="A" xmlUrl="https://a.example/"/></body></opml>`,
			[]opmlFeed{{"https://a.example/", "A", nil}}, 0},
		{"title before text", `<opml><body><outline text="t" title="T" xmlUrl="https://a.example/"/></body></opml>`,
			[]opmlFeed{{"https://a.example/", "T", nil}}, 0},
		{"folders and categories", `<opml><body><outline title="A/B"><outline text="In" xmlUrl="https://a.example/" category="x,/y/z, ,"/></outline></body></opml>`,
			[]opmlFeed{{"https://a.example/", "In", []string{"a", "b", "x", "y", "z"}}}, 0},
		{"feed scheme", `<opml><body><outline xmlUrl="feed:https://a.example/f"/><outline xmlUrl="FEED://b.example/f"/></body></opml>`,
			[]opmlFeed{{"https://a.example/f", "", nil}, {"http://b.example/f", "", nil}}, 0},
		{"long tag", `<opml><body><outline title="` + strings.Repeat("é", 40) + `"><outline xmlUrl="https://a.example/"/></outline></body></opml>`,
			[]opmlFeed{{"https://a.example/", "", []string{strings.Repeat("é", 32)}}}, 0},
		{"outline inside a feed", `<opml><body><outline text="F" xmlUrl="https://a.example/"><outline text="G" xmlUrl="https://b.example/"/></outline></body></opml>`,
			[]opmlFeed{{"https://a.example/", "F", nil}, {"https://b.example/", "G", nil}}, 0},
		{"other elements", `<opml><head><title>T</title><docs>x</docs></head><body><foo><outline xmlUrl="https://skip.example/"/></foo><outline text="x"/></body><extra/></opml>`,
			nil, 1},
		{"upper case element", `<OPML><BODY><OUTLINE XMLURL="https://a.example/"/></BODY></OPML>`,
			[]opmlFeed{{"https://a.example/", "", nil}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseOPML([]byte(tt.doc), "")
			if err != nil {
				t.Fatal(err)
			}
			feeds, skips := doc.feeds()
			if !reflect.DeepEqual(feeds, tt.feeds) || len(skips) != tt.skips {
				t.Errorf("feeds %q skips %v\nwant %q, %d skips", feeds, skips, tt.feeds, tt.skips)
			}
		})
	}
}

// FuzzParseOPML checks that no input panics, that the caps hold and that
// every feed's tags fit a watch.
func FuzzParseOPML(f *testing.F) {
	data, err := os.ReadFile("testdata/opml/realworld.opml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`<opml><body><outline title="a/b"><outline xmlUrl="feed://x" category="c,/d/e"/></outline></body></opml>`))
	f.Add([]byte(`<opml><body><outline>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseOPML(data, "")
		if err != nil {
			if changedigest.ErrorCode(err) != changedigest.EINVALID && changedigest.ErrorCode(err) != changedigest.ETOOLARGE {
				t.Fatalf("error without a user code: %v", err)
			}
			return
		}
		feeds, skips := doc.feeds()
		if len(feeds)+len(skips) > maxOPMLOutlines {
			t.Fatalf("%d feeds and %d skips from at most %d outlines", len(feeds), len(skips), maxOPMLOutlines)
		}
		for _, fd := range feeds {
			w := changedigest.Watch{URL: fd.URL, Title: fd.Title, Tags: fd.Tags}
			if err := w.Validate(); err != nil && !strings.Contains(err.Error(), "URL") {
				t.Fatalf("feed %+v: %v", fd, err)
			}
			if len(fd.Title) > maxOPMLTitle {
				t.Fatalf("title of %d bytes", len(fd.Title))
			}
		}
	})
}

// BenchmarkOPMLImport measures the import of a file at the outline cap
// into an empty account (store writes included).
func BenchmarkOPMLImport(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`<opml version="2.0"><body>`)
	for i := range maxOPMLOutlines / 10 {
		fmt.Fprintf(&sb, `<outline text="folder %d">`, i)
		for j := range 9 {
			fmt.Fprintf(&sb, `<outline type="rss" text="Feed %d.%d" xmlUrl="https://f%d.example/%d.xml"/>`, i, j, i, j)
		}
		sb.WriteString(`</outline>`)
	}
	sb.WriteString(`</body></opml>`)
	data := []byte(sb.String())
	e := mustServer(b)
	n := 0
	for b.Loop() {
		n++
		u := e.mustUser(fmt.Sprintf("u%d", n), "correct horse")
		res, err := e.srv.importOPML(context.Background(), u, data, "")
		if err != nil || len(res.Imported) != 900 {
			b.Fatalf("%v %d", err, len(res.Imported))
		}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// BenchmarkOPMLExport measures the export of 200 fetched feeds, each
// read back from the store and parsed for its site link.
func BenchmarkOPMLExport(b *testing.B) {
	e := mustServer(b)
	u := e.mustUser("ann", "correct horse")
	for i := range 200 {
		w := e.mustWatch(u, fmt.Sprintf("https://f%d.example/feed.xml", i), fmt.Sprintf("t%d", i%7))
		var items []rssItem
		for j := range 20 {
			items = append(items, rssItem{fmt.Sprintf("Item %d", j), fmt.Sprintf("https://f%d.example/%d", i, j),
				strings.Repeat(fmt.Sprintf("Text of item %d of feed %d. ", j, i), 20)})
		}
		e.addVersion(w, rssFeed(fmt.Sprintf("Feed %d", i), fmt.Sprintf("https://f%d.example/", i), items))
		e.setKind(w, changedigest.KindFeed)
	}
	for b.Loop() {
		out, err := e.srv.exportOPML(context.Background(), u, "")
		if err != nil || bytes.Count(out, []byte("htmlUrl=")) != 200 {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}
