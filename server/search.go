package server

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// searchPage is the Data of the "search" page.
type searchPage struct {
	Q, Since, Until, Type string
	Watch                 int64
	Watches               []watchRow // the choices of the watch filter
	MoreWatches           int        // watches left out of them
	Types                 []changedigest.ChangeType
	Total                 int
	Hits                  []searchHit
	Offset                int
	PrevURL, NextURL      string
	Searched              bool
	Error                 string
}

// searchHit is one hit ready for the page.
type searchHit struct {
	WatchID   int64
	WatchName string
	Seq       int
	Time      time.Time
	LastSeq   int
	LastSeen  time.Time
	Segment   int
	Path      string
	Types     []changedigest.ChangeType
	Snippet   template.HTML
}

const searchPageSize = 20

// searchWatchChoices bounds the watches the search form offers to filter by.
const searchWatchChoices = 200

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	p := &searchPage{Q: strings.TrimSpace(q.Get("q")), Since: q.Get("since"), Until: q.Get("until"), Type: q.Get("type"),
		Types: changedigest.ChangeTypes}
	// The watch filter offers the first watches by name, not all of
	// them: a user may have thousands.
	list, err := s.Store.WatchPage(r.Context(), u.ID, pet.WatchQuery{Sort: pet.SortName, Limit: searchWatchChoices})
	if err != nil {
		return err
	}
	for i := range list.Watches {
		p.Watches = append(p.Watches, rowOf(&list.Watches[i]))
	}
	p.MoreWatches = list.Total - len(list.Watches)
	if v, err := strconv.ParseInt(q.Get("watch"), 10, 64); err == nil && v > 0 {
		p.Watch = v // chosen, even before a search
		if !slices.ContainsFunc(p.Watches, func(w watchRow) bool { return w.ID == v }) {
			if wt, err := s.Store.Watch(r.Context(), u.ID, v); err == nil {
				p.Watches = append([]watchRow{rowOf(wt)}, p.Watches...)
				p.MoreWatches--
			}
		}
	}
	if p.Q == "" {
		return s.renderPage(w, r, http.StatusOK, "search", "search", "Search", p)
	}
	query, err := s.searchQuery(u, q)
	if err == nil {
		p.Watch, p.Offset = query.WatchID, query.Offset
		var res *pet.Results
		if res, err = s.Store.Search(r.Context(), query); err == nil {
			p.Searched, p.Total = true, res.Total
			names := map[int64]string{}
			ws, err := s.hitWatches(r, u, res.Hits)
			if err != nil {
				return err
			}
			for id, w := range ws {
				if w != nil {
					names[id] = w.Name()
				}
			}
			for _, h := range res.Hits {
				p.Hits = append(p.Hits, searchHit{WatchID: h.WatchID, WatchName: names[h.WatchID], Seq: h.Seq, Time: h.Time,
					LastSeq: h.LastSeq, LastSeen: h.LastSeen, Segment: h.Segment, Path: h.Path, Types: h.Types,
					Snippet: template.HTML(h.Snippet.HTML())})
			}
			page := func(off int) string {
				v := url.Values{}
				for k, vs := range q {
					v[k] = vs
				}
				v.Set("offset", strconv.Itoa(off))
				return s.Render.Path("/search") + "?" + v.Encode()
			}
			if p.Offset > 0 {
				p.PrevURL = page(max(p.Offset-searchPageSize, 0))
			}
			if p.Offset+len(p.Hits) < p.Total {
				p.NextURL = page(p.Offset + searchPageSize)
			}
		}
	}
	if err != nil {
		if changedigest.ErrorCode(err) != changedigest.EINVALID {
			return err
		}
		p.Error = changedigest.ErrorMessage(err)
		return s.renderPage(w, r, http.StatusBadRequest, "search", "search", "Search", p)
	}
	return s.renderPage(w, r, http.StatusOK, "search", "search", "Search: "+p.Q, p)
}

// searchQuery reads the search form (and API query) into a store query
// restricted to the user's watches.
func (s *Server) searchQuery(u *changedigest.User, q url.Values) (pet.Query, error) {
	query := pet.Query{Text: strings.TrimSpace(q.Get("q")), UserID: u.ID, Limit: searchPageSize}
	var err error
	if query.Since, err = parseDate(q.Get("since"), "since", false); err != nil {
		return query, err
	}
	if query.Until, err = parseDate(q.Get("until"), "until", true); err != nil {
		return query, err
	}
	if t := q.Get("type"); t != "" {
		ct, err := changedigest.ParseChangeType(t)
		if err != nil {
			return query, err
		}
		query.Types = []changedigest.ChangeType{ct}
	}
	if v := q.Get("watch"); v != "" && v != "0" {
		if query.WatchID, err = strconv.ParseInt(v, 10, 64); err != nil || query.WatchID <= 0 {
			return query, changedigest.Errorf(changedigest.EINVALID, "watch %q is not a watch id", v)
		}
	}
	if v := q.Get("offset"); v != "" {
		if query.Offset, err = strconv.Atoi(v); err != nil || query.Offset < 0 {
			return query, changedigest.Errorf(changedigest.EINVALID, "offset %q is not a whole number", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if query.Limit, err = strconv.Atoi(v); err != nil || query.Limit <= 0 || query.Limit > 100 {
			return query, changedigest.Errorf(changedigest.EINVALID, "limit %q is not a number from 1 to 100", v)
		}
	}
	return query, nil
}

// parseDate reads a YYYY-MM-DD date (the end of that day when end is
// set) or an RFC 3339 time; "" is the zero time.
func parseDate(v, name string, end bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	t, err := time.ParseInLocation(time.DateOnly, v, time.Local)
	if err != nil {
		return time.Time{}, changedigest.Errorf(changedigest.EINVALID, "%s: %q is not a date (YYYY-MM-DD)", name, v)
	}
	if end {
		t = t.AddDate(0, 0, 1).Add(-time.Nanosecond)
	}
	return t, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// hitWatches loads the watches of search hits, each once: a page of hits
// names at most a page of watches, whatever the user has. A watch deleted
// since it was indexed is left out.
func (s *Server) hitWatches(r *http.Request, u *changedigest.User, hits []pet.Hit) (map[int64]*changedigest.Watch, error) {
	out := map[int64]*changedigest.Watch{}
	for _, h := range hits {
		if _, ok := out[h.WatchID]; ok {
			continue
		}
		w, err := s.Store.Watch(r.Context(), u.ID, h.WatchID)
		if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
			out[h.WatchID] = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		out[h.WatchID] = w
	}
	return out, nil
}
