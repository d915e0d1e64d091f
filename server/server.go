// Package server is the HTTP side of changedigest: the chi router, the web
// pages, the Atom feeds, the digest, the JSON API, authentication and the
// middleware around them. Handlers parse the request, call the store, the
// notification centre or the segmenter, and render; the logic lives in
// those packages.
package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/internal/memo"
	"github.com/changedigest/changedigest/internal/ratelimit"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/profile"
	"github.com/changedigest/changedigest/render"
	"github.com/changedigest/changedigest/segmenter"
)

// Server serves the web interface, feeds and API. Set the knobs after New,
// then Open; Close shuts it down.
type Server struct {
	// Addr is the address to listen on; "127.0.0.1:8080" unless set
	// (":0" picks a free port).
	Addr string

	Store   Store
	Checker Checker
	Notify  *notify.Notifier
	// Dispatch sends channel test messages and redeliveries; nil answers
	// them as unavailable.
	Dispatch *notify.Dispatcher
	// Hub, when set, is the WebSub hub the feeds name; it takes requests
	// at HubPath.
	Hub       *notify.Hub
	Render    *render.Engine
	Segmenter *segmenter.Segmenter
	Expander  *expand.Expander
	Profiles  *profile.Builder
	Logger    *slog.Logger
	Now       func() time.Time
	// Agent and Clients, when set, serve the page agent and polling
	// clients (collaborative detection).
	Agent   Agent
	Clients *agent.Coordinator
	// Ready, when set, tells /readyz why the service cannot serve all
	// its watches yet (a cluster node catching up with its shards); nil
	// from it, or no Ready, answers ready.
	Ready func() error

	// SessionTTL is how long a login lasts (30 days).
	SessionTTL time.Duration
	// MaxUpload bounds a request body: FOAF and OPML uploads, forms (2 MB).
	MaxUpload int64
	// RequestTimeout bounds a request's handling (60 s).
	RequestTimeout time.Duration
	// After LoginAttempts failed logins of a name from one address (or
	// failed feed or API tokens from one address), each further try from
	// there waits, a second at first, twice as long after each failure,
	// up to LoginWindow; keys quiet for LoginWindow are forgotten.
	// Failures of a name from all addresses hold back the addresses that
	// never logged in to it, not those that did; a right feed or API token
	// is never refused (see loginGuard and tokenFailed).
	LoginAttempts int
	LoginWindow   time.Duration
	// HubPerAddress and HubPerFeed bound the WebSub requests (POST
	// HubPath) taken from one address (an IPv6 address's /64) and for one
	// feed (every topic URL under one feed token, its watches' and tags'
	// feeds included): 60 a minute in bursts of up to 30, and 30 a minute
	// in bursts of up to 30. Requests beyond them are answered 429 with
	// a Retry-After.
	HubPerAddress, HubPerFeed RateLimit
	// JoinsPerAddress bounds the accounts asked for from one address
	// (open registration, invitations and password reset links): 1 a
	// minute in bursts of up to 5. Requests beyond it are answered 429.
	JoinsPerAddress RateLimit

	// TrustedProxies are the reverse proxies in front of the server: a
	// request from one of them is taken to come from the client its
	// ProxyHeader names (see realClient), for the page agent's per-address
	// limits and ignore list, login back-off, WebSub limits and the log.
	// Empty (the default): every client is the address its connection
	// comes from, and forwarding headers are ignored.
	TrustedProxies []netip.Prefix
	// ProxyHeader is the forwarding header the trusted proxies append
	// their peer to: "X-Forwarded-For" (the default) or "Forwarded". Only
	// that one is read; a proxy passes the other on as the client sent it.
	ProxyHeader string

	// Key signs the CSRF tokens of the web forms (at least 32 bytes); a
	// random key of the process unless set, which makes forms left open
	// across a restart ask for a reload. See LoadKey.
	Key []byte
	// Secrets seals the secrets users give watches (basic-auth passwords,
	// cookies, credential headers) before they are stored (a
	// *secret.Box on the data directory's key). A watch with secrets is
	// refused while it is nil.
	Secrets changedigest.Sealer

	ln     net.Listener
	srv    *http.Server
	logins *loginGuard
	tokens *backoff // failed feed and API tokens per address
	secure bool     // cookies only over https

	// hubAddrs and hubFeeds count WebSub requests per address and per feed.
	hubAddrs, hubFeeds *ratelimit.Buckets
	// joins counts the account forms sent per address (accounts.go).
	joins *ratelimit.Buckets

	rows rowCache // rendered rows of the watches table (rows.go)
	// panels keeps the dashboard's rendered recent changes by their
	// event's key (render.EventKey: everything the view shows).
	panels memo.Cache[uint64, panel]
	// feedGzip keeps feeds compressed by their ETag, which names what
	// they are made of: most full fetches of a feed between two versions
	// are the same bytes.
	feedGzip memo.Cache[string, []byte]

	overlaysOnce sync.Once
	overlays     *overlayCache
}

