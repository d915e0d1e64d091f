package segmenter

import (
	"errors"

	"github.com/changedigest/changedigest"
)

// Sentinel errors; every error the package returns for bad input wraps one
// of them and carries a changedigest error code (EINVALID or ETOOLARGE)
// with a one-line message safe to show to users.
var (
	ErrEmpty       = errors.New("segmenter: empty document")
	ErrBinary      = errors.New("segmenter: binary content")
	ErrNotDocument = errors.New("segmenter: neither HTML nor a feed")
	ErrTooLarge    = errors.New("segmenter: document too large")
	ErrZone        = errors.New("segmenter: invalid zone selector")
	// ErrNoElement: Pick found no element at the paths it was given (an
	// ENOTFOUND error).
	ErrNoElement = errors.New("segmenter: no such element")
)

// inputError is a user-facing input error: errors.Is matches its sentinel,
// changedigest.ErrorCode and ErrorMessage read its code and message.
type inputError struct {
	kind error
	user *changedigest.Error
}

func (e *inputError) Error() string   { return "segmenter: " + e.user.Message }
func (e *inputError) Unwrap() []error { return []error{e.kind, e.user} }

func inputErrorf(kind error, format string, args ...any) error {
	code := changedigest.EINVALID
	if kind == ErrTooLarge {
		code = changedigest.ETOOLARGE
	}
	return &inputError{kind: kind, user: changedigest.Errorf(code, format, args...)}
}

// labelled prefixes a user-facing error's message with which document it
// is about ("old", "new").
func labelled(label string, err error) error {
	var ie *inputError
	if label == "" || !errors.As(err, &ie) {
		return err
	}
	return &inputError{kind: ie.kind, user: changedigest.Errorf(ie.user.Code, "%s: %s", label, ie.user.Message)}
}
