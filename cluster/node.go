package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
)

// errQueued: the due check was queued before (by this watch's previous
// owner), and is not in the queue any more: its outcome went there.
var errQueued = errors.New("cluster: this check was queued and done before")

// Node is one machine's part of the cluster. It tells the others it is
// alive, owns its share of the shards (taking over those of a node that
// stopped answering, giving some up when a node joins), keeps its store
// as the view of its shards (watch definitions from the watches bucket,
// versions from the versions stream), and schedules their checks through
// the work queue: it is the scheduler's crawl.Store and crawl.Checker.
type Node struct {
	Conn *Conn
	// Store is the node's view of its shards.
	Store *pet.Store
	// Dir keeps how far each shard's view has read the versions stream.
	Dir string
	// Worker, when set, is this node's worker; its counts go into the
	// node's heartbeat.
	Worker *Worker
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Redeliver, when set, makes a delivery this node holds pending
	// again (its dispatcher's Redeliver): what RedeliverAnywhere asks of
	// the node that holds the delivery.
	Redeliver func(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error)
	// Agent, when set, is this node's page agent manager: it does the
	// agent work of the watches the node serves, whichever node received
	// it (see Agents).
	Agent *agent.Manager
	// Scheduler, when set, is this node's scheduler: it runs the checks of
	// the node's watches asked for on other nodes ("check now", see
	// Checker).
	Scheduler *crawl.Scheduler

	started  time.Time
	accounts accountsView
	mu       sync.Mutex
	views    map[int]*view
	dropping map[int]bool // shards being dropped from the store
	// trimmedTo is, by watch, the oldest version its stream was trimmed to.
	trimmedTo map[int64]int
	posMu     sync.Mutex // the positions file
	waiters   sync.Map   // reply token -> chan reply
	tips      tips       // where each watch's track ends in the stream
	// seen is how far the versions stream and the watches bucket are
	// known to reach (watchEnds, and this node's own appends); unsure:
	// the last look at them failed. See follow.
	seen   knownEnds
	unsure atomic.Bool
	// lone: no other node was alive at the last look (every second);
	// alive the nodes that were, and when it looked.
	lone  atomic.Bool
	alive atomic.Pointer[aliveAt]
	// settled: rebalance found the shards settled with settledLive
	// alive; quiet counts the rounds since it last read them.
	settled     bool
	settledLive []string
	quiet       int
	token       atomic.Uint64
	sub         *nats.Subscription
	// held are the login sessions made while storage was full.
	held heldSessions
}

// view is a shard as its owner keeps it.
type view struct {
	shard   int
	cancel  context.CancelFunc
	done    chan struct{}
	claimed time.Time
	// ready is when the view first caught up with the stream (0: not yet).
	ready atomic.Int64
	pos   atomic.Uint64 // stream sequence applied
	// wpos is the watches bucket's stream sequence applied: a view
	// started again reads only the definitions written since.
	wpos atomic.Uint64
	// sched is the schedule state kept for the shard, by watch, while a
	// view rebuilt from the beginning defines its watches; counting, until
	// it catches up, makes the versions it applies count in their watches'
	// schedules (see countCheck). Both follow's alone.
	sched    map[int64]*changedigest.Watch
	counting bool
	// schedChanged: a schedule of the shard changed since the node last
	// kept them in the cluster (see writeSchedules).
	schedChanged atomic.Bool
	pending      atomic.Uint64 // versions left to apply, as last seen
	applied      atomic.Int64
	// wake makes an idle view look at once (poke, watchEnds); forceDefs
	// and forceVersions, set by poke and pokeVersions, make it read the
	// definitions or the versions to their ends, whatever the node knows
	// of them.
	wake                     chan struct{}
	forceDefs, forceVersions atomic.Bool
	// agents answers the agent work of the shard's watches, checkNow the
	// checks of them asked for on other nodes (nil when the node has no
	// agent manager or scheduler, or could not subscribe).
	agents, checkNow *nats.Subscription
}

// NodeInfo is what a node tells the others in its heartbeat.
type NodeInfo struct {
	Name    string    `json:"name"`
	Client  string    `json:"client,omitempty"`
	Started time.Time `json:"started"`
	Beat    time.Time `json:"beat"`
	Shards  []int     `json:"shards"`
	// Ready lists the shards whose view has caught up (served).
	Ready []int `json:"ready"`
	// Lag is the versions its views have still to apply; Applied the
	// versions they applied since this process started.
	Lag     uint64 `json:"lag"`
	Applied int64  `json:"applied"`
	// TakeOver is the longest time a shard took from being claimed to
	// being served, in milliseconds, since this process started.
	TakeOver int64 `json:"takeover_ms"`
	Checks   int64 `json:"checks"`
	Failed   int64 `json:"failed"`
	Busy     int64 `json:"busy"`
	Retried  int64 `json:"retried"`
	// Down is set by Status when the last heartbeat is older than the lease.
	Down bool `json:"down,omitempty"`
}

func (n *Node) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

func (n *Node) logger() *slog.Logger {
	if n.Logger != nil {
		return n.Logger
	}
	return slog.Default()
}

