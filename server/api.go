package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/profile"
	"github.com/changedigest/changedigest/render"
)

// apiRoutes registers the JSON API (mounted at /api/v1). Every route needs
// an API token ("Authorization: Bearer TOKEN"); every handler answers
// JSON, errors as {"error":{"code","message"}}, and sees only the token
// owner's data: another user's ids are not found. Request bodies are JSON
// (Content-Type application/json, no unknown fields) except the FOAF
// document of PUT /profile and the OPML document of POST /opml; another
// Content-Type gets 415.
//
//	GET    /watches[?tag=&sort=&limit=&offset=]   a page of the watches (100, at most 1000)
//	POST   /watches                            create one (201, Location)
//	GET    /watches/{id}                       one watch
//	PATCH  /watches/{id}                       change the fields sent
//	DELETE /watches/{id}                       delete it and its history (204)
//	POST   /watches/{id}/check                 check now, say what came of it
//	GET    /watches/{id}/versions[?before=&limit=]   stored versions, newest first
//	GET    /watches/{id}/versions/{seq}        one version: segments, changes, matches
//	GET    /watches/{id}/versions/{seq}/body   the stored body, as a download
//	GET    /watches/{id}/versions/{seq}/screenshot.png, overlay.png
//	                                           a browser-rendered version's screenshot; the pixels that differ from the version before
//	GET    /watches/{id}/diff[?from=&to=]      the `changedigest diff --json` contract
//	GET    /changes[?since=&until=&watch=&tag=&type=&limit=]   change events with profile matches
//	GET    /profile                            profile and WordNet expansions
//	PUT    /profile                            rebuild it from a FOAF document
//	POST   /profile/terms                      add a term by hand
//	DELETE /profile/terms/{term}               remove a term (204)
//	GET    /search?q=[&since=&until=&type=&watch=&limit=&offset=]   full-text search of the history
//	GET    /opml[?tag=]                        the feeds as OPML 2.0
//	POST   /opml                               import an OPML document
//	GET    /channels                           notification channels (secrets as hints)
//	POST   /channels                           add one (201, Location)
//	GET, PATCH, DELETE /channels/{cid}         one channel; change the fields sent; remove it (204)
//	POST   /channels/{cid}/test                send a test message now: {ok, status, error}
//	GET    /channels/{cid}/deliveries[?state=&limit=]   its deliveries, newest first
//	POST   /deliveries/{did}/redeliver         send a dead or delivered notification again
func (s *Server) apiRoutes(r chi.Router) {
	r.Use(s.requireToken)
	r.NotFound(s.api(func(w http.ResponseWriter, r *http.Request) error {
		return changedigest.Errorf(changedigest.ENOTFOUND, "there is no API endpoint at %s", clip(r.URL.Path))
	}))
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed, apiErrorBody(changedigest.EINVALID,
			fmt.Sprintf("%s is not allowed on %s", r.Method, clip(r.URL.Path))))
	})
	jsonBody := requireType("a JSON object", "application/json")

	r.Get("/watches", s.api(s.apiListWatches))
	r.With(jsonBody).Post("/watches", s.api(s.apiCreateWatch))
	r.Route("/watches/{id}", func(r chi.Router) {
		r.Get("/", s.api(s.apiGetWatch))
		r.With(jsonBody).Patch("/", s.api(s.apiUpdateWatch))
		r.Delete("/", s.api(s.apiDeleteWatch))
		r.Post("/check", s.api(s.apiCheckWatch))
		r.Get("/versions", s.api(s.apiVersions))
		r.Get("/versions/{seq}", s.api(s.apiVersion))
		r.Get("/versions/{seq}/body", s.api(s.apiVersionBody))
		r.Get("/versions/{seq}/screenshot.png", s.api(s.handleScreenshot))
		r.Get("/versions/{seq}/overlay.png", s.api(s.handleOverlay))
		r.Get("/diff", s.api(s.apiDiff))
		r.Get("/agent", s.api(s.apiGetAgent))
		r.With(jsonBody).Put("/agent", s.api(s.apiPutAgent))
	})
	r.Get("/changes", s.api(s.apiChanges))
	s.clientRoutes(r, jsonBody)
	r.Get("/profile", s.api(s.apiGetProfile))
	r.With(requireType("a FOAF document", foafTypes...)).Put("/profile", s.api(s.apiPutProfile))
	r.With(jsonBody).Post("/profile/terms", s.api(s.apiAddTerm))
	r.Delete("/profile/terms/{term}", s.api(s.apiRemoveTerm))
	r.With(jsonBody).Post("/profile/senses", s.api(s.apiChooseSense))
	r.Get("/search", s.api(s.apiSearch))
	r.Get("/opml", s.api(s.handleExportOPML))
	r.With(requireType("an OPML document", opmlTypes...)).Post("/opml", s.api(s.apiImportOPML))
	r.Get("/channels", s.api(s.apiListChannels))
	r.With(jsonBody).Post("/channels", s.api(s.apiCreateChannel))
	r.Route("/channels/{cid}", func(r chi.Router) {
		r.Get("/", s.api(s.apiGetChannel))
		r.With(jsonBody).Patch("/", s.api(s.apiUpdateChannel))
		r.Delete("/", s.api(s.apiDeleteChannel))
		r.Post("/test", s.api(s.apiTestChannel))
		r.Get("/deliveries", s.api(s.apiChannelDeliveries))
	})
	r.Post("/deliveries/{did}/redeliver", s.api(s.apiRedeliver))
}

