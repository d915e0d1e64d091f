// Package agent is collaborative change detection: the page agent of
// Prieto et al. (seed 004), a small script a site owner embeds in a page
// that reports a summary of the page to the server as people view it,
// and the polling clients of Meegahapola et al. (seed 002), other
// machines that share the polling of a user's watches on a staggered
// schedule. The Manager answers agent requests with the digester or the
// void agent, takes reports through a traffic controller (rate limits,
// an ignore list for reporters that verification refutes, a bounded
// coalescing queue), and makes a watch due at once when a report says
// its page changed. A report never stores content: only the scheduler's
// verified fetch does.
package agent

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/ratelimit"
)

// Store is the store as the agent manager sees it (userID 0 is any user).
type Store interface {
	Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error)
	WatchUpdater
	Latest(ctx context.Context, watchID int64) (*changedigest.Snapshot, error)
	Body(ctx context.Context, watchID int64, seq int) ([]byte, error)
}

// WatchUpdater changes a watch: fn edits it, the change is stored.
type WatchUpdater interface {
	UpdateWatch(ctx context.Context, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error)
}

// DefaultThreshold is the least time between digester agents for a page
// when the watch does not set its own (the paper's t): it counts from
// the last digester sent for the page, whether or not that one reported.
const DefaultThreshold = 10 * time.Minute

// Manager is the agent manager, the traffic controller and the change
// detector. Set the knobs after New, then Start; Stop ends its workers.
type Manager struct {
	Store Store
	// Definitions, when set, is where a confirmed report's detection is
	// recorded in the watch (default Store): on a cluster node, the
	// watch's definition, which every copy of the watch follows. Store
	// keeps the schedule a report makes due.
	Definitions WatchUpdater
	// Endpoint is the absolute URL reports are sent to (the digester
	// names it).
	Endpoint string
	Logger   *slog.Logger
	Now      func() time.Time

	// TokenTTL is how long a digester's report token stays valid (10 min).
	TokenTTL time.Duration
	// AddrPerMinute and AddrBurst limit the reports of one address, and
	// the report tokens (digesters) it is given: a token beyond what it
	// may report is of no use to an honest visitor. PagePerMinute and
	// PageBurst limit the reports for one page, and its tokens when the
	// manager is too busy to apply the page's threshold.
	AddrPerMinute, AddrBurst int
	PagePerMinute, PageBurst int
	// RefuteLimit refuted reports within IgnoreFor make a reporter
	// ignored for IgnoreFor (2 and 1 h). Only reports that look forged
	// count (see CheckedAt): those that differ where views of the stored
	// version matched it.
	RefuteLimit int
	IgnoreFor   time.Duration
	// VolatileAfter refuted reports that differ in a part of the summary
	// no report has shown as stored since (2) make the part volatile:
	// the page's scripts change it in browsers on every view. Its
	// differences are then ignored, until TrustAgain reports in a row
	// show it as stored (3).
	VolatileAfter, TrustAgain int
	// QueueSize bounds the pages whose reports wait for the detector (10,000).
	QueueSize int
	// Workers compare reports with the stored versions (2).
	Workers int
	// StoreFreeAt is the number of agent requests in flight, or of
	// pages waiting in the queue, from which the manager stops
	// consulting the store and its threshold and sends the digester;
	// VoidAt those from which it sends only the void agent. Defaults
	// 64 and 256 in flight; the queue's half and nine tenths.
	StoreFreeAt, VoidAt int
	// CacheFor is how long a watch's agent settings are kept in memory
	// before they are read again (1 min).
	CacheFor time.Duration
	// PendingFor is how long a triggered check is awaited before the
	// report is dropped unverified (30 min).
	PendingFor time.Duration
	// Due, when set, is called after a report made a watch due now (the
	// scheduler's Wake), so that its check starts at once rather than at
	// the scheduler's next look. It must not block.
	Due func()

	secret []byte
	macs   sync.Pool // of HMAC-SHA256 keyed with secret
	setup  sync.Once
	gz     atomic.Pointer[gzipDigester]
	queue  *queue
	addrs  *ratelimit.Buckets
	pages  *ratelimit.Buckets
	// tokenAddrs and tokenPages limit the digesters given out per address
	// and, while busy, per page.
	tokenAddrs *ratelimit.Buckets
	tokenPages *ratelimit.Buckets
	ignore     *ignoreList
	flight     atomic.Int64
	// mu guards watches and the pages in it, and held; the counts of
	// Stats (in pages and total) are added to and read atomically.
	mu      sync.RWMutex
	watches map[int64]*page
	total   Stats
	// held are the pages with a report held for their verification
	// budget.
	held map[int64]struct{}
	// lastAcc is when the last report of any page was accepted.
	lastAcc atomic.Int64
	// dirty are the pages whose kept state (the digester's time) waits
	// to be written to the store; saveReady wakes the writer.
	dirtyMu   sync.Mutex
	dirty     map[int64]struct{}
	saveReady chan struct{}
	// nonceMu guards the used report tokens.
	nonceMu sync.Mutex
	nonces  map[uint64]time.Time
	swept   time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
}

