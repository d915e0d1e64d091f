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
)

// refusedHeader marks a response the proxy made itself because it refused
// a request; the renderer reads it on the main document to report why.
const refusedHeader = "X-Changedigest-Refused"

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
	over    bool // the byte limit was reached
	conns   map[net.Conn]struct{}
}

func (s *session) refuse(target string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nRefuse++
	if len(s.refused) < 20 {
		s.refused = append(s.refused, target+": "+err.Error())
	}
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
	s := &session{ctx: ctx, maxBytes: maxBytes, conns: map[net.Conn]struct{}{}}
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

var errNoSession = errors.New("no page is being rendered")

// dialSession dials through the guard for the current session.
func (p *proxy) dialSession(ctx context.Context, network, addr string) (net.Conn, error) {
	s := p.current()
	if s == nil {
		return nil, errNoSession
	}
	if p.dial == nil {
		return nil, errors.New("no dialer: every address is refused")
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
		p.refuse(w, nil, target, errNoSession)
		return
	}
	s.requests.Add(1)
	if r.Method == http.MethodConnect {
		p.connect(w, r, s)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		p.refuse(w, s, target, fmt.Errorf("scheme %q is not allowed", r.URL.Scheme))
		return
	}
	out := r.Clone(s.ctx)
	out.RequestURI = ""
	removeHopHeaders(out.Header)
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		p.refuse(w, s, target, err)
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
		p.refuse(w, s, r.Host, err)
		return
	}
	defer c.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		p.refuse(w, s, r.Host, errors.New("cannot tunnel"))
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

func (p *proxy) refuse(w http.ResponseWriter, s *session, target string, err error) {
	if s != nil {
		s.refuse(target, err)
	}
	w.Header().Set(refusedHeader, oneLine(err.Error()))
	http.Error(w, "refused by changedigest: "+err.Error(), http.StatusForbidden)
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