// foafTypes are the media types PUT /profile takes: the RDF syntaxes the
// profile package reads.
var foafTypes = []string{"text/turtle", "application/rdf+xml", "application/n-triples",
	"application/x-turtle", "text/n3", "application/xml", "text/xml"}

func apiErrorBody(code, msg string) map[string]any {
	return map[string]any{"error": map[string]string{"code": code, "message": msg}}
}

// requireType refuses a request whose body is not of one of the media
// types with 415 Unsupported Media Type, naming what to send.
func requireType(what string, types ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ct := r.Header.Get("Content-Type")
			mt, _, err := mime.ParseMediaType(ct)
			if err == nil {
				for _, t := range types {
					if strings.EqualFold(mt, t) {
						next.ServeHTTP(w, r)
						return
					}
				}
			}
			if ct == "" {
				ct = "none"
			}
			writeJSON(w, http.StatusUnsupportedMediaType, apiErrorBody(changedigest.EINVALID,
				fmt.Sprintf("send %s with Content-Type %s (the request's Content-Type is %s)", what, strings.Join(types, ", "), ct)))
		})
	}
}

// decodeJSON reads the request body into v: one JSON object, no unknown
// fields. Errors: EINVALID naming the bad field or the place of a syntax
// error; the body limit's error (ETOOLARGE at the edge).
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return changedigest.Errorf(changedigest.EINVALID, "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return changedigest.Errorf(changedigest.EINVALID, "the JSON body ends too early")
	case errors.As(err, &se):
		return changedigest.Errorf(changedigest.EINVALID, "the JSON body is not valid at byte %d: %v", se.Offset, se)
	case errors.As(err, &te) && te.Field != "":
		return changedigest.Errorf(changedigest.EINVALID, "field %q: a JSON %s is not a %s", te.Field, te.Value, jsonKind(te.Type.String()))
	case errors.As(err, &te):
		return changedigest.Errorf(changedigest.EINVALID, "the body must be a JSON object, not a JSON %s", te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return changedigest.Errorf(changedigest.EINVALID, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return changedigest.Errorf(changedigest.EINVALID, "the JSON body could not be read: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return changedigest.Errorf(changedigest.EINVALID, "the JSON body holds more than one value")
	}
	return nil
}

// jsonKind names a Go type the way a JSON user thinks of it.
func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "list of " + jsonKind(goType[2:]) + "s"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "whole number"
	case strings.HasPrefix(goType, "float"):
		return "number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "string"
	}
	return "value of the expected kind"
}

// readBody reads a whole non-JSON request body (FOAF, OPML). Errors:
// EINVALID for an empty body; the body limit's error.
func readBody(r *http.Request, what string) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, changedigest.Errorf(changedigest.EINVALID, "the %s could not be read: %v", what, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, changedigest.Errorf(changedigest.EINVALID, "the request body is empty; send the %s", what)
	}
	return data, nil
}

// queryInt reads an optional whole number in [lo, hi] from the query; def when absent.
func queryInt(q url.Values, name string, def, lo, hi int) (int, error) {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, changedigest.Errorf(changedigest.EINVALID, "%s: %q is not a whole number from %d to %d", name, clip(v), lo, hi)
	}
	return n, nil
}

// ---- watches ----

// apiWatch is a watch as the API shows it.
type apiWatch struct {
	ID    int64             `json:"id"`
	URL   string            `json:"url"`
	Title string            `json:"title"`
	Kind  changedigest.Kind `json:"kind"`
	Zone  string            `json:"zone"`
	// Category sets the first revisit interval; Every, when set, overrides
	// it and the estimated change rate ("" otherwise).
	Category     changedigest.Category `json:"category"`
	Every        string                `json:"every"`
	Tags         []string              `json:"tags"`
	Paused       bool                  `json:"paused"`
	KeepVersions int                   `json:"keep_versions"`
	KeepDays     int                   `json:"keep_days"`
	// Filters of what is told (changedigest.Notable).
	IgnoreText      []string                  `json:"ignore_text"`
	TriggerText     []string                  `json:"trigger_text"`
	MinSignificance float64                   `json:"min_significance"`
	NotifyTypes     []changedigest.ChangeType `json:"notify_types"`
	OnlyInterests   bool                      `json:"only_interests"`
	ShowNoise       bool                      `json:"show_noise"`
	// ValueSelector and When: the value read from each version ("" with
	// a condition: the page's ld+json offer) and the condition a version
	// is told under ("below 20", "drop 10%", "in stock"; "" tells all).
	// Each version's value is in its "value" (GET …/versions).
	ValueSelector string    `json:"value_selector"`
	When          string    `json:"when"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	NextCheck     time.Time `json:"next_check"`
	LastCheck     time.Time `json:"last_check,omitzero"`
	LastChange    time.Time `json:"last_change,omitzero"`
	LastError     string    `json:"last_error,omitempty"`
	LastErrorAt   time.Time `json:"last_error_at,omitzero"`
	ErrorCount    int       `json:"error_count"`
	Checks        int       `json:"checks"`
	ChangeChecks  int       `json:"change_checks"`
	// FeedURL is the watch's Atom feed, for feed readers.
	FeedURL string `json:"feed_url"`
	// Render is "browser" for a page rendered in headless Chromium, else
	// "fetch"; WaitFor the selector the rendered page must show.
	Render  string `json:"render"`
	WaitFor string `json:"wait_for,omitempty"`
	// Steps run on the rendered page before it is read.
	Steps []changedigest.Step `json:"steps,omitempty"`
	// LooksLikeShell: the last fetched version had little visible text
	// and large scripts, so rendering it in a browser would help.
	LooksLikeShell bool `json:"looks_like_shell,omitempty"`
	// FeedItems, for a feed with more items than a version keeps, is
	// how many items it had at the last check; only the newest
	// FeedItemsKept were kept and compared.
	FeedItems     int `json:"feed_items,omitempty"`
	FeedItemsKept int `json:"feed_items_kept,omitempty"`
	// Request options: the method (GET or POST), the POST body, extra
	// headers and cookies, basic auth. Secrets (cookie values, the
	// password, credential headers) are shown only as hints ("••••1a2b").
	Method    string            `json:"method"`
	Body      string            `json:"body,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Cookies   map[string]string `json:"cookies,omitempty"`
	BasicAuth *apiBasicAuth     `json:"basic_auth,omitempty"`
}

