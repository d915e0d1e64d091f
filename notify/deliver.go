package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/changedigest/changedigest/metrics"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
)

// DeliveryStore is the store as the dispatcher sees it: the outbox, the
// deliveries and what a payload is built from.
type DeliveryStore interface {
	Outbox(ctx context.Context, limit int) ([]pet.Notification, error)
	Fanout(ctx context.Context, ns []pet.Notification, ds []changedigest.Delivery) error
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]changedigest.Delivery, error)
	NextDelivery(ctx context.Context) (time.Time, error)
	UpdateDelivery(ctx context.Context, userID int64, id string, fn func(*changedigest.Delivery) error) (*changedigest.Delivery, error)
	Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error)
	Versions(ctx context.Context, watchID int64, before, limit int) ([]changedigest.Snapshot, error)
	Channels(ctx context.Context, userID int64) ([]changedigest.Channel, error)
	Channel(ctx context.Context, userID, id int64) (*changedigest.Channel, error)
	User(ctx context.Context, id int64) (*changedigest.User, error)
}

// Distributor is a second kind of receiver fed by the same outbox: the
// WebSub hub. Targets lists its deliveries for a new version; Distribute
// makes one of them.
type Distributor interface {
	Targets(ctx context.Context, w *changedigest.Watch, snap *changedigest.Snapshot, key func(suffix string) string) ([]changedigest.Delivery, error)
	Distribute(ctx context.Context, d *changedigest.Delivery, w *changedigest.Watch, snap *changedigest.Snapshot) Result
}

// Result is the outcome of one try.
type Result struct {
	// Status is the receiver's HTTP status (0 when no answer came).
	Status int
	// Err is nil on success.
	Err error
	// RetryAfter is the receiver's Retry-After, if it gave one.
	RetryAfter time.Time
	// Permanent says that retrying cannot help (a 4xx other than 408,
	// 425 and 429, a channel that is gone): the delivery is dead at once.
	Permanent bool
}

// Dispatcher routes outbox notifications to channels and delivers them,
// with retries, until each is delivered or dead. Set the knobs after
// NewDispatcher, then Run it.
type Dispatcher struct {
	Store    DeliveryStore
	Notifier *Notifier
	// Client makes the requests; its connections must pass the fetcher's
	// address checks (crawl.Fetcher.Client). Nil means http.DefaultClient,
	// which checks nothing: for tests only.
	Client *http.Client
	// Hub, when set, receives the versions of the feeds it has subscribers for.
	Hub Distributor
	// Threshold is the significance a version of w needs for channels
	// that take only significant versions (DefaultSignificance unless set).
	Threshold func(w *changedigest.Watch) float64
	// MaxAttempts tries make a delivery dead (8); the n-th retry waits
	// BaseDelay·2^(n-1), at most MaxDelay, with ±50 % jitter, or longer
	// when the receiver's Retry-After asks for it (up to MaxRetryAfter).
	MaxAttempts   int
	BaseDelay     time.Duration
	MaxDelay      time.Duration
	MaxRetryAfter time.Duration
	// Workers bounds the deliveries made at once (16).
	Workers int
	// Poll is the longest sleep between looks at the store (10 s); Wake
	// cuts it short.
	Poll   time.Duration
	Now    func() time.Time
	Logger *slog.Logger
	// Delivered, when set, is called after each successful delivery with
	// the time from the version's commit (tests and benchmarks).
	Delivered func(d *changedigest.Delivery, sinceStored time.Duration)

	wake     chan struct{}
	mu       sync.Mutex
	inflight map[string]bool
	stored   map[string]time.Time
	matrixMu sync.Mutex
	rooms    map[string]string // alias → room id
}

// NewDispatcher returns a dispatcher with defaults.
func NewDispatcher(store DeliveryStore, n *Notifier, client *http.Client) *Dispatcher {
	return &Dispatcher{Store: store, Notifier: n, Client: client, MaxAttempts: 8, BaseDelay: 30 * time.Second,
		MaxDelay: 6 * time.Hour, MaxRetryAfter: 24 * time.Hour, Workers: 16, Poll: 10 * time.Second,
		Now: time.Now, Logger: slog.Default(), wake: make(chan struct{}, 1)}
}

