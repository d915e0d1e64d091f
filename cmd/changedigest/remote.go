package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/server"
)

// The commands of accounts and watches beside a running service.
//
// While serve runs, the data directory is its own: the commands that
// read or change users and watches (user add, passwd and list; watch
// add, list, filter and rm; check, history, show and search; the channel
// commands) then go through its admin socket, and the
// service makes the change as its web pages do, through its cluster of
// one. The commands are written once, against cliStore, which the store
// itself and the admin socket's client both are, so their output is the
// same either way.

// cliStore is what the user and watch commands read and write.
type cliStore interface {
	Users(ctx context.Context) ([]changedigest.User, error)
	UserByName(ctx context.Context, name string) (*changedigest.User, error)
	CreateUser(ctx context.Context, u *changedigest.User) error
	// SetPassword gives user id the password of hash and ends its
	// sessions.
	SetPassword(ctx context.Context, id int64, hash []byte) error
	Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error)
	Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error)
	CreateWatch(ctx context.Context, w *changedigest.Watch) error
	// SetFilters gives watch id the filters and the zone that edit sets
	// on it (see changedigest.Watch.CopyFilters).
	SetFilters(ctx context.Context, userID, id int64, edit func(*changedigest.Watch)) (*changedigest.Watch, error)
	DeleteWatch(ctx context.Context, userID, id int64) error
	// The reads of history, show and search.
	Versions(ctx context.Context, watchID int64, before, limit int) ([]changedigest.Snapshot, error)
	Version(ctx context.Context, watchID int64, seq int) (*changedigest.Snapshot, error)
	Body(ctx context.Context, watchID int64, seq int) ([]byte, error)
	Search(ctx context.Context, q pet.Query) (*pet.Results, error)
	channelStore
	Close() error
}

// localStore is the store opened by the command itself.
type localStore struct{ *pet.Store }

func (s localStore) SetPassword(ctx context.Context, id int64, hash []byte) error {
	return server.SetPassword(ctx, s.Store, id, hash)
}

func (s localStore) SetFilters(ctx context.Context, userID, id int64, edit func(*changedigest.Watch)) (*changedigest.Watch, error) {
	return s.UpdateWatch(ctx, userID, id, func(x *changedigest.Watch) error {
		edit(x)
		return server.CheckWatch(x)
	})
}

// remoteStore is the running service's store, through its admin socket.
type remoteStore struct {
	c *http.Client
}

func (r remoteStore) Close() error {
	r.c.CloseIdleConnections()
	return nil
}