// apiBasicAuth is a watch's basic auth in the API: the password is a hint
// when shown, and empty or its hint keeps it when sent.
type apiBasicAuth struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// setRequest fills the request options of a with o's, secrets as hints.
func (a *apiWatch) setRequest(o *changedigest.RequestOptions) {
	a.Method = "GET"
	if o == nil {
		return
	}
	a.Method, a.Body = cmp.Or(o.Method, "GET"), o.Body
	for _, h := range o.Headers {
		if a.Headers == nil {
			a.Headers = map[string]string{}
		}
		a.Headers[h.Name] = cmp.Or(h.Value, h.Secret.Hint)
	}
	for _, c := range o.Cookies {
		if a.Cookies == nil {
			a.Cookies = map[string]string{}
		}
		a.Cookies[c.Name] = c.Value.Hint
	}
	if o.BasicAuth != nil {
		a.BasicAuth = &apiBasicAuth{User: o.BasicAuth.User, Password: o.BasicAuth.Password.Hint}
	}
}

func (s *Server) apiWatchOf(u *changedigest.User, w *changedigest.Watch) apiWatch {
	a := apiWatch{ID: w.ID, URL: w.URL, Title: w.Title, Kind: w.Kind, Zone: w.Zone, Category: w.Category,
		Tags: w.Tags, Paused: w.Paused, KeepVersions: w.KeepVersions, KeepDays: w.KeepDays,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt, NextCheck: w.NextCheck, LastCheck: w.LastCheck,
		LastChange: w.LastChange, LastError: w.LastError, LastErrorAt: w.LastErrorAt, ErrorCount: w.ErrorCount,
		Checks: w.Checks, ChangeChecks: w.ChangeChecks, FeedURL: s.feedURL(u, fmt.Sprintf("/watches/%d.xml", w.ID)),
		IgnoreText: w.IgnoreText, TriggerText: w.TriggerText, MinSignificance: w.MinSignificance,
		NotifyTypes: w.NotifyTypes, OnlyInterests: w.OnlyInterests, ShowNoise: w.ShowNoise,
		ValueSelector: w.ValueSelector, When: w.When,
		Render: cmp.Or(string(w.Render), "fetch"), WaitFor: w.WaitFor, Steps: w.Steps, LooksLikeShell: w.LooksLikeShell,
		FeedItems: w.FeedItems, FeedItemsKept: w.FeedItemsKept}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	if a.IgnoreText == nil {
		a.IgnoreText = []string{}
	}
	if a.TriggerText == nil {
		a.TriggerText = []string{}
	}
	if a.NotifyTypes == nil {
		a.NotifyTypes = changedigest.DefaultNotifyTypes // none named: the default
	}
	if w.Interval > 0 {
		a.Every = formatInterval(w.Interval)
	}
	a.setRequest(w.Request)
	return a
}

// apiWatchInput is the body of POST /watches and PATCH /watches/{id}:
// absent fields are left as they are (or at their defaults).
type apiWatchInput struct {
	URL      *string `json:"url"`
	Title    *string `json:"title"`
	Zone     *string `json:"zone"`
	Category *string `json:"category"`
	// Every is a duration string ("30m", "2h", "1d", "1w") or a number of
	// seconds; "", 0 or null clears it.
	Every        json.RawMessage `json:"every"`
	Tags         *[]string       `json:"tags"`
	Paused       *bool           `json:"paused"`
	KeepVersions *int            `json:"keep_versions"`
	KeepDays     *int            `json:"keep_days"`
	// Filters; notify_types [] or null tells every type.
	IgnoreText      *[]string `json:"ignore_text"`
	TriggerText     *[]string `json:"trigger_text"`
	MinSignificance *float64  `json:"min_significance"`
	NotifyTypes     *[]string `json:"notify_types"`
	OnlyInterests   *bool     `json:"only_interests"`
	ShowNoise       *bool     `json:"show_noise"`
	ValueSelector   *string   `json:"value_selector"`
	When            *string   `json:"when"`
	Render          *string   `json:"render"`
	WaitFor         *string   `json:"wait_for"`
	// Steps replace the watch's steps; [] or null clears them.
	Steps *[]changedigest.Step `json:"steps"`
	// Request options. Headers and cookies ({} or null clears them) and
	// basic_auth (null clears it) replace the watch's; a secret given
	// empty or as its hint keeps the stored one.
	Method    *string         `json:"method"`
	Body      *string         `json:"body"`
	Headers   json.RawMessage `json:"headers"`
	Cookies   json.RawMessage `json:"cookies"`
	BasicAuth json.RawMessage `json:"basic_auth"`
}

