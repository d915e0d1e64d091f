package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/render"
)

// Cookie names.
const (
	sessionCookie = "cd_session"
	csrfCookie    = "cd_csrf"
	flashCookie   = "cd_flash"
)

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
func (s *Server) loadSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			if sess, err := s.Store.Session(r.Context(), c.Value); err == nil {
				if u, err := s.Store.User(r.Context(), sess.UserID); err == nil {
					r = withUser(r, u)
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

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
		if err := s.limiter.check("api:" + clientIP(r)); err != nil {
			s.apiError(w, r, err)
			return
		}
		u, _, err := s.Store.UserByToken(r.Context(), strings.TrimSpace(token))
		if err != nil {
			if changedigest.ErrorCode(err) == changedigest.ENOTFOUND || changedigest.ErrorCode(err) == changedigest.EUNAUTHORIZED {
				s.limiter.fail("api:" + clientIP(r))
				err = changedigest.Errorf(changedigest.EUNAUTHORIZED, "the API token is not valid")
			}
			s.apiError(w, r, err)
			return
		}
		next.ServeHTTP(w, withUser(r, u))
	})
}

// csrfToken returns the request's CSRF token, setting the cookie that
// carries it when the browser has none (double-submit pattern).
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if t, ok := r.Context().Value(keyCSRF).(string); ok {
		return t
	}
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	b := make([]byte, 32)
	rand.Read(b)
	t := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: t, Path: "/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteStrictMode})
	return t
}

// checkCSRF guards every state-changing form post: the form's token must
// equal the cookie's, and a cross-origin Origin header is refused.
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
		c, err := r.Cookie(csrfCookie)
		form := r.FormValue("csrf_token")
		if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) != 1 {
			s.pageError(w, r, changedigest.Errorf(changedigest.EFORBIDDEN,
				"the form has expired or was not sent from this site; reload the page and try again"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCSRF, c.Value)))
	})
}

// setFlash leaves a message for the next page the browser loads.
func (s *Server) setFlash(w http.ResponseWriter, kind, msg string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(kind + ":" + msg), Path: "/",
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode, MaxAge: 60})
}

// takeFlash reads and clears the flash message.
func (s *Server) takeFlash(w http.ResponseWriter, r *http.Request) *render.Flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure})
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

// limiter counts failures per key in a sliding window and refuses a key
// that has had too many.
type limiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	fails map[string][]time.Time
}

func newLimiter(max int, window time.Duration, now func() time.Time) *limiter {
	return &limiter{max: max, window: window, now: now, fails: map[string][]time.Time{}}
}

// check returns an ERATELIMIT error when key has failed too often lately.
func (l *limiter) check(key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := l.prune(key)
	if len(recent) < l.max {
		return nil
	}
	wait := recent[0].Add(l.window).Sub(l.now())
	secs := int(wait/time.Second) + 1
	return &rateLimited{err: changedigest.Errorf(changedigest.ERATELIMIT,
		"too many failed attempts; try again in %d minutes", (secs+59)/60), after: secs}
}

// fail records a failure of key.
func (l *limiter) fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fails[key] = append(l.prune(key), l.now())
	if len(l.fails) > 100000 { // bound memory under a flood of keys
		for k := range l.fails {
			if len(l.prune(k)) == 0 {
				delete(l.fails, k)
			}
		}
	}
}

// reset forgets key's failures (after a successful login).
func (l *limiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, key)
}

func (l *limiter) prune(key string) []time.Time {
	cut := l.now().Add(-l.window)
	ts := l.fails[key]
	i := 0
	for i < len(ts) && !ts[i].After(cut) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.fails, key)
	} else {
		l.fails[key] = ts
	}
	return ts
}

// handleLoginForm shows the login form.
func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) error {
	if currentUser(r) != nil {
		http.Redirect(w, r, s.safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return nil
	}
	return s.renderPage(w, r, http.StatusOK, "login", "login", "Log in", &loginPage{Next: r.URL.Query().Get("next")})
}

type loginPage struct {
	Name  string
	Next  string
	Error string
}

// handleLogin checks a name and password and starts a session.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) error {
	name := strings.TrimSpace(r.FormValue("name"))
	password := r.FormValue("password")
	next := r.FormValue("next")
	ipKey, nameKey := "ip:"+clientIP(r), "name:"+strings.ToLower(name)
	if err := s.limiter.check(ipKey); err != nil {
		return err
	}
	if err := s.limiter.check(nameKey); err != nil {
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
		s.limiter.fail(ipKey)
		s.limiter.fail(nameKey)
		return s.renderPage(w, r, http.StatusUnauthorized, "login", "login", "Log in",
			&loginPage{Name: name, Next: next, Error: "The name or the password is wrong."})
	}
	s.limiter.reset(nameKey)
	token, err := s.Store.CreateSession(r.Context(), u.ID, s.SessionTTL)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(s.SessionTTL / time.Second)})
	http.Redirect(w, r, s.safeNext(next), http.StatusSeeOther)
	return nil
}

// handleLogout ends the session.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) error {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if err := s.Store.DeleteSession(r.Context(), c.Value); err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure})
	http.Redirect(w, r, s.Render.Path("/login"), http.StatusSeeOther)
	return nil
}

// safeNext keeps a post-login redirect on this site.
func (s *Server) safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return s.Render.Path("/")
	}
	return next
}