// call sends in (when not nil) as JSON to the admin socket and decodes
// the answer into out (when not nil).
func (r remoteStore) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	res, err := adminDo(ctx, r.c, method, path, body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// newUser is a user as the admin socket takes it: with its password's
// hash, which a user's JSON leaves out.
type newUser struct {
	changedigest.User
	PasswordHash []byte `json:"password_hash,omitempty"`
}

func (r remoteStore) Users(ctx context.Context) ([]changedigest.User, error) {
	var us []changedigest.User
	return us, r.call(ctx, "GET", "/users", nil, &us)
}

func (r remoteStore) UserByName(ctx context.Context, name string) (*changedigest.User, error) {
	var u changedigest.User
	if err := r.call(ctx, "GET", "/users/"+url.PathEscape(name), nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

func (r remoteStore) CreateUser(ctx context.Context, u *changedigest.User) error {
	return r.call(ctx, "POST", "/users", newUser{User: *u, PasswordHash: u.PasswordHash}, u)
}

func (r remoteStore) SetPassword(ctx context.Context, id int64, hash []byte) error {
	return r.call(ctx, "POST", "/users/"+strconv.FormatInt(id, 10)+"/password", struct {
		Hash []byte `json:"password_hash"`
	}{hash}, nil)
}

func watchesPath(userID int64) string { return "/users/" + strconv.FormatInt(userID, 10) + "/watches" }

func (r remoteStore) Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error) {
	var ws []changedigest.Watch
	return ws, r.call(ctx, "GET", watchesPath(userID)+"?tag="+url.QueryEscape(tag), nil, &ws)
}

func (r remoteStore) Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error) {
	var w changedigest.Watch
	if err := r.call(ctx, "GET", watchesPath(userID)+"/"+strconv.FormatInt(id, 10), nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

func (r remoteStore) CreateWatch(ctx context.Context, w *changedigest.Watch) error {
	return r.call(ctx, "POST", watchesPath(w.UserID), w, w)
}

// SetFilters edits the filters of the watch as it is now and sends them:
// the service sets those and nothing else.
func (r remoteStore) SetFilters(ctx context.Context, userID, id int64, edit func(*changedigest.Watch)) (*changedigest.Watch, error) {
	w, err := r.Watch(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	edit(w)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	var out changedigest.Watch
	if err := r.call(ctx, "POST", watchesPath(userID)+"/"+strconv.FormatInt(id, 10)+"/filters", w, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (r remoteStore) DeleteWatch(ctx context.Context, userID, id int64) error {
	return r.call(ctx, "DELETE", watchesPath(userID)+"/"+strconv.FormatInt(id, 10), nil, nil)
}

// settle waits, up to settleFor, until seen reports that this node's
// copy of the store shows a write just made (it follows the cluster's
// streams within milliseconds): the next command, a moment later, reads
// what this one wrote.
func settle(ctx context.Context, seen func() bool) {
	ctx, cancel := context.WithTimeout(ctx, settleFor)
	defer cancel()
	for !seen() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

const settleFor = 3 * time.Second

func versionsPath(watchID int64) string {
	return "/watches/" + strconv.FormatInt(watchID, 10) + "/versions"
}

func (r remoteStore) Versions(ctx context.Context, watchID int64, before, limit int) ([]changedigest.Snapshot, error) {
	var vs []changedigest.Snapshot
	return vs, r.call(ctx, "GET", versionsPath(watchID)+"?before="+strconv.Itoa(before)+"&limit="+strconv.Itoa(limit), nil, &vs)
}

func (r remoteStore) Version(ctx context.Context, watchID int64, seq int) (*changedigest.Snapshot, error) {
	var v changedigest.Snapshot
	if err := r.call(ctx, "GET", versionsPath(watchID)+"/"+strconv.Itoa(seq), nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func (r remoteStore) Body(ctx context.Context, watchID int64, seq int) ([]byte, error) {
	res, err := adminDo(ctx, r.c, "GET", versionsPath(watchID)+"/"+strconv.Itoa(seq)+"/body", nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}

func (r remoteStore) Search(ctx context.Context, q pet.Query) (*pet.Results, error) {
	var res pet.Results
	if err := r.call(ctx, "POST", "/search", q, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// answer writes v as JSON, or err as the admin socket's error.
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		adminError(w, adminStatus(err), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// decode reads the request's JSON body into v, answering 400 when it
// cannot.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("a bad request of the command line: %w", err))
		return false
	}
	return true
}

// ids reads the path's ids of names, answering 400 when one is not.
func ids(w http.ResponseWriter, r *http.Request, names ...string) ([]int64, bool) {
	var out []int64
	for _, n := range names {
		id, err := strconv.ParseInt(r.PathValue(n), 10, 64)
		if err != nil || id <= 0 {
			adminError(w, http.StatusBadRequest, fmt.Errorf("%s %q is not an id", n, r.PathValue(n)))
			return nil, false
		}
		out = append(out, id)
	}
	return out, true
}

// adminStoreRoutes adds the admin socket's routes of users and watches,
// answered from the service's cluster of one.
func (m *Main) adminStoreRoutes(mux *http.ServeMux) {
	st := m.clusterStore()
	view := m.Store // this node's copy, which the reads answer from
	mux.HandleFunc("POST /check", m.adminCheck)
	m.adminChannelRoutes(mux)
	mux.HandleFunc("GET /users", func(w http.ResponseWriter, r *http.Request) {
		us, err := st.Users(r.Context())
		answer(w, us, err)
	})
	mux.HandleFunc("GET /users/{name}", func(w http.ResponseWriter, r *http.Request) {
		u, err := st.UserByName(r.Context(), r.PathValue("name"))
		answer(w, u, err)
	})
	mux.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		var nu newUser
		if !decode(w, r, &nu) {
			return
		}
		u := nu.User
		u.ID, u.PasswordHash = 0, nu.PasswordHash
		if err := changedigest.ValidateUserName(u.Name); err != nil {
			answer(w, nil, err)
			return
		}
		err := st.CreateUser(r.Context(), &u)
		if err == nil {
			settle(r.Context(), func() bool { _, err := view.UserByName(r.Context(), u.Name); return err == nil })
		}
		answer(w, &u, err)
	})
	mux.HandleFunc("POST /users/{user}/password", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user")
		if !ok {
			return
		}
		var in struct {
			Hash []byte `json:"password_hash"`
		}
		if !decode(w, r, &in) {
			return
		}
		if len(in.Hash) == 0 {
			adminError(w, http.StatusBadRequest, errors.New("no password given"))
			return
		}
		answer(w, struct{}{}, server.SetPassword(r.Context(), st, id[0], in.Hash))
	})
	mux.HandleFunc("GET /users/{user}/watches", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user")
		if !ok {
			return
		}
		ws, err := st.Watches(r.Context(), id[0], r.URL.Query().Get("tag"))
		answer(w, ws, err)
	})
	mux.HandleFunc("GET /users/{user}/watches/{watch}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "watch")
		if !ok {
			return
		}
		x, err := st.Watch(r.Context(), id[0], id[1])
		answer(w, x, err)
	})
	mux.HandleFunc("POST /users/{user}/watches", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user")
		if !ok {
			return
		}
		var x changedigest.Watch
		if !decode(w, r, &x) {
			return
		}
		// What the service keeps of a watch's state is its own.
		given := x
		x = changedigest.Watch{UserID: id[0], URL: given.URL, Zone: given.Zone, Category: given.Category, Interval: given.Interval,
			Tags: given.Tags, Title: given.Title, Render: given.Render, WaitFor: given.WaitFor, Steps: given.Steps, Request: given.Request}
		x.CopyFilters(&given)
		if err := server.CheckWatch(&x); err != nil {
			answer(w, nil, err)
			return
		}
		err := st.CreateWatch(r.Context(), &x)
		if err == nil {
			settle(r.Context(), func() bool { _, err := view.Watch(r.Context(), x.UserID, x.ID); return err == nil })
		}
		answer(w, &x, err)
	})
	mux.HandleFunc("POST /users/{user}/watches/{watch}/filters", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "watch")
		if !ok {
			return
		}
		var in changedigest.Watch
		if !decode(w, r, &in) {
			return
		}
		x, err := st.UpdateWatch(r.Context(), id[0], id[1], func(x *changedigest.Watch) error {
			x.CopyFilters(&in)
			x.Zone = in.Zone
			return server.CheckWatch(x)
		})
		if err == nil {
			settle(r.Context(), func() bool {
				v, err := view.Watch(r.Context(), id[0], id[1])
				return err == nil && !v.UpdatedAt.Before(x.UpdatedAt)
			})
		}
		answer(w, x, err)
	})
	mux.HandleFunc("GET /watches/{watch}/versions", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "watch")
		if !ok {
			return
		}
		before, _ := strconv.Atoi(r.URL.Query().Get("before"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		vs, err := st.Versions(r.Context(), id[0], before, limit)
		answer(w, vs, err)
	})
	mux.HandleFunc("GET /watches/{watch}/versions/{seq}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "watch", "seq")
		if !ok {
			return
		}
		v, err := st.Version(r.Context(), id[0], int(id[1]))
		answer(w, v, err)
	})
	mux.HandleFunc("GET /watches/{watch}/versions/{seq}/body", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "watch", "seq")
		if !ok {
			return
		}
		b, err := st.Body(r.Context(), id[0], int(id[1]))
		if err != nil {
			adminError(w, adminStatus(err), err)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})
	mux.HandleFunc("POST /search", func(w http.ResponseWriter, r *http.Request) {
		var q pet.Query
		if !decode(w, r, &q) {
			return
		}
		res, err := st.Search(r.Context(), q)
		answer(w, res, err)
	})
	mux.HandleFunc("DELETE /users/{user}/watches/{watch}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "watch")
		if !ok {
			return
		}
		err := st.DeleteWatch(r.Context(), id[0], id[1])
		if err == nil {
			settle(r.Context(), func() bool {
				_, err := view.Watch(r.Context(), id[0], id[1])
				return changedigest.ErrorCode(err) == changedigest.ENOTFOUND
			})
		}
		answer(w, struct{}{}, err)
	})
}

