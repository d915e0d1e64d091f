package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest"
)

// productPage is a shop's product page: the price and availability in
// its text and in its ld+json offer, and a review count that changes
// on its own.
func productPage(price, avail string, reviews int) string {
	schema := "https://schema.org/InStock"
	shown := "In stock"
	if avail == "out" {
		schema, shown = "https://schema.org/OutOfStock", "Out of stock"
	}
	return fmt.Sprintf(`<!doctype html><html><head><title>Ceramic dripper</title>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Product","name":"Ceramic dripper",
"offers":{"@type":"Offer","price":"%s","priceCurrency":"USD","availability":"%s"}}</script></head>
<body><main><h1>Ceramic dripper</h1>
<p class="price">$%s</p><p class="stock">%s</p>
<p>Hand-glazed ceramic dripper for one to two cups, made in a small workshop by the sea.</p>
<p class="reviews">%d reviews from customers who bought it</p></main></body></html>`, price, schema, price, shown, reviews)
}

// TestConditionEndToEnd: a served product page whose price goes 24.00 →
// 29.00 → 19.50 tells only the last version to a watch added with
// --when 'below 20'; a watch on the page's offer with --when 'in stock'
// tells only the version in which the page came back in stock; bad
// conditions and selectors are refused with the field named.
func TestConditionEndToEnd(t *testing.T) {
	m := mustServe(t)
	ctx := context.Background()
	var mu sync.Mutex
	pages := map[string]string{
		"/dripper": productPage("24.00", "in", 10),
		"/kettle":  productPage("49.00", "out", 3),
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(p))
	}))
	defer site.Close()
	set := func(path, page string) {
		mu.Lock()
		pages[path] = page
		mu.Unlock()
	}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", m.Config.data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	out := run(0, "watch", "add", site.URL+"/dripper", "--every", "1d", "--value-selector", ".price", "--when", "below 20")
	if !strings.Contains(out, "watch 1:") {
		t.Fatalf("watch add: %s", out)
	}
	run(0, "watch", "add", site.URL+"/kettle", "--every", "1d", "--when", "in stock")
	for _, bad := range []struct{ flag, value, says string }{
		{"--when", "below cheap", `when "below cheap"`},
		{"--when", "soon", `when "soon"`},
		{"--when", "drop -5%", "percentage"},
		{"--value-selector", "p.price[", "value selector"},
		{"--value-selector", "jq:.price", "value selector"},
	} {
		if out := run(2, "watch", "filter", "1", bad.flag, bad.value); !strings.Contains(out, bad.says) {
			t.Errorf("watch filter %s %q: %s, want it to name %q", bad.flag, bad.value, out, bad.says)
		}
	}
	if out := run(0, "watch", "filter", "1"); !strings.Contains(out, `value ".price"; when "below 20"`) {
		t.Errorf("the filters after refused ones: %s", out)
	}

	users, err := m.Store.Users(ctx)
	if err != nil || len(users) != 1 {
		t.Fatalf("users: %v, %v", users, err)
	}
	u := users[0]
	check := func(id int64, versions int) {
		t.Helper()
		w, err := m.Store.Watch(ctx, u.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("version %d of watch %d", versions, id), func() bool {
			tr, err := m.Store.Track(ctx, id)
			if err == nil && tr.Versions >= versions {
				return true
			}
			m.Scheduler.CheckNow(ctx, nil, w)
			tr, err = m.Store.Track(ctx, id)
			return err == nil && tr.Versions >= versions
		})
	}
	check(1, 1)
	check(2, 1)
	set("/dripper", productPage("29.00", "in", 10))
	set("/kettle", productPage("49.00", "out", 4)) // still out of stock
	check(1, 2)
	check(2, 2)
	set("/dripper", productPage("19.50", "in", 10))
	set("/kettle", productPage("52.00", "in", 4)) // back in stock
	check(1, 3)
	check(2, 3)

	for _, w := range []struct {
		id      int64
		want    string   // in the one entry told
		notWant []string // in no entry
	}{
		{1, "19.50", []string{"24.00"}},
		{2, "InStock", []string{"4 reviews"}},
	} {
		feed := m.Server.Render.Site() + "/feeds/" + u.FeedToken + fmt.Sprintf("/watches/%d.xml", w.id)
		code, body := get(t, http.DefaultClient, feed)
		if code != 200 {
			t.Fatalf("feed of watch %d: %d %s", w.id, code, body)
		}
		var f atomFeed
		if err := xml.Unmarshal([]byte(body), &f); err != nil {
			t.Fatalf("feed of watch %d is not XML: %v", w.id, err)
		}
		if len(f.Entries) != 1 {
			t.Errorf("feed of watch %d: %d entries, want 1 (the version that met the condition):\n%s", w.id, len(f.Entries), body)
			continue
		}
		e := f.Entries[0].Title + " " + f.Entries[0].Content
		if !strings.Contains(e, w.want) {
			t.Errorf("feed of watch %d: the entry lacks %q:\n%s", w.id, w.want, e)
		}
		for _, s := range w.notWant {
			if strings.Contains(e, s) {
				t.Errorf("feed of watch %d: the entry has %q:\n%s", w.id, s, e)
			}
		}
	}

	// The series is kept on the versions.
	vs, err := m.Store.Versions(ctx, 1, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for i := len(vs) - 1; i >= 0; i-- {
		if v := vs[i].Value; v != nil && v.Number != nil {
			series = append(series, fmt.Sprint(*v.Number))
		} else {
			series = append(series, fmt.Sprintf("%+v", vs[i].Value))
		}
	}
	if got := strings.Join(series, " "); got != "24 29 19.5" {
		t.Errorf("series of watch 1: %s, want 24 29 19.5", got)
	}

	// A selector that stops matching: the version says why, and is not told.
	if _, err := m.Store.UpdateWatch(ctx, u.ID, 1, func(x *changedigest.Watch) error {
		x.ValueSelector = ".sale-price"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	set("/dripper", productPage("18.00", "in", 11))
	check(1, 4)
	v4, err := m.Store.Version(ctx, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if v4.Value == nil || !strings.Contains(v4.Value.Error, `".sale-price" matched nothing`) {
		t.Errorf("version 4's value: %+v, want why none was read", v4.Value)
	}
}

// TestConditionHistory: on a stopped store, check stores each version's
// value and history lists the values and the versions that met the
// condition.
func TestConditionHistory(t *testing.T) {
	var mu sync.Mutex
	page := productPage("24.00", "in", 1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	defer site.Close()
	data := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	run(0, "watch", "add", site.URL+"/", "--when", "below 20") // the page's offer
	for _, price := range []string{"24.00", "29.00", "19.50"} {
		mu.Lock()
		page = productPage(price, "in", 1)
		mu.Unlock()
		run(0, "check", "1", "--allow-private")
	}
	out := run(0, "history", "1")
	for _, want := range []string{"VALUE", "WHEN BELOW 20", "24 USD, in stock", "29 USD, in stock", "19.5 USD, in stock"} {
		if !strings.Contains(out, want) {
			t.Errorf("history lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, " met"); n != 1 || !strings.Contains(out, "19.5 USD, in stock  met") {
		t.Errorf("history: %d versions met the condition, want the last one:\n%s", n, out)
	}
}
