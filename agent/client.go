package agent

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/changedigest/changedigest/crawl"
)

// Client is a polling client (changedigest client): it registers with a
// server under a user's API token, polls the pages it is assigned on the
// staggered schedule the server computes (see Coordinator), with a light
// check against the newest stored version (conditional GET, body hash,
// page summary), and reports the pages that changed. Set the knobs, then
// Run.
type Client struct {
	// Server is the service's base URL; Token a user's API token.
	Server, Token string
	// Name names the client in the user's views (default: none).
	Name string
	// HTTP talks to the server (default: 30 s timeout).
	HTTP *http.Client
	// Fetcher fetches the pages, with its own guard against private
	// addresses.
	Fetcher *crawl.Fetcher
	// HostGap is the least time between two requests to one host (1 s).
	HostGap time.Duration
	Logger  *slog.Logger

	// Fetches and Reports count the pages fetched and the changes reported.
	Fetches, Reports atomic.Int64
	// Missed counts the polls whose time passed while earlier ones ran,
	// and Replaced the schedules the server gave anew (a client joined
	// or left, or a page's change rate moved): polls they postponed.
	Missed, Replaced atomic.Int64

	id    int64
	poll  time.Duration
	slots map[int64]*clientSlot
	hosts map[string]time.Time
}

type clientSlot struct {
	a    Assignment
	next time.Time
}

// NewClient returns a client of server with a user's API token.
func NewClient(server, token string) *Client {
	return &Client{Server: strings.TrimRight(server, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second},
		Fetcher: crawl.NewFetcher(), HostGap: time.Second, Logger: slog.Default()}
}