// Run keeps the node in the cluster until ctx ends: heartbeats, shard
// ownership, views. Call it once.
func (n *Node) Run(ctx context.Context) error {
	c := n.Conn
	n.mu.Lock()
	n.started = n.now()
	n.views = map[int]*view{}
	n.mu.Unlock()
	sub, err := c.nc.Subscribe("cd.reply."+c.Config.Name+".*", func(m *nats.Msg) {
		tok := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
		if ch, ok := n.waiters.Load(tok); ok {
			select {
			case ch.(chan reply) <- decodeReply(m.Data):
			default:
			}
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: subscribe to outcomes: %w", err)
	}
	n.sub = sub
	defer sub.Unsubscribe()
	qsubs, err := n.serveQuestions()
	if err != nil {
		return fmt.Errorf("cluster: answer searches: %w", err)
	}
	defer func() {
		for _, s := range qsubs {
			s.Unsubscribe()
		}
	}()
	accountsDone := make(chan struct{})
	go func() {
		defer close(accountsDone)
		n.followAccounts(ctx)
	}()
	defer func() { <-accountsDone }()
	endsDone := make(chan struct{})
	go func() {
		defer close(endsDone)
		n.watchEnds(ctx)
	}()
	defer func() { <-endsDone }()
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		n.keepSchedules(ctx)
	}()
	defer func() { <-schedDone }()
	tick := time.NewTicker(n.beatEvery())
	defer tick.Stop()
	for {
		if err := n.heartbeat(ctx); err != nil && ctx.Err() == nil {
			n.logger().Warn("heartbeat", "err", err)
		} else if err := n.rebalance(ctx); err != nil && ctx.Err() == nil {
			n.logger().Warn("shard ownership", "err", err)
		}
		n.savePositions()
		select {
		case <-ctx.Done():
			// The shards' schedules as they are, for the nodes that take
			// them over.
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			n.keepSchedulesNow(sctx)
			cancel()
			n.stopAll()
			n.savePositions()
			// Leave at once: the others need not wait out the lease.
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			n.Conn.nodes.Delete(dctx, c.Config.Name)
			cancel()
			return nil
		case <-tick.C:
		}
	}
}

// Info is the node's current heartbeat.
func (n *Node) Info() NodeInfo {
	info := NodeInfo{Name: n.Conn.Config.Name, Client: n.Conn.ClientURL(), Beat: n.now()}
	n.mu.Lock()
	info.Started = n.started
	for s, v := range n.views {
		info.Shards = append(info.Shards, s)
		if r := v.ready.Load(); r != 0 {
			info.Ready = append(info.Ready, s)
			info.TakeOver = max(info.TakeOver, (r-v.claimed.UnixNano())/1e6)
		}
		info.Lag += v.pending.Load()
		info.Applied += v.applied.Load()
	}
	n.mu.Unlock()
	slices.Sort(info.Shards)
	slices.Sort(info.Ready)
	if n.Worker != nil {
		info.Checks, info.Failed, info.Busy, info.Retried = n.Worker.Done.Load(), n.Worker.Failed.Load(), n.Worker.Busy.Load(), n.Worker.Retried.Load()
	}
	return info
}

func (n *Node) heartbeat(ctx context.Context) error {
	data, err := json.Marshal(n.Info())
	if err != nil {
		return err
	}
	_, err = n.Conn.nodes.Put(ctx, n.Conn.Config.Name, data)
	return err
}

// Ready reports why the node does not serve all its shards yet (nil when it does).
func (n *Node) Ready() error {
	if !n.Conn.nc.IsConnected() {
		return errors.New("not connected to NATS")
	}
	if !n.accountCopy().ready.Load() {
		return errors.New("the accounts are catching up")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var behind []string
	for s, v := range n.views {
		if v.ready.Load() == 0 {
			behind = append(behind, strconv.Itoa(s))
		}
	}
	if len(behind) > 0 {
		slices.Sort(behind)
		return fmt.Errorf("shards %s are catching up", strings.Join(behind, ", "))
	}
	return nil
}

// AwaitServing waits until the node serves every shard, each view caught
// up, and its copy of the accounts too: a cluster of one is then what a
// single node's store was, whole, when its web pages first answer. It
// gives up, with the reason, when ctx ends first.
func (n *Node) AwaitServing(ctx context.Context) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		err := n.Ready()
		if err == nil && !n.servesAll() {
			err = errors.New("the shards are being claimed")
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: node %s not serving yet: %w", n.Conn.Config.Name, err)
		case <-t.C:
		}
	}
}

// liveNodes lists the nodes whose last heartbeat is younger than the
// lease (by this node's clock: keep the nodes' clocks within a second),
// and this node whatever its own (see beatEvery).
func liveNodes(ctx context.Context, c *Conn, now time.Time) (map[string]bool, error) {
	infos, err := nodeInfos(ctx, c.nodesStream)
	lease := c.Config.Lease
	live := map[string]bool{}
	for _, info := range infos {
		if now.Sub(info.Beat) < lease || info.Name == c.Config.Name {
			live[info.Name] = true
		}
	}
	return live, err
}

