package agent

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// ClientStore is the store as the client coordinator sees it.
type ClientStore interface {
	Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error)
}

// Detector is what the coordinator asks of the agent manager: the
// version clients compare a page with, and their reports.
type Detector interface {
	Latest(ctx context.Context, id int64) (seq int, bodyHash string, sum Summary, err error)
	ClientReport(ctx context.Context, reporter string, watchID int64, base int, now time.Time) error
}

// Coordinator schedules a user's polling clients over the user's watches
// (Meegahapola et al., Algorithm 1): for a watch with k clients online
// and its time gap, each client polls every crawl_gap = time_gap × k,
// client i starting delay_to_start = i × time_gap after the schedule
// begins, so the polls of all clients are time_gap apart. The schedule
// begins again whenever a client joins or leaves. The server's own
// schedule goes on as before, with or without clients. A client's report
// of a change goes to the Manager, which makes the watch due; the
// verified fetch decides, and a client whose reports are refuted is
// ignored for a while like an agent's address.
//
// The time gap depends on k and on the page's change rate (see TimeGap):
// joining clients shorten it until it reaches a floor set by the change
// rate, and beyond that they share the same polls, each polling less.
type Coordinator struct {
	Store ClientStore
	// Manager is the agent manager (or, on a cluster node, one that hands
	// each watch's work to the node serving it).
	Manager Detector
	// OnlineFor is how long a client counts as online after it last
	// asked for its assignments (90 s); Poll is how often clients are
	// told to ask (30 s).
	OnlineFor, Poll time.Duration
	// ClientGap is the least time between two polls of one page by one
	// client (5 min): a client is no more eager than the server's own
	// schedule at its fastest.
	ClientGap time.Duration
	// MinGap is the least time gap of a page, whatever its change rate
	// and the number of clients (30 s): all clients together poll a page
	// at most this often.
	MinGap time.Duration
	// FloorFraction is the least time gap as a fraction of the page's
	// mean time between changes, 1/λ̂ (0.2); MinSamples is the number of
	// check samples λ̂ needs (5, as the scheduler's).
	FloorFraction float64
	MinSamples    int
	Now           func() time.Time

	mu      sync.Mutex
	next    int64
	clients map[int64]*client
	users   map[int64]*schedule
}

type client struct {
	id, userID int64
	name, addr string
	joined     time.Time
	seen       time.Time
	fetches    int64
}

// schedule is the membership a user's schedule was computed for.
type schedule struct {
	begin  time.Time
	online []int64
	// watches are the time gaps given out for this membership, and when
	// each watch's polls began (see place).
	watches map[int64]placement
}

// placement is a watch's time gap and the start of its polls.
type placement struct {
	gap   time.Duration
	begin time.Time
}

// Slot is a client's place in a watch's schedule.
type Slot struct {
	Client       int64         `json:"client"`
	Name         string        `json:"name"`
	Index        int           `json:"index"`
	CrawlGap     time.Duration `json:"crawl_gap"`
	DelayToStart time.Duration `json:"delay_to_start"`
	Begin        time.Time     `json:"begin"`
	LastSeen     time.Time     `json:"last_seen"`
	Reports      int64         `json:"reports"`
}

// Assignment tells a client to poll a watch: from Begin+DelayToStart,
// every CrawlGap, with a light check against the newest stored version
// (its validators, body hash and summary).
type Assignment struct {
	WatchID      int64         `json:"watch_id"`
	URL          string        `json:"url"`
	ETag         string        `json:"etag,omitempty"`
	LastModified string        `json:"last_modified,omitempty"`
	TimeGap      time.Duration `json:"time_gap"`
	CrawlGap     time.Duration `json:"crawl_gap"`
	DelayToStart time.Duration `json:"delay_to_start"`
	Begin        time.Time     `json:"begin"`
	Clients      int           `json:"clients"`
	Index        int           `json:"index"`
	// Version is the newest stored version (0 for none), BodyHash the
	// MD5 of its body and Summary its page summary (see Summary): a page
	// that differs from both is reported as changed.
	Version  int    `json:"version"`
	BodyHash string `json:"body_hash,omitempty"`
	Summary  string `json:"summary,omitempty"`
}

// NewCoordinator returns a Coordinator with the default knobs.
func NewCoordinator(store ClientStore, m Detector) *Coordinator {
	return &Coordinator{Store: store, Manager: m, OnlineFor: 90 * time.Second, Poll: 30 * time.Second,
		ClientGap: 5 * time.Minute, MinGap: 30 * time.Second, FloorFraction: 0.2, MinSamples: 5,
		Now: time.Now, clients: map[int64]*client{}, users: map[int64]*schedule{}}
}

