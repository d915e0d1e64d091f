package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pdftext"
	"golang.org/x/net/publicsuffix"
)

// Defaults of the Fetcher knobs.
const (
	DefaultMaxBodySize  = 10 << 20
	DefaultMaxRedirects = 10
	DefaultMaxRatio     = 100
	DefaultSoftErrorMax = 8 << 10
)

// Request is one fetch: the URL and the validators of the version already
// held, for a conditional GET.
type Request struct {
	URL          string
	ETag         string
	LastModified string
	// Options are the watch's headers, cookies, basic auth, method and
	// body (nil: a plain GET). Their secrets are opened with
	// Fetcher.Secrets.
	Options *changedigest.RequestOptions
}

// WatchRequest returns the request for a check of w: its URL, the
// validators of its last fetch and its request options.
func WatchRequest(w *changedigest.Watch) Request {
	return Request{URL: w.URL, ETag: w.ETag, LastModified: w.LastModified, Options: w.Request}
}

// Opener opens the sealed secrets of request options (*secret.Box).
type Opener interface {
	Open(sealed string) (string, error)
}

// Response is a successful fetch. When NotModified is set (status 304) the
// body fields are empty and ETag and LastModified are the server's new
// validators, or the request's when it sent none.
type Response struct {
	Status int
	// Raw is the body as served, after content decoding (gzip, deflate,
	// br) and before charset conversion: what the track stores byte for byte.
	Raw []byte
	// Body is Raw in UTF-8: the same slice when Raw was already UTF-8
	// (a UTF-8 BOM aside), else a converted copy.
	Body []byte
	// ContentType is the Content-Type header; Charset the canonical name
	// of the encoding Raw was in ("utf-8", "windows-1252", ...).
	ContentType  string
	Charset      string
	ETag         string
	LastModified string
	// FinalURL is the URL after redirects.
	FinalURL    string
	NotModified bool
	Duration    time.Duration
	// Screenshot, from a Renderer, is the page as drawn, with the boxes of
	// its elements (by path); the pipeline keeps the segments' boxes.
	Screenshot *changedigest.Screenshot
}

// Fetcher fetches pages defensively. Set the knobs before the first
// Fetch; a Fetcher is safe for concurrent use.
type Fetcher struct {
	// UserAgent is sent with every request.
	UserAgent string
	// DialTimeout bounds DNS lookup and TCP connect; TLSTimeout the TLS
	// handshake; HeaderTimeout the wait for the response header after the
	// request is sent; Timeout the whole fetch, redirects and body
	// included; KeepAlive the TCP keep-alive period. Zero means no limit.
	DialTimeout   time.Duration
	TLSTimeout    time.Duration
	HeaderTimeout time.Duration
	Timeout       time.Duration
	KeepAlive     time.Duration
	// MaxBodySize caps the body, both as sent and after decoding (0 or
	// less: DefaultMaxBodySize).
	MaxBodySize int64
	// MaxRatio caps decoded/encoded size once a decoded body passes
	// 1 MiB (0: no ratio guard; MaxBodySize still applies).
	MaxRatio float64
	// MaxRedirects is the number of redirects followed.
	MaxRedirects int
	// SoftErrorMaxBytes is the size under which a 200 page whose title is
	// an error phrase is reported as ErrErrorPage (0: never).
	SoftErrorMaxBytes int
	// AllowPrivate lets fetches reach private, loopback, link-local and
	// other non-public addresses. Off by default; tests and the
	// --allow-private flag turn it on.
	AllowPrivate bool
	// Allow lists non-public addresses (IP and port) that may be fetched
	// even without AllowPrivate, such as the demo site on loopback.
	Allow []netip.AddrPort
	// Resolver looks host names up (default net.DefaultResolver).
	Resolver Resolver
	// Now is the clock, used for Duration and Retry-After dates.
	Now func() time.Time
	// Secrets opens the sealed secrets of requests with options; a
	// request with secrets fails with ErrSecrets while it is nil.
	Secrets Opener

	// allowAddr, when set by tests, replaces the address policy.
	allowAddr func(netip.Addr) bool

	once   sync.Once
	client *http.Client
}

