package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/changedigest/changedigest/crawl"
)

// refusedHeader marks a response the proxy made itself because the guard
// refused a request, failedHeader one it made because the request failed
// (no connection, a timeout); the renderer reads them on the main
// document to report why.
const (
	refusedHeader = "X-Changedigest-Refused"
	failedHeader  = "X-Changedigest-Failed"
)

// proxy is the HTTP proxy one tab's browser context goes through. Every
// request Chromium makes for the page (document, subresources, redirect
// hops, WebSocket and service worker traffic, each over CONNECT when it is
// TLS or a WebSocket) reaches the network only through dial, the crawler's
// guarded dialer, so the fetcher's address policy applies to all of it.
// Outside a session (between renders) it refuses everything.
type proxy struct {
	dial Dialer
	ln   net.Listener
	srv  *http.Server
	tr   *http.Transport

	mu   sync.Mutex
	sess *session
}

// session is what one render's traffic may use and what it did.
type session struct {
	ctx      context.Context
	maxBytes int64
	bytes    atomic.Int64
	requests atomic.Int64

	mu      sync.Mutex
	refused []string // "URL: reason", the first few
	nRefuse int
	tunnels map[string]error // CONNECT targets that failed, the first few, and why
	over    bool             // the byte limit was reached
	conns   map[net.Conn]struct{}
}

func (s *session) fail(target string, err error, refused, tunnel bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if refused {
		s.nRefuse++
		if len(s.refused) < 20 {
			s.refused = append(s.refused, target+": "+err.Error())
		}
	}
	if tunnel && len(s.tunnels) < 100 {
		if _, ok := s.tunnels[target]; !ok {
			s.tunnels[target] = err
		}
	}
}

// tunnelError is why a CONNECT to hostport failed (nil if it did not),
// for a TLS document whose failure Chromium reports only as a tunnel error.
func (s *session) tunnelError(hostport string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tunnels[hostport]
}

// errNotAllowed: a request the proxy refuses whatever the address.
var errNotAllowed = errors.New("not allowed")

// isRefusal reports whether err is the guard's (or the proxy's) refusal
// rather than a network failure.
func isRefusal(err error) bool {
	return errors.Is(err, crawl.ErrPrivateAddress) || errors.Is(err, errNotAllowed) || errors.Is(err, errNoSession)
}

// count adds n bytes and reports whether the session is still within its limit.
func (s *session) count(n int) bool {
	if s.bytes.Add(int64(n)) <= s.maxBytes {
		return true
	}
	s.mu.Lock()
	s.over = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	return false
}

func (s *session) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over || s.ctx.Err() != nil {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *session) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *session) closeAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

func newProxy(dial Dialer) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browser: proxy listen: %w", err)
	}
	p := &proxy{dial: dial, ln: ln}
	p.tr = &http.Transport{
		Proxy:                  nil,
		DialContext:            p.dialSession,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        10 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		DisableCompression:     true, // pass the encoding through to Chromium
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// addr is the proxy's address for Chromium's proxyServer setting.
func (p *proxy) addr() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) begin(ctx context.Context, maxBytes int64) *session {
	s := &session{ctx: ctx, maxBytes: maxBytes, conns: map[net.Conn]struct{}{}, tunnels: map[string]error{}}
	p.mu.Lock()
	p.sess = s
	p.mu.Unlock()
	return s
}

// end closes the session: its connections are closed and later requests refused.
func (p *proxy) end(s *session) {
	p.mu.Lock()
	if p.sess == s {
		p.sess = nil
	}
	p.mu.Unlock()
	s.closeAll()
	p.tr.CloseIdleConnections()
}

func (p *proxy) current() *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sess
}

func (p *proxy) close() {
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

var errNoSession = fmt.Errorf("%w: no page is being rendered", errNotAllowed)

// dialSession dials through the guard for the current session.
func (p *proxy) dialSession(ctx context.Context, network, addr string) (net.Conn, error) {
	s := p.current()
	if s == nil {
		return nil, errNoSession
	}
	if p.dial == nil {
		return nil, fmt.Errorf("%w: no dialer, every address is refused", errNotAllowed)
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	c, err := p.dial(dctx, network, addr)
	if err != nil {
		return nil, err
	}
	if !s.track(c) {
		c.Close()
		return nil, errors.New("the page's byte or time limit was reached")
	}
	return &countedConn{Conn: c, s: s}, nil
}

// countedConn counts the bytes read against the session limit.
type countedConn struct {
	net.Conn
	s *session
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.s.count(n) {
		return n, errors.New("the page's byte limit was reached")
	}
	return n, err
}

func (c *countedConn) Close() error {
	c.s.untrack(c.Conn)
	return c.Conn.Close()
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := p.current()
	target := r.Host
	if r.Method != http.MethodConnect {
		target = r.URL.String()
	}
	if s == nil {
		p.fail(w, nil, target, errNoSession, false)
		return
	}
	s.requests.Add(1)
	if r.Method == http.MethodConnect {
		p.connect(w, r, s)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		p.fail(w, s, target, fmt.Errorf("%w: scheme %q", errNotAllowed, r.URL.Scheme), false)
		return
	}
	out := r.Clone(s.ctx)
	out.RequestURI = ""
	removeHopHeaders(out.Header)
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		p.fail(w, s, target, err, false)
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// connect tunnels a CONNECT request (TLS and WebSockets) to an address the
// guard allows.
func (p *proxy) connect(w http.ResponseWriter, r *http.Request, s *session) {
	c, err := p.dialSession(r.Context(), "tcp", r.Host)
	if err != nil {
		p.fail(w, s, r.Host, err, true)
		return
	}
	defer c.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		p.fail(w, s, r.Host, errors.New("cannot tunnel"), true)
		return
	}
	w.WriteHeader(http.StatusOK)
	client, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer client.Close()
	stop := context.AfterFunc(s.ctx, func() { client.Close(); c.Close() })
	defer stop()
	if n := buf.Reader.Buffered(); n > 0 {
		pre, _ := buf.Reader.Peek(n)
		if _, err := c.Write(pre); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		io.Copy(c, client)
		c.Close()
		close(done)
	}()
	io.Copy(client, c)
	client.Close()
	<-done
}

// fail answers a request the proxy could not or would not pass on: 403
// with refusedHeader when the guard refused it, else 502 with failedHeader.
func (p *proxy) fail(w http.ResponseWriter, s *session, target string, err error, tunnel bool) {
	refused := isRefusal(err)
	if s != nil {
		s.fail(target, err, refused, tunnel)
	}
	if refused {
		w.Header().Set(refusedHeader, oneLine(err.Error()))
		http.Error(w, "refused by changedigest: "+err.Error(), http.StatusForbidden)
		return
	}
	w.Header().Set(failedHeader, oneLine(err.Error()))
	http.Error(w, "changedigest could not fetch this: "+err.Error(), http.StatusBadGateway)
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, s)
}

var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, k := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(k))
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
