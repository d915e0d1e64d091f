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
	Email        string `json:"email,omitempty"`
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
