package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"time"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyUser
	keyCSRF
	keySession
	keyClient
)

// requestID gives every request an id, in the context and the X-Request-Id header.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 8)
		rand.Read(b)
		id := hex.EncodeToString(b)
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRequestID, id)))
	})
}

func reqID(r *http.Request) string {
	id, _ := r.Context().Value(keyRequestID).(string)
	return id
}

// clientIP is the client's address: the one realClient found, else the
// address the connection came from.
func clientIP(r *http.Request) string {
	if a, ok := r.Context().Value(keyClient).(string); ok {
		return a
	}
	return peerAddr(r)
}

// peerAddr is the address the connection came from.
func peerAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// realClient puts the client's address in the request's context for
// clientIP. It is the address the connection came from, unless that is
// one of TrustedProxies: then the forwarding header the proxies set
// (ProxyHeader) is read from the right, past the trusted proxies'
// own addresses, and the first address not of a trusted proxy is the
// client's. Entries left of it were written by the client and may be
// anything, so they are never read; an entry that is not an address
// (Forwarded's "unknown" or an obfuscated name) ends the walk at the
// proxy that wrote it. A connection from anywhere else has its headers
// ignored: anyone can send them.
func (s *Server) realClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.TrustedProxies) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		peer := peerAddr(r)
		if a, err := netip.ParseAddr(peer); err == nil && s.trusted(a) {
			client := a
			hops := forwardedFor(r.Header, s.ProxyHeader)
			for i := len(hops) - 1; i >= 0; i-- {
				hop, ok := parseHop(hops[i])
				if !ok {
					break
				}
				client = hop
				if !s.trusted(hop) {
					break
				}
			}
			peer = client.String()
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyClient, peer)))
	})
}

// trusted reports whether a is the address of a trusted proxy.
func (s *Server) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor lists the addresses a forwarding header names, the
// client's first and the nearest proxy's peer last: X-Forwarded-For's
// entries, or the for= parameters of Forwarded (RFC 7239) when header
// is "Forwarded". Several header lines are read in order as one list.
func forwardedFor(h http.Header, header string) []string {
	var out []string
	if strings.EqualFold(header, "Forwarded") {
		for _, line := range h.Values("Forwarded") {
			for elem := range strings.SplitSeq(line, ",") {
				found := ""
				for pair := range strings.SplitSeq(elem, ";") {
					k, v, _ := strings.Cut(strings.TrimSpace(pair), "=")
					if strings.EqualFold(k, "for") {
						found = v
					}
				}
				// An element without for= names no address: it ends
				// what can be read.
				out = append(out, found)
			}
		}
		return out
	}
	for _, line := range h.Values("X-Forwarded-For") {
		for v := range strings.SplitSeq(line, ",") {
			out = append(out, v)
		}
	}
	return out
}

// parseHop reads one address of a forwarding header: a bare IPv4 or
// IPv6 address, in quotes or not, in brackets or not, with a port or not.
func parseHop(v string) (netip.Addr, bool) {
	v = strings.Trim(strings.TrimSpace(v), `"`)
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap.Addr().Unmap(), true
	}
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs one line per request.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		level := slog.LevelDebug
		if sw.status >= 500 {
			level = slog.LevelWarn
		}
		s.Logger.Log(r.Context(), level, "request", "method", r.Method, "path", logPath(r),
			"status", sw.status, "bytes", sw.bytes, "duration_ms", time.Since(start).Milliseconds(),
			"client", clientIP(r), "request_id", reqID(r))
	})
}

// recoverer turns a panic into a 500 page and a log line with the stack.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Logger.Error("panic serving request", "path", logPath(r), "panic", v,
					"stack", string(debug.Stack()), "request_id", reqID(r))
				http.Error(w, "internal error (request "+reqID(r)+")", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// timeout bounds the handling of a request through its context.
func (s *Server) timeout(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.RequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// contentSecurityPolicy allows nothing but the site's own style sheets
// and images; pages carry no scripts.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// hsts asks browsers to use https only for a year, sent when the base
// URL is https. Subdomains are left alone: the site may be one of many on
// its domain.
const hsts = "max-age=31536000"

// securityHeaders sets the headers every response carries.
func (s *Server) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if s.secure {
			h.Set("Strict-Transport-Security", hsts)
		}
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()")
		next.ServeHTTP(w, r)
	})
}

// limitBody caps request bodies at MaxUpload.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.MaxUpload)
		}
		next.ServeHTTP(w, r)
	})
}
