package server

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/browser"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
	"github.com/changedigest/changedigest/segmenter"
)

// dashboardPage is the Data of the "dashboard" page.
type dashboardPage struct {
	List    *watchList
	Watches []watchRow
	Tags    []string
	FeedURL string
	Recent  []recentEvent
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
	Browser    bool   // rendered in a browser
	WaitFor    string // the selector the rendered page must show
	Steps      []changedigest.Step
	Shell      bool // fetched, and the page looks like an empty shell built by scripts
	// Request sums up the request options ("POST, 2 headers, basic auth
	// as ann"); empty for a plain GET. No secret is in it.
	Request string
	// FeedItems and FeedItemsKept, for a feed with more items than a
	// version keeps: how many it has and how many of the newest are
	// kept, with thousands separated ("40,000"); empty otherwise.
	FeedItems, FeedItemsKept string

	// Made once per row for the watches table, which would otherwise
	// call methods through reflection many times a row.
	Path                   string // the watch page's path below the site
	Checked, Changed, Next whenCell
	Tagged                 []tagLink
	// HTML is the rendered table row, when the server has it (rows.go).
	HTML template.HTML
}

// whenCell is a time as the watches table shows it.
type whenCell struct {
	Zero      bool
	ISO, Text string
}

func whenOf(t time.Time) whenCell {
	if t.IsZero() {
		return whenCell{Zero: true}
	}
	return whenCell{ISO: t.UTC().Format("2006-01-02T15:04:05Z"), Text: render.FormatTime(t)}
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
	row := watchRow{ID: w.ID, Name: w.Name(), URL: w.URL, Kind: w.Kind, Tags: w.Tags, Paused: w.Paused,
		LastCheck: w.LastChecked(), LastChange: w.LastChange, NextCheck: w.NextCheck, LastError: w.LastError, Checks: w.Checks,
		Browser: w.Render == changedigest.RenderBrowser, WaitFor: w.WaitFor, Steps: w.Steps,
		Shell: w.LooksLikeShell && w.Render != changedigest.RenderBrowser,
		Path:  "/watches/" + strconv.FormatInt(w.ID, 10), Checked: whenOf(w.LastChecked()), Changed: whenOf(w.LastChange),
		Next: whenOf(w.NextCheck), Tagged: tagLinks(w.Tags)}
	if w.FeedItems > 0 {
		row.FeedItems, row.FeedItemsKept = groupDigits(w.FeedItems), groupDigits(w.FeedItemsKept)
	}
	row.Request = requestSummary(w.Request)
	return row
}

// requestSummary writes what a watch's request options ask for, without
// their values.
func requestSummary(o *changedigest.RequestOptions) string {
	if o.IsEmpty() {
		return ""
	}
	parts := []string{cmp.Or(o.Method, "GET")}
	count := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, strconv.Itoa(n)+" "+many)
		}
	}
	if o.Body != "" {
		parts = append(parts, "a body of "+changedigest.FormatBytes(int64(len(o.Body))))
	}
	count(len(o.Headers), "header", "headers")
	count(len(o.Cookies), "cookie", "cookies")
	if o.BasicAuth != nil {
		parts = append(parts, "basic auth as "+o.BasicAuth.User)
	}
	return strings.Join(parts, ", ")
}

// groupDigits writes n with its thousands separated by commas.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	start := 0
	if n < 0 {
		start = 1
	}
	for i := len(s) - 3; i > start; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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
	list, err := s.watchList(r, u, "", "/")
	if err != nil {
		return err
	}
	p := &dashboardPage{FeedURL: s.feedURL(u, "/atom.xml"), Watches: list.Rows, Tags: list.Tags,
		Errors: list.Failing, List: list}
	if h, ok := s.Store.(storageHealth); ok {
		if since, full := h.StorageFull(); full {
			p.StorageFull = since
		}
	}
	evs, err := s.Notify.LazyEvents(r.Context(), pet.ChangeFilter{UserID: u.ID, Limit: 5})
	if err != nil {
		return err
	}
	if p.Recent, err = s.recentEvents(evs); err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "dashboard", "dashboard", "Dashboard", p)
}

