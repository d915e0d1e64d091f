package notify

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/smtptest"
	"github.com/changedigest/changedigest/pet"
)

// receiver is an HTTP endpoint on loopback that records what it is sent.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
	// answer, when set, writes the response (200 with no body otherwise).
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

type received struct {
	method, path string
	header       http.Header
	body         []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, received{r.Method, r.URL.EscapedPath(), r.Header.Clone(), body})
		n := len(rc.reqs)
		answer := rc.answer
		rc.mu.Unlock()
		if answer != nil {
			answer(w, r, n)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

func (f *fixture) dispatcher() *Dispatcher {
	d := NewDispatcher(f.store, f.n, nil)
	d.Now = func() time.Time { return f.now }
	d.Logger = slog.New(slog.DiscardHandler)
	return d
}

func (f *fixture) channel(t *testing.T, c changedigest.Channel) *changedigest.Channel {
	t.Helper()
	c.UserID = f.user.ID
	if err := f.store.CreateChannel(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// drain routes the outbox and makes one try of every due delivery.
func drain(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx := context.Background()
	if err := d.route(ctx); err != nil {
		t.Fatal(err)
	}
	due, err := d.Store.DueDeliveries(ctx, d.now(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range due {
		d.attempt(ctx, &due[i])
	}
}

func (f *fixture) deliveries(t *testing.T) []changedigest.Delivery {
	t.Helper()
	ds, err := f.store.Deliveries(context.Background(), pet.DeliveryFilter{UserID: f.user.ID})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

var footballChange = []changedigest.Change{
	{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Path: "html|body|p", OldText: "Library hours", NewText: "The football club won on Sunday"},
}

// The store keeps a change's noise reason once noise classification is
// stored; until then the payload builders are checked on their own.
func TestPayloadLeavesOutNoise(t *testing.T) {
	changes := append(append([]changedigest.Change(nil), footballChange...),
		changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Path: "html|body|span", OldText: "10:01", NewText: "10:02", Noise: "clock"})
	ev := &event{key: "k", watch: &changedigest.Watch{ID: 1, Title: "News"}, snap: &changedigest.Snapshot{Seq: 2, Changes: changes},
		matches: [][]changedigest.Match{{{Interest: "football", Term: "football", Relation: "term"}}, nil}}
	p := ev.payload(time.Unix(0, 0))
	if len(p.Changes) != 1 || p.Summary != "1 change, matching your interests" {
		t.Errorf("payload changes %+v, summary %q", p.Changes, p.Summary)
	}
	if body := string(ev.ntfyBody()); strings.Contains(body, "10:02") {
		t.Errorf("ntfy body %q holds the noise", body)
	}
	if text := ev.chatText(changedigest.ChannelSlack); strings.Contains(text, "10:02") {
		t.Errorf("chat text %q holds the noise", text)
	}
}

func TestWebhookSignedPayload(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	c := f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL + "/hook", Secret: "s3cret"})
	f.addVersion(t, f.now, []string{"Library hours"}, nil)
	f.addVersion(t, f.now.Add(time.Hour), []string{"The football club won on Sunday"}, footballChange)
	d := f.dispatcher()
	drain(t, d)

	got := rc.got()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d requests, want 1", len(got))
	}
	r := got[0]
	if err := Verify("s3cret", r.header.Get(SignatureHeader), r.body, f.now, 5*time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if err := Verify("wrong", r.header.Get(SignatureHeader), r.body, f.now, 5*time.Minute); err == nil {
		t.Error("a wrong secret verified")
	}
	if err := Verify("s3cret", r.header.Get(SignatureHeader), r.body, f.now.Add(time.Hour), 5*time.Minute); err == nil {
		t.Error("a replay an hour later verified")
	}
	var p Payload
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	wantKey := DeliveryKey(f.watch.ID, 2, "c1")
	if p.ID != wantKey || r.header.Get(IdempotencyHeader) != wantKey {
		t.Errorf("id %q, header %q, want %q", p.ID, r.header.Get(IdempotencyHeader), wantKey)
	}
	if p.Event != "version" || p.Watch.ID != f.watch.ID || p.Version.Seq != 2 || p.Watch.URL != f.watch.URL {
		t.Errorf("payload names %+v %+v", p.Watch, p.Version)
	}
	if len(p.Changes) != 1 || p.Changes[0].NewText != "The football club won on Sunday" {
		t.Errorf("changes %+v: want the one change that is not noise", p.Changes)
	}
	if len(p.Interests) != 1 || p.Interests[0] != "football" || len(p.Changes[0].Matches) == 0 {
		t.Errorf("interests %v, matches %+v", p.Interests, p.Changes)
	}
	if !strings.HasPrefix(p.Version.URL, "http://cd.example.org/watches/") {
		t.Errorf("version link %q", p.Version.URL)
	}
	ds := f.deliveries(t)
	if len(ds) != 1 || ds[0].State != changedigest.DeliveryDelivered || ds[0].ChannelID != c.ID || ds[0].Attempts != 1 {
		t.Fatalf("deliveries %+v", ds)
	}
	// Nothing more to do: a second pass sends nothing.
	drain(t, d)
	if n := len(rc.got()); n != 1 {
		t.Errorf("after a second pass the receiver got %d requests", n)
	}
}

func TestWantsRouting(t *testing.T) {
	w := &changedigest.Watch{ID: 7, UserID: 1, Tags: []string{"sport"}}
	plain := []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpInsert, NewText: "x"}}
	noise := []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: "10:02", Noise: "clock"}}
	match := [][]changedigest.Match{{{Interest: "football", Term: "football", Relation: "term"}}}
	tests := []struct {
		name    string
		c       changedigest.Channel
		changes []changedigest.Change
		sig     float64
		matches [][]changedigest.Match
		want    bool
	}{
		{"all", changedigest.Channel{Select: changedigest.SelectAll}, plain, 0, nil, true},
		{"noise only", changedigest.Channel{Select: changedigest.SelectAll}, noise, 1, match, false},
		{"no change", changedigest.Channel{Select: changedigest.SelectAll}, nil, 1, nil, false},
		{"disabled", changedigest.Channel{Select: changedigest.SelectAll, Disabled: true}, plain, 1, nil, false},
		{"other watch", changedigest.Channel{Select: changedigest.SelectAll, Watches: []int64{8}}, plain, 1, nil, false},
		{"this watch", changedigest.Channel{Select: changedigest.SelectAll, Watches: []int64{8, 7}}, plain, 1, nil, true},
		{"tag", changedigest.Channel{Select: changedigest.SelectAll, Tags: []string{"sport"}}, plain, 1, nil, true},
		{"other tag", changedigest.Channel{Select: changedigest.SelectAll, Tags: []string{"news"}}, plain, 1, nil, false},
		{"significant below", changedigest.Channel{Select: changedigest.SelectSignificant}, plain, 0.1, nil, false},
		{"significant at", changedigest.Channel{Select: changedigest.SelectSignificant}, plain, 0.2, nil, true},
		{"interests without match", changedigest.Channel{Select: changedigest.SelectInterests}, plain, 1, nil, false},
		{"interests with match", changedigest.Channel{Select: changedigest.SelectInterests}, plain, 0, match, true},
		{"interest only in noise", changedigest.Channel{Select: changedigest.SelectInterests}, noise, 0, match, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &changedigest.Snapshot{Changes: tt.changes, Significance: tt.sig}
			if got := Wants(&tt.c, w, snap, tt.matches, DefaultSignificance); got != tt.want {
				t.Errorf("Wants = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWantsWatchFilters: a channel honours the watch's own filters, as
// the feeds do (changedigest.Notable).
func TestWantsWatchFilters(t *testing.T) {
	all := &changedigest.Channel{Select: changedigest.SelectAll}
	sig := &changedigest.Channel{Select: changedigest.SelectSignificant}
	price := []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "Price 10 EUR", NewText: "Price 12 EUR"}}
	clock := []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "Updated 10:02", NewText: "Updated 10:07"}}
	style := []changedigest.Change{{Type: changedigest.ChangeCosmetic, Op: changedigest.OpUpdate, OldText: "a", NewText: "b"}}
	tests := []struct {
		name    string
		c       *changedigest.Channel
		w       changedigest.Watch
		changes []changedigest.Change
		sig     float64
		want    bool
	}{
		{"ignored text only", all, changedigest.Watch{IgnoreText: []string{`/Updated \d+:\d+/`}}, clock, 0.5, false},
		{"ignored text beside a real edit", all, changedigest.Watch{IgnoreText: []string{`/Updated \d+:\d+/`}}, append(clock, price...), 0.5, true},
		{"trigger text appears", all, changedigest.Watch{TriggerText: []string{"12 EUR"}}, price, 0.5, true},
		{"trigger text absent", all, changedigest.Watch{TriggerText: []string{"sold out"}}, price, 0.5, false},
		{"type not told", all, changedigest.Watch{NotifyTypes: []changedigest.ChangeType{changedigest.ChangeContent}}, style, 0.5, false},
		{"watch threshold above", sig, changedigest.Watch{MinSignificance: 0.6}, price, 0.5, false},
		{"watch threshold below", sig, changedigest.Watch{MinSignificance: 0.05}, price, 0.1, true},
		{"noise shown on request", all, changedigest.Watch{ShowNoise: true}, []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, NewText: "43", Noise: "volatile location"}}, 0.5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &changedigest.Snapshot{Changes: tt.changes, Significance: tt.sig}
			if got := Wants(tt.c, &tt.w, snap, nil, DefaultSignificance); got != tt.want {
				t.Errorf("Wants = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRetryAfterBackoffAndDead(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	rc.answer = func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "600")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "broken", http.StatusInternalServerError)
	}
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL})
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	d := f.dispatcher()
	d.MaxAttempts, d.BaseDelay = 3, time.Minute
	drain(t, d)
	ds := f.deliveries(t)
	if len(ds) != 1 || ds[0].State != changedigest.DeliveryPending || ds[0].Attempts != 1 || ds[0].LastStatus != 503 {
		t.Fatalf("after a 503: %+v", ds)
	}
	if wait := ds[0].NextAttempt.Sub(f.now); wait < 600*time.Second {
		t.Errorf("next try in %s, want at least the Retry-After of 600 s", wait)
	}
	// Not due yet: nothing is sent.
	f.now = f.now.Add(5 * time.Minute)
	drain(t, d)
	if n := len(rc.got()); n != 1 {
		t.Fatalf("%d requests before the Retry-After time", n)
	}
	f.now = f.now.Add(6 * time.Minute)
	drain(t, d)
	ds = f.deliveries(t)
	if ds[0].Attempts != 2 || ds[0].State != changedigest.DeliveryPending {
		t.Fatalf("after the second try: %+v", ds[0])
	}
	// The second retry waits BaseDelay·2 with jitter: 1 to 3 minutes.
	if wait := ds[0].NextAttempt.Sub(f.now); wait < time.Minute || wait > 3*time.Minute {
		t.Errorf("back-off after two tries %s, want 1..3 min", wait)
	}
	f.now = f.now.Add(time.Hour)
	drain(t, d)
	ds = f.deliveries(t)
	if ds[0].State != changedigest.DeliveryDead || ds[0].Attempts != 3 || !strings.Contains(ds[0].LastError, "500") {
		t.Fatalf("after three tries: %+v, want dead with the last error", ds[0])
	}
	f.now = f.now.Add(24 * time.Hour)
	drain(t, d)
	if n := len(rc.got()); n != 3 {
		t.Fatalf("a dead delivery was tried again: %d requests", n)
	}
	// Redelivery on demand.
	rc.answer = nil
	if _, err := d.Redeliver(context.Background(), f.user.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	drain(t, d)
	ds = f.deliveries(t)
	if ds[0].State != changedigest.DeliveryDelivered || len(rc.got()) != 4 {
		t.Fatalf("after redelivery: %+v, %d requests", ds[0], len(rc.got()))
	}
	if _, err := d.Redeliver(context.Background(), f.user.ID+1, ds[0].ID); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user redelivered: %v", err)
	}
}

