package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

func TestClientsJoinAndLeave(t *testing.T) {
	f := newFixture(t)
	c := NewCoordinator(f.store, f.m)
	c.Now = f.clock
	c.ClientGap = 3 * time.Hour // no samples: only MinGap bounds the gap
	w := f.store.watch(1)
	ctx := context.Background()

	a, err := c.Register(7, "laptop", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	as, err := c.Assignments(ctx, 7, a)
	if err != nil || len(as) != 1 {
		t.Fatalf("assignments: %+v, %v", as, err)
	}
	if got := as[0]; got.CrawlGap != 3*time.Hour || got.TimeGap != 3*time.Hour || got.DelayToStart != 0 || got.Clients != 1 || got.Version != 1 || got.Summary == "" {
		t.Errorf("one client: %+v", got)
	}

	f.now = f.now.Add(time.Minute)
	b, _ := c.Register(7, "desktop", "192.0.2.2")
	third, _ := c.Register(7, "", "192.0.2.3")
	for i, id := range []int64{a, b, third} {
		as, err := c.Assignments(ctx, 7, id)
		if err != nil {
			t.Fatal(err)
		}
		got := as[0]
		// The polls start within a gap of the new schedule, midway
		// between the server's own checks.
		onGrid := (w.NextCheck.Add(30*time.Minute).Sub(got.Begin))%time.Hour == 0
		if got.CrawlGap != 3*time.Hour || got.DelayToStart != time.Duration(i)*time.Hour || got.Index != i ||
			got.Begin.Before(f.now) || !got.Begin.Before(f.now.Add(time.Hour)) || !onGrid {
			t.Errorf("client %d of 3: %+v", i, got)
		}
	}
	slots := c.Slots(&w)
	if len(slots) != 3 || slots[2].Name != "client 3" || slots[1].DelayToStart != time.Hour {
		t.Errorf("slots: %+v", slots)
	}

	// One leaves, one falls silent: the schedule begins again for the last.
	if err := c.Leave(7, b); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(8, a); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("leaving another user's client: %v", err)
	}
	f.now = f.now.Add(c.OnlineFor - time.Second)
	c.Assignments(ctx, 7, third)
	f.now = f.now.Add(2 * time.Second)
	as, err = c.Assignments(ctx, 7, third)
	if err != nil || as[0].Clients != 1 || as[0].CrawlGap != 3*time.Hour || as[0].DelayToStart != 0 || as[0].Begin.Before(f.now) || !as[0].Begin.Before(f.now.Add(3*time.Hour)) {
		t.Errorf("after one left and one fell silent: %+v, %v", as, err)
	}
	if _, err := c.Assignments(ctx, 7, a); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("a silent client asking again: %v, want not found (register again)", err)
	}
	if n := c.Online(7); n != 1 {
		t.Errorf("online = %d", n)
	}
}

// samples are n checks every interval, the first x of which saw a change.
func samples(n, x int, interval time.Duration) []changedigest.CheckSample {
	out := make([]changedigest.CheckSample, n)
	for i := range out {
		out[i] = changedigest.CheckSample{Interval: interval, Changed: i < x}
	}
	return out
}

