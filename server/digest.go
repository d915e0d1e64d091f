package server

import (
	"net/http"
	"time"

	"github.com/changedigest/changedigest/render"
)

// digestPage is the Data of the "digest" page.
type digestPage struct {
	*render.DigestView
	Prev, Next string // neighbouring days' paths, Next "" for today
	Today      bool
}

// handleDigest shows the digest of a day: /digest is today's,
// /digest/YYYY-MM-DD any day's.
func (s *Server) handleDigest(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	today := s.Notify.Day(s.now())
	day := today
	if v := chiParam(r, "day"); v != "" {
		if day, err = s.Notify.ParseDay(v); err != nil {
			return err
		}
	}
	d, err := s.Notify.Digest(r.Context(), u, day)
	if err != nil {
		return err
	}
	view, err := s.Render.DigestPage(d)
	if err != nil {
		return err
	}
	p := &digestPage{DigestView: view, Today: day.Equal(today),
		Prev: s.Render.Path("/digest/" + day.AddDate(0, 0, -1).Format(time.DateOnly))}
	if day.Before(today) {
		p.Next = s.Render.Path("/digest/" + day.AddDate(0, 0, 1).Format(time.DateOnly))
	}
	return s.renderPage(w, r, http.StatusOK, "digest", "digest", view.Title, p)
}
