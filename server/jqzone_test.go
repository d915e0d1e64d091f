package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// TestJQZoneCheck watches a JSON API on loopback through a jq zone: an
// invalid program is refused by the API and the web form, naming it; a
// change outside what the program outputs makes no change, one inside it
// is told with its key and its old and new value.
func TestJQZoneCheck(t *testing.T) {
	var mu sync.Mutex
	doc := `{"updated": "2026-05-01", "items": [{"name": "City bike", "price": 24, "stock": 3}, {"name": "Cargo bike", "price": 80, "stock": 1}]}`
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, doc)
	}))
	defer origin.Close()
	set := func(old, new string) {
		mu.Lock()
		doc = strings.Replace(doc, old, new, 1)
		mu.Unlock()
	}

	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	c.callErr("POST", "/watches", "application/json", []byte(`{"url":"`+origin.URL+`/prices","zone":"jq:.items[] | {name, price"}`),
		400, "invalid", "invalid jq zone", "jq:.items[] | {name, price")
	web := e.login("ann", "correct horse")
	resp, body := web.post("/watches", url.Values{"url": {origin.URL + "/prices"}, "zone": {"jq:.items[] | nosuchfunction"}})
	mustStatus(t, "web form", resp, body, http.StatusBadRequest)
	mustContain(t, body, "invalid jq zone", "nosuchfunction")

	var w apiWatch
	c.call("POST", "/watches", map[string]any{"url": origin.URL + "/prices", "zone": "jq:.items[] | {name, price}"}, http.StatusCreated, &w)
	c.callErr("PATCH", fmt.Sprintf("/watches/%d", w.ID), "application/json", []byte(`{"zone":"jq:.items[0"}`), 400, "invalid", "invalid jq zone")

	fetcher := crawl.NewFetcher()
	fetcher.AllowPrivate = true
	sched := crawl.NewScheduler(e.store, crawl.NewPipeline(fetcher, e.seg, e.store))
	sched.Logger = discardLogger()
	e.srv.Checker = sched
	check := func() apiCheck {
		var out apiCheck
		c.call("POST", fmt.Sprintf("/watches/%d/check", w.ID), nil, http.StatusOK, &out)
		return out
	}
	if out := check(); out.Result != "first version" {
		t.Fatalf("first check: %+v", out)
	}
	// Outside the program's output: the date and the stock.
	set(`"2026-05-01"`, `"2026-05-02"`)
	set(`"stock": 3`, `"stock": 2`)
	if out := check(); out.Result == "changed" {
		t.Fatalf("a change outside the zone: %+v", out)
	}
	// Inside: the Cargo bike's price.
	set(`"price": 80`, `"price": 85`)
	out := check()
	if out.Result != "changed" {
		t.Fatalf("a change inside the zone: %+v", out)
	}
	var v struct {
		Changes []changedigest.Change `json:"changes"`
	}
	c.call("GET", fmt.Sprintf("/watches/%d/versions/%d", w.ID, out.Latest), nil, http.StatusOK, &v)
	var told []string
	for _, ch := range v.Changes {
		if ch.Type == changedigest.ChangeContent {
			told = append(told, fmt.Sprintf("%s|%s%s → %s", ch.Where, ch.Before, ch.OldText, ch.NewText))
		}
	}
	if len(told) != 1 || told[0] != "under ‘Cargo bike’|price: 80 → 85" {
		t.Errorf("told %q", told)
	}
	// A program that loops fails the check, naming the zone.
	c.call("PATCH", fmt.Sprintf("/watches/%d", w.ID), map[string]any{"zone": "jq:def f: f; f"}, http.StatusOK, nil)
	set(`"price": 85`, `"price": 86`)
	if out := check(); out.Result != "failed" || !strings.Contains(out.Error, `jq zone "jq:def f: f; f" ran longer than`) {
		t.Errorf("a looping program: %+v", out)
	}
}
