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
// and hub.secret): 202 Accepted when it will verify the intent, 4xx with
// a plain-text reason otherwise. Unknown feed tokens count against the
// client as the feeds do.
func (s *Server) handleHub(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(msg + "\n"))
	}
	if s.Hub == nil {
		fail(http.StatusNotFound, "this service runs no WebSub hub")
		return
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "the request is not a form: "+err.Error())
		return
	}
	lease := 0
	if v := strings.TrimSpace(r.PostFormValue("hub.lease_seconds")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fail(http.StatusBadRequest, "hub.lease_seconds "+strconv.Quote(v)+" is not a whole number")
			return
		}
		lease = n
	}
	err := s.Hub.Request(r.Context(), r.PostFormValue("hub.mode"), r.PostFormValue("hub.topic"),
		r.PostFormValue("hub.callback"), lease, r.PostFormValue("hub.secret"))
	if err != nil {
		err = userError(err)
		if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
			err = s.tokenFailed(r, err)
		}
		status := statusFor(err)
		if status == http.StatusInternalServerError {
			s.Logger.Error("websub request failed", "err", err, "request_id", reqID(r))
		}
		fail(status, changedigest.ErrorMessage(err))
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
