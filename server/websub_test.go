package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
)

// subscriber is a WebSub subscriber that follows the spec: it answers a
// verification of intent for a topic it asked for by echoing
// hub.challenge (and refuses others with 404), and takes content
// distributions, checking X-Hub-Signature against its secret.
type subscriber struct {
	*httptest.Server
	t      *testing.T
	secret string
	mu     sync.Mutex
	want   map[string]string // topic → mode asked for
	leases []int
	got    []distribution
	bad    []string
}

type distribution struct {
	ctype, body string
	links       []string
}

func newSubscriber(t *testing.T, secret string) *subscriber {
	s := &subscriber{t: t, secret: secret, want: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.Method {
		case http.MethodGet:
			q := r.URL.Query()
			if q.Get("hub.mode") == "" || s.want[q.Get("hub.topic")] != q.Get("hub.mode") || q.Get("hub.challenge") == "" {
				http.NotFound(w, r)
				return
			}
			if q.Get("hub.mode") == "subscribe" {
				n, err := strconv.Atoi(q.Get("hub.lease_seconds"))
				if err != nil {
					s.bad = append(s.bad, "verification without a lease")
				}
				s.leases = append(s.leases, n)
			}
			delete(s.want, q.Get("hub.topic"))
			io.WriteString(w, q.Get("hub.challenge"))
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			if s.secret != "" {
				m := hmac.New(sha256.New, []byte(s.secret))
				m.Write(body)
				if r.Header.Get("X-Hub-Signature") != "sha256="+hex.EncodeToString(m.Sum(nil)) {
					s.bad = append(s.bad, "bad signature "+r.Header.Get("X-Hub-Signature"))
				}
			}
			s.got = append(s.got, distribution{r.Header.Get("Content-Type"), string(body), r.Header.Values("Link")})
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// ask sends a subscription request to the hub as a subscriber does.
func (s *subscriber) ask(hub, mode, topic string, lease int) (int, string) {
	s.mu.Lock()
	s.want[topic] = mode
	s.mu.Unlock()
	form := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.callback": {s.URL + "/cb?feed=1"}}
	if s.secret != "" {
		form.Set("hub.secret", s.secret)
	}
	if lease > 0 {
		form.Set("hub.lease_seconds", strconv.Itoa(lease))
	}
	resp, err := http.PostForm(hub, form)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *subscriber) received() []distribution {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]distribution(nil), s.got...)
}

func withHub(e *testEnv) (*notify.Hub, *notify.Dispatcher) {
	d := withDispatcher(e)
	h := notify.NewHub(e.store, e.srv.Notify, nil, e.srv.Render.URL(HubPath))
	h.Now, h.Logger = e.clock, d.Logger
	d.Hub, e.srv.Hub = h, h
	e.t.Cleanup(func() { h.Close() })
	return h, d
}

// runUntil runs the dispatcher until cond holds (10 s at most).
func runUntil(t *testing.T, e *testEnv, d *notify.Dispatcher, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	d.Wake()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	ds, _ := e.store.Deliveries(context.Background(), pet.DeliveryFilter{UserID: 1})
	t.Fatalf("timed out; deliveries %+v", ds)
}

// TestWebSubFlow follows the spec's flow: the feed names its hub and
// itself; the subscriber subscribes, the hub verifies the intent and
// stores the lease; a new version is distributed to the callback as a
// signed feed of the new entry; the subscriber unsubscribes, the hub
// verifies, and the next version is not sent.
func TestWebSubFlow(t *testing.T) {
	e := mustServer(t)
	hub, d := withHub(e)
	ann := e.mustUser("ann", "ann-password")
	w := e.mustWatch(ann, "http://example.org/club", "sport")
	e.addVersion(w, "<html><body><p>Training is on Tuesday evening.</p></body></html>")
	topic := e.srv.Render.URL("/feeds/" + ann.FeedToken + "/atom.xml")
	hubURL := e.srv.Render.URL(HubPath)

	// Discovery: the feed advertises the hub and itself.
	_, feed := e.client().get("/feeds/" + ann.FeedToken + "/atom.xml")
	mustContain(t, feed, `<link rel="hub" href="`+hubURL+`"></link>`, `<link rel="self" type="application/atom+xml" href="`+topic+`"></link>`)

	sub := newSubscriber(t, "subscriber-secret")
	if code, body := sub.ask(hubURL, "subscribe", topic, 3600); code != http.StatusAccepted {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	hub.Wait()
	subs, err := e.store.Subscriptions(context.Background(), ann.ID)
	if err != nil || len(subs) != 1 {
		t.Fatalf("subscriptions %+v, %v", subs, err)
	}
	if subs[0].Lease != 3600 || !subs[0].Expires.Equal(e.clock().Add(time.Hour)) || len(sub.leases) != 1 || sub.leases[0] != 3600 {
		t.Errorf("lease: %+v, verified with %v", subs[0], sub.leases)
	}
	// A JSON Feed subscriber of the tag feed too (no secret).
	jsonTopic := e.srv.Render.URL("/feeds/" + ann.FeedToken + "/tags/sport.json")
	sub2 := newSubscriber(t, "")
	if code, body := sub2.ask(hubURL, "subscribe", jsonTopic, 0); code != http.StatusAccepted {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	hub.Wait()

	e.setNow(e.clock().Add(time.Minute))
	e.addVersion(w, "<html><body><p>Training moves to Thursday evening at the new stadium.</p></body></html>")
	runUntil(t, e, d, func() bool { return len(sub.received()) == 1 && len(sub2.received()) == 1 })
	got := sub.received()[0]
	if len(sub.bad) > 0 {
		t.Errorf("subscriber complaints: %v", sub.bad)
	}
	if !strings.HasPrefix(got.ctype, "application/atom+xml") {
		t.Errorf("content type %q", got.ctype)
	}
	links := strings.Join(got.links, ", ")
	if !strings.Contains(links, "<"+hubURL+`>; rel="hub"`) || !strings.Contains(links, "<"+topic+`>; rel="self"`) {
		t.Errorf("Link headers %q", links)
	}
	var doc struct {
		Entries []struct {
			ID      string `xml:"id"`
			Content string `xml:"content"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal([]byte(got.body), &doc); err != nil || len(doc.Entries) != 1 ||
		!strings.Contains(doc.Entries[0].Content, "Thursday") || doc.Entries[0].ID != e.srv.Render.EntryID(w, 2) {
		t.Errorf("distribution: %v %.300s", err, got.body)
	}
	var jf struct {
		Version string
		Items   []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(sub2.received()[0].body), &jf); err != nil || len(jf.Items) != 1 || jf.Items[0].ID != e.srv.Render.EntryID(w, 2) {
		t.Errorf("JSON distribution: %v %+v", err, jf)
	}

	// Unsubscribe: verified, then nothing more is sent.
	if code, body := sub.ask(hubURL, "unsubscribe", topic, 0); code != http.StatusAccepted {
		t.Fatalf("unsubscribe: %d %s", code, body)
	}
	hub.Wait()
	if subs, _ := e.store.Subscriptions(context.Background(), ann.ID); len(subs) != 1 || subs[0].Topic != jsonTopic {
		t.Fatalf("after unsubscribe: %+v", subs)
	}
	e.setNow(e.clock().Add(time.Minute))
	e.addVersion(w, "<html><body><p>Training is cancelled this week because of the storm.</p></body></html>")
	runUntil(t, e, d, func() bool { return len(sub2.received()) == 2 })
	if n := len(sub.received()); n != 1 {
		t.Errorf("the unsubscribed callback got %d distributions", n)
	}

	// Settings list the subscribers.
	web := e.login("ann", "ann-password")
	_, page := web.get("/settings")
	u2, _ := url.Parse(sub2.URL)
	mustContain(t, page, "<strong>"+u2.Host+"</strong>: json feed of tag sport, until")

	// New feed addresses end the subscriptions to the old ones.
	if resp, _ := web.post("/settings/feed-token", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("rotate the feed token: %d", resp.StatusCode)
	}
	e.setNow(e.clock().Add(time.Minute))
	e.addVersion(w, "<html><body><p>Training is back on Tuesday, the storm has passed.</p></body></html>")
	runUntil(t, e, d, func() bool {
		subs, _ := e.store.Subscriptions(context.Background(), ann.ID)
		return len(subs) == 0
	})
	if n := len(sub2.received()); n != 2 {
		t.Errorf("a subscriber of the old address got %d distributions", n)
	}
}

func TestWebSubRefusals(t *testing.T) {
	e := mustServer(t)
	hub, _ := withHub(e)
	ann := e.mustUser("ann", "ann-password")
	hubURL := e.srv.Render.URL(HubPath)
	sub := newSubscriber(t, "")
	for _, tt := range []struct {
		name, mode, topic string
		want              int
		msg               string
	}{
		{"unknown token", "subscribe", e.srv.Render.URL("/feeds/nosuchtoken/atom.xml"), 404, "no such feed"},
		{"not a feed", "subscribe", e.srv.Render.URL("/watches/1"), 400, "not a feed of this service"},
		{"other site", "subscribe", "https://elsewhere.example/feed.xml", 400, "not a feed of this service"},
		{"bad mode", "publish", e.srv.Render.URL("/feeds/" + ann.FeedToken + "/atom.xml"), 400, "hub.mode"},
		{"other user's watch", "subscribe", e.srv.Render.URL("/feeds/" + ann.FeedToken + "/watches/99.xml"), 404, "not found"},
	} {
		code, body := sub.ask(hubURL, tt.mode, tt.topic, 0)
		if code != tt.want || !strings.Contains(body, tt.msg) {
			t.Errorf("%s: %d %q, want %d %q", tt.name, code, body, tt.want, tt.msg)
		}
	}
	// A callback that does not echo the challenge gets no subscription.
	topic := e.srv.Render.URL("/feeds/" + ann.FeedToken + "/rss.xml")
	form := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {sub.URL + "/elsewhere"}}
	sub.mu.Lock()
	sub.want = map[string]string{} // it did not ask
	sub.mu.Unlock()
	resp, err := http.PostForm(hubURL, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hub.Wait()
	if subs, _ := e.store.Subscriptions(context.Background(), ann.ID); len(subs) != 0 {
		t.Errorf("an unverified subscription was stored: %+v", subs)
	}
	// Leases are clamped and expire.
	sub.ask(hubURL, "subscribe", topic, 999999999)
	hub.Wait()
	subs, _ := e.store.Subscriptions(context.Background(), ann.ID)
	if len(subs) != 1 || subs[0].Lease != 30*24*3600 {
		t.Fatalf("clamped lease: %+v", subs)
	}
	e.setNow(e.clock().Add(31 * 24 * time.Hour))
	if n, err := hub.Expire(context.Background()); n != 1 || err != nil {
		t.Errorf("expire: %d, %v", n, err)
	}
	_ = changedigest.ENOTFOUND
}

// TestFeedFormats serves each feed as Atom, RSS and JSON Feed, and the
// pages name all three in their <head>.
func TestFeedFormats(t *testing.T) {
	e := mustServer(t)
	withHub(e)
	ann := e.mustUser("ann", "ann-password")
	w := e.mustWatch(ann, "http://example.org/club", "sport")
	e.addVersion(w, "<html><body><p>Training is on Tuesday evening.</p></body></html>")
	e.setNow(e.clock().Add(time.Hour))
	e.addVersion(w, "<html><body><p>Training moves to Thursday evening at the new stadium.</p></body></html>")
	c := e.client()
	base := "/feeds/" + ann.FeedToken
	for _, tt := range []struct{ path, ctype, want string }{
		{"/atom.xml", "application/atom+xml", `<link rel="alternate" type="application/feed+json" href="` + e.srv.Render.URL(base+"/feed.json")},
		{"/rss.xml", "application/rss+xml", `<atom:link rel="self" type="application/rss+xml" href="` + e.srv.Render.URL(base+"/rss.xml")},
		{"/feed.json", "application/feed+json", `"feed_url": "` + e.srv.Render.URL(base+"/feed.json")},
		{"/watches/" + strconv.FormatInt(w.ID, 10) + ".rss", "application/rss+xml", "Thursday evening"},
		{"/watches/" + strconv.FormatInt(w.ID, 10) + ".json", "application/feed+json", `"version": "https://jsonfeed.org/version/1.1"`},
		{"/tags/sport.json", "application/feed+json", "Thursday evening"},
		{"/tags/sport.rss", "application/rss+xml", `<atom:link rel="hub" href="` + e.srv.Render.URL(HubPath)},
	} {
		resp, body := c.get(base + tt.path)
		links := strings.Join(resp.Header.Values("Link"), ", ")
		if !strings.Contains(links, "<"+e.srv.Render.URL(HubPath)+`>; rel="hub"`) || !strings.Contains(links, "<"+e.srv.Render.URL(base+tt.path)+`>; rel="self"`) {
			t.Errorf("%s: Link headers %q", tt.path, links)
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.ctype) || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s, want %s with %q:\n%.400s", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.ctype, tt.want, body)
		}
	}
	if resp, _ := c.get("/feeds/wrongtoken/feed.json"); resp.StatusCode != 404 {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}
	web := e.login("ann", "ann-password")
	for _, page := range []string{"/", "/tags/sport", "/watches/" + strconv.FormatInt(w.ID, 10)} {
		_, body := web.get(page)
		mustContain(t, body, `<link rel="alternate" type="application/rss+xml" title="RSS" href="`,
			`<link rel="alternate" type="application/feed+json" title="JSON Feed" href="`)
	}
}
