package agent

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/ratelimit"
)

// memStore is an in-memory Store: watches, and one stored body per watch.
type memStore struct {
	mu      sync.Mutex
	watches map[int64]*changedigest.Watch
	bodies  map[int64][]byte
	seqs    map[int64]int
	reads   int
}

func newMemStore() *memStore {
	return &memStore{watches: map[int64]*changedigest.Watch{}, bodies: map[int64][]byte{}, seqs: map[int64]int{}}
}

func (s *memStore) Watch(_ context.Context, userID, id int64) (*changedigest.Watch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	w := s.watches[id]
	if w == nil || (userID != 0 && w.UserID != userID) {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "no watch %d", id)
	}
	c := *w
	return &c, nil
}

func (s *memStore) Watches(_ context.Context, userID int64, _ string) ([]changedigest.Watch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []changedigest.Watch
	for _, w := range s.watches {
		if w.UserID == userID {
			out = append(out, *w)
		}
	}
	return out, nil
}

func (s *memStore) UpdateWatch(_ context.Context, _, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watches[id]
	if w == nil {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "no watch %d", id)
	}
	c := *w
	if err := fn(&c); err != nil {
		return nil, err
	}
	s.watches[id] = &c
	return &c, nil
}

func (s *memStore) Latest(_ context.Context, id int64) (*changedigest.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seqs[id] == 0 {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "no version")
	}
	return &changedigest.Snapshot{WatchID: id, Seq: s.seqs[id], ContentType: "text/html"}, nil
}

func (s *memStore) Body(_ context.Context, id int64, seq int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[id], nil
}

func (s *memStore) put(id int64, body string) {
	s.mu.Lock()
	s.bodies[id] = []byte(body)
	s.seqs[id]++
	s.mu.Unlock()
}

func (s *memStore) watch(id int64) changedigest.Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.watches[id]
}

const pageV1 = `<html><head><title>Shop</title></head><body><header>Logo</header>
<div id="main"><p>Opening hours: 9 to 5 every weekday, closed on Sundays and holidays.</p></div>
<footer>Contact</footer></body></html>`

const pageV2 = `<html><head><title>Shop</title></head><body><header>Logo</header>
<div id="main"><p>Opening hours: 10 to 6 every weekday, closed on Sundays and holidays.</p></div>
<footer>Contact</footer></body></html>`

type fixture struct {
	m     *Manager
	store *memStore
	now   time.Time
	key   string
}

func (f *fixture) clock() time.Time { return f.now }

