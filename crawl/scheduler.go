package crawl

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
)

// Result is what a successful check found.
type Result int

// Results of a check.
const (
	// NotModified: the server answered 304; nothing was downloaded.
	NotModified Result = iota + 1
	// Unchanged: a body was fetched and held no new change.
	Unchanged
	// Changed: a new version with changes was stored.
	Changed
	// FirstVersion: the first version of the watch was stored. It is not
	// a change, and it gives the change-rate estimator no sample.
	FirstVersion
)

func (r Result) String() string {
	switch r {
	case NotModified:
		return "not modified"
	case Unchanged:
		return "unchanged"
	case Changed:
		return "changed"
	case FirstVersion:
		return "first version"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Outcome is what the scheduler needs to know of a successful check.
type Outcome struct {
	Result Result
	// ETag and LastModified are the validators of the fetched version,
	// sent back on the next check. For NotModified, empty values keep the
	// ones the watch has.
	ETag         string
	LastModified string
	// RetryAfter, when later than the next due time, delays the next check.
	RetryAfter time.Time
	// Answer is how long the host took to answer (the fetch, without the
	// detection and storing after it): what the host's gap follows.
	Answer time.Duration
	// Seq is the number of the version the check stored (0: none).
	Seq int
}

// Outcome returns what the response means to the scheduler when the
// pipeline found res (Unchanged, Changed or FirstVersion) in its body; a
// not-modified response is NotModified whatever res says.
func (r *Response) Outcome(res Result) Outcome {
	if r.NotModified {
		res = NotModified
	}
	return Outcome{Result: res, ETag: r.ETag, LastModified: r.LastModified, Answer: r.Duration}
}

// DueSkipper is a Store that can leave out, without reading them, the
// due watches the scheduler is checking already: those come first in the
// due order and would be read again at every dispatch.
type DueSkipper interface {
	// DueWatchesSkipping is DueWatches without the watches skip refuses
	// (not counted against limit).
	DueWatchesSkipping(ctx context.Context, now time.Time, limit int, skip func(watchID int64) bool) ([]*changedigest.Watch, error)
}

// Store is the watch store as the scheduler sees it.
type Store interface {
	// DueWatches returns at most limit watches that are not paused and
	// whose NextCheck is at or before now (a zero NextCheck is due),
	// earliest first. The scheduler modifies the returned watches, so
	// they must not be shared with other readers.
	DueWatches(ctx context.Context, now time.Time, limit int) ([]*changedigest.Watch, error)
	// SaveSchedule persists the fields of w the crawler owns: NextCheck,
	// LastCheck, LastChange, LastError, LastErrorAt, ErrorCount, Checks,
	// ChangeChecks, ETag, LastModified, RetryAfter and Samples. Fields a
	// user edits must be left as stored, so that an edit made while a
	// check ran is not lost. A watch deleted meanwhile is not an error.
	SaveSchedule(ctx context.Context, w *changedigest.Watch) error
}

// Checker runs one check of a watch (fetch, segment, compare, store) as
// the scheduler sees it. A check that fails returns an error; it is
// recorded on the watch (LastError, back-off) and must not have stored a
// version. Check must return promptly once ctx is cancelled.
type Checker interface {
	Check(ctx context.Context, w *changedigest.Watch) (Outcome, error)
}

// CheckFunc adapts a function to the Checker interface.
type CheckFunc func(ctx context.Context, w *changedigest.Watch) (Outcome, error)

// Check calls f(ctx, w).
func (f CheckFunc) Check(ctx context.Context, w *changedigest.Watch) (Outcome, error) {
	return f(ctx, w)
}

// Report describes one finished check.
type Report struct {
	// Watch is the watch with its schedule state updated (NextCheck, ...).
	Watch   *changedigest.Watch
	Outcome Outcome
	// Err is the check's error (nil when it succeeded), or the error of
	// saving the schedule.
	Err      error
	Start    time.Time
	Duration time.Duration
	// Done and Total count the checks of a CheckNow pass (0 under Run).
	Done, Total int
}

// Summary counts the results of a CheckNow pass.
type Summary struct {
	Checked, NotModified, Unchanged, Changed, FirstVersion, Failed int
	// Skipped counts watches already being checked by Run.
	Skipped int
}

// Add adds the counts of o to sum.
func (sum *Summary) Add(o Summary) {
	sum.Checked += o.Checked
	sum.NotModified += o.NotModified
	sum.Unchanged += o.Unchanged
	sum.Changed += o.Changed
	sum.FirstVersion += o.FirstVersion
	sum.Failed += o.Failed
	sum.Skipped += o.Skipped
}

func (sum *Summary) add(r Report) {
	sum.Checked++
	if r.Err != nil {
		sum.Failed++
		return
	}
	switch r.Outcome.Result {
	case NotModified:
		sum.NotModified++
	case Unchanged:
		sum.Unchanged++
	case Changed:
		sum.Changed++
	case FirstVersion:
		sum.FirstVersion++
	}
}

// Scheduler runs checks when they are due, with a bounded pool of workers
// and per-host politeness: at most one request at a time to a host (name
// and port) and a gap between the end of one and the start of the next.
// The gap follows the host (the delay factor of crawlers such as
// Heritrix): GapFactor times how long its last answer took, up to
// HostGap, so a server that answers in 2 ms is asked again 20 ms later
// and a slow, failing or throttling one waits the full HostGap or more.
// A watch whose host is taken does not hold a worker: the next one
// for that host waits in memory until the host is free, and any others
// get their NextCheck moved to slots HostGap apart, saved to the store.
// So the watches of one host are staggered (the staggered crawl gaps of
// Meegahapola et al.), and the policy's jitter keeps watches added
// together from staying in step.
//
// Set the knobs before Run or CheckNow. Run and CheckNow may run at the
// same time; a watch is never checked by both at once.
type Scheduler struct {
	Store   Store
	Checker Checker
	Policy  Policy
	// Workers bounds the checks running at once (default 16).
	Workers int
	// CheckTimeout bounds one check, so that a stuck one cannot hold a
	// worker for ever (default 5 min; the fetcher's own timeouts are
	// shorter). A check that runs out of time is recorded as failed.
	CheckTimeout time.Duration
	// HostGap is the longest gap between two requests to one host
	// (default 1 s): the gap after a failed check, and the cap of the
	// gap GapFactor gives.
	HostGap time.Duration
	// GapFactor sets the gap after a host's answer to that many times the
	// answer's duration, up to HostGap (default 10: a host is left idle by
	// this client at least nine tenths of the time). 0 makes every gap
	// HostGap.
	GapFactor int
	// ThrottleGap is how long a host is left alone after a 429 or 503
	// without Retry-After (default 1 min); MaxHostDelay caps a host's
	// Retry-After for the other watches on it (default 1 h). The watch
	// that got the answer honours its Retry-After in full (see Policy).
	ThrottleGap  time.Duration
	MaxHostDelay time.Duration
	// Tick is how often Run looks for due watches when nothing else wakes
	// it (default 1 s; see Wake).
	Tick time.Duration
	// MaxPostpone is how many busy-host watches one pass may postpone
	// before it lets the loop breathe (default 256).
	MaxPostpone int
	// MaxSlotStep, when set, caps the spacing of a busy host's postponed
	// watches, which is otherwise the host's usual check duration plus
	// HostGap. A cluster node sets it: there a check's duration is the
	// round trip through the work queue, not the host's answer time, and
	// the host's watches would be spread over minutes.
	MaxSlotStep time.Duration
	// OnCheck, if set, is called after every check of Run, from the
	// scheduling goroutine (keep it short).
	OnCheck func(Report)
	// Hold, if set, reports a due watch that is not to be checked now
	// (its owner's account is disabled): Run moves its turn HoldFor on
	// (default 1 h) and asks again then.
	Hold    func(w *changedigest.Watch) bool
	HoldFor time.Duration
	// Now is the clock (default time.Now). Timers use the runtime clock:
	// tests of the loop run inside testing/synctest.
	Now    func() time.Time
	Logger *slog.Logger

	mu      sync.Mutex
	claimed map[int64]bool
	// later holds the watches postponed in memory (a DueSkipper store
	// leaves them out until then): a busy host's due watches wait their
	// turn without a write each time their turn is moved.
	later map[int64]time.Time
	wake  chan struct{}
}

// DefaultGapFactor is the Scheduler's default GapFactor.
const DefaultGapFactor = 10

// NewScheduler returns a Scheduler with the default knobs.
func NewScheduler(store Store, checker Checker) *Scheduler {
	return &Scheduler{
		Store:        store,
		Checker:      checker,
		Policy:       NewPolicy(),
		Workers:      16,
		CheckTimeout: 5 * time.Minute,
		HostGap:      time.Second,
		GapFactor:    DefaultGapFactor,
		ThrottleGap:  time.Minute,
		MaxHostDelay: time.Hour,
		Tick:         time.Second,
		MaxPostpone:  256,
		Now:          time.Now,
		Logger:       slog.Default(),
	}
}

// Wake makes Run look for due watches now rather than at its next tick:
// for a watch just made due (a page agent's report, a check asked for).
// It never blocks.
func (s *Scheduler) Wake() {
	select {
	case s.wakeCh() <- struct{}{}:
	default:
	}
}

// wakeCh is Wake's channel, made on first use (by the loop, so that in
// tests it belongs to the loop's synctest bubble).
func (s *Scheduler) wakeCh() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
	}
	return s.wake
}

