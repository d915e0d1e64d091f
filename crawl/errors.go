package crawl

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Fetch failures. Every error Fetch returns wraps exactly one of these (or
// is an *HTTPError, or the caller's context error), so callers tell them
// apart with errors.Is and errors.As. None of them is a new version of the
// page: a failed fetch is recorded on the watch as an error.
var (
	// ErrBadURL: the URL is not an absolute http or https URL.
	ErrBadURL = errors.New("not an absolute http or https URL")
	// ErrDNS: the host name could not be resolved.
	ErrDNS = errors.New("host name not found")
	// ErrConnect: no connection could be made (refused, unreachable, reset).
	ErrConnect = errors.New("connection failed")
	// ErrTLS: the TLS handshake or the server certificate failed.
	ErrTLS = errors.New("TLS failure")
	// ErrTimeout: a dial, handshake, response header or overall deadline passed.
	ErrTimeout = errors.New("timed out")
	// ErrPrivateAddress: the host resolved to an address that is not
	// public (private, loopback, link-local, CGNAT, ULA, multicast, ...)
	// and Fetcher.AllowPrivate is off.
	ErrPrivateAddress = errors.New("refused non-public address")
	// ErrTooLarge: the body, as sent or after decoding, is over Fetcher.MaxBodySize.
	ErrTooLarge = errors.New("response body too large")
	// ErrCompressionBomb: the decoded body grew more than Fetcher.MaxRatio
	// times its encoded size. It is also an ErrTooLarge.
	ErrCompressionBomb error = &subError{"decompression bomb", ErrTooLarge}
	// ErrBadEncoding: the Content-Encoding is unknown or the compressed
	// stream is corrupt.
	ErrBadEncoding = errors.New("bad content encoding")
	// ErrTooManyRedirects: more than Fetcher.MaxRedirects redirects.
	ErrTooManyRedirects = errors.New("too many redirects")
	// ErrRedirectLoop: a redirect led back to an address already visited.
	// It is also an ErrTooManyRedirects.
	ErrRedirectLoop error = &subError{"redirect loop", ErrTooManyRedirects}
	// ErrEmptyBody: a successful response had no content (or only white space).
	ErrEmptyBody = errors.New("empty response body")
	// ErrErrorPage: the server answered 200 with what is evidently an
	// error page (a soft 404); see IsErrorPage for the rules.
	ErrErrorPage = errors.New("error page served with status 200")
	// ErrSecrets: the watch's sealed secrets (password, cookies,
	// credential headers) could not be opened: no key is set up, the key
	// file is missing, or they were sealed under another key.
	ErrSecrets = errors.New("the watch's secrets cannot be opened")
	// ErrRedirectBody: a 307 or 308 redirect would send the POST body to
	// another host.
	ErrRedirectBody = errors.New("redirect would send the request body to another host")
	// ErrNotPDF: the body was served as a PDF (application/pdf) and is
	// not one: an error page, or a document cut short at its start.
	ErrNotPDF = errors.New("not a PDF document")
)

// subError is a sentinel that is also a kind of a broader one.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// HTTPError is a response with a status of 400 or more (or a 3xx that was
// not followed). Use errors.As to get it from a Fetch error.
type HTTPError struct {
	URL        string
	StatusCode int
	// RetryAfter is when the server asked to be contacted again (from a
	// Retry-After header in seconds or as an HTTP date); zero if absent.
	RetryAfter time.Time
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("crawl: GET %s: status %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if !e.RetryAfter.IsZero() {
		msg += " (retry after " + e.RetryAfter.UTC().Format(time.RFC3339) + ")"
	}
	return msg
}

// Throttled reports whether the server asked us to slow down: status 429
// (Too Many Requests) or 503 (Service Unavailable). The caller should wait
// until RetryAfter, or back off when it is zero.
func (e *HTTPError) Throttled() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode == http.StatusServiceUnavailable
}

// RetryAfter returns the time a failed fetch asked to be retried at (the
// Retry-After of an *HTTPError in err's chain), or the zero time.
func RetryAfter(err error) time.Time {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.RetryAfter
	}
	return time.Time{}
}

// Throttled reports whether err is a 429 or 503 response.
func Throttled(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.Throttled()
}