// Wake makes Run look at the outbox and the due deliveries now. It never
// blocks; pet.Store.Notified calls it.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run routes and delivers until ctx ends. Deliveries in flight when ctx
// ends are abandoned unrecorded and made again on the next Run: a
// receiver may see a delivery twice, with the same idempotency key, but
// never miss one.
func (d *Dispatcher) Run(ctx context.Context) error {
	if d.wake == nil {
		d.wake = make(chan struct{}, 1)
	}
	sem := make(chan struct{}, max(d.Workers, 1))
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		if err := d.route(ctx); err != nil && ctx.Err() == nil {
			d.logger().Warn("routing notifications", "err", err)
		}
		due, err := d.Store.DueDeliveries(ctx, d.now(), 1000)
		if err != nil && ctx.Err() == nil {
			d.logger().Warn("reading due deliveries", "err", err)
		}
		for _, dl := range due {
			if !d.claim(dl.ID) {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				d.release(dl.ID)
				return nil
			}
			wg.Add(1)
			go func(dl changedigest.Delivery) {
				defer wg.Done()
				defer func() { <-sem }()
				d.attempt(ctx, &dl)
				d.release(dl.ID)
				d.Wake()
			}(dl)
		}
		wait := d.Poll
		if wait <= 0 {
			wait = 10 * time.Second
		}
		if next, err := d.Store.NextDelivery(ctx); err == nil && !next.IsZero() {
			if w := next.Sub(d.now()); w < wait {
				wait = max(w, 10*time.Millisecond)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-d.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (d *Dispatcher) claim(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight == nil {
		d.inflight = map[string]bool{}
	}
	if d.inflight[id] {
		return false
	}
	d.inflight[id] = true
	return true
}

func (d *Dispatcher) release(id string) {
	d.mu.Lock()
	delete(d.inflight, id)
	d.mu.Unlock()
}

// Redeliver makes a dead (or delivered) delivery of the user pending
// again, to be tried at once with a fresh count of tries. Errors:
// ENOTFOUND.
func (d *Dispatcher) Redeliver(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error) {
	now := d.now()
	dl, err := d.Store.UpdateDelivery(ctx, userID, id, func(x *changedigest.Delivery) error {
		x.State, x.Attempts, x.NextAttempt = changedigest.DeliveryPending, 0, now
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.Wake()
	return dl, nil
}

// DeliveryKey is the idempotency key of version seq of watch wid sent to
// a target: the same on every try and after every restart.
func DeliveryKey(wid int64, seq int, target string) string {
	return "w" + strconv.FormatInt(wid, 10) + ".v" + strconv.Itoa(seq) + "." + target
}

// route turns every outbox notification into its deliveries, up to 200
// notifications in one transaction.
func (d *Dispatcher) route(ctx context.Context) error {
	for {
		ns, err := d.Store.Outbox(ctx, 200)
		if err != nil || len(ns) == 0 {
			return err
		}
		var all []changedigest.Delivery
		for _, n := range ns {
			ds, err := d.targets(ctx, n)
			if err != nil {
				return fmt.Errorf("notify: route %s: %w", n, err)
			}
			all = append(all, ds...)
		}
		if err := d.Store.Fanout(ctx, ns, all); err != nil {
			return err
		}
		if d.Delivered != nil {
			d.mu.Lock()
			if d.stored == nil {
				d.stored = map[string]time.Time{}
			}
			for _, x := range all {
				d.stored[x.ID] = x.CreatedAt
			}
			d.mu.Unlock()
		}
		if len(ns) < 200 {
			return nil
		}
	}
}

// targets lists the deliveries of notification n: one per channel that
// Wants the version, and the hub's.
func (d *Dispatcher) targets(ctx context.Context, n pet.Notification) ([]changedigest.Delivery, error) {
	if u, err := d.Store.User(ctx, n.UserID); err == nil && u.Disabled {
		return nil, nil // a disabled account is told nothing, and its feeds are not distributed
	}
	w, snap, err := d.version(ctx, n.WatchID, n.Seq)
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		return nil, nil // deleted since: nothing to tell
	} else if err != nil {
		return nil, err
	}
	chans, err := d.Store.Channels(ctx, n.UserID)
	if err != nil {
		return nil, err
	}
	var ds []changedigest.Delivery
	var matches [][]changedigest.Match
	if d.Notifier != nil && (len(chans) > 0 || d.Hub != nil) {
		m, err := d.Notifier.Matcher(ctx, n.UserID)
		if err != nil {
			return nil, err
		}
		matches = Match(m, snap.Changes)
	}
	if len(chans) > 0 {
		for i := range chans {
			c := &chans[i]
			if Wants(c, w, snap, matches, d.threshold(w)) {
				ds = append(ds, changedigest.Delivery{ID: DeliveryKey(w.ID, snap.Seq, "c"+strconv.FormatInt(c.ID, 10)),
					UserID: n.UserID, ChannelID: c.ID, WatchID: w.ID, Seq: snap.Seq, CreatedAt: n.StoredAt})
			}
		}
	}
	// Readers subscribed to a feed get what the feed shows: a version
	// with nothing told makes no entry, and no distribution.
	if d.Hub != nil && (render.Event{Watch: w, Snapshot: snap, Matches: matches}).Told() {
		hs, err := d.Hub.Targets(ctx, w, snap, func(suffix string) string { return DeliveryKey(w.ID, snap.Seq, suffix) })
		if err != nil {
			return nil, err
		}
		for i := range hs {
			hs[i].CreatedAt = n.StoredAt
		}
		ds = append(ds, hs...)
	}
	return ds, nil
}

func (d *Dispatcher) threshold(w *changedigest.Watch) float64 {
	if d.Threshold != nil {
		return d.Threshold(w)
	}
	return DefaultSignificance
}

// version reads a watch and the light row of one of its versions.
func (d *Dispatcher) version(ctx context.Context, wid int64, seq int) (*changedigest.Watch, *changedigest.Snapshot, error) {
	w, err := d.Store.Watch(ctx, pet.AnyUser, wid)
	if err != nil {
		return nil, nil, err
	}
	vs, err := d.Store.Versions(ctx, wid, seq+1, 1)
	if err != nil {
		return nil, nil, err
	}
	if len(vs) == 0 || vs[0].Seq != seq {
		return nil, nil, changedigest.Errorf(changedigest.ENOTFOUND, "version %d of watch %d is no longer stored", seq, wid)
	}
	return w, &vs[0], nil
}

// attempt makes one try of dl and records its outcome.
func (d *Dispatcher) attempt(ctx context.Context, dl *changedigest.Delivery) {
	res := d.send(ctx, dl)
	if ctx.Err() != nil {
		return // shutting down: the next Run tries again
	}
	kind, outcome := "channel", "delivered"
	if dl.ChannelID == 0 {
		kind = "websub"
	}
	if res.Err != nil {
		outcome = "failed"
	}
	metrics.Deliveries.With(kind, outcome).Inc()
	now := d.now()
	rec, err := d.Store.UpdateDelivery(ctx, pet.AnyUser, dl.ID, func(x *changedigest.Delivery) error {
		if x.State != changedigest.DeliveryPending {
			return nil // redelivered or changed meanwhile: keep what is there
		}
		x.Attempts++
		x.LastStatus = res.Status
		if res.Err == nil {
			x.State, x.DeliveredAt, x.LastError, x.NextAttempt = changedigest.DeliveryDelivered, now, "", time.Time{}
			return nil
		}
		x.LastError = clip(res.Err.Error(), 500)
		if res.Permanent || x.Attempts >= max(d.MaxAttempts, 1) {
			x.State, x.NextAttempt = changedigest.DeliveryDead, time.Time{}
			return nil
		}
		x.NextAttempt = now.Add(d.backoff(x.Attempts))
		if ra := res.RetryAfter; ra.After(x.NextAttempt) {
			x.NextAttempt = ra
			if limit := now.Add(d.MaxRetryAfter); d.MaxRetryAfter > 0 && ra.After(limit) {
				x.NextAttempt = limit
			}
		}
		return nil
	})
	if err != nil {
		d.logger().Warn("recording a delivery", "delivery", dl.ID, "err", err)
		return
	}
	switch {
	case rec.State == changedigest.DeliveryDelivered:
		d.logger().Debug("delivered", "delivery", dl.ID, "status", res.Status)
		if d.Delivered != nil {
			d.mu.Lock()
			at, ok := d.stored[dl.ID]
			delete(d.stored, dl.ID)
			d.mu.Unlock()
			if !ok {
				at = dl.CreatedAt
			}
			d.Delivered(rec, now.Sub(at))
		}
	case rec.State == changedigest.DeliveryDead:
		d.logger().Warn("delivery failed for good", "delivery", dl.ID, "attempts", rec.Attempts, "err", rec.LastError)
	default:
		d.logger().Info("delivery failed; will retry", "delivery", dl.ID, "attempts", rec.Attempts,
			"next", rec.NextAttempt, "err", rec.LastError)
	}
}

// backoff is the wait before retry n (n ≥ 1): BaseDelay·2^(n-1), at most
// MaxDelay, times a random factor in [0.5, 1.5).
func (d *Dispatcher) backoff(n int) time.Duration {
	base := d.BaseDelay
	if base <= 0 {
		base = 30 * time.Second
	}
	limit := d.MaxDelay
	if limit <= 0 {
		limit = 6 * time.Hour
	}
	w := base
	for i := 1; i < n && w < limit; i++ {
		w *= 2
	}
	w = min(w, limit)
	return time.Duration(float64(w) * (0.5 + rand.Float64()))
}

// send makes one try of dl.
func (d *Dispatcher) send(ctx context.Context, dl *changedigest.Delivery) Result {
	if dl.ChannelID == 0 {
		if d.Hub == nil {
			return Result{Err: errors.New("no WebSub hub is running"), Permanent: true}
		}
		w, snap, err := d.version(ctx, dl.WatchID, dl.Seq)
		if err != nil {
			return Result{Err: err, Permanent: changedigest.ErrorCode(err) == changedigest.ENOTFOUND}
		}
		return d.Hub.Distribute(ctx, dl, w, snap)
	}
	c, err := d.Store.Channel(ctx, dl.UserID, dl.ChannelID)
	if err != nil {
		return Result{Err: err, Permanent: changedigest.ErrorCode(err) == changedigest.ENOTFOUND}
	}
	w, snap, err := d.version(ctx, dl.WatchID, dl.Seq)
	if err != nil {
		return Result{Err: err, Permanent: changedigest.ErrorCode(err) == changedigest.ENOTFOUND}
	}
	ev, err := d.event(ctx, dl.ID, w, snap)
	if err != nil {
		return Result{Err: err}
	}
	return d.Send(ctx, c, ev)
}

func (d *Dispatcher) event(ctx context.Context, key string, w *changedigest.Watch, snap *changedigest.Snapshot) (*event, error) {
	ev := &event{key: key, watch: w, snap: snap}
	if d.Notifier != nil {
		m, err := d.Notifier.Matcher(ctx, w.UserID)
		if err != nil {
			return nil, err
		}
		ev.matches = Match(m, snap.Changes)
		if r := d.Notifier.Render; r != nil {
			ev.watchPage = r.URL("/watches/" + strconv.FormatInt(w.ID, 10))
			ev.url = ev.watchPage + "/versions/" + strconv.Itoa(snap.Seq)
			ev.tell(r)
		}
	}
	return ev, nil
}

// tell makes ev's view, as the feeds tell the version (a version that
// cannot be viewed is told by counts).
func (ev *event) tell(r *render.Engine) {
	v, err := r.View(render.Event{Watch: ev.watch, Snapshot: ev.snap, Matches: ev.matches},
		render.ViewOptions{Context: r.Context, MaxChars: r.MaxChangeChars})
	if err == nil {
		ev.view = &v
	}
}

// Test sends a test message to channel c at once, outside the outbox, and
// returns the outcome: a made-up version of a made-up watch, marked as a
// test ("event": "test" in a webhook payload).
func (d *Dispatcher) Test(ctx context.Context, c *changedigest.Channel) Result {
	now := d.now()
	w := &changedigest.Watch{ID: 0, UserID: c.UserID, URL: "https://example.org/", Title: "Test watch",
		Tags: []string{"test"}}
	snap := &changedigest.Snapshot{Seq: 1, FetchedAt: now, Kind: changedigest.KindPage, Significance: 0.5,
		Similarity: 0.9, Changes: []changedigest.Change{{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate,
			Path: "html|body|p", OldText: "The old text of a paragraph.", NewText: "The new text of a paragraph."}}}
	ev := &event{key: "test." + strconv.FormatInt(c.ID, 10) + "." + strconv.FormatInt(now.UnixNano(), 36),
		test: true, watch: w, snap: snap, url: "https://example.org/", watchPage: "https://example.org/"}
	if d.Notifier != nil && d.Notifier.Render != nil {
		ev.url, ev.watchPage = d.Notifier.Render.URL("/settings/channels"), d.Notifier.Render.URL("/settings/channels")
		ev.tell(d.Notifier.Render)
	}
	return d.Send(ctx, c, ev)
}

// Send delivers ev to channel c once.
func (d *Dispatcher) Send(ctx context.Context, c *changedigest.Channel, ev *event) Result {
	if c.Template != "" {
		// The channel's own message (template.go); a template that
		// fails fails the same way at every try.
		t, err := ParseTemplate(c.Template)
		if err != nil {
			return Result{Err: err, Permanent: true}
		}
		title, text, err := ev.render(t)
		if err != nil {
			return Result{Err: err, Permanent: true}
		}
		ev.templated, ev.tmplTitle, ev.text = true, title, text
	}
	switch c.Kind {
	case changedigest.ChannelWebhook:
		body, err := json.Marshal(ev.payload(d.now()))
		if err != nil {
			return Result{Err: err}
		}
		h := http.Header{"Content-Type": {"application/json"}}
		if ev.templated {
			body = []byte(ev.text)
			if !json.Valid(body) {
				h.Set("Content-Type", "text/plain; charset=utf-8")
			}
		}
		if c.Secret != "" {
			h.Set(SignatureHeader, Sign(c.Secret, d.now(), body))
			h.Set(TimestampHeader, strconv.FormatInt(d.now().Unix(), 10))
		}
		return d.post(ctx, http.MethodPost, c.URL, ev.key, h, body)
	case changedigest.ChannelSlack, changedigest.ChannelMattermost, changedigest.ChannelDiscord:
		body, err := ev.chatBody(c.Kind)
		if err != nil {
			return Result{Err: err}
		}
		return d.post(ctx, http.MethodPost, c.URL, ev.key, http.Header{"Content-Type": {"application/json"}}, body)
	case changedigest.ChannelNtfy:
		h := http.Header{
			"Content-Type": {"text/plain; charset=utf-8"},
			"Title":        {headerSafe(ev.title())},
			"Click":        {ev.url},
			"Markdown":     {"no"},
		}
		if c.Priority > 0 {
			h.Set("Priority", strconv.Itoa(c.Priority))
		}
		if len(c.NtfyTags) > 0 {
			h.Set("Tags", strings.Join(c.NtfyTags, ","))
		}
		if c.Secret != "" {
			h.Set("Authorization", "Bearer "+c.Secret)
		}
		return d.post(ctx, http.MethodPost, c.URL, ev.key, h, ev.ntfyBody())
	case changedigest.ChannelGotify:
		msg := map[string]any{"title": ev.title(), "message": string(ev.ntfyBody()),
			"extras": map[string]any{"client::notification": map[string]any{"click": map[string]string{"url": ev.url}}}}
		if c.Priority > 0 {
			msg["priority"] = gotifyPriority[c.Priority]
		}
		body, err := json.Marshal(msg)
		if err != nil {
			return Result{Err: err}
		}
		h := http.Header{"Content-Type": {"application/json"}, "X-Gotify-Key": {c.Secret}}
		return d.post(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+"/message", ev.key, h, body)
	case changedigest.ChannelTelegram:
		// Plain text (no parse mode): nothing in a change can break the
		// message's markup.
		text := clip(ev.title()+"\n\n"+string(ev.ntfyBody())+"\n\n"+ev.url, 4000)
		if ev.templated {
			text = clip(ev.text, 4000)
		}
		body, err := json.Marshal(map[string]any{"chat_id": c.Room, "text": text, "disable_web_page_preview": true})
		if err != nil {
			return Result{Err: err}
		}
		return d.post(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+"/bot"+c.Secret+"/sendMessage", ev.key,
			http.Header{"Content-Type": {"application/json"}}, body)
	case changedigest.ChannelPushover:
		form := url.Values{"token": {c.Secret}, "user": {c.Room}, "title": {clip(ev.title(), 250)},
			"message": {clip(string(ev.ntfyBody()), 1000)}, "url": {ev.url}, "url_title": {"Open the version"}}
		return d.post(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+"/1/messages.json", ev.key,
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte(form.Encode()))
	case changedigest.ChannelMatrix:
		return d.sendMatrix(ctx, c, ev)
	case changedigest.ChannelEmail:
		return d.sendEmail(ctx, c, ev)
	}
	return Result{Err: fmt.Errorf("notify: unknown channel kind %q", c.Kind), Permanent: true}
}

// gotifyPriority maps the channel's priority, 1 to 5 as ntfy has it, to
// Gotify's 0 to 10.
var gotifyPriority = [6]int{0, 1, 3, 5, 7, 10}

// headerSafe makes s a header value: one line, printable.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, clip(oneLine(s), 250))
}

// sendMatrix PUTs an m.room.message with the idempotency key as the
// transaction id, so the homeserver itself drops a repeated try.
func (d *Dispatcher) sendMatrix(ctx context.Context, c *changedigest.Channel, ev *event) Result {
	room, res := d.matrixRoom(ctx, c)
	if res.Err != nil {
		return res
	}
	body, err := ev.matrixBody()
	if err != nil {
		return Result{Err: err}
	}
	u := strings.TrimRight(c.URL, "/") + "/_matrix/client/v3/rooms/" + url.PathEscape(room) +
		"/send/m.room.message/" + url.PathEscape(txnID(ev.key))
	h := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + c.Secret}}
	return d.post(ctx, http.MethodPut, u, ev.key, h, body)
}

// txnID is a Matrix transaction id for key: unique per key and made of
// URL-safe characters.
func txnID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "cd" + hex.EncodeToString(sum[:16])
}