// minStep is the least time between two slots handed out for one host,
// so that a host gap of zero does not make postponed watches churn.
const minStep = 10 * time.Millisecond

// Run checks due watches until ctx is cancelled, then cancels the checks
// in flight, waits for its workers and returns nil. A check cut short by
// the cancellation leaves its watch's state as it was (still due). Run
// returns an error only for a bad configuration; store errors are logged
// and retried on the next tick.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.Store == nil || s.Checker == nil {
		return errors.New("crawl: scheduler needs a Store and a Checker")
	}
	src := &storeSource{s: s}
	s.loop(ctx, src, s.OnCheck)
	return nil
}

// CheckNow checks the given watches once, whether due or not (paused
// ones too), with the same pool bound and host politeness as Run. It
// updates the watches in place, saves their schedule state (not for a
// watch with ID 0, which is checked only), and calls progress (if not
// nil, from one goroutine) after each check. Watches being checked by Run
// at the time are skipped. It returns when all are done, or ctx's error
// when ctx is cancelled first.
func (s *Scheduler) CheckNow(ctx context.Context, progress func(Report), watches ...*changedigest.Watch) (Summary, error) {
	if s.Checker == nil {
		return Summary{}, errors.New("crawl: scheduler needs a Checker")
	}
	src := &listSource{s: s}
	var sum Summary
	seen := map[*changedigest.Watch]bool{}
	for _, w := range watches {
		if w == nil || seen[w] {
			continue
		}
		seen[w] = true
		if !s.claim(w) {
			sum.Skipped++
			continue
		}
		src.items = append(src.items, &listItem{w: w})
	}
	src.waiting = append([]*listItem(nil), src.items...)
	defer func() {
		for _, it := range src.items {
			if !it.done {
				s.release(it.w)
			}
		}
	}()
	s.loop(ctx, src, func(r Report) {
		sum.add(r)
		if progress != nil {
			r.Done, r.Total = sum.Checked, len(src.items)
			progress(r)
		}
	})
	if err := ctx.Err(); err != nil {
		return sum, fmt.Errorf("crawl: check interrupted after %d of %d: %w", sum.Checked, len(src.items), err)
	}
	return sum, nil
}