// recentEvent is one of the dashboard's recent changes.
type recentEvent struct {
	Event render.EventView
	First bool // the newest, shown open
	// HTML is the rendered change (Server.panels).
	HTML template.HTML
}

// recentEvents renders the dashboard's recent changes, or takes them
// from the panels kept: a version's changes are viewed (word diffs of
// every change) and rendered once, open and folded (a new version moves
// the one before it down, folded), not at every look at the dashboard.
func (s *Server) recentEvents(evs []render.Event) ([]recentEvent, error) {
	out := make([]recentEvent, len(evs))
	for i, ev := range evs {
		key := ev.Key
		if key == 0 {
			key = render.EventKey(ev)
		}
		p, err := s.panels.Do(key, func() (panel, int, error) {
			if ev.Load != nil {
				var err error
				if ev, err = ev.Load(); err != nil {
					return panel{}, 0, err
				}
			}
			v, err := s.Render.View(ev, render.ViewOptions{Context: s.Render.Context, MaxChars: s.Render.MaxChangeChars})
			if err != nil {
				return panel{}, 0, err
			}
			var p panel
			if p.open, err = s.Render.Component("recent-event", &recentEvent{Event: v, First: true}); err != nil {
				return panel{}, 0, err
			}
			if p.folded, err = s.Render.Component("recent-event", &recentEvent{Event: v}); err != nil {
				return panel{}, 0, err
			}
			return p, len(p.open) + len(p.folded), nil
		})
		if err != nil {
			return nil, err
		}
		out[i] = recentEvent{First: i == 0, HTML: p.folded}
		if i == 0 {
			out[i].HTML = p.open
		}
	}
	return out, nil
}

// watchesPerPage is the length of a page of the dashboard and tag pages.
const watchesPerPage = 50

// watchList is one page of a list of watches, with its order and page
// links. Links keep the list's query: the order and, on the tag's own
// page, the tag.
type watchList struct {
	Rows    []watchRow
	Tags    []string
	Total   int
	Failing int
	Sort    string
	Sorts   []sortLink
	Page    int
	Pages   int
	First   int // 1-based position of the first row shown
	Last    int
	PrevURL string
	NextURL string
}

// sortLink is an order the list can be shown in.
type sortLink struct {
	Label, URL string
	Current    bool
}

var sortLabels = map[pet.WatchSort]string{
	pet.SortAdded: "added", pet.SortName: "name", pet.SortChanged: "last change",
	pet.SortChecked: "last check", pet.SortFailing: "failing first",
}