// liveNow lists the nodes alive as the node saw them at its last look at
// the heartbeats (every quarter of the lease) when that look is less than
// a lease old; else it reads the heartbeats, within 2 s (a stream electing
// its leader makes each read wait up to 5 s, and a question to the nodes
// is better answered busy at once).
func (n *Node) liveNow(ctx context.Context) (map[string]bool, error) {
	if a := n.alive.Load(); a != nil && n.now().Sub(a.at) < n.Conn.Config.Lease {
		return a.nodes, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return liveNodes(ctx, n.Conn, n.now())
}

// nodeInfos reads the nodes' last heartbeats, message by message from
// the bucket's stream (one message per node: the bucket keeps no history).
func nodeInfos(ctx context.Context, stream jetstream.Stream) ([]NodeInfo, error) {
	var infos []NodeInfo
	err := scan(ctx, stream, "$KV."+nodesBucket+".*", func(m *jetstream.RawStreamMsg) error {
		var info NodeInfo
		// A deleted key is a node that left.
		if !kvDeleted(m) && json.Unmarshal(m.Data, &info) == nil {
			infos = append(infos, info)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortedInfos(infos)
	return infos, nil
}

// shardEntry is a shard's owner as the shards bucket holds it.
type shardEntry struct {
	owner string
	rev   uint64
}

// settledRounds is how many rounds a node whose shards are settled skips
// reading them (see rebalance).
const settledRounds = 9

// rebalance claims the shards of nodes that are gone and no one's, up to
// this node's fair share, and gives up shards above it.
func (n *Node) rebalance(ctx context.Context) error {
	c := n.Conn
	me := c.Config.Name
	live, err := liveNodes(ctx, c, n.now())
	if err != nil {
		return err
	}
	live[me] = true
	n.lone.Store(len(live) == 1)
	n.alive.Store(&aliveAt{nodes: live, at: n.now()})
	total := c.Config.Shards
	target := (total + len(live) - 1) / len(live)
	// While the same nodes are alive and the shards were settled at the
	// last look (each served by a live node, this one at its share),
	// owners change only by a node's own hand: look again every tenth
	// round, not every round (an idle node's requests, most of them).
	names := slices.Sorted(maps.Keys(live))
	if n.settled && slices.Equal(names, n.settledLive) && n.quiet < settledRounds {
		n.quiet++
		return nil
	}
	n.settled, n.settledLive, n.quiet = false, names, 0
	entries := make([]shardEntry, total)
	mine := 0
	for s := range total {
		e, err := c.shards.Get(ctx, strconv.Itoa(s))
		if err == nil {
			entries[s] = shardEntry{string(e.Value()), e.Revision()}
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		if entries[s].owner == me {
			mine++
		}
	}
	// Settled: every shard served by a live node, this one at its share
	// (one less where the shards do not divide evenly).
	settled := mine == target || mine == target-1 && total%len(live) != 0
	for _, e := range entries {
		settled = settled && e.owner != "" && live[e.owner]
	}
	// Views of shards another node has taken stop; shards recorded as
	// this node's (a restart under the same name) start.
	n.mu.Lock()
	running := make(map[int]bool, len(n.views))
	for s := range n.views {
		running[s] = true
	}
	n.mu.Unlock()
	for s := range running {
		if entries[s].owner != me {
			n.stop(s)
		}
	}
	for s, e := range entries {
		if e.owner == me && !running[s] {
			n.start(ctx, s)
		}
	}
	// A shard another live node serves leaves this node's store (kept
	// from before a restart, or given up): lists and searches across the
	// nodes would hold it twice. Should it come back, it is rebuilt from
	// the stream.
	held := n.readPositions()
	for s, e := range entries {
		if _, ok := held[s]; ok && e.owner != me && e.owner != "" && live[e.owner] && n.startDrop(s) {
			go n.drop(ctx, s)
		}
	}
	for s, e := range entries {
		if mine >= target {
			break
		}
		if e.owner != "" && live[e.owner] || n.isDropping(s) {
			continue
		}
		var err error
		if e.rev == 0 {
			_, err = c.shards.Create(ctx, strconv.Itoa(s), []byte(me))
		} else {
			_, err = c.shards.Update(ctx, strconv.Itoa(s), []byte(me), e.rev)
		}
		if err != nil {
			continue // another node was first
		}
		if e.owner != "" {
			n.logger().Info("taking over a shard", "shard", s, "from", e.owner)
		}
		mine++
		n.start(ctx, s)
	}
	n.settled = settled
	// Above the fair share (a node joined): give the last shards back,
	// one per round, so the views move a few at a time.
	if mine > target {
		for s := total - 1; s >= 0; s-- {
			if entries[s].owner != me {
				continue
			}
			// The schedules as they are, for the node that takes the
			// shard (the last minute's checks are not done again).
			n.keepSchedulesNow(ctx)
			n.stop(s)
			if err := c.shards.Delete(ctx, strconv.Itoa(s), jetstream.LastRevision(entries[s].rev)); err != nil {
				return err
			}
			n.logger().Info("gave a shard up", "shard", s, "nodes", len(live))
			break
		}
	}
	return nil
}

// start begins keeping shard s's view.
func (n *Node) start(ctx context.Context, s int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.views[s]; ok {
		return
	}
	vctx, cancel := context.WithCancel(ctx)
	v := &view{shard: s, cancel: cancel, done: make(chan struct{}), claimed: n.now(), wake: make(chan struct{}, 1)}
	pos := n.readPositions()
	v.pos.Store(pos[s])
	v.wpos.Store(pos[watchesPosition(s)])
	v.schedChanged.Store(true)
	n.views[s] = v
	if n.Agent != nil {
		var err error
		if v.agents, err = n.serveAgents(s); err != nil {
			n.logger().Warn("answering the agent work of a shard", "shard", s, "err", err)
		}
	}
	if n.Scheduler != nil {
		var err error
		if v.checkNow, err = n.serveCheckNow(s); err != nil {
			n.logger().Warn("answering the checks of a shard asked for elsewhere", "shard", s, "err", err)
		}
	}
	go func() {
		defer close(v.done)
		for vctx.Err() == nil {
			err := n.follow(vctx, v)
			if vctx.Err() != nil {
				return
			}
			n.logger().Warn("shard view", "shard", s, "err", err)
			select {
			case <-vctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// stop ends shard s's view.
func (n *Node) stop(s int) {
	n.mu.Lock()
	v, ok := n.views[s]
	delete(n.views, s)
	n.mu.Unlock()
	if ok {
		for _, sub := range []*nats.Subscription{v.agents, v.checkNow} {
			if sub != nil {
				sub.Unsubscribe()
			}
		}
		v.cancel()
		<-v.done
		n.editPositions(func(pos map[int]uint64) { pos[s], pos[watchesPosition(s)] = v.pos.Load(), v.wpos.Load() })
	}
}

func (n *Node) stopAll() {
	n.mu.Lock()
	shards := make([]int, 0, len(n.views))
	for s := range n.views {
		shards = append(shards, s)
	}
	n.mu.Unlock()
	for _, s := range shards {
		n.stop(s)
	}
}

// follow brings shard v's view up to date and keeps it so until ctx ends:
// the watch definitions, then the versions after the last applied. It
// reads both streams message by message with direct gets, which any
// current replica answers: no consumer to create, so a view goes on while
// the cluster replaces a server that died.
func (n *Node) follow(ctx context.Context, v *view) error {
	c := n.Conn
	verSubj := shardVersions(v.shard)
	if v.pos.Load() == 0 {
		// A view made anew: its watches take the schedule state their
		// last serving node kept, and count the checks that stored the
		// versions it applies past that.
		v.sched = n.readSchedules(ctx, v.shard)
		v.counting = true
	}
	// A look reads a subject only as far as the node knows the stream to
	// reach (seen): a message past that is learnt of by watchEnds, which
	// then wakes the view. A look forced (the view starting, poke, a
	// failed look at the ends, viewIdleLook) reads to the end.
	forced := true
	for {
		unsure := forced || n.unsure.Load()
		forcedDefs := v.forceDefs.Swap(false) || unsure
		forced = v.forceVersions.Swap(false) || unsure
		known := n.seen.load()
		// Every definition there is before the versions: a version of a
		// watch the view does not hold is taken for one of a watch
		// deleted since.
		got, err := n.followDefinitions(ctx, v, forcedDefs, known.watches)
		if err != nil {
			return err
		}
		// This node's own appends, in the view already, are passed over
		// unread.
		if to, k := n.tips.pass(v.pos.Load(), v.shard); to > v.pos.Load() {
			v.pos.Store(to)
			v.applied.Add(int64(k))
		}
		var vers []*jetstream.RawStreamMsg
		caught := !forced && v.pos.Load() >= known.versions
		for pos := v.pos.Load(); !caught && len(vers) < followBatch; {
			m, err := c.versions.GetMsg(ctx, pos+1, jetstream.WithGetMsgSubject(verSubj))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				caught = true
				break
			}
			if err != nil {
				return fmt.Errorf("versions: %w", err)
			}
			vers = append(vers, m)
			pos = m.Sequence
			caught = !forced && pos >= known.versions
		}
		if err := applyGrouped(ctx, vers, func(ctx context.Context, m *jetstream.RawStreamMsg) error {
			return n.applyVersion(ctx, v, m)
		}); err != nil {
			return err
		}
		if len(vers) > 0 {
			v.pos.Store(vers[len(vers)-1].Sequence)
			v.applied.Add(int64(len(vers)))
		}
		if caught {
			// Every version of the shard up to where the stream was known
			// to reach before this read is applied (with one copy; see
			// followDefinitions).
			if c.oneCopy && v.pos.Load() < known.versions {
				v.pos.Store(known.versions)
			}
			v.sched, v.counting = nil, false
			v.pending.Store(0)
			v.ready.CompareAndSwap(0, n.now().UnixNano())
		}
		got += len(vers)
		forced = false
		if got > 0 {
			continue
		}
		// Idle: look again when woken (the streams moved on, or this
		// node wrote something of the shard; see watchEnds), or after
		// viewIdleLook in any case.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-v.wake:
		case <-time.After(viewIdleLook):
			forced = true
		}
	}
}

// followDefinitions applies the shard's watch definitions written since
// the view's place in the watches bucket (see follow for how far it
// reads) and returns how many it read.
func (n *Node) followDefinitions(ctx context.Context, v *view, forcedDefs bool, knownEnd uint64) (int, error) {
	c := n.Conn
	watchSubj := "$KV." + watchesBucket + "." + strconv.Itoa(v.shard) + ".*"
	wpos := v.wpos.Load()
	got := 0
	for more := forcedDefs || wpos < knownEnd; more; {
		var defs []*jetstream.RawStreamMsg
		for more = false; len(defs) < followBatch; {
			m, err := c.watchesStream.GetMsg(ctx, wpos+1, jetstream.WithGetMsgSubject(watchSubj))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				if c.oneCopy {
					// None of the shard up to where the bucket was
					// known to reach before this read. (A replica
					// that lags may answer the read of a bucket kept
					// three times: there the place stays at the last
					// definition read.)
					wpos = max(wpos, knownEnd)
				}
				break
			}
			if err != nil {
				return got, fmt.Errorf("watch definitions: %w", err)
			}
			defs = append(defs, m)
			wpos = m.Sequence
			more = len(defs) == followBatch
			if !forcedDefs && wpos >= knownEnd {
				break
			}
		}
		if err := applyGrouped(ctx, defs, func(ctx context.Context, m *jetstream.RawStreamMsg) error {
			return n.applyWatch(ctx, v, m)
		}); err != nil {
			return got, err
		}
		// Kept only once applied: a node stopped between the two
		// reads them again when it starts.
		v.wpos.Store(wpos)
		got += len(defs)
	}
	return got, nil
}

// knownEnds is how far the versions stream and the watches bucket's
// stream are known to reach: sequences that exist, or existed.
type knownEnds struct{ versions, watches atomic.Uint64 }

func (k *knownEnds) load() ends { return ends{k.versions.Load(), k.watches.Load()} }

// raise records that the streams reach e at least.
func (k *knownEnds) raise(e ends) {
	raiseTo(&k.versions, e.versions)
	raiseTo(&k.watches, e.watches)
}

// raiseTo sets a to seq when seq is greater.
func raiseTo(a *atomic.Uint64, seq uint64) {
	for old := a.Load(); seq > old && !a.CompareAndSwap(old, seq); old = a.Load() {
	}
}

// viewIdleLook is how long an idle view waits at most before it looks
// at its subjects again, woken or not.
const viewIdleLook = 10 * time.Second

// ends are the last sequences of the versions stream and of the watches
// bucket's stream.
type ends struct{ versions, watches uint64 }

// watchEnds wakes the node's views when the versions stream or the
// watches bucket holds messages it did not hold at the last look: one
// question for all the views of the node, rather than two for each of
// them. It looks every 200 ms, less often while nothing comes (pollWait,
// up to pollMost). When the ends cannot be read (a stream's leader changing)
// it wakes every view, which then reads its own subjects by direct gets
// that any replica answers.
func (n *Node) watchEnds(ctx context.Context) {
	var last ends
	idle := 0
	for {
		now, ok := n.streamEnds(ctx)
		n.unsure.Store(!ok)
		if ok {
			n.seen.raise(now)
		}
		if !ok || now != last {
			n.wakeViews()
			idle = 0
		}
		last = now
		n.forgetPassed()
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollWait(&idle, n.pollMost())):
		}
	}
}

// streamEnds reads the streams' last sequences; ok is false when they
// could not be read.
func (n *Node) streamEnds(ctx context.Context) (ends, bool) {
	ictx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	vi, err := n.Conn.versions.Info(ictx)
	if err != nil {
		return ends{}, false
	}
	wi, err := n.Conn.watchesStream.Info(ictx)
	if err != nil {
		return ends{}, false
	}
	return ends{vi.State.LastSeq, wi.State.LastSeq}, true
}

// wakeViews makes every view of the node look at its subjects now.
func (n *Node) wakeViews() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, v := range n.views {
		select {
		case v.wake <- struct{}{}:
		default:
		}
	}
}

// forgetPassed forgets the node's own appends every view has passed.
func (n *Node) forgetPassed() {
	n.mu.Lock()
	var least uint64
	first := true
	for _, v := range n.views {
		if p := v.pos.Load(); first || p < least {
			least = p
		}
		first = false
	}
	n.mu.Unlock()
	n.tips.forgetOwn(least)
}

// poke makes the view of watch id's shard, when this node keeps it, read
// the watch definitions to their end now rather than at its next poll:
// for a watch this node just defined, changed or deleted.
func (n *Node) poke(id int64) { n.pokeView(id, false) }

// pokeVersions is poke for the versions: for a version this node just
// appended that the view does not hold yet, or one it waits for.
func (n *Node) pokeVersions(id int64) { n.pokeView(id, true) }

func (n *Node) pokeView(id int64, versions bool) {
	if n == nil {
		return
	}
	n.mu.Lock()
	v := n.views[ShardOf(id, n.Conn.Config.Shards)]
	n.mu.Unlock()
	if v != nil {
		if versions {
			v.forceVersions.Store(true)
		} else {
			v.forceDefs.Store(true)
		}
		select {
		case v.wake <- struct{}{}:
		default:
		}
	}
}

// AwaitVersion waits until this node's view holds version seq of watch
// id, which a check run by another node's worker stored in the stream: a
// check's outcome may come back before the view applied the version. It
// wakes the view and waits up to two seconds; false when the view does
// not hold the version by then (or the node does not serve the watch).
func (n *Node) AwaitVersion(ctx context.Context, id int64, seq int) bool {
	if !n.serves(id) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for poked := false; ; poked = true {
		if info, err := n.Store.Track(ctx, id); err == nil && info.Latest >= seq {
			return true
		}
		if !poked {
			n.pokeVersions(id)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pollWait is how long a follower that found nothing waits before it
// looks again: 200 ms at first, twice as long each time nothing came, up
// to most (see pollMost).
func pollWait(idle *int, most time.Duration) time.Duration {
	d := 200 * time.Millisecond << min(*idle, 6)
	*idle++
	return min(d, most)
}

// pollMost is how long an idle node waits at most between two looks at
// a stream it follows: 2 s; 10 s on a cluster of one that no other node
// or client can reach (Config.NewestOnly), whose writers are all in its
// process and wake its followers themselves (poke, awaitAccounts), so a
// look only bounds what a missed wake would cost (as viewIdleLook does).
// Each look is a request or two to the embedded server.
func (n *Node) pollMost() time.Duration {
	if n.Conn.Config.NewestOnly {
		return unreachableEvery
	}
	return 2 * time.Second
}

// beatEvery is how often the node writes its heartbeat and looks at the
// shards' owners (and keeps its views' places): every quarter of the
// lease, for the others to see it alive; every 10 s on a cluster of one
// that no other node can reach, whose heartbeat no one else reads
// (liveNodes takes a node for alive whatever its own heartbeat says).
func (n *Node) beatEvery() time.Duration {
	if n.Conn.Config.NewestOnly {
		return unreachableEvery
	}
	return n.Conn.Config.Lease / 4
}

// unreachableEvery is how often a cluster of one that no other node or
// client can reach writes its heartbeat (beatEvery) and, while idle,
// looks at the streams it follows (pollMost): what other nodes do more
// often for each other's sake.
const unreachableEvery = 10 * time.Second

// followBatch is how many messages of a stream a view reads before
// applying them.
const followBatch = 256

// applyGrouped applies messages of several watches at once (the store
// shares one commit among concurrent writers), each watch's in stream
// order.
func applyGrouped(ctx context.Context, msgs []*jetstream.RawStreamMsg, apply func(context.Context, *jetstream.RawStreamMsg) error) error {
	if len(msgs) == 0 {
		return nil
	}
	if len(msgs) == 1 {
		return apply(ctx, msgs[0])
	}
	groups := map[string][]*jetstream.RawStreamMsg{}
	var order []string
	for _, m := range msgs {
		if _, ok := groups[m.Subject]; !ok {
			order = append(order, m.Subject)
		}
		groups[m.Subject] = append(groups[m.Subject], m)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  atomic.Int64
	)
	for range min(16, len(order)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(order) {
					return
				}
				for _, m := range groups[order[i]] {
					if err := apply(ctx, m); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						break
					}
				}
			}
		})
	}
	wg.Wait()
	return first
}

// applyWatch puts a watch definition into the view, or deletes it.
func (n *Node) applyWatch(ctx context.Context, v *view, m *jetstream.RawStreamMsg) error {
	key := strings.TrimPrefix(m.Subject, "$KV."+watchesBucket+".")
	_, idText, _ := strings.Cut(key, ".")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return nil // not a watch key
	}
	if kvDeleted(m) {
		err := n.Store.DeleteWatch(ctx, pet.AnyUser, id)
		if errors.Is(err, pet.ErrNotFound) {
			err = nil
		}
		return err
	}
	var w changedigest.Watch
	if err := json.Unmarshal(m.Data, &w); err != nil {
		n.logger().Error("skipping a malformed watch definition", "key", key, "err", err)
		return nil
	}
	w.ID = id
	if kept := v.sched[id]; kept != nil {
		// A watch new to this view is due when its last serving node
		// would have checked it (the store keeps the schedule of one it
		// holds).
		w.CopySchedule(kept)
	}
	if err := n.Store.PutWatch(ctx, &w); err != nil && !errors.Is(err, pet.ErrInvalid) && !errors.Is(err, pet.ErrConflict) {
		return err
	} else if err != nil {
		n.logger().Error("skipping a watch definition", "watch", id, "err", err)
	}
	return nil
}

// defineFromBucket puts watch id's definition from the watches bucket
// into the view; false when the bucket has none (the watch was deleted).
func (n *Node) defineFromBucket(ctx context.Context, id int64) (bool, error) {
	c := n.Conn
	e, err := c.watches.Get(ctx, watchKey(ShardOf(id, c.Config.Shards), id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the definition of watch %d: %w", id, err)
	}
	var w changedigest.Watch
	if err := json.Unmarshal(e.Value(), &w); err != nil {
		return false, nil
	}
	w.ID = id
	if err := n.Store.PutWatch(ctx, &w); errors.Is(err, pet.ErrInvalid) || errors.Is(err, pet.ErrConflict) {
		n.logger().Error("skipping a watch definition", "watch", id, "err", err)
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("define watch %d: %w", id, err)
	}
	return true, nil
}

// applyVersion stores a version in shard view vw unless it is there
// already (applied by this node's worker, or before this process last
// saved its place), which its subject and headers tell without decoding
// it.
func (n *Node) applyVersion(ctx context.Context, vw *view, m *jetstream.RawStreamMsg) error {
	shard, gen := -1, 0
	if id, seq, ok := versionOf(m); ok {
		shard = ShardOf(id, n.Conn.Config.Shards)
		gen = n.tips.generation(shard)
		if n.tips.holds(id, seq) {
			return nil // this node's worker stored it in the view
		}
		if info, err := n.Store.Track(ctx, id); err == nil && seq <= info.Latest {
			n.tips.set(id, tip{streamSeq: m.Sequence, seq: seq})
			n.tips.held(id, shard, gen, info.Latest)
			return nil
		}
	}
	v, err := decodeRaw(m)
	if err != nil {
		n.refuseVersion(ctx, m, err)
		return nil
	}
	id := v.meta.Snapshot.WatchID
	info, err := n.Store.Track(ctx, id)
	if errors.Is(err, pet.ErrNotFound) {
		// Deleted since, or defined after this view last read the
		// definitions: then it takes the definition first.
		defined, derr := n.defineFromBucket(ctx, id)
		if derr != nil || !defined {
			return derr
		}
		info, err = n.Store.Track(ctx, id)
	}
	if err != nil {
		return err
	}
	if v.seq <= info.Latest {
		return nil // applied before this process last saved its place
	}
	// The view numbers versions as the stream does (a stream trimmed by
	// retention starts a rebuilt view past 1).
	if _, err := n.Store.AddVersionAt(ctx, id, v.seq, v.meta.Snapshot, v.body); refused(err) {
		if info, terr := n.Store.Track(ctx, id); errors.Is(err, pet.ErrConflict) && terr == nil && info.Latest >= v.seq {
			// This node's worker stored it in the view meanwhile.
			n.tips.set(id, tip{streamSeq: m.Sequence, seq: v.seq})
			if shard >= 0 {
				n.tips.held(id, shard, gen, info.Latest)
			}
			return nil
		}
		n.refuseVersion(ctx, m, err)
		return nil
	} else if err != nil {
		return fmt.Errorf("apply version %d of watch %d: %w", v.seq, id, err)
	}
	n.tips.set(id, tip{streamSeq: m.Sequence, seq: v.seq})
	if shard >= 0 {
		n.tips.held(id, shard, gen, v.seq)
	}
	if err := n.learn(ctx, id, &v.meta, vw != nil && vw.counting); err != nil {
		// The watch's next check learns it again.
		n.logger().Warn("recording what a version tells of its page", "watch", id, "version", v.seq, "err", err)
	}
	return nil
}

// refused reports whether the view's store refused a version for what
// the version holds or for the state of the watch's own track (a version
// over the store's limits, one that does not follow the view's newest, a
// damaged record): trying again would fail the same way, so the version
// is passed (refuseVersion). Other failures (a full disk, a closed store)
// are the store's, and the version is tried again.
func refused(err error) bool {
	return errors.Is(err, pet.ErrInvalid) || errors.Is(err, pet.ErrTooLarge) ||
		errors.Is(err, pet.ErrConflict) || errors.Is(err, pet.ErrCorrupt)
}

// refuseVersion passes a version message the view cannot apply (why
// says why: unreadable, or refused by the store), so that it holds up
// neither the shard's other watches nor the node's start: the failure is
// logged and recorded on the watch as its last error. The view keeps its
// versions numbered as the stream's: when the refused version is the one
// after the view's newest, the view holds the newest's content again in
// its place, with no changes (the watch's next version is compared, by
// its check, against what the stream holds).
func (n *Node) refuseVersion(ctx context.Context, m *jetstream.RawStreamMsg, why error) {
	id, seq, ok := versionOf(m)
	if !ok {
		n.logger().Error("skipping an unreadable message of the versions stream", "subject", m.Subject, "sequence", m.Sequence, "err", why)
		return
	}
	n.logger().Error("a version of the stream cannot be stored; it is passed", "watch", id, "version", seq, "sequence", m.Sequence, "err", why)
	reason := fmt.Sprintf("version %d was not stored: %s", seq, changedigest.ErrorMessage(why))
	if errors.Is(why, errBadVersion) {
		reason = fmt.Sprintf("version %d was not stored: it is unreadable in the cluster's stream", seq)
	}
	if info, err := n.Store.Track(ctx, id); err == nil && info.Latest > 0 && seq == info.Latest+1 {
		if err := n.standIn(ctx, id, seq, m.Time); err != nil {
			n.logger().Error("holding the version before in place of a version passed", "watch", id, "version", seq, "err", err)
		}
	}
	at := n.now()
	if _, err := n.Store.UpdateWatch(ctx, pet.AnyUser, id, func(w *changedigest.Watch) error {
		w.LastError, w.LastErrorAt = reason, at
		return nil
	}); err != nil && !errors.Is(err, pet.ErrNotFound) {
		n.logger().Error("recording a version passed on its watch", "watch", id, "err", err)
	}
}

// standIn stores the view's newest version of the watch again as version
// seq, fetched at, with no changes: see refuseVersion.
func (n *Node) standIn(ctx context.Context, id int64, seq int, at time.Time) error {
	prev, body, _, err := n.Store.Prior(ctx, id, 1)
	if err != nil || prev == nil {
		return err
	}
	same := *prev
	same.Seq, same.FetchedAt, same.Changes = seq, at, nil
	same.Similarity, same.Significance = 1, 0
	same.Screenshot = nil
	_, err = n.Store.AddVersionAt(ctx, id, seq, &same, body)
	return err
}

// learn records in the view what a version it applied tells of its
// watch's page, as the pipeline's UpdateWatch does when a check stores
// its version in its own node's view: the page's kind, its title when
// the watch has none, and whether it looks like a shell. The watches
// bucket holds what users define, not these. With count, the check that
// stored the version counts in the watch's schedule too (countCheck).
func (n *Node) learn(ctx context.Context, id int64, meta *versionMeta, count bool) error {
	snap := meta.Snapshot
	set := func(w *changedigest.Watch) (changed bool) {
		shell := w.LooksLikeShell
		if meta.Shell != nil {
			shell = *meta.Shell && w.Render != changedigest.RenderBrowser
		}
		changed = w.LearnPage(snap, shell)
		if count && countCheck(w, snap) {
			changed = true
		}
		return changed
	}
	w, err := n.Store.Watch(ctx, pet.AnyUser, id)
	if err != nil || !set(w) {
		return err
	}
	_, err = n.Store.UpdateWatch(ctx, pet.AnyUser, id, func(w *changedigest.Watch) error {
		set(w)
		return nil
	})
	return err
}

// historySize is how many samples of the change rate a watch keeps (the
// scheduler's default policy's).
var historySize = crawl.NewPolicy().HistorySize

// countCheck counts in w's schedule the check that stored version snap,
// when it was made after w's last check as w knows it: a view rebuilt
// after its shard's node died holds the schedule state that node last
// kept (every ScheduleEvery), or none, and the checks since then are
// known only by the versions they stored. Each such check counts as the
// scheduler counts a successful one (crawl.Policy.Apply): a check, a
// change when the track had a version before, the time of the last check
// and change, the page's validators and a sample of the change rate. The
// checks since that found no change are not known. It reports whether w
// changed.
func countCheck(w *changedigest.Watch, snap *changedigest.Snapshot) bool {
	at := snap.FetchedAt
	if at.IsZero() || !at.After(w.LastCheck) {
		return false
	}
	// The first version the watch is known to have is its first check
	// (or the oldest a trimmed stream keeps): no change, no sample.
	change := snap.Seq > 1 && !w.LastCheck.IsZero()
	if change {
		w.Samples = append(w.Samples, changedigest.CheckSample{Interval: at.Sub(w.LastCheck), Changed: true})
		if h := max(historySize, 1); len(w.Samples) > h {
			w.Samples = append(w.Samples[:0:0], w.Samples[len(w.Samples)-h:]...)
		}
	}
	w.Checks++
	if change {
		w.ChangeChecks++
		w.LastChange = at
	}
	w.LastCheck = at
	w.ETag, w.LastModified = snap.ETag, snap.LastModified
	return true
}

// startDrop marks shard s as being dropped; false when it already is.
func (n *Node) startDrop(s int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dropping[s] {
		return false
	}
	if n.dropping == nil {
		n.dropping = map[int]bool{}
	}
	n.dropping[s] = true
	return true
}

func (n *Node) isDropping(s int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropping[s]
}

// drop deletes shard s's watches and their versions from the store, and
// its place from the positions file.
func (n *Node) drop(ctx context.Context, s int) {
	defer func() {
		n.mu.Lock()
		delete(n.dropping, s)
		n.mu.Unlock()
	}()
	// From here on a view of s starts from the stream's beginning, and
	// nothing is known of what it holds.
	n.editPositions(func(pos map[int]uint64) { pos[s], pos[watchesPosition(s)] = 0, 0 })
	n.tips.dropShard(s, n.Conn.Config.Shards)
	ws, err := n.Store.Watches(ctx, pet.AnyUser, "")
	if err != nil {
		n.logger().Warn("dropping a shard another node serves", "shard", s, "err", err)
		return
	}
	k := 0
	for _, w := range ws {
		if ShardOf(w.ID, n.Conn.Config.Shards) != s {
			continue
		}
		if err := n.Store.DeleteWatch(ctx, pet.AnyUser, w.ID); err != nil && !errors.Is(err, pet.ErrNotFound) {
			n.logger().Warn("dropping a shard another node serves", "shard", s, "watch", w.ID, "err", err)
			return
		}
		k++
	}
	n.editPositions(func(pos map[int]uint64) {
		delete(pos, s)
		delete(pos, watchesPosition(s))
	})
	n.logger().Info("dropped a shard another node serves", "shard", s, "watches", k)
}

// positions: how far each shard's view has read, kept in Dir.
func (n *Node) positionFile() string { return filepath.Join(n.Dir, "positions.json") }

func (n *Node) readPositions() map[int]uint64 {
	pos := map[int]uint64{}
	if b, err := os.ReadFile(n.positionFile()); err == nil {
		json.Unmarshal(b, &pos)
	}
	return pos
}

func (n *Node) position(s int) uint64 { return n.readPositions()[s] }

// watchesPosition is where shard s's place in the watches bucket is kept
// among the positions (below the accounts').
func watchesPosition(s int) int { return accountsPosition - 1 - s }

// editPositions changes the positions file through fn.
func (n *Node) editPositions(fn func(pos map[int]uint64)) {
	n.posMu.Lock()
	defer n.posMu.Unlock()
	pos := n.readPositions()
	fn(pos)
	n.writePositions(pos)
}

func (n *Node) savePositions() {
	n.posMu.Lock()
	defer n.posMu.Unlock()
	pos := n.readPositions()
	old := maps.Clone(pos)
	pos[accountsPosition] = n.accountCopy().pos.Load()
	n.mu.Lock()
	for s, v := range n.views {
		pos[s], pos[watchesPosition(s)] = v.pos.Load(), v.wpos.Load()
	}
	n.mu.Unlock()
	if !maps.Equal(pos, old) {
		n.writePositions(pos)
	}
}

func (n *Node) writePositions(pos map[int]uint64) {
	b, _ := json.Marshal(pos)
	tmp := n.positionFile() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err == nil {
		os.Rename(tmp, n.positionFile())
	}
}

// owns reports whether the node serves watch id's shard.
func (n *Node) owns(id int64) bool {
	s := ShardOf(id, n.Conn.Config.Shards)
	n.mu.Lock()
	v, ok := n.views[s]
	n.mu.Unlock()
	return ok && v.ready.Load() != 0
}

// aliveAt is the nodes alive at a look at their heartbeats (nodes is not
// changed once stored).
type aliveAt struct {
	nodes map[string]bool
	at    time.Time
}

// gone reports whether the node named has stopped: it was not alive at
// this node's last look at the heartbeats, a look made in the last two
// leases, and what it did is at least a lease old (age; a node that joined
// since is not known yet). False for a nil node and for an unnamed one.
func (n *Node) gone(name string, age time.Duration) bool {
	if n == nil || name == "" || name == n.Conn.Config.Name || age < n.Conn.Config.Lease {
		return false
	}
	a := n.alive.Load()
	return a != nil && n.now().Sub(a.at) < 2*n.Conn.Config.Lease && !a.nodes[name]
}

// alone reports whether no other node was alive at the node's last look
// (false for a nil node, and before the first look).
func (n *Node) alone() bool { return n != nil && n.lone.Load() }

// DueWatches is crawl.Store's: the due watches of the shards this node
// serves (its store may hold others for a moment: shards given up, or
// catching up).
func (n *Node) DueWatches(ctx context.Context, now time.Time, limit int) ([]*changedigest.Watch, error) {
	return n.DueWatchesSkipping(ctx, now, limit, nil)
}

// DueWatchesSkipping is crawl.DueSkipper's: DueWatches without the
// watches skip refuses, which are not read.
func (n *Node) DueWatchesSkipping(ctx context.Context, now time.Time, limit int, skip func(int64) bool) ([]*changedigest.Watch, error) {
	return n.Store.DueWatchesSkipping(ctx, now, limit, func(id int64) bool {
		return !n.owns(id) || skip != nil && skip(id)
	})
}

// SaveSchedule is crawl.Store's. A watch of a shard another node serves
// (checked here on a user's request) keeps its owner's schedule.
func (n *Node) SaveSchedule(ctx context.Context, w *changedigest.Watch) error {
	n.mu.Lock()
	v := n.views[ShardOf(w.ID, n.Conn.Config.Shards)]
	n.mu.Unlock()
	if v == nil {
		return nil
	}
	if err := n.Store.SaveSchedule(ctx, w); err != nil {
		return err
	}
	v.schedChanged.Store(true)
	return nil
}

// Check is crawl.Checker's: it queues the check and waits for its outcome
// from whichever worker runs it; a node with no other node alive runs it
// itself, through the same worker code. A check of the same watch and due
// time that is in the queue already (queued by the node that served the
// watch before this one took it over, or by this node before a restart)
// is awaited instead. When no such check is waiting or running any more
// (it was done, and its outcome went to the node that asked for it), the
// watch is checked now, as a check of its own: its schedule here is older
// than the check done elsewhere, and the check is overdue.
func (n *Node) Check(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
	if n.alone() && n.Worker != nil {
		// No other node to share the work with: check here, as the
		// queue's only worker would.
		return n.Worker.checkHere(ctx, w)
	}
	out, dup, err := n.queue(ctx, w, w.NextCheck)
	if !dup {
		return out, err
	}
	out, err = n.awaitQueued(ctx, w)
	if !errors.Is(err, errQueued) {
		return out, err
	}
	// Under the old due time JetStream would drop the message again (the
	// queue keeps its IDs for 20 minutes), and the version too, should
	// the check of that due time have stored one: a due time of its own.
	due := time.Now()
	if due.Equal(w.NextCheck) {
		due = due.Add(time.Nanosecond)
	}
	n.logger().Debug("checking again a check done elsewhere", "watch", w.ID, "due", w.NextCheck)
	out, _, err = n.queue(ctx, w, due)
	return out, err
}

// queue publishes the check of w due at due (its message ID checkID) and
// waits for its outcome; dup reports that JetStream already had the ID.
func (n *Node) queue(ctx context.Context, w *changedigest.Watch, due time.Time) (out crawl.Outcome, dup bool, err error) {
	c := n.Conn
	data, err := json.Marshal(checkMsg{Watch: *w, Due: due})
	if err != nil {
		return crawl.Outcome{}, false, err
	}
	tok := strconv.FormatUint(n.token.Add(1), 36)
	ch := make(chan reply, 1)
	n.waiters.Store(tok, ch)
	defer n.waiters.Delete(tok)
	msg := &nats.Msg{Subject: checkSubject(ShardOf(w.ID, c.Config.Shards), w.ID), Data: data, Header: nats.Header{}}
	msg.Header.Set(hdrReply, "cd.reply."+c.Config.Name+"."+tok)
	msg.Header.Set(hdrDue, strconv.FormatInt(due.UnixNano(), 10))
	ack, err := c.publish(ctx, msg, jetstream.WithMsgID(checkID(w.ID, due)))
	if err != nil {
		return crawl.Outcome{}, false, fmt.Errorf("cluster: queue a check of %s: %w", w, err)
	}
	if ack.Duplicate {
		return crawl.Outcome{}, true, nil
	}
	out, err = await(ctx, ch)
	return out, false, err
}

func await(ctx context.Context, ch <-chan reply) (crawl.Outcome, error) {
	select {
	case r := <-ch:
		return r.result()
	case <-ctx.Done():
		return crawl.Outcome{}, ctx.Err()
	}
}

// result is the outcome and error a reply carries.
func (r reply) result() (crawl.Outcome, error) {
	if r.Err != "" {
		return r.Outcome, errors.New(r.Err)
	}
	return r.Outcome, nil
}

// awaitQueued waits for the outcome of the check of w that is in the
// queue (waiting, or taken by a worker and not acknowledged yet), from the
// check's own subject, where its worker sends it. It looks at the queue
// again meanwhile, 50 ms later at first, then less and less often,
// up to every 5 s: a check acknowledged just after this node first
// looked, whose outcome went before this node listened, is not waited
// for (a check a node that died had taken stays in the queue until
// another worker takes it, after AckWait). errQueued: no check of w is in
// the queue (any more), and no outcome came.
func (n *Node) awaitQueued(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
	c := n.Conn
	outcomes := make(chan *nats.Msg, 8)
	sub, err := c.nc.ChanSubscribe(outcomesOf(w.ID), outcomes)
	if err != nil {
		return crawl.Outcome{}, fmt.Errorf("cluster: wait for a queued check of %s: %w", w, err)
	}
	defer sub.Unsubscribe()
	c.nc.Flush()
	for look := 50 * time.Millisecond; ; look = min(2*look, 5*time.Second) {
		due, queued := c.queuedCheck(ctx, w.ID)
		if !queued {
			// Done meanwhile? Its outcome is as good.
			select {
			case m := <-outcomes:
				return decodeReply(m.Data).result()
			default:
				return crawl.Outcome{}, errQueued
			}
		}
		want := outcomeSubject(w.ID, due)
		again := time.NewTimer(look)
	waiting:
		for {
			select {
			case m := <-outcomes:
				if m.Subject == want {
					again.Stop()
					return decodeReply(m.Data).result()
				}
			case <-again.C:
				break waiting
			case <-ctx.Done():
				again.Stop()
				return crawl.Outcome{}, ctx.Err()
			}
		}
	}
}

// decodeReply reads an outcome message.
func decodeReply(data []byte) reply {
	var r reply
	if err := json.Unmarshal(data, &r); err != nil {
		r.Err = "cluster: malformed outcome: " + err.Error()
	}
	return r
}

// queuedCheck reports whether a check of the watch is in the queue
// (waiting, or taken by a worker and not acknowledged yet), and the due
// time of the newest such check. A look that fails says none: the caller
// then checks afresh, which at worst fetches the page twice.
func (c *Conn) queuedCheck(ctx context.Context, id int64) (due time.Time, queued bool) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := c.checks.GetLastMsgForSubject(qctx, checkSubject(ShardOf(id, c.Config.Shards), id))
	if err != nil {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(m.Header.Get(hdrDue), 10, 64)
	if err != nil {
		var cm checkMsg
		if json.Unmarshal(m.Data, &cm) != nil {
			return time.Time{}, false
		}
		return cm.Due, true
	}
	return time.Unix(0, ns), true
}

// AddWatches defines new watches in the cluster (IDs from the cluster's
// counter, set on the watches); the owners of their shards schedule them.
func (c *Conn) AddWatches(ctx context.Context, ws []*changedigest.Watch) error {
	for _, w := range ws {
		if err := w.Validate(); err != nil {
			return err
		}
	}
	if len(ws) == 0 {
		return nil
	}
	first, err := c.nextID(ctx, "watch", int64(len(ws)))
	if err != nil {
		return err
	}
	// The definitions go out as asynchronous publications to the
	// bucket's subjects, each only if its key has never been written (as
	// the bucket's Create does), and are then waited for together.
	now := time.Now()
	futures := make([]jetstream.PubAckFuture, len(ws))
	defined := make([]changedigest.Watch, len(ws))
	for i, w := range ws {
		nw := *w
		nw.ID = first + int64(i)
		nw.CreatedAt, nw.UpdatedAt = now, now
		if nw.NextCheck.IsZero() {
			nw.NextCheck = now
		}
		v, err := json.Marshal(&nw)
		if err != nil {
			return err
		}
		if i%1000 == 0 && i > 0 {
			// At most a thousand in flight.
			if err := waitDefined(ctx, ws[:i], futures[:i], defined[:i], i-1000); err != nil {
				return err
			}
		}
		msg := &nats.Msg{Subject: "$KV." + watchesBucket + "." + watchKey(ShardOf(nw.ID, c.Config.Shards), nw.ID), Data: v}
		if futures[i], err = c.js.PublishMsgAsync(msg, jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
			return fmt.Errorf("cluster: define watch %d (%s): %w", nw.ID, nw.URL, err)
		}
		defined[i] = nw
	}
	return waitDefined(ctx, ws, futures, defined, 0)
}

// waitDefined waits for the acknowledgements of the definitions from i on.
func waitDefined(ctx context.Context, ws []*changedigest.Watch, futures []jetstream.PubAckFuture, defined []changedigest.Watch, from int) error {
	for i := from; i < len(futures); i++ {
		if futures[i] == nil {
			continue
		}
		select {
		case <-futures[i].Ok():
		case err := <-futures[i].Err():
			return fmt.Errorf("cluster: define watch %d (%s): %w", defined[i].ID, defined[i].URL, err)
		case <-ctx.Done():
			return ctx.Err()
		}
		*ws[i] = defined[i]
		futures[i] = nil
	}
	return nil
}

// nextID takes n IDs from the named counter and returns the first.
func (c *Conn) nextID(ctx context.Context, name string, n int64) (int64, error) {
	for range 100 {
		e, err := c.counters.Get(ctx, name)
		var cur int64
		var rev uint64
		switch {
		case err == nil:
			cur, _ = strconv.ParseInt(string(e.Value()), 10, 64)
			rev = e.Revision()
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return 0, fmt.Errorf("cluster: read the %s counter: %w", name, err)
		}
		next := []byte(strconv.FormatInt(cur+n, 10))
		if rev == 0 {
			_, err = c.counters.Create(ctx, name, next)
		} else {
			_, err = c.counters.Update(ctx, name, next, rev)
		}
		if err == nil {
			return cur + 1, nil
		}
	}
	return 0, fmt.Errorf("cluster: the %s counter is contended", name)
}

// sortedInfos orders node infos by name.
func sortedInfos(infos []NodeInfo) {
	slices.SortFunc(infos, func(a, b NodeInfo) int { return cmp.Compare(a.Name, b.Name) })
}
