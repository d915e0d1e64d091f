package agent

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// forgedSummary is a summary no page has: its main body is junk.
func forgedSummary(i int) string {
	s := Summarize([]byte(pageV1), "text/html")
	sum := md5.Sum([]byte(strconv.Itoa(i)))
	s.Main = hex.EncodeToString(sum[:])
	return s.String()
}

// agentRequests makes n agent requests for the fixture's page over
// span, from addr(i), and returns how many got the digester.
func (f *fixture) agentRequests(t *testing.T, n int, span time.Duration, addr func(int) string) int {
	t.Helper()
	start, digesters := f.now, 0
	for i := range n {
		f.now = start.Add(span * time.Duration(i) / time.Duration(n))
		js, _, err := f.m.ScriptEncoded(WithClient(context.Background(), addr(i)), f.key, true)
		if err != nil {
			t.Fatal(err)
		}
		if !IsVoid(js) {
			digesters++
		}
	}
	return digesters
}

// TestReportTokensAreLimited: agent requests do not hand out report
// tokens without limit (3,000 requests in 1.7 s once gave 3,000). The
// page gives one digester per threshold; when the manager is too busy
// to apply the threshold, an address gets no more tokens than it may
// send reports, and the page no more than it may take.
func TestReportTokensAreLimited(t *testing.T) {
	one := func(int) string { return "198.51.100.9" }
	many := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }
	for _, tc := range []struct {
		name string
		busy bool
		addr func(int) string
		most int
	}{
		{"one address", false, one, 1},
		{"3,000 addresses", false, many, 1},
		// Busy: the address's burst of 20, and 30 a minute over 1.7 s.
		{"one address, busy", true, one, 20 + 1},
		// Busy: the page's burst of 30, and 120 a minute over 1.7 s.
		{"3,000 addresses, busy", true, many, 30 + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.busy {
				f.digester(t) // caches the watch
				f.m = New(f.store, f.m.Endpoint)
				f.m.Now, f.m.Logger = f.clock, discard
				f.m.init()
				f.m.flight.Add(int64(f.m.StoreFreeAt))
			}
			n := f.agentRequests(t, 3000, 1700*time.Millisecond, tc.addr)
			t.Logf("%d digesters for 3,000 agent requests in 1.7 s", n)
			if n > tc.most {
				t.Errorf("%d digesters for 3,000 agent requests in 1.7 s, want at most %d", n, tc.most)
			}
			if st := f.m.Totals(); tc.addr(0) == tc.addr(1) && st.Withheld == 0 && n > 1 {
				t.Errorf("no request withheld: %+v", st)
			}
		})
	}
}

// fakeChecks stands in for the scheduler: a check of the watch runs
// whenever a report made it due, finds the page as stored (refuting
// the report), and puts the watch off for a day.
type fakeChecks struct {
	f       *fixture
	fetches int
}

func (c *fakeChecks) run(t *testing.T) {
	t.Helper()
	c.f.drain(t)
	c.f.m.releaseHeld(context.Background())
	c.f.drain(t)
	if c.f.store.watch(1).NextCheck.After(c.f.now) {
		return
	}
	c.fetches++
	c.f.m.CheckedAt(1, c.f.now, false)
	c.f.store.UpdateWatch(context.Background(), 0, 1, func(w *changedigest.Watch) error {
		w.NextCheck = c.f.now.Add(24 * time.Hour)
		return nil
	})
}

// TestForgedReportsFromManyAddresses: reports that the page changed,
// forged from 1,000 addresses paced over 124 s (one each, so no address
// is refuted twice), once cost one verifying fetch each (276, the
// reports the page's rate limit let through). The page's verification
// budget holds them to one fetch per threshold; the refusals are
// counted for the watch by reason.
func TestForgedReportsFromManyAddresses(t *testing.T) {
	f := newFixture(t)
	f.report(t, f.token(t), pageV1, "192.0.2.1") // an honest view first
	checks := &fakeChecks{f: f}
	checks.run(t)
	start := f.now
	for i := range 1000 {
		f.now = start.Add(124 * time.Second * time.Duration(i) / 1000)
		err := f.m.Report(context.Background(), ReportIn{Token: f.token(t), URL: "https://shop.example/hours",
			Origin: "https://shop.example", Summary: forgedSummary(i), Addr: fmt.Sprintf("10.0.%d.%d", i/250, i%250)})
		if err != nil && code(err) != changedigest.ERATELIMIT {
			t.Fatalf("report %d: %v", i, err)
		}
		checks.run(t)
	}
	st := f.m.Stats(1)
	t.Logf("1,000 forged reports over 124 s: %d verifying fetches; stats %+v", checks.fetches, st)
	if checks.fetches != 1 {
		t.Errorf("%d verifying fetches, want 1 (one per threshold)", checks.fetches)
	}
	if st.Reports != 1001 || st.Accepted+st.Refused != 1001 || st.RefusedRate != st.Refused || st.Refused == 0 {
		t.Errorf("the refusals are not counted for the watch: %+v", st)
	}
	if st.Held == 0 {
		t.Errorf("no report held: %+v", st)
	}
	// A threshold after the fetch, the newest held report is verified:
	// one more fetch, then none until the next threshold.
	f.now = start.Add(DefaultThreshold)
	checks.run(t)
	f.now = f.now.Add(time.Minute)
	checks.run(t)
	if checks.fetches != 2 {
		t.Errorf("%d verifying fetches a threshold later, want 2", checks.fetches)
	}
}