// claim marks w as being checked; false if it already is.
func (s *Scheduler) claim(w *changedigest.Watch) bool {
	if w.ID == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed[w.ID] {
		return false
	}
	if s.claimed == nil {
		s.claimed = map[int64]bool{}
	}
	s.claimed[w.ID] = true
	delete(s.later, w.ID)
	return true
}

func (s *Scheduler) release(w *changedigest.Watch) {
	if w.ID == 0 {
		return
	}
	s.mu.Lock()
	delete(s.claimed, w.ID)
	s.mu.Unlock()
}

func (s *Scheduler) isClaimed(w *changedigest.Watch) bool { return s.isClaimedID(w.ID) }

func (s *Scheduler) isClaimedID(id int64) bool {
	if id == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimed[id]
}

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scheduler) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// source is where the loop finds work: the store (Run) or a list (CheckNow).
type source interface {
	// due returns up to free unclaimed watches due at now (claimed is
	// how many are claimed: a source that cannot skip them asks for as
	// many more), and whether there may be more; the loop skips claimed
	// ones should some come back.
	due(ctx context.Context, now time.Time, free, claimed int) (ws []*changedigest.Watch, more bool, err error)
	// postpone moves w's turn to until.
	postpone(ctx context.Context, w *changedigest.Watch, until time.Time) error
	// claimed reports whether the loop must skip w.
	claimed(w *changedigest.Watch) bool
	// take claims w for a check; false if someone else has it.
	take(w *changedigest.Watch) bool
	// finish marks w's check as done.
	finish(w *changedigest.Watch)
	// untake gives back a claim that was never checked.
	untake(w *changedigest.Watch)
	// finished reports that nothing is left to do.
	finished() bool
}