// TestTimeGapRule: k clients shorten a page's time gap as ClientGap / k
// until the floor set by its change rate; from there on the gap stays
// and each client's crawl gap grows as k, so its polls fall as 1/k.
func TestTimeGapRule(t *testing.T) {
	c := NewCoordinator(nil, nil)
	// A page changing about every 5 min: 20 checks 150 s apart, 8 of
	// which saw a change, give λ̂ = −ln(12.5/20.5)/150 s, 1/λ̂ = 303 s;
	// the floor is a fifth of that, 60.6 s, reached at 5 clients.
	w := &changedigest.Watch{Samples: samples(20, 8, 150*time.Second)}
	floor := c.Floor(w)
	if floor < 60*time.Second || floor > 61*time.Second {
		t.Fatalf("floor = %s, want 60.6 s", floor)
	}
	if n := c.Optimal(w); n != 5 {
		t.Errorf("optimal clients = %d, want 5", n)
	}
	for _, tc := range []struct {
		k       int
		timeGap time.Duration
	}{
		{0, 5 * time.Minute}, // no client: as for one
		{1, 5 * time.Minute},
		{2, 150 * time.Second},
		{4, 75 * time.Second},
		{5, floor},
		{10, floor},
		{20, floor},
	} {
		got := c.TimeGap(w, tc.k)
		if got != tc.timeGap {
			t.Errorf("k = %d: time gap %s, want %s", tc.k, got, tc.timeGap)
		}
		if crawl := got * time.Duration(max(tc.k, 1)); crawl < c.ClientGap {
			t.Errorf("k = %d: a client polls every %s, under ClientGap %s", tc.k, crawl, c.ClientGap)
		}
	}

	// Nothing known yet (fewer than MinSamples samples): MinGap only.
	young := &changedigest.Watch{Samples: samples(4, 4, time.Minute)}
	if got := c.TimeGap(young, 20); got != 30*time.Second {
		t.Errorf("a new watch with 20 clients: time gap %s, want MinGap", got)
	}
	// A fast page: the floor is MinGap, not a fifth of 10 s.
	fast := &changedigest.Watch{Samples: samples(10, 10, 5*time.Second)}
	if got := c.TimeGap(fast, 100); got != c.MinGap {
		t.Errorf("a page changing every few seconds with 100 clients: %s, want MinGap", got)
	}
	// No change seen in 5 hourly checks: at most one change in 5 h, so
	// the gap is at least an hour whatever the clients.
	static := &changedigest.Watch{Samples: samples(5, 0, time.Hour)}
	if got := c.TimeGap(static, 10); got != time.Hour {
		t.Errorf("a static page: time gap %s, want 1 h", got)
	}
}

// TestAssignmentsFollowRule: the assignments of k clients of a watch
// carry the rule's time gap, crawl_gap = k × time_gap and evenly
// staggered starts, as 1, 5 and 10 clients join.
func TestAssignmentsFollowRule(t *testing.T) {
	f := newFixture(t)
	c := NewCoordinator(f.store, f.m)
	c.Now = f.clock
	w := f.store.watch(1)
	w.Samples = samples(20, 8, 150*time.Second)
	f.store.watches[1] = &w
	floor := c.Floor(&w)
	ctx := context.Background()
	var ids []int64
	crawl := map[int]time.Duration{}
	for _, k := range []int{1, 5, 10} {
		for len(ids) < k {
			id, err := c.Register(7, "", "192.0.2.1")
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			f.now = f.now.Add(time.Second)
		}
		gap := max(5*time.Minute/time.Duration(k), floor)
		for i, id := range ids {
			as, err := c.Assignments(ctx, 7, id)
			if err != nil {
				t.Fatal(err)
			}
			a := as[0]
			crawl[k] = a.CrawlGap
			if a.TimeGap != gap || a.CrawlGap != gap*time.Duration(k) || a.DelayToStart != gap*time.Duration(i) || a.Clients != k || a.Index != i {
				t.Errorf("client %d of %d: time gap %s, crawl gap %s, delay %s; want %s, %s, %s",
					i, k, a.TimeGap, a.CrawlGap, a.DelayToStart, gap, gap*time.Duration(k), gap*time.Duration(i))
			}
		}
		if slots := c.Slots(&w); len(slots) != k || slots[k-1].DelayToStart != gap*time.Duration(k-1) || slots[0].CrawlGap != gap*time.Duration(k) {
			t.Errorf("%d clients: slots %+v", k, slots)
		}
	}
	// The estimate moves a little with a new check: the gap and the
	// grid stay. It moves by more than half: a new gap, from now.
	before, _ := c.Assignments(ctx, 7, ids[0])
	w.Samples = append(w.Samples, changedigest.CheckSample{Interval: 150 * time.Second, Changed: true})
	f.store.watches[1] = &w
	f.now = f.now.Add(10 * time.Second)
	after, _ := c.Assignments(ctx, 7, ids[0])
	if after[0].TimeGap != before[0].TimeGap || !after[0].Begin.Equal(before[0].Begin) {
		t.Errorf("a small move of the estimate moved the schedule: %s from %s to %s from %s",
			before[0].TimeGap, before[0].Begin, after[0].TimeGap, after[0].Begin)
	}
	w.Samples = samples(20, 18, 150*time.Second)
	f.store.watches[1] = &w
	f.now = f.now.Add(10 * time.Second)
	after, _ = c.Assignments(ctx, 7, ids[0])
	if want := c.TimeGap(&w, 10); after[0].TimeGap != want || 2*(floor-want) <= floor || after[0].Begin.Before(f.now) {
		t.Errorf("a page found to change twice as often: time gap %s from %s, want %s from now (%s)", after[0].TimeGap, after[0].Begin, want, f.now)
	}

	// Up to the floor each client polls every 5 min whatever k; past
	// it, twice the clients poll each half as often.
	if crawl[5] < 5*time.Minute || crawl[5] > 5*time.Minute+5*time.Second || crawl[1] != 5*time.Minute || crawl[10] != 2*crawl[5] {
		t.Errorf("crawl gaps for 1, 5, 10 clients: %s, %s, %s", crawl[1], crawl[5], crawl[10])
	}
}

