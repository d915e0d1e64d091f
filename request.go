package changedigest

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// RequestOptions say how a watch's page is asked for, beyond a plain GET:
// extra headers, cookies, HTTP basic auth, and a method and body for
// pages behind a form. The secret parts (the password, cookie values,
// the values of headers that carry credentials) are kept sealed (see
// Secret); the fetcher opens them for the request.
type RequestOptions struct {
	// Method is GET (the default, written "") or POST.
	Method string `json:"method,omitempty"`
	// Body is sent with a POST, as application/x-www-form-urlencoded
	// unless a Content-Type header says otherwise.
	Body      string          `json:"body,omitempty"`
	Headers   []RequestHeader `json:"headers,omitempty"`
	Cookies   []RequestCookie `json:"cookies,omitempty"`
	BasicAuth *BasicAuth      `json:"basic_auth,omitempty"`
}

// RequestHeader is one extra request header. A header that carries
// credentials (see SecretHeader) keeps its value in Secret, any other in
// Value.
type RequestHeader struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Secret Secret `json:"secret,omitzero"`
}

// RequestCookie is one cookie sent to the watch's host (and to no other
// host a redirect leads to). Its value is a secret.
type RequestCookie struct {
	Name  string `json:"name"`
	Value Secret `json:"value"`
}

// BasicAuth is HTTP basic authentication, sent to the watch's host only.
type BasicAuth struct {
	User     string `json:"user"`
	Password Secret `json:"password"`
}

// Secret is a value kept sealed at rest. Plain is what a user gave and
// is never stored (the edge seals it into Sealed before the watch is
// stored); Hint is what may be shown of it ("••••1a2b").
type Secret struct {
	Sealed string `json:"sealed,omitempty"`
	Hint   string `json:"hint,omitempty"`
	Plain  string `json:"-"`
}

// Unset reports whether s holds no value (a hint alone is none).
func (s Secret) Unset() bool { return s.Sealed == "" && s.Plain == "" }

// Limits of request options.
const (
	MaxRequestHeaders = 20
	MaxRequestCookies = 20
	MaxRequestBody    = 64 << 10 // bytes of a POST body
	maxHeaderName     = 256
	maxHeaderValue    = 4096
)

// HintPrefix starts every hint of a secret.
const HintPrefix = "••••"

// SecretHint is what may be shown of the secret plain: HintPrefix and,
// for a secret of 12 characters or more, its last 4 ("••••1a2b").
func SecretHint(plain string) string {
	if utf8.RuneCountInString(plain) < 12 {
		return HintPrefix
	}
	r := []rune(plain)
	return HintPrefix + string(r[len(r)-4:])
}

// Sealer seals a secret for storage (AES-GCM under the data directory's
// key, in the service).
type Sealer interface {
	Seal(plain string) (string, error)
}

// forbiddenHeaders are headers a user may not set: the connection's own,
// those the fetcher owns (conditional GET, content coding), and Cookie,
// whose cookies go in Cookies.
var forbiddenHeaders = map[string]string{
	"Host": "", "Content-Length": "", "Transfer-Encoding": "", "Connection": "", "Keep-Alive": "",
	"Upgrade": "", "Te": "", "Trailer": "", "Expect": "", "Proxy-Connection": "", "Proxy-Authorization": "",
	"If-None-Match": " (the fetcher sends it for conditional requests)", "If-Modified-Since": " (the fetcher sends it for conditional requests)",
	"Accept-Encoding": " (the fetcher asks for and decodes compression itself)",
	"Cookie":          " (give cookies as cookies)",
}

// SecretHeader reports whether a header of that name carries credentials,
// so that its value is kept sealed and shown only as a hint:
// Authorization-like names and those with key, token, secret, auth,
// password or session in them.
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "password", "passwd", "session", "cookie", "signature", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// IsEmpty reports whether o asks for nothing beyond a plain GET.
func (o *RequestOptions) IsEmpty() bool {
	return o == nil || (o.Method == "" && o.Body == "" && len(o.Headers) == 0 && len(o.Cookies) == 0 && o.BasicAuth == nil)
}

// HasSecrets reports whether o holds a sealed or plain secret.
func (o *RequestOptions) HasSecrets() bool {
	if o == nil {
		return false
	}
	for _, h := range o.Headers {
		if !h.Secret.Unset() {
			return true
		}
	}
	return len(o.Cookies) > 0 || o.BasicAuth != nil
}

