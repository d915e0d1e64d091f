package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
	"github.com/changedigest/changedigest/segmenter"
)

// dashboardPage is the Data of the "dashboard" page.
type dashboardPage struct {
	Watches []watchRow
	Tags    []string
	FeedURL string
	Recent  []render.EventView
	Errors  int
	// StorageFull is when the store ran out of space (zero while it has
	// space): checks store nothing until space is freed.
	StorageFull time.Time
}

// storageHealth is the part of the store that tells a full disk; the
// dashboard asks when the store offers it.
type storageHealth interface {
	StorageFull() (since time.Time, full bool)
}

// watchRow is one watch in a list.
type watchRow struct {
	ID         int64
	Name       string
	URL        string
	Kind       changedigest.Kind
	Tags       []string
	Paused     bool
	LastCheck  time.Time
	LastChange time.Time
	NextCheck  time.Time
	LastError  string
	Checks     int
}

// TagLinks lists the row's tags with the paths of their pages.
func (w watchRow) TagLinks() []tagLink { return tagLinks(w.Tags) }

// TagLinks lists the user's tags with the paths of their pages.
func (p *dashboardPage) TagLinks() []tagLink { return tagLinks(p.Tags) }

// tagLink is a tag and the path of its page, escaped for any tag text.
type tagLink struct{ Name, Path string }

func tagLinks(tags []string) []tagLink {
	out := make([]tagLink, len(tags))
	for i, t := range tags {
		out[i] = tagLink{Name: t, Path: "/tags/" + pathEscape(t)}
	}
	return out
}

func rowOf(w *changedigest.Watch) watchRow {
	return watchRow{ID: w.ID, Name: w.Name(), URL: w.URL, Kind: w.Kind, Tags: w.Tags, Paused: w.Paused,
		LastCheck: w.LastCheck, LastChange: w.LastChange, NextCheck: w.NextCheck, LastError: w.LastError, Checks: w.Checks}
}

// feedURL is the absolute address of one of the user's feeds.
func (s *Server) feedURL(u *changedigest.User, path string) string {
	return s.Render.URL("/feeds/" + u.FeedToken + path)
}

func (s *Server) handleDashboard(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	ws, err := s.Store.Watches(r.Context(), u.ID, "")
	if err != nil {
		return err
	}
	p := &dashboardPage{FeedURL: s.feedURL(u, "/atom.xml")}
	if h, ok := s.Store.(storageHealth); ok {
		if since, full := h.StorageFull(); full {
			p.StorageFull = since
		}
	}
	tags := map[string]bool{}
	for i := range ws {
		p.Watches = append(p.Watches, rowOf(&ws[i]))
		for _, t := range ws[i].Tags {
			tags[t] = true
		}
		if ws[i].LastError != "" {
			p.Errors++
		}
	}
	for t := range tags {
		p.Tags = append(p.Tags, t)
	}
	slices.Sort(p.Tags)
	evs, err := s.Notify.Events(r.Context(), pet.ChangeFilter{UserID: u.ID, Limit: 5})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		v, err := s.Render.View(ev, render.ViewOptions{Context: s.Render.Context, MaxChars: s.Render.MaxChangeChars})
		if err != nil {
			return err
		}
		p.Recent = append(p.Recent, v)
	}
	return s.renderPage(w, r, http.StatusOK, "dashboard", "dashboard", "Dashboard", p)
}

// watchForm is the Data of the "watch-form" page, and what it posts.
type watchForm struct {
	ID           int64 // 0 for a new watch
	URL          string
	Title        string
	Zone         string
	Category     string
	Every        string
	Tags         string
	Paused       bool
	KeepVersions string
	KeepDays     string
	Error        string
}

func formOf(w *changedigest.Watch) *watchForm {
	f := &watchForm{ID: w.ID, URL: w.URL, Title: w.Title, Zone: w.Zone, Category: string(w.Category),
		Tags: strings.Join(w.Tags, ", "), Paused: w.Paused}
	if w.Interval > 0 {
		f.Every = formatInterval(w.Interval)
	}
	if w.KeepVersions > 0 {
		f.KeepVersions = strconv.Itoa(w.KeepVersions)
	}
	if w.KeepDays > 0 {
		f.KeepDays = strconv.Itoa(w.KeepDays)
	}
	return f
}

func readWatchForm(r *http.Request) *watchForm {
	return &watchForm{
		URL: strings.TrimSpace(r.FormValue("url")), Title: strings.TrimSpace(r.FormValue("title")),
		Zone: strings.TrimSpace(r.FormValue("zone")), Category: r.FormValue("category"),
		Every: strings.TrimSpace(r.FormValue("every")), Tags: r.FormValue("tags"),
		Paused: r.FormValue("paused") != "", KeepVersions: strings.TrimSpace(r.FormValue("keep_versions")),
		KeepDays: strings.TrimSpace(r.FormValue("keep_days")),
	}
}

