package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/changedigest/changedigest"
)

// HubPath is where the WebSub hub takes subscription requests.
const HubPath = "/websub"

// handleHub takes a WebSub subscriber's request (a form POST with
// hub.mode, hub.topic, hub.callback and the optional hub.lease_seconds
// and hub.secret): 202 Accepted when it will verify the intent, 4xx or
// 503 with a plain-text reason otherwise, and a Retry-After on 429 and
// 503. Requests are limited per address and per feed (HubPerAddress,
// HubPerFeed); unknown feed tokens count against the client as the
// feeds do.
func (s *Server) handleHub(w http.ResponseWriter, r *http.Request) {
	if err := s.hubRequest(r); err != nil {
		err = userError(err)
		status := statusFor(err)
		if status == http.StatusInternalServerError {
			s.Logger.Error("websub request failed", "err", err, "request_id", reqID(r))
		}
		if st := retryAfterOf(err); st > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(st))
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(changedigest.ErrorMessage(err) + "\n"))
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) hubRequest(r *http.Request) error {
	if s.Hub == nil {
		return changedigest.Errorf(changedigest.ENOTFOUND, "this service runs no WebSub hub")
	}
	now := s.now()
	if d := s.hubAddrs.Take(addrKey(clientIP(r)), now); d > 0 {
		return rateLimitedFor(d, "too many WebSub requests from your address")
	}
	if err := r.ParseForm(); err != nil {
		return changedigest.Errorf(changedigest.EINVALID, "the request is not a form: %v", err)
	}
	topic := r.PostFormValue("hub.topic")
	if t, err := s.Hub.ParseTopic(topic); err == nil {
		if d := s.hubFeeds.Take(t.Token, now); d > 0 {
			return rateLimitedFor(d, "too many WebSub requests for this feed")
		}
	}
	lease := 0
	if v := strings.TrimSpace(r.PostFormValue("hub.lease_seconds")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return changedigest.Errorf(changedigest.EINVALID, "hub.lease_seconds %s is not a whole number", strconv.Quote(v))
		}
		lease = n
	}
	err := s.Hub.Request(r.Context(), r.PostFormValue("hub.mode"), topic,
		r.PostFormValue("hub.callback"), lease, r.PostFormValue("hub.secret"))
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		err = s.tokenFailed(r, err)
	}
	return err
}