// Validate checks and normalises request options: the method GET or POST,
// a body only with POST and at most MaxRequestBody bytes, header names
// that are tokens and not forbidden (Host, Content-Length, Cookie …),
// values without CR, LF or NUL, cookie names and values that fit a Cookie
// header, a basic-auth user without a colon. Secrets are checked in
// their plain form; a sealed secret was checked when it was given.
// Errors: EINVALID naming the field.
func (o *RequestOptions) Validate() error {
	if o == nil {
		return nil
	}
	o.Method = strings.ToUpper(strings.TrimSpace(o.Method))
	switch o.Method {
	case "GET":
		o.Method = ""
	case "", "POST":
	default:
		return Errorf(EINVALID, "method: %q is not GET or POST", clipRunes(o.Method, 20))
	}
	if o.Body != "" && o.Method != "POST" {
		return Errorf(EINVALID, "body: a body needs the method POST")
	}
	if len(o.Body) > MaxRequestBody {
		return Errorf(EINVALID, "body: %s is more than the %s a request body may have", FormatBytes(int64(len(o.Body))), FormatBytes(MaxRequestBody))
	}
	if len(o.Headers) > MaxRequestHeaders {
		return Errorf(EINVALID, "headers: %d is more than %d", len(o.Headers), MaxRequestHeaders)
	}
	seen := map[string]bool{}
	for i := range o.Headers {
		h := &o.Headers[i]
		h.Name = strings.TrimSpace(h.Name)
		if h.Name == "" {
			return Errorf(EINVALID, "headers: a header has no name")
		}
		if len(h.Name) > maxHeaderName || !isToken(h.Name) {
			return Errorf(EINVALID, "headers: %q is not a header name", clipRunes(h.Name, 60))
		}
		h.Name = canonicalHeader(h.Name)
		if why, bad := forbiddenHeaders[h.Name]; bad {
			return Errorf(EINVALID, "headers: %s may not be set%s", h.Name, why)
		}
		if strings.HasPrefix(h.Name, "Sec-") || strings.HasPrefix(h.Name, "Proxy-") {
			return Errorf(EINVALID, "headers: %s may not be set", h.Name)
		}
		if seen[h.Name] {
			return Errorf(EINVALID, "headers: %s is given twice", h.Name)
		}
		seen[h.Name] = true
		if SecretHeader(h.Name) {
			if h.Value != "" { // given in the open: seal it
				h.Secret, h.Value = Secret{Plain: h.Value}, ""
			}
			if h.Secret.Unset() {
				return Errorf(EINVALID, "headers: %s has no value", h.Name)
			}
		} else if !h.Secret.Unset() {
			return Errorf(EINVALID, "headers: %s is not a secret header", h.Name)
		}
		for _, v := range []string{h.Value, h.Secret.Plain} {
			if len(v) > maxHeaderValue {
				return Errorf(EINVALID, "headers: the value of %s is longer than %d bytes", h.Name, maxHeaderValue)
			}
			if !validHeaderValue(v) {
				return Errorf(EINVALID, "headers: the value of %s holds a line break or a control character", h.Name)
			}
		}
	}
	if len(o.Cookies) > MaxRequestCookies {
		return Errorf(EINVALID, "cookies: %d is more than %d", len(o.Cookies), MaxRequestCookies)
	}
	seen = map[string]bool{}
	for i := range o.Cookies {
		c := &o.Cookies[i]
		c.Name = strings.TrimSpace(c.Name)
		if c.Name == "" || len(c.Name) > maxHeaderName || !isToken(c.Name) {
			return Errorf(EINVALID, "cookies: %q is not a cookie name", clipRunes(c.Name, 60))
		}
		if seen[c.Name] {
			return Errorf(EINVALID, "cookies: %s is given twice", c.Name)
		}
		seen[c.Name] = true
		if c.Value.Unset() {
			return Errorf(EINVALID, "cookies: %s has no value", c.Name)
		}
		if len(c.Value.Plain) > maxHeaderValue || !validCookieValue(c.Value.Plain) {
			return Errorf(EINVALID, "cookies: the value of %s is not a cookie value (no spaces, quotes, commas, semicolons, backslashes or control characters; at most %d bytes)", c.Name, maxHeaderValue)
		}
	}
	if a := o.BasicAuth; a != nil {
		a.User = strings.TrimSpace(a.User)
		switch {
		case a.User == "":
			return Errorf(EINVALID, "basic_auth: the user name is missing")
		case strings.Contains(a.User, ":"):
			return Errorf(EINVALID, "basic_auth: the user name may not hold a colon")
		case !validHeaderValue(a.User) || !validHeaderValue(a.Password.Plain):
			return Errorf(EINVALID, "basic_auth: the user name or password holds a line break or a control character")
		case len(a.User) > maxHeaderName || len(a.Password.Plain) > maxHeaderValue:
			return Errorf(EINVALID, "basic_auth: the user name or password is too long")
		case a.Password.Unset():
			return Errorf(EINVALID, "basic_auth: the password is missing")
		}
	}
	if len(o.Headers) == 0 {
		o.Headers = nil
	}
	if len(o.Cookies) == 0 {
		o.Cookies = nil
	}
	return nil
}

