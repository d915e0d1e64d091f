package server

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

var (
	rowRE  = regexp.MustCompile(`class="watch-name" href="[^"]*">([^<]*)</a>`)
	nextRE = regexp.MustCompile(`<a href="([^"]*)" rel="next">`)
	prevRE = regexp.MustCompile(`<a href="([^"]*)" rel="prev">`)
)

func rowsOf(body string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func TestDashboardPaging(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	for i := range 120 {
		tags := []string{"all"}
		if i%3 == 0 {
			tags = append(tags, "third")
		}
		e.mustWatch(u, fmt.Sprintf("https://site%03d.example/", 119-i), tags...)
	}
	c := e.login("ann", "correct horse")

	resp, body := c.get("/")
	rows := rowsOf(body)
	if resp.StatusCode != 200 || len(rows) != watchesPerPage || rows[0] != "https://site119.example/" {
		t.Fatalf("first page: status %d, %d rows, first %v", resp.StatusCode, len(rows), rows[:min(1, len(rows))])
	}
	mustContain(t, body, "Watches 1–50 of 120", `href="/tags/third"`)
	next := nextRE.FindStringSubmatch(body)
	if next == nil || html.UnescapeString(next[1]) != "/?page=2" {
		t.Fatalf("first page: next link %v", next)
	}

	// By name, the last page: the order and the position stay in the links.
	resp, body = c.get("/?sort=name&page=3")
	rows = rowsOf(body)
	if resp.StatusCode != 200 || len(rows) != 20 || rows[0] != "https://site100.example/" || rows[19] != "https://site119.example/" {
		t.Fatalf("name, page 3: status %d, rows %v", resp.StatusCode, rows)
	}
	mustContain(t, body, "Watches 101–120 of 120", "page 3 of 3")
	prev := prevRE.FindStringSubmatch(body)
	if prev == nil || html.UnescapeString(prev[1]) != "/?page=2&sort=name" {
		t.Fatalf("name, page 3: previous link %v", prev)
	}
	if nextRE.MatchString(body) {
		t.Error("the last page links to a next one")
	}

	// A tag's page is paged and sorted the same way.
	resp, body = c.get("/tags/third?sort=name&page=1")
	rows = rowsOf(body)
	if resp.StatusCode != 200 || len(rows) != 40 || rows[0] != "https://site002.example/" {
		t.Fatalf("tag page: status %d, %d rows, first %v", resp.StatusCode, len(rows), rows[:min(1, len(rows))])
	}
	mustContain(t, body, "40 watches")
	_, body = c.get("/tags/all?sort=changed")
	next = nextRE.FindStringSubmatch(body)
	if next == nil || html.UnescapeString(next[1]) != "/tags/all?page=2&sort=changed" {
		t.Fatalf("tag page: next link %v", next)
	}

	for path, want := range map[string]int{
		"/?page=4":            http.StatusNotFound,
		"/?page=0":            http.StatusBadRequest,
		"/?page=x":            http.StatusBadRequest,
		"/?sort=size":         http.StatusBadRequest,
		"/tags/third?page=2":  http.StatusNotFound,
		"/?sort=failing":      http.StatusOK,
		"/?page=3&sort=added": http.StatusOK,
	} {
		if resp, _ := c.get(path); resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestAPIWatchPaging(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	for i := range 120 {
		e.mustWatch(u, fmt.Sprintf("https://site%03d.example/", 119-i), "all")
	}
	a := e.api(u)
	var list struct {
		Watches []struct {
			URL string `json:"url"`
		} `json:"watches"`
		Total      int  `json:"total"`
		Offset     int  `json:"offset"`
		Limit      int  `json:"limit"`
		NextOffset *int `json:"next_offset"`
	}
	a.call("GET", "/watches", nil, http.StatusOK, &list)
	if len(list.Watches) != apiWatchLimit || list.Total != 120 || list.NextOffset == nil || *list.NextOffset != apiWatchLimit {
		t.Fatalf("default page: %d watches, total %d, next %v", len(list.Watches), list.Total, list.NextOffset)
	}
	list.NextOffset = nil
	a.call("GET", "/watches?sort=name&limit=10&offset=115&tag=all", nil, http.StatusOK, &list)
	if len(list.Watches) != 5 || list.Watches[0].URL != "https://site115.example/" || list.NextOffset != nil || list.Limit != 10 {
		t.Fatalf("last page by name: %+v", list)
	}
	for _, q := range []string{"limit=0", "limit=1001", "offset=-1", "sort=size", "limit=" + strings.Repeat("9", 500)} {
		resp, body := a.raw("GET", "/watches?"+q, "", nil)
		if resp.StatusCode != http.StatusBadRequest || len(body) > 400 {
			t.Errorf("%s: status %d, %d bytes", q, resp.StatusCode, len(body))
		}
	}
}

func TestSearchFormOffersAPageOfWatches(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	var last int64
	for i := range searchWatchChoices + 5 {
		last = e.mustWatch(u, fmt.Sprintf("https://site%03d.example/", i)).ID
	}
	c := e.login("ann", "correct horse")
	_, body := c.get("/search")
	if n := strings.Count(body, "<option value=\"") - len(changedigest.ChangeTypes) - 2; n != searchWatchChoices {
		t.Errorf("the watch filter offers %d watches, want %d", n, searchWatchChoices)
	}
	mustContain(t, body, "the other 5")
	// A watch past the first ones, chosen from its page, is offered and chosen.
	_, body = c.get(fmt.Sprintf("/search?watch=%d", last))
	mustContain(t, body, fmt.Sprintf(`<option value="%d" selected>https://site%03d.example/</option>`, last, searchWatchChoices+4))
	_, body = c.get(fmt.Sprintf("/watches/%d", last))
	mustContain(t, body, fmt.Sprintf(`href="/search?watch=%d"`, last))
}

// TestDashboardRowsFollowTheWatch: rows of the watches table are kept
// rendered between requests, and a row shows what changed on its watch
// (title, error, pause, tags, a check) at the next request.
func TestDashboardRowsFollowTheWatch(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse")
	w := e.mustWatch(u, "https://harbour.example/", "news")
	c := e.login("ann", "correct horse")
	_, first := c.get("/")
	mustContain(t, first, "https://harbour.example/", "waiting for the first check")
	if _, again := c.get("/"); again != first {
		t.Fatal("the same dashboard twice differs")
	}
	checked := time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC)
	steps := []struct {
		name string
		edit func(*changedigest.Watch)
		want string
	}{
		{"title", func(x *changedigest.Watch) { x.Title = "Harbour notices" }, ">Harbour notices</a>"},
		{"check", func(x *changedigest.Watch) { x.LastCheck = checked }, "2026-03-04 05:06 UTC"},
		{"error", func(x *changedigest.Watch) { x.LastError = "fetch: connection refused" }, "fetch: connection refused"},
		{"pause", func(x *changedigest.Watch) { x.LastError, x.Paused = "", true }, `<span class="badge badge-paused">paused</span>`},
		{"tags", func(x *changedigest.Watch) { x.Tags = []string{"ferries"} }, `href="/tags/ferries"`},
	}
	for _, st := range steps {
		if _, err := e.store.UpdateWatch(context.Background(), u.ID, w.ID, func(x *changedigest.Watch) error {
			st.edit(x)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		_, body := c.get("/")
		if !strings.Contains(body, st.want) {
			t.Errorf("after the %s changed the dashboard lacks %q", st.name, st.want)
		}
	}
}
