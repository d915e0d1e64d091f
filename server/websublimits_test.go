package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// callbacks is a WebSub subscriber's callback server that answers every
// verification as answer says (by default: echo the challenge), and
// counts the verifications it sees, and the most under way at once.
type callbacks struct {
	*httptest.Server
	answer func(w http.ResponseWriter, r *http.Request)

	mu        sync.Mutex
	now, peak int
	seen      int
}

func newCallbacks(t *testing.T) *callbacks {
	c := &callbacks{answer: func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Query().Get("hub.challenge"))
	}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.now++
		c.seen++
		c.peak = max(c.peak, c.now)
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.now--
			c.mu.Unlock()
		}()
		c.answer(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *callbacks) counts() (seen, peak int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen, c.peak
}

// hubAsk posts a WebSub request from the loopback address ip and returns
// the status, the body and the Retry-After header.
func hubAsk(t *testing.T, e *testEnv, ip, mode, topic, callback string) (int, string, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	form := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.callback": {callback}}
	resp, err := c.PostForm(e.srv.Render.URL(HubPath), form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header.Get("Retry-After")
}

// TestWebSubRateLimits: requests are limited per address (30 at once,
// then 60 a minute) and per feed (30 at once, then 30 a minute, whatever
// the topic URL under the feed's token); the limited get 429 with a
// Retry-After, the others go on.
func TestWebSubRateLimits(t *testing.T) {
	e := mustServer(t)
	hub, _ := withHub(e)
	ann := e.mustUser("ann", "ann-password")
	bob := e.mustUser("bob", "bob-password")
	cb := newCallbacks(t)
	cb.answer = func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	feed := func(u *changedigest.User, path string) string {
		return e.srv.Render.URL("/feeds/" + u.FeedToken + path)
	}
	// Unsubscriptions: no cap applies to them, each costs a verification.
	for i := range 30 {
		if st, body, _ := hubAsk(t, e, "127.0.0.40", "unsubscribe", feed(ann, "/atom.xml"), cb.URL+"/?n="+strconv.Itoa(i)); st != http.StatusAccepted {
			t.Fatalf("request %d from one address: %d %s", i, st, body)
		}
	}
	st, body, after := hubAsk(t, e, "127.0.0.40", "unsubscribe", feed(bob, "/atom.xml"), cb.URL+"/?n=x")
	if st != http.StatusTooManyRequests || after != "1" || !strings.Contains(body, "from your address") {
		t.Errorf("the 31st request from one address: %d %q, Retry-After %q; want 429, from your address, 1", st, body, after)
	}
	// Another address, the same feed under another topic URL: the feed's
	// limit holds.
	st, body, after = hubAsk(t, e, "127.0.0.41", "unsubscribe", feed(ann, "/tags/anything.json"), cb.URL+"/?n=y")
	if st != http.StatusTooManyRequests || after != "2" || !strings.Contains(body, "for this feed") {
		t.Errorf("the 31st request for one feed: %d %q, Retry-After %q; want 429, for this feed, 2", st, body, after)
	}
	// Another address and another feed go on.
	if st, body, _ := hubAsk(t, e, "127.0.0.41", "unsubscribe", feed(bob, "/rss.xml"), cb.URL+"/?n=z"); st != http.StatusAccepted {
		t.Errorf("another feed from another address: %d %s", st, body)
	}
	// The limits refill with time.
	e.setNow(e.clock().Add(2 * time.Second))
	if st, body, _ := hubAsk(t, e, "127.0.0.40", "unsubscribe", feed(ann, "/atom.xml"), cb.URL+"/?n=later"); st != http.StatusAccepted {
		t.Errorf("two seconds later: %d %s", st, body)
	}
	hub.Wait()
	if seen, _ := cb.counts(); seen != 32 {
		t.Errorf("the callback saw %d verifications, want 32 (one per request taken)", seen)
	}
}

// TestWebSubCaps: at most 20 live subscriptions per topic and 50 per
// callback host (its registrable domain or IP address); a renewal is not
// a new one; a refusal names the cap.
func TestWebSubCaps(t *testing.T) {
	e := mustServer(t)
	hub, _ := withHub(e)
	ann := e.mustUser("ann", "ann-password")
	cb := newCallbacks(t)
	feed := func(path string) string { return e.srv.Render.URL("/feeds/" + ann.FeedToken + path) }
	ask := func(topic, callback string) (int, string) {
		t.Helper()
		st, body, _ := hubAsk(t, e, "127.0.0.42", "subscribe", topic, callback)
		return st, body
	}
	// Twenty subscribers of the Atom feed, then a twenty-first.
	for i := range 20 {
		if st, body := ask(feed("/atom.xml"), cb.URL+"/atom?n="+strconv.Itoa(i)); st != http.StatusAccepted {
			t.Fatalf("subscriber %d: %d %s", i, st, body)
		}
	}
	hub.Wait()
	if st, body := ask(feed("/atom.xml"), cb.URL+"/atom?n=20"); st != http.StatusForbidden || !strings.Contains(body, "20 subscriptions, the most this hub keeps for one topic") {
		t.Errorf("a 21st subscriber of one topic: %d %q, want 403 naming the cap per topic", st, body)
	}
	// A renewal is taken.
	if st, body := ask(feed("/atom.xml"), cb.URL+"/atom?n=0"); st != http.StatusAccepted {
		t.Errorf("a renewal at the cap: %d %s", st, body)
	}
	hub.Wait()
	// Thirty more on this host, under other topics (the limits per
	// address and feed refilled), then one too many.
	e.setNow(e.clock().Add(time.Minute))
	for i := range 30 {
		topic := feed("/rss.xml")
		if i >= 15 {
			topic = feed("/feed.json")
		}
		if st, body := ask(topic, cb.URL+"/more?n="+strconv.Itoa(i)); st != http.StatusAccepted {
			t.Fatalf("subscription %d on the host: %d %s", 20+i, st, body)
		}
	}
	hub.Wait()
	e.setNow(e.clock().Add(time.Minute))
	if st, body := ask(feed("/tags/sport.xml"), cb.URL+"/more?n=30"); st != http.StatusForbidden || !strings.Contains(body, "callbacks on 127.0.0.1 hold 50 subscriptions, the most this hub keeps for one callback host") {
		t.Errorf("a 51st subscription on one host: %d %q, want 403 naming the cap per host", st, body)
	}
	// The same server under another name is another host.
	other := strings.Replace(cb.URL, "127.0.0.1", "localhost", 1)
	if st, body := ask(feed("/tags/sport.xml"), other+"/other"); st != http.StatusAccepted {
		t.Errorf("a callback on another host: %d %s", st, body)
	}
	hub.Wait()
	subs, err := e.store.Subscriptions(context.Background(), ann.ID)
	if err != nil || len(subs) != 51 {
		t.Errorf("%d subscriptions stored (%v), want 51", len(subs), err)
	}
	// Ended leases free their places.
	e.setNow(e.clock().Add(11 * 24 * time.Hour))
	if st, body := ask(feed("/atom.xml"), cb.URL+"/atom?n=20"); st != http.StatusAccepted {
		t.Errorf("after the leases ended: %d %s", st, body)
	}
}

// TestWebSubCapsCountVerificationsUnderWay: requests waiting for their
// verification count against the caps (per user here), so a burst of
// requests cannot pass a cap before any is verified; a request for a
// topic and callback under verification makes no second one.
func TestWebSubCapsCountVerificationsUnderWay(t *testing.T) {
	e := mustServer(t)
	hub, _ := withHub(e)
	hub.MaxPerUser = 3
	ann := e.mustUser("ann", "ann-password")
	cb := newCallbacks(t)
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	cb.answer = func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, r.URL.Query().Get("hub.challenge"))
	}
	feed := func(path string) string { return e.srv.Render.URL("/feeds/" + ann.FeedToken + path) }
	for i, path := range []string{"/atom.xml", "/rss.xml", "/feed.json"} {
		if st, body, _ := hubAsk(t, e, "127.0.0.43", "subscribe", feed(path), cb.URL+"/?n="+strconv.Itoa(i)); st != http.StatusAccepted {
			t.Fatalf("request %d: %d %s", i, st, body)
		}
	}
	if st, body, _ := hubAsk(t, e, "127.0.0.43", "subscribe", feed("/atom.xml"), cb.URL+"/?n=0"); st != http.StatusAccepted {
		t.Errorf("the same request again while it is verified: %d %s", st, body)
	}
	if st, body, _ := hubAsk(t, e, "127.0.0.43", "unsubscribe", feed("/atom.xml"), cb.URL+"/?n=0"); st != http.StatusConflict || !strings.Contains(body, "is verifying hub.mode=subscribe") {
		t.Errorf("an unsubscription while the subscription is verified: %d %q, want 409", st, body)
	}
	st, body, _ := hubAsk(t, e, "127.0.0.43", "subscribe", feed("/tags/x.xml"), cb.URL+"/?n=3")
	if st != http.StatusForbidden || !strings.Contains(body, "the feeds of this topic's owner have 3 subscriptions, the most this hub keeps for one user's feeds") {
		t.Errorf("a fourth request while three are verified: %d %q, want 403 naming the cap per user", st, body)
	}
	for range 3 {
		<-arrived
	}
	close(release)
	hub.Wait()
	if seen, _ := cb.counts(); seen != 3 {
		t.Errorf("%d verifications made, want 3", seen)
	}
	if subs, _ := e.store.Subscriptions(context.Background(), ann.ID); len(subs) != 3 {
		t.Errorf("%d subscriptions stored, want 3", len(subs))
	}
}

