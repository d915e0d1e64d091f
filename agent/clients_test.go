package agent

import (
	"context"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

func TestClientsJoinAndLeave(t *testing.T) {
	f := newFixture(t)
	c := NewCoordinator(f.store, f.m)
	c.Now = f.clock
	w := f.store.watch(1)
	w.Interval = time.Hour
	f.store.watches[1] = &w
	ctx := context.Background()

	a, err := c.Register(7, "laptop", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	as, err := c.Assignments(ctx, 7, a)
	if err != nil || len(as) != 1 {
		t.Fatalf("assignments: %+v, %v", as, err)
	}
	if got := as[0]; got.CrawlGap != time.Hour || got.DelayToStart != 0 || got.Clients != 1 || got.Version != 1 || got.Summary == "" {
		t.Errorf("one client: %+v", got)
	}
	begin1 := as[0].Begin

	f.now = f.now.Add(time.Minute)
	b, _ := c.Register(7, "desktop", "192.0.2.2")
	third, _ := c.Register(7, "", "192.0.2.3")
	for i, id := range []int64{a, b, third} {
		as, err := c.Assignments(ctx, 7, id)
		if err != nil {
			t.Fatal(err)
		}
		got := as[0]
		if got.CrawlGap != 3*time.Hour || got.DelayToStart != time.Duration(i)*time.Hour || got.Index != i || !got.Begin.After(begin1) {
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
	if err != nil || as[0].Clients != 1 || as[0].CrawlGap != time.Hour || as[0].DelayToStart != 0 || !as[0].Begin.Equal(f.now) {
		t.Errorf("after one left and one fell silent: %+v, %v", as, err)
	}
	if _, err := c.Assignments(ctx, 7, a); changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Errorf("a silent client asking again: %v, want not found (register again)", err)
	}
	if n := c.Online(7); n != 1 {
		t.Errorf("online = %d", n)
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