func TestPermanentRefusal(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	rc.answer = func(w http.ResponseWriter, r *http.Request, n int) { http.Error(w, "gone", http.StatusGone) }
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL})
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	d := f.dispatcher()
	drain(t, d)
	if ds := f.deliveries(t); ds[0].State != changedigest.DeliveryDead || ds[0].Attempts != 1 {
		t.Fatalf("after a 410: %+v, want dead at once", ds[0])
	}
}

func TestGuardedClientRefusesPrivateReceivers(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL + "/secret-path"})
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	d := f.dispatcher()
	fetcher := crawl.NewFetcher()
	d.Client = fetcher.Client(5 * time.Second)
	drain(t, d)
	if n := len(rc.got()); n != 0 {
		t.Fatalf("a loopback receiver got %d requests through the guarded client", n)
	}
	ds := f.deliveries(t)
	if ds[0].State != changedigest.DeliveryDead || !strings.Contains(ds[0].LastError, "address") {
		t.Fatalf("delivery %+v: want dead with the refusal", ds[0])
	}
	if strings.Contains(ds[0].LastError, "secret-path") {
		t.Errorf("the error shows the receiver's path: %q", ds[0].LastError)
	}
	// The operator's allow list admits it.
	fetcher.Allow = append(fetcher.Allow, netip.MustParseAddrPort(rc.Listener.Addr().String()))
	d.Client = fetcher.Client(5 * time.Second)
	if _, err := d.Redeliver(context.Background(), f.user.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	drain(t, d)
	if n := len(rc.got()); n != 1 {
		t.Fatalf("after allowing the receiver it got %d requests", n)
	}
}