// TestWebSubVerificationsAreBounded: the hub verifies at most 8 requests
// at once and lets 64 more wait; beyond them it answers 503 with a
// Retry-After, and no request makes a connection of its own.
func TestWebSubVerificationsAreBounded(t *testing.T) {
	e := mustServer(t)
	hub, _ := withHub(e)
	cb := newCallbacks(t)
	arrived, release := make(chan struct{}, 100), make(chan struct{})
	cb.answer = func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		http.NotFound(w, r)
	}
	// 72 unsubscriptions, over three addresses and three feeds (under
	// their limits), with verifications held by the callback.
	var users []*changedigest.User
	for _, name := range []string{"ann", "bob", "cat", "dan"} {
		users = append(users, e.mustUser(name, name+"-password"))
	}
	for i := range 72 {
		topic := e.srv.Render.URL("/feeds/" + users[i%3].FeedToken + "/atom.xml")
		ip := "127.0.0." + strconv.Itoa(50+i%3)
		if st, body, _ := hubAsk(t, e, ip, "unsubscribe", topic, cb.URL+"/?n="+strconv.Itoa(i)); st != http.StatusAccepted {
			t.Fatalf("request %d: %d %s", i, st, body)
		}
	}
	st, body, after := hubAsk(t, e, "127.0.0.53", "unsubscribe", e.srv.Render.URL("/feeds/"+users[3].FeedToken+"/atom.xml"), cb.URL+"/?n=72")
	if st != http.StatusServiceUnavailable || after == "" || !strings.Contains(body, "72 subscription requests waiting") {
		t.Errorf("a request beyond those waiting: %d %q, Retry-After %q; want 503 with a Retry-After", st, body, after)
	}
	for range 8 {
		<-arrived
	}
	close(release)
	hub.Wait()
	if seen, peak := cb.counts(); seen != 72 || peak != 8 {
		t.Errorf("the callback saw %d verifications, %d at once; want 72, 8 at once", seen, peak)
	}
}