// newFixture has watch 1 on https://shop.example/hours with the agent on
// and pageV1 stored.
func newFixture(t *testing.T) *fixture {
	f := &fixture{store: newMemStore(), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f.key = NewKey(1)
	f.store.watches[1] = &changedigest.Watch{ID: 1, UserID: 7, URL: "https://Shop.example:443/hours", AgentKey: f.key,
		NextCheck: f.now.Add(24 * time.Hour)}
	f.store.put(1, pageV1)
	f.m = New(f.store, "https://cd.example/agent/report")
	f.m.Now = f.clock
	f.m.Logger = discard
	return f
}

var discard = slog.New(slog.DiscardHandler)

// token is a report token as a digester for the watch would carry.
func (f *fixture) token(t *testing.T) string {
	id, err := KeyWatch(f.key)
	if err != nil {
		t.Fatal(err)
	}
	return f.m.token(id, f.now)
}

// digester gets a digester for the watch and returns its report token.
func (f *fixture) digester(t *testing.T) string {
	t.Helper()
	js, err := f.m.Script(context.Background(), f.key)
	if err != nil {
		t.Fatal(err)
	}
	if IsVoid(js) {
		t.Fatal("got the void agent, want the digester")
	}
	s := string(js)
	i := strings.Index(s, `T = "`)
	if i < 0 {
		t.Fatalf("no token in the digester:\n%s", clip(s))
	}
	s = s[i+5:]
	return s[:strings.IndexByte(s, '"')]
}

func (f *fixture) report(t *testing.T, tok, page, addr string) error {
	t.Helper()
	return f.m.Report(context.Background(), ReportIn{Token: tok, URL: "https://shop.example/hours#top",
		Summary: Summarize([]byte(page), "text/html").String(), Origin: "https://shop.example", Addr: addr})
}

func code(err error) string { return changedigest.ErrorCode(err) }

// TestDigesterThenVoidUntilThreshold: the threshold counts from the
// last digester sent for the page (the paper's t), not from a report:
// one digester per threshold, whether or not it reports, and a report
// that comes late does not silence the page for longer. What the
// manager keeps outlives it: a new one on the same store waits too.
func TestDigesterThenVoidUntilThreshold(t *testing.T) {
	f := newFixture(t)
	tok := f.digester(t)
	if js, err := f.m.Script(context.Background(), f.key); err != nil || !IsVoid(js) {
		t.Fatalf("right after a digester: got %q, %v; want the void agent", clip(string(js)), err)
	}
	// The digester's report comes late; it is taken, and changes nothing.
	f.now = f.now.Add(DefaultThreshold - time.Minute)
	if err := f.report(t, tok, pageV1, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if js, _ := f.m.Script(context.Background(), f.key); !IsVoid(js) {
		t.Fatal("before the threshold: want the void agent")
	}
	f.now = f.now.Add(time.Minute)
	f.digester(t)
	st := f.m.Stats(1)
	if st.Served != 4 || st.Digester != 2 || st.Void != 2 || st.Accepted != 1 {
		t.Errorf("stats = %+v", st)
	}
	f.drain(t)
	if got := f.store.watch(1).AgentSent; !got.Equal(f.now) {
		t.Errorf("the watch keeps AgentSent %s, want %s", got, f.now)
	}
	// A restart: a new manager on the same store.
	f.m = New(f.store, f.m.Endpoint)
	f.m.Now, f.m.Logger = f.clock, discard
	f.now = f.now.Add(DefaultThreshold - time.Second)
	if js, err := f.m.Script(context.Background(), f.key); err != nil || !IsVoid(js) {
		t.Fatalf("after a restart, before the threshold: got %q, %v; want the void agent", clip(string(js)), err)
	}
	f.now = f.now.Add(time.Second)
	f.digester(t)
}

// TestOneDigesterAtATime: of agent requests for a page that come
// together, one gets the digester.
func TestOneDigesterAtATime(t *testing.T) {
	f := newFixture(t)
	f.m.StoreFreeAt, f.m.VoidAt = 1000, 2000 // 64 in flight is not busy here
	var wg sync.WaitGroup
	var digesters atomic.Int64
	for range 64 {
		wg.Go(func() {
			js, err := f.m.Script(context.Background(), f.key)
			if err == nil && !IsVoid(js) {
				digesters.Add(1)
			}
		})
	}
	wg.Wait()
	if n := digesters.Load(); n != 1 {
		t.Errorf("%d digesters for 64 requests at once, want 1", n)
	}
}

func TestScriptErrors(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ key, code string }{
		{"", changedigest.EINVALID},
		{"nokey", changedigest.EINVALID},
		{"1-wrongkey", changedigest.ENOTFOUND},
		{"2-" + strings.Split(f.key, "-")[1], changedigest.ENOTFOUND},
	} {
		if _, err := f.m.Script(context.Background(), tc.key); code(err) != tc.code {
			t.Errorf("key %q: err %v, want code %s", tc.key, err, tc.code)
		}
	}
}

func TestForgedExpiredAndReplayedReports(t *testing.T) {
	f := newFixture(t)
	tok := f.token(t)
	b := []byte(tok)
	b[len(b)-3] ^= 1
	if err := f.report(t, string(b), pageV1, "192.0.2.1"); code(err) != changedigest.EFORBIDDEN || !strings.Contains(err.Error(), "not one this server issued") {
		t.Errorf("forged token: %v", err)
	}
	other := New(f.store, "x") // another secret
	other.Now = f.clock
	f2 := &fixture{m: other, store: f.store, key: f.key}
	if err := f.report(t, f2.digester(t), pageV1, "192.0.2.1"); code(err) != changedigest.EFORBIDDEN {
		t.Errorf("token of another server: %v", err)
	}
	if err := f.report(t, tok, pageV1, "192.0.2.1"); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := f.report(t, tok, pageV1, "192.0.2.2"); code(err) != changedigest.EFORBIDDEN || !strings.Contains(err.Error(), "already used") {
		t.Errorf("replayed: %v", err)
	}
	old := f.token(t)
	f.now = f.now.Add(2 * time.Hour)
	if err := f.report(t, old, pageV1, "192.0.2.1"); code(err) != changedigest.EFORBIDDEN || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
	if err := f.m.Report(context.Background(), ReportIn{Token: f.token(t), URL: "https://shop.example/hours", Summary: "abc", Addr: "192.0.2.1"}); code(err) != changedigest.EINVALID {
		t.Errorf("bad summary: %v", err)
	}
}

func TestReportsForAnotherPageOrOrigin(t *testing.T) {
	f := newFixture(t)
	sum := Summarize([]byte(pageV1), "text/html").String()
	for _, tc := range []struct{ url, origin string }{
		{"https://shop.example/other", "https://shop.example"},
		{"https://evil.example/hours", "https://evil.example"},
		{"http://shop.example/hours", ""},
		{"javascript:alert(1)", ""},
		{"https://shop.example/hours", "https://evil.example"},
		{"https://shop.example/hours", ""},
		{"https://shop.example/hours", "null"},
		{"https://shop.example/hours", "http://shop.example"},
	} {
		err := f.m.Report(context.Background(), ReportIn{Token: f.token(t), URL: tc.url, Origin: tc.origin, Summary: sum, Addr: "192.0.2.1"})
		if code(err) != changedigest.EFORBIDDEN {
			t.Errorf("url %q origin %q: %v, want forbidden", tc.url, tc.origin, err)
		}
	}
	// The same page in another spelling is accepted.
	err := f.m.Report(context.Background(), ReportIn{Token: f.token(t), URL: "HTTPS://SHOP.EXAMPLE/hours", Origin: "https://shop.example", Summary: sum, Addr: "192.0.2.1"})
	if err != nil {
		t.Errorf("normalised URL refused: %v", err)
	}
}

// drain runs the change detector over everything queued, and writes
// what the manager keeps of pages to the store.
func (f *fixture) drain(t *testing.T) {
	t.Helper()
	for q := f.m.queue.pop(); q != nil; q = f.m.queue.pop() {
		if err := f.m.detect(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	f.m.save(context.Background())
}

func TestChangedReportTriggersCheckAndIsConfirmed(t *testing.T) {
	f := newFixture(t)
	if err := f.report(t, f.token(t), pageV1, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if got := f.store.watch(1).NextCheck; !got.After(f.now) {
		t.Fatalf("a report equal to the stored version made the watch due (%s)", got)
	}
	f.now = f.now.Add(DefaultThreshold)
	if err := f.report(t, f.token(t), pageV2, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if got := f.store.watch(1).NextCheck; !got.Equal(f.now) {
		t.Fatalf("NextCheck = %s, want now (%s)", got, f.now)
	}
	// The verified fetch stores version 2.
	f.store.put(1, pageV2)
	w := f.store.watch(1)
	f.m.Stored(&w, &changedigest.Snapshot{WatchID: 1, Seq: 2})
	f.m.Checked(1, false)
	w = f.store.watch(1)
	if w.DetectedBy(2) != changedigest.DetectedByAgent || w.DetectedBy(1) != changedigest.DetectedBySchedule {
		t.Errorf("detections = %+v", w.Detections)
	}
	st := f.m.Stats(1)
	if st.Same != 1 || st.Triggered != 1 || st.Confirmed != 1 || st.Refuted != 0 {
		t.Errorf("stats = %+v", st)
	}
}

// TestRefutingAddressIsIgnored: a reporter whose reports differ from the
// page where other views showed it as stored, and are refuted, is
// ignored after RefuteLimit such reports.
func TestRefutingAddressIsIgnored(t *testing.T) {
	f := newFixture(t)
	liar, honest := "198.51.100.9", "192.0.2.1"
	if err := f.report(t, f.token(t), pageV1, honest); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	for i := range f.m.RefuteLimit {
		if err := f.report(t, f.token(t), pageV2, liar); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		f.drain(t)
		f.m.Checked(1, false) // the fetch found no new version
		// A different false summary each time, so none is already
		// known; a threshold later, so the page's verification budget
		// allows a check.
		f.now = f.now.Add(DefaultThreshold)
		f.m.mu.Lock()
		f.m.watches[1].known = nil
		f.m.mu.Unlock()
	}
	err := f.report(t, f.token(t), pageV2, liar)
	if code(err) != changedigest.EFORBIDDEN || !strings.Contains(err.Error(), "ignored until") {
		t.Fatalf("after %d refuted reports: %v, want ignored", f.m.RefuteLimit, err)
	}
	if err := f.report(t, f.token(t), pageV1, honest); err != nil {
		t.Errorf("another address is refused: %v", err)
	}
	f.now = f.now.Add(f.m.IgnoreFor + time.Minute)
	if err := f.report(t, f.token(t), pageV1, liar); err != nil {
		t.Errorf("after the ignore window: %v", err)
	}
	if st := f.m.Stats(1); st.Refuted != int64(f.m.RefuteLimit) {
		t.Errorf("refuted = %d", st.Refuted)
	}
}

// TestCheckInFlightDoesNotRefute: a check that began before a report
// arrived cannot verify it; it makes the watch due again, and the next
// check decides.
func TestCheckInFlightDoesNotRefute(t *testing.T) {
	f := newFixture(t)
	began := f.now
	f.now = f.now.Add(time.Second)
	if err := f.report(t, f.token(t), pageV2, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	// The check in flight ends and its schedule update puts the watch off.
	f.store.UpdateWatch(context.Background(), 0, 1, func(w *changedigest.Watch) error {
		w.NextCheck = f.now.Add(time.Hour)
		return nil
	})
	f.now = f.now.Add(time.Second)
	f.m.CheckedAt(1, began, false)
	if st := f.m.Stats(1); st.Refuted != 0 {
		t.Errorf("a check begun before the report refuted it: %+v", st)
	}
	if got := f.store.watch(1).NextCheck; !got.Equal(f.now) {
		t.Errorf("NextCheck = %s, want now (%s)", got, f.now)
	}
	f.m.CheckedAt(1, f.now, false)
	if st := f.m.Stats(1); st.Refuted != 1 {
		t.Errorf("the next check found no change: %+v, want refuted", st)
	}
}

func TestRefutedSummaryDoesNotTriggerAgain(t *testing.T) {
	// A page whose scripts change it in the browser: its summary never
	// matches the stored version. After one refuted check, the same
	// summary is taken as a view of the stored version.
	f := newFixture(t)
	f.report(t, f.token(t), pageV2, "192.0.2.1")
	f.drain(t)
	f.m.Checked(1, false)
	f.store.UpdateWatch(context.Background(), 0, 1, func(w *changedigest.Watch) error {
		w.NextCheck = f.now.Add(time.Hour)
		return nil
	})
	f.now = f.now.Add(DefaultThreshold)
	f.report(t, f.token(t), pageV2, "192.0.2.2")
	f.drain(t)
	if st := f.m.Stats(1); st.Triggered != 1 || st.Same != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestQueueCoalescesABurst(t *testing.T) {
	f := newFixture(t)
	f.m.AddrPerMinute, f.m.PagePerMinute = 0, 0 // no rate limits here
	f.m.QueueSize = 2
	for id := int64(2); id <= 3; id++ {
		f.store.watches[id] = &changedigest.Watch{ID: id, UserID: 7, URL: fmt.Sprintf("https://shop.example/%d", id), AgentKey: NewKey(id)}
	}
	ctx := context.Background()
	for i := range 1000 {
		in := ReportIn{Token: f.token(t), URL: "https://shop.example/hours", Origin: "https://shop.example", Addr: fmt.Sprintf("10.0.%d.%d", i/250, i%250),
			Summary: Summarize([]byte(strings.Replace(pageV2, "10 to 6", fmt.Sprint(i), 1)), "").String()}
		if err := f.m.Report(ctx, in); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	w2 := f.store.watch(2)
	f.key = w2.AgentKey
	if err := f.m.Report(ctx, ReportIn{Token: f.token(t), URL: w2.URL, Origin: "https://shop.example", Summary: Summarize([]byte(pageV1), "").String(), Addr: "10.9.9.9"}); err != nil {
		t.Fatal(err)
	}
	w3 := f.store.watch(3)
	f.key = w3.AgentKey
	err := f.m.Report(ctx, ReportIn{Token: f.token(t), URL: w3.URL, Origin: "https://shop.example", Summary: Summarize([]byte(pageV1), "").String(), Addr: "10.9.9.9"})
	if code(err) != changedigest.EUNAVAILABLE {
		t.Errorf("a third page in a queue of two: %v, want unavailable", err)
	}
	if n := f.m.queue.len(); n != 2 {
		t.Fatalf("queue holds %d pages, want 2", n)
	}
	q := f.m.queue.pop()
	want := Summarize([]byte(strings.Replace(pageV2, "10 to 6", "999", 1)), "")
	if q.watchID != 1 || q.summary != want {
		t.Errorf("the waiting report of page 1 is not the newest")
	}
	if len(q.reporters) != maxReporters {
		t.Errorf("%d reporters kept, want %d", len(q.reporters), maxReporters)
	}
	if f.m.queue.coalesced != 999 {
		t.Errorf("coalesced = %d", f.m.queue.coalesced)
	}
}

func TestRateLimits(t *testing.T) {
	f := newFixture(t)
	var err error
	n := 0
	for ; n < 100 && err == nil; n++ {
		err = f.report(t, f.token(t), pageV1, "192.0.2.1")
	}
	if code(err) != changedigest.ERATELIMIT || n-1 != f.m.AddrBurst {
		t.Errorf("after %d reports from one address: %v", n-1, err)
	}
	f.m.AddrPerMinute = 0
	f.m.addrs = ratelimit.New(0, 0)
	err = nil
	for n = 0; n < 100 && err == nil; n++ {
		err = f.report(t, f.token(t), pageV1, fmt.Sprintf("192.0.2.%d", n))
	}
	if code(err) != changedigest.ERATELIMIT || !strings.Contains(err.Error(), "for watch 1") {
		t.Errorf("after %d reports for one page: %v", n-1, err)
	}
}

func TestLoadLevels(t *testing.T) {
	f := newFixture(t)
	f.digester(t) // caches the watch
	f.store.reads = 0
	// Busy: the store is not read and the threshold not applied.
	f.m.flight.Add(int64(f.m.StoreFreeAt))
	f.m.watches[1].lastAcc.Store(f.now.UnixNano())
	f.m.watches[1].loaded = time.Time{}
	if js, err := f.m.Script(context.Background(), f.key); err != nil || IsVoid(js) {
		t.Errorf("busy: got %q, %v; want the digester", clip(string(js)), err)
	}
	if f.store.reads != 0 {
		t.Errorf("busy: the store was read %d times", f.store.reads)
	}
	f.m.flight.Add(int64(f.m.VoidAt - f.m.StoreFreeAt))
	if js, err := f.m.Script(context.Background(), "5-unknownkey"); err != nil || !IsVoid(js) {
		t.Errorf("overloaded: got %q, %v; want the void agent", clip(string(js)), err)
	}
}

func TestScriptBudget(t *testing.T) {
	js := digesterAgent("https://changedigest.example.org/agent/report", strings.Repeat("x", 54))
	if len(js) > ScriptBudget {
		t.Errorf("the digester is %d bytes, over its budget of %d", len(js), ScriptBudget)
	}
	// No globals: one strict function expression, called at once.
	s := strings.TrimSpace(string(js))
	body := s[strings.Index(s, "*/")+2:]
	if body = strings.TrimSpace(body); !strings.HasPrefix(body, "(function () {\n'use strict';") || !strings.HasSuffix(body, "})();") {
		t.Errorf("the digester is not one strict function called at once")
	}
	if !strings.Contains(s, "catch (err) {}") {
		t.Errorf("the digester does not swallow its errors")
	}
	t.Logf("digester agent: %d bytes (budget %d)", len(js), ScriptBudget)
}

// The gzip-encoded digester is the plain one, byte for byte, for any
// endpoint and token, and at most half its size.
func TestGzipDigester(t *testing.T) {
	for _, tc := range []struct{ endpoint, token string }{
		{"https://changedigest.example.org/agent/report", strings.Repeat("x", 54)},
		{"http://127.0.0.1:8080/cd/agent/report", "AAAAAAAAAAEAAAAAaQ-hgNvQ3kRfzK4vC1pVZGXNIvNZ3u2eO2c6WgWF1vM"},
		{"https://x.example/r?a=\"b\"&c=</script>", ""},
	} {
		plain := digesterAgent(tc.endpoint, tc.token)
		gz := newGzipDigester(tc.endpoint).script(tc.token)
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatalf("%s: %v", tc.endpoint, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: reading the gzip stream: %v", tc.endpoint, err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("%s: the gzip digester differs from the plain one:\n%s", tc.endpoint, got)
		}
		if 2*len(gz) > len(plain) {
			t.Errorf("%s: gzip-encoded %d bytes, more than half of %d", tc.endpoint, len(gz), len(plain))
		}
		t.Logf("digester agent: %d bytes, %d gzip-encoded", len(plain), len(gz))
	}
	// Through the manager: the digester is encoded when the client takes
	// gzip and carries a token the manager accepts.
	f := newFixture(t)
	js, gzipped, err := f.m.ScriptEncoded(context.Background(), f.key, true)
	if err != nil || !gzipped {
		t.Fatalf("ScriptEncoded: %v, gzipped %v", err, gzipped)
	}
	zr, err := gzip.NewReader(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(plain, []byte(`T = "`))
	if at < 0 {
		t.Fatalf("no token in the gzip digester:\n%s", plain)
	}
	tok := string(plain[at+5:])
	tok = tok[:strings.IndexByte(tok, '"')]
	if _, _, err := f.m.checkToken(tok, f.now); err != nil {
		t.Errorf("the gzip digester's token: %v", err)
	}
}

func TestNormalURL(t *testing.T) {
	for in, want := range map[string]string{
		"HTTP://Example.ORG:80":         "http://example.org/",
		"https://example.org:443/a?b#c": "https://example.org/a?b",
		"https://u:p@example.org/":      "https://example.org/",
		"https://example.org:8443/":     "https://example.org:8443/",
		"ftp://example.org/":            "",
		"/relative":                     "",
		"":                              "",
	} {
		if got := normalURL(in); got != want {
			t.Errorf("normalURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBusyIntakeLeavesThePageCheckToTheDetector(t *testing.T) {
	f := newFixture(t)
	f.m.flight.Add(int64(f.m.StoreFreeAt)) // busy: the intake does not read the store
	sum := Summarize([]byte(pageV2), "").String()
	if err := f.m.Report(context.Background(), ReportIn{Token: f.token(t), URL: "https://evil.example/", Summary: sum, Addr: "192.0.2.1"}); err != nil {
		t.Fatalf("busy intake: %v", err)
	}
	f.m.flight.Add(-int64(f.m.StoreFreeAt))
	f.drain(t)
	if st := f.m.Totals(); st.Triggered != 0 || st.Refused != 1 {
		t.Errorf("a report for another page, accepted while busy, was not refused later: %+v", st)
	}
	if got := f.store.watch(1).NextCheck; !got.After(f.now) {
		t.Errorf("the watch was made due")
	}
}

func TestUnknownKeysCostNoMemory(t *testing.T) {
	f := newFixture(t)
	for i := range 1000 {
		if _, err := f.m.Script(context.Background(), fmt.Sprintf("%d-nokey", 1000+i)); code(err) != changedigest.ENOTFOUND {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if n := len(f.m.watches); n != 0 {
		t.Errorf("%d records kept for unknown keys", n)
	}
}

// TestSharedTokenSecret: managers given the same key accept each other's
// report tokens (a restart, another node of a cluster); one with another
// key refuses them as forged, and a key too short is refused.
func TestSharedTokenSecret(t *testing.T) {
	f := newFixture(t)
	key := bytes.Repeat([]byte("k"), 32)
	if err := f.m.SetSecret(key); err != nil {
		t.Fatal(err)
	}
	same := New(f.store, "x")
	same.Now = f.clock
	if err := same.SetSecret(key); err != nil {
		t.Fatal(err)
	}
	other := New(f.store, "x")
	other.Now = f.clock
	if err := other.SetSecret(bytes.Repeat([]byte("o"), 32)); err != nil {
		t.Fatal(err)
	}
	if err := f.report(t, (&fixture{m: other, store: f.store, key: f.key}).digester(t), pageV1, "192.0.2.1"); code(err) != changedigest.EFORBIDDEN {
		t.Errorf("token signed under another key: %v", err)
	}
	if err := f.report(t, (&fixture{m: same, store: f.store, key: f.key}).digester(t), pageV1, "192.0.2.1"); err != nil {
		t.Errorf("token signed under the same key by another manager: %v", err)
	}
	if err := same.SetSecret([]byte("short")); err == nil {
		t.Error("a 5-byte key was taken")
	}
}
