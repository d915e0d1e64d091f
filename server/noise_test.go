package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// noisePage is a page whose script address carries a cache buster.
func noisePage(v int, story string) string {
	return fmt.Sprintf(`<html><head><title>City news</title><script src="/js/analytics.js?v=%d"></script></head>
<body><main><h1>City news</h1><p>%s</p><p>The council meets on Tuesday to discuss the budget for the new tram line and the harbour.</p></main></body></html>`, v, story)
}

func TestNoiseNotToldInFeeds(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse battery")
	w := e.mustWatch(u, "https://news.example.org/")
	e.addVersion(w, noisePage(49, "The bridge reopens in May."))
	e.setNow(e.clock().Add(time.Hour))
	v2 := e.addVersion(w, noisePage(52, "The bridge reopens in May."))
	if len(v2.Changes) == 0 || v2.Changes[0].Noise == "" {
		t.Fatalf("a cache buster must be a noise change, got %+v", v2.Changes)
	}
	e.setNow(e.clock().Add(time.Hour))
	v3 := e.addVersion(w, noisePage(52, "The bridge reopens in June."))
	if len(v3.Changes) == 0 || v3.Changes[0].Noise != "" || v3.Significance <= 0 {
		t.Fatalf("a real edit must be told with a significance, got %+v (significance %v)", v3.Changes, v3.Significance)
	}
	c := e.client()
	feed := "/feeds/" + u.FeedToken + fmt.Sprintf("/watches/%d.xml", w.ID)
	_, body := c.get(feed)
	if n := strings.Count(body, "<entry>"); n != 1 || !strings.Contains(body, "June") || !strings.Contains(body, "in May → June.") {
		t.Errorf("feed: %d entries, want only the real edit, its words in the title:\n%s", n, body)
	}

	// The version page shows the noise folded, with the reason.
	web := e.login("ann", "correct horse battery")
	_, page := web.get(fmt.Sprintf("/watches/%d/versions/2", w.ID))
	mustContain(t, page, "none told (noise or filters)", "<details", "noise: generated value")

	// The API keeps every change with its noise reason.
	var d changedigest.Diff
	e.api(u).call("GET", fmt.Sprintf("/watches/%d/diff?from=1&to=2", w.ID), nil, http.StatusOK, &d)
	if len(d.Changes) != 1 || d.Changes[0].Noise != "generated value" {
		t.Errorf("API diff: %+v, want the noise change with its reason", d.Changes)
	}

	// A watch that shows noise, and asks for script changes, tells
	// version 2 too.
	if _, err := e.store.UpdateWatch(context.Background(), u.ID, w.ID, func(x *changedigest.Watch) error {
		x.ShowNoise, x.NotifyTypes = true, changedigest.ChangeTypes
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, body = c.get(feed)
	if n := strings.Count(body, "<entry>"); n != 2 {
		t.Errorf("feed with noise shown: %d entries, want 2\n%s", n, body)
	}
}

func TestFilterAPI(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse battery")
	c := e.api(u)
	var w apiWatch
	c.call("POST", "/watches", map[string]any{"url": "https://news.example.org/", "ignore_text": []string{`/\d+ comments/`},
		"min_significance": 0.1, "notify_types": []string{"content", "structural"}}, http.StatusCreated, &w)
	if !reflect.DeepEqual(w.IgnoreText, []string{`/\d+ comments/`}) || w.MinSignificance != 0.1 ||
		!reflect.DeepEqual(w.NotifyTypes, []changedigest.ChangeType{"content", "structural"}) || w.ShowNoise || len(w.TriggerText) != 0 {
		t.Errorf("created with filters: %+v", w)
	}
	var p apiWatch
	c.call("PATCH", fmt.Sprintf("/watches/%d", w.ID), map[string]any{"trigger_text": []string{"sold out"}, "only_interests": true, "notify_types": []string{}}, http.StatusOK, &p)
	if !reflect.DeepEqual(p.TriggerText, []string{"sold out"}) || !p.OnlyInterests || !reflect.DeepEqual(p.NotifyTypes, changedigest.DefaultNotifyTypes) ||
		!reflect.DeepEqual(p.IgnoreText, w.IgnoreText) || p.MinSignificance != 0.1 {
		t.Errorf("patched filters: %+v", p)
	}
	id := fmt.Sprintf("/watches/%d", w.ID)
	c.callErr("PATCH", id, "application/json", []byte(`{"ignore_text":["/a(/"]}`), 400, "invalid", `ignore text "/a(/" is not a valid regular expression`)
	c.callErr("PATCH", id, "application/json", []byte(`{"min_significance":2}`), 400, "invalid", "minimum significance 2 is not between 0 and 1")
	c.callErr("PATCH", id, "application/json", []byte(`{"notify_types":["visual"]}`), 400, "invalid", `unknown change type "visual"`)
	c.callErr("PATCH", id, "application/json", []byte(`{"trigger_text":["a\nb"]}`), 400, "invalid", "spans several lines")
	var after apiWatch
	c.call("GET", id, nil, http.StatusOK, &after)
	if !reflect.DeepEqual(after, p) {
		t.Errorf("a rejected PATCH changed the watch:\n%+v\nwant %+v", after, p)
	}
}

func TestFilterForm(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("ann", "correct horse battery")
	w := e.mustWatch(u, "https://news.example.org/")
	c := e.login("ann", "correct horse battery")
	path := fmt.Sprintf("/watches/%d", w.ID)
	form := func(extra url.Values) url.Values {
		v := url.Values{"url": {w.URL}, "category": {"news"}, "types_shown": {"1"}, "notify_types": {"content", "behavioural"}}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	resp, body := c.post(path, form(url.Values{"ignore_text": {"/x(/"}}))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not a valid regular expression") {
		t.Errorf("bad ignore text: status %d", resp.StatusCode)
	}
	resp, body = c.post(path, form(url.Values{"min_significance": {"a lot"}}))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "minimum significance: &#34;a lot&#34; is not a number") {
		t.Errorf("bad significance: status %d", resp.StatusCode)
	}
	resp, _ = c.post(path, url.Values{"url": {w.URL}, "types_shown": {"1"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no change type chosen: status %d, want 400", resp.StatusCode)
	}
	resp, _ = c.post(path, form(url.Values{"ignore_text": {"Advertisement\r\n/\\d+ views/\r\n"}, "trigger_text": {"sold out"},
		"min_significance": {"0.05"}, "show_noise": {"1"}}))
	if resp.StatusCode >= 400 {
		t.Fatalf("good filters: status %d", resp.StatusCode)
	}
	got, err := e.store.Watch(context.Background(), u.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.IgnoreText, []string{"Advertisement", `/\d+ views/`}) || !reflect.DeepEqual(got.TriggerText, []string{"sold out"}) ||
		got.MinSignificance != 0.05 || !got.ShowNoise || got.OnlyInterests ||
		!reflect.DeepEqual(got.NotifyTypes, []changedigest.ChangeType{"content", "behavioural"}) {
		t.Errorf("saved filters: %+v", got)
	}
	_, edit := c.get(path + "/edit")
	mustContain(t, edit, "Advertisement\n/\\d&#43; views/</textarea>", `value="content" checked`, `value="structural">`, `name="show_noise" value="1" checked`)
}