// requestLines reads a JSON object of names and values (null: none) into
// lines "name SEP value", sorted by name. Errors: EINVALID naming field
// for a value that is not an object of strings, a name holding sep, or
// a name or value with a line break.
func requestLines(field string, raw json.RawMessage, sep string) (string, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", changedigest.Errorf(changedigest.EINVALID, "%s: give an object of names and string values", field)
	}
	names := slices.Sorted(maps.Keys(m))
	lines := make([]string, 0, len(names))
	for _, n := range names {
		if strings.Contains(n, sep) || strings.TrimSpace(n) == "" {
			return "", changedigest.Errorf(changedigest.EINVALID, "%s: %q is not a name", field, clip(n))
		}
		if strings.ContainsAny(n+m[n], "\r\n") {
			return "", changedigest.Errorf(changedigest.EINVALID, "%s: the value of %s holds a line break", field, clip(n))
		}
		lines = append(lines, n+sep+m[n])
	}
	return strings.Join(lines, "\n"), nil
}

// apply lays the input over w's current values and validates the result
// with the web form's rules; new secrets are sealed with seal.
func (in *apiWatchInput) apply(w *changedigest.Watch, seal changedigest.Sealer) error {
	f := formOf(w)
	if in.Method != nil {
		f.Method = *in.Method
	}
	if in.Body != nil {
		f.Body = *in.Body
	}
	var err error
	if in.Headers != nil {
		if f.Headers, err = requestLines("headers", in.Headers, ":"); err != nil {
			return err
		}
	}
	if in.Cookies != nil {
		if f.Cookies, err = requestLines("cookies", in.Cookies, "="); err != nil {
			return err
		}
	}
	if in.BasicAuth != nil {
		var a *apiBasicAuth
		if err := json.Unmarshal(in.BasicAuth, &a); err != nil {
			return changedigest.Errorf(changedigest.EINVALID, "basic_auth: give an object {\"user\": …, \"password\": …} or null")
		}
		f.AuthUser, f.AuthPassword = "", ""
		if a != nil {
			f.AuthUser, f.AuthPassword = strings.TrimSpace(a.User), a.Password
			if f.AuthUser == "" {
				return changedigest.Errorf(changedigest.EINVALID, "basic_auth: the user name is missing (null removes basic auth)")
			}
		}
	}
	if in.URL != nil {
		f.URL = strings.TrimSpace(*in.URL)
	}
	if in.Title != nil {
		f.Title = strings.TrimSpace(*in.Title)
	}
	if in.Zone != nil {
		f.Zone = strings.TrimSpace(*in.Zone)
	}
	if in.Category != nil {
		f.Category = *in.Category
	}
	if in.Every != nil {
		every, err := parseEvery(in.Every)
		if err != nil {
			return err
		}
		f.Every = every
	}
	if in.Tags != nil {
		f.Tags = strings.Join(*in.Tags, ",")
	}
	if in.Paused != nil {
		f.Paused = *in.Paused
	}
	if in.Render != nil {
		r, err := changedigest.ParseRender(*in.Render)
		if err != nil {
			return err
		}
		f.Browser = r == changedigest.RenderBrowser
	}
	if in.WaitFor != nil {
		f.WaitFor = strings.TrimSpace(*in.WaitFor)
	}
	if in.ValueSelector != nil {
		f.ValueSelector = strings.TrimSpace(*in.ValueSelector)
	}
	if in.When != nil {
		f.When = strings.TrimSpace(*in.When)
	}
	if in.Steps != nil {
		steps := *in.Steps
		for i := range steps {
			if err := steps[i].Validate(); err != nil {
				return changedigest.Errorf(changedigest.EINVALID, "steps[%d]: %s", i, changedigest.ErrorMessage(err))
			}
		}
		f.Steps = stepLines(steps)
	}
	for _, n := range []struct {
		name string
		v    *int
		dst  *string
	}{{"keep_versions", in.KeepVersions, &f.KeepVersions}, {"keep_days", in.KeepDays, &f.KeepDays}} {
		if n.v == nil {
			continue
		}
		if *n.v < 0 {
			return changedigest.Errorf(changedigest.EINVALID, "%s: %d is negative (0 means the default)", n.name, *n.v)
		}
		*n.dst = ""
		if *n.v > 0 {
			*n.dst = strconv.Itoa(*n.v)
		}
	}
	for _, t := range []struct {
		name string
		v    *[]string
		dst  *string
	}{{"ignore_text", in.IgnoreText, &f.IgnoreText}, {"trigger_text", in.TriggerText, &f.TriggerText}} {
		if t.v == nil {
			continue
		}
		for _, x := range *t.v {
			if strings.ContainsAny(x, "\r\n") {
				return changedigest.Errorf(changedigest.EINVALID, "%s: %q spans several lines (give one text per entry)", t.name, x)
			}
		}
		*t.dst = strings.Join(*t.v, "\n")
	}
	if in.MinSignificance != nil {
		f.MinSignificance = strconv.FormatFloat(*in.MinSignificance, 'g', -1, 64)
	}
	if in.NotifyTypes != nil {
		f.Types = nil
		if len(*in.NotifyTypes) > 0 {
			f.Types = *in.NotifyTypes
		}
	}
	if in.OnlyInterests != nil {
		f.OnlyInterests = *in.OnlyInterests
	}
	if in.ShowNoise != nil {
		f.ShowNoise = *in.ShowNoise
	}
	return f.apply(w, seal)
}