type storeSource struct{ s *Scheduler }

func (src *storeSource) due(ctx context.Context, now time.Time, free, claimed int) ([]*changedigest.Watch, bool, error) {
	var (
		ws    []*changedigest.Watch
		err   error
		limit = free
	)
	if sk, ok := src.s.Store.(DueSkipper); ok {
		ws, err = sk.DueWatchesSkipping(ctx, now, limit, func(id int64) bool { return src.s.waiting(id, now) })
	} else {
		limit += claimed
		ws, err = src.s.Store.DueWatches(ctx, now, limit)
	}
	if err != nil {
		return nil, false, err
	}
	more := len(ws) >= limit
	out := ws[:0]
	for _, w := range ws {
		if w == nil || w.Paused {
			continue
		}
		if src.s.Hold != nil && src.s.Hold(w) {
			hold := src.s.HoldFor
			if hold <= 0 {
				hold = time.Hour
			}
			if err := src.postpone(ctx, w, now.Add(hold)); err != nil {
				return nil, false, err
			}
			continue
		}
		out = append(out, w)
	}
	return out, more, nil
}

// postpone moves w's turn to until: in memory when the store can leave
// it out of the due watches (a restart makes it due at once, as it was),
// up to a few hundred watches, since the store still passes over them on
// every look for due watches; else by saving its next check.
func (src *storeSource) postpone(ctx context.Context, w *changedigest.Watch, until time.Time) error {
	s := src.s
	if _, ok := s.Store.(DueSkipper); ok && w.ID != 0 && s.postponeInMemory(w.ID, until) {
		return nil
	}
	if !s.claim(w) {
		return nil
	}
	defer s.release(w)
	w.NextCheck = until
	return s.Store.SaveSchedule(ctx, w)
}

// postponeInMemory notes watch id's turn in memory, unless as many as
// four times the workers (and 256 more) wait there already.
func (s *Scheduler) postponeInMemory(id int64, until time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.later == nil {
		s.later = map[int64]time.Time{}
	}
	if _, ok := s.later[id]; !ok && len(s.later) >= 4*max(s.Workers, 1)+256 {
		// Drop the turns that came (of watches checked or deleted since).
		now := s.now()
		maps.DeleteFunc(s.later, func(_ int64, t time.Time) bool { return !t.After(now) })
		if len(s.later) >= 4*max(s.Workers, 1)+256 {
			return false
		}
	}
	s.later[id] = until
	return true
}

