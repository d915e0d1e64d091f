package server

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
)

// clientRoutes are the API of polling clients (changedigest client): a
// client registers with the user's API token, asks for its assignments
// every poll interval (which also tells the server it is online), reports
// changes and leaves.
func (s *Server) clientRoutes(r chi.Router, jsonBody func(http.Handler) http.Handler) {
	r.With(jsonBody).Post("/clients", s.api(s.apiRegisterClient))
	r.Get("/clients/{cid}/assignments", s.api(s.apiAssignments))
	r.With(jsonBody).Post("/clients/{cid}/reports", s.api(s.apiClientReport))
	r.Delete("/clients/{cid}", s.api(s.apiLeaveClient))
}

func (s *Server) clients() (*agent.Coordinator, error) {
	if s.Clients == nil {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "polling clients are not enabled on this server")
	}
	return s.Clients, nil
}

type clientInfo struct {
	ID   int64  `json:"id"`
	Poll string `json:"poll"`
}

func (s *Server) apiRegisterClient(w http.ResponseWriter, r *http.Request) error {
	c, err := s.clients()
	if err != nil {
		return err
	}
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	id, err := c.Register(u.ID, in.Name, clientIP(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, clientInfo{ID: id, Poll: c.Poll.String()})
}

type apiAssignments struct {
	Poll        string             `json:"poll"`
	Now         time.Time          `json:"now"`
	Assignments []agent.Assignment `json:"assignments"`
}

func (s *Server) apiAssignments(w http.ResponseWriter, r *http.Request) error {
	c, err := s.clients()
	if err != nil {
		return err
	}
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	id, err := idParam(r, "cid")
	if err != nil {
		return err
	}
	as, err := c.Assignments(r.Context(), u.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiAssignments{Poll: c.Poll.String(), Now: s.now(), Assignments: as})
}

func (s *Server) apiClientReport(w http.ResponseWriter, r *http.Request) error {
	c, err := s.clients()
	if err != nil {
		return err
	}
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	id, err := idParam(r, "cid")
	if err != nil {
		return err
	}
	var in struct {
		WatchID int64 `json:"watch_id"`
		Version int   `json:"version"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if in.WatchID <= 0 {
		return changedigest.Errorf(changedigest.EINVALID, "watch_id is missing")
	}
	if err := c.Report(r.Context(), u.ID, id, in.WatchID, in.Version); err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, map[string]string{"status": "queued"})
}

func (s *Server) apiLeaveClient(w http.ResponseWriter, r *http.Request) error {
	c, err := s.clients()
	if err != nil {
		return err
	}
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	id, err := idParam(r, "cid")
	if err != nil {
		return err
	}
	if err := c.Leave(u.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