func TestNtfy(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	rc.answer = func(w http.ResponseWriter, r *http.Request, n int) {
		// ntfy answers a publication with the message as JSON.
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"abc","event":"message","topic":"changes"}`)
	}
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelNtfy, URL: rc.URL + "/changes", Priority: 4,
		NtfyTags: []string{"bell", "news"}, Secret: "tk_token"})
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	drain(t, f.dispatcher())
	got := rc.got()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	if r.method != http.MethodPost || r.path != "/changes" {
		t.Errorf("%s %s, want POST /changes", r.method, r.path)
	}
	for h, want := range map[string]string{"Priority": "4", "Tags": "bell,news", "Authorization": "Bearer tk_token",
		"Title": "★ football: News: Library hours → The football club won on Sunday"} {
		if g := r.header.Get(h); g != want {
			t.Errorf("%s: %q, want %q", h, g, want)
		}
	}
	if !strings.HasPrefix(r.header.Get("Click"), "http://cd.example.org/watches/") {
		t.Errorf("Click %q", r.header.Get("Click"))
	}
	if body := string(r.body); !strings.Contains(body, "{+The **football** club won on Sunday+}") || strings.Contains(body, "10:02") {
		t.Errorf("body %q: want the change, not the noise", body)
	}
}

// homeserver is a fake Matrix homeserver: it accepts m.room.message
// events by PUT with a transaction id, answers a repeated transaction id
// with the same event id (as the client-server API requires) and resolves
// one room alias.
type homeserver struct {
	*httptest.Server
	mu     sync.Mutex
	events map[string]map[string]any // txn id → event
	order  []string
}

func newHomeserver(t *testing.T, token, room string) *homeserver {
	hs := &homeserver{events: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /_matrix/client/v3/rooms/{room}/send/m.room.message/{txn}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"errcode":"M_UNKNOWN_TOKEN","error":"Unknown token"}`)
			return
		}
		if r.PathValue("room") != room {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"errcode":"M_FORBIDDEN","error":"not in room"}`)
			return
		}
		var ev map[string]any
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		hs.mu.Lock()
		txn := r.PathValue("txn")
		if _, ok := hs.events[txn]; !ok {
			hs.events[txn] = ev
			hs.order = append(hs.order, txn)
		}
		hs.mu.Unlock()
		io.WriteString(w, `{"event_id":"$`+txn+`"}`)
	})
	mux.HandleFunc("GET /_matrix/client/v3/directory/room/{alias}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("alias") != "#changes:example.org" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"errcode":"M_NOT_FOUND"}`)
			return
		}
		io.WriteString(w, `{"room_id":"`+room+`","servers":["example.org"]}`)
	})
	hs.Server = httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