// apply copies the form into w and validates the result.
func (f *watchForm) apply(w *changedigest.Watch) error {
	w.URL, w.Title, w.Zone, w.Paused = f.URL, f.Title, f.Zone, f.Paused
	w.Category = changedigest.Category(f.Category)
	w.Tags = changedigest.NormaliseTags([]string{f.Tags})
	w.Interval = 0
	if f.Every != "" {
		d, err := ParseInterval(f.Every)
		if err != nil {
			return err
		}
		w.Interval = d
	}
	var err error
	if w.KeepVersions, err = optionalInt(f.KeepVersions, "versions to keep"); err != nil {
		return err
	}
	if w.KeepDays, err = optionalInt(f.KeepDays, "days to keep"); err != nil {
		return err
	}
	if err := w.Validate(); err != nil {
		return err
	}
	if w.Zone != "" {
		if err := segmenter.CheckZone(w.Zone); err != nil {
			return err
		}
	}
	return nil
}

func optionalInt(s, what string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, changedigest.Errorf(changedigest.EINVALID, "%s: %q is not a whole number ≥ 0", what, s)
	}
	return n, nil
}

// ParseInterval reads a check interval such as "30m", "2h", "1d" or "1w".
// Errors: EINVALID naming the input.
func ParseInterval(s string) (time.Duration, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	mult := time.Duration(0)
	switch {
	case strings.HasSuffix(s, "d"):
		mult = 24 * time.Hour
	case strings.HasSuffix(s, "w"):
		mult = 7 * 24 * time.Hour
	}
	if mult != 0 {
		n, err := strconv.ParseFloat(strings.TrimSpace(s[:len(s)-1]), 64)
		if err != nil || n <= 0 {
			return 0, changedigest.Errorf(changedigest.EINVALID, "interval %q is not a duration such as 30m, 2h or 1d", s)
		}
		return time.Duration(n * float64(mult)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, changedigest.Errorf(changedigest.EINVALID, "interval %q is not a duration such as 30m, 2h or 1d", s)
	}
	return d, nil
}

func formatInterval(d time.Duration) string {
	switch {
	case d%(7*24*time.Hour) == 0:
		return strconv.Itoa(int(d/(7*24*time.Hour))) + "w"
	case d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return d.String()
}

func (s *Server) handleNewWatch(w http.ResponseWriter, r *http.Request) error {
	f := &watchForm{URL: r.URL.Query().Get("url"), Category: string(changedigest.CategoryPersonal)}
	return s.renderPage(w, r, http.StatusOK, "watch-form", "add", "Add a watch", f)
}

func (s *Server) handleCreateWatch(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	f := readWatchForm(r)
	nw := &changedigest.Watch{UserID: u.ID}
	if err := f.apply(nw); err != nil {
		return s.formError(w, r, "add", "Add a watch", f, err)
	}
	nw.NextCheck = s.now()
	if err := s.Store.CreateWatch(r.Context(), nw); err != nil {
		return s.formError(w, r, "add", "Add a watch", f, err)
	}
	s.setFlash(w, "info", "Watching "+nw.URL+". The first check runs in a moment.")
	return s.redirect(w, r, fmt.Sprintf("/watches/%d", nw.ID))
}

// formError shows the watch form again with the error, for user errors.
func (s *Server) formError(w http.ResponseWriter, r *http.Request, nav, title string, f *watchForm, err error) error {
	switch changedigest.ErrorCode(err) {
	case changedigest.EINVALID, changedigest.ECONFLICT:
		f.Error = changedigest.ErrorMessage(err)
		return s.renderPage(w, r, http.StatusBadRequest, "watch-form", nav, title, f)
	}
	return err
}

func (s *Server) handleEditWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "watch-form", "", "Edit "+wt.Name(), formOf(wt))
}

func (s *Server) handleUpdateWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	f := readWatchForm(r)
	f.ID = wt.ID
	_, err = s.Store.UpdateWatch(r.Context(), wt.UserID, wt.ID, func(x *changedigest.Watch) error {
		oldURL := x.URL
		if err := f.apply(x); err != nil {
			return err
		}
		if x.URL != oldURL { // a new address starts a fresh conditional GET
			x.ETag, x.LastModified = "", ""
		}
		return nil
	})
	if err != nil {
		return s.formError(w, r, "", "Edit "+wt.Name(), f, err)
	}
	s.setFlash(w, "info", "Saved.")
	return s.redirect(w, r, fmt.Sprintf("/watches/%d", wt.ID))
}

func (s *Server) handleDeleteWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteWatch(r.Context(), wt.UserID, wt.ID); err != nil {
		return err
	}
	s.setFlash(w, "info", "Stopped watching "+wt.URL+" and deleted its history.")
	return s.redirect(w, r, "/")
}

// handleCheckWatch checks a watch now and says what came of it.
func (s *Server) handleCheckWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	if s.Checker == nil {
		return changedigest.Errorf(changedigest.EUNAVAILABLE, "checks are not running in this server")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.RequestTimeout-5*time.Second)
	defer cancel()
	var rep crawl.Report
	sum, err := s.Checker.CheckNow(ctx, func(x crawl.Report) { rep = x }, wt)
	if err != nil {
		return err
	}
	switch {
	case sum.Skipped > 0:
		s.setFlash(w, "info", "A check of this watch is already running; its result will show here shortly.")
	case rep.Err != nil:
		s.setFlash(w, "error", "The check failed: "+rep.Err.Error())
	default:
		s.setFlash(w, "info", "Checked: "+checkResult(rep.Outcome.Result)+".")
	}
	return s.redirect(w, r, fmt.Sprintf("/watches/%d", wt.ID))
}

