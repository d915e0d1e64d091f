package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/render"
)

// Cookie names. Over https they carry the "__Host-" prefix (see
// cookieName), so that no other site of the domain can set them.
const (
	sessionCookie = "cd_session"
	csrfCookie    = "cd_csrf"
	flashCookie   = "cd_flash"
	knownCookie   = "cd_known" // the browser logged in to a name before (see knownBrowser)
)

// cookieName is the name of a cookie of the site: "__Host-" + base over
// https, which browsers accept only from this host, with Secure and
// Path=/ and no Domain.
func (s *Server) cookieName(base string) string {
	if s.secure {
		return "__Host-" + base
	}
	return base
}

// cookie reads a cookie of the site.
func (s *Server) cookie(r *http.Request, base string) (*http.Cookie, error) {
	return r.Cookie(s.cookieName(base))
}

// HashPassword hashes a password with bcrypt. Errors: EINVALID for a
// password shorter than 8 or longer than 72 bytes.
func HashPassword(password string) ([]byte, error) {
	if len(password) < 8 {
		return nil, changedigest.Errorf(changedigest.EINVALID, "the password must have at least 8 characters")
	}
	if len(password) > 72 {
		return nil, changedigest.Errorf(changedigest.EINVALID, "the password must have at most 72 bytes")
	}
	return bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
}

// dummyHash makes a login for an unknown user cost as much as a real one.
// It is made on first use, not at start-up, which every command pays.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("not a real password"), bcrypt.DefaultCost)
	return h
})

// currentUser is the logged-in user of the request, nil for visitors.
func currentUser(r *http.Request) *changedigest.User {
	u, _ := r.Context().Value(keyUser).(*changedigest.User)
	return u
}

func withUser(r *http.Request, u *changedigest.User) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), keyUser, u))
}

// loadSession puts the session's user, if any, in the request context.
// A session the store cannot look up for now (EBUSY: a cluster replacing
// a server) is a 503 with a Retry-After, not a visitor sent to log in
// again.
func (s *Server) loadSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := s.cookie(r, sessionCookie); err == nil && c.Value != "" {
			sess, err := s.Store.Session(r.Context(), c.Value)
			if changedigest.ErrorCode(err) == changedigest.EBUSY {
				s.pageError(w, r, err)
				return
			}
			if err == nil {
				if u, err := s.Store.User(r.Context(), sess.UserID); err == nil && !u.Disabled {
					r = withUser(r, u)
					r = r.WithContext(context.WithValue(r.Context(), keySession, c.Value))
					if s.now().Sub(sess.LastSeen) >= touchEvery {
						if err := s.Store.TouchSession(r.Context(), c.Value, ""); err != nil {
							s.Logger.Debug("session last seen", "err", err)
						}
					}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// touchEvery is how often a session's last use is written down: the
// session list shows it to within this.
const touchEvery = 5 * time.Minute

// requireUser refuses visitors: pages redirect to the login form.
func (s *Server) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if currentUser(r) == nil {
			s.pageError(w, r, changedigest.Errorf(changedigest.EUNAUTHORIZED, "please log in"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireToken authenticates API requests with "Authorization: Bearer TOKEN".
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			s.apiError(w, r, changedigest.Errorf(changedigest.EUNAUTHORIZED, "send an API token: Authorization: Bearer TOKEN"))
			return
		}
		// A right token always works: tokens are 256-bit secrets, and
		// others' wrong guesses from the address must not lock it out.
		u, _, err := s.Store.UserByToken(r.Context(), strings.TrimSpace(token))
		if err != nil {
			if changedigest.ErrorCode(err) == changedigest.ENOTFOUND || changedigest.ErrorCode(err) == changedigest.EUNAUTHORIZED {
				err = s.tokenFailed(r, changedigest.Errorf(changedigest.EUNAUTHORIZED, "the API token is not valid"))
			}
			s.apiError(w, r, err)
			return
		}
		if u.Disabled {
			s.apiError(w, r, changedigest.Errorf(changedigest.EFORBIDDEN, "the account of this API token is disabled"))
			return
		}
		next.ServeHTTP(w, withUser(r, u))
	})
}

// csrfToken returns the request's CSRF token for its forms. The token is
// bound to the session: an HMAC, under the server's key, of the session
// token, so that it is worth nothing with another session and cannot be
// forged by a party that can set cookies but does not hold the key. A
// visitor (the login form) gets one bound to a random value of a cookie
// that is set for the purpose.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if t, ok := r.Context().Value(keyCSRF).(string); ok {
		return t
	}
	if t := s.expectedCSRF(r); t != "" {
		return t
	}
	b := make([]byte, 32)
	rand.Read(b)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(csrfCookie), Value: nonce, Path: "/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteStrictMode})
	return s.mac("visitor", nonce)
}