// NewFetcher returns a Fetcher with the default knobs: 10 s to connect,
// 10 s for TLS, 20 s for the response header, 60 s overall, 10 MiB
// bodies, 10 redirects, no private addresses.
func NewFetcher() *Fetcher {
	return &Fetcher{
		UserAgent:         DefaultUserAgent(),
		DialTimeout:       10 * time.Second,
		TLSTimeout:        10 * time.Second,
		HeaderTimeout:     20 * time.Second,
		Timeout:           60 * time.Second,
		KeepAlive:         30 * time.Second,
		MaxBodySize:       DefaultMaxBodySize,
		MaxRatio:          DefaultMaxRatio,
		MaxRedirects:      DefaultMaxRedirects,
		SoftErrorMaxBytes: DefaultSoftErrorMax,
		Now:               time.Now,
	}
}

// DefaultUserAgent is "changedigest/VERSION (+https://github.com/changedigest/changedigest)",
// VERSION being the module version the binary was built from ("dev" when unknown).
func DefaultUserAgent() string {
	v := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = strings.TrimPrefix(bi.Main.Version, "v")
	}
	return "changedigest/" + v + " (+https://github.com/changedigest/changedigest)"
}

func (f *Fetcher) init() {
	f.once.Do(func() {
		t := &http.Transport{
			// No proxy: a proxy would connect on our behalf and bypass the
			// address check.
			Proxy:                  nil,
			DialContext:            f.dialContext,
			TLSHandshakeTimeout:    f.TLSTimeout,
			ResponseHeaderTimeout:  f.HeaderTimeout,
			ExpectContinueTimeout:  time.Second,
			MaxIdleConns:           512,
			MaxIdleConnsPerHost:    4,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 1 << 20,
			ForceAttemptHTTP2:      true,
			// Compression is requested and decoded by Fetch itself.
			DisableCompression: true,
		}
		f.client = &http.Client{
			Transport:     t,
			Timeout:       f.Timeout,
			CheckRedirect: f.checkRedirect,
		}
	})
}

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// checkRedirect allows at most MaxRedirects redirects to http or https
// URLs and reports a loop when a hop comes back to a URL visited twice
// already (once is allowed: sites redirect to themselves after setting a
// cookie). A hop to another origin (scheme, host or port) than the first
// request's carries none of the watch's credentials: the Authorization
// header (basic auth) and the headers that hold secrets are dropped (the
// watch's cookies are the jar's, kept for its host), and a 307 or 308
// that would send a POST body there is refused (ErrRedirectBody).
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: redirect to %q", ErrBadURL, req.URL.Redacted())
	}
	if first := via[0].URL; !sameOrigin(first, req.URL) {
		for name := range req.Header {
			if name == "Authorization" || name == "Cookie" || changedigest.SecretHeader(name) {
				req.Header.Del(name)
			}
		}
		if req.Method == http.MethodPost && req.GetBody != nil {
			return fmt.Errorf("%w: %s", ErrRedirectBody, req.URL.Redacted())
		}
	}
	next, visits := req.URL.String(), 0
	for _, v := range via {
		if v.URL.String() == next {
			visits++
		}
		if visits == 2 {
			chain := make([]string, 0, len(via)+1)
			for _, v := range via {
				chain = append(chain, v.URL.Redacted())
			}
			chain = append(chain, req.URL.Redacted())
			return fmt.Errorf("%w: %s", ErrRedirectLoop, strings.Join(chain, " -> "))
		}
	}
	if len(via) > f.MaxRedirects {
		return fmt.Errorf("%w: more than %d, last to %s", ErrTooManyRedirects, f.MaxRedirects, req.URL.Redacted())
	}
	return nil
}