// matrixRoom resolves a room alias to its id (cached).
func (d *Dispatcher) matrixRoom(ctx context.Context, c *changedigest.Channel) (string, Result) {
	if !strings.HasPrefix(c.Room, "#") {
		return c.Room, Result{}
	}
	ck := c.URL + " " + c.Room
	d.matrixMu.Lock()
	id, ok := d.rooms[ck]
	d.matrixMu.Unlock()
	if ok {
		return id, Result{}
	}
	u := strings.TrimRight(c.URL, "/") + "/_matrix/client/v3/directory/room/" + url.PathEscape(c.Room)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", Result{Err: err, Permanent: true}
	}
	req.Header.Set("Authorization", "Bearer "+c.Secret)
	resp, err := d.client().Do(req)
	if err != nil {
		return "", Result{Err: fmt.Errorf("resolve Matrix room %s: %w", c.Room, err)}
	}
	defer resp.Body.Close()
	var out struct {
		RoomID string `json:"room_id"`
	}
	if resp.StatusCode != http.StatusOK {
		r := d.result(resp)
		r.Err = fmt.Errorf("resolve Matrix room %s: %w", c.Room, r.Err)
		return "", r
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil || out.RoomID == "" {
		return "", Result{Status: resp.StatusCode, Err: fmt.Errorf("resolve Matrix room %s: no room_id in the answer", c.Room)}
	}
	d.matrixMu.Lock()
	if d.rooms == nil {
		d.rooms = map[string]string{}
	}
	d.rooms[ck] = out.RoomID
	d.matrixMu.Unlock()
	return out.RoomID, Result{}
}

