package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
)

// The WebSub hub (W3C Recommendation, 23 January 2018). The topics are
// the service's own feeds (/feeds/TOKEN/…, any of the three formats); a
// subscriber asks the hub (Hub.Request, behind POST /websub), the hub
// verifies the intent by a GET to the callback with a challenge, stores
// the subscription with its lease, and when a version is stored sends
// the subscriber a feed document holding the new entry, signed with
// X-Hub-Signature when the subscriber gave a secret. Distributions are
// deliveries of the dispatcher's outbox, so they are retried, go dead
// after the tries, and carry the idempotency key like any other.

// HubStore is the store as the hub sees it.
type HubStore interface {
	UserByFeedToken(ctx context.Context, token string) (*changedigest.User, error)
	User(ctx context.Context, id int64) (*changedigest.User, error)
	Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error)
	PutSubscription(ctx context.Context, sub *changedigest.Subscription) error
	DeleteSubscription(ctx context.Context, topic, callback string) error
	Subscriptions(ctx context.Context, userID int64) ([]changedigest.Subscription, error)
	ExpireSubscriptions(ctx context.Context, now time.Time) (int, error)
}

// Hub is the WebSub hub. Set the knobs after NewHub.
type Hub struct {
	Store    HubStore
	Notifier *Notifier
	// Client makes the verification and distribution requests; its
	// connections must pass the fetcher's address checks
	// (crawl.Fetcher.Client). Nil means http.DefaultClient: tests only.
	Client *http.Client
	// URL is the hub's public address.
	URL string
	// DefaultLease and MaxLease bound hub.lease_seconds (10 and 30 days).
	DefaultLease, MaxLease time.Duration
	// MaxPerTopic, MaxPerHost and MaxPerUser cap the active
	// subscriptions to one topic, with callbacks on one host, and to all
	// the feeds of one user (DefaultMaxPerTopic, DefaultMaxPerHost,
	// DefaultMaxPerUser); verifications under way count. A host is a
	// callback's registrable domain (a.example.net and b.example.net are
	// one), or its IP address (an IPv6 address's /64). 0 is no cap.
	MaxPerTopic, MaxPerHost, MaxPerUser int
	// Verifiers bounds the verifications of intent made at once
	// (DefaultVerifiers), MaxWaiting the requests waiting for one
	// (DefaultMaxWaiting): a request beyond them is refused as busy.
	Verifiers, MaxWaiting int
	// VerifyTimeout bounds a verification (10 s).
	VerifyTimeout time.Duration
	// SummaryEvery is how often failed verifications are logged: one
	// line with their counts by reason (a minute).
	SummaryEvery time.Duration
	Now          func() time.Time
	Logger       *slog.Logger

	wg    sync.WaitGroup
	setup sync.Once
	ctx   context.Context // ends with Close
	stop  context.CancelFunc
	slots chan struct{} // one per verification under way

	mu      sync.Mutex
	pending map[string]*pendingVerification // subKey → admitted, not yet done
	fails   failureSummary
}

// The defaults of the hub's limits.
const (
	DefaultMaxPerTopic = 20
	DefaultMaxPerHost  = 50
	DefaultMaxPerUser  = 200
	DefaultVerifiers   = 8
	DefaultMaxWaiting  = 64
)

// NewHub returns a hub with defaults, reachable at url.
func NewHub(store HubStore, n *Notifier, client *http.Client, url string) *Hub {
	return &Hub{Store: store, Notifier: n, Client: client, URL: url, DefaultLease: 10 * 24 * time.Hour,
		MaxLease: 30 * 24 * time.Hour, MaxPerTopic: DefaultMaxPerTopic, MaxPerHost: DefaultMaxPerHost,
		MaxPerUser: DefaultMaxPerUser, Verifiers: DefaultVerifiers, MaxWaiting: DefaultMaxWaiting,
		VerifyTimeout: 10 * time.Second, SummaryEvery: time.Minute, Now: time.Now, Logger: slog.Default()}
}

// Topic is a feed of the service as a WebSub topic.
type Topic struct {
	URL   string
	Token string
	// WatchID or Tag narrow it to a watch's or a tag's feed.
	WatchID int64
	Tag     string
	// Format is "atom", "rss" or "json".
	Format string
}