// apiError is an error answer of the server's API.
type apiError struct {
	Status int
	Code   string `json:"code"`
	Msg    string `json:"message"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("server answered %d: %s", e.Status, e.Msg)
}

// call sends a JSON request to the API and decodes the answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Server+"/api/v1"+path, body)
	if err != nil {
		return fmt.Errorf("agent: server URL %q: %w", c.Server, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("agent: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("agent: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		e := &apiError{Status: resp.StatusCode}
		var wrap struct {
			Error *apiError `json:"error"`
		}
		wrap.Error = e
		if json.Unmarshal(b, &wrap) != nil || e.Msg == "" {
			e.Msg = strings.TrimSpace(string(b))
		}
		e.Status = resp.StatusCode
		return e
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("agent: %s %s: the answer is not the expected JSON: %w", method, path, err)
		}
	}
	return nil
}

// ErrToken is returned by Run when the server refuses the token.
var ErrToken = errors.New("agent: the server refused the API token (create one under Settings)")

// Run registers and polls until ctx ends, then leaves. It returns ErrToken
// when the server refuses the token, and an error when the server is not
// a changedigest server with clients enabled; other failures (the server
// unreachable for a while, a page failing) are logged and retried.
func (c *Client) Run(ctx context.Context) error {
	if _, err := url.ParseRequestURI(c.Server); err != nil || !strings.HasPrefix(c.Server, "http") {
		return fmt.Errorf("agent: server URL %q is not an http(s) URL", c.Server)
	}
	c.slots, c.hosts = map[int64]*clientSlot{}, map[string]time.Time{}
	if err := c.register(ctx); err != nil {
		return err
	}
	defer func() {
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.call(lctx, http.MethodDelete, fmt.Sprintf("/clients/%d", c.id), nil, nil)
	}()
	nextPoll := time.Time{}
	backoff := time.Second
	for {
		now := time.Now()
		if !now.Before(nextPoll) {
			err := c.assignments(ctx)
			switch {
			case err == nil:
				backoff = time.Second
				nextPoll = time.Now().Add(c.poll)
			case ctx.Err() != nil:
				return nil
			case isStatus(err, http.StatusUnauthorized):
				return ErrToken
			case isStatus(err, http.StatusNotFound):
				c.Logger.Info("the server dropped this client; registering again")
				if err := c.register(ctx); err != nil {
					return err
				}
				continue
			default:
				c.Logger.Warn("asking for assignments", "err", err, "retry_in", backoff)
				nextPoll = time.Now().Add(backoff)
				backoff = min(2*backoff, 5*time.Minute)
			}
		}
		wake := nextPoll
		for id, s := range c.slots {
			if !time.Now().Before(s.next) {
				c.check(ctx, s)
				s.next = s.next.Add(s.a.CrawlGap)
				if now := time.Now(); s.next.Before(now) {
					missed := s.next
					s.next = slotAfter(s.a, now)
					c.Missed.Add(int64(s.next.Sub(missed) / max(s.a.CrawlGap, 1)))
				}
				if ctx.Err() != nil {
					return nil
				}
			}
			// check may have asked for the assignments again and
			// replaced the slot.
			if cur := c.slots[id]; cur != nil && cur.next.Before(wake) {
				wake = cur.next
			}
		}
		t := time.NewTimer(time.Until(wake))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func isStatus(err error, status int) bool {
	var e *apiError
	return errors.As(err, &e) && e.Status == status
}

func (c *Client) register(ctx context.Context) error {
	var out struct {
		ID   int64  `json:"id"`
		Poll string `json:"poll"`
	}
	err := c.call(ctx, http.MethodPost, "/clients", map[string]string{"name": c.Name}, &out)
	switch {
	case isStatus(err, http.StatusUnauthorized):
		return ErrToken
	case isStatus(err, http.StatusNotFound):
		return fmt.Errorf("agent: %s does not take polling clients: %w", c.Server, err)
	case err != nil:
		return err
	}
	poll, err := time.ParseDuration(out.Poll)
	if err != nil || poll <= 0 {
		poll = 30 * time.Second
	}
	c.id, c.poll = out.ID, poll
	c.slots = map[int64]*clientSlot{}
	c.Logger.Info("registered", "client", c.id, "poll", c.poll)
	return nil
}

// assignments fetches the client's assignments and (re)places each
// watch's next poll when its schedule changed.
func (c *Client) assignments(ctx context.Context) error {
	var out struct {
		Assignments []Assignment `json:"assignments"`
	}
	if err := c.call(ctx, http.MethodGet, fmt.Sprintf("/clients/%d/assignments", c.id), nil, &out); err != nil {
		return err
	}
	seen := map[int64]bool{}
	now := time.Now()
	for _, a := range out.Assignments {
		seen[a.WatchID] = true
		s := c.slots[a.WatchID]
		if s == nil || !s.a.Begin.Equal(a.Begin) || s.a.CrawlGap != a.CrawlGap || s.a.DelayToStart != a.DelayToStart {
			if s != nil {
				c.Replaced.Add(1)
			}
			c.slots[a.WatchID] = &clientSlot{a: a, next: slotAfter(a, now)}
			continue
		}
		s.a = a // newer validators and version
	}
	for id := range c.slots {
		if !seen[id] {
			delete(c.slots, id)
		}
	}
	return nil
}

// slotAfter is the first poll of a's schedule at or after now: Begin +
// DelayToStart + n × CrawlGap.
func slotAfter(a Assignment, now time.Time) time.Time {
	t := a.Begin.Add(a.DelayToStart)
	if a.CrawlGap <= 0 || !t.Before(now) {
		return t
	}
	n := (now.Sub(t) + a.CrawlGap - 1) / a.CrawlGap
	return t.Add(n * a.CrawlGap)
}

// check polls one page and reports it when it differs from the stored version.
func (c *Client) check(ctx context.Context, s *clientSlot) {
	a := s.a
	if a.Version == 0 {
		return // nothing stored yet to compare with
	}
	host := ""
	if u, err := url.Parse(a.URL); err == nil {
		host = u.Host
	}
	if wait := time.Until(c.hosts[host].Add(c.HostGap)); wait > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	c.Fetches.Add(1)
	res, err := c.Fetcher.Fetch(ctx, crawl.Request{URL: a.URL, ETag: a.ETag, LastModified: a.LastModified})
	c.hosts[host] = time.Now()
	if err != nil {
		if ctx.Err() == nil {
			c.Logger.Warn("fetching", "url", a.URL, "err", err)
		}
		return
	}
	if Changed(a, res) {
		// The stored version may have moved on since the assignments
		// came (another client's report, the server's own check): ask
		// again and report only a page that differs from the newest, so
		// that k clients do not report one change k times.
		if err := c.assignments(ctx); err == nil {
			cur := c.slots[a.WatchID]
			if cur == nil {
				return // no longer assigned
			}
			if cur.a.Version != a.Version {
				if !Changed(cur.a, res) {
					return
				}
				a = cur.a
			}
		}
		err := c.call(ctx, http.MethodPost, fmt.Sprintf("/clients/%d/reports", c.id),
			map[string]any{"watch_id": a.WatchID, "version": a.Version}, nil)
		if err != nil {
			c.Logger.Warn("reporting a change", "url", a.URL, "err", err)
			return
		}
		c.Reports.Add(1)
		c.Logger.Info("reported a change", "url", a.URL)
	}
}

// Changed is the client's light check: whether a fetched page differs
// from the stored version its assignment describes. Not modified, the
// same bytes, or the same page summary (title, header, main body and
// footer) are no change.
func Changed(a Assignment, res *crawl.Response) bool {
	if res.NotModified {
		return false
	}
	sum := md5.Sum(res.Raw)
	if hex.EncodeToString(sum[:]) == a.BodyHash {
		return false
	}
	if a.Summary == "" {
		return true
	}
	return Summarize(res.Raw, res.ContentType).String() != a.Summary
}