// Stats count what the manager did, for one page or in total. The
// manager adds to its counts atomically (Stats.load reads them all).
type Stats struct {
	// Served agents, of which Digester and Void.
	Served   int64 `json:"served"`
	Digester int64 `json:"digester"`
	Void     int64 `json:"void"`
	// Withheld agent requests got the void agent, though a digester was
	// due, because their address had had its share of report tokens.
	Withheld int64 `json:"withheld"`
	// Reports received; Accepted into the queue; Refused, of which
	// RefusedToken for a forged, expired or replayed token (a forged one
	// names no watch: counted in the totals only), RefusedPage for
	// another page or origin than the watch's, RefusedInvalid for a
	// malformed summary, RefusedRate over a rate limit, RefusedIgnored
	// from a reporter ignored after refuted reports, RefusedBusy when the
	// queue was full.
	Reports        int64 `json:"reports"`
	Accepted       int64 `json:"accepted"`
	Refused        int64 `json:"refused"`
	RefusedToken   int64 `json:"refused_token"`
	RefusedPage    int64 `json:"refused_page"`
	RefusedInvalid int64 `json:"refused_invalid"`
	RefusedRate    int64 `json:"refused_rate"`
	RefusedIgnored int64 `json:"refused_ignored"`
	RefusedBusy    int64 `json:"refused_busy"`
	// Held reports differed from the stored version while the page's
	// verification budget was spent (see Manager.trigger): the newest
	// of them is compared again, and verified if it still differs, once
	// the budget allows.
	Held int64 `json:"held"`
	// Same reports matched the stored version; Triggered made the watch
	// due; Confirmed checks stored a new version; Refuted found none.
	Same      int64 `json:"same"`
	Triggered int64 `json:"triggered"`
	Confirmed int64 `json:"confirmed"`
	Refuted   int64 `json:"refuted"`
	// LastReport is when the last report was accepted.
	LastReport time.Time `json:"last_report,omitzero"`
	// Volatile names the parts of the page's summary learned to differ
	// on every view (for one page; see Manager.VolatileAfter).
	Volatile []string `json:"volatile,omitempty"`
}

// page is what the manager keeps of a watch with the agent on.
type page struct {
	id        int64
	key       string
	url       string
	origin    string
	threshold time.Duration
	loaded    time.Time
	// lastAcc is when the last report was accepted (Unix nanoseconds,
	// 0 for never); read and set atomically.
	lastAcc atomic.Int64
	// sent is when the last digester was sent (Unix nanoseconds, 0 for
	// never), claimed atomically by the request that sends the next
	// one; the store's watch keeps it (AgentSent) across restarts.
	sent  atomic.Int64
	stats Stats
	// seq and sum are the summary of the newest stored version; known
	// are summaries reported for it that verification refuted (a page
	// whose scripts change it in the browser).
	seq   int
	hash  string
	sum   Summary
	known map[Summary]bool
	pend  *queued
	// matched are the parts of the stored version's summary that a
	// report showed as stored since the manager summarised it; misses
	// count, per part, the refuted reports that differed there since a
	// report last showed it as stored. volatile are the parts learned to
	// differ on every view (Watch.AgentVolatile); streak counts the
	// reports in a row that showed a volatile part as stored.
	matched  [4]bool
	misses   [4]int
	volatile [4]bool
	streak   [4]int
	// learned says the volatile parts were read from the store.
	learned bool
	// verified is when the last verifying check of an agent report was
	// made due, confirmed whether it stored a new version: the page's
	// verification budget (see trigger). held is the newest report that
	// waits for the budget.
	verified  time.Time
	confirmed bool
	held      *queued
}

// New returns a Manager with the default knobs and a fresh token secret.
func New(store Store, endpoint string) *Manager {
	secret := make([]byte, 32)
	rand.Read(secret)
	return &Manager{
		Store: store, Endpoint: endpoint, Logger: slog.Default(), Now: time.Now,
		TokenTTL: 10 * time.Minute, AddrPerMinute: 30, AddrBurst: 20, PagePerMinute: 120, PageBurst: 30,
		RefuteLimit: 2, IgnoreFor: time.Hour, VolatileAfter: 2, TrustAgain: 3, QueueSize: 10000, Workers: 2,
		StoreFreeAt: 64, VoidAt: 256, CacheFor: time.Minute, PendingFor: 30 * time.Minute,
		secret: secret, watches: map[int64]*page{}, held: map[int64]struct{}{}, nonces: map[uint64]time.Time{},
		dirty: map[int64]struct{}{}, saveReady: make(chan struct{}, 1),
	}
}

// init builds the traffic controller from the knobs, once: every agent
// request and report calls it, so it takes no lock after the first.
func (m *Manager) init() {
	m.setup.Do(func() {
		m.queue = newQueue(m.QueueSize)
		m.addrs = ratelimit.New(m.AddrPerMinute, m.AddrBurst)
		m.pages = ratelimit.New(m.PagePerMinute, m.PageBurst)
		m.tokenAddrs = ratelimit.New(m.AddrPerMinute, m.AddrBurst)
		m.tokenPages = ratelimit.New(m.PagePerMinute, m.PageBurst)
		m.ignore = newIgnoreList(m.RefuteLimit, m.IgnoreFor)
	})
}

// Start runs the change detector's workers, and the writer of what the
// manager keeps of pages in the store, until Stop.
func (m *Manager) Start() {
	m.init()
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	for range max(m.Workers, 1) {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.work(ctx)
		}()
	}
	m.wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				// What is left is written before Stop returns.
				m.save(context.Background())
				return
			case <-m.saveReady:
				m.save(ctx)
			}
		}
	})
	m.wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				m.releaseHeld(ctx)
			}
		}
	})
}