// checkLine is one check's report as the admin socket streams it (one
// JSON object a line), and the summary at the end.
type checkLine struct {
	ID      int64          `json:"id,omitempty"`
	URL     string         `json:"url,omitempty"`
	Result  string         `json:"result,omitempty"`
	Error   string         `json:"error,omitempty"`
	Summary *crawl.Summary `json:"summary,omitempty"`
}

// checkLineText is the line check prints for one watch's check.
func checkLineText(id int64, url, result, errText string) string {
	line := fmt.Sprintf("%-6d %-50s ", id, oneLine(url, 50))
	if errText != "" {
		return line + "error: " + oneLine(errText, 120)
	}
	return line + result
}

// checkSummaryText is check's last line.
func checkSummaryText(sum crawl.Summary) string {
	return fmt.Sprintf("checked %d: %d changed, %d first versions, %d unchanged, %d not modified, %d failed",
		sum.Checked, sum.Changed, sum.FirstVersion, sum.Unchanged, sum.NotModified, sum.Failed)
}

// remoteCheck has the running service check ws now, as the web page's
// "check now" does, and prints what came of each as check does.
func remoteCheck(ctx context.Context, e *env, r remoteStore, ws []*changedigest.Watch) (crawl.Summary, error) {
	ids := make([]int64, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	b, _ := json.Marshal(struct {
		Watches []int64 `json:"watches"`
	}{ids})
	res, err := adminDo(ctx, r.c, "POST", "/check", bytes.NewReader(b))
	if err != nil {
		return crawl.Summary{}, err
	}
	defer res.Body.Close()
	bar := newProgress(e.stderr, len(ws))
	defer bar.done()
	dec := json.NewDecoder(res.Body)
	for {
		var l checkLine
		if err := dec.Decode(&l); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the running service ended the check before its summary")
			}
			return crawl.Summary{}, err
		}
		if l.Summary != nil {
			return *l.Summary, nil
		}
		bar.step()
		bar.println(e.stdout, checkLineText(l.ID, l.URL, l.Result, l.Error))
	}
}

