package server

import (
	"bytes"
	"fmt"
	"github.com/changedigest/changedigest/metrics"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/changedigest/changedigest"
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

func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request, format string, fn feedHandler) (err error) {
	status := http.StatusOK
	defer func() {
		if err != nil {
			status = statusFor(err)
			// Nothing is written yet: the error gets its own status and
			// none of the feed's cache headers.
			h := w.Header()
			for _, k := range []string{"ETag", "Cache-Control", "Last-Modified", "Link", "Content-Encoding"} {
				h.Del(k)
			}
		}
		metrics.FeedRequests.With(format, strconv.Itoa(status)).Inc()
	}()
	u, err := s.Store.UserByFeedToken(r.Context(), chiParam(r, "token"))
	if err != nil {
		if changedigest.ErrorCode(err) == changedigest.ENOTFOUND || changedigest.ErrorCode(err) == changedigest.EINVALID {
			return s.tokenFailed(r, changedigest.Errorf(changedigest.ENOTFOUND, "no such feed: check the feed address on your settings page"))
		}
		return err
	}
	if u.Disabled {
		return changedigest.Errorf(changedigest.EFORBIDDEN, "the account of this feed is disabled")
	}
	info, filter, err := fn(r, u)
	if err != nil {
		return err
	}
	filter.UserID = u.ID
	// Versions with nothing to tell (noise, filters) are left out, so read
	// more than the feed shows (Atom keeps the newest MaxEntries).
	filter.Limit = min(1000, 4*s.Render.MaxEntries)
	events, err := s.Notify.FeedEvents(r.Context(), filter)
	if err != nil {
		return err
	}
	s.feedURLs(&info)
	ctype, write, self := "application/atom+xml; charset=utf-8", s.Render.Atom, info.SelfURL
	switch format {
	case formatRSS:
		ctype, write, self = "application/rss+xml; charset=utf-8", s.Render.RSS, info.RSSURL
	case formatJSON:
		ctype, write, self = "application/feed+json; charset=utf-8", s.Render.JSONFeed, info.JSONURL
	}
	// The tag comes from what the feed is made of, so a feed reader's
	// conditional request (most of them: nothing new since its last look)
	// is answered without rendering the feed.
	etag, err := s.Render.FeedTag(format, info, events)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	if info.HubURL != "" {
		// WebSub discovery by HTTP headers, for any content type.
		h.Add("Link", "<"+info.HubURL+`>; rel="hub"`)
		h.Add("Link", "<"+self+`>; rel="self"`)
	}
	h.Set("ETag", etag)
	gzipOK := acceptsGzip(r)
	if gzipOK {
		weakETag(h) // the tag of the compressed feed, 304 or not
		addVary(h)
	}
	h.Set("Cache-Control", "private, max-age=60")
	if len(events) > 0 {
		h.Set("Last-Modified", events[0].Snapshot.FetchedAt.UTC().Format(http.TimeFormat))
	}
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		status = http.StatusNotModified
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	buf := feedBuffers.Get().(*bytes.Buffer)
	defer putFeedBuffer(buf)
	render := func() error {
		buf.Reset()
		if err := write(buf, info, events); err != nil {
			return err // (its headers are taken off above)
		}
		return nil
	}
	if gzipOK {
		// Compressed once per ETag (see compress).
		gz, err := s.feedGzip.Do(etag, func() ([]byte, int, error) {
			if err := render(); err != nil {
				return nil, 0, err
			}
			b := gzipBytes(buf.Bytes())
			return b, len(b) + 64, nil
		})
		if err != nil {
			return err
		}
		h.Set("Content-Encoding", "gzip")
		_, err = w.Write(gz)
		return err
	}
	if err := render(); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// feedGzipBytes bounds the memory of the compressed feeds kept.
const feedGzipBytes = 32 << 20

// etagMatches reports whether an If-None-Match header names etag: "*",
// or a list of tags, weak ones compared weakly (RFC 9110, 13.1.2).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
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
