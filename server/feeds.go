package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
)

// feedHandler serves one feed of the user named by the feed token.
type feedHandler func(r *http.Request, u *changedigest.User) (render.FeedInfo, pet.ChangeFilter, error)

// Feed formats: the Atom feed's address ends in .xml (atom.xml for a
// user's feed); the same feed as RSS 2.0 ends in .rss (rss.xml) and as
// JSON Feed 1.1 in .json (feed.json).
const (
	formatAtom = "atom"
	formatRSS  = "rss"
	formatJSON = "json"
)

// feedURLs sets the RSS, JSON Feed and hub addresses of a feed from its
// Atom address.
func (s *Server) feedURLs(info *render.FeedInfo) {
	info.RSSURL, info.JSONURL = render.AlternateURLs(info.SelfURL)
	if s.Hub != nil {
		info.HubURL = s.Hub.URL
	}
}

// feed adapts a feed handler: token check, events, Atom, conditional GET.
// Errors are short plain-text bodies, which feed readers show as they are.
func (s *Server) feed(fn feedHandler) http.HandlerFunc { return s.feedAs(formatAtom, fn) }

// feedAs is feed in another format.
func (s *Server) feedAs(format string, fn feedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.serveFeed(w, r, format, fn); err != nil {
			err = userError(err)
			status := statusFor(err)
			msg := changedigest.ErrorMessage(err)
			if status == http.StatusInternalServerError {
				s.Logger.Error("feed failed", "path", logPath(r), "err", clipErr(err), "request_id", reqID(r))
			}
			if st := retryAfterOf(err); st > 0 {
				w.Header().Set("Retry-After", fmt.Sprint(st))
			}
			http.Error(w, msg, status)
		}
	}
}

func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request, format string, fn feedHandler) error {
	u, err := s.Store.UserByFeedToken(r.Context(), chiParam(r, "token"))
	if err != nil {
		if changedigest.ErrorCode(err) == changedigest.ENOTFOUND || changedigest.ErrorCode(err) == changedigest.EINVALID {
			return s.tokenFailed(r, changedigest.Errorf(changedigest.ENOTFOUND, "no such feed: check the feed address on your settings page"))
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
	s.feedURLs(&info)
	events = notify.Told(events)
	buf := feedBuffers.Get().(*bytes.Buffer)
	defer putFeedBuffer(buf)
	buf.Reset()
	ctype := "application/atom+xml; charset=utf-8"
	switch format {
	case formatRSS:
		err = s.Render.RSS(buf, info, events)
		ctype = "application/rss+xml; charset=utf-8"
	case formatJSON:
		err = s.Render.JSONFeed(buf, info, events)
		ctype = "application/feed+json; charset=utf-8"
	default:
		err = s.Render.Atom(buf, info, events)
	}
	if err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("Content-Type", ctype)
	if info.HubURL != "" {
		// WebSub discovery by HTTP headers, for any content type.
		self := info.SelfURL
		switch format {
		case formatRSS:
			self = info.RSSURL
		case formatJSON:
			self = info.JSONURL
		}
		h.Add("Link", "<"+info.HubURL+`>; rel="hub"`)
		h.Add("Link", "<"+self+`>; rel="self"`)
	}
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

// feedBuffers holds the buffers feeds are rendered into. A feed of a
// hundred entries runs to megabytes, and a fresh buffer grew to it by
// doubling at every request: three quarters of the bytes a feed request
// allocated.
var feedBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledFeed is the largest buffer kept for the next feed.
const maxPooledFeed = 16 << 20

func putFeedBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledFeed {
		feedBuffers.Put(b)
	}
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
