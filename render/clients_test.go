package render

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest/internal/testenv"
)

// python returns the system Python when it can import module.
func python(t *testing.T, module string) string { return testenv.Python(t, module) }

// feedparserScript reads a feed on stdin and prints what feedparser made
// of it as JSON.
const feedparserScript = `
import feedparser, json, sys
d = feedparser.parse(sys.stdin.buffer.read())
json.dump({
    "bozo": bool(d.bozo),
    "bozo_exception": str(d.get("bozo_exception", "")),
    "version": d.version,
    "id": d.feed.get("id", ""),
    "links": [{"rel": l.get("rel"), "href": l.get("href")} for l in d.feed.get("links", [])],
    "updated": d.feed.get("updated", ""),
    "entries": [{
        "id": e.get("id", ""),
        "title": e.get("title", ""),
        "link": e.get("link", ""),
        "published": e.get("published", ""),
        "tags": [t.term for t in e.get("tags", [])],
        "content": e.content[0].value if e.get("content") else "",
    } for e in d.entries],
}, sys.stdout)
`

type feedparserResult struct {
	Bozo          bool   `json:"bozo"`
	BozoException string `json:"bozo_exception"`
	Version       string `json:"version"`
	ID            string `json:"id"`
	Links         []struct {
		Rel  string `json:"rel"`
		Href string `json:"href"`
	} `json:"links"`
	Updated string `json:"updated"`
	Entries []struct {
		ID        string   `json:"id"`
		Title     string   `json:"title"`
		Link      string   `json:"link"`
		Published string   `json:"published"`
		Tags      []string `json:"tags"`
		Content   string   `json:"content"`
	} `json:"entries"`
}

// TestFeedparser reads the fixture feed with Python's feedparser, the
// library behind many feed readers. feedparser sanitises HTML: it keeps
// <ins>, <del>, <strong> and most inline styles, but drops <mark> (its
// text stays), which is why a match is also in <strong> and labelled in
// plain words.
func TestFeedparser(t *testing.T) {
	py := python(t, "feedparser")
	fx := MustFixture(t)
	e := MustEngine(t)
	feed := renderUserFeed(t, e, fx)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", feedparserScript)
	cmd.Stdin = strings.NewReader(string(feed))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("feedparser: %v", err)
	}
	var r feedparserResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("feedparser output: %v\n%s", err, out)
	}
	if r.Bozo {
		t.Fatalf("feedparser calls the feed malformed: %s", r.BozoException)
	}
	if r.Version != "atom10" || r.ID != "tag:changes.example.org,2026-01-05:user/7" || r.Updated != "2026-03-14T17:05:00Z" {
		t.Errorf("feed: version %q id %q updated %q", r.Version, r.ID, r.Updated)
	}
	var self string
	for _, l := range r.Links {
		if l.Rel == "self" {
			self = l.Href
		}
	}
	if self != testSelf {
		t.Errorf("self link %q", self)
	}
	want := mustParseFeed(t, feed)
	if len(r.Entries) != len(want.Entries) {
		t.Fatalf("feedparser sees %d entries, want %d", len(r.Entries), len(want.Entries))
	}
	for i, en := range r.Entries {
		if en.ID != want.Entries[i].ID {
			t.Errorf("entry %d id %q, want %q", i, en.ID, want.Entries[i].ID)
		}
		if en.Published != want.Entries[i].Published {
			t.Errorf("entry %d published %q, want %q", i, en.Published, want.Entries[i].Published)
		}
	}
	sport := r.Entries[2]
	if sport.Link != testSite+"/watches/1/versions/12" {
		t.Errorf("entry link %q", sport.Link)
	}
	if !strings.Contains(strings.Join(sport.Tags, ","), "football") {
		t.Errorf("tags %q lack the interest", sport.Tags)
	}
	for _, keep := range []string{
		"<ins ", "won<", "<del ", "lost<", "{+", "+}", "[-", "-]",
		"<strong>soccer</strong>",
		"★ matches your interest football (synonym: soccer)",
		"background: #fff5e6", // the profile change's box keeps its colour
	} {
		if !strings.Contains(sport.Content, keep) {
			t.Errorf("feedparser dropped %q from the content:\n%s", keep, sport.Content)
		}
	}
	evil := r.Entries[0]
	if !strings.Contains(evil.Title, "<script>") || strings.Contains(evil.Content, "<script") || !strings.Contains(evil.Content, "&lt;script&gt;") {
		t.Errorf("the hostile entry is not shown as text: title %q content %q", evil.Title, evil.Content)
	}
	checkSafeHTML(t, "feedparser content", evil.Content)
}

// TestNewsboat feeds the fixture feed to newsboat over HTTP, headless:
// "newsboat -x reload" fetches it into its cache, "-x print-unread"
// counts the articles, and the cache (SQLite, read with Python's sqlite3
// module) shows the ids and titles newsboat stored.
func TestNewsboat(t *testing.T) {
	nb := testenv.Tool(t, "newsboat")
	py := python(t, "sqlite3")
	fx := MustFixture(t)
	e := MustEngine(t)
	feed := renderUserFeed(t, e, fx)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
		w.Write(feed)
	}))
	defer srv.Close()

	dir := t.TempDir()
	urls, conf, cache := filepath.Join(dir, "urls"), filepath.Join(dir, "config"), filepath.Join(dir, "cache.db")
	for name, body := range map[string]string{urls: srv.URL + "/feeds/7.atom\n", conf: ""} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, nb, append([]string{"-u", urls, "-C", conf, "-c", cache}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("newsboat %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("-x", "reload")
	if out := run("-x", "print-unread"); !strings.Contains(out, "4 unread articles") {
		t.Errorf("print-unread: %q, want 4 unread articles", out)
	}
	out, err := exec.Command(py, "-c", `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for guid, title, content in db.execute("select guid, title, content from rss_item order by pubDate desc"):
    print(guid + "\t" + title + "\t" + str("<ins" in content and "<del" in content and "matches your interest" in content))
`, cache).CombinedOutput()
	if err != nil {
		t.Fatalf("read newsboat cache: %v\n%s", err, out)
	}
	want := mustParseFeed(t, feed)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(want.Entries) {
		t.Fatalf("newsboat stored %d items, want %d:\n%s", len(lines), len(want.Entries), out)
	}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if f[0] != want.Entries[i].ID || f[1] != want.Entries[i].Title {
			t.Errorf("item %d: %q, want %q %q", i, l, want.Entries[i].ID, want.Entries[i].Title)
		}
	}
	if !strings.HasSuffix(lines[2], "\tTrue") {
		t.Errorf("newsboat lost the marked-up content of the profile entry: %q", lines[2])
	}
}
