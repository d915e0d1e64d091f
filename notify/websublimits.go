package notify

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
)

// The hub's limits: every subscription request costs a verification (an
// outgoing request), every verified subscription a distribution per new
// version. The server limits the requests per address and per feed; the
// hub caps the subscriptions (per topic, per callback host, per user),
// verifies a few at once with a short queue behind them, and logs the
// failed verifications as one summary line now and then, not one line
// each.

// pendingVerification is a request the hub took and has not finished
// verifying.
type pendingVerification struct {
	key, mode   string
	topic, host string
	userID      int64
}

func (h *Hub) init() {
	h.setup.Do(func() {
		h.ctx, h.stop = context.WithCancel(context.Background())
		h.slots = make(chan struct{}, max(h.Verifiers, 1))
		h.pending = map[string]*pendingVerification{}
	})
}

// admit takes a request in the queue of verifications. It returns nil
// and no error for a request whose verification is under way already.
// Errors: as Request's, but EINVALID and ENOTFOUND.
func (h *Hub) admit(ctx context.Context, mode string, sub *changedigest.Subscription) (*pendingVerification, error) {
	h.init()
	p := &pendingVerification{key: subKeyOf(sub.Topic, sub.Callback), mode: mode, topic: sub.Topic,
		host: CallbackHost(sub.Callback), userID: sub.UserID}
	var stored []changedigest.Subscription
	if mode == "subscribe" && h.capped() {
		var err error
		if stored, err = h.Store.Subscriptions(ctx, pet.AnyUser); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return nil, changedigest.Errorf(changedigest.EBUSY, "the hub is shutting down; try again shortly")
	}
	if q := h.pending[p.key]; q != nil {
		if q.mode == mode {
			return nil, nil
		}
		return nil, changedigest.Errorf(changedigest.ECONFLICT,
			"the hub is verifying hub.mode=%s for this topic and callback; ask again once it is done", q.mode)
	}
	if len(h.pending) >= max(h.Verifiers, 1)+max(h.MaxWaiting, 0) {
		return nil, changedigest.Errorf(changedigest.EBUSY,
			"the hub has %d subscription requests waiting for verification, as many as it takes; try again shortly", len(h.pending))
	}
	if mode == "subscribe" {
		if err := h.overCap(p, stored, h.pending); err != nil {
			return nil, err
		}
	}
	h.pending[p.key] = p
	return p, nil
}

// done takes a finished verification out of the queue.
func (h *Hub) done(p *pendingVerification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[p.key] == p {
		delete(h.pending, p.key)
	}
}

func (h *Hub) capped() bool { return h.MaxPerTopic > 0 || h.MaxPerHost > 0 || h.MaxPerUser > 0 }

// checkCaps is overCap against the stored subscriptions alone.
func (h *Hub) checkCaps(ctx context.Context, sub *changedigest.Subscription) error {
	if !h.capped() {
		return nil
	}
	stored, err := h.Store.Subscriptions(ctx, pet.AnyUser)
	if err != nil {
		return err
	}
	p := &pendingVerification{key: subKeyOf(sub.Topic, sub.Callback), topic: sub.Topic,
		host: CallbackHost(sub.Callback), userID: sub.UserID}
	return h.overCap(p, stored, nil)
}

// overCap returns the EFORBIDDEN error of the first cap the subscription
// of p would go over, counting the live stored subscriptions and the
// subscriptions pending verification; p's own (a renewal) does not count.
func (h *Hub) overCap(p *pendingVerification, stored []changedigest.Subscription, pending map[string]*pendingVerification) error {
	var topic, host, user int
	count := func(t, cbHost string, userID int64) {
		if t == p.topic {
			topic++
		}
		if cbHost == p.host {
			host++
		}
		if userID == p.userID {
			user++
		}
	}
	now := h.now()
	seen := map[string]bool{}
	for i := range stored {
		s := &stored[i]
		k := subKeyOf(s.Topic, s.Callback)
		if k == p.key || !s.Expires.IsZero() && !s.Expires.After(now) {
			continue
		}
		seen[k] = true
		count(s.Topic, CallbackHost(s.Callback), s.UserID)
	}
	for k, q := range pending {
		if k != p.key && q.mode == "subscribe" && !seen[k] {
			count(q.topic, q.host, q.userID)
		}
	}
	switch {
	case h.MaxPerTopic > 0 && topic >= h.MaxPerTopic:
		return changedigest.Errorf(changedigest.EFORBIDDEN,
			"hub.topic has %d subscriptions, the most this hub keeps for one topic", topic)
	case h.MaxPerHost > 0 && host >= h.MaxPerHost:
		return changedigest.Errorf(changedigest.EFORBIDDEN,
			"callbacks on %s hold %d subscriptions, the most this hub keeps for one callback host", p.host, host)
	case h.MaxPerUser > 0 && user >= h.MaxPerUser:
		return changedigest.Errorf(changedigest.EFORBIDDEN,
			"the feeds of this topic's owner have %d subscriptions, the most this hub keeps for one user's feeds", user)
	}
	return nil
}