// waiting reports whether watch id is being checked, or postponed in
// memory past now.
func (s *Scheduler) waiting(id int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed[id] {
		return true
	}
	until, ok := s.later[id]
	if ok && !until.After(now) {
		delete(s.later, id)
		return false
	}
	return ok
}

func (src *storeSource) claimed(w *changedigest.Watch) bool { return src.s.isClaimed(w) }
func (src *storeSource) take(w *changedigest.Watch) bool    { return src.s.claim(w) }
func (src *storeSource) finish(w *changedigest.Watch)       { src.s.release(w) }
func (src *storeSource) untake(w *changedigest.Watch)       { src.s.release(w) }
func (src *storeSource) finished() bool                     { return false }

type listItem struct {
	w         *changedigest.Watch
	notBefore time.Time
	taken     bool
	done      bool
}

// listSource serves CheckNow's watches, all due at once, in order. They
// are claimed in the Scheduler for the whole pass.
type listSource struct {
	s       *Scheduler
	items   []*listItem
	waiting []*listItem // from the first not taken, in order
	byWatch map[*changedigest.Watch]*listItem
	ndone   int
}

func (src *listSource) item(w *changedigest.Watch) *listItem {
	if src.byWatch == nil {
		src.byWatch = make(map[*changedigest.Watch]*listItem, len(src.items))
		for _, it := range src.items {
			src.byWatch[it.w] = it
		}
	}
	return src.byWatch[w]
}

func (src *listSource) due(_ context.Context, now time.Time, free, _ int) ([]*changedigest.Watch, bool, error) {
	for len(src.waiting) > 0 && src.waiting[0].taken {
		src.waiting = src.waiting[1:]
	}
	var out []*changedigest.Watch
	for _, it := range src.waiting {
		if len(out) == free {
			return out, true, nil
		}
		if !it.taken && !now.Before(it.notBefore) {
			out = append(out, it.w)
		}
	}
	return out, false, nil
}

func (src *listSource) postpone(_ context.Context, w *changedigest.Watch, until time.Time) error {
	src.item(w).notBefore = until
	return nil
}

func (src *listSource) claimed(w *changedigest.Watch) bool { return src.item(w).taken }

func (src *listSource) take(w *changedigest.Watch) bool {
	src.item(w).taken = true
	return true
}

func (src *listSource) finish(w *changedigest.Watch) {
	it := src.item(w)
	it.done = true
	src.ndone++
	src.s.release(w)
}

func (src *listSource) untake(w *changedigest.Watch) { src.item(w).taken = false }

func (src *listSource) finished() bool { return src.ndone == len(src.items) }

// hostState is the politeness state of one host.
type hostState struct {
	busy    bool
	started time.Time     // start of the check in flight
	took    time.Duration // moving average of the host's check durations
	free    time.Time     // earliest start of the next request
	gap     time.Duration // the gap after the last request (0: none yet)
	// parked is the watch that goes next once the host is free: claimed,
	// held in memory, not postponed.
	parked *changedigest.Watch
	slot   time.Time // the last slot handed to a postponed watch
}

func (h *hostState) ready(now time.Time) bool { return !h.busy && !now.Before(h.free) }

// job is one check handed to a worker.
type job struct {
	w    *changedigest.Watch
	host string
	rep  Report
	// canceled: the check was cut short by shutdown; nothing was saved.
	canceled bool
	// answer is how long the host took to answer, when the checker said
	// so before the check ended (Answered): the host was freed then.
	answer time.Duration
	// sent: the worker sent the answer; answered: the loop freed the host.
	sent, answered bool
}

// answeredKey carries a check's Answered hook in its context.
type answeredKey struct{}

// Answered tells the scheduler running the check of ctx that its host has
// answered, in answer: the page is read, and what is left (comparing,
// storing) does not involve the host. The host's gap starts now instead
// of when the check ends, so its next check need not wait for this one's
// commit, and the commits of a host's consecutive checks can be shared.
// Once per check at most; outside a scheduler it does nothing.
func Answered(ctx context.Context, answer time.Duration) {
	if f, ok := ctx.Value(answeredKey{}).(func(time.Duration)); ok {
		f(answer)
	}
}

