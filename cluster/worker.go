package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/changedigest/changedigest/metrics"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// Worker takes due checks from the work queue and runs them through the
// check pipeline (fetch, segment, compare against the newest version in
// the versions stream, append the new version there). A check is
// acknowledged only after its version is stored; one a worker took and
// did not acknowledge (its node died) goes to another worker after the
// queue's AckWait. One request at a time goes to a host across the
// cluster, HostGap apart.
type Worker struct {
	Conn *Conn
	// Pipeline is the check pipeline; its Track is replaced by the
	// versions stream for each check.
	Pipeline *crawl.Pipeline
	// Node, when set, is the node this worker runs in: a check of a
	// watch whose shard it serves reads the node's view (see ownerTrack).
	Node *Node
	// Workers bounds the checks running at once on this node (default 16).
	Workers int
	// CheckTimeout bounds one check (default: the queue's AckWait less 5 s).
	CheckTimeout time.Duration
	Logger       *slog.Logger

	// local keeps hosts busy and free while no other node is alive.
	local hostTable

	// Done counts the checks this worker finished (Failed of them with
	// an error); Busy the ones it put back because their host was taken,
	// Retried because JetStream did not answer.
	Done, Busy, Failed, Retried atomic.Int64
}

// Run works until ctx ends.
func (wk *Worker) Run(ctx context.Context) error {
	c := wk.Conn
	n := wk.Workers
	if n <= 0 {
		n = 16
	}
	cons, err := c.js.CreateOrUpdateConsumer(ctx, checksStream, jetstream.ConsumerConfig{
		Durable:       workerDurable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.Config.AckWait,
		MaxAckPending: 100000,
		MaxDeliver:    -1,
		Replicas:      c.Config.Replicas,
	})
	if err != nil {
		return fmt.Errorf("cluster: the checks consumer: %w", err)
	}
	work := make(chan jetstream.Msg)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case work <- m:
		case <-ctx.Done():
		}
	}, jetstream.PullMaxMessages(n), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoHeartbeat) {
			wk.logger().Debug("checks consumer", "err", err)
		}
	}))
	if err != nil {
		return fmt.Errorf("cluster: consume checks: %w", err)
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-work:
					wk.handle(ctx, m)
				}
			}
		})
	}
	<-ctx.Done()
	cc.Stop()
	wg.Wait()
	return nil
}

func (wk *Worker) logger() *slog.Logger {
	if wk.Logger != nil {
		return wk.Logger
	}
	return slog.Default()
}

// handle runs one queued check.
func (wk *Worker) handle(ctx context.Context, m jetstream.Msg) {
	c := wk.Conn
	var cm checkMsg
	if err := json.Unmarshal(m.Data(), &cm); err != nil || cm.Watch.ID <= 0 {
		wk.logger().Error("dropping a malformed check message", "subject", m.Subject(), "err", err)
		m.Term()
		return
	}
	w := &cm.Watch
	shard := ShardOf(w.ID, c.Config.Shards)
	t := &checkTrack{c: c, shard: shard, due: cm.Due, matrix: max(wk.Pipeline.Matrix, 1)}

	// A check delivered again may have stored its version before its
	// node died: then it is done.
	if meta, err := m.Metadata(); err == nil && meta.NumDelivered > 1 {
		if out, ok := t.stored(ctx, w.ID, cm.Due); ok {
			wk.finish(ctx, m, w.ID, cm.Due, reply{Outcome: out})
			return
		}
		t.read, t.last = false, nil
	}

	out, err, busy := wk.run(ctx, w, t, wk.Node.alone())
	if busy > 0 {
		wk.Busy.Add(1)
		m.NakWithDelay(busy)
		return
	}
	if ctx.Err() != nil {
		return // not acknowledged: another worker takes it
	}
	if errors.Is(err, errUnavailable) {
		if meta, merr := m.Metadata(); merr == nil && meta.NumDelivered < 10 {
			// Not the page's fault: run it again in a moment, here or
			// on another node, rather than record a failure.
			wk.Retried.Add(1)
			m.NakWithDelay(time.Second)
			return
		}
	}
	r := reply{Outcome: out}
	if err != nil {
		r.Err = err.Error()
		wk.Failed.Add(1)
	}
	wk.finish(ctx, m, w.ID, cm.Due, r)
}