// parseEvery reads the "every" field into the form's interval string.
func parseEvery(raw json.RawMessage) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", changedigest.Errorf(changedigest.EINVALID, "every: %s is not a duration", raw)
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		x = strings.TrimSpace(x)
		if x == "" {
			return "", nil
		}
		if _, err := ParseInterval(x); err != nil {
			return "", changedigest.Errorf(changedigest.EINVALID, "every: %q is not a duration such as 30m, 2h, 1d or a number of seconds", x)
		}
		return x, nil
	case json.Number:
		n, err := x.Int64()
		if err != nil || n < 0 || n > int64(100*365*24*time.Hour/time.Second) {
			return "", changedigest.Errorf(changedigest.EINVALID, "every: %s is not a whole number of seconds", x)
		}
		if n == 0 {
			return "", nil
		}
		return formatInterval(time.Duration(n) * time.Second), nil
	}
	return "", changedigest.Errorf(changedigest.EINVALID, "every: %s is not a duration string or a number of seconds", raw)
}

// apiWatchLimit is the default length of a page of GET /watches.
const apiWatchLimit = 100

func (s *Server) apiListWatches(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	tag := ""
	if t := r.URL.Query().Get("tag"); t != "" {
		one, ok := oneTag(t)
		if !ok {
			return changedigest.Errorf(changedigest.EINVALID, "tag: %q is not one tag of at most %d characters", clip(t), changedigest.MaxTagLen)
		}
		tag = one
	}
	q := r.URL.Query()
	order, err := pet.ParseWatchSort(q.Get("sort"))
	if err != nil {
		return err
	}
	limit, err := queryInt(q, "limit", apiWatchLimit, 1, pet.MaxWatchLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(q, "offset", 0, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	page, err := s.Store.WatchPage(r.Context(), u.ID, pet.WatchQuery{Tag: tag, Sort: order, Offset: offset, Limit: limit})
	if err != nil {
		return err
	}
	out := make([]apiWatch, len(page.Watches))
	for i := range page.Watches {
		out[i] = s.apiWatchOf(u, &page.Watches[i])
	}
	body := map[string]any{"watches": out, "total": page.Total, "offset": offset, "limit": page.Limit}
	if next := offset + len(out); next < page.Total {
		body["next_offset"] = next
	}
	return writeJSON(w, http.StatusOK, body)
}

func (s *Server) apiCreateWatch(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	var in apiWatchInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	nw := &changedigest.Watch{UserID: u.ID}
	if err := in.apply(nw, s.Secrets); err != nil {
		return err
	}
	nw.NextCheck = s.now()
	if err := s.Store.CreateWatch(r.Context(), nw); err != nil {
		return err
	}
	w.Header().Set("Location", s.Render.Path(fmt.Sprintf("/api/v1/watches/%d", nw.ID)))
	return writeJSON(w, http.StatusCreated, s.apiWatchOf(u, nw))
}

func (s *Server) apiGetWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	u, _ := requestUser(r)
	return writeJSON(w, http.StatusOK, s.apiWatchOf(u, wt))
}

func (s *Server) apiUpdateWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	u, _ := requestUser(r)
	var in apiWatchInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	nw, err := s.Store.UpdateWatch(r.Context(), u.ID, wt.ID, func(x *changedigest.Watch) error {
		oldURL := x.URL
		if err := in.apply(x, s.Secrets); err != nil {
			return err
		}
		if x.URL != oldURL { // a new address starts a fresh conditional GET
			x.ETag, x.LastModified = "", ""
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.apiWatchOf(u, nw))
}

func (s *Server) apiDeleteWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteWatch(r.Context(), wt.UserID, wt.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// apiCheck is the outcome of POST /watches/{id}/check.
type apiCheck struct {
	// Result is "first version", "changed", "unchanged", "not modified"
	// or "failed" (then Error says why).
	Result   string   `json:"result"`
	Error    string   `json:"error,omitempty"`
	Duration float64  `json:"duration_seconds"`
	Latest   int      `json:"latest_version,omitempty"`
	Watch    apiWatch `json:"watch"`
}

func (s *Server) apiCheckWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	u, _ := requestUser(r)
	if s.Checker == nil {
		return changedigest.Errorf(changedigest.EUNAVAILABLE, "checks are not running in this server")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.RequestTimeout-5*time.Second)
	defer cancel()
	var rep *crawl.Report
	sum, err := s.Checker.CheckNow(ctx, func(x crawl.Report) { rep = &x }, wt)
	if err != nil {
		return err
	}
	if rep == nil {
		if sum.Skipped > 0 {
			return changedigest.Errorf(changedigest.ECONFLICT, "%s is being checked right now; try again in a moment", wt.Name())
		}
		return fmt.Errorf("server: the check of %s reported nothing", wt)
	}
	out := apiCheck{Result: rep.Outcome.Result.String(), Duration: rep.Duration.Seconds()}
	if rep.Err != nil {
		out.Result, out.Error = "failed", rep.Err.Error()
	}
	// The check saved the schedule state: show the watch as stored.
	cur, err := s.Store.Watch(r.Context(), u.ID, wt.ID)
	if err != nil {
		return err
	}
	out.Watch = s.apiWatchOf(u, cur)
	info, err := s.Store.Track(r.Context(), wt.ID)
	if err != nil {
		return err
	}
	out.Latest = info.Latest
	return writeJSON(w, http.StatusOK, out)
}

// ---- versions ----

// apiVersionRow is a version in a list.
type apiVersionRow struct {
	Seq         int                       `json:"seq"`
	FetchedAt   time.Time                 `json:"fetched_at"`
	Status      int                       `json:"status"`
	ContentType string                    `json:"content_type,omitempty"`
	FinalURL    string                    `json:"final_url,omitempty"`
	Kind        changedigest.Kind         `json:"kind"`
	Title       string                    `json:"title,omitempty"`
	Size        int                       `json:"size"`
	BodyHash    string                    `json:"body_hash"`
	Similarity  float64                   `json:"similarity"`
	Segments    int                       `json:"segments"`
	Changes     int                       `json:"changes"`
	Types       []changedigest.ChangeType `json:"types"`
	// DetectedBy says what led to the version: schedule, agent or client.
	DetectedBy changedigest.DetectedBy `json:"detected_by"`
	// Value is what the watch's value selector read from the version
	// (its number, availability, or why none was read); absent for a
	// watch that reads none.
	Value *changedigest.Value `json:"value,omitempty"`
}

func (s *Server) apiVersions(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	before, err := queryInt(q, "before", 0, 1, 1<<31-1)
	if err != nil {
		return err
	}
	limit, err := queryInt(q, "limit", 50, 1, 1000)
	if err != nil {
		return err
	}
	vs, err := s.Store.Versions(r.Context(), wt.ID, before, limit)
	if err != nil {
		return err
	}
	info, err := s.Store.Track(r.Context(), wt.ID)
	if err != nil {
		return err
	}
	rows := make([]apiVersionRow, len(vs))
	for i := range vs {
		v := &vs[i]
		rows[i] = apiVersionRow{Seq: v.Seq, FetchedAt: v.FetchedAt, Status: v.Status, ContentType: v.ContentType,
			FinalURL: v.FinalURL, Kind: v.Kind, Title: v.Title, Size: v.Size, BodyHash: v.BodyHash,
			Similarity: v.Similarity, Segments: len(v.Segments), Changes: len(v.Changes), Types: typesOf(v.Changes),
			DetectedBy: wt.DetectedBy(v.Seq), Value: v.Value}
		if rows[i].Types == nil {
			rows[i].Types = []changedigest.ChangeType{}
		}
	}
	out := map[string]any{"versions": rows, "total": info.Versions}
	if n := len(rows); n == limit && rows[n-1].Seq > info.Oldest {
		out["next_before"] = rows[n-1].Seq
	}
	return writeJSON(w, http.StatusOK, out)
}

// apiChange is a change with the profile terms found in its text. The
// match offsets are bytes of new_text, or of old_text for a deletion.
type apiChange struct {
	changedigest.Change
	Matches []changedigest.Match `json:"matches"`
}

func apiChangesOf(changes []changedigest.Change, matches [][]changedigest.Match) ([]apiChange, bool) {
	out := make([]apiChange, len(changes))
	matched := false
	for i, c := range changes {
		out[i] = apiChange{Change: c, Matches: []changedigest.Match{}}
		if i < len(matches) && len(matches[i]) > 0 {
			out[i].Matches = matches[i]
			matched = true
		}
	}
	return out, matched
}

// apiVersion is one version in full: segments with their texts, changes
// against the version before with the profile matches.
type apiVersion struct {
	WatchID      int64                  `json:"watch_id"`
	Seq          int                    `json:"seq"`
	FetchedAt    time.Time              `json:"fetched_at"`
	Status       int                    `json:"status"`
	ETag         string                 `json:"etag,omitempty"`
	LastModified string                 `json:"last_modified,omitempty"`
	ContentType  string                 `json:"content_type,omitempty"`
	FinalURL     string                 `json:"final_url,omitempty"`
	Kind         changedigest.Kind      `json:"kind"`
	Title        string                 `json:"title,omitempty"`
	Size         int                    `json:"size"`
	BodyHash     string                 `json:"body_hash"`
	Similarity   float64                `json:"similarity"`
	Previous     int                    `json:"previous,omitempty"`
	Next         int                    `json:"next,omitempty"`
	Profile      bool                   `json:"profile"`
	Segments     []changedigest.Segment `json:"segments"`
	Changes      []apiChange            `json:"changes"`
}

func (s *Server) apiVersion(w http.ResponseWriter, r *http.Request) error {
	wt, v, err := s.userVersion(r)
	if err != nil {
		return err
	}
	seq := v.Seq
	m, err := s.Notify.Matcher(r.Context(), wt.UserID)
	if err != nil {
		return err
	}
	prev, next, err := s.neighbours(r, wt.ID, seq)
	if err != nil {
		return err
	}
	out := apiVersion{WatchID: wt.ID, Seq: v.Seq, FetchedAt: v.FetchedAt, Status: v.Status, ETag: v.ETag,
		LastModified: v.LastModified, ContentType: v.ContentType, FinalURL: v.FinalURL, Kind: v.Kind, Title: v.Title,
		Size: v.Size, BodyHash: v.BodyHash, Similarity: v.Similarity, Previous: prev, Next: next, Segments: v.Segments}
	if out.Segments == nil {
		out.Segments = []changedigest.Segment{}
	}
	out.Changes, out.Profile = apiChangesOf(v.Changes, notify.Match(m, v.Changes))
	return writeJSON(w, http.StatusOK, out)
}

// apiVersionBody sends a stored body byte for byte with its stored
// Content-Type, as a download in a sandbox: it never runs as this site.
func (s *Server) apiVersionBody(w http.ResponseWriter, r *http.Request) error {
	wt, v, err := s.userVersion(r)
	if err != nil {
		return err
	}
	seq := v.Seq
	body, err := s.Store.Body(r.Context(), wt.ID, seq)
	if err != nil {
		return err
	}
	ctype, ext := "application/octet-stream", ".bin"
	if mt, params, err := mime.ParseMediaType(v.ContentType); err == nil && strings.Contains(mt, "/") {
		if f := mime.FormatMediaType(mt, params); f != "" {
			ctype, ext = f, extensionOf(mt)
		}
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment",
		map[string]string{"filename": fmt.Sprintf("watch-%d-version-%d%s", wt.ID, seq, ext)}))
	h.Set("Cache-Control", "private, max-age=86400")
	if v.BodyHash != "" {
		h.Set("ETag", `"`+v.BodyHash+`"`)
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	return nil
}

// extensionOf gives a download's file name extension for a media type.
func extensionOf(mt string) string {
	switch {
	case mt == "text/html":
		return ".html"
	case mt == "application/xhtml+xml":
		return ".xhtml"
	case strings.HasSuffix(mt, "/xml"), strings.HasSuffix(mt, "+xml"):
		return ".xml"
	case strings.HasSuffix(mt, "/json"), strings.HasSuffix(mt, "+json"):
		return ".json"
	case strings.HasPrefix(mt, "text/"):
		return ".txt"
	}
	return ".bin"
}

// apiDiff compares two stored versions of a watch and answers the
// `changedigest diff --json` contract. to defaults to the newest version,
// from to the stored version before to (to itself when there is none).
func (s *Server) apiDiff(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	info, err := s.Store.Track(r.Context(), wt.ID)
	if err != nil {
		return err
	}
	if info.Versions == 0 {
		return changedigest.Errorf(changedigest.ENOTFOUND, "%s has no stored version yet", wt.Name())
	}
	q := r.URL.Query()
	to, err := queryInt(q, "to", info.Latest, 1, 1<<31-1)
	if err != nil {
		return err
	}
	from, err := queryInt(q, "from", 0, 1, 1<<31-1)
	if err != nil {
		return err
	}
	if from == 0 {
		older, err := s.Store.Versions(r.Context(), wt.ID, to, 1)
		if err != nil {
			return err
		}
		from = to
		if len(older) > 0 {
			from = older[0].Seq
		}
	}
	vf, err := s.Store.Version(r.Context(), wt.ID, from)
	if err != nil {
		return err
	}
	vt, err := s.Store.Version(r.Context(), wt.ID, to)
	if err != nil {
		return err
	}
	bf, err := s.Store.Body(r.Context(), wt.ID, from)
	if err != nil {
		return err
	}
	bt, err := s.Store.Body(r.Context(), wt.ID, to)
	if err != nil {
		return err
	}
	d, err := s.Segmenter.DiffContext(r.Context(), crawl.ToUTF8(bf, vf.ContentType), crawl.ToUTF8(bt, vt.ContentType), cmp.Or(vt.Zone, wt.Zone))
	if err != nil {
		return err
	}
	if d.Changes == nil {
		d.Changes = []changedigest.Change{}
	}
	return writeJSON(w, http.StatusOK, d)
}

// ---- changes ----

// apiEvent is a version that brought changes.
type apiEvent struct {
	Watch      apiEventWatch `json:"watch"`
	Seq        int           `json:"seq"`
	Detected   time.Time     `json:"detected"`
	Similarity float64       `json:"similarity"`
	// Profile is true when a change matched the user's interests.
	Profile bool        `json:"profile"`
	Changes []apiChange `json:"changes"`
}

type apiEventWatch struct {
	ID    int64  `json:"id"`
	URL   string `json:"url"`
	Title string `json:"title"`
}

func (s *Server) apiChanges(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := pet.ChangeFilter{UserID: u.ID}
	if f.Since, err = parseDate(q.Get("since"), "since", false); err != nil {
		return err
	}
	if f.Until, err = parseDate(q.Get("until"), "until", true); err != nil {
		return err
	}
	if v := q.Get("watch"); v != "" {
		if f.WatchID, err = strconv.ParseInt(v, 10, 64); err != nil || f.WatchID <= 0 {
			return changedigest.Errorf(changedigest.EINVALID, "watch: %q is not a watch id", v)
		}
	}
	if t := q.Get("tag"); t != "" {
		tags := changedigest.NormaliseTags([]string{t})
		if len(tags) != 1 {
			return changedigest.Errorf(changedigest.EINVALID, "tag: %q is not one tag", t)
		}
		f.Tag = tags[0]
	}
	for _, v := range q["type"] {
		for _, t := range strings.Split(v, ",") {
			ct, err := changedigest.ParseChangeType(strings.TrimSpace(t))
			if err != nil {
				return changedigest.Errorf(changedigest.EINVALID, "type: %s", changedigest.ErrorMessage(err))
			}
			f.Types = append(f.Types, ct)
		}
	}
	if f.Limit, err = queryInt(q, "limit", 50, 1, 1000); err != nil {
		return err
	}
	evs, err := s.Notify.Events(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]apiEvent, len(evs))
	for i, ev := range evs {
		out[i] = apiEventOf(ev)
	}
	res := map[string]any{"events": out}
	if len(evs) == f.Limit {
		// The next page: events detected before the oldest one here.
		res["next_until"] = evs[len(evs)-1].Snapshot.FetchedAt.Add(-time.Nanosecond).UTC().Format(time.RFC3339Nano)
	}
	return writeJSON(w, http.StatusOK, res)
}

func apiEventOf(ev render.Event) apiEvent {
	e := apiEvent{Watch: apiEventWatch{ID: ev.Watch.ID, URL: ev.Watch.URL, Title: cmp.Or(ev.Watch.Title, ev.Snapshot.Title)},
		Seq: ev.Snapshot.Seq, Detected: ev.Snapshot.FetchedAt, Similarity: ev.Snapshot.Similarity}
	e.Changes, e.Profile = apiChangesOf(ev.Snapshot.Changes, ev.Matches)
	return e
}

// ---- profile ----

// apiProfile is the user's profile with its WordNet expansions.
type apiProfile struct {
	Profile    *changedigest.Profile `json:"profile"`
	HasFOAF    bool                  `json:"has_foaf"`
	Expansions []expand.Expansion    `json:"expansions"`
	// PageErrors lists linked pages whose key terms could not be read
	// (PUT only).
	PageErrors []apiPageError `json:"page_errors,omitempty"`
}

type apiPageError struct {
	URL   string `json:"url"`
	Error string `json:"error"`
}

func (s *Server) apiProfileOf(r *http.Request, u *changedigest.User) (*apiProfile, error) {
	p, doc, err := s.loadProfile(r, u)
	if err != nil {
		return nil, err
	}
	if p.Interests == nil {
		p.Interests = []changedigest.Interest{}
	}
	out := &apiProfile{Profile: p, HasFOAF: len(doc) > 0, Expansions: []expand.Expansion{}}
	if s.Expander != nil && len(p.Interests) > 0 {
		if out.Expansions, err = s.Expander.Expand(*p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Server) apiGetProfile(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	out, err := s.apiProfileOf(r, u)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// apiPutProfile builds the profile from a FOAF document, keeping the
// user's manual terms and exclusions, and stores it with the document.
func (s *Server) apiPutProfile(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	if s.Profiles == nil {
		return changedigest.Errorf(changedigest.EUNAVAILABLE, "profiles cannot be built in this server")
	}
	data, err := readBody(r, "FOAF document")
	if err != nil {
		return err
	}
	_, pageErrs, err := s.storeFOAF(r, u, data, "the FOAF document", r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	out, err := s.apiProfileOf(r, u)
	if err != nil {
		return err
	}
	for _, pe := range pageErrs {
		out.PageErrors = append(out.PageErrors, apiPageError{URL: pe.URL, Error: pe.Err.Error()})
	}
	return writeJSON(w, http.StatusOK, out)
}

// apiChooseSense sets the meaning of an interest term, {"term": "jazz",
// "sense": "n07062697"}, or with "sense": "" lets it be chosen
// automatically again.
func (s *Server) apiChooseSense(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	var in struct {
		Term  *string `json:"term"`
		Sense *string `json:"sense"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if in.Term == nil || in.Sense == nil {
		return changedigest.Errorf(changedigest.EINVALID, "term and sense: both fields are required (sense \"\" to choose automatically)")
	}
	if err := s.chooseSense(r, u, *in.Term, *in.Sense); err != nil {
		return err
	}
	out, err := s.apiProfileOf(r, u)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiAddTerm(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	var in struct {
		Term *string `json:"term"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if in.Term == nil {
		return changedigest.Errorf(changedigest.EINVALID, "term: the field is required")
	}
	if err := s.editProfile(r, u, func(p *changedigest.Profile) error { return profile.AddInterest(p, *in.Term) }); err != nil {
		return err
	}
	out, err := s.apiProfileOf(r, u)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiRemoveTerm(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	term := chi.URLParam(r, "term")
	if r.URL.RawPath != "" { // chi routed on the escaped path
		if t, err := url.PathUnescape(term); err == nil {
			term = t
		}
	}
	if err := s.editProfile(r, u, func(p *changedigest.Profile) error {
		ok, err := profile.RemoveInterest(p, term)
		if err == nil && !ok {
			err = changedigest.Errorf(changedigest.ENOTFOUND, "%q is not one of your interests", clip(term))
		}
		return err
	}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ---- search ----

// apiHit is one search hit: a segment whose text matched, where and when
// it appeared, and a snippet with the byte spans of the matched words.
type apiHit struct {
	WatchID    int64                     `json:"watch_id"`
	WatchURL   string                    `json:"watch_url"`
	WatchTitle string                    `json:"watch_title"`
	Seq        int                       `json:"seq"`
	Time       time.Time                 `json:"time"`
	LastSeq    int                       `json:"last_seq,omitempty"`
	LastSeen   time.Time                 `json:"last_seen,omitzero"`
	Segment    int                       `json:"segment"`
	Path       string                    `json:"path"`
	Hash       string                    `json:"hash"`
	Types      []changedigest.ChangeType `json:"types"`
	Snippet    apiSnippet                `json:"snippet"`
}

type apiSnippet struct {
	Text    string    `json:"text"`
	Matches []apiSpan `json:"matches"`
}

type apiSpan struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if strings.TrimSpace(q.Get("q")) == "" {
		return changedigest.Errorf(changedigest.EINVALID, "q: the search text is required")
	}
	query, err := s.searchQuery(u, q)
	if err != nil {
		return err
	}
	res, err := s.Store.Search(r.Context(), query)
	if err != nil {
		return err
	}
	byID, err := s.hitWatches(r, u, res.Hits)
	if err != nil {
		return err
	}
	hits := make([]apiHit, 0, len(res.Hits))
	for _, h := range res.Hits {
		a := apiHit{WatchID: h.WatchID, Seq: h.Seq, Time: h.Time, LastSeq: h.LastSeq, LastSeen: h.LastSeen,
			Segment: h.Segment, Path: h.Path, Hash: h.Hash, Types: h.Types,
			Snippet: apiSnippet{Text: h.Snippet.Text, Matches: make([]apiSpan, len(h.Snippet.Matches))}}
		if wt := byID[h.WatchID]; wt != nil {
			a.WatchURL, a.WatchTitle = wt.URL, wt.Title
		}
		if a.Types == nil {
			a.Types = []changedigest.ChangeType{}
		}
		for i, m := range h.Snippet.Matches {
			a.Snippet.Matches[i] = apiSpan{Start: m.Start, End: m.End}
		}
		hits = append(hits, a)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"total": res.Total, "offset": query.Offset,
		"limit": query.Limit, "hits": hits})
}