// WithAnswered returns a copy of ctx in which Answered calls f, then the
// hook ctx already had (a scheduler's): for a checker that keeps hosts
// apart itself, such as a cluster's worker.
func WithAnswered(ctx context.Context, f func(answer time.Duration)) context.Context {
	prev, _ := ctx.Value(answeredKey{}).(func(time.Duration))
	return context.WithValue(ctx, answeredKey{}, func(d time.Duration) {
		f(d)
		if prev != nil {
			prev(d)
		}
	})
}

// HostKey is the politeness key of a URL: its host name, and its port
// when not the scheme's default (http and https of one name count as one
// server).
func HostKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && !(p == "80" && u.Scheme == "http") && !(p == "443" && u.Scheme == "https") {
		return net.JoinHostPort(host, p)
	}
	return host
}

// loop is the scheduling loop shared by Run and CheckNow: a ticker, a
// timer for the next known free slot and the workers' completions in a
// select, dispatching due watches to a bounded pool of workers.
func (s *Scheduler) loop(ctx context.Context, src source, report func(Report)) {
	workers := max(s.Workers, 1)
	jobs := make(chan *job, workers)
	done := make(chan *job, workers)
	// A check sends at most one answer, before its done: never blocks.
	answers := make(chan *job, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					j.canceled = true
				} else {
					actx := WithAnswered(ctx, func(d time.Duration) {
						if !j.sent {
							j.sent, j.answer = true, d
							answers <- j
						}
					})
					s.check(actx, j)
				}
				done <- j
			}
		})
	}
	l := &loopState{s: s, src: src, jobs: jobs, workers: workers,
		hosts: map[string]*hostState{}, parked: map[string]*hostState{}}
	finish := func(j *job) {
		// The answer was sent before the check ended: take it first.
		for j.sent && !j.answered {
			l.answered(<-answers)
		}
		l.inflight--
		src.finish(j.w)
		if !j.answered {
			l.release(j)
		}
		if !j.canceled && report != nil {
			report(j.rep)
		}
	}

	tick := s.Tick
	if tick <= 0 {
		tick = time.Second
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	wake := s.wakeCh()

	for ctx.Err() == nil {
		if wake := l.dispatch(ctx); !wake.IsZero() {
			timer.Reset(max(wake.Sub(s.now()), time.Millisecond))
		}
		if src.finished() && l.inflight == 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-ticker.C:
			l.sweep(s.now())
		case <-wake:
		case <-timer.C:
		case j := <-answers:
			l.answered(j)
		case j := <-done:
			finish(j)
			for more := true; more; {
				select {
				case j := <-answers:
					l.answered(j)
				case j := <-done:
					finish(j)
				default:
					more = false
				}
			}
		}
	}
	close(jobs)
	go func() {
		wg.Wait()
		close(done)
	}()
	for j := range done {
		finish(j)
	}
	for _, h := range l.parked {
		src.untake(h.parked)
	}
}

// loopState is the loop's own state, touched by its goroutine only.
type loopState struct {
	s        *Scheduler
	src      source
	jobs     chan<- *job
	workers  int
	inflight int
	hosts    map[string]*hostState
	parked   map[string]*hostState // hosts with a parked watch
	// slots holds the future times watches were postponed to, so that
	// the loop wakes up for each.
	slots timeHeap
}

// timeHeap is a min-heap of times.
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// start hands w to a worker and marks its host busy.
func (l *loopState) start(w *changedigest.Watch, key string, h *hostState) {
	h.busy = true
	h.started = l.s.now()
	l.inflight++
	l.jobs <- &job{w: w, host: key}
}

