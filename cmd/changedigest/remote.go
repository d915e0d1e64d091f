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
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
)

// The commands of accounts and watches beside a running service.
//
// While serve runs, the data directory is its own: the commands that
// read or change users and watches (user add, passwd and list; watch
// add, list, filter and rm) then go through its admin socket, and the
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
	Close() error
}

// localStore is the store opened by the command itself.
type localStore struct{ *pet.Store }

func (s localStore) SetPassword(ctx context.Context, id int64, hash []byte) error {
	return setPassword(ctx, s.Store, id, hash)
}

func (s localStore) SetFilters(ctx context.Context, userID, id int64, edit func(*changedigest.Watch)) (*changedigest.Watch, error) {
	return s.UpdateWatch(ctx, userID, id, func(x *changedigest.Watch) error {
		edit(x)
		return x.Validate()
	})
}

// passwordStore is what setPassword writes: the store, or the cluster's.
type passwordStore interface {
	UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error)
	DeleteUserSessions(ctx context.Context, userID int64) error
}

func setPassword(ctx context.Context, s passwordStore, id int64, hash []byte) error {
	if _, err := s.UpdateUser(ctx, id, func(x *changedigest.User) error {
		x.PasswordHash = hash
		return nil
	}); err != nil {
		return err
	}
	return s.DeleteUserSessions(ctx, id)
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

// adminStoreRoutes adds the admin socket's routes of users and watches,
// answered from the service's cluster of one.
func (m *Main) adminStoreRoutes(mux *http.ServeMux) {
	st := m.clusterStore()
	view := m.Store // this node's copy, which the reads answer from
	answer := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			adminError(w, adminStatus(err), err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			adminError(w, http.StatusBadRequest, fmt.Errorf("a bad request of the command line: %w", err))
			return false
		}
		return true
	}
	ids := func(w http.ResponseWriter, r *http.Request, names ...string) ([]int64, bool) {
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
		answer(w, struct{}{}, setPassword(r.Context(), st, id[0], in.Hash))
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
		if err := segmenter.CheckZone(x.Zone); err != nil {
			answer(w, nil, err)
			return
		}
		if err := segmenter.CheckValueSelector(x.ValueSelector); err != nil {
			answer(w, nil, err)
			return
		}
		if err := x.Validate(); err != nil {
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
		if err := segmenter.CheckZone(in.Zone); err != nil {
			answer(w, nil, err)
			return
		}
		if err := segmenter.CheckValueSelector(in.ValueSelector); err != nil {
			answer(w, nil, err)
			return
		}
		x, err := st.UpdateWatch(r.Context(), id[0], id[1], func(x *changedigest.Watch) error {
			x.CopyFilters(&in)
			x.Zone = in.Zone
			return x.Validate()
		})
		if err == nil {
			settle(r.Context(), func() bool {
				v, err := view.Watch(r.Context(), id[0], id[1])
				return err == nil && !v.UpdatedAt.Before(x.UpdatedAt)
			})
		}
		answer(w, x, err)
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