// TestHeldReportOfARealChange: a real change reported while the budget
// is spent is verified once it allows; a confirmed check gives the
// budget back, so the next change is verified at once.
func TestHeldReportOfARealChange(t *testing.T) {
	f := newFixture(t)
	checks := &fakeChecks{f: f}
	f.report(t, f.token(t), pageV2, "198.51.100.9") // a forgery, refuted
	checks.run(t)
	f.now = f.now.Add(time.Minute)
	pageV3 := strings.Replace(pageV1, "<title>Shop</title>", "<title>Shop: new hours</title>", 1)
	if err := f.report(t, f.token(t), pageV3, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	checks.run(t)
	if st := f.m.Stats(1); st.Held != 1 || st.Triggered != 1 || checks.fetches != 1 {
		t.Fatalf("within the threshold: %d fetches, stats %+v; want the report held", checks.fetches, st)
	}
	f.now = f.now.Add(DefaultThreshold)
	f.m.releaseHeld(context.Background())
	f.drain(t)
	if got := f.store.watch(1).NextCheck; got.After(f.now) {
		t.Fatalf("the held report did not make the watch due (%s)", got)
	}
	// The check finds the change and stores it.
	f.store.put(1, pageV3)
	w := f.store.watch(1)
	f.m.Stored(&w, &changedigest.Snapshot{WatchID: 1, Seq: 2})
	f.m.CheckedAt(1, f.now, false)
	if st := f.m.Stats(1); st.Confirmed != 1 {
		t.Fatalf("stats %+v, want the held report confirmed", st)
	}
	// Another change a minute later is verified at once.
	f.now = f.now.Add(time.Minute)
	if err := f.report(t, f.token(t), pageV1, "192.0.2.2"); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if st := f.m.Stats(1); st.Triggered != 3 || st.Held != 1 {
		t.Errorf("after a confirmed check: stats %+v, want the next report verified at once", st)
	}
}

// TestRefusalsCountedPerWatch: each refused report is counted for the
// watch its token names, by reason.
func TestRefusalsCountedPerWatch(t *testing.T) {
	f := newFixture(t)
	f.digester(t) // caches the watch
	ctx := context.Background()
	good := Summarize([]byte(pageV1), "text/html").String()
	in := func(tok, u, origin, sum, addr string) ReportIn {
		return ReportIn{Token: tok, URL: u, Origin: origin, Summary: sum, Addr: addr}
	}
	old := f.token(t)
	used := f.token(t)
	if err := f.m.Report(ctx, in(used, "https://shop.example/hours", "https://shop.example", good, "192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Hour)
	for _, r := range []ReportIn{
		in(old, "https://shop.example/hours", "https://shop.example", good, "192.0.2.1"),          // expired
		in(used, "https://shop.example/hours", "https://shop.example", good, "192.0.2.1"),         // replayed (and expired)
		in(f.token(t), "https://shop.example/other", "https://shop.example", good, "192.0.2.1"),   // page
		in(f.token(t), "https://shop.example/hours", "https://evil.example", good, "192.0.2.1"),   // origin
		in(f.token(t), "https://shop.example/hours", "https://shop.example", "nope", "192.0.2.1"), // invalid
		in("forged", "https://shop.example/hours", "https://shop.example", good, "192.0.2.1"),     // forged: no watch
	} {
		if err := f.m.Report(ctx, r); err == nil {
			t.Fatalf("%+v was taken", r)
		}
	}
	f.m.ignore.strike("addr 198.51.100.9", f.now)
	f.m.ignore.strike("addr 198.51.100.9", f.now)
	if err := f.m.Report(ctx, in(f.token(t), "https://shop.example/hours", "https://shop.example", good, "198.51.100.9")); code(err) != changedigest.EFORBIDDEN {
		t.Fatalf("ignored: %v", err)
	}
	for i := 0; ; i++ {
		err := f.m.Report(ctx, in(f.token(t), "https://shop.example/hours", "https://shop.example", good, "203.0.113.7"))
		if code(err) == changedigest.ERATELIMIT {
			break
		}
		if i > 100 {
			t.Fatal("no rate limit")
		}
	}
	st := f.m.Stats(1)
	if st.RefusedToken != 2 || st.RefusedPage != 2 || st.RefusedInvalid != 1 || st.RefusedIgnored != 1 || st.RefusedRate != 1 ||
		st.Refused != 7 || st.Reports != st.Accepted+st.Refused {
		t.Errorf("for the watch: %+v", st)
	}
	if tot := f.m.Totals(); tot.RefusedToken != 3 || tot.Refused != 8 {
		t.Errorf("in total: %+v", tot)
	}
}
