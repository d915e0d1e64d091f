package server

import (
	"context"
	"net/http"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// busyStore fails watch lists and searches (and, with sessions set,
// session lookups) as a cluster's store does while it replaces a server
// that stopped.
type busyStore struct {
	Store
	sessions bool
}

var errBusy = changedigest.Errorf(changedigest.EBUSY, "the cluster did not answer in time; try again in a few seconds")

func (busyStore) WatchPage(context.Context, int64, pet.WatchQuery) (*pet.WatchPage, error) {
	return nil, errBusy
}

func (busyStore) Search(context.Context, pet.Query) (*pet.Results, error) { return nil, errBusy }

func (b busyStore) Session(ctx context.Context, token string) (*pet.Session, error) {
	if b.sessions {
		return nil, errBusy
	}
	return b.Store.Session(ctx, token)
}

// TestBusyIsServiceUnavailable: a read the store cannot answer for now
// is a 503 with a Retry-After and the store's message, on pages and in
// the API, not an internal error.
func TestBusyIsServiceUnavailable(t *testing.T) {
	e := mustServer(t)
	u := e.mustUser("alice", "correct horse battery")
	c := e.login("alice", "correct horse battery")
	a := e.api(u)
	e.srv.Store = busyStore{Store: e.store}
	for _, path := range []string{"/", "/settings", "/search?q=news"} {
		resp, body := c.get(path)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
			t.Errorf("%s: status %d, Retry-After %q; want 503, 5", path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		mustContain(t, body, "Not available right now", "try again in a few seconds")
	}
	a.callErr("GET", "/watches", "", nil, http.StatusServiceUnavailable, changedigest.EBUSY, "try again")
	if resp, _ := a.raw("GET", "/search?q=news", "", nil); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
		t.Errorf("API search: status %d, Retry-After %q; want 503, 5", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// A session that cannot be looked up for now is not a visitor sent
	// to log in again.
	e.srv.Store = busyStore{Store: e.store, sessions: true}
	resp, body := c.get("/settings")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
		t.Errorf("a session the store cannot look up: status %d, Retry-After %q; want 503, 5", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	mustContain(t, body, "try again in a few seconds")
}
