package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/render"
)

// oddText holds what pages put in their text that a feed must still carry
// as valid XML: C0 and C1 controls, DEL, U+FFFE and U+FFFF, invalid
// UTF-8, characters beyond the BMP, combining and right-to-left text,
// markup written as text, a CDATA end and entity-like sequences.
const oddText = "Bell\x07 tab\t vt\x0b ff\x0c esc\x1b del\x7f nel\u0085 c1\u009f nonchar\uFFFE\uFFFF bad\xff\xfe utf8 " +
	"cyclist 🚴🏽‍♀️ clef 𝄞 cjk 𠜎 math 𝒳 rtl שלום عربي combining e\u0301 zwj a\u200db " +
	"<b>bold</b> &lt;i&gt; &amp;amp; &#x0; &#1; ]]> <![CDATA[x]]> <!-- c --> <?pi x?> \"quotes\" 'apos' \\ back"

// richFeedStore fills a store as real use does: a profile whose interests
// match, page watches with long and odd texts, a feed watch whose items
// hold markup, tags with accents, a watch that failed and one never
// checked. It returns the user.
func richFeedStore(t *testing.T, e *testEnv) *changedigest.User {
	t.Helper()
	ctx := context.Background()
	u := e.mustUser("zoë-ñ_1", "correct horse")
	if err := e.store.PutProfile(ctx, &changedigest.Profile{UserID: u.ID, Name: "Zoë", Interests: []changedigest.Interest{
		{Term: "football", URI: "http://dbpedia.org/resource/Football", Source: "foaf:interest", Weight: 1},
		{Term: "cycling", Source: changedigest.SourceManual, Weight: 1},
		{Term: "café society", Source: changedigest.SourceManual, Weight: 1},
	}}, nil); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("The football season opens with a derby between the two clubs of the city, and cycling fans line the route. ", 120)
	t0 := e.clock()
	step := func(h int) { e.setNow(t0.Add(time.Duration(h-48) * time.Hour)) }

	sports := e.mustWatch(u, "https://sports.example.org/news?a=1&b=<2>", "sport", "café", "local news")
	page := func(title, lead, body string) string {
		return `<!DOCTYPE html><html><head><title>` + title + `</title></head><body><main>
<article id="lead"><h1>` + lead + `</h1><p>` + body + `</p></article>
<aside id="side"><h2>Side</h2><p>Weather: rain on Tuesday, with strong winds along the coast.</p></aside>
<footer><p>City Sports, 1 High Street.</p></footer></main></body></html>`
	}
	step(1)
	e.addVersion(sports, page("City sports", "Council plans new cycle lanes", "The council met on Monday to discuss cycle lanes along the river."))
	step(2)
	e.addVersion(sports, page("City sports &amp; more \x01", "Local club wins the football cup", "The local soccer club won the cup final. "+oddText))
	step(3)
	e.addVersion(sports, page("City sports", "A long report on football", escapeText(long)))
	step(4)
	e.addVersion(sports, page("City sports", "Cycling: "+escapeText(oddText), "<script>alert(1)</script><b onclick=x>Café society</b> gathers at the velodrome <img src=x onerror=alert(1)>."))

	feed := e.mustWatch(u, "https://blog.example.net/feed.xml", "café", "blogs")
	e.setKind(feed, changedigest.KindFeed)
	items := []rssItem{
		{"Football &amp; cycling", "https://blog.example.net/1", "&lt;p&gt;A post on &lt;b&gt;football&lt;/b&gt; tactics.&lt;/p&gt;"},
		{"Second post", "https://blog.example.net/2", "Plain text about the café society."},
	}
	step(5)
	e.addTypedVersion(feed, []byte(rssFeed("A blog", "https://blog.example.net/", items)), "application/rss+xml")
	// A feed holding what XML cannot is not well-formed and never
	// stored; DEL and C1 controls are XML characters.
	feedOdd := strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0xFFFE || r == 0xFFFF || r == utf8.RuneError {
			return -1
		}
		return r
	}, oddText)
	items = append(items, rssItem{"Odd " + escapeText(feedOdd), "https://blog.example.net/3?x=1&amp;y=2", "<![CDATA[<p>Markup " + strings.ReplaceAll(feedOdd, "]]>", "]]]]><![CDATA[>") + "</p><script>x()</script>]]>"})
	items[0].desc = "&lt;p&gt;An edited post on football: " + escapeText(long) + "&lt;/p&gt;"
	step(6)
	e.addTypedVersion(feed, []byte(rssFeed("A blog", "https://blog.example.net/", items)), "application/rss+xml")

	broken := e.mustWatch(u, "https://gone.example.net/news", "sport")
	if _, err := e.store.UpdateWatch(ctx, u.ID, broken.ID, func(w *changedigest.Watch) error {
		w.Title = "Gone \x1b[31m news\u2028 " + strings.Repeat("x", changedigest.MaxTitleLen-20)
		w.LastError, w.LastErrorAt, w.ErrorCount = "fetch: 404 Not Found \x00", t0, 3
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.mustWatch(u, "https://new.example.org/")
	e.setNow(t0)
	return u
}

// escapeText escapes text for an HTML or XML document, keeping the bytes XML
// cannot hold so that the page carries them.
func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// TestAtomFeedsValid validates the user's feed, each watch's and each
// tag's against the normative RELAX NG schema of RFC 4287 with jing.
func TestAtomFeedsValid(t *testing.T) {
	jing := testenv.Tool(t, "jing")
	schema := testenv.Schema(t, "atom.rnc")
	e := mustServer(t)
	u := richFeedStore(t, e)
	ws, err := e.store.Watches(context.Background(), u.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/atom.xml"}
	for _, w := range ws {
		paths = append(paths, fmt.Sprintf("/watches/%d.xml", w.ID))
	}
	for _, tag := range []string{"sport", "café", "local news", "blogs", "no-such-tag"} {
		paths = append(paths, "/tags/"+url.PathEscape(tag)+".xml")
	}
	dir := t.TempDir()
	c := e.client()
	var files, fetched []string
	entries := 0
	for i, p := range paths {
		resp, body := c.get("/feeds/" + u.FeedToken + p)
		if resp.StatusCode != http.StatusOK {
			if p == "/tags/no-such-tag.xml" && resp.StatusCode == http.StatusNotFound {
				continue
			}
			t.Fatalf("GET %s: %d\n%s", p, resp.StatusCode, body)
		}
		entries += strings.Count(body, "<entry>")
		if p == "/atom.xml" {
			// What the store was built to put in it reached it.
			for _, want := range []string{`term="football" scheme="` + render.SchemeInterest + `"`, `term="café society"`,
				"🚴🏽‍♀️", "𝄞", "&amp;lt;b&amp;gt;bold&amp;lt;/b&amp;gt;", "soccer club", "rtl שלום عربي"} {
				if !strings.Contains(body, want) {
					t.Errorf("the user's feed lacks %q", want)
				}
			}
			// Long change texts are clipped in an entry, not left out.
			if n := strings.Count(body, "cycling fans line the route"); n < 5 {
				t.Errorf("the long text is in the user's feed %d times", n)
			}
		}
		f := filepath.Join(dir, fmt.Sprintf("feed%02d.xml", i))
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files, fetched = append(files, f), append(fetched, p)
	}
	if entries < 8 {
		t.Fatalf("only %d entries in %d feeds: the store is not as rich as meant", entries, len(files))
	}
	var out bytes.Buffer
	cmd := exec.Command(jing, append([]string{"-c", schema}, files...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := out.String()
		for i, f := range files {
			msg = strings.ReplaceAll(msg, f, fetched[i])
		}
		t.Errorf("jing: %v\n%s", err, msg)
	}
	t.Logf("%d feeds with %d entries valid against RFC 4287's schema", len(files), entries)
}