// sendEmail mails one change event, rendered like a one-event digest;
// the Message-ID carries the idempotency key.
func (d *Dispatcher) sendEmail(ctx context.Context, c *changedigest.Channel, ev *event) Result {
	n := d.Notifier
	if n == nil || n.Mail == nil {
		// Retrying cannot help until the operator sets up mail; then the
		// delivery can be sent again on demand.
		return Result{Err: changedigest.Errorf(changedigest.EINVALID, "e-mail is not configured (set --smtp)"), Permanent: true}
	}
	u, err := d.Store.User(ctx, c.UserID)
	if err != nil {
		return Result{Err: err, Permanent: changedigest.ErrorCode(err) == changedigest.ENOTFOUND}
	}
	data := render.DigestData{User: u, Day: n.Day(ev.snap.FetchedAt),
		Events: []render.Event{{Watch: ev.watch, Snapshot: ev.snap, Matches: ev.matches}}}
	var msg bytes.Buffer
	h := render.MailHeader{From: n.Mail.From, To: mail.Address{Name: u.Name, Address: c.URL}, Date: d.now(),
		Subject: ev.title(), MessageID: "<" + txnID(ev.key) + "@" + n.Render.Authority + ">"}
	write := func() error { return n.Render.DigestEmail(&msg, h, data) }
	if ev.templated {
		write = func() error { return n.Render.TextEmail(&msg, h, ev.text) }
	}
	if err := write(); err != nil {
		return Result{Err: err, Permanent: true}
	}
	if err := n.Mail.Send(ctx, c.URL, msg.Bytes()); err != nil {
		return Result{Err: err}
	}
	return Result{Status: 250}
}