func TestMatrix(t *testing.T) {
	f := newFixture(t)
	const room = "!abc:example.org"
	hs := newHomeserver(t, "syt_token", room)
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelMatrix, URL: hs.URL, Room: room, Secret: "syt_token"})
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelMatrix, URL: hs.URL + "/", Room: "#changes:example.org", Secret: "syt_token"})
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelMatrix, URL: hs.URL, Room: room, Secret: "wrong"})
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	d := f.dispatcher()
	drain(t, d)
	hs.mu.Lock()
	n := len(hs.events)
	var ev map[string]any
	if n > 0 {
		ev = hs.events[hs.order[0]]
	}
	hs.mu.Unlock()
	if n != 2 {
		t.Fatalf("the homeserver stored %d events, want 2 (by room id and by alias)", n)
	}
	if ev["msgtype"] != "m.text" || ev["format"] != "org.matrix.custom.html" ||
		!strings.Contains(ev["body"].(string), "The football club won on Sunday") ||
		!strings.Contains(ev["formatted_body"].(string), "<li>") {
		t.Errorf("event %v", ev)
	}
	var dead *changedigest.Delivery
	for _, x := range f.deliveries(t) {
		if x.State == changedigest.DeliveryDead {
			dead = &x
		}
	}
	if dead == nil || dead.LastStatus != 401 || dead.Attempts != 1 {
		t.Fatalf("the channel with a wrong token: %+v, want dead after one 401", dead)
	}
	// A retry of a delivered message reuses its transaction id: the
	// homeserver keeps one event.
	ds := f.deliveries(t)
	for _, x := range ds {
		if x.State == changedigest.DeliveryDelivered {
			if _, err := d.Redeliver(context.Background(), f.user.ID, x.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain(t, d)
	hs.mu.Lock()
	n = len(hs.events)
	hs.mu.Unlock()
	if n != 2 {
		t.Errorf("after redelivery the homeserver has %d events, want still 2", n)
	}
}

func TestChatFormats(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	for _, k := range []changedigest.ChannelKind{changedigest.ChannelSlack, changedigest.ChannelMattermost, changedigest.ChannelDiscord} {
		f.channel(t, changedigest.Channel{Kind: k, URL: rc.URL + "/" + string(k)})
	}
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	drain(t, f.dispatcher())
	got := rc.got()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	for _, r := range got {
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("%s: %v", r.path, err)
		}
		field := "text"
		if r.path == "/discord" {
			field = "content"
		}
		text, _ := m[field].(string)
		if !strings.Contains(text, "football club won") || !strings.Contains(text, "http://cd.example.org/watches/") {
			t.Errorf("%s: %s = %q", r.path, field, text)
		}
		if r.path == "/slack" && !strings.HasPrefix(text, "*<http://") {
			t.Errorf("slack text %q is not a linked headline", text)
		}
	}
}

func TestSendTest(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	c := f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL, Secret: "k"})
	res := f.dispatcher().Test(context.Background(), c)
	if res.Err != nil || res.Status != 200 {
		t.Fatalf("test: %+v", res)
	}
	got := rc.got()
	var p Payload
	if len(got) != 1 || json.Unmarshal(got[0].body, &p) != nil || p.Event != "test" {
		t.Fatalf("test message %+v", got)
	}
	if err := Verify("k", got[0].header.Get(SignatureHeader), got[0].body, f.now, time.Minute); err != nil {
		t.Error(err)
	}
	rc.answer = func(w http.ResponseWriter, r *http.Request, n int) { http.Error(w, "no", http.StatusForbidden) }
	if res := f.dispatcher().Test(context.Background(), c); res.Err == nil || res.Status != 403 {
		t.Errorf("test against a 403: %+v", res)
	}
}