// TestWebSubFailuresSummarised: failed verifications are logged as one
// line with their counts by reason, not one line each.
func TestWebSubFailuresSummarised(t *testing.T) {
	e := mustServer(t)
	hub, _ := withHub(e)
	var logs bytes.Buffer
	var mu sync.Mutex
	hub.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	ann := e.mustUser("ann", "ann-password")
	topic := e.srv.Render.URL("/feeds/" + ann.FeedToken + "/atom.xml")
	cb := newCallbacks(t)
	cb.answer = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wrong" {
			io.WriteString(w, "not the challenge")
			return
		}
		http.Error(w, "no", http.StatusGone)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there any more
	callbacks := []string{cb.URL + "/a", cb.URL + "/b", cb.URL + "/c", cb.URL + "/wrong", gone.URL + "/"}
	for i, c := range callbacks {
		if st, body, _ := hubAsk(t, e, "127.0.0.44", "subscribe", topic, c); st != http.StatusAccepted {
			t.Fatalf("request %d: %d %s", i, st, body)
		}
	}
	hub.Wait()
	hub.Close()
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want one summary:\n%s", len(lines), out)
	}
	for _, want := range []string{`msg="websub verifications failed"`, " failed=5 ", " refused=3 ", " no_challenge=1 ", " unreachable=1 ", " hosts=1 ", " top_host=127.0.0.1 ", " top_host_failed=5 "} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the summary lacks %q:\n%s", want, lines[0])
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