// watchList reads the ?sort= and ?page= of a list of the user's watches
// (all of them, or those with tag) shown at path. Errors: EINVALID for a
// bad order or page number; ENOTFOUND for a page past the end.
func (s *Server) watchList(r *http.Request, u *changedigest.User, tag, path string) (*watchList, error) {
	q := r.URL.Query()
	order, err := pet.ParseWatchSort(q.Get("sort"))
	if err != nil {
		return nil, err
	}
	page := 1
	if v := q.Get("page"); v != "" {
		if page, err = strconv.Atoi(v); err != nil || page < 1 || page > 1_000_000 {
			return nil, changedigest.Errorf(changedigest.EINVALID, "page: %q is not a page number", clip(v))
		}
	}
	res, err := s.Store.WatchPage(r.Context(), u.ID, pet.WatchQuery{Tag: tag, Sort: order,
		Offset: (page - 1) * watchesPerPage, Limit: watchesPerPage})
	if err != nil {
		return nil, err
	}
	l := &watchList{Tags: res.Tags, Total: res.Total, Failing: res.Failing, Sort: string(order), Page: page,
		Pages: max(1, (res.Total+watchesPerPage-1)/watchesPerPage)}
	if page > l.Pages {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "there is no page %d: the list has %d", page, l.Pages)
	}
	for i := range res.Watches {
		l.Rows = append(l.Rows, rowOf(&res.Watches[i]))
	}
	s.renderRows(l.Rows)
	if len(l.Rows) > 0 {
		l.First, l.Last = res.Offset+1, res.Offset+len(l.Rows)
	}
	link := func(o pet.WatchSort, page int) string {
		v := url.Values{}
		if o != pet.SortAdded {
			v.Set("sort", string(o))
		}
		if page > 1 {
			v.Set("page", strconv.Itoa(page))
		}
		if len(v) == 0 {
			return s.Render.Path(path)
		}
		return s.Render.Path(path) + "?" + v.Encode()
	}
	for _, o := range pet.WatchSorts {
		l.Sorts = append(l.Sorts, sortLink{Label: sortLabels[o], URL: link(o, 1), Current: o == order})
	}
	if page > 1 {
		l.PrevURL = link(order, page-1)
	}
	if page < l.Pages {
		l.NextURL = link(order, page+1)
	}
	return l, nil
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
	// Filters (see changedigest.Notable): texts one per line; Types are
	// the change types told (the default when the form did not show them:
	// changedigest.DefaultNotifyTypes).
	IgnoreText      string
	TriggerText     string
	MinSignificance string
	Types           []string
	OnlyInterests   bool
	ShowNoise       bool
	// ValueSelector and When: the value read from each version and the
	// condition on it (changedigest.ParseCondition).
	ValueSelector string
	When          string
	Browser       bool   // render the page in a browser
	WaitFor       string // with Browser: the CSS selector to wait for
	Steps         string // with Browser: one step a line ("click #accept")
	// Request options: Method GET or POST, Body with POST, Headers one
	// "Name: value" a line, Cookies one "name=value" a line (secrets
	// shown as their hints, which keep them when sent back), basic auth.
	// AuthPassword is never shown; empty keeps the stored one, whose hint
	// is AuthHint.
	Method       string
	Body         string
	Headers      string
	Cookies      string
	AuthUser     string
	AuthPassword string
	AuthHint     string
	Error        string
	// ShotSeq is the newest version with a screenshot, to pick the zone
	// on; 0 when none has (and for a new watch).
	ShotSeq int
}

// Told reports whether changes of type t are told (a checkbox of the form).
func (f *watchForm) Told(t string) bool {
	if len(f.Types) == 0 {
		return slices.Contains(changedigest.DefaultNotifyTypes, changedigest.ChangeType(t))
	}
	return slices.Contains(f.Types, t)
}

func formOf(w *changedigest.Watch) *watchForm {
	f := &watchForm{ID: w.ID, URL: w.URL, Title: w.Title, Zone: w.Zone, Category: string(w.Category),
		Tags: strings.Join(w.Tags, ", "), Paused: w.Paused,
		Browser: w.Render == changedigest.RenderBrowser, WaitFor: w.WaitFor, Steps: stepLines(w.Steps)}
	if w.Interval > 0 {
		f.Every = formatInterval(w.Interval)
	}
	if w.KeepVersions > 0 {
		f.KeepVersions = strconv.Itoa(w.KeepVersions)
	}
	if w.KeepDays > 0 {
		f.KeepDays = strconv.Itoa(w.KeepDays)
	}
	f.IgnoreText, f.TriggerText = strings.Join(w.IgnoreText, "\n"), strings.Join(w.TriggerText, "\n")
	if w.MinSignificance > 0 {
		f.MinSignificance = strconv.FormatFloat(w.MinSignificance, 'g', -1, 64)
	}
	for _, t := range w.NotifyTypes {
		f.Types = append(f.Types, string(t))
	}
	f.OnlyInterests, f.ShowNoise = w.OnlyInterests, w.ShowNoise
	f.ValueSelector, f.When = w.ValueSelector, w.When
	f.Method = "GET"
	if o := w.Request; o != nil {
		f.Method = cmp.Or(o.Method, "GET")
		f.Body = o.Body
		var hs, cs []string
		for _, h := range o.Headers {
			hs = append(hs, h.Name+": "+cmp.Or(h.Value, h.Secret.Hint))
		}
		for _, c := range o.Cookies {
			cs = append(cs, c.Name+"="+c.Value.Hint)
		}
		f.Headers, f.Cookies = strings.Join(hs, "\n"), strings.Join(cs, "\n")
		if a := o.BasicAuth; a != nil {
			f.AuthUser, f.AuthHint = a.User, a.Password.Hint
		}
	}
	return f
}

