package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
)

// agentRoutes are the page agent's public routes: pages on other sites
// load the agent script and post reports, without a login. They have
// limits of their own (the agent manager's traffic controller), apart
// from those of users' pages, feeds and API.
// Agent is the page agent as the server uses it: an *agent.Manager, or
// on a cluster node one that hands each watch's requests to the node
// serving the watch.
type Agent interface {
	ScriptEncoded(ctx context.Context, key string, gzipOK bool) (script []byte, gzipped bool, err error)
	Report(ctx context.Context, in agent.ReportIn) error
	Stats(id int64) agent.Stats
	Forget(id int64)
}

func (s *Server) agentRoutes(r chi.Router) {
	r.Get("/agent.js", s.handleAgentScript)
	r.Post("/agent/report", s.handleAgentReport)
}

// handleAgentScript answers with the digester or the void agent, the
// digester gzip-encoded for clients that take it (every browser). Errors
// are sent as a script comment with their status, so a page embedding a
// stale snippet gets a readable answer and no broken script.
func (s *Server) handleAgentScript(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Content-Type"] = agentScriptType
	h["Cache-Control"] = noStore
	h["Cross-Origin-Resource-Policy"] = crossOrigin
	h["Vary"] = varyEncoding
	if s.Agent == nil {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("/* changedigest: the page agent is not enabled on this server */\n"))
		return
	}
	ctx := agent.WithClient(r.Context(), clientIP(r))
	script, gzipped, err := s.Agent.ScriptEncoded(ctx, r.URL.Query().Get("k"), acceptsGzip(r))
	if err != nil {
		err = userError(err)
		w.WriteHeader(statusFor(err))
		msg := changedigest.ErrorMessage(err)
		if statusFor(err) == http.StatusInternalServerError {
			s.Logger.Error("agent request failed", "err", err, "request_id", reqID(r))
			msg = "internal error"
		}
		w.Write([]byte("/* changedigest: " + strings.ReplaceAll(msg, "*/", "* /") + " */\n"))
		return
	}
	if gzipped {
		h["Content-Encoding"] = gzipEncoding
	}
	h["Content-Length"] = []string{strconv.Itoa(len(script))}
	w.Write(script)
}

// The agent script's fixed headers, shared by every answer (header
// values are not changed once set).
var (
	agentScriptType = []string{"text/javascript; charset=utf-8"}
	noStore         = []string{"no-store"}
	crossOrigin     = []string{"cross-origin"}
	varyEncoding    = []string{"Accept-Encoding"}
	gzipEncoding    = []string{"gzip"}
)

// acceptsGzip reports whether r's Accept-Encoding takes gzip: listed
// without q=0, or not listed and "*" is, without q=0.
func acceptsGzip(r *http.Request) bool {
	gzip, star := -1, -1 // -1 not listed, 0 refused, 1 accepted
	for _, v := range r.Header["Accept-Encoding"] {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			ok := 1
			if q := strings.ReplaceAll(strings.ToLower(params), " ", ""); strings.HasPrefix(q, "q=0") && strings.Trim(q[3:], ".0") == "" {
				ok = 0
			}
			switch coding = strings.TrimSpace(coding); {
			case strings.EqualFold(coding, "gzip"):
				gzip = ok
			case coding == "*":
				star = ok
			}
		}
	}
	return gzip == 1 || gzip == -1 && star == 1
}