// post sends one request and reads the answer.
func (d *Dispatcher) post(ctx context.Context, method, target, key string, h http.Header, body []byte) Result {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return Result{Err: fmt.Errorf("bad address %q: %w", target, err), Permanent: true}
	}
	req.Header = h
	req.Header.Set(IdempotencyHeader, key)
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "changedigest-notify")
	}
	resp, err := d.client().Do(req)
	if err != nil {
		// A refused address stays refused until the operator allows it.
		return Result{Err: unwrapURL(err), Permanent: crawl.IsPrivateAddress(err)}
	}
	defer resp.Body.Close()
	return d.result(resp)
}

// result reads a receiver's answer (see resultOf).
func (d *Dispatcher) result(resp *http.Response) Result { return resultOf(resp, d.now()) }

// resultOf reads a receiver's answer: 2xx is success; 408, 425, 429 and
// 5xx are worth retrying (Retry-After honoured); other statuses are not.
func resultOf(resp *http.Response, now time.Time) Result {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	r := Result{Status: resp.StatusCode}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return r
	}
	r.Err = fmt.Errorf("the receiver answered %s", resp.Status)
	r.RetryAfter = crawl.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	switch s := resp.StatusCode; {
	case s == http.StatusRequestTimeout || s == http.StatusTooEarly || s == http.StatusTooManyRequests || s >= 500:
	default:
		r.Permanent = true
	}
	return r
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", strings.ToUpper(ue.Op), redact(ue.URL), ue.Err)
	}
	return err
}

// redact drops the path and query of an address for error messages: a
// webhook URL often holds its secret there.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the receiver"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

func (d *Dispatcher) client() *http.Client {
	if d.Client != nil {
		return d.Client
	}
	return http.DefaultClient
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dispatcher) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}