// ParseTopic reads a topic URL: one of the service's feed addresses.
// Errors: EINVALID naming what is wrong.
func (h *Hub) ParseTopic(topic string) (Topic, error) {
	t := Topic{URL: topic}
	r := h.Notifier.Render
	rest, ok := strings.CutPrefix(topic, r.URL("/feeds/"))
	if !ok {
		return t, changedigest.Errorf(changedigest.EINVALID, "hub.topic %q is not a feed of this service (%s)", topic, r.URL("/feeds/…"))
	}
	token, path, _ := strings.Cut(rest, "/")
	t.Token = token
	ext := func(p string) (string, string) {
		for suffix, format := range map[string]string{".xml": "atom", ".rss": "rss", ".json": "json"} {
			if base, ok := strings.CutSuffix(p, suffix); ok {
				return base, format
			}
		}
		return "", ""
	}
	switch {
	case token == "":
	case path == "atom.xml":
		t.Format = "atom"
	case path == "rss.xml":
		t.Format = "rss"
	case path == "feed.json":
		t.Format = "json"
	case strings.HasPrefix(path, "watches/"):
		base, format := ext(strings.TrimPrefix(path, "watches/"))
		id, err := strconv.ParseInt(base, 10, 64)
		if err == nil && id > 0 {
			t.WatchID, t.Format = id, format
		}
	case strings.HasPrefix(path, "tags/"):
		base, format := ext(strings.TrimPrefix(path, "tags/"))
		if tag, err := url.PathUnescape(base); err == nil {
			if tags := changedigest.NormaliseTags([]string{tag}); len(tags) == 1 {
				t.Tag, t.Format = tags[0], format
			}
		}
	}
	if t.Format == "" {
		return t, changedigest.Errorf(changedigest.EINVALID, "hub.topic %q is not a feed address of this service", topic)
	}
	return t, nil
}

// resolve finds the topic's user (and watch), checking that the feed exists.
func (h *Hub) resolve(ctx context.Context, t Topic) (*changedigest.User, *changedigest.Watch, error) {
	u, err := h.Store.UserByFeedToken(ctx, t.Token)
	if err != nil {
		if c := changedigest.ErrorCode(err); c == changedigest.ENOTFOUND || c == changedigest.EINVALID {
			return nil, nil, changedigest.Errorf(changedigest.ENOTFOUND, "hub.topic %q: no such feed", t.URL)
		}
		return nil, nil, err
	}
	var w *changedigest.Watch
	if t.WatchID != 0 {
		if w, err = h.Store.Watch(ctx, u.ID, t.WatchID); err != nil {
			return nil, nil, err
		}
	}
	return u, w, nil
}

// Request handles a subscriber's request (the form fields of POST to the
// hub). It checks what it can at once, then verifies the intent in the
// background: a GET to the callback with a challenge, and for a
// subscription, when the callback echoes it, the subscription is stored
// with its lease (renewing it when it exists). A request for a topic and
// callback whose verification is under way in the same mode is taken
// without a second one. Errors: EINVALID; ENOTFOUND for a feed that does
// not exist; EFORBIDDEN over a cap on subscriptions, naming it;
// ECONFLICT while a verification in the other mode is under way; EBUSY
// when as many requests wait as the hub takes.
func (h *Hub) Request(ctx context.Context, mode, topic, callback string, lease int, secret string) error {
	if mode != "subscribe" && mode != "unsubscribe" {
		return changedigest.Errorf(changedigest.EINVALID, "hub.mode %q is not subscribe or unsubscribe", mode)
	}
	cb, err := url.Parse(callback)
	if err != nil || cb.Host == "" || (cb.Scheme != "http" && cb.Scheme != "https") || len(callback) > 2048 {
		return changedigest.Errorf(changedigest.EINVALID, "hub.callback %q is not an absolute http or https URL", callback)
	}
	if cb.Fragment != "" || strings.ContainsRune(callback, 0) {
		return changedigest.Errorf(changedigest.EINVALID, "hub.callback must not hold a fragment")
	}
	if len(secret) >= 200 {
		return changedigest.Errorf(changedigest.EINVALID, "hub.secret must be shorter than 200 bytes")
	}
	if lease < 0 {
		return changedigest.Errorf(changedigest.EINVALID, "hub.lease_seconds %d is negative", lease)
	}
	t, err := h.ParseTopic(topic)
	if err != nil {
		return err
	}
	u, w, err := h.resolve(ctx, t)
	if err != nil {
		return err
	}
	l := time.Duration(lease) * time.Second
	if l == 0 {
		l = h.DefaultLease
	}
	l = min(max(l, time.Minute), h.MaxLease)
	sub := &changedigest.Subscription{Topic: topic, Callback: callback, UserID: u.ID, Tag: t.Tag, Format: t.Format,
		Secret: secret, Lease: int(l / time.Second)}
	if w != nil {
		sub.WatchID = w.ID
	}
	p, err := h.admit(ctx, mode, sub)
	if err != nil || p == nil {
		return err
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer h.done(p)
		select {
		case h.slots <- struct{}{}:
		case <-h.ctx.Done():
			return
		}
		defer func() { <-h.slots }()
		timeout := h.VerifyTimeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		vctx, cancel := context.WithTimeout(h.ctx, timeout)
		defer cancel()
		if err := h.verify(vctx, mode, sub); err != nil && h.ctx.Err() == nil {
			h.failed(p.host, err)
			h.logger().Debug("websub intent not verified", "mode", mode, "callback", redact(callback), "err", err)
		}
	}()
	return nil
}