// mac is an HMAC under the server's key of a value of a kind: the CSRF
// token of a session ("session") or of a visitor's cookie ("visitor"),
// the cookie of a browser that logged in to a name ("known").
func (s *Server) mac(kind, id string) string {
	m := hmac.New(sha256.New, s.Key)
	m.Write([]byte("changedigest\x00" + kind + "\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// expectedCSRF is the token a form of this request must carry; "" when
// the request can hold none (a visitor without the cookie).
func (s *Server) expectedCSRF(r *http.Request) string {
	if sid, ok := r.Context().Value(keySession).(string); ok {
		return s.mac("session", sid)
	}
	if c, err := s.cookie(r, csrfCookie); err == nil && len(c.Value) >= 32 {
		return s.mac("visitor", c.Value)
	}
	return ""
}

// checkCSRF guards every state-changing form post: the form's token must
// be the one of the request's session (or, for a visitor, of its CSRF
// cookie), and a cross-origin Origin header is refused.
func (s *Server) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && origin != "null" {
			if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, r.Host) {
				s.pageError(w, r, changedigest.Errorf(changedigest.EFORBIDDEN, "the form was sent from another site"))
				return
			}
		}
		var perr error
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			perr = r.ParseMultipartForm(s.MaxUpload)
		} else {
			perr = r.ParseForm()
		}
		if perr != nil {
			if uerr := userError(perr); changedigest.ErrorCode(uerr) == changedigest.ETOOLARGE {
				s.pageError(w, r, uerr)
			} else {
				s.pageError(w, r, changedigest.Errorf(changedigest.EINVALID, "the form could not be read: %v", perr))
			}
			return
		}
		want := s.expectedCSRF(r)
		form := r.FormValue("csrf_token")
		if want == "" || form == "" || !hmac.Equal([]byte(want), []byte(form)) {
			s.pageError(w, r, changedigest.Errorf(changedigest.EFORBIDDEN,
				"the form has expired or was not sent from this site; reload the page and try again"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCSRF, want)))
	})
}

// setFlash leaves a message for the next page the browser loads.
func (s *Server) setFlash(w http.ResponseWriter, kind, msg string) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(flashCookie), Value: url.QueryEscape(kind + ":" + msg), Path: "/",
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode, MaxAge: 60})
}

// takeFlash reads and clears the flash message.
func (s *Server) takeFlash(w http.ResponseWriter, r *http.Request) *render.Flash {
	c, err := s.cookie(r, flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(flashCookie), Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure})
	v, err := url.QueryUnescape(c.Value)
	if err != nil {
		return nil
	}
	kind, msg, ok := strings.Cut(v, ":")
	if !ok || msg == "" {
		return nil
	}
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return &render.Flash{Kind: kind, Message: msg}
}

// handleLoginForm shows the login form.
func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) error {
	if currentUser(r) != nil {
		http.Redirect(w, r, s.safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return nil
	}
	return s.renderPage(w, r, http.StatusOK, "login", "login", "Log in", s.loginPage(r, &loginPage{Next: r.URL.Query().Get("next")}))
}

type loginPage struct {
	Name  string
	Next  string
	Error string
	// Register offers "create an account": registration is open.
	Register bool
}

// loginPage completes the login page's data.
func (s *Server) loginPage(r *http.Request, p *loginPage) *loginPage {
	mode, err := s.Store.Registration(r.Context())
	p.Register = err == nil && mode == changedigest.RegistrationOpen
	return p
}

// handleLogin checks a name and password and starts a session.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) error {
	name := strings.TrimSpace(r.FormValue("name"))
	password := r.FormValue("password")
	next := r.FormValue("next")
	addr, lname := clientIP(r), strings.ToLower(name)
	if err := s.logins.check(addr, lname, s.knownBrowser(r, lname)); err != nil {
		return err
	}
	u, err := s.Store.UserByName(r.Context(), name)
	if err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND && changedigest.ErrorCode(err) != changedigest.EINVALID {
		return err
	}
	hash := dummyHash()
	if u != nil && len(u.PasswordHash) > 0 {
		hash = u.PasswordHash
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || u == nil || len(u.PasswordHash) == 0 {
		s.logins.fail(addr, lname)
		return s.renderPage(w, r, http.StatusUnauthorized, "login", "login", "Log in",
			s.loginPage(r, &loginPage{Name: name, Next: next, Error: "The name or the password is wrong."}))
	}
	s.logins.succeed(addr, lname)
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(knownCookie), Value: s.knownValue(lname), Path: "/",
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode, MaxAge: int(knownFor / time.Second)})
	if u.Disabled {
		return s.renderPage(w, r, http.StatusForbidden, "login", "login", "Log in",
			s.loginPage(r, &loginPage{Name: name, Next: next, Error: "This account is disabled; ask an administrator to enable it."}))
	}
	if err := s.startSession(w, r, u); err != nil {
		return err
	}
	http.Redirect(w, r, s.safeNext(next), http.StatusSeeOther)
	return nil
}

// startSession logs the browser in as u: a new session, its cookie, and
// the browser's User-Agent kept with it for the session list.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u *changedigest.User) error {
	token, err := s.Store.CreateSession(r.Context(), u.ID, s.SessionTTL)
	if err != nil {
		return err
	}
	if err := s.Store.TouchSession(r.Context(), token, r.UserAgent()); err != nil {
		s.Logger.Warn("session user agent", "err", err)
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(sessionCookie), Value: token, Path: "/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(s.SessionTTL / time.Second)})
	return nil
}