func (c *Coordinator) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Register adds a client of userID and returns its id. Errors: EINVALID
// for a name over 100 characters; ERATELIMIT beyond 100 clients online
// for one user.
func (c *Coordinator) Register(userID int64, name, addr string) (int64, error) {
	if len(name) > 100 {
		return 0, changedigest.Errorf(changedigest.EINVALID, "client name is longer than 100 characters")
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.onlineLocked(userID, now)) >= 100 {
		return 0, changedigest.Errorf(changedigest.ERATELIMIT, "too many clients online for this user (100)")
	}
	c.next++
	id := c.next
	if name == "" {
		name = "client " + strconv.FormatInt(id, 10)
	}
	c.clients[id] = &client{id: id, userID: userID, name: name, addr: addr, joined: now, seen: now}
	c.onlineLocked(userID, now)
	return id, nil
}

// Leave removes a client. Errors: ENOTFOUND when it is not userID's.
func (c *Coordinator) Leave(userID, id int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.clients[id]
	if cl == nil || cl.userID != userID {
		return changedigest.Errorf(changedigest.ENOTFOUND, "there is no client %d", id)
	}
	delete(c.clients, id)
	c.onlineLocked(userID, c.now())
	return nil
}

// onlineLocked lists userID's online clients in the order they joined,
// drops those gone silent, and begins the schedule anew when the list
// changed.
func (c *Coordinator) onlineLocked(userID int64, now time.Time) []*client {
	var on []*client
	for id, cl := range c.clients {
		if now.Sub(cl.seen) > c.OnlineFor {
			delete(c.clients, id)
			continue
		}
		if cl.userID == userID {
			on = append(on, cl)
		}
	}
	slices.SortFunc(on, func(a, b *client) int { return cmp.Or(a.joined.Compare(b.joined), cmp.Compare(a.id, b.id)) })
	ids := make([]int64, len(on))
	for i, cl := range on {
		ids[i] = cl.id
	}
	s := c.users[userID]
	if s == nil || !slices.Equal(s.online, ids) {
		c.users[userID] = &schedule{begin: now, online: ids, watches: map[int64]placement{}}
	}
	return on
}

// TimeGap is the time between two polls of w by its k clients together:
//
//	time_gap = max(ClientGap / k, floor),  floor = max(MinGap, FloorFraction / λ̂)
//
// Seed 002 lets the minimum time between two client polls depend on the
// page's change frequency (its Poisson estimate) and on the number of
// clients, and has the server schedule "the optimal number of clients"
// so that more clients bring no overhead. Here each client polls a page
// at most every ClientGap, so k clients shorten the gap as 1/k, and
// detection (about half the gap) with it, until the floor: polls closer
// than a fifth of the mean time between changes gain little (at gap g a
// Poisson page shows 1 − (1 − e^(−λg))/(λg) of its changes only merged
// with the next: 9 % at λg = 0.2, 21 % at the scheduler's 0.5, 5 % at
// 0.1 for twice the polls). From Optimal clients on (ClientGap / floor)
// the gap stays at the floor and each client's crawl_gap = k × time_gap
// grows, so its fetches fall as 1/k.
//
// λ̂ is the scheduler's estimate from the watch's check samples
// (crawl.EstimateRate). With fewer than MinSamples samples nothing is
// known yet and only MinGap bounds the gap; when the samples saw no
// change, the page is taken to change at most once over the time they
// span.
func (c *Coordinator) TimeGap(w *changedigest.Watch, k int) time.Duration {
	return max(c.ClientGap/time.Duration(max(k, 1)), c.Floor(w))
}

// Floor is the least time gap of w, from its change rate (see TimeGap).
func (c *Coordinator) Floor(w *changedigest.Watch) time.Duration {
	floor := c.MinGap
	if len(w.Samples) < max(c.MinSamples, 1) || c.FloorFraction <= 0 {
		return floor
	}
	mean := 0.0 // mean time between changes, in seconds
	if rate := crawl.EstimateRate(w.Samples); rate > 0 {
		mean = 1 / rate
	} else {
		for _, s := range w.Samples {
			mean += max(s.Interval.Seconds(), 0)
		}
	}
	if f := c.FloorFraction * mean; f < (1 << 62 / float64(time.Second)) {
		floor = max(floor, time.Duration(f*float64(time.Second)))
	}
	return floor
}

// Optimal is the number of clients from which w's time gap is at its
// floor: more clients than this make no page poll more often, they
// share the polls.
func (c *Coordinator) Optimal(w *changedigest.Watch) int {
	floor := max(c.Floor(w), 1)
	return max(int((c.ClientGap+floor-1)/floor), 1)
}

// placeLocked is w's time gap for k clients and the start of its polls,
// kept while the membership lasts so that every client places its polls
// on one grid: the change-rate estimate moves with each check, and
// clients asking at different times for gaps that differ a little would
// drift apart, since a slot is Begin + i × gap + n × k × gap, and a new
// grid postpones the polls of the clients late in the turn. The gap is
// given anew, from now, only when the rule's differs from it by more
// than half (a quarter was measured to re-place too often: the estimate
// drifts as the checks that reports trigger join the samples). A kept
// gap was the rule's for the same k, so the bounds hold. The start is shifted within one gap so that the clients'
// polls fall midway between the server's own checks (at its next check
// plus half a gap) rather than next to them, which also keeps a user's
// pages from being polled all at once.
func (c *Coordinator) placeLocked(s *schedule, w *changedigest.Watch, k int, now time.Time) placement {
	gap := c.TimeGap(w, k)
	p, ok := s.watches[w.ID]
	if ok && 2*(gap-p.gap) <= p.gap && 2*(p.gap-gap) <= p.gap {
		return p
	}
	p = placement{gap: gap, begin: s.begin}
	if ok {
		p.begin = now
	}
	if !w.NextCheck.IsZero() && gap > 0 {
		off := w.NextCheck.Add(gap/2).Sub(p.begin) % gap
		if off < 0 {
			off += gap
		}
		p.begin = p.begin.Add(off)
	}
	s.watches[w.ID] = p
	return p
}