// requestOptions reads the form's request options. Errors: EINVALID
// naming the line of a header or cookie that is not written as one.
func (f *watchForm) requestOptions() (*changedigest.RequestOptions, error) {
	o := &changedigest.RequestOptions{Method: f.Method, Body: f.Body}
	for _, l := range lines(f.Headers) {
		h, err := changedigest.ParseHeaderLine(l)
		if err != nil {
			return nil, err
		}
		o.Headers = append(o.Headers, h)
	}
	for _, l := range lines(f.Cookies) {
		c, err := changedigest.ParseCookieLine(l)
		if err != nil {
			return nil, err
		}
		o.Cookies = append(o.Cookies, c)
	}
	if f.AuthUser != "" || f.AuthPassword != "" {
		o.BasicAuth = &changedigest.BasicAuth{User: f.AuthUser, Password: changedigest.Secret{Plain: f.AuthPassword}}
	}
	return o, nil
}

func readWatchForm(r *http.Request) *watchForm {
	return &watchForm{
		URL: strings.TrimSpace(r.FormValue("url")), Title: strings.TrimSpace(r.FormValue("title")),
		Zone: strings.TrimSpace(r.FormValue("zone")), Category: r.FormValue("category"),
		Every: strings.TrimSpace(r.FormValue("every")), Tags: r.FormValue("tags"),
		Paused: r.FormValue("paused") != "", KeepVersions: strings.TrimSpace(r.FormValue("keep_versions")),
		KeepDays:   strings.TrimSpace(r.FormValue("keep_days")),
		IgnoreText: r.FormValue("ignore_text"), TriggerText: r.FormValue("trigger_text"),
		MinSignificance: strings.TrimSpace(r.FormValue("min_significance")),
		Types:           formTypes(r),
		OnlyInterests:   r.FormValue("only_interests") != "", ShowNoise: r.FormValue("show_noise") != "",
		ValueSelector: strings.TrimSpace(r.FormValue("value_selector")), When: strings.TrimSpace(r.FormValue("when")),
		Browser: r.FormValue("render") == "browser", WaitFor: strings.TrimSpace(r.FormValue("wait_for")),
		Steps:  r.FormValue("steps"),
		Method: r.FormValue("method"), Body: strings.ReplaceAll(r.FormValue("body"), "\r\n", "\n"),
		Headers: r.FormValue("headers"), Cookies: r.FormValue("cookies"),
		AuthUser: strings.TrimSpace(r.FormValue("auth_user")), AuthPassword: r.FormValue("auth_password"),
	}
}

// formTypes reads the change-type checkboxes; a form that did not show
// them (no "types_shown") tells every type.
func formTypes(r *http.Request) []string {
	if r.FormValue("types_shown") == "" {
		return nil
	}
	ts := r.Form["notify_types"]
	if ts == nil {
		ts = []string{} // none checked: Validate says so
	}
	return ts
}

// lines splits a text area into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// stepLines writes steps one a line, as the form shows them.
func stepLines(steps []changedigest.Step) string {
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = s.String()
	}
	return strings.Join(lines, "\n")
}

