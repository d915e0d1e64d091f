package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/render"
)

// statusOf maps error codes to HTTP statuses; anything else is a 500.
var statusOf = map[string]int{
	changedigest.EINVALID:      http.StatusBadRequest,
	changedigest.EUNAUTHORIZED: http.StatusUnauthorized,
	changedigest.EFORBIDDEN:    http.StatusForbidden,
	changedigest.ENOTFOUND:     http.StatusNotFound,
	changedigest.ECONFLICT:     http.StatusConflict,
	changedigest.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	changedigest.ERATELIMIT:    http.StatusTooManyRequests,
	changedigest.EUNAVAILABLE:  http.StatusBadGateway,
	changedigest.EBUSY:         http.StatusServiceUnavailable,
	changedigest.EFULL:         http.StatusInsufficientStorage,
}

// titleOf names error pages.
var titleOf = map[int]string{
	http.StatusBadRequest:            "That did not work",
	http.StatusUnauthorized:          "Please log in",
	http.StatusForbidden:             "Not allowed",
	http.StatusNotFound:              "Not found",
	http.StatusConflict:              "Already there",
	http.StatusRequestEntityTooLarge: "Too large",
	http.StatusTooManyRequests:       "Too many attempts",
	http.StatusBadGateway:            "The other side failed",
	http.StatusServiceUnavailable:    "Not available right now",
	http.StatusInsufficientStorage:   "Storage is full",
	http.StatusInternalServerError:   "Something went wrong",
}

// userError normalises err: body-size overruns become ETOOLARGE.
func userError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return changedigest.Errorf(changedigest.ETOOLARGE, "the upload is larger than %d bytes", mbe.Limit)
	}
	return err
}

func statusFor(err error) int {
	if st, ok := statusOf[changedigest.ErrorCode(err)]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// page adapts a page handler: errors become an error page (or, for a
// visitor who must log in, a redirect to the login form).
func (s *Server) page(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			s.pageError(w, r, err)
		}
	}
}

func (s *Server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	err = userError(err)
	status := statusFor(err)
	if status == http.StatusUnauthorized && r.Method == http.MethodGet {
		http.Redirect(w, r, s.Render.Path("/login")+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	msg := changedigest.ErrorMessage(err)
	if status == http.StatusInternalServerError {
		s.Logger.Error("request failed", "path", logPath(r), "err", clipErr(err), "request_id", reqID(r))
		msg = "An internal error occurred (request " + reqID(r) + "). It has been logged."
	}
	if st := retryAfterOf(err); st > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(st))
	}
	var buf bytes.Buffer
	p := s.pageData(w, r, "", titleOf[status], &render.ErrorPage{Title: titleOf[status], Message: msg})
	if rerr := s.Render.Render(&buf, "error", p); rerr != nil {
		s.Logger.Error("rendering the error page", "err", rerr, "request_id", reqID(r))
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// api adapts an API handler: errors become {"error":{"code","message"}}.
func (s *Server) api(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			s.apiError(w, r, err)
		}
	}
}

func (s *Server) apiError(w http.ResponseWriter, r *http.Request, err error) {
	err = userError(err)
	status := statusFor(err)
	code := changedigest.ErrorCode(err)
	msg := changedigest.ErrorMessage(err)
	if status == http.StatusInternalServerError {
		s.Logger.Error("api request failed", "path", logPath(r), "err", clipErr(err), "request_id", reqID(r))
		msg = "internal error (request " + reqID(r) + ")"
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="changedigest"`)
	}
	if st := retryAfterOf(err); st > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(st))
	}
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // served as JSON with nosniff: page text stays readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// rateLimited is an ERATELIMIT error that says when to come back.
type rateLimited struct {
	err   *changedigest.Error
	after int // seconds
}

func (e *rateLimited) Error() string { return e.err.Error() }
func (e *rateLimited) Unwrap() error { return e.err }

// busyRetryAfter is the Retry-After of an EBUSY answer, in seconds: about
// the time a cluster takes to replace a server that stopped.
const busyRetryAfter = 5

func retryAfterOf(err error) int {
	var rl *rateLimited
	if errors.As(err, &rl) {
		return rl.after
	}
	if changedigest.ErrorCode(err) == changedigest.EBUSY {
		return busyRetryAfter
	}
	return 0
}

// maxShown bounds what a message or a log line repeats of a request's
// own input (a path, a parameter).
const maxShown = 80

// clip shortens v to at most maxShown bytes for a message, marking the cut.
func clip(v string) string { return clipTo(v, maxShown) }

func clipTo(v string, n int) string {
	if len(v) <= n {
		return v
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "…(" + strconv.Itoa(len(v)) + " bytes)"
}

// logPath is the request's path for a log line, shortened: a path is the
// client's input and may be megabytes long.
func logPath(r *http.Request) string { return clipTo(hideLinkSecret(r.URL.Path), 256) }

// hideLinkSecret hides the secret of a one-time link's path (an
// invitation, a password reset) from the log.
func hideLinkSecret(p string) string {
	for _, prefix := range []string{"/invite/", "/reset/"} {
		if i := strings.Index(p, prefix); i >= 0 {
			return p[:i+len(prefix)] + "…"
		}
	}
	return p
}

// clipErr is an error's text for a log line, shortened: errors may quote
// the request's input.
func clipErr(err error) string { return clipTo(err.Error(), 1024) }
