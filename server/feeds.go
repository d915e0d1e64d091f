package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
)

// feedHandler serves one feed of the user named by the feed token.
type feedHandler func(r *http.Request, u *changedigest.User) (render.FeedInfo, pet.ChangeFilter, error)

// feed adapts a feed handler: token check, events, Atom, conditional GET.
// Errors are short plain-text bodies, which feed readers show as they are.
func (s *Server) feed(fn feedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.serveFeed(w, r, fn); err != nil {
			err = userError(err)
			status := statusFor(err)
			msg := changedigest.ErrorMessage(err)
			if status == http.StatusInternalServerError {
				s.Logger.Error("feed failed", "path", r.URL.Path, "err", err, "request_id", reqID(r))
			}
			if st := retryAfterOf(err); st > 0 {
				w.Header().Set("Retry-After", fmt.Sprint(st))
			}
			http.Error(w, msg, status)
		}
	}
}

func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request, fn feedHandler) error {
	key := "feed:" + clientIP(r)
	if err := s.limiter.check(key); err != nil {
		return err
	}
	u, err := s.Store.UserByFeedToken(r.Context(), chiParam(r, "token"))
	if err != nil {
		if changedigest.ErrorCode(err) == changedigest.ENOTFOUND || changedigest.ErrorCode(err) == changedigest.EINVALID {
			s.limiter.fail(key)
			return changedigest.Errorf(changedigest.ENOTFOUND, "no such feed: check the feed address on your settings page")
		}
		return err
	}
	info, filter, err := fn(r, u)
	if err != nil {
		return err
	}
	filter.UserID = u.ID
	// Versions with nothing to tell (noise, filters) are left out, so read
	// more than the feed shows (Atom keeps the newest MaxEntries).
	filter.Limit = min(1000, 4*s.Render.MaxEntries)
	events, err := s.Notify.Events(r.Context(), filter)
	if err != nil {
		return err
	}
	events = notify.Told(events)
	var buf bytes.Buffer
	if err := s.Render.Atom(&buf, info, events); err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("Content-Type", "application/atom+xml; charset=utf-8")
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, max-age=60")
	if len(events) > 0 {
		h.Set("Last-Modified", events[0].Snapshot.FetchedAt.UTC().Format(http.TimeFormat))
	}
	if match := r.Header.Get("If-None-Match"); match != "" && match == etag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func (s *Server) handleUserFeed(r *http.Request, u *changedigest.User) (render.FeedInfo, pet.ChangeFilter, error) {
	return s.Render.UserFeed(u, s.feedURL(u, "/atom.xml")), pet.ChangeFilter{}, nil
}

func (s *Server) handleWatchFeed(r *http.Request, u *changedigest.User) (render.FeedInfo, pet.ChangeFilter, error) {
	id, err := idParam(r, "id")
	if err != nil {
		return render.FeedInfo{}, pet.ChangeFilter{}, err
	}
	wt, err := s.Store.Watch(r.Context(), u.ID, id)
	if err != nil {
		return render.FeedInfo{}, pet.ChangeFilter{}, err
	}
	return s.Render.WatchFeed(u, wt, s.feedURL(u, fmt.Sprintf("/watches/%d.xml", wt.ID))), pet.ChangeFilter{WatchID: wt.ID}, nil
}

func (s *Server) handleTagFeed(r *http.Request, u *changedigest.User) (render.FeedInfo, pet.ChangeFilter, error) {
	tag, err := tagParam(r)
	if err != nil {
		return render.FeedInfo{}, pet.ChangeFilter{}, err
	}
	return s.Render.TagFeed(u, tag, s.feedURL(u, "/tags/"+pathEscape(tag)+".xml")), pet.ChangeFilter{Tag: tag}, nil
}