// New returns a server with defaults; the caller sets the collaborators.
func New() *Server {
	return &Server{
		Addr:            "127.0.0.1:8080",
		Logger:          slog.Default(),
		Now:             time.Now,
		SessionTTL:      30 * 24 * time.Hour,
		MaxUpload:       2 << 20,
		RequestTimeout:  60 * time.Second,
		LoginAttempts:   10,
		LoginWindow:     10 * time.Minute,
		HubPerAddress:   RateLimit{PerMinute: 60, Burst: 30},
		HubPerFeed:      RateLimit{PerMinute: 30, Burst: 30},
		JoinsPerAddress: RateLimit{PerMinute: 1, Burst: 5},
	}
}

// Open listens on Addr and serves in the background.
func (s *Server) Open() error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.Addr, err)
	}
	if err := s.Serve(ln); err != nil {
		ln.Close()
		return err
	}
	return nil
}

// Port is the port the server listens on, once open.
func (s *Server) Port() int {
	if s.ln == nil {
		return 0
	}
	return s.ln.Addr().(*net.TCPAddr).Port
}

// Close stops the server, waiting up to 5 s for requests in flight.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func (s *Server) init() {
	if s.logins == nil {
		s.logins = newLoginGuard(s.LoginAttempts, s.LoginWindow, s.now)
		s.tokens = newBackoff(s.LoginAttempts, s.LoginWindow, s.LoginWindow, s.now)
	}
	if s.hubAddrs == nil {
		s.hubAddrs = ratelimit.New(s.HubPerAddress.PerMinute, s.HubPerAddress.Burst)
		s.hubFeeds = ratelimit.New(s.HubPerFeed.PerMinute, s.HubPerFeed.Burst)
	}
	if s.joins == nil && s.JoinsPerAddress.PerMinute > 0 {
		s.joins = ratelimit.New(s.JoinsPerAddress.PerMinute, max(1, s.JoinsPerAddress.Burst))
	}
	s.panels.Max = panelCacheBytes
	s.feedGzip.Max = feedGzipBytes
	if len(s.Key) == 0 {
		s.Key = make([]byte, 32)
		rand.Read(s.Key)
	}
	if u, err := url.Parse(s.Render.Site()); err == nil {
		s.secure = strings.EqualFold(u.Scheme, "https")
	}
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Serve serves on a listener the caller opened (Open listens on Addr).
func (s *Server) Serve(ln net.Listener) error {
	if s.Store == nil || s.Render == nil || s.Notify == nil || s.Segmenter == nil {
		return errors.New("server: store, render engine, notifier and segmenter are required")
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      s.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger.Error("http server stopped", "err", err)
		}
	}()
	return nil
}

// handleReady answers 200 when the service serves all its watches, and
// 503 with the reason while it does not (a load balancer's readiness probe).
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if s.Ready != nil {
		if err := s.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
	}
	w.Write([]byte("ready\n"))
}
