package server

import (
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// settingsPage is the Data of the "settings" page.
type settingsPage struct {
	Email      string
	DigestHour int
	Hours      []int
	FeedURL    string
	TagFeeds   []tagFeed
	Tokens     []pet.Token
	NewToken   string // the secret of a token just created, shown once
	Error      string
	Mail       bool // e-mail delivery is configured
	// Subscribers are the WebSub subscriptions to the user's feeds.
	Subscribers []subscriberRow
	// Sessions are the user's live login sessions, this one first.
	Sessions []sessionRow
}

// subscriberRow is a WebSub subscription as settings show it: the
// callback's host (its path may hold the reader's own secret) and which
// feed.
type subscriberRow struct {
	Host, Feed string
	Expires    time.Time
}

type tagFeed struct{ Tag, URL string }

func (s *Server) settingsPage(r *http.Request, u *changedigest.User) (*settingsPage, error) {
	p := &settingsPage{Email: u.Email, DigestHour: u.DigestHour, FeedURL: s.feedURL(u, "/atom.xml"),
		Mail: s.Notify.Mail != nil}
	for h := 0; h < 24; h++ {
		p.Hours = append(p.Hours, h)
	}
	// The tags come with a page of the watches (of one watch): reading
	// every watch for them would cost a user with many watches dearly.
	list, err := s.Store.WatchPage(r.Context(), u.ID, pet.WatchQuery{Limit: 1})
	if err != nil {
		return nil, err
	}
	for _, t := range list.Tags {
		p.TagFeeds = append(p.TagFeeds, tagFeed{Tag: t, URL: s.feedURL(u, "/tags/"+pathEscape(t)+".xml")})
	}
	if p.Tokens, err = s.Store.Tokens(r.Context(), u.ID); err != nil {
		return nil, err
	}
	if p.Sessions, err = s.sessionRows(r, u); err != nil {
		return nil, err
	}
	subs, err := s.Store.Subscriptions(r.Context(), u.ID)
	if err != nil {
		return nil, err
	}
	for _, sub := range subs {
		row := subscriberRow{Host: sub.Callback, Feed: sub.Format + " feed of all your watches", Expires: sub.Expires}
		if cb, err := url.Parse(sub.Callback); err == nil {
			row.Host = cb.Host
		}
		switch {
		case sub.WatchID != 0:
			row.Feed = fmt.Sprintf("%s feed of watch %d", sub.Format, sub.WatchID)
		case sub.Tag != "":
			row.Feed = sub.Format + " feed of tag " + sub.Tag
		}
		p.Subscribers = append(p.Subscribers, row)
	}
	return p, nil
}

func (s *Server) handleSettings(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	p, err := s.settingsPage(r, u)
	if err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "settings", "settings", "Settings", p)
}

// settingsError shows the settings page again with a user error.
func (s *Server) settingsError(w http.ResponseWriter, r *http.Request, u *changedigest.User, err error) error {
	if c := changedigest.ErrorCode(err); c != changedigest.EINVALID && c != changedigest.ECONFLICT {
		return err
	}
	p, perr := s.settingsPage(r, u)
	if perr != nil {
		return perr
	}
	p.Error = changedigest.ErrorMessage(err)
	return s.renderPage(w, r, http.StatusBadRequest, "settings", "settings", "Settings", p)
}

func (s *Server) handleSaveSettings(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	email := strings.TrimSpace(r.FormValue("email"))
	if email != "" {
		a, err := mail.ParseAddress(email)
		if err != nil || a.Name != "" {
			return s.settingsError(w, r, u, changedigest.Errorf(changedigest.EINVALID, "%q is not an e-mail address", email))
		}
		email = a.Address
	}
	hour, err := strconv.Atoi(r.FormValue("digest_hour"))
	if err != nil || hour < -1 || hour > 23 {
		return s.settingsError(w, r, u, changedigest.Errorf(changedigest.EINVALID, "choose a digest hour"))
	}
	if _, err := s.Store.UpdateUser(r.Context(), u.ID, func(x *changedigest.User) error {
		x.Email, x.DigestHour = email, hour
		return nil
	}); err != nil {
		return s.settingsError(w, r, u, err)
	}
	s.setFlash(w, "info", "Settings saved.")
	return s.redirect(w, r, "/settings")
}

func (s *Server) handlePassword(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	if len(u.PasswordHash) > 0 && bcrypt.CompareHashAndPassword(u.PasswordHash, []byte(r.FormValue("current"))) != nil {
		return s.settingsError(w, r, u, changedigest.Errorf(changedigest.EINVALID, "the current password is wrong"))
	}
	if r.FormValue("new") != r.FormValue("repeat") {
		return s.settingsError(w, r, u, changedigest.Errorf(changedigest.EINVALID, "the two new passwords differ"))
	}
	hash, err := HashPassword(r.FormValue("new"))
	if err != nil {
		return s.settingsError(w, r, u, err)
	}
	// Other sessions end; this browser logs in again.
	if err := s.setPassword(r.Context(), u.ID, hash); err != nil {
		return err
	}
	s.setFlash(w, "info", "Password changed. Please log in again.")
	return s.redirect(w, r, "/login")
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	secret, _, err := s.Store.CreateToken(r.Context(), u.ID, r.FormValue("name"))
	if err != nil {
		return s.settingsError(w, r, u, err)
	}
	p, err := s.settingsPage(r, u)
	if err != nil {
		return err
	}
	p.NewToken = secret
	return s.renderPage(w, r, http.StatusOK, "settings", "settings", "Settings", p)
}

func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	id, err := idParam(r, "tid")
	if err != nil {
		return err
	}
	if err := s.Store.RevokeToken(r.Context(), u.ID, id); err != nil {
		return err
	}
	s.setFlash(w, "info", fmt.Sprintf("Token %d revoked.", id))
	return s.redirect(w, r, "/settings")
}

// handleRotateFeedToken gives the user a new feed token; the old feed
// addresses stop working.
func (s *Server) handleRotateFeedToken(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	if _, err := s.Store.UpdateUser(r.Context(), u.ID, func(x *changedigest.User) error {
		x.FeedToken = pet.NewSecret()
		return nil
	}); err != nil {
		return err
	}
	s.setFlash(w, "info", "Your feeds have new addresses; update them in your feed reader.")
	return s.redirect(w, r, "/settings")
}