// KeepSecrets fills each secret of o that a user left empty, or gave back
// as the hint shown for it, from the same secret of old (the header or
// cookie of the same name, the password of the same user), so that an
// edit that does not type a secret again keeps it.
func (o *RequestOptions) KeepSecrets(old *RequestOptions) {
	if o == nil || old == nil {
		return
	}
	keep := func(s *Secret, from Secret) {
		if s.Sealed == "" && (s.Plain == "" || s.Plain == from.Hint) {
			*s = from
		}
	}
	for i := range o.Headers {
		h := &o.Headers[i]
		for _, oh := range old.Headers {
			if strings.EqualFold(oh.Name, strings.TrimSpace(h.Name)) && !oh.Secret.Unset() {
				if h.Value == oh.Secret.Hint {
					h.Value = ""
				}
				if h.Value == "" {
					keep(&h.Secret, oh.Secret)
				}
			}
		}
	}
	for i := range o.Cookies {
		c := &o.Cookies[i]
		for _, oc := range old.Cookies {
			if oc.Name == strings.TrimSpace(c.Name) {
				keep(&c.Value, oc.Value)
			}
		}
	}
	if a, oa := o.BasicAuth, old.BasicAuth; a != nil && oa != nil && strings.TrimSpace(a.User) == oa.User {
		keep(&a.Password, oa.Password)
	}
}

// Seal seals every plain secret of o with s and sets its hint; the plain
// values are dropped. Errors: the sealer's.
func (o *RequestOptions) Seal(s Sealer) error {
	if o == nil {
		return nil
	}
	seal := func(x *Secret) error {
		if x.Plain == "" {
			return nil
		}
		sealed, err := s.Seal(x.Plain)
		if err != nil {
			return err
		}
		*x = Secret{Sealed: sealed, Hint: SecretHint(x.Plain)}
		return nil
	}
	for i := range o.Headers {
		if err := seal(&o.Headers[i].Secret); err != nil {
			return err
		}
	}
	for i := range o.Cookies {
		if err := seal(&o.Cookies[i].Value); err != nil {
			return err
		}
	}
	if o.BasicAuth != nil {
		return seal(&o.BasicAuth.Password)
	}
	return nil
}

// Equal reports whether o and p ask for the same request.
func (o *RequestOptions) Equal(p *RequestOptions) bool {
	if o.IsEmpty() || p.IsEmpty() {
		return o.IsEmpty() == p.IsEmpty()
	}
	return o.Method == p.Method && o.Body == p.Body && slices.Equal(o.Headers, p.Headers) &&
		slices.Equal(o.Cookies, p.Cookies) && (o.BasicAuth == nil) == (p.BasicAuth == nil) &&
		(o.BasicAuth == nil || *o.BasicAuth == *p.BasicAuth)
}

// Hinted returns a copy of o whose secrets hold only their hints, for
// showing: no sealed value leaves the service.
func (o *RequestOptions) Hinted() *RequestOptions {
	c := o.Clone()
	if c == nil {
		return nil
	}
	for i := range c.Headers {
		if !c.Headers[i].Secret.Unset() {
			c.Headers[i].Secret = Secret{Hint: c.Headers[i].Secret.Hint}
		}
	}
	for i := range c.Cookies {
		c.Cookies[i].Value = Secret{Hint: c.Cookies[i].Value.Hint}
	}
	if c.BasicAuth != nil {
		c.BasicAuth.Password = Secret{Hint: c.BasicAuth.Password.Hint}
	}
	return c
}

// Clone returns a deep copy of o.
func (o *RequestOptions) Clone() *RequestOptions {
	if o == nil {
		return nil
	}
	c := *o
	c.Headers, c.Cookies = slices.Clone(o.Headers), slices.Clone(o.Cookies)
	if o.BasicAuth != nil {
		a := *o.BasicAuth
		c.BasicAuth = &a
	}
	return &c
}

// ParseHeaderLine reads a header written "Name: value".
// Errors: EINVALID naming the line.
func ParseHeaderLine(line string) (RequestHeader, error) {
	name, value, ok := strings.Cut(line, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return RequestHeader{}, Errorf(EINVALID, "headers: %q is not written Name: value", clipRunes(line, 60))
	}
	return RequestHeader{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}, nil
}

// ParseCookieLine reads a cookie written "name=value".
// Errors: EINVALID naming the line.
func ParseCookieLine(line string) (RequestCookie, error) {
	name, value, ok := strings.Cut(line, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return RequestCookie{}, Errorf(EINVALID, "cookies: %q is not written name=value", clipRunes(line, 60))
	}
	return RequestCookie{Name: strings.TrimSpace(name), Value: Secret{Plain: strings.TrimSpace(value)}}, nil
}

// isToken reports whether s is an RFC 9110 token (a header or cookie name).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}

// validHeaderValue reports whether s may be a header value: no control
// characters but tab (so no CR, LF or NUL).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validCookieValue reports whether s is an RFC 6265 cookie-octet string.
func validCookieValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// canonicalHeader writes a header name as Go's net/http does
// ("x-api-key" → "X-Api-Key").
func canonicalHeader(s string) string {
	b := []byte(strings.ToLower(s))
	up := true
	for i, c := range b {
		if up && 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '-'
	}
	return string(b)
}
