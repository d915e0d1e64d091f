package agent

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// hybridPage simulates one page under the hybrid schedule on fake time:
// it changes as a Poisson process of mean change; the server checks it
// every interval (the watch's explicit interval); its k clients
// together poll it every time gap the coordinator gives (TimeGap, from
// the samples of the server's checks so far), and a poll that sees a
// change makes the watch due at once, as a client's report does
// (Manager.makeDue), so the server's check follows. It returns the
// watch after the given time and the mean time from a change to the
// check that saw it.
func hybridPage(c *Coordinator, k int, change, interval, span time.Duration, seed uint64) (*changedigest.Watch, time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 7))
	pol := crawl.NewPolicy()
	pol.Rand = rng.Float64
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &changedigest.Watch{ID: 1, Interval: interval}
	now := t0
	pol.Apply(w, crawl.Outcome{Result: crawl.FirstVersion}, nil, now)
	nextChange := now.Add(time.Duration(rng.ExpFloat64() * float64(change)))
	nextPoll := now
	var pending []time.Time // changes not yet seen by a check
	var delay time.Duration
	seen := 0
	check := func(reported bool) {
		res := crawl.Unchanged
		if len(pending) > 0 {
			res = crawl.Changed
			for _, at := range pending {
				delay += now.Sub(at)
				seen++
			}
			pending = pending[:0]
		}
		if reported {
			w.DueByReport = true
		}
		pol.Apply(w, crawl.Outcome{Result: res}, nil, now)
	}
	for end := t0.Add(span); now.Before(end); {
		switch {
		case !nextChange.After(nextPoll) && !nextChange.After(w.NextCheck):
			now = nextChange
			pending = append(pending, now)
			nextChange = now.Add(time.Duration(rng.ExpFloat64() * float64(change)))
		case !w.NextCheck.After(nextPoll):
			now = w.NextCheck
			check(false)
		default:
			now = nextPoll
			if len(pending) > 0 {
				check(true)
			}
			nextPoll = now.Add(c.TimeGap(w, k))
		}
	}
	if seen == 0 {
		return w, 0
	}
	return w, delay / time.Duration(seen)
}

// TestClientsShareThePollsAtTheFloor: Meegahapola et al.'s Table I —
// from 5 to 10 clients, each client's polls of a page halve while
// detection stays as it was. Ten pages that change every 5 minutes on
// average, the server checking each every 5 minutes, the default client
// gaps (5 min per client, 30 s for all), as cmd/hybridbench runs them.
// The page's floor, a fifth of its mean time between changes (1 min),
// is reached at 5 clients; for 10 to share the polls, its change rate
// must not be overestimated from the checks that clients' reports
// trigger, each of which follows a change by construction (they once
// put the floor at 30 s, and 10 clients polled each page 11.5 times an
// hour each against 12.0 for 5).
func TestClientsShareThePollsAtTheFloor(t *testing.T) {
	c := NewCoordinator(nil, nil)
	const pages = 10
	change, interval := 5*time.Minute, 5*time.Minute
	polls := map[int]float64{}
	detect := map[int]time.Duration{}
	var floors time.Duration
	for _, k := range []int{5, 10} {
		for i := range pages {
			w, d := hybridPage(c, k, change, interval, 12*time.Hour, uint64(i+1))
			polls[k] += time.Hour.Seconds() / (float64(k) * c.TimeGap(w, k).Seconds()) / pages
			detect[k] += d / pages
			if k == 10 {
				floors += c.Floor(w) / pages
			}
		}
	}
	t.Logf("mean floor %s (true 1m0s); per client per page per hour: 5 clients %.1f, 10 clients %.1f; mean detection %s and %s",
		floors.Round(time.Second), polls[5], polls[10], detect[5].Round(time.Second), detect[10].Round(time.Second))
	if floors < 45*time.Second || floors > 80*time.Second {
		t.Errorf("mean floor %s, want about 1m0s", floors.Round(time.Second))
	}
	if polls[10] > 0.6*polls[5] {
		t.Errorf("each of 10 clients polls a page %.1f times an hour against %.1f for 5: want about half", polls[10], polls[5])
	}
	if detect[10] > detect[5]*5/4 {
		t.Errorf("mean detection %s with 10 clients against %s with 5", detect[10], detect[5])
	}
}