// Fetch gets req.URL with a conditional GET and returns the decoded body.
// A PDF (by its "%PDF-" header) is returned as it came, its Body its Raw;
// a body served as application/pdf that is not one is an ErrNotPDF.
// A 304 answer is a Response with NotModified set. Every failure is an
// error naming the URL and wrapping one of the Err* sentinels of this
// package, or an *HTTPError for a status of 400 and above (3xx that could
// not be followed included), or ctx's error when ctx was cancelled.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Response, error) {
	f.init()
	start := f.now()
	maxBody := f.MaxBodySize
	if maxBody <= 0 {
		maxBody = DefaultMaxBodySize
	}
	u, err := url.Parse(strings.TrimSpace(req.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("crawl: fetch %q: %w", req.URL, ErrBadURL)
	}
	method, opts := http.MethodGet, req.Options
	var sent io.Reader
	if opts != nil && opts.Method == http.MethodPost {
		method, sent = http.MethodPost, strings.NewReader(opts.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, u.String(), sent)
	if err != nil {
		return nil, fmt.Errorf("crawl: fetch %q: %w: %w", req.URL, ErrBadURL, err)
	}
	hreq.Header.Set("User-Agent", f.UserAgent)
	hreq.Header.Set("Accept", "text/html,application/xhtml+xml,application/atom+xml,application/rss+xml,application/xml;q=0.9,*/*;q=0.8")
	hreq.Header.Set("Accept-Encoding", acceptEncoding)
	if method == http.MethodPost {
		hreq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		if req.ETag != "" {
			hreq.Header.Set("If-None-Match", req.ETag)
		}
		if req.LastModified != "" {
			hreq.Header.Set("If-Modified-Since", req.LastModified)
		}
	}
	name := u.Redacted()

	// A fresh cookie jar per fetch: sites that set a cookie and redirect
	// to themselves to check it would loop without one, and nothing is
	// kept from one fetch to the next. The watch's own cookies go in it
	// for the watch's host only.
	client := *f.client
	inner, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	jar := &watchJar{CookieJar: inner, origin: hreq.URL}
	client.Jar = jar
	if err := f.applyOptions(hreq, jar, opts); err != nil {
		return nil, fmt.Errorf("crawl: fetch %s: %w", name, err)
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, f.classify(ctx, name, err)
	}
	defer resp.Body.Close()
	res := &Response{
		Status:       resp.StatusCode,
		ContentType:  resp.Header.Get("Content-Type"),
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
		FinalURL:     resp.Request.URL.String(),
	}
	if resp.StatusCode != http.StatusNotModified && sameSecond(res.LastModified, resp.Header.Get("Date"), f.now()) {
		// Modified in the second it was served: a change later in that
		// second has the same Last-Modified, so If-Modified-Since could
		// not see it (a weak validator, RFC 9110 8.8.2.2). The next
		// check asks without it.
		res.LastModified = ""
	}
	name = resp.Request.URL.Redacted()

	switch {
	case resp.StatusCode == http.StatusNotModified:
		res.NotModified = true
		if res.ETag == "" {
			res.ETag = req.ETag
		}
		if res.LastModified == "" {
			res.LastModified = req.LastModified
		}
		res.Duration = f.now().Sub(start)
		return res, nil
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		return nil, &HTTPError{URL: name, StatusCode: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), f.now())}
	}

	if resp.ContentLength > maxBody {
		return nil, fmt.Errorf("crawl: GET %s: %w: Content-Length %d is over the %s limit", name, ErrTooLarge, resp.ContentLength, changedigest.FormatBytes(maxBody))
	}
	wire, err := readCapped(resp.Body, maxBody, resp.ContentLength, "body")
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("crawl: GET %s: %w", name, err)
		}
		return nil, f.classify(ctx, name, err)
	}
	raw, err := decodeContent(wire, resp.Header.Get("Content-Encoding"), maxBody, f.MaxRatio)
	if err != nil {
		return nil, fmt.Errorf("crawl: GET %s: %w", name, err)
	}
	if isBlank(raw) {
		return nil, fmt.Errorf("crawl: GET %s: %w (status %d)", name, ErrEmptyBody, resp.StatusCode)
	}
	if pdftext.IsPDF(raw) {
		// A PDF is read by its text (package pdftext), not as characters.
		res.Raw, res.Body = raw, raw
		res.Duration = f.now().Sub(start)
		return res, nil
	}
	if pdftext.IsPDFType(res.ContentType) {
		return nil, fmt.Errorf("crawl: GET %s: %w: served as %s, it does not start as a PDF does (%%PDF-)", name, ErrNotPDF, res.ContentType)
	}
	body, cs, err := toUTF8(raw, res.ContentType)
	if err != nil {
		return nil, fmt.Errorf("crawl: GET %s: %w", name, err)
	}
	if reason, bad := IsErrorPage(body, res.ContentType, f.SoftErrorMaxBytes); bad {
		return nil, fmt.Errorf("crawl: GET %s: %w: %s", name, ErrErrorPage, reason)
	}
	res.Raw, res.Body, res.Charset = raw, body, cs
	res.Duration = f.now().Sub(start)
	return res, nil
}

// watchJar is a fetch's cookie jar: the cookies the pages set, and the
// watch's own cookies, which go to the watch's origin (scheme, host and
// port) only, unless a page set a cookie of the same name.
type watchJar struct {
	http.CookieJar
	origin *url.URL
	own    []*http.Cookie
}