// Assignments are client id's polls, and count as its sign of life.
// Errors: ENOTFOUND when the client is not userID's or was dropped
// (it registers again).
func (c *Coordinator) Assignments(ctx context.Context, userID, id int64) ([]Assignment, error) {
	now := c.now()
	c.mu.Lock()
	cl := c.clients[id]
	if cl == nil || cl.userID != userID || now.Sub(cl.seen) > c.OnlineFor {
		c.mu.Unlock()
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "there is no client %d online; register again", id)
	}
	cl.seen = now
	on := c.onlineLocked(userID, now)
	index := slices.Index(on, cl)
	k := len(on)
	sched := c.users[userID]
	c.mu.Unlock()

	ws, err := c.Store.Watches(ctx, userID, "")
	if err != nil {
		return nil, err
	}
	// A watch with request options (headers, cookies, basic auth, POST)
	// is checked by the server only: a client would fetch another page
	// without them, and their secrets never leave the server.
	ws = slices.DeleteFunc(ws, func(w changedigest.Watch) bool {
		return w.Paused || w.Kind == changedigest.KindFeed || !w.Request.IsEmpty()
	})
	places := make([]placement, len(ws))
	c.mu.Lock()
	for i := range ws {
		places[i] = c.placeLocked(sched, &ws[i], k, now)
	}
	c.mu.Unlock()
	out := make([]Assignment, 0, len(ws))
	for i := range ws {
		w := &ws[i]
		gap := places[i].gap
		a := Assignment{WatchID: w.ID, URL: w.URL, ETag: w.ETag, LastModified: w.LastModified,
			TimeGap: gap, CrawlGap: gap * time.Duration(k), DelayToStart: gap * time.Duration(index),
			Begin: places[i].begin, Clients: k, Index: index}
		seq, hash, sum, err := c.Manager.Latest(ctx, w.ID)
		if err != nil {
			return nil, err
		}
		if seq > 0 {
			a.Version, a.BodyHash, a.Summary = seq, hash, sum.String()
		}
		out = append(out, a)
	}
	return out, nil
}

// Slots are the clients online for w, with their places in its schedule.
func (c *Coordinator) Slots(w *changedigest.Watch) []Slot {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	on := c.onlineLocked(w.UserID, now)
	if len(on) == 0 {
		return nil
	}
	p := c.placeLocked(c.users[w.UserID], w, len(on), now)
	gap := p.gap
	out := make([]Slot, len(on))
	for i, cl := range on {
		out[i] = Slot{Client: cl.id, Name: cl.name, Index: i, CrawlGap: gap * time.Duration(len(on)),
			DelayToStart: gap * time.Duration(i), Begin: p.begin, LastSeen: cl.seen, Reports: cl.fetches}
	}
	return out
}

// Online is the number of userID's clients online.
func (c *Coordinator) Online(userID int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.onlineLocked(userID, c.now()))
}

// Report takes a client's report that watch's page changed since
// version base, the one its assignment named. The watch is
// made due at once; its verified fetch confirms or refutes the report.
// Errors: ENOTFOUND for a client or watch not the user's; EFORBIDDEN when
// the client is ignored or the watch has request options (clients are
// not given those); ERATELIMIT over the client's rate limit.
func (c *Coordinator) Report(ctx context.Context, userID, id, watchID int64, base int) error {
	now := c.now()
	c.mu.Lock()
	cl := c.clients[id]
	if cl == nil || cl.userID != userID {
		c.mu.Unlock()
		return changedigest.Errorf(changedigest.ENOTFOUND, "there is no client %d online; register again", id)
	}
	cl.seen = now
	cl.fetches++
	// Keyed by user and address, so a client cannot shed its strikes by
	// registering again.
	reporter := "client of user " + strconv.FormatInt(userID, 10) + " at " + cl.addr
	c.mu.Unlock()
	ws, err := c.Store.Watches(ctx, userID, "")
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ws, func(w changedigest.Watch) bool { return w.ID == watchID })
	if i < 0 {
		return changedigest.Errorf(changedigest.ENOTFOUND, "watch %d is not yours", watchID)
	}
	if !ws[i].Request.IsEmpty() {
		return changedigest.Errorf(changedigest.EFORBIDDEN, "watch %d has request options (headers, cookies, basic auth or a POST): only the server checks it", watchID)
	}
	return c.Manager.ClientReport(ctx, reporter, watchID, base, now)
}