// handleLogout ends the session.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) error {
	if c, err := s.cookie(r, sessionCookie); err == nil {
		if err := s.Store.DeleteSession(r.Context(), c.Value); err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(sessionCookie), Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure})
	http.Redirect(w, r, s.Render.Path("/login"), http.StatusSeeOther)
	return nil
}

// safeNext keeps a post-login redirect on this site: next must be a plain
// path of the site (an absolute path, with a query if any) and is refused,
// in favour of the dashboard, when it holds anything a browser might read
// as another site: control characters (browsers strip tabs and newlines),
// backslashes (browsers read them as slashes), a leading "//", a scheme or
// a host, whether plain or percent-encoded.
func (s *Server) safeNext(next string) string {
	if !plainPath(next) {
		return s.Render.Path("/")
	}
	return next
}

// maxNext bounds the length of a post-login redirect.
const maxNext = 2048

// plainPath reports whether p is a plain same-site path, as safeNext wants.
func plainPath(p string) bool {
	if p == "" || len(p) > maxNext || !utf8.ValidString(p) || !strings.HasPrefix(p, "/") {
		return false
	}
	decoded := p
	if d, err := url.PathUnescape(p); err == nil {
		decoded = d
	} else {
		return false // a malformed escape: nothing a link of ours would hold
	}
	if strings.ContainsRune(p, ' ') {
		return false // links of ours escape spaces
	}
	for _, v := range []string{p, decoded} {
		if strings.HasPrefix(v, "//") || strings.ContainsRune(v, '\\') {
			return false
		}
		for _, r := range v {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				return false
			}
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == "" &&
		strings.HasPrefix(u.Path, "/") && !strings.HasPrefix(u.Path, "//")
}

// LoadKey reads the key of the server's CSRF tokens from path, creating
// it (32 random bytes, readable by the owner only) when there is none, so
// that forms stay valid across restarts. Errors: the file's, or a key
// file shorter than 32 bytes.
func LoadKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) < 32 {
			return nil, fmt.Errorf("server: key file %s holds %d bytes, want at least 32", path, len(key))
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("server: read key: %w", err)
	}
	key = make([]byte, 32)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // another process made it first
			return LoadKey(path)
		}
		return nil, fmt.Errorf("server: create key: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("server: write key: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("server: write key: %w", err)
	}
	return key, nil
}

// tokenFailed records a wrong feed or API token from the request's
// address and returns notFound, or an ERATELIMIT error once the address
// has failed too often. Only failures count: a right token is never
// refused.
func (s *Server) tokenFailed(r *http.Request, notFound error) error {
	addr := clientIP(r)
	s.tokens.fail(addr)
	if d := s.tokens.wait(addr); d > 0 {
		return rateLimitedFor(d, "too many wrong tokens from your address")
	}
	return notFound
}

// knownFor is how long the cookie of a browser that logged in to a name
// keeps it known.
const knownFor = 365 * 24 * time.Hour

// knownValue is a new value of the cookie of a browser that logged in to
// name: a random id of its own, the time it was made, and an HMAC of
// both and the name under the server's key. Each login makes a new one,
// so no two browsers share a value, and a copy of one stops counting a
// year after the login that made it.
func (s *Server) knownValue(lname string) string {
	id := make([]byte, 16)
	rand.Read(id)
	v := base64.RawURLEncoding.EncodeToString(id) + "." + strconv.FormatInt(s.now().Unix(), 10)
	return v + "." + s.mac("known", lname+"\x00"+v)
}

// knownBrowser reports whether the browser logged in to the name before,
// within knownFor: its cookie is a value knownValue made for the name,
// which the login guard takes as a known address.
func (s *Server) knownBrowser(r *http.Request, lname string) bool {
	c, err := s.cookie(r, knownCookie)
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return false
	}
	v, sig := c.Value[:i], c.Value[i+1:]
	_, made, ok := strings.Cut(v, ".")
	unix, err := strconv.ParseInt(made, 10, 64)
	if !ok || err != nil || s.now().Sub(time.Unix(unix, 0)) > knownFor {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(s.mac("known", lname+"\x00"+v)))
}

// LoadAuthority returns the tagging authority kept in the file at path
// (the host name the feeds' entry ids are minted under), writing first
// when the file does not exist yet: chosen once, from the base URL the
// service first ran with, so that entry ids stay the same when the
// service moves to another address (feed readers would show every entry
// again).
func LoadAuthority(path, first string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if a := strings.TrimSpace(string(b)); a != "" {
			return a, nil
		}
		return "", fmt.Errorf("server: %s is empty: write the host name feed entry ids are minted under into it", path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("server: read the tagging authority: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadAuthority(path, first)
	} else if err != nil {
		return "", fmt.Errorf("server: keep the tagging authority: %w", err)
	}
	if _, err := f.WriteString(first + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("server: keep the tagging authority: %w", err)
	}
	return first, f.Close()
}