// Wait waits for the verifications waiting and under way (tests).
func (h *Hub) Wait() { h.wg.Wait() }

// Close ends the verifications under way, refuses further requests as
// busy, and logs the failures not yet summarised.
func (h *Hub) Close() error {
	h.init()
	h.stop()
	h.wg.Wait()
	h.logFailures()
	return nil
}

// verify makes the verification of intent and records its outcome.
// Errors: a *verifyError saying why the intent is not verified.
func (h *Hub) verify(ctx context.Context, mode string, sub *changedigest.Subscription) error {
	challenge := make([]byte, 24)
	rand.Read(challenge)
	ch := base64.RawURLEncoding.EncodeToString(challenge)
	q := url.Values{"hub.mode": {mode}, "hub.topic": {sub.Topic}, "hub.challenge": {ch}}
	if mode == "subscribe" {
		q.Set("hub.lease_seconds", strconv.Itoa(sub.Lease))
	}
	body, status, err := h.get(ctx, sub.Callback, q)
	if err != nil {
		return &verifyError{reason: transportReason(err), err: err}
	}
	if status < 200 || status > 299 {
		return &verifyError{reason: reasonRefused, err: fmt.Errorf("the callback answered %d", status)}
	}
	if strings.TrimSpace(string(body)) != ch {
		return &verifyError{reason: reasonNoChallenge, err: fmt.Errorf("the callback answered %d without the challenge", status)}
	}
	if mode == "unsubscribe" {
		if err := h.Store.DeleteSubscription(ctx, sub.Topic, sub.Callback); err != nil {
			return &verifyError{reason: reasonStore, err: err}
		}
		return nil
	}
	// Verifications under way count against the caps when a request is
	// taken; this check catches those that ended since.
	if err := h.checkCaps(ctx, sub); err != nil {
		return &verifyError{reason: reasonOverCap, err: err}
	}
	sub.Expires = h.now().Add(time.Duration(sub.Lease) * time.Second)
	if err := h.Store.PutSubscription(ctx, sub); err != nil {
		return &verifyError{reason: reasonStore, err: err}
	}
	return nil
}