// run runs a check of w with the stream's track t, as the pipeline reads
// and writes it (the node's view when it serves the watch, see
// ownerTrack), once the host is free: one request at a time to a host
// across the cluster, or (local) within this node when no other node is
// alive. busy > 0 says the host was taken: nothing ran, try again after
// busy. The host's gap starts when its page is read (crawl.Answered), and
// its length follows its answer time.
func (wk *Worker) run(ctx context.Context, w *changedigest.Watch, t *checkTrack, local bool) (out crawl.Outcome, err error, busy time.Duration) {
	c := wk.Conn
	host := crawl.HostKey(w.URL)
	if host != "" {
		ok, wait, err := wk.takeHost(ctx, host, local)
		if err != nil {
			wk.logger().Warn("host lock", "host", host, "err", err)
		} else if !ok {
			return crawl.Outcome{}, nil, wait
		}
	}
	timeout := wk.CheckTimeout
	if timeout <= 0 {
		timeout = max(c.Config.AckWait-5*time.Second, c.Config.AckWait/2)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	freed := false
	free := func(out crawl.Outcome, err error) {
		if host == "" || freed {
			return
		}
		freed = true
		gap := crawl.GapAfter(c.Config.HostGap, c.Config.GapFactor, out, err)
		if local {
			wk.local.free(host, gap)
		} else {
			c.hosts.Put(ctx, hostKey(host), freeFor(gap))
		}
	}
	cctx = crawl.WithAnswered(cctx, func(answer time.Duration) { free(crawl.Outcome{Answer: answer}, nil) })
	p := *wk.Pipeline
	p.Track = t
	t.node = wk.Node
	if ot := wk.Node.ownerTrack(w.ID, t); ot != nil {
		p.Track = ot
	}
	start := time.Now()
	out, err = p.Check(cctx, w)
	free(out, err)
	measureCheck(out, err, time.Since(start))
	return out, err, 0
}

// measureCheck counts a check's result and time in the service's metrics.
func measureCheck(out crawl.Outcome, err error, took time.Duration) {
	metrics.CheckSeconds.Observe(took.Seconds())
	if err != nil {
		metrics.Checks.With("failed").Inc()
		metrics.CheckFailures.With(changedigest.ErrorCode(err)).Inc()
		return
	}
	metrics.Checks.With(strings.ReplaceAll(out.Result.String(), " ", "_")).Inc()
}

// checkHere runs a check of w on this node, without the work queue: for a
// node that no other node shares the work with. It keeps what the queue
// gives a check: the host's turn (waited for here), and a check that
// failed because JetStream did not answer is run again a second later,
// up to ten times.
func (wk *Worker) checkHere(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
	c := wk.Conn
	for tries := 1; ; tries++ {
		t := &checkTrack{c: c, shard: ShardOf(w.ID, c.Config.Shards), due: w.NextCheck, matrix: max(wk.Pipeline.Matrix, 1)}
		out, err, busy := wk.run(ctx, w, t, true)
		wait := busy
		if busy > 0 {
			wk.Busy.Add(1)
		} else if errors.Is(err, errUnavailable) && tries < 10 && ctx.Err() == nil {
			wk.Retried.Add(1)
			wait = time.Second
		} else {
			wk.Done.Add(1)
			if err != nil {
				wk.Failed.Add(1)
			}
			return out, err
		}
		select {
		case <-ctx.Done():
			return crawl.Outcome{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// finish sends the outcome to the watch's owner and acknowledges the
// check. The outcome also goes to the check's own subject, where a node
// that took the watch over waits for a check its previous owner queued.
func (wk *Worker) finish(ctx context.Context, m jetstream.Msg, id int64, due time.Time, r reply) {
	if data, err := json.Marshal(r); err == nil {
		if to := m.Headers().Get(hdrReply); to != "" {
			wk.Conn.nc.Publish(to, data)
		}
		wk.Conn.nc.Publish(outcomeSubject(id, due), data)
	}
	// An acknowledgement lost on the way gets the check delivered again,
	// which finds its version stored: no need to wait for the server's.
	if err := m.Ack(); err != nil && ctx.Err() == nil {
		wk.logger().Warn("acknowledging a check", "subject", m.Subject(), "err", err)
	}
	wk.Done.Add(1)
}

// A host's entry in the hosts bucket: busy while a request to it runs,
// with the name of the node whose worker runs it ("busy n1"), free
// after, with the gap to keep from the entry's time (the server's): "free
// 30ms". A bare "free" keeps HostGap; a bare "busy" (an older node's) is
// held for AckWait.
var (
	hostBusy = []byte("busy")
	hostFree = []byte("free")
)

func freeFor(gap time.Duration) []byte { return []byte(string(hostFree) + " " + gap.String()) }

// busyBy is the entry of a host that node's worker is asking.
func busyBy(node string) []byte { return []byte(string(hostBusy) + " " + node) }

// busyOf reads a host's entry: whether a request to it runs, and on
// which node ("" when the entry does not say).
func busyOf(v []byte) (busy bool, node string) {
	if string(v) == string(hostBusy) {
		return true, ""
	}
	node, busy = strings.CutPrefix(string(v), string(hostBusy)+" ")
	return busy, node
}

// gapOf reads the gap of a host's free entry: HostGap when it has none.
func (c *Conn) gapOf(v []byte) time.Duration {
	if rest, ok := strings.CutPrefix(string(v), string(hostFree)+" "); ok {
		if d, err := time.ParseDuration(rest); err == nil && d >= 0 {
			return min(d, c.Config.HostGap)
		}
	}
	return c.Config.HostGap
}

// takeHost marks a host busy unless a request to it runs (a busy entry
// younger than AckWait, of a node that is alive: the request of a worker
// that died ends with it) or ended less than its gap ago; when it does
// not, wait is how long to leave the check before trying again.
// JetStream's compare-and-set lets one worker in the cluster take it.
func (wk *Worker) takeHost(ctx context.Context, host string, local bool) (ok bool, wait time.Duration, err error) {
	c := wk.Conn
	if local {
		ok, wait = wk.local.take(host, c.Config.AckWait, c.Config.HostGap)
		return ok, wait, nil
	}
	key := hostKey(host)
	wait = c.Config.HostGap
	me := busyBy(c.Config.Name)
	e, err := c.hosts.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		_, err = c.hosts.Create(ctx, key, me)
		if conflict(err) {
			return false, wait, nil
		}
		return err == nil, wait, err
	}
	if err != nil {
		return false, wait, err
	}
	age := time.Since(e.Created())
	busy, holder := busyOf(e.Value())
	if busy && age < c.Config.AckWait && !wk.Node.gone(holder, age) {
		return false, wait, nil
	}
	if gap := c.gapOf(e.Value()); !busy && age < gap {
		return false, max(gap-age, time.Millisecond), nil
	}
	_, err = c.hosts.Update(ctx, key, me, e.Revision())
	if conflict(err) {
		return false, wait, nil
	}
	return err == nil, wait, err
}

// hostTable is the hosts bucket's rule kept in memory, for a node with
// no other node alive: the same busy and free states and gaps, without a
// message to JetStream for each.
type hostTable struct {
	mu sync.Mutex
	m  map[string]hostEntry
}

type hostEntry struct {
	busy bool
	at   time.Time
	gap  time.Duration
}

// take marks host busy unless a request to it runs (busy for less than
// ackWait) or its gap is not over; wait is then how long to leave the
// check before trying again.
func (t *hostTable) take(host string, ackWait, hostGap time.Duration) (ok bool, wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.m == nil {
		t.m = map[string]hostEntry{}
	}
	if e, found := t.m[host]; found {
		age := now.Sub(e.at)
		if e.busy && age < ackWait {
			return false, hostGap
		}
		if !e.busy && age < e.gap {
			return false, max(e.gap-age, time.Millisecond)
		}
	}
	if len(t.m) >= 4096 {
		// Forget hosts whose gap is over: they would be taken anyway.
		for h, e := range t.m {
			if !e.busy && now.Sub(e.at) >= e.gap {
				delete(t.m, h)
			}
		}
	}
	t.m[host] = hostEntry{busy: true, at: now}
	return true, 0
}

// free ends host's request: its gap starts now.
func (t *hostTable) free(host string, gap time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]hostEntry{}
	}
	t.m[host] = hostEntry{at: time.Now(), gap: gap}
}