// parseSteps reads the form's steps, one a line; blank lines and lines
// starting with # are skipped. Errors name the line.
func parseSteps(text string) ([]changedigest.Step, error) {
	var steps []changedigest.Step
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := changedigest.ParseStep(line)
		if err != nil {
			return nil, changedigest.Errorf(changedigest.EINVALID, "steps, line %d: %s", i+1, changedigest.ErrorMessage(err))
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// apply copies the form into w and validates the result. The secrets of
// its request options that the form leaves empty (or gives as their
// hints) are w's; new ones are sealed with seal (an EUNAVAILABLE error
// when seal is nil).
func (f *watchForm) apply(w *changedigest.Watch, seal changedigest.Sealer) error {
	opts, err := f.requestOptions()
	if err != nil {
		return err
	}
	opts.KeepSecrets(w.Request)
	w.Request = opts
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
	if w.KeepVersions, err = optionalInt(f.KeepVersions, "versions to keep"); err != nil {
		return err
	}
	if w.KeepDays, err = optionalInt(f.KeepDays, "days to keep"); err != nil {
		return err
	}
	w.IgnoreText, w.TriggerText = lines(f.IgnoreText), lines(f.TriggerText)
	w.MinSignificance = 0
	if f.MinSignificance != "" {
		v, err := strconv.ParseFloat(f.MinSignificance, 64)
		if err != nil {
			return changedigest.Errorf(changedigest.EINVALID, "minimum significance: %q is not a number from 0 to 1", f.MinSignificance)
		}
		w.MinSignificance = v
	}
	if f.Types != nil && len(f.Types) == 0 {
		return changedigest.Errorf(changedigest.EINVALID, "change types to tell: choose at least one")
	}
	w.NotifyTypes = nil
	for _, t := range f.Types {
		w.NotifyTypes = append(w.NotifyTypes, changedigest.ChangeType(t))
	}
	w.OnlyInterests, w.ShowNoise = f.OnlyInterests, f.ShowNoise
	w.ValueSelector, w.When = f.ValueSelector, f.When
	w.Render, w.WaitFor = changedigest.RenderFetch, f.WaitFor
	if f.Browser {
		w.Render = changedigest.RenderBrowser
	}
	if w.Steps, err = parseSteps(f.Steps); err != nil {
		return err
	}
	if err := CheckWatch(w); err != nil {
		return err
	}
	return sealSecrets(w, seal)
}

// CheckWatch checks a watch's definition as every way of saving one
// does (the web form, the API, the command line): its fields
// (Watch.Validate), its browser steps and the selector they wait for,
// its zone and its value selector. Errors: EINVALID naming the field.
func CheckWatch(w *changedigest.Watch) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if err := browser.CheckWaitFor(w.WaitFor); err != nil {
		return err
	}
	if err := browser.CheckSteps(w.Steps); err != nil {
		return err
	}
	if err := segmenter.CheckZone(w.Zone); err != nil {
		return err
	}
	return segmenter.CheckValueSelector(w.ValueSelector)
}

// sealSecrets seals the plain secrets of w's request options with seal.
// Errors: EUNAVAILABLE when there are some and seal is nil; the sealer's.
func sealSecrets(w *changedigest.Watch, seal changedigest.Sealer) error {
	if !w.Request.HasSecrets() {
		return nil
	}
	if seal == nil {
		return changedigest.Errorf(changedigest.EUNAVAILABLE, "this server has no key to keep secrets (passwords, cookies, credential headers) with")
	}
	if err := w.Request.Seal(seal); err != nil {
		return fmt.Errorf("server: seal the watch's secrets: %w", err)
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
	if err := f.apply(nw, s.Secrets); err != nil {
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
		if f.ID != 0 && f.ShotSeq == 0 {
			f.ShotSeq, _ = s.newestShot(r.Context(), f.ID) // the link to the picker only
		}
		return s.renderPage(w, r, http.StatusBadRequest, "watch-form", nav, title, f)
	}
	return err
}

func (s *Server) handleEditWatch(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	f := formOf(wt)
	if f.ShotSeq, err = s.newestShot(r.Context(), wt.ID); err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "watch-form", "", "Edit "+wt.Name(), f)
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
		if err := f.apply(x, s.Secrets); err != nil {
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
	Agent    *agentView
	// Value is the watch's value and its series, for a watch that reads one.
	Value *valueView
	// ShotSeq is the newest version with a screenshot, to pick the zone
	// on; 0 when none has.
	ShotSeq int
}

// valueView is a watch's value on its page: the newest version's value,
// why it could not be read, the condition and the series as a chart.
type valueView struct {
	Selector string // "" for the page's offer
	When     string
	Current  string // the newest value, with its currency and availability
	Error    string // why the newest version's value was not read
	// Held says whether the newest version met the condition; Why says
	// why not.
	Held  bool
	Why   string
	Chart template.HTML
}

// valueViewOf builds the value panel of w from its versions, newest first.
func valueViewOf(w *changedigest.Watch, versions []changedigest.Snapshot) *valueView {
	if !w.ReadsValue() {
		return nil
	}
	vv := &valueView{Selector: w.ValueSelector, When: w.When}
	cond := w.Condition()
	var points []render.ValuePoint
	unit := ""
	for i := range versions {
		v := versions[i].Value
		if v == nil {
			continue
		}
		if i == 0 {
			vv.Error = v.Error
			vv.Held, vv.Why = cond.Holds(v)
			vv.Current = v.String()
		}
		if v.Number != nil {
			held, _ := cond.Holds(v)
			points = append(points, render.ValuePoint{At: versions[i].FetchedAt, Value: *v.Number, Told: held && w.When != "" && i < len(versions)-1})
			if unit == "" {
				unit = v.Currency
			}
		}
	}
	if len(versions) > 0 && versions[0].Value == nil {
		vv.Error = "no value was read from the newest version (it was stored before the watch read one)"
	}
	vv.Chart = render.ValueChart(points, unit)
	return vv
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
	// Detected says what led to the version: schedule, agent or client.
	Detected changedigest.DetectedBy
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
			Types: typesOf(v.Changes), Profile: profile, Status: v.Status, Detected: wt.DetectedBy(v.Seq)})
	}
	slices.Reverse(points) // oldest first for the chart
	wp, err := s.Render.WatchPage(wt, events, points, s.feedURL(u, fmt.Sprintf("/watches/%d.xml", wt.ID)))
	if err != nil {
		return err
	}
	p := &watchPage{WatchPage: wp, Watch: rowOf(wt), Timeline: rows, Agent: s.agentViewOf(wt), Value: valueViewOf(wt, versions)}
	if len(rows) > 0 {
		p.Latest = rows[0].Seq
	}
	p.ShotSeq = newestShotOf(versions)
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
	List    *watchList
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
	list, err := s.watchList(r, u, tag, "/tags/"+pathEscape(tag))
	if err != nil {
		return err
	}
	p := &tagPage{Tag: tag, FeedURL: s.feedURL(u, "/tags/"+pathEscape(tag)+".xml"), Watches: list.Rows, List: list}
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
	tag, ok := oneTag(v)
	if !ok {
		return "", changedigest.Errorf(changedigest.ENOTFOUND, "no such tag")
	}
	return tag, nil
}

// oneTag normalises v as one tag; false when it is not one tag a watch
// could carry (empty, a list, or longer than changedigest.MaxTagLen).
func oneTag(v string) (string, bool) {
	if len(v) > 4*changedigest.MaxTagLen { // before normalising a huge value
		return "", false
	}
	tags := changedigest.NormaliseTags([]string{v})
	if len(tags) != 1 || len(tags[0]) > changedigest.MaxTagLen {
		return "", false
	}
	return tags[0], true
}