func checkResult(r crawl.Result) string {
	switch r {
	case crawl.NotModified:
		return "not modified since the last check"
	case crawl.Unchanged:
		return "no change"
	case crawl.Changed:
		return "changes found"
	case crawl.FirstVersion:
		return "first version stored"
	}
	return r.String()
}

// watchPage is the Data of the "watch" page.
type watchPage struct {
	*render.WatchPage
	Watch    watchRow
	Timeline []versionRow
	Latest   int
	Interval string
}

// Oldest is the sequence number of the oldest stored version, 0 for none.
func (p *watchPage) Oldest() int {
	if len(p.Timeline) == 0 {
		return 0
	}
	return p.Timeline[len(p.Timeline)-1].Seq
}

// versionRow is one version in a watch's timeline.
type versionRow struct {
	Seq     int
	At      time.Time
	Changes int
	Size    int
	Types   []changedigest.ChangeType
	Profile bool
	Status  int
}

func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	u, _ := requestUser(r)
	versions, err := s.allVersions(r.Context(), wt.ID)
	if err != nil {
		return err
	}
	m, err := s.Notify.Matcher(r.Context(), u.ID)
	if err != nil {
		return err
	}
	var events []render.Event
	points := make([]render.ChartPoint, 0, len(versions))
	var rows []versionRow
	for i := range versions {
		v := &versions[i]
		matches := notify.Match(m, v.Changes)
		profile := false
		for _, ms := range matches {
			profile = profile || len(ms) > 0
		}
		size := 0
		if len(v.Changes) > 0 {
			size = render.ChangeSize(v.Changes)
			if len(events) < 10 {
				events = append(events, render.Event{Watch: wt, Snapshot: v, Matches: matches})
			}
		}
		points = append(points, render.ChartPoint{At: v.FetchedAt, Size: size, Profile: profile})
		rows = append(rows, versionRow{Seq: v.Seq, At: v.FetchedAt, Changes: len(v.Changes), Size: size,
			Types: typesOf(v.Changes), Profile: profile, Status: v.Status})
	}
	slices.Reverse(points) // oldest first for the chart
	wp, err := s.Render.WatchPage(wt, events, points, s.feedURL(u, fmt.Sprintf("/watches/%d.xml", wt.ID)))
	if err != nil {
		return err
	}
	p := &watchPage{WatchPage: wp, Watch: rowOf(wt), Timeline: rows}
	if len(rows) > 0 {
		p.Latest = rows[0].Seq
	}
	if wt.Interval > 0 {
		p.Interval = "every " + formatInterval(wt.Interval)
	} else {
		p.Interval = string(cmp.Or(wt.Category, changedigest.CategoryPersonal)) + " (adapts to the page's change rate)"
	}
	return s.renderPage(w, r, http.StatusOK, "watch", "", wt.Name(), p)
}

// allVersions lists every stored version of a watch, newest first.
func (s *Server) allVersions(ctx context.Context, watchID int64) ([]changedigest.Snapshot, error) {
	var all []changedigest.Snapshot
	before := 0
	for {
		vs, err := s.Store.Versions(ctx, watchID, before, 1000)
		if err != nil {
			return nil, err
		}
		all = append(all, vs...)
		if len(vs) < 1000 {
			return all, nil
		}
		before = vs[len(vs)-1].Seq
	}
}

func typesOf(cs []changedigest.Change) []changedigest.ChangeType {
	var out []changedigest.ChangeType
	for _, c := range cs {
		if !slices.Contains(out, c.Type) {
			out = append(out, c.Type)
		}
	}
	return out
}

// tagPage is the Data of the "tag" page.
type tagPage struct {
	Tag     string
	Watches []watchRow
	FeedURL string
}

func (s *Server) handleTag(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	tag, err := tagParam(r)
	if err != nil {
		return err
	}
	ws, err := s.Store.Watches(r.Context(), u.ID, tag)
	if err != nil {
		return err
	}
	p := &tagPage{Tag: tag, FeedURL: s.feedURL(u, "/tags/"+pathEscape(tag)+".xml")}
	for i := range ws {
		p.Watches = append(p.Watches, rowOf(&ws[i]))
	}
	return s.renderPage(w, r, http.StatusOK, "tag", "", "Tag "+tag, p)
}

// tagParam reads the {tag} parameter. chi matches the escaped path when
// it holds an escaped slash ("c%23%2Fnet" for the tag "c#/net"), and then
// gives the parameter still escaped.
func tagParam(r *http.Request) (string, error) {
	v := chiParam(r, "tag")
	if r.URL.RawPath != "" {
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
	}
	tags := changedigest.NormaliseTags([]string{v})
	if len(tags) != 1 {
		return "", changedigest.Errorf(changedigest.ENOTFOUND, "no such tag")
	}
	return tags[0], nil
}
