package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
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

// hookReceiver records the bodies posted to it and answers with status.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	status int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{status: 200}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, b)
		st := h.status
		h.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

func withDispatcher(e *testEnv) *notify.Dispatcher {
	d := notify.NewDispatcher(e.store, e.srv.Notify, nil) // loopback receivers: no address guard
	d.Now, d.Logger = e.clock, slog.New(slog.NewTextHandler(tlogWriter{e.t}, nil))
	e.srv.Dispatch = d
	return d
}

// tlogWriter sends log lines to the test's log, shown when it fails.
type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func TestChannelsAPI(t *testing.T) {
	e := mustServer(t)
	withDispatcher(e)
	ann := e.mustUser("ann", "ann-password")
	bob := e.mustUser("bob", "bob-password")
	w := e.mustWatch(ann, "http://example.org/a", "sport")
	hook := newHookReceiver(t)
	c := e.api(ann)

	const secret = "a-long-webhook-signing-secret-1234"
	var ch apiChannel
	resp := c.call("POST", "/channels", map[string]any{"kind": "webhook", "name": "mine", "url": hook.URL + "/in",
		"secret": secret, "watches": []int64{w.ID}, "select": "interests"}, http.StatusCreated, &ch)
	if loc := resp.Header.Get("Location"); !strings.HasSuffix(loc, "/api/v1/channels/1") {
		t.Errorf("Location %q", loc)
	}
	if ch.Secret != "…1234" || ch.Select != changedigest.SelectInterests || len(ch.Watches) != 1 {
		t.Errorf("created %+v", ch)
	}
	_, raw := c.raw("GET", "/channels", "", nil)
	if strings.Contains(string(raw), secret) || strings.Contains(string(raw), secret[:16]) {
		t.Fatalf("the channel list shows the secret: %s", raw)
	}
	// A Slack URL is itself a credential.
	slackURL := "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXabcd"
	c.call("POST", "/channels", map[string]any{"kind": "slack", "url": slackURL}, http.StatusCreated, nil)
	_, raw = c.raw("GET", "/channels", "", nil)
	if strings.Contains(string(raw), "XXXXXXXX") || !strings.Contains(string(raw), "hooks.slack.com/services/…abcd") {
		t.Errorf("the Slack URL is shown as %s", raw)
	}

	// Bad input: a clear error, nothing stored.
	c.callErr("POST", "/channels", "application/json", []byte(`{"kind":"pager","url":"https://x.example"}`), 400, changedigest.EINVALID, "unknown channel kind")
	c.callErr("POST", "/channels", "application/json", []byte(`{"kind":"matrix","url":"https://m.example","room":"!r:m.example"}`), 400, changedigest.EINVALID, "access token")
	c.callErr("POST", "/channels", "application/json", []byte(`{"kind":"ntfy","url":"https://user:pw@ntfy.example/t"}`), 400, changedigest.EINVALID, "secret field")
	c.callErr("POST", "/channels", "application/json", []byte(`{"kind":"webhook","url":"https://x.example","watches":[999]}`), 400, changedigest.EINVALID, "no watch 999")
	var list struct{ Channels []apiChannel }
	c.call("GET", "/channels", nil, 200, &list)
	if len(list.Channels) != 2 {
		t.Fatalf("%d channels after refused inputs, want 2", len(list.Channels))
	}

	// PATCH without a secret keeps it; the test message is signed with it.
	c.call("PATCH", "/channels/1", map[string]any{"name": "renamed", "select": "all"}, 200, &ch)
	if ch.Name != "renamed" || ch.Secret != "…1234" {
		t.Errorf("after PATCH %+v", ch)
	}
	var res apiTestResult
	c.call("POST", "/channels/1/test", nil, 200, &res)
	if !res.OK || res.Status != 200 || hook.count() != 1 {
		t.Fatalf("test: %+v, %d bodies", res, hook.count())
	}
	var p notify.Payload
	if err := json.Unmarshal(hook.bodies[0], &p); err != nil || p.Event != "test" {
		t.Errorf("test payload %s", hook.bodies[0])
	}
	hook.mu.Lock()
	hook.status = 500
	hook.mu.Unlock()
	c.call("POST", "/channels/1/test", nil, 200, &res)
	if res.OK || res.Status != 500 || !strings.Contains(res.Error, "500") {
		t.Errorf("failing test: %+v", res)
	}

	// Another user sees none of it.
	b := e.api(bob)
	b.callErr("GET", "/channels/1", "", nil, 404, changedigest.ENOTFOUND)
	b.callErr("POST", "/channels/1/test", "", nil, 404, changedigest.ENOTFOUND)
	b.callErr("DELETE", "/channels/1", "", nil, 404, changedigest.ENOTFOUND)
	c.call("DELETE", "/channels/1", nil, http.StatusNoContent, nil)
	c.callErr("GET", "/channels/1", "", nil, 404, changedigest.ENOTFOUND)
}