func TestClientReports(t *testing.T) {
	f := newFixture(t)
	c := NewCoordinator(f.store, f.m)
	c.Now = f.clock
	ctx := context.Background()
	id, _ := c.Register(7, "laptop", "192.0.2.1")
	if err := c.Report(ctx, 8, id, 1, 1); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's client: %v", err)
	}
	f.store.watches[9] = &changedigest.Watch{ID: 9, UserID: 8, URL: "https://else.example/"}
	if err := c.Report(ctx, 7, id, 9, 1); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("another user's watch: %v", err)
	}
	// A report against an old version: the change is already stored.
	if err := c.Report(ctx, 7, id, 1, 0); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if st := f.m.Stats(1); st.Same != 1 || st.Triggered != 0 {
		t.Errorf("stale report: %+v", st)
	}
	// Against the newest: the watch is made due; the fetch refutes it twice.
	for i := range f.m.RefuteLimit {
		if err := c.Report(ctx, 7, id, 1, 1); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		f.drain(t)
		if got := f.store.watch(1).NextCheck; !got.Equal(f.now) {
			t.Fatalf("NextCheck = %s, want now", got)
		}
		f.m.Checked(1, false)
	}
	if err := c.Report(ctx, 7, id, 1, 1); changedigest.ErrorCode(err) != changedigest.EFORBIDDEN {
		t.Errorf("a client whose reports were refuted: %v, want forbidden", err)
	}
}

func TestIgnoredClientCannotRegisterAgain(t *testing.T) {
	f := newFixture(t)
	c := NewCoordinator(f.store, f.m)
	c.Now = f.clock
	ctx := context.Background()
	id, _ := c.Register(7, "laptop", "192.0.2.1")
	for range f.m.RefuteLimit {
		c.Report(ctx, 7, id, 1, 1)
		f.drain(t)
		f.m.Checked(1, false)
	}
	again, _ := c.Register(7, "laptop", "192.0.2.1")
	if err := c.Report(ctx, 7, again, 1, 1); changedigest.ErrorCode(err) != changedigest.EFORBIDDEN {
		t.Errorf("registered again from the same address: %v, want forbidden", err)
	}
	other, _ := c.Register(7, "desktop", "192.0.2.2")
	if err := c.Report(ctx, 7, other, 1, 1); err != nil {
		t.Errorf("another machine of the user: %v", err)
	}
}

// TestAssignmentsLeaveOutRequestOptions: a watch with request options
// (credentials, a POST) is never handed to a polling client, which would
// fetch it without them; the server checks it alone.
func TestAssignmentsLeaveOutRequestOptions(t *testing.T) {
	f := newFixture(t)
	c := NewCoordinator(f.store, f.m)
	c.Now = f.clock
	w := f.store.watch(1)
	w.Request = &changedigest.RequestOptions{BasicAuth: &changedigest.BasicAuth{User: "ann", Password: changedigest.Secret{Sealed: "v1.x", Hint: "••••"}}}
	f.store.watches[1] = &w
	id, err := c.Register(7, "laptop", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	as, err := c.Assignments(context.Background(), 7, id)
	if err != nil || len(as) != 0 {
		t.Errorf("assignments %+v, %v; want none", as, err)
	}
	err = c.Report(context.Background(), 7, id, 1, 1)
	if changedigest.ErrorCode(err) != changedigest.EFORBIDDEN || !strings.Contains(err.Error(), "request options") {
		t.Errorf("report of such a watch: %v, want EFORBIDDEN naming the request options", err)
	}
}
