package crawl

import (
	"errors"
	"net/http"
	"time"
)

// Client returns an HTTP client for the service's own outgoing requests
// (notification webhooks, WebSub verification and distribution) whose
// connections pass the same address checks as fetches: the host is
// resolved once, non-public addresses are refused unless AllowPrivate or
// Allow admits them, and the checked address is the one connected to. It
// uses no proxy and follows no redirect (a 3xx is the answer), so a
// receiver cannot bounce a request elsewhere. timeout bounds a whole
// request (0: the fetcher's Timeout).
func (f *Fetcher) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = f.Timeout
	}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            f.dialContext,
		TLSHandshakeTimeout:    f.TLSTimeout,
		ResponseHeaderTimeout:  f.HeaderTimeout,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// ParseRetryAfter reads a Retry-After header (delay seconds or an HTTP
// date) relative to now; the zero time when absent or malformed.
func ParseRetryAfter(v string, now time.Time) time.Time { return parseRetryAfter(v, now) }

// IsPrivateAddress reports whether err is a refusal to connect to a
// non-public address.
func IsPrivateAddress(err error) bool { return errors.Is(err, ErrPrivateAddress) }