func TestChannelsPageShowsDeadDeliveries(t *testing.T) {
	e := mustServer(t)
	d := withDispatcher(e)
	d.MaxAttempts = 1
	ann := e.mustUser("ann", "ann-password")
	w := e.mustWatch(ann, "http://example.org/a")
	hook := newHookReceiver(t)
	hook.status = http.StatusServiceUnavailable
	web := e.login("ann", "ann-password")

	resp, body := web.post("/settings/channels", url.Values{"kind": {"webhook"}, "name": {"hook"}, "url": {hook.URL},
		"secret": {"a-long-webhook-signing-secret-9876"}, "select": {"all"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	resp, body = web.post("/settings/channels", url.Values{"kind": {"matrix"}, "url": {"https://m.example"}, "room": {"general"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not a room id") {
		t.Errorf("a bad Matrix room: %d", resp.StatusCode)
	}

	e.addVersion(w, "<html><body><p>First text of the page.</p></body></html>")
	e.setNow(e.clock().Add(time.Hour))
	e.addVersion(w, "<html><body><p>Second, quite different text of the page.</p></body></html>")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	var ds []changedigest.Delivery
	for time.Now().Before(deadline) {
		ds, _ = e.store.Deliveries(context.Background(), pet.DeliveryFilter{UserID: ann.ID})
		if len(ds) == 1 && ds[0].State == changedigest.DeliveryDead {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if len(ds) != 1 || ds[0].State != changedigest.DeliveryDead {
		t.Fatalf("deliveries %+v, want one dead", ds)
	}

	_, page := web.get("/settings/channels")
	mustContain(t, page, "1 notification could not be delivered", "503 Service Unavailable", "Send a test message", "…9876", "Send again")
	if strings.Contains(page, "a-long-webhook-signing-secret") {
		t.Error("the page shows the secret")
	}

	// Send again from the page: the receiver now answers.
	hook.mu.Lock()
	hook.status = 200
	hook.mu.Unlock()
	resp, _ = web.post("/settings/deliveries/redeliver", url.Values{"delivery": {ds[0].ID}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("redeliver: %d", resp.StatusCode)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- d.Run(ctx) }()
	for time.Now().Before(deadline) {
		if x, _ := e.store.Delivery(context.Background(), ann.ID, ds[0].ID); x != nil && x.State == changedigest.DeliveryDelivered {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if x, _ := e.store.Delivery(context.Background(), ann.ID, ds[0].ID); x == nil || x.State != changedigest.DeliveryDelivered {
		t.Fatalf("after send again: %+v", x)
	}
	resp, _ = web.post("/settings/channels/1/test", nil)
	if resp.StatusCode != http.StatusSeeOther || hook.count() != 3 {
		t.Errorf("test button: %d, %d requests", resp.StatusCode, hook.count())
	}
}

// TestChannelKindsFromThePage sets up an ntfy topic and a Matrix room on
// the settings page and presses their test buttons: the fake ntfy server
// and homeserver on loopback get the messages.
func TestChannelKindsFromThePage(t *testing.T) {
	e := mustServer(t)
	withDispatcher(e)
	e.mustUser("ann", "ann-password")
	web := e.login("ann", "ann-password")
	var mu sync.Mutex
	got := map[string]*http.Request{}
	bodies := map[string]string{}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.Method+" "+r.URL.Path] = r
		bodies[r.Method+" "+r.URL.Path] = string(b)
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/_matrix/") {
			io.WriteString(w, `{"event_id":"$1"}`)
		}
	}))
	defer fake.Close()
	for _, form := range []url.Values{
		{"kind": {"ntfy"}, "name": {"phone"}, "url": {fake.URL + "/ann-changes"}, "priority": {"5"}, "ntfy_tags": {"bell, news"}, "select": {"all"}},
		{"kind": {"matrix"}, "name": {"room"}, "url": {fake.URL}, "room": {"!abc:example.org"}, "secret": {"syt_secret_token_value"}, "select": {"interests"}},
	} {
		if resp, body := web.post("/settings/channels", form); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("create %s: %d %s", form.Get("kind"), resp.StatusCode, body)
		}
	}
	for id := 1; id <= 2; id++ {
		resp, _ := web.post("/settings/channels/"+strconv.Itoa(id)+"/test", nil)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("test %d: %d", id, resp.StatusCode)
		}
		_, page := web.get("/settings/channels")
		if !strings.Contains(page, "Test message sent") {
			t.Errorf("after the test of channel %d the page says no success", id)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	n := got["POST /ann-changes"]
	if n == nil || n.Header.Get("Priority") != "5" || n.Header.Get("Tags") != "bell,news" || !strings.Contains(bodies["POST /ann-changes"], "test message") {
		t.Errorf("ntfy got %+v %q", n, bodies["POST /ann-changes"])
	}
	var m *http.Request
	for k, r := range got {
		if strings.HasPrefix(k, "PUT /_matrix/client/v3/rooms/!abc:example.org/send/m.room.message/") {
			m = r
		}
	}
	if m == nil || m.Header.Get("Authorization") != "Bearer syt_secret_token_value" {
		t.Errorf("the homeserver got %v", got)
	}
	_, page := web.get("/settings/channels")
	if strings.Contains(page, "syt_secret_token_value") {
		t.Error("the page shows the Matrix token")
	}

	// Edit the Matrix channel: empty address and token keep theirs.
	resp, body := web.post("/settings/channels/2", url.Values{"name": {"team"}, "select": {"significant"}, "tags": {"work, sport"}, "room": {"!abc:example.org"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", resp.StatusCode, body)
	}
	c, err := e.store.Channel(context.Background(), pet.AnyUser, 2)
	if err != nil || c.Name != "team" || c.Select != changedigest.SelectSignificant || strings.Join(c.Tags, ",") != "work,sport" ||
		c.URL != fake.URL || c.Secret != "syt_secret_token_value" {
		t.Errorf("after the edit: %+v, %v", c, err)
	}
	resp, body = web.post("/settings/channels/1", url.Values{"name": {"phone"}, "priority": {"9"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not changed") || !strings.Contains(body, "priority 9") {
		t.Errorf("a bad edit: %d", resp.StatusCode)
	}
	if c, _ := e.store.Channel(context.Background(), pet.AnyUser, 1); c.Priority != 5 {
		t.Errorf("a refused edit changed the channel: %+v", c)
	}
}

// redeliverStore is a store that makes deliveries pending again itself,
// as a cluster node's does (the node holding the delivery sends it).
type redeliverStore struct {
	Store
	asked []string
}

func (s *redeliverStore) Redeliver(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error) {
	s.asked = append(s.asked, id)
	if id != "d1" {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "delivery %q not found", id)
	}
	return &changedigest.Delivery{ID: id, UserID: userID, State: changedigest.DeliveryPending}, nil
}

// TestRedeliverThroughTheStore sends a delivery again, from the API and
// from the page, through a store that does it (a cluster node's), with
// no dispatcher in this server.
func TestRedeliverThroughTheStore(t *testing.T) {
	e := mustServer(t)
	rs := &redeliverStore{Store: e.srv.Store}
	e.srv.Store = rs
	ann := e.mustUser("ann", "ann-password")
	c := e.api(ann)
	var d changedigest.Delivery
	c.call("POST", "/deliveries/d1/redeliver", nil, http.StatusOK, &d)
	if d.ID != "d1" || d.State != changedigest.DeliveryPending {
		t.Errorf("redelivered %+v", d)
	}
	c.callErr("POST", "/deliveries/zz/redeliver", "", nil, http.StatusNotFound, changedigest.ENOTFOUND)
	web := e.login("ann", "ann-password")
	if resp, body := web.post("/settings/deliveries/redeliver", url.Values{"delivery": {"d1"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("send again from the page: %d %s", resp.StatusCode, body)
	}
	if strings.Join(rs.asked, " ") != "d1 zz d1" {
		t.Errorf("the store was asked for %v", rs.asked)
	}
}