// TestCrashDuringDelivery stops the dispatcher after the receiver has got
// a message but before the outcome is stored, closes the store and opens
// it again: the next dispatcher sends the message again with the same
// idempotency key, and every notification reaches the receiver, once per
// key.
func TestCrashDuringDelivery(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	rc := newReceiver(t)
	rc.answer = func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 2 {
			cancel() // the process dies while the second message is answered
		}
	}
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL})
	for i := range 3 {
		f.addVersion(t, f.now.Add(time.Duration(i)*time.Minute), []string{"a"}, footballChange)
	}
	d := f.dispatcher()
	if err := d.route(ctx); err != nil {
		t.Fatal(err)
	}
	due, _ := f.store.DueDeliveries(ctx, f.now, 100)
	for i := range due {
		d.attempt(ctx, &due[i])
	}
	// Restart.
	dir := f.store.Dir
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	f.store = pet.New(dir)
	f.store.Now = func() time.Time { return f.now }
	if err := f.store.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.n.Store = f.store
	drain(t, f.dispatcher())
	keys := map[string]int{}
	for _, r := range rc.got() {
		keys[r.header.Get(IdempotencyHeader)]++
	}
	if len(keys) != 3 {
		t.Fatalf("the receiver saw keys %v, want 3 distinct", keys)
	}
	for _, x := range f.deliveries(t) {
		if x.State != changedigest.DeliveryDelivered {
			t.Errorf("delivery %s is %s after the restart", x.ID, x.State)
		}
	}
}