func (j *watchJar) Cookies(u *url.URL) []*http.Cookie {
	cs := j.CookieJar.Cookies(u)
	if len(j.own) == 0 || !sameOrigin(u, j.origin) {
		return cs
	}
	set := make(map[string]bool, len(cs))
	for _, c := range cs {
		set[c.Name] = true
	}
	for _, c := range j.own {
		if !set[c.Name] {
			cs = append(cs, c)
		}
	}
	return cs
}

// applyOptions sets the watch's headers and basic auth on hreq and its
// cookies in jar, opening the sealed secrets with f.Secrets. Errors wrap
// ErrSecrets.
func (f *Fetcher) applyOptions(hreq *http.Request, jar *watchJar, opts *changedigest.RequestOptions) error {
	if opts.IsEmpty() {
		return nil
	}
	open := func(s changedigest.Secret) (string, error) {
		if s.Plain != "" { // not stored yet: given for this fetch (diff, tests)
			return s.Plain, nil
		}
		if f.Secrets == nil {
			return "", fmt.Errorf("%w: no key is set up", ErrSecrets)
		}
		v, err := f.Secrets.Open(s.Sealed)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrSecrets, err)
		}
		return v, nil
	}
	for _, h := range opts.Headers {
		v := h.Value
		if !h.Secret.Unset() {
			var err error
			if v, err = open(h.Secret); err != nil {
				return fmt.Errorf("header %s: %w", h.Name, err)
			}
		}
		hreq.Header.Set(h.Name, v)
	}
	if a := opts.BasicAuth; a != nil {
		pw, err := open(a.Password)
		if err != nil {
			return fmt.Errorf("basic auth: %w", err)
		}
		hreq.SetBasicAuth(a.User, pw)
	}
	if len(opts.Cookies) > 0 {
		cs := make([]*http.Cookie, 0, len(opts.Cookies))
		for _, c := range opts.Cookies {
			v, err := open(c.Value)
			if err != nil {
				return fmt.Errorf("cookie %s: %w", c.Name, err)
			}
			cs = append(cs, &http.Cookie{Name: c.Name, Value: v})
		}
		jar.own = cs
	}
	return nil
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host)
}

func isBlank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n', '\f', '\v':
		default:
			return false
		}
	}
	return true
}

// classify turns a transport error into one of the package's errors.
func (f *Fetcher) classify(ctx context.Context, name string, err error) error {
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.Canceled):
		return fmt.Errorf("crawl: GET %s: %w", name, cerr)
	case cerr != nil:
		return fmt.Errorf("crawl: GET %s: %w: %w", name, ErrTimeout, cerr)
	}
	for _, sentinel := range []error{ErrPrivateAddress, ErrDNS, ErrTooManyRedirects, ErrRedirectBody, ErrBadURL, ErrTimeout, ErrConnect} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("crawl: GET %s: %w", name, unwrapURLError(err))
		}
	}
	var (
		ne   net.Error
		cert *tls.CertificateVerificationError
		rec  tls.RecordHeaderError
		alrt tls.AlertError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("crawl: GET %s: %w: %w", name, ErrTimeout, unwrapURLError(err))
	case errors.As(err, &cert) || errors.As(err, &rec) || errors.As(err, &alrt):
		return fmt.Errorf("crawl: GET %s: %w: %w", name, ErrTLS, unwrapURLError(err))
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("crawl: GET %s: %w: %w", name, ErrConnect, unwrapURLError(err))
	}
	return fmt.Errorf("crawl: GET %s: %w: %w", name, ErrConnect, unwrapURLError(err))
}

// unwrapURLError drops the *url.Error layer, whose message repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP
// date. It returns the zero time when the header is absent or malformed.
func parseRetryAfter(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return time.Time{}
		}
		secs = min(secs, int64(365*24*time.Hour/time.Second))
		return now.Add(time.Duration(secs) * time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return t
	}
	return time.Time{}
}

// sameSecond reports whether the Last-Modified time lm lies within a
// second of the response's Date (or of now when the answer has none).
func sameSecond(lm, date string, now time.Time) bool {
	if lm == "" {
		return false
	}
	t, err := http.ParseTime(lm)
	if err != nil {
		return false
	}
	if d, err := http.ParseTime(date); err == nil {
		now = d
	}
	diff := now.Sub(t)
	return diff < time.Second && diff > -time.Second
}