// adminCheck checks the watches of the request now, streaming a line per
// check and the summary.
func (m *Main) adminCheck(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Watches []int64 `json:"watches"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("a bad request of the command line: %w", err))
		return
	}
	st := m.clusterStore()
	var ws []*changedigest.Watch
	for _, id := range in.Watches {
		x, err := st.Watch(r.Context(), pet.AnyUser, id)
		if err != nil {
			adminError(w, adminStatus(err), err)
			return
		}
		ws = append(ws, x)
	}
	if m.Scheduler == nil {
		adminError(w, http.StatusServiceUnavailable, errors.New("checks are not running in this service"))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	checker := cluster.Checker{Node: m.Node, Local: m.Scheduler}
	sum, err := checker.CheckNow(r.Context(), func(rep crawl.Report) {
		l := checkLine{ID: rep.Watch.ID, URL: rep.Watch.URL, Result: rep.Outcome.Result.String()}
		if rep.Err != nil {
			l.Error = plainError(rep.Err)
		}
		enc.Encode(l)
		flush()
	}, ws...)
	if err != nil {
		m.Logger.Warn("check through the admin socket", "err", err)
		return // the command finds no summary and says so
	}
	enc.Encode(checkLine{Summary: &sum})
}

// channelStore is what the channel commands read and write besides the
// watches.
type channelStore interface {
	Channels(ctx context.Context, userID int64) ([]changedigest.Channel, error)
	Channel(ctx context.Context, userID, id int64) (*changedigest.Channel, error)
	CreateChannel(ctx context.Context, c *changedigest.Channel) error
	DeleteChannel(ctx context.Context, userID, id int64) error
	// SetTemplate gives channel id its own message template ("": the
	// default message).
	SetTemplate(ctx context.Context, userID, id int64, src string) (*changedigest.Channel, error)
	Deliveries(ctx context.Context, f pet.DeliveryFilter) ([]changedigest.Delivery, error)
}

func (s localStore) SetTemplate(ctx context.Context, userID, id int64, src string) (*changedigest.Channel, error) {
	return s.UpdateChannel(ctx, userID, id, func(x *changedigest.Channel) error {
		x.Template = src
		return nil
	})
}

// wireChannel is a channel as the admin socket carries it: with its
// secret, which a channel's JSON leaves out.
type wireChannel struct {
	changedigest.Channel
	Secret string `json:"secret,omitempty"`
}

func unwire(w wireChannel) *changedigest.Channel {
	c := w.Channel
	c.Secret = w.Secret
	return &c
}

func channelsPath(userID int64) string {
	return "/users/" + strconv.FormatInt(userID, 10) + "/channels"
}

func (r remoteStore) Channels(ctx context.Context, userID int64) ([]changedigest.Channel, error) {
	var ws []wireChannel
	if err := r.call(ctx, "GET", channelsPath(userID), nil, &ws); err != nil {
		return nil, err
	}
	out := make([]changedigest.Channel, len(ws))
	for i := range ws {
		out[i] = *unwire(ws[i])
	}
	return out, nil
}

func (r remoteStore) Channel(ctx context.Context, userID, id int64) (*changedigest.Channel, error) {
	var w wireChannel
	if err := r.call(ctx, "GET", channelsPath(userID)+"/"+strconv.FormatInt(id, 10), nil, &w); err != nil {
		return nil, err
	}
	return unwire(w), nil
}

func (r remoteStore) CreateChannel(ctx context.Context, c *changedigest.Channel) error {
	var w wireChannel
	if err := r.call(ctx, "POST", channelsPath(c.UserID), wireChannel{Channel: *c, Secret: c.Secret}, &w); err != nil {
		return err
	}
	*c = *unwire(w)
	return nil
}

func (r remoteStore) DeleteChannel(ctx context.Context, userID, id int64) error {
	return r.call(ctx, "DELETE", channelsPath(userID)+"/"+strconv.FormatInt(id, 10), nil, nil)
}

func (r remoteStore) SetTemplate(ctx context.Context, userID, id int64, src string) (*changedigest.Channel, error) {
	var w wireChannel
	if err := r.call(ctx, "POST", channelsPath(userID)+"/"+strconv.FormatInt(id, 10)+"/template", struct {
		Template string `json:"template"`
	}{src}, &w); err != nil {
		return nil, err
	}
	return unwire(w), nil
}

func (r remoteStore) Deliveries(ctx context.Context, f pet.DeliveryFilter) ([]changedigest.Delivery, error) {
	var ds []changedigest.Delivery
	return ds, r.call(ctx, "POST", "/deliveries", f, &ds)
}

// channelResult is what the service made of a channel's test message or
// of its retry.
type channelResult struct {
	Status  int    `json:"status,omitempty"`
	Error   string `json:"error,omitempty"`
	Retried int    `json:"retried,omitempty"`
}

// adminChannelRoutes adds the admin socket's routes of channels.
func (m *Main) adminChannelRoutes(mux *http.ServeMux) {
	st := m.clusterStore()
	view := m.Store
	wire := func(c *changedigest.Channel) wireChannel { return wireChannel{Channel: *c, Secret: c.Secret} }
	mux.HandleFunc("GET /users/{user}/channels", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user")
		if !ok {
			return
		}
		cs, err := st.Channels(r.Context(), id[0])
		out := make([]wireChannel, len(cs))
		for i := range cs {
			out[i] = wire(&cs[i])
		}
		answer(w, out, err)
	})
	mux.HandleFunc("GET /users/{user}/channels/{channel}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "channel")
		if !ok {
			return
		}
		c, err := st.Channel(r.Context(), id[0], id[1])
		if err != nil {
			answer(w, nil, err)
			return
		}
		answer(w, wire(c), nil)
	})
	mux.HandleFunc("POST /users/{user}/channels", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user")
		if !ok {
			return
		}
		var in wireChannel
		if !decode(w, r, &in) {
			return
		}
		c := unwire(in)
		c.ID, c.UserID = 0, id[0]
		if err := c.Validate(); err != nil {
			answer(w, nil, err)
			return
		}
		if err := st.CreateChannel(r.Context(), c); err != nil {
			answer(w, nil, err)
			return
		}
		settle(r.Context(), func() bool { _, err := view.Channel(r.Context(), c.UserID, c.ID); return err == nil })
		answer(w, wire(c), nil)
	})
	mux.HandleFunc("POST /users/{user}/channels/{channel}/template", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "channel")
		if !ok {
			return
		}
		var in struct {
			Template string `json:"template"`
		}
		if !decode(w, r, &in) {
			return
		}
		c, err := st.UpdateChannel(r.Context(), id[0], id[1], func(x *changedigest.Channel) error {
			x.Template = in.Template
			return x.Validate()
		})
		if err != nil {
			answer(w, nil, err)
			return
		}
		settle(r.Context(), func() bool {
			v, err := view.Channel(r.Context(), id[0], id[1])
			return err == nil && v.Template == in.Template
		})
		answer(w, wire(c), nil)
	})
	mux.HandleFunc("DELETE /users/{user}/channels/{channel}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "channel")
		if !ok {
			return
		}
		err := st.DeleteChannel(r.Context(), id[0], id[1])
		if err == nil {
			settle(r.Context(), func() bool {
				_, err := view.Channel(r.Context(), id[0], id[1])
				return changedigest.ErrorCode(err) == changedigest.ENOTFOUND
			})
		}
		answer(w, struct{}{}, err)
	})
	mux.HandleFunc("POST /deliveries", func(w http.ResponseWriter, r *http.Request) {
		var f pet.DeliveryFilter
		if !decode(w, r, &f) {
			return
		}
		ds, err := st.Deliveries(r.Context(), f)
		answer(w, ds, err)
	})
	mux.HandleFunc("POST /users/{user}/channels/{channel}/test", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "channel")
		if !ok {
			return
		}
		c, err := st.Channel(r.Context(), id[0], id[1])
		if err != nil || m.Dispatch == nil {
			if err == nil {
				err = errors.New("this service sends no notifications")
			}
			answer(w, nil, err)
			return
		}
		res := m.Dispatch.Test(r.Context(), c)
		out := channelResult{Status: res.Status}
		if res.Err != nil {
			out.Error = plainError(res.Err)
		}
		answer(w, out, nil)
	})
	mux.HandleFunc("POST /users/{user}/channels/{channel}/retry", func(w http.ResponseWriter, r *http.Request) {
		id, ok := ids(w, r, "user", "channel")
		if !ok {
			return
		}
		if m.Dispatch == nil {
			answer(w, nil, errors.New("this service sends no notifications"))
			return
		}
		dead, err := st.Deliveries(r.Context(), pet.DeliveryFilter{UserID: id[0], ChannelID: id[1], State: changedigest.DeliveryDead, Limit: 1000})
		if err != nil {
			answer(w, nil, err)
			return
		}
		for _, x := range dead {
			if _, err := m.Dispatch.Redeliver(r.Context(), id[0], x.ID); err != nil {
				answer(w, nil, err)
				return
			}
		}
		answer(w, channelResult{Retried: len(dead)}, nil)
	})
}

// channelDo asks the running service to send channel id's test message
// (what "test") or its failed notifications again ("retry").
func (r remoteStore) channelDo(ctx context.Context, userID, id int64, what string) (channelResult, error) {
	var out channelResult
	err := r.call(ctx, "POST", channelsPath(userID)+"/"+strconv.FormatInt(id, 10)+"/"+what, struct{}{}, &out)
	return out, err
}