// Stop ends the workers; reports still queued are dropped, what the
// manager keeps of pages is written.
func (m *Manager) Stop() {
	if m.cancel != nil {
		m.cancel()
		m.wg.Wait()
	}
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// NewKey returns a fresh public agent key for watch id.
func NewKey(id int64) string {
	b := make([]byte, 10)
	rand.Read(b)
	return strconv.FormatInt(id, 10) + "-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// KeyWatch returns the watch id a key names.
func KeyWatch(key string) (int64, error) {
	i := strings.IndexByte(key, '-')
	if i <= 0 || len(key) > 64 {
		return 0, changedigest.Errorf(changedigest.EINVALID, "agent key %q is malformed", clip(key))
	}
	id, err := strconv.ParseInt(key[:i], 10, 64)
	if err != nil || id <= 0 {
		return 0, changedigest.Errorf(changedigest.EINVALID, "agent key %q is malformed", clip(key))
	}
	return id, nil
}

type clientKey struct{}

// WithClient returns ctx carrying addr, the address of the client an
// agent request comes from, for ScriptEncoded's limits on the report
// tokens one address is given.
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// ClientFrom is the client address WithClient put in ctx, "" for none.
func ClientFrom(ctx context.Context) string {
	a, _ := ctx.Value(clientKey{}).(string)
	return a
}

// Snippet is the HTML a site owner puts in the page: scriptURL is the
// absolute URL of the agent script.
func Snippet(scriptURL, key string) string {
	return `<script async src="` + scriptURL + "?k=" + url.QueryEscape(key) + `"></script>`
}

// Level says how loaded the manager is: 0 normal, 1 the store is not
// consulted (digester for all), 2 only the void agent is sent.
func (m *Manager) Level() int {
	m.init()
	f, q := int(m.flight.Load()), m.queue.len()
	switch {
	case f >= m.VoidAt || q >= m.QueueSize*9/10:
		return 2
	case f >= m.StoreFreeAt || q >= m.QueueSize/2:
		return 1
	}
	return 0
}

// Script answers a request for the agent with key: the digester agent
// when the last digester sent for the page is at least its threshold old
// (or when the manager is too busy to look, within the page's token
// limit), else the void agent; an address given in ctx (WithClient) that
// has had its share of tokens gets the void agent too. Errors:
// EINVALID for a malformed key, ENOTFOUND for a key of no watch with the
// agent on.
func (m *Manager) Script(ctx context.Context, key string) ([]byte, error) {
	b, _, err := m.ScriptEncoded(ctx, key, false)
	return b, err
}

// ScriptEncoded is Script for a client that accepts gzip when gzipOK:
// the digester is then sent gzip-encoded (gzipped true), at under half
// its size; the void agent, smaller than any gzip stream, never is.
func (m *Manager) ScriptEncoded(ctx context.Context, key string, gzipOK bool) (script []byte, gzipped bool, err error) {
	id, now, digester, err := m.choose(ctx, key)
	switch {
	case err != nil:
		return nil, false, err
	case !digester:
		return voidAgent, false, nil
	case !gzipOK:
		return digesterAgent(m.Endpoint, m.token(id, now)), false, nil
	}
	g := m.gz.Load()
	if g == nil || g.endpoint != m.Endpoint {
		g = newGzipDigester(m.Endpoint)
		m.gz.Store(g)
	}
	return g.script(m.token(id, now)), true, nil
}

// choose says whether the agent request for key gets the digester, and
// counts what it gets.
func (m *Manager) choose(ctx context.Context, key string) (id int64, now time.Time, digester bool, err error) {
	m.init()
	m.flight.Add(1)
	defer m.flight.Add(-1)
	id, err = KeyWatch(key)
	if err != nil {
		return 0, now, false, err
	}
	now = m.now()
	level := m.Level()
	var p *page
	if level < 2 {
		p, err = m.page(ctx, id, level == 0)
		if err != nil {
			return 0, now, false, err
		}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if p != nil && (p.key == "" || subtle.ConstantTimeCompare([]byte(p.key), []byte(key)) != 1) {
		return 0, now, false, changedigest.Errorf(changedigest.ENOTFOUND, "agent key %q is not that of a watch with the agent on", clip(key))
	}
	addr := ClientFrom(ctx)
	withheld := false
	switch {
	case level == 2:
	case level == 1 || p == nil:
		digester = m.tokenPages.Allow(strconv.FormatInt(id, 10), now)
	default:
		digester = p.due(now)
	}
	if digester && addr != "" && !m.tokenAddrs.Allow(addr, now) {
		digester, withheld = false, true
	}
	switch {
	case !digester || p == nil:
	case level == 0:
		digester = p.claim(now)
	default:
		p.sent.Store(now.UnixNano())
	}
	if digester && p != nil {
		m.markDirty(id)
	}
	count := func(s *Stats) {
		atomic.AddInt64(&s.Served, 1)
		if digester {
			atomic.AddInt64(&s.Digester, 1)
		} else {
			atomic.AddInt64(&s.Void, 1)
		}
		if withheld {
			atomic.AddInt64(&s.Withheld, 1)
		}
	}
	count(&m.total)
	if p != nil {
		count(&p.stats)
	}
	return id, now, digester, nil
}

// page returns the cached agent settings of watch id, reading the store
// when they are missing or old and load allows; nil when not cached and
// the store may not be read.
func (m *Manager) page(ctx context.Context, id int64, load bool) (*page, error) {
	m.mu.RLock()
	p := m.watches[id]
	fresh := p != nil && m.now().Sub(p.loaded) < m.CacheFor
	off := p != nil && p.key == ""
	m.mu.RUnlock()
	if fresh || !load {
		if off && fresh {
			return nil, changedigest.Errorf(changedigest.ENOTFOUND, "watch %d does not have the page agent on", id)
		}
		return p, nil
	}
	w, err := m.Store.Watch(ctx, 0, id)
	if err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		return nil, fmt.Errorf("agent: read watch %d: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		// No record for ids of no watch: unknown keys cost no memory.
		if p := m.watches[id]; p != nil {
			p.key, p.loaded = "", m.now()
		}
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "watch %d does not have the page agent on", id)
	}
	p = m.entryLocked(id)
	p.loaded = m.now()
	p.key, p.url, p.origin = w.AgentKey, normalURL(w.URL), origin(w.URL)
	p.threshold = w.AgentThreshold
	if p.threshold <= 0 {
		p.threshold = DefaultThreshold
	}
	if !p.learned {
		// What was learned of the page, once: the manager alone
		// changes it afterwards.
		for _, name := range w.AgentVolatile {
			if i := slices.Index(partNames[:], name); i >= 0 {
				p.volatile[i] = true
			}
		}
		p.learned = true
	}
	// The digester's time as kept, unless a later one was sent since.
	if sent := w.AgentSent.UnixNano(); !w.AgentSent.IsZero() {
		for last := p.sent.Load(); sent > last && !p.sent.CompareAndSwap(last, sent); last = p.sent.Load() {
		}
	}
	if p.key == "" {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "watch %d does not have the page agent on", id)
	}
	return p, nil
}

// due reports whether a digester is due for p at now: its threshold has
// passed since the last one.
func (p *page) due(now time.Time) bool {
	last := p.sent.Load()
	return last == 0 || now.Sub(unixNano(last)) >= p.threshold
}

// claim reports whether a digester is due for p at now, and if so
// records that one is sent: of requests that come together, one gets it.
func (p *page) claim(now time.Time) bool {
	for {
		last := p.sent.Load()
		if last != 0 && now.Sub(unixNano(last)) < p.threshold {
			return false
		}
		if p.sent.CompareAndSwap(last, now.UnixNano()) {
			return true
		}
	}
}

// markDirty has what the manager keeps of watch id written to the store.
func (m *Manager) markDirty(id int64) {
	m.dirtyMu.Lock()
	m.dirty[id] = struct{}{}
	m.dirtyMu.Unlock()
	select {
	case m.saveReady <- struct{}{}:
	default:
	}
}

// save writes what the manager keeps of the pages marked dirty to their
// watches in the store: when the last digester was sent, and the
// volatile parts of the page's summary.
func (m *Manager) save(ctx context.Context) {
	m.dirtyMu.Lock()
	ids := m.dirty
	m.dirty = map[int64]struct{}{}
	m.dirtyMu.Unlock()
	for id := range ids {
		m.mu.RLock()
		p := m.watches[id]
		m.mu.RUnlock()
		if p == nil {
			continue
		}
		sent := unixNano(p.sent.Load())
		m.mu.RLock()
		volatile, learned := p.volatileParts(), p.learned
		m.mu.RUnlock()
		_, err := m.Store.UpdateWatch(ctx, 0, id, func(w *changedigest.Watch) error {
			if sent.After(w.AgentSent) {
				w.AgentSent = sent
			}
			if learned {
				w.AgentVolatile = volatile
			}
			return nil
		})
		if err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND && ctx.Err() == nil {
			m.Logger.Warn("keeping the page agent's state of a watch", "watch", id, "err", err)
		}
	}
}

// volatileParts names p's volatile parts (nil for none).
func (p *page) volatileParts() []string {
	var out []string
	for i, v := range p.volatile {
		if v {
			out = append(out, partNames[i])
		}
	}
	return out
}

// entryLocked returns the manager's record of watch id, new if needed.
func (m *Manager) entryLocked(id int64) *page {
	p := m.watches[id]
	if p == nil {
		p = &page{id: id, threshold: DefaultThreshold}
		m.watches[id] = p
	}
	return p
}

// Forget drops what the manager caches of watch id (after the owner
// changed its agent settings).
func (m *Manager) Forget(id int64) {
	m.mu.Lock()
	if p := m.watches[id]; p != nil {
		p.loaded = time.Time{}
	}
	m.mu.Unlock()
}

// tokenLen is the length of a report token before encoding: watch id,
// issue time, nonce and a truncated HMAC.
const tokenLen = 8 + 8 + 8 + 16

func (m *Manager) token(id int64, now time.Time) string {
	var b [tokenLen]byte
	binary.BigEndian.PutUint64(b[0:], uint64(id))
	binary.BigEndian.PutUint64(b[8:], uint64(now.Unix()))
	rand.Read(b[16:24])
	var sum [sha256.Size]byte
	copy(b[24:], m.sign(sum[:0], b[:24]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TokenWatch reads the watch a report token was issued for, without
// checking the token (its issuer's Report does): for sending the report
// to the manager that issued it. Errors: EINVALID for a malformed token.
func TokenWatch(tok string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != tokenLen {
		return 0, changedigest.Errorf(changedigest.EINVALID, "report token %q is malformed", clip(tok))
	}
	return int64(binary.BigEndian.Uint64(b[0:])), nil
}

// SetSecret makes the manager sign report tokens under a secret derived
// from key (at least 16 bytes), instead of the fresh one New made: tokens
// then outlive a restart, and on a cluster, whose nodes share the key,
// a token one node issued holds on another (a watch's shard moved). Call
// it before the manager serves.
func (m *Manager) SetSecret(key []byte) error {
	if len(key) < 16 {
		return fmt.Errorf("agent: a token key of %d bytes is too short", len(key))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("changedigest page agent report tokens"))
	m.secret = mac.Sum(nil)
	m.macs = sync.Pool{}
	return nil
}

// sign appends the HMAC of msg under the token secret to dst, keeping
// the HMAC states for reuse (building one costs two SHA-256 blocks).
func (m *Manager) sign(dst, msg []byte) []byte {
	mac, _ := m.macs.Get().(hash.Hash)
	if mac == nil {
		mac = hmac.New(sha256.New, m.secret)
	}
	mac.Reset()
	mac.Write(msg)
	dst = mac.Sum(dst)
	m.macs.Put(mac)
	return dst
}

// ReportIn is one report as it arrives.
type ReportIn struct {
	// Token is the digester's report token, URL the page's address as
	// the browser has it, Summary the wire form of the summary.
	Token, URL, Summary string
	// Origin is the request's Origin header: it must be the page's.
	Origin string
	// Addr is the reporting client's address.
	Addr string
}

// Errors of reports, wrapped in *changedigest.Error by Report.
var (
	ErrForged   = errors.New("agent: the report token is not one this server issued")
	ErrExpired  = errors.New("agent: the report token has expired")
	ErrReplayed = errors.New("agent: the report token was already used")
)

// Report takes a report from a digester agent. It returns nil when the
// report is queued for the change detector; the caller answers 202 at
// once. Errors: EINVALID for a malformed report; EFORBIDDEN for a forged,
// expired or replayed token, a URL that is not the watch's page, no
// Origin or another one than the page's, or an ignored address; ERATELIMIT over a rate limit;
// EUNAVAILABLE when the queue is full. Each refusal is counted by its
// reason, for the watch the token names (when its record is cached) and
// in total.
func (m *Manager) Report(ctx context.Context, in ReportIn) error {
	m.init()
	now := m.now()
	p, why, err := m.report(ctx, in, now)
	atomic.AddInt64(&m.total.Reports, 1)
	if err != nil {
		countRefusal(&m.total, why)
		if p != nil {
			atomic.AddInt64(&p.stats.Reports, 1)
			countRefusal(&p.stats, why)
		}
	} else {
		atomic.AddInt64(&m.total.Accepted, 1)
	}
	return err
}

// refusal is why a report was refused.
type refusal int

const (
	refusedToken refusal = iota
	refusedPage
	refusedInvalid
	refusedRate
	refusedIgnored
	refusedBusy
)

// countRefusal counts a refused report in s, with its reason.
func countRefusal(s *Stats, why refusal) {
	atomic.AddInt64(&s.Refused, 1)
	n := &s.RefusedToken
	switch why {
	case refusedPage:
		n = &s.RefusedPage
	case refusedInvalid:
		n = &s.RefusedInvalid
	case refusedRate:
		n = &s.RefusedRate
	case refusedIgnored:
		n = &s.RefusedIgnored
	case refusedBusy:
		n = &s.RefusedBusy
	}
	atomic.AddInt64(n, 1)
}

// cached is the manager's record of watch id, nil when it has none.
func (m *Manager) cached(id int64) *page {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.watches[id]
}

// report checks a report and queues it. On a refusal it returns the
// record of the page to count it for (nil for none) and the reason.
func (m *Manager) report(ctx context.Context, in ReportIn, now time.Time) (*page, refusal, error) {
	id, nonce, err := m.checkToken(in.Token, now)
	if err != nil {
		var p *page
		if errors.Is(err, ErrExpired) {
			p = m.cached(id) // the token is ours: it names the watch
		}
		return p, refusedToken, changedigest.Errorf(changedigest.EFORBIDDEN, "%v", err)
	}
	p := m.cached(id)
	reporter := "addr " + in.Addr
	if until := m.ignore.ignored(reporter, now); !until.IsZero() {
		return p, refusedIgnored, changedigest.Errorf(changedigest.EFORBIDDEN, "reports from %s are ignored until %s: earlier reports were refuted", in.Addr, until.UTC().Format(time.RFC3339))
	}
	if !m.addrs.Allow(in.Addr, now) {
		return p, refusedRate, changedigest.Errorf(changedigest.ERATELIMIT, "too many reports from %s", in.Addr)
	}
	sum, err := ParseSummary(in.Summary)
	if err != nil {
		return p, refusedInvalid, changedigest.Errorf(changedigest.EINVALID, "%v", err)
	}
	p, err = m.page(ctx, id, m.Level() == 0)
	if err != nil {
		return nil, refusedPage, err
	}
	if p != nil {
		m.mu.RLock()
		pu, po := p.url, p.origin
		m.mu.RUnlock()
		if u := normalURL(in.URL); u == "" || u != pu {
			return p, refusedPage, changedigest.Errorf(changedigest.EFORBIDDEN, "the report is for %q, not for the watch's page", clip(in.URL))
		}
		if in.Origin == "" {
			return p, refusedPage, changedigest.Errorf(changedigest.EFORBIDDEN, "a report must carry the Origin header of the watch's page")
		}
		if !samePage(&page{url: pu, origin: po}, in.URL, in.Origin) {
			return p, refusedPage, changedigest.Errorf(changedigest.EFORBIDDEN, "a report from origin %q is not from the watch's site", clip(in.Origin))
		}
	}
	if !m.useNonce(nonce, now) {
		return p, refusedToken, changedigest.Errorf(changedigest.EFORBIDDEN, "%v", ErrReplayed)
	}
	if !m.pages.Allow(strconv.FormatInt(id, 10), now) {
		return p, refusedRate, changedigest.Errorf(changedigest.ERATELIMIT, "too many reports for watch %d", id)
	}
	q := &queued{watchID: id, summary: sum, at: now, by: changedigest.DetectedByAgent, reporters: []string{reporter}}
	if p == nil {
		// Too busy to read the store: the detector checks the page.
		q.url, q.origin = in.URL, in.Origin
	}
	if err := m.enqueue(q, p); err != nil {
		return p, refusedBusy, err
	}
	return nil, 0, nil
}

// samePage reports whether a report's URL and origin are the page's.
// The origin must be there: the digester posts in CORS mode, in which
// browsers always send the page's origin, whatever its referrer policy
// (a no-cors post from a page with "no-referrer" says "null").
func samePage(p *page, rawURL, origin string) bool {
	u := normalURL(rawURL)
	return u != "" && u == p.url && origin != "" && strings.EqualFold(origin, p.origin)
}

// enqueue queues q, counting it accepted for p. Errors: EUNAVAILABLE
// when the queue is full (the caller counts the refusal).
func (m *Manager) enqueue(q *queued, p *page) error {
	if !m.queue.push(q) {
		return changedigest.Errorf(changedigest.EUNAVAILABLE, "too many reports are waiting; try again later")
	}
	if p != nil {
		atomic.AddInt64(&p.stats.Reports, 1)
		atomic.AddInt64(&p.stats.Accepted, 1)
		p.lastAcc.Store(q.at.UnixNano())
	}
	m.lastAcc.Store(q.at.UnixNano())
	return nil
}

func (m *Manager) checkToken(tok string, now time.Time) (id int64, nonce uint64, err error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != tokenLen {
		return 0, 0, ErrForged
	}
	var sum [sha256.Size]byte
	if !hmac.Equal(m.sign(sum[:0], b[:24])[:16], b[24:]) {
		return 0, 0, ErrForged
	}
	id = int64(binary.BigEndian.Uint64(b[0:]))
	issued := time.Unix(int64(binary.BigEndian.Uint64(b[8:])), 0)
	if now.Sub(issued) > m.TokenTTL || issued.Sub(now) > time.Minute {
		return id, 0, ErrExpired
	}
	return id, binary.BigEndian.Uint64(b[16:]), nil
}

// maxNonces bounds the used tokens remembered (about 50 MB): beyond it,
// reports are refused until tokens expire.
const maxNonces = 1 << 20

// useNonce marks a token's nonce used; false when it already was (or
// when too many are remembered).
func (m *Manager) useNonce(n uint64, now time.Time) bool {
	m.nonceMu.Lock()
	defer m.nonceMu.Unlock()
	if now.Sub(m.swept) > time.Minute {
		for k, exp := range m.nonces {
			if now.After(exp) {
				delete(m.nonces, k)
			}
		}
		m.swept = now
	}
	if _, used := m.nonces[n]; used || len(m.nonces) >= maxNonces {
		return false
	}
	m.nonces[n] = now.Add(m.TokenTTL + time.Minute)
	return true
}

func (m *Manager) work(ctx context.Context) {
	for {
		q := m.queue.pop()
		if q == nil {
			select {
			case <-ctx.Done():
				return
			case <-m.queue.ready:
			}
			continue
		}
		if err := m.detect(ctx, q); err != nil && ctx.Err() == nil {
			m.Logger.Warn("comparing an agent report", "watch", q.watchID, "err", err)
		}
	}
}

// detect compares a report with the newest stored version and makes the
// watch due when they differ.
func (m *Manager) detect(ctx context.Context, q *queued) error {
	if q.direct {
		// A client compared the page with version q.base; a newer
		// version means the change is already stored.
		seq, _, _, err := m.latest(ctx, q.watchID)
		if err != nil {
			return err
		}
		if seq > q.base {
			m.mu.Lock()
			atomic.AddInt64(&m.entryLocked(q.watchID).stats.Same, 1)
			atomic.AddInt64(&m.total.Same, 1)
			m.mu.Unlock()
			return nil
		}
		return m.trigger(ctx, q)
	}
	p, err := m.page(ctx, q.watchID, true)
	if err != nil {
		return err
	}
	if q.url != "" {
		m.mu.RLock()
		ok := samePage(p, q.url, q.origin)
		m.mu.RUnlock()
		if !ok {
			countRefusal(&p.stats, refusedPage)
			countRefusal(&m.total, refusedPage)
			return nil
		}
	}
	seq, _, _, err := m.latest(ctx, q.watchID)
	if err != nil {
		return err
	}
	m.mu.Lock()
	same := seq > 0 && (m.compareLocked(p, q.summary) || p.known[q.summary])
	m.mu.Unlock()
	if same {
		atomic.AddInt64(&p.stats.Same, 1)
		atomic.AddInt64(&m.total.Same, 1)
		return nil
	}
	return m.trigger(ctx, q)
}

// compareLocked compares a report's summary with p's stored version,
// part by part, and learns from it: the parts it shows as stored are
// matched (a volatile one TrustAgain times in a row is trusted again).
// It reports whether the summary differs only in volatile parts, if
// at all.
func (m *Manager) compareLocked(p *page, sum Summary) bool {
	diff := sum.differs(p.sum)
	same := true
	for i, d := range diff {
		switch {
		case !d:
			p.matched[i], p.misses[i] = true, 0
			if p.volatile[i] {
				if p.streak[i]++; p.streak[i] >= max(m.TrustAgain, 1) {
					p.volatile[i], p.streak[i] = false, 0
					m.markDirty(p.id)
					m.Logger.Info("a part of a page's summary matches its stored version again", "watch", p.id, "part", partNames[i])
				}
			}
		case p.volatile[i]:
			p.streak[i] = 0
		default:
			same = false
		}
	}
	return same
}

// latest returns the newest stored version of watch id: its sequence
// number (0 for none), body hash and summary. They are kept until the
// pipeline stores another version (Stored).
func (m *Manager) latest(ctx context.Context, id int64) (int, string, Summary, error) {
	m.mu.RLock()
	p := m.watches[id]
	if p != nil && p.seq > 0 {
		seq, hash, sum := p.seq, p.hash, p.sum
		m.mu.RUnlock()
		return seq, hash, sum, nil
	}
	m.mu.RUnlock()
	m.mu.Lock()
	p = m.entryLocked(id)
	seq, hash, sum := p.seq, p.hash, p.sum
	m.mu.Unlock()
	if seq > 0 {
		return seq, hash, sum, nil
	}
	snap, err := m.Store.Latest(ctx, id)
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		return 0, "", Summary{}, nil
	}
	if err != nil {
		return 0, "", Summary{}, fmt.Errorf("agent: newest version of watch %d: %w", id, err)
	}
	body, err := m.Store.Body(ctx, id, snap.Seq)
	if err != nil {
		return 0, "", Summary{}, fmt.Errorf("agent: body of version %d of watch %d: %w", snap.Seq, id, err)
	}
	sum = Summarize(body, snap.ContentType)
	m.mu.Lock()
	if p.seq != snap.Seq {
		p.seq, p.hash, p.sum, p.known = snap.Seq, snap.BodyHash, sum, nil
		p.matched = [4]bool{}
	}
	m.mu.Unlock()
	return snap.Seq, snap.BodyHash, sum, nil
}

// Latest is what clients compare a page with: the newest stored version
// of watch id (0 when none), its body hash and its summary.
func (m *Manager) Latest(ctx context.Context, id int64) (seq int, bodyHash string, sum Summary, err error) {
	return m.latest(ctx, id)
}

// trigger makes the watch due now, unless a report already waits for
// its check; the report then joins the one waiting.
//
// An agent report is verified within the page's budget: at most one
// verifying check per threshold, unless the last one confirmed its
// report. A report beyond it is held (the newest held replaces an older
// one, keeping its reporters) and compared again once the budget
// allows (releaseHeld): reports that the page changed cost the site and
// the server one fetch per threshold, however many addresses send them,
// and a real change reported meanwhile waits at most a threshold.
// Polling clients' reports (direct) come from a user's own machines,
// are bounded by the clients' schedule, and are not held.
func (m *Manager) trigger(ctx context.Context, q *queued) error {
	now := m.now()
	m.mu.Lock()
	p := m.entryLocked(q.watchID)
	if p.pend != nil && now.Sub(p.pend.at) < m.PendingFor {
		p.pend.summary = q.summary
		if len(p.pend.reporters) < maxReporters {
			p.pend.reporters = append(p.pend.reporters, q.reporters...)
		}
		m.mu.Unlock()
		return nil
	}
	if !q.direct {
		if h := p.held; h != nil {
			// The held report goes with this newer one.
			for _, r := range h.reporters {
				if len(q.reporters) >= maxReporters {
					break
				}
				q.reporters = append(q.reporters, r)
			}
			p.held = nil
		}
		if !p.verified.IsZero() && !p.confirmed && now.Sub(p.verified) < p.threshold {
			p.held = q
			m.held[q.watchID] = struct{}{}
			atomic.AddInt64(&p.stats.Held, 1)
			atomic.AddInt64(&m.total.Held, 1)
			m.mu.Unlock()
			return nil
		}
		p.verified, p.confirmed = now, false
	}
	p.pend = q
	atomic.AddInt64(&p.stats.Triggered, 1)
	atomic.AddInt64(&m.total.Triggered, 1)
	m.mu.Unlock()
	return m.makeDue(ctx, q.watchID, now)
}

// releaseHeld compares the reports held for pages whose verification
// budget now allows a check with the newest stored version again, and
// verifies those that still differ. Start runs it every second.
func (m *Manager) releaseHeld(ctx context.Context) {
	now := m.now()
	m.mu.RLock()
	none := len(m.held) == 0
	m.mu.RUnlock()
	if none {
		return
	}
	var due []*queued
	m.mu.Lock()
	for id := range m.held {
		p := m.watches[id]
		switch {
		case p == nil || p.held == nil:
			delete(m.held, id)
		case p.confirmed || now.Sub(p.verified) >= p.threshold:
			due = append(due, p.held)
			p.held = nil
			delete(m.held, id)
		}
	}
	m.mu.Unlock()
	for _, q := range due {
		if err := m.detect(ctx, q); err != nil && ctx.Err() == nil {
			m.Logger.Warn("comparing a held agent report", "watch", q.watchID, "err", err)
		}
	}
}

// makeDue moves the watch's next check to now (unless it is sooner),
// marks it due by a report (Watch.DueByReport), and wakes the scheduler
// (Due).
func (m *Manager) makeDue(ctx context.Context, watchID int64, now time.Time) error {
	_, err := m.Store.UpdateWatch(ctx, 0, watchID, func(w *changedigest.Watch) error {
		if w.NextCheck.After(now) {
			// The check's sample, if it finds the change, ends
			// because a change came: the change-rate estimate reads
			// it so. (A watch due already keeps its own time.)
			w.NextCheck, w.DueByReport = now, true
		}
		return nil
	})
	if err == nil && m.Due != nil {
		m.Due()
	}
	return err
}

// Stored is told of every version the pipeline stores (crawl.Pipeline's
// OnVersion). A version stored while a report waits for verification
// confirms the report: the watch records how the version was detected.
func (m *Manager) Stored(w *changedigest.Watch, snap *changedigest.Snapshot) {
	m.mu.Lock()
	p := m.watches[w.ID]
	var q *queued
	if p != nil {
		q, p.pend = p.pend, nil
		p.seq = 0 // summarised again on the next report
		if q != nil {
			atomic.AddInt64(&p.stats.Confirmed, 1)
			atomic.AddInt64(&m.total.Confirmed, 1)
			if !q.direct {
				p.confirmed = true
			}
		}
	}
	m.mu.Unlock()
	if q == nil {
		return
	}
	d := changedigest.Detection{Seq: snap.Seq, By: q.by, At: q.at}
	var defs WatchUpdater = m.Store
	if m.Definitions != nil {
		defs = m.Definitions
	}
	_, err := defs.UpdateWatch(context.Background(), 0, w.ID, func(x *changedigest.Watch) error {
		x.Detections = append(x.Detections, d)
		if n := len(x.Detections) - changedigest.MaxDetections; n > 0 {
			x.Detections = append([]changedigest.Detection(nil), x.Detections[n:]...)
		}
		return nil
	})
	if err != nil {
		m.Logger.Warn("recording how a version was detected", "watch", w.ID, "err", err)
	}
}

// Knows reports whether the manager keeps anything of watch id (its
// agent settings, a summary, a report waiting): only then does Stored or
// CheckedAt have something to do.
func (m *Manager) Knows(id int64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.watches[id] != nil
}

// Checked is told of every scheduled check that ended (the scheduler's
// OnCheck): failed says it did not complete. A check that completed
// without storing a version refutes the report waiting for it: its
// reporters get a strike, and its summary is taken as a view of the
// stored version so it does not trigger again.
func (m *Manager) Checked(watchID int64, failed bool) {
	m.CheckedAt(watchID, time.Time{}, failed)
}

// CheckedAt is Checked for a check that started at start (zero: not
// known). A check that started before the waiting report arrived may
// have fetched the page before the change it reports: it neither
// refutes the report nor ends its wait, and the watch is made due again
// (the check's own schedule update had put it off).
func (m *Manager) CheckedAt(watchID int64, start time.Time, failed bool) {
	now := m.now()
	m.mu.Lock()
	p := m.watches[watchID]
	if p == nil || p.pend == nil {
		m.mu.Unlock()
		return
	}
	q := p.pend
	if !start.IsZero() && start.Before(q.at) {
		m.mu.Unlock()
		if err := m.makeDue(context.Background(), watchID, now); err != nil {
			m.Logger.Warn("making a reported watch due again", "watch", watchID, "err", err)
		}
		return
	}
	p.pend = nil
	if failed {
		m.mu.Unlock()
		return
	}
	atomic.AddInt64(&p.stats.Refuted, 1)
	atomic.AddInt64(&m.total.Refuted, 1)
	forged := q.direct
	if p.seq > 0 && !q.direct {
		if p.known == nil {
			p.known = map[Summary]bool{}
		}
		if len(p.known) < 64 {
			p.known[q.summary] = true
		}
		forged = m.refutedLocked(p, q.summary)
	}
	m.mu.Unlock()
	if !forged {
		return
	}
	for _, r := range q.reporters {
		if m.ignore.strike(r, now) {
			m.Logger.Info("ignoring a reporter whose reports were refuted", "reporter", r, "for", m.IgnoreFor)
		}
	}
}

// refutedLocked learns from a refuted agent report of p whose summary
// is sum, and says whether it looks forged. A part it differs in that a
// report has shown as stored since the version was summarised is the
// page as browsers see it: a summary that differs there is not the
// page's, and the report is forged. A part no report has shown as
// stored may be one the page's scripts change on every view: after
// VolatileAfter such refutations in a row it is learned volatile. Only
// forged reports count against their reporters, so a visitor of a page
// whose summary never matches is not ignored, on it or on any other.
func (m *Manager) refutedLocked(p *page, sum Summary) bool {
	forged := false
	for i, d := range sum.differs(p.sum) {
		switch {
		case !d || p.volatile[i]:
		case p.matched[i]:
			forged = true
		default:
			if p.misses[i]++; p.misses[i] >= max(m.VolatileAfter, 1) {
				p.volatile[i], p.misses[i], p.streak[i] = true, 0, 0
				m.markDirty(p.id)
				m.Logger.Info("a part of a page's summary differs on every view: its differences are not verified", "watch", p.id, "part", partNames[i])
			}
		}
	}
	return forged
}

// Stats returns the counts for watch id (zero when the agent has not
// been used for it since the server started).
func (m *Manager) Stats(id int64) Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.watches[id]; p != nil {
		st := p.stats.load(&p.lastAcc)
		st.Volatile = p.volatileParts()
		return st
	}
	return Stats{}
}

// Totals returns the counts over all watches.
func (m *Manager) Totals() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total.load(&m.lastAcc)
}

// load copies s, reading its counts atomically; lastAcc is the time of
// the last accepted report.
func (s *Stats) load(lastAcc *atomic.Int64) Stats {
	return Stats{
		Served: atomic.LoadInt64(&s.Served), Digester: atomic.LoadInt64(&s.Digester), Void: atomic.LoadInt64(&s.Void),
		Withheld: atomic.LoadInt64(&s.Withheld),
		Reports:  atomic.LoadInt64(&s.Reports), Accepted: atomic.LoadInt64(&s.Accepted), Refused: atomic.LoadInt64(&s.Refused),
		RefusedToken: atomic.LoadInt64(&s.RefusedToken), RefusedPage: atomic.LoadInt64(&s.RefusedPage),
		RefusedInvalid: atomic.LoadInt64(&s.RefusedInvalid), RefusedRate: atomic.LoadInt64(&s.RefusedRate),
		RefusedIgnored: atomic.LoadInt64(&s.RefusedIgnored), RefusedBusy: atomic.LoadInt64(&s.RefusedBusy),
		Held: atomic.LoadInt64(&s.Held),
		Same: atomic.LoadInt64(&s.Same), Triggered: atomic.LoadInt64(&s.Triggered), Confirmed: atomic.LoadInt64(&s.Confirmed),
		Refuted: atomic.LoadInt64(&s.Refuted), LastReport: unixNano(lastAcc.Load()),
	}
}

// unixNano is the time of Unix nanoseconds n, the zero time for 0.
func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// normalURL is the form two page URLs are compared in: scheme and host
// in lower case, default port and fragment dropped, an empty path "/".
// The empty string for anything but an absolute http(s) URL.
func normalURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return ""
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	u.Host = strings.ToLower(u.Host)
	if p := u.Port(); (p == "80" && u.Scheme == "http") || (p == "443" && u.Scheme == "https") {
		u.Host = u.Hostname()
	}
	u.Fragment, u.RawFragment, u.User = "", "", nil
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// origin is the web origin of an absolute URL.
func origin(raw string) string {
	n := normalURL(raw)
	if n == "" {
		return ""
	}
	u, _ := url.Parse(n)
	return u.Scheme + "://" + u.Host
}

// ClientReport takes a polling client's report that watch's page
// changed since version base (the newest stored version the client
// compared it with). It
// goes through the same traffic controller as agents' reports: the
// reporter's rate limit and ignore list, the page's rate limit, the
// queue. Errors as for Report.
func (m *Manager) ClientReport(ctx context.Context, reporter string, watchID int64, base int, now time.Time) error {
	m.init()
	m.mu.Lock()
	p := m.entryLocked(watchID)
	m.mu.Unlock()
	refuse := func(why refusal, err error) error {
		atomic.AddInt64(&m.total.Reports, 1)
		atomic.AddInt64(&p.stats.Reports, 1)
		countRefusal(&m.total, why)
		countRefusal(&p.stats, why)
		return err
	}
	if until := m.ignore.ignored(reporter, now); !until.IsZero() {
		return refuse(refusedIgnored, changedigest.Errorf(changedigest.EFORBIDDEN, "reports from %s are ignored until %s: earlier reports were refuted", reporter, until.UTC().Format(time.RFC3339)))
	}
	if !m.addrs.Allow(reporter, now) || !m.pages.Allow(strconv.FormatInt(watchID, 10), now) {
		return refuse(refusedRate, changedigest.Errorf(changedigest.ERATELIMIT, "too many reports from %s", reporter))
	}
	q := &queued{watchID: watchID, at: now, by: changedigest.DetectedByClient, reporters: []string{reporter}, direct: true, base: base}
	if err := m.enqueue(q, p); err != nil {
		return refuse(refusedBusy, err)
	}
	atomic.AddInt64(&m.total.Reports, 1)
	atomic.AddInt64(&m.total.Accepted, 1)
	return nil
}