// dispatch hands due watches to free workers. A watch whose host is not
// ready is parked in memory when the host has none parked yet (it goes
// as soon as the host is free), else postponed to a slot HostGap after
// the host's last one. It returns when the loop should look again (zero:
// on the next tick or completion).
func (l *loopState) dispatch(ctx context.Context) (wake time.Time) {
	s := l.s
	now := s.now()
	soon := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	for len(l.slots) > 0 && !l.slots[0].After(now) {
		heap.Pop(&l.slots)
	}
	defer func() {
		if len(l.slots) > 0 {
			soon(l.slots[0])
		}
	}()
	// Parked watches go first, as soon as their host is ready.
	for key, h := range l.parked {
		switch {
		case h.ready(now) && l.inflight < l.workers:
			w := h.parked
			h.parked = nil
			delete(l.parked, key)
			l.start(w, key, h)
		case !h.busy:
			soon(h.free)
		}
	}

	postponed := 0
	maxPostpone := s.MaxPostpone
	if maxPostpone <= 0 {
		maxPostpone = 256
	}
	skip := map[*changedigest.Watch]bool{}
	for l.inflight < l.workers && postponed < maxPostpone && ctx.Err() == nil {
		ws, more, err := l.src.due(ctx, now, (l.workers-l.inflight)+len(skip), l.inflight+len(l.parked))
		if err != nil {
			if ctx.Err() == nil {
				s.logger().Error("crawl: listing due watches", "err", err)
			}
			return wake
		}
		progressed := false
		for _, w := range ws {
			if l.inflight >= l.workers || postponed >= maxPostpone {
				break
			}
			if skip[w] || l.src.claimed(w) {
				continue
			}
			key := HostKey(w.URL)
			h := l.hosts[key]
			if h == nil {
				h = &hostState{}
				l.hosts[key] = h
			}
			if h.ready(now) || h.parked == nil {
				if !l.src.take(w) {
					continue
				}
				progressed = true
				if h.ready(now) {
					l.start(w, key, h)
					continue
				}
				h.parked = w
				l.parked[key] = h
				if !h.busy {
					soon(h.free)
				}
				continue
			}
			until := l.slot(h, now)
			if err := l.src.postpone(ctx, w, until); err != nil {
				s.logger().Error("crawl: postponing watch", "watch_id", w.ID, "err", err)
				skip[w] = true
				continue
			}
			postponed++
			progressed = true
			heap.Push(&l.slots, until)
		}
		if !progressed || !more {
			break
		}
	}
	return wake
}

// slot reserves a turn for a watch whose host is taken (busy, or in its
// gap, with a watch parked for it). The host is expected free at the end
// of its gap, or, when busy, its usual check duration after the check in
// flight started; the parked watch takes that turn, and each further
// watch comes one step (usual duration + the host's gap) after the last
// slot. Before the host's first answer its gap is not known: the slots
// are then handed out close together, and a watch whose slot comes while
// the host is still taken gets a later one, timed by what is known then.
func (l *loopState) slot(h *hostState, now time.Time) time.Time {
	gap := l.s.HostGap
	switch {
	case h.gap > 0:
		gap = h.gap
	case l.s.GapFactor > 0:
		gap = 0
	}
	took := h.took
	if m := l.s.MaxSlotStep; m > 0 && took+gap > m {
		took = max(m-gap, 0)
	}
	step := max(took+gap, minStep)
	t := now
	if h.free.After(t) {
		t = h.free
	}
	if est := h.started.Add(took + gap); h.busy && est.After(t) {
		t = est
	}
	t = t.Add(step) // the parked watch goes first
	if h.slot.After(now) && t.Before(h.slot.Add(step)) {
		t = h.slot.Add(step)
	}
	h.slot = t
	return t
}

// release frees the host of a finished check and starts its gap, longer
// after a 429 or 503.
func (l *loopState) release(j *job) {
	h := l.hosts[j.host]
	if h == nil {
		return
	}
	end := l.s.now()
	l.free(h, end, j.canceled, j.rep.Duration, l.s.gapAfter(j))
	if j.rep.Err != nil && Throttled(j.rep.Err) {
		until := RetryAfter(j.rep.Err)
		if until.IsZero() {
			until = end.Add(l.s.ThrottleGap)
		}
		if limit := end.Add(l.s.MaxHostDelay); l.s.MaxHostDelay > 0 && until.After(limit) {
			until = limit
		}
		if until.After(h.free) {
			h.free = until
		}
	}
}

