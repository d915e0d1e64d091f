package profile

import (
	"errors"
	"fmt"

	"github.com/changedigest/changedigest"
)

// Sentinel errors. Every error the package returns for bad input wraps one
// of them (test with errors.Is) and also carries a *changedigest.Error
// with code EINVALID or ETOOLARGE and a message safe to show to users.
var (
	// ErrSyntax: the document is not well-formed XML, Turtle or N-Triples,
	// or breaks the RDF/XML grammar. errors.As finds a *SyntaxError with
	// the position.
	ErrSyntax = errors.New("syntax error")
	// ErrNotRDF: the document parses but is not RDF (e.g. an HTML page).
	ErrNotRDF = errors.New("not an RDF document")
	// ErrEmpty: the document holds nothing, or no triples.
	ErrEmpty = errors.New("empty document")
	// ErrNoPerson: the document is RDF but describes no person.
	ErrNoPerson = errors.New("no person in the document")
	// ErrTooLarge: the document is over the size limit.
	ErrTooLarge = errors.New("document too large")
	// ErrTerm: a term given by hand is empty or too long.
	ErrTerm = errors.New("bad interest term")
	// ErrSense: a sense chosen by hand is not a WordNet synset ID.
	ErrSense = errors.New("bad sense")
	// ErrTooMany: a profile would hold more interests than MaxInterests,
	// or link more pages than MaxLinkedPages.
	ErrTooMany = errors.New("too many interests")
)

// Limits on a profile: what a person lists of their interests and pages
// is far below them.
const (
	MaxInterests   = 500
	MaxLinkedPages = 50
)

// SyntaxError locates a syntax error in a document.
type SyntaxError struct {
	Format Format
	// Line and Column are 1-based; 0 when unknown.
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s syntax error at line %d, column %d: %s", e.Format.Name(), e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s syntax error at line %d: %s", e.Format.Name(), e.Line, e.Msg)
	}
	return fmt.Sprintf("%s syntax error: %s", e.Format.Name(), e.Msg)
}

// Unwrap makes errors.Is(err, ErrSyntax) hold.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// inputError is what the package returns for bad input: a user-facing
// *changedigest.Error joined to the cause (a sentinel or a *SyntaxError),
// so that both changedigest.ErrorCode and errors.Is/As work.
type inputError struct {
	user  *changedigest.Error
	cause error
}

func (e *inputError) Error() string   { return e.user.Message }
func (e *inputError) Unwrap() []error { return []error{e.user, e.cause} }

// invalid returns an EINVALID error with the message "profile: " + msg.
func invalid(cause error, format string, args ...any) error {
	return &inputError{
		user:  changedigest.Errorf(changedigest.EINVALID, "profile: "+format, args...),
		cause: cause,
	}
}

// tooLarge returns an ETOOLARGE error.
func tooLarge(name string, limit int64) error {
	return &inputError{
		user:  changedigest.Errorf(changedigest.ETOOLARGE, "profile: %s is larger than the limit of %d bytes", name, limit),
		cause: ErrTooLarge,
	}
}