// get sends a GET with the query added to target's own and returns up to
// 64 KB of the answer.
func (h *Hub) get(ctx context.Context, target string, q url.Values) ([]byte, int, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, 0, err
	}
	all := u.Query()
	for k, v := range q {
		all[k] = v
	}
	u.RawQuery = all.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("User-Agent", "changedigest-websub")
	resp, err := h.client().Do(req)
	if err != nil {
		return nil, 0, unwrapURL(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return b, resp.StatusCode, err
}

// Targets lists the distributions of a new version: one per live
// subscription whose feed carries the watch.
func (h *Hub) Targets(ctx context.Context, w *changedigest.Watch, snap *changedigest.Snapshot, key func(string) string) ([]changedigest.Delivery, error) {
	subs, err := h.Store.Subscriptions(ctx, w.UserID)
	if err != nil || len(subs) == 0 {
		return nil, err
	}
	u, err := h.Store.User(ctx, w.UserID)
	if err != nil {
		return nil, err
	}
	now := h.now()
	var out []changedigest.Delivery
	for i := range subs {
		s := &subs[i]
		if t, err := h.ParseTopic(s.Topic); err != nil || t.Token != u.FeedToken {
			// The user gave their feeds new addresses: the old ones, and
			// their subscribers, are gone.
			if err := h.Store.DeleteSubscription(ctx, s.Topic, s.Callback); err != nil {
				return nil, err
			}
			continue
		}
		if !s.Covers(w) || (!s.Expires.IsZero() && s.Expires.Before(now)) {
			continue
		}
		sum := sha256.Sum256([]byte(s.Topic + "\x00" + s.Callback))
		out = append(out, changedigest.Delivery{ID: key("s" + hex.EncodeToString(sum[:8])), UserID: w.UserID,
			Topic: s.Topic, Callback: s.Callback, WatchID: w.ID, Seq: snap.Seq})
	}
	return out, nil
}

// SignatureHeaderHub is the WebSub signature header: "sha256=HEX", the
// HMAC-SHA256 of the body keyed with the subscriber's hub.secret.
const SignatureHeaderHub = "X-Hub-Signature"

// Distribute sends the topic's feed holding the version's entry to the
// subscriber, with Link headers naming the hub and the topic.
func (h *Hub) Distribute(ctx context.Context, d *changedigest.Delivery, w *changedigest.Watch, snap *changedigest.Snapshot) Result {
	subs, err := h.Store.Subscriptions(ctx, d.UserID)
	if err != nil {
		return Result{Err: err}
	}
	var sub *changedigest.Subscription
	for i := range subs {
		if subs[i].Topic == d.Topic && subs[i].Callback == d.Callback {
			sub = &subs[i]
		}
	}
	if sub == nil {
		return Result{Err: fmt.Errorf("the subscription has ended"), Permanent: true}
	}
	body, ctype, err := h.Feed(ctx, sub.Topic, w, snap)
	if err != nil {
		return Result{Err: err, Permanent: changedigest.ErrorCode(err) == changedigest.ENOTFOUND}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Callback, bytes.NewReader(body))
	if err != nil {
		return Result{Err: err, Permanent: true}
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "changedigest-websub")
	req.Header.Set(IdempotencyHeader, d.ID)
	req.Header.Add("Link", "<"+h.URL+`>; rel="hub"`)
	req.Header.Add("Link", "<"+sub.Topic+`>; rel="self"`)
	if sub.Secret != "" {
		m := hmac.New(sha256.New, []byte(sub.Secret))
		m.Write(body)
		req.Header.Set(SignatureHeaderHub, "sha256="+hex.EncodeToString(m.Sum(nil)))
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return Result{Err: unwrapURL(err)}
	}
	defer resp.Body.Close()
	r := resultOf(resp, h.now())
	if resp.StatusCode == http.StatusGone {
		// The subscriber says it is gone: so is the subscription.
		h.Store.DeleteSubscription(ctx, sub.Topic, sub.Callback)
	}
	return r
}

// Feed renders the feed document of topic holding only the entry of
// version snap of w, in the topic's format, and its media type.
func (h *Hub) Feed(ctx context.Context, topic string, w *changedigest.Watch, snap *changedigest.Snapshot) ([]byte, string, error) {
	t, err := h.ParseTopic(topic)
	if err != nil {
		return nil, "", err
	}
	u, _, err := h.resolve(ctx, t)
	if err != nil {
		return nil, "", err
	}
	n := h.Notifier
	m, err := n.Matcher(ctx, u.ID)
	if err != nil {
		return nil, "", err
	}
	r := n.Render
	feedsBase := r.URL("/feeds/" + t.Token)
	var info render.FeedInfo
	switch {
	case t.WatchID != 0:
		info = r.WatchFeed(u, w, feedsBase+"/watches/"+strconv.FormatInt(w.ID, 10)+".xml")
	case t.Tag != "":
		info = r.TagFeed(u, t.Tag, feedsBase+"/tags/"+url.PathEscape(t.Tag)+".xml")
	default:
		info = r.UserFeed(u, feedsBase+"/atom.xml")
	}
	info.RSSURL, info.JSONURL = render.AlternateURLs(info.SelfURL)
	info.HubURL = h.URL
	evs := []render.Event{{Watch: w, Snapshot: snap, Matches: Match(m, snap.Changes)}}
	var buf bytes.Buffer
	switch t.Format {
	case "rss":
		err = r.RSS(&buf, info, evs)
		return buf.Bytes(), "application/rss+xml; charset=utf-8", err
	case "json":
		err = r.JSONFeed(&buf, info, evs)
		return buf.Bytes(), "application/feed+json; charset=utf-8", err
	}
	err = r.Atom(&buf, info, evs)
	return buf.Bytes(), "application/atom+xml; charset=utf-8", err
}

// Expire removes the subscriptions whose lease has ended.
func (h *Hub) Expire(ctx context.Context) (int, error) {
	return h.Store.ExpireSubscriptions(ctx, h.now())
}

func (h *Hub) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return http.DefaultClient
}

func (h *Hub) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Hub) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

var _ Distributor = (*Hub)(nil)
var _ HubStore = (*pet.Store)(nil)