// handleAgentReport takes a digester's report (form fields t, u and s)
// and answers 202 at once; the comparison runs behind the queue.
func (s *Server) handleAgentReport(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cache-Control", "no-store")
	fail := func(err error) {
		err = userError(err)
		status := statusFor(err)
		if status == http.StatusInternalServerError {
			s.Logger.Error("agent report failed", "err", err, "request_id", reqID(r))
		}
		http.Error(w, changedigest.ErrorMessage(err), status)
	}
	if s.Agent == nil {
		fail(changedigest.Errorf(changedigest.ENOTFOUND, "the page agent is not enabled on this server"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxReport)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(changedigest.Errorf(changedigest.ETOOLARGE, "a report is at most %d bytes", maxReport))
			return
		}
		fail(changedigest.Errorf(changedigest.EINVALID, "the report is not a form: %v", err))
		return
	}
	err := s.Agent.Report(r.Context(), agent.ReportIn{
		Token: r.PostForm.Get("t"), URL: r.PostForm.Get("u"), Summary: r.PostForm.Get("s"),
		Origin: r.Header.Get("Origin"), Addr: clientIP(r),
	})
	if err != nil {
		fail(err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// maxReport bounds a report's body: a token, a page URL and a summary.
const maxReport = 8 << 10

// agentView is the page agent's part of a watch's page and API answer.
type agentView struct {
	Enabled   bool                     `json:"enabled"`
	Key       string                   `json:"key,omitempty"`
	Snippet   string                   `json:"snippet,omitempty"`
	Threshold string                   `json:"threshold"`
	Stats     agent.Stats              `json:"stats"`
	Clients   []agent.Slot             `json:"clients"`
	Detected  []changedigest.Detection `json:"detections"`
}

// Refusals tells the refused reports by reason, the empty string for none.
func (v *agentView) Refusals() string {
	var parts []string
	for _, r := range []struct {
		n    int64
		what string
	}{
		{v.Stats.RefusedToken, "with an expired or used token"},
		{v.Stats.RefusedPage, "for another page or site"},
		{v.Stats.RefusedInvalid, "malformed"},
		{v.Stats.RefusedRate, "over a rate limit"},
		{v.Stats.RefusedIgnored, "from reporters ignored after refuted reports"},
		{v.Stats.RefusedBusy, "while too many waited"},
	} {
		if r.n > 0 {
			parts = append(parts, strconv.FormatInt(r.n, 10)+" "+r.what)
		}
	}
	return strings.Join(parts, ", ")
}

// VolatileNote says which parts of the page's summary the agent learned
// differ on every view, and what that means; the empty string for none.
func (v *agentView) VolatileNote() string {
	if len(v.Stats.Volatile) == 0 {
		return ""
	}
	var names []string
	for _, p := range v.Stats.Volatile {
		if p == "main" {
			p = "main body"
		}
		names = append(names, p)
	}
	what := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		what = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	verb := "differs"
	if len(names) > 1 {
		verb = "differ"
	}
	return "The page's " + what + " " + verb + " in browsers on every view (its scripts change it), so reports that differ from the stored version only there are not verified, and count against no one: changes there are found by the schedule. Views that show it as stored again, a few in a row, make it trusted again."
}

func (s *Server) agentViewOf(wt *changedigest.Watch) *agentView {
	v := &agentView{Enabled: wt.AgentKey != "", Key: wt.AgentKey, Threshold: agent.DefaultThreshold.String(),
		Detected: wt.Detections, Clients: []agent.Slot{}}
	if v.Detected == nil {
		v.Detected = []changedigest.Detection{}
	}
	if wt.AgentThreshold > 0 {
		v.Threshold = wt.AgentThreshold.String()
	}
	if v.Enabled {
		v.Snippet = agent.Snippet(s.Render.URL("/agent.js"), wt.AgentKey)
	}
	if s.Agent != nil {
		v.Stats = s.Agent.Stats(wt.ID)
	}
	if v.Stats.Volatile == nil {
		// What the manager learned, as kept, before it read the watch.
		v.Stats.Volatile = wt.AgentVolatile
	}
	if s.Clients != nil {
		v.Clients = s.Clients.Slots(wt)
	}
	return v
}

// agentInput is what an owner sets: the agent on or off, its threshold.
type agentInput struct {
	Enabled   *bool   `json:"enabled"`
	Threshold *string `json:"threshold"`
	// NewKey replaces the key (old snippets stop working).
	NewKey bool `json:"new_key"`
}

// setAgent applies in to the user's watch.
func (s *Server) setAgent(r *http.Request, in agentInput) (*changedigest.Watch, error) {
	u, err := requestUser(r)
	if err != nil {
		return nil, err
	}
	id, err := idParam(r, "id")
	if err != nil {
		return nil, err
	}
	var threshold time.Duration
	if in.Threshold != nil && strings.TrimSpace(*in.Threshold) != "" {
		threshold, err = parseThreshold(*in.Threshold)
		if err != nil {
			return nil, err
		}
	}
	wt, err := s.Store.UpdateWatch(r.Context(), u.ID, id, func(w *changedigest.Watch) error {
		if in.Enabled != nil {
			if !*in.Enabled {
				w.AgentKey = ""
			} else if w.AgentKey == "" {
				w.AgentKey = agent.NewKey(w.ID)
			}
		}
		if in.NewKey && w.AgentKey != "" {
			w.AgentKey = agent.NewKey(w.ID)
		}
		if in.Threshold != nil {
			w.AgentThreshold = threshold
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.Agent != nil {
		s.Agent.Forget(wt.ID)
	}
	return wt, nil
}

// parseThreshold reads a threshold as a Go duration ("10m") or minutes ("10").
func parseThreshold(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, changedigest.Errorf(changedigest.EINVALID, "threshold %q is not a duration such as 10m or a number of minutes", v)
		}
		d = time.Duration(n) * time.Minute
	}
	if d < 10*time.Second || d > 7*24*time.Hour {
		return 0, changedigest.Errorf(changedigest.EINVALID, "threshold %s is out of range (10s to 7 days)", d)
	}
	return d, nil
}

func (s *Server) handleSetAgent(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return changedigest.Errorf(changedigest.EINVALID, "bad form: %v", err)
	}
	var in agentInput
	switch r.PostForm.Get("action") {
	case "enable":
		on := true
		in.Enabled = &on
	case "disable":
		off := false
		in.Enabled = &off
	case "new-key":
		in.NewKey = true
	case "", "save":
	default:
		return changedigest.Errorf(changedigest.EINVALID, "unknown action %q", r.PostForm.Get("action"))
	}
	if _, ok := r.PostForm["threshold"]; ok {
		t := r.PostForm.Get("threshold")
		in.Threshold = &t
	}
	wt, err := s.setAgent(r, in)
	if err != nil {
		return err
	}
	if wt.AgentKey != "" {
		s.setFlash(w, "info", "The page agent is on: put the snippet below in the page.")
	} else {
		s.setFlash(w, "info", "The page agent is off.")
	}
	return s.redirect(w, r, "/watches/"+strconv.FormatInt(wt.ID, 10))
}

func (s *Server) apiGetAgent(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.agentViewOf(wt))
}

func (s *Server) apiPutAgent(w http.ResponseWriter, r *http.Request) error {
	var in agentInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	wt, err := s.setAgent(r, in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.agentViewOf(wt))
}
