package changedigest

import (
	"errors"
	"fmt"
)

// Error codes shared by every package. The HTTP edge maps them to statuses
// and the command line to exit codes.
const (
	ECONFLICT     = "conflict"     // already exists
	EINTERNAL     = "internal"     // a bug or an unexpected failure
	EINVALID      = "invalid"      // bad input from the user
	ENOTFOUND     = "not_found"    // no such thing, or not yours
	EUNAUTHORIZED = "unauthorized" // not logged in or bad credentials
	EFORBIDDEN    = "forbidden"    // logged in but not allowed
	ETOOLARGE     = "too_large"    // input over a size limit
	EUNAVAILABLE  = "unavailable"  // a remote side failed or refused
	ERATELIMIT    = "rate_limited" // too many requests
	EBUSY         = "busy"         // cannot answer now (recovering); try again shortly
	EFULL         = "storage_full" // the service's storage is full: nothing was stored
)

// ServiceFault reports whether err is the service's own failure rather
// than the request's or the page's: its storage is full (EFULL), or it
// cannot answer for a moment (EBUSY). A check that fails so says nothing
// of its page.
func ServiceFault(err error) bool {
	switch ErrorCode(err) {
	case EFULL, EBUSY:
		return true
	}
	return false
}

// Error is an error meant for the user: its Message is safe to show.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other error and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain, or
// "internal error" for any other error, so internals never reach users.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// FormatBytes writes a size of n bytes as a person reads it in a message
// ("4 MiB", "8.6 MiB", "16 KiB", "672.6 KiB", "300 bytes").
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