// answered frees the host of a check whose host has answered (see
// Answered) and starts its gap; the check goes on without it.
func (l *loopState) answered(j *job) {
	j.answered = true
	h := l.hosts[j.host]
	if h == nil {
		return
	}
	now := l.s.now()
	l.free(h, now, false, now.Sub(h.started), GapAfter(l.s.HostGap, l.s.GapFactor, Outcome{Answer: j.answer}, nil))
}

// free marks h free at end plus gap, and counts took (how long the host
// was taken) into its usual duration unless the check was cut short.
func (l *loopState) free(h *hostState, end time.Time, canceled bool, took, gap time.Duration) {
	h.busy = false
	if !canceled {
		if h.took == 0 {
			h.took = took
		} else {
			h.took = (7*h.took + 3*took) / 10
		}
	}
	h.gap = gap
	h.free = end.Add(gap)
}

// gapAfter is the host's gap after the check j (see GapAfter); the full
// HostGap after a check cut short.
func (s *Scheduler) gapAfter(j *job) time.Duration {
	if j.canceled {
		return s.HostGap
	}
	return GapAfter(s.HostGap, s.GapFactor, j.rep.Outcome, j.rep.Err)
}

// GapAfter is a host's gap after a check with outcome o and error err:
// factor times how long the host took to answer, up to hostGap; hostGap
// after a failure, when the answer time is unknown or factor is 0.
func GapAfter(hostGap time.Duration, factor int, o Outcome, err error) time.Duration {
	if err != nil || factor <= 0 || o.Answer <= 0 {
		return hostGap
	}
	return min(hostGap, time.Duration(factor)*o.Answer)
}

// sweep forgets idle hosts whose gap and slots are over.
func (l *loopState) sweep(now time.Time) {
	for k, h := range l.hosts {
		if !h.busy && h.parked == nil && h.free.Before(now) && h.slot.Before(now) {
			delete(l.hosts, k)
		}
	}
}

// check runs one check on a worker and saves the watch's new state.
func (s *Scheduler) check(ctx context.Context, j *job) {
	w := j.w
	start := s.now()
	cctx := ctx
	if s.CheckTimeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, s.CheckTimeout)
		defer cancel()
	}
	o, err := s.runChecker(cctx, w)
	if err != nil && ctx.Err() != nil {
		j.canceled = true
		return
	}
	end := s.now()
	s.Policy.Apply(w, o, err, end)
	j.rep = Report{Watch: w, Outcome: o, Err: err, Start: start, Duration: end.Sub(start)}
	if s.Store != nil && w.ID != 0 {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if serr := s.Store.SaveSchedule(sctx, w); serr != nil {
			s.logger().Error("crawl: saving schedule", "watch_id", w.ID, "err", serr)
			if j.rep.Err == nil {
				j.rep.Err = fmt.Errorf("crawl: saving schedule of watch %d: %w", w.ID, serr)
			}
		}
		cancel()
	}
	lg := s.logger()
	if err != nil {
		lg.Info("crawl: check failed", "watch_id", w.ID, "url", w.URL, "err", err,
			"errors", w.ErrorCount, "next_check", w.NextCheck)
	} else {
		lg.Debug("crawl: checked", "watch_id", w.ID, "url", w.URL, "result", o.Result.String(),
			"took", j.rep.Duration, "next_check", w.NextCheck)
	}
}

// runChecker calls the Checker, turning a panic into an error so that one
// bad page cannot bring the service down.
func (s *Scheduler) runChecker(ctx context.Context, w *changedigest.Watch) (o Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger().Error("crawl: check panicked", "watch_id", w.ID, "url", w.URL, "panic", r, "stack", string(debug.Stack()))
			o, err = Outcome{}, fmt.Errorf("crawl: check of %s failed: internal error (%v)", w.URL, r)
		}
	}()
	return s.Checker.Check(ctx, w)
}
