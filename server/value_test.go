package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

func pricePage(price string) string {
	return fmt.Sprintf(`<html><head><title>Dripper</title></head><body><main><h1>Ceramic dripper</h1>
<p class="price">%s €</p><p>Hand-glazed ceramic dripper for one to two cups, made in a small workshop.</p></main></body></html>`, price)
}

// TestValueAPI sets a watch's value selector and condition through the
// API: they are kept, bad ones refused naming the field, and each
// version's value is listed with it.
func TestValueAPI(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse battery")
	c := e.api(u)
	var w apiWatch
	c.call("POST", "/watches", map[string]any{"url": "https://shop.example/dripper", "value_selector": ".price", "when": "Below 20"}, http.StatusCreated, &w)
	if w.ValueSelector != ".price" || w.When != "below 20" {
		t.Errorf("created: value selector %q, when %q", w.ValueSelector, w.When)
	}
	id := fmt.Sprintf("/watches/%d", w.ID)
	c.callErr("PATCH", id, "application/json", []byte(`{"when":"below cheap"}`), 400, "invalid", `when "below cheap": below needs a number`)
	c.callErr("PATCH", id, "application/json", []byte(`{"when":"drop 0%"}`), 400, "invalid", `when "drop 0%"`)
	c.callErr("PATCH", id, "application/json", []byte(`{"value_selector":"p["}`), 400, "invalid", `invalid value selector "p["`)

	sw, err := e.store.Watch(context.Background(), u.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"24,00", "29,00", "19,50"} {
		e.addVersion(sw, pricePage(p))
		e.setNow(e.clock().Add(time.Hour))
	}
	var vs struct {
		Versions []apiVersionRow `json:"versions"`
	}
	c.call("GET", id+"/versions", nil, http.StatusOK, &vs)
	var got []string
	for _, v := range vs.Versions {
		if v.Value == nil || v.Value.Number == nil {
			got = append(got, "none")
			continue
		}
		got = append(got, fmt.Sprint(*v.Value.Number, v.Value.Currency))
	}
	if s := strings.Join(got, ", "); s != "19.5EUR, 29EUR, 24EUR" {
		t.Errorf("values listed: %s", s)
	}

	// The feed tells only the version below 20.
	_, body := e.client().get("/feeds/" + u.FeedToken + fmt.Sprintf("/watches/%d.xml", w.ID))
	if n := strings.Count(body, "<entry>"); n != 1 || !strings.Contains(body, "19,50") {
		t.Errorf("feed: %d entries, want the one below 20:\n%s", n, body)
	}

	// The watch page shows the value, its chart and the condition.
	web := e.login("ann", "correct horse battery")
	_, page := web.get(id)
	mustContain(t, page, `id="value-h"`, "<code>.price</code>", "19.5 EUR", "<code>below 20</code>", "the newest version met it", `aria-labelledby="vc-`, "(told)")
	if strings.Contains(page, "could not be read") {
		t.Error("the watch page says the value could not be read")
	}

	// A selector that matches nothing: the page says so.
	sw.ValueSelector = ".sale"
	if _, err := e.store.UpdateWatch(context.Background(), u.ID, w.ID, func(x *changedigest.Watch) error {
		x.ValueSelector = ".sale"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.addVersion(sw, pricePage("18,00"))
	_, page = web.get(id)
	mustContain(t, page, "The value could not be read from the newest version:", "the value selector &#34;.sale&#34; matched nothing")
}

func TestValueForm(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse battery")
	w := e.mustWatch(u, "https://shop.example/kettle")
	c := e.login("ann", "correct horse battery")
	path := fmt.Sprintf("/watches/%d", w.ID)
	resp, body := c.post(path, url.Values{"url": {w.URL}, "when": {"sometime"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "when &#34;sometime&#34;") {
		t.Errorf("bad condition: status %d", resp.StatusCode)
	}
	resp, body = c.post(path, url.Values{"url": {w.URL}, "value_selector": {"xpath://p["}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid value selector XPath") {
		t.Errorf("bad selector: status %d", resp.StatusCode)
	}
	resp, _ = c.post(path, url.Values{"url": {w.URL}, "when": {"back in stock"}})
	if resp.StatusCode >= 400 {
		t.Fatalf("good condition: status %d", resp.StatusCode)
	}
	got, err := e.store.Watch(context.Background(), u.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.When != "in stock" || got.ValueSelector != "" {
		t.Errorf("saved: when %q, value selector %q", got.When, got.ValueSelector)
	}
	_, edit := c.get(path + "/edit")
	mustContain(t, edit, `name="when" value="in stock"`, `name="value_selector" value=""`)
}