func subKeyOf(topic, callback string) string { return topic + "\x00" + callback }

// CallbackHost is the host a callback URL counts against for the cap
// per host: its registrable domain ("eTLD+1": a.example.co.uk and
// b.example.co.uk are example.co.uk), an IPv4 address, or an IPv6
// address's /64, so that one party's many names or addresses count as
// one.
func CallbackHost(callback string) string {
	u, err := url.Parse(callback)
	if err != nil {
		return callback
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap().WithZone("")
		if ip.Is6() {
			p, _ := ip.Prefix(64)
			return p.String()
		}
		return ip.String()
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return d
	}
	return host
}

// Reasons a verification of intent failed, the keys of the summary.
const (
	reasonPrivate     = "private_address" // the callback's address is not public
	reasonTimeout     = "timed_out"
	reasonUnreachable = "unreachable" // no connection, no name, TLS, cut off
	reasonRefused     = "refused"     // answered with a status other than 2xx
	reasonNoChallenge = "no_challenge"
	reasonOverCap     = "over_cap" // verified, but a cap was reached meanwhile
	reasonStore       = "store_error"
	reasonOther       = "other"
)

var reasons = []string{reasonRefused, reasonNoChallenge, reasonTimeout, reasonUnreachable, reasonPrivate,
	reasonOverCap, reasonStore, reasonOther}

// verifyError is a failed verification of intent with its reason.
type verifyError struct {
	reason string
	err    error
}

func (e *verifyError) Error() string { return e.err.Error() }
func (e *verifyError) Unwrap() error { return e.err }

// transportReason is the reason of a verification whose request failed.
func transportReason(err error) string {
	var ne net.Error
	switch {
	case crawl.IsPrivateAddress(err):
		return reasonPrivate
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, crawl.ErrTimeout), errors.As(err, &ne) && ne.Timeout():
		return reasonTimeout
	}
	return reasonUnreachable
}

// failureSummary counts the failed verifications since the last summary.
type failureSummary struct {
	since    time.Time
	byReason map[string]int
	byHost   map[string]int
	timer    *time.Timer
}

// maxSummaryHosts bounds the hosts a summary counts apart.
const maxSummaryHosts = 1000

// failed counts a failed verification; the first of a period sets the
// summary to be logged at its end.
func (h *Hub) failed(host string, err error) {
	reason := reasonOther
	var ve *verifyError
	if errors.As(err, &ve) {
		reason = ve.reason
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f := &h.fails
	if f.byReason == nil {
		every := h.SummaryEvery
		if every <= 0 {
			every = time.Minute
		}
		f.since, f.byReason, f.byHost = h.now(), map[string]int{}, map[string]int{}
		f.timer = time.AfterFunc(every, h.logFailures)
	}
	f.byReason[reason]++
	if _, ok := f.byHost[host]; ok || len(f.byHost) < maxSummaryHosts {
		f.byHost[host]++
	}
}

// logFailures logs the summary of the failed verifications counted so
// far, if any, in one line: how many failed, by reason, on how many
// callback hosts, and the host with most failures.
func (h *Hub) logFailures() {
	h.mu.Lock()
	f := h.fails
	h.fails = failureSummary{}
	h.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
	}
	if len(f.byReason) == 0 {
		return
	}
	total := 0
	for _, n := range f.byReason {
		total += n
	}
	attrs := []any{"failed", total}
	for _, r := range reasons {
		if n := f.byReason[r]; n > 0 {
			attrs = append(attrs, r, n)
		}
	}
	hosts := make([]string, 0, len(f.byHost))
	for host := range f.byHost {
		hosts = append(hosts, host)
	}
	top := slices.MaxFunc(hosts, func(a, b string) int {
		return cmp.Or(cmp.Compare(f.byHost[a], f.byHost[b]), strings.Compare(b, a))
	})
	attrs = append(attrs, "hosts", len(hosts), "top_host", top, "top_host_failed", f.byHost[top], "since", f.since)
	h.logger().Info("websub verifications failed", attrs...)
}