// TestEmailPerChange mails each routed version, with the idempotency key
// in the Message-ID, and without a relay fails at once with a clear error.
func TestEmailPerChange(t *testing.T) {
	f := newFixture(t)
	srv := smtptest.New(t)
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelEmail, URL: "ann.phone@example.org"})
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	d := f.dispatcher()
	drain(t, d)
	ds := f.deliveries(t)
	if len(ds) != 1 || ds[0].State != changedigest.DeliveryDead || !strings.Contains(ds[0].LastError, "e-mail is not configured") {
		t.Fatalf("without a relay: %+v", ds)
	}
	mailer, err := NewMailer(srv.Addr, "changedigest <digest@cd.example.org>")
	if err != nil {
		t.Fatal(err)
	}
	f.n.Mail = mailer
	if _, err := d.Redeliver(context.Background(), f.user.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	drain(t, d)
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	body := string(m.Data)
	msg, err := mail.ReadMessage(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil || subject != "★ football: News: Library hours → The football club won on Sunday" {
		t.Errorf("subject %q (%v)", subject, err)
	}
	for _, want := range []string{"Message-ID: <" + txnID(ds[0].ID) + "@", "{+The **football** club won on Sunday+}"} {
		if !strings.Contains(body, want) {
			t.Errorf("the message lacks %q", want)
		}
	}
	if len(m.To) != 1 || m.To[0] != "ann.phone@example.org" {
		t.Errorf("sent to %v", m.To)
	}
}

// TestGotifyTelegramPushover sends a change to fakes of the three
// services' APIs on loopback and checks each request as the service
// documents it: Gotify's POST /message with the app token in
// X-Gotify-Key, Telegram's POST /bot<token>/sendMessage with the chat,
// Pushover's form POST /1/messages.json with token and user.
func TestGotifyTelegramPushover(t *testing.T) {
	const userKey = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
	cases := []struct {
		ch    changedigest.Channel
		path  string
		check func(t *testing.T, r received)
	}{
		{changedigest.Channel{Kind: changedigest.ChannelGotify, Secret: "AppTok", Priority: 5}, "/message", func(t *testing.T, r received) {
			var m struct {
				Title, Message string
				Priority       int
				Extras         map[string]map[string]map[string]string
			}
			if err := json.Unmarshal(r.body, &m); err != nil {
				t.Fatal(err)
			}
			if r.header.Get("X-Gotify-Key") != "AppTok" || m.Priority != 10 || !strings.HasPrefix(m.Title, "★ football: News:") ||
				!strings.Contains(m.Message, "{+The **football** club won on Sunday+}") ||
				!strings.HasPrefix(m.Extras["client::notification"]["click"]["url"], "http://cd.example.org/watches/") {
				t.Errorf("gotify: key %q, %+v", r.header.Get("X-Gotify-Key"), m)
			}
		}},
		{changedigest.Channel{Kind: changedigest.ChannelTelegram, Secret: "123:ABC", Room: "-100200300"}, "/bot123:ABC/sendMessage", func(t *testing.T, r received) {
			var m struct {
				ChatID  string `json:"chat_id"`
				Text    string
				Preview bool `json:"disable_web_page_preview"`
			}
			if err := json.Unmarshal(r.body, &m); err != nil {
				t.Fatal(err)
			}
			if m.ChatID != "-100200300" || !m.Preview || !strings.HasPrefix(m.Text, "★ football: News:") ||
				!strings.Contains(m.Text, "football** club won") || !strings.Contains(m.Text, "http://cd.example.org/watches/") {
				t.Errorf("telegram: %+v", m)
			}
		}},
		{changedigest.Channel{Kind: changedigest.ChannelPushover, Secret: "azGDORePK8gMaC0QOYAMyEEuzJnyUi", Room: userKey}, "/1/messages.json", func(t *testing.T, r received) {
			form, err := url.ParseQuery(string(r.body))
			if err != nil {
				t.Fatal(err)
			}
			if form.Get("token") != "azGDORePK8gMaC0QOYAMyEEuzJnyUi" || form.Get("user") != userKey ||
				!strings.HasPrefix(form.Get("title"), "★ football: News:") || !strings.Contains(form.Get("message"), "club won") ||
				!strings.HasPrefix(form.Get("url"), "http://cd.example.org/watches/") {
				t.Errorf("pushover: %v", form)
			}
		}},
	}
	for _, c := range cases {
		t.Run(string(c.ch.Kind), func(t *testing.T) {
			f := newFixture(t)
			rc := newReceiver(t)
			c.ch.URL = rc.URL
			f.channel(t, c.ch)
			f.addVersion(t, f.now, []string{"a"}, footballChange)
			drain(t, f.dispatcher())
			got := rc.got()
			if len(got) != 1 {
				t.Fatalf("%d requests", len(got))
			}
			if got[0].method != http.MethodPost || got[0].path != c.path {
				t.Errorf("%s %s, want POST %s", got[0].method, got[0].path, c.path)
			}
			c.check(t, got[0])
			if ds := f.deliveries(t); ds[0].State != changedigest.DeliveryDelivered {
				t.Errorf("delivery %+v", ds[0])
			}
		})
	}
}

// TestDisabledUserToldNothing: a version of a disabled user's watch makes
// no delivery; enabled again, the next one does.
func TestDisabledUserToldNothing(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL})
	setDisabled := func(v bool) {
		if _, err := f.store.UpdateUser(context.Background(), f.user.ID, func(u *changedigest.User) error { u.Disabled = v; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	setDisabled(true)
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	d := f.dispatcher()
	drain(t, d)
	if ds := f.deliveries(t); len(ds) != 0 || len(rc.got()) != 0 {
		t.Fatalf("disabled: %d deliveries, %d requests", len(ds), len(rc.got()))
	}
	setDisabled(false)
	f.now = f.now.Add(time.Hour)
	f.addVersion(t, f.now, []string{"b"}, footballChange)
	drain(t, d)
	if n := len(rc.got()); n != 1 {
		t.Fatalf("enabled again: %d requests, want 1", n)
	}
}
