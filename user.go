package changedigest

import (
	"strings"
	"time"
	"unicode"
)

// User is a local account. Each user sees only their own watches,
// profile, feeds and digest.
type User struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	PasswordHash []byte `json:"-"`
	Admin        bool   `json:"admin,omitempty"`
	// Disabled users cannot log in, and their API tokens and feeds are
	// refused; an administrator enables them again.
	Disabled bool   `json:"disabled,omitempty"`
	Email    string `json:"email,omitempty"`
	// FeedToken is the secret that lets feed readers fetch the user's feeds.
	FeedToken string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	// DigestHour is the hour (0-23, local time) at which the daily digest
	// is e-mailed; -1 for none.
	DigestHour int `json:"digest_hour"`
	// DigestSent is the last day (YYYY-MM-DD) whose digest was e-mailed.
	DigestSent string `json:"digest_sent,omitempty"`
}

// Validate checks the fields a user may set: name, digest hour, e-mail
// address and feed token. Errors: EINVALID.
func (u *User) Validate() error {
	if err := ValidateUserName(u.Name); err != nil {
		return err
	}
	if u.DigestHour < -1 || u.DigestHour > 23 {
		return Errorf(EINVALID, "digest hour %d is not -1 (none) or 0 to 23", u.DigestHour)
	}
	if len(u.Email) > 254 || strings.ContainsAny(u.Email, "\r\n") {
		return Errorf(EINVALID, "e-mail address is not valid")
	}
	if len(u.FeedToken) > 256 {
		return Errorf(EINVALID, "feed token is longer than 256 characters")
	}
	return nil
}

// ValidateUserName checks a login name: 1 to 64 letters, digits, '.', '-' or '_'.
func ValidateUserName(name string) error {
	if name == "" || len(name) > 64 {
		return Errorf(EINVALID, "user name must be 1 to 64 characters")
	}
	if strings.IndexFunc(name, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' || r == '_')
	}) >= 0 {
		return Errorf(EINVALID, "user name %q may hold only letters, digits, '.', '-' and '_'", name)
	}
	return nil
}

// Registration is who may create an account on the web: nobody but an
// administrator (closed), a person with an invitation link (invite) or
// anyone (open).
type Registration string

// The registration modes; the zero value reads as RegistrationClosed.
const (
	RegistrationClosed Registration = "closed"
	RegistrationInvite Registration = "invite"
	RegistrationOpen   Registration = "open"
)

// ParseRegistration reads a registration mode. Errors: EINVALID.
func ParseRegistration(s string) (Registration, error) {
	switch r := Registration(s); r {
	case RegistrationClosed, RegistrationInvite, RegistrationOpen:
		return r, nil
	case "":
		return RegistrationClosed, nil
	}
	return "", Errorf(EINVALID, "registration %q is not closed, invite or open", s)
}
