package changedigest

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind says whether a document is an HTML page or a feed.
type Kind string

// Kinds of documents.
const (
	KindPage Kind = "page"
	KindFeed Kind = "feed"
)

// Category is the kind of site a watch follows; it sets the first revisit
// interval until the page's own change rate is known.
type Category string

// Categories and their first revisit intervals (CaSePer's revisit interval flag).
const (
	CategoryNews     Category = "news"     // 1 h
	CategoryPersonal Category = "personal" // 24 h
	CategoryAcademic Category = "academic" // 48 h
)

// Interval is the first revisit interval of the category; 24 h for an
// unknown or empty category.
func (c Category) Interval() time.Duration {
	switch c {
	case CategoryNews:
		return time.Hour
	case CategoryAcademic:
		return 48 * time.Hour
	default:
		return 24 * time.Hour
	}
}

// ParseCategory checks a category name; the empty string means personal.
func ParseCategory(s string) (Category, error) {
	switch c := Category(strings.ToLower(strings.TrimSpace(s))); c {
	case "":
		return CategoryPersonal, nil
	case CategoryNews, CategoryPersonal, CategoryAcademic:
		return c, nil
	default:
		return "", Errorf(EINVALID, "unknown category %q (want news, personal or academic)", s)
	}
}

// Watch is one page or feed a user follows, with its schedule state.
type Watch struct {
	ID     int64  `json:"id"`
	UserID int64  `json:"user_id"`
	URL    string `json:"url"`
	Title  string `json:"title,omitempty"`
	// Kind is detected on the first successful fetch; empty until then.
	Kind Kind `json:"kind,omitempty"`
	// Zone is an optional CSS selector restricting detection to part of a page.
	Zone     string   `json:"zone,omitempty"`
	Category Category `json:"category,omitempty"`
	// Interval, when set, overrides the category and the estimated change rate.
	Interval time.Duration `json:"interval,omitempty"`
	Tags     []string      `json:"tags,omitempty"`
	Paused   bool          `json:"paused,omitempty"`
	// KeepVersions and KeepDays limit the stored history (0 = the store's
	// default). The newest versions the signature matrix needs are always kept.
	KeepVersions int `json:"keep_versions,omitempty"`
	KeepDays     int `json:"keep_days,omitempty"`

	// Filters say which changes are told (feeds, digest, e-mail; see
	// Notable); the track keeps every change. IgnoreText and TriggerText
	// are plain texts (any case) or regular expressions between slashes.
	IgnoreText  []string `json:"ignore_text,omitempty"`
	TriggerText []string `json:"trigger_text,omitempty"`
	// MinSignificance (0..1): versions below it are minor and not told.
	MinSignificance float64 `json:"min_significance,omitempty"`
	// NotifyTypes lists the change types told; empty tells every type.
	NotifyTypes []ChangeType `json:"notify_types,omitempty"`
	// OnlyInterests tells only the changes that match the owner's interests.
	OnlyInterests bool `json:"only_interests,omitempty"`
	// ShowNoise tells noise changes too.
	ShowNoise bool `json:"show_noise,omitempty"`
	// ValueSelector reads a value (a price, an availability) from each
	// version: a CSS selector, an XPath expression ("xpath:…" or "/…") or,
	// for a JSON document, a JSON path ("$.offer.price"). Empty with When
	// set, the value is the page's offer in its structured data (ld+json
	// Offer: price and availability). The series of values is kept on
	// the versions (Snapshot.Value).
	ValueSelector string `json:"value_selector,omitempty"`
	// When, when set, tells a version only when its value meets this
	// condition ("below 20", "drop 10%", "in stock"; see ParseCondition).
	When string `json:"when,omitempty"`
	// Render is how the page is read: fetched (the default) or rendered
	// in a headless browser, for pages that build their content with
	// JavaScript. WaitFor is a CSS selector the rendered page must show
	// before it is read.
	Render  Render `json:"render,omitempty"`
	WaitFor string `json:"wait_for,omitempty"`
	// Steps run on the rendered page before it is read (cookie walls,
	// "load more" buttons); browser watches only, at most MaxSteps.
	Steps []Step `json:"steps,omitempty"`
	// Request, when set, says how the page is asked for: headers,
	// cookies, basic auth, a POST body (fetched pages only). Its secrets
	// are sealed.
	Request *RequestOptions `json:"request,omitempty"`
	// LooksLikeShell is set by the crawler when the last fetched version
	// had little visible text and large scripts: rendering would help.
	LooksLikeShell bool `json:"looks_like_shell,omitempty"`
	// FeedItems is set by the crawler when the last fetched version of a
	// feed had more items than a version keeps (the segmenter's item
	// limit): the number it had. Only its newest FeedItemsKept were kept
	// and compared.
	FeedItems     int `json:"feed_items,omitempty"`
	FeedItemsKept int `json:"feed_items_kept,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// Schedule and fetch state, kept by the crawler.
	NextCheck    time.Time `json:"next_check"`
	LastCheck    time.Time `json:"last_check,omitzero"`
	LastChange   time.Time `json:"last_change,omitzero"`
	LastError    string    `json:"last_error,omitempty"`
	LastErrorAt  time.Time `json:"last_error_at,omitzero"`
	ErrorCount   int       `json:"error_count,omitempty"` // consecutive failed checks
	Checks       int       `json:"checks"`                // successful checks
	ChangeChecks int       `json:"change_checks"`         // successful checks that found a change
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	// RetryAfter is set from a 429 or 503 Retry-After header.
	RetryAfter time.Time `json:"retry_after,omitzero"`
	// Samples are the most recent successful checks, oldest first, as the
	// change-rate estimator needs them; the crawler keeps the list short.
	Samples []CheckSample `json:"samples,omitempty"`
	// DueByReport says a report (a page agent's or a polling client's)
	// made the watch due: the next successful check that finds a change
	// records its sample as Reported. The check clears it.
	DueByReport bool `json:"due_by_report,omitempty"`

	// AgentKey is the public key of the watch's page agent (seed 004),
	// named in the snippet the site owner puts in the page; empty while
	// the agent is off. It is not a secret.
	AgentKey string `json:"agent_key,omitempty"`
	// AgentThreshold is the least time between two digester agents sent
	// for the page (the paper's t); 0 means the default, 10 minutes.
	AgentThreshold time.Duration `json:"agent_threshold,omitempty"`
	// Detections say which versions were found by a page agent or a
	// client rather than by the schedule, newest last (a bounded list).
	Detections []Detection `json:"detections,omitempty"`
	// AgentSent is when the page agent's digester was last sent for the
	// page: the next is sent once AgentThreshold has passed since (the
	// paper's t counts from it). The agent manager keeps it in the
	// store's watch, as it keeps NextCheck; a definition of the watch
	// does not carry it (KeepLearned).
	AgentSent time.Time `json:"agent_sent,omitzero"`
	// AgentVolatile names the parts of the page's summary ("title",
	// "header", "main", "footer") that the page agent learned differ in
	// browsers on every view, its scripts changing them: reports that
	// differ from the stored version only there are not verified. Kept
	// like AgentSent.
	AgentVolatile []string `json:"agent_volatile,omitempty"`
}

// DetectedBy says what led to a version being fetched.
type DetectedBy string

// Ways a version is detected.
const (
	DetectedBySchedule DetectedBy = "schedule"
	DetectedByAgent    DetectedBy = "agent"
	DetectedByClient   DetectedBy = "client"
)

// Detection records that version Seq was fetched because of a report.
type Detection struct {
	Seq int        `json:"seq"`
	By  DetectedBy `json:"by"`
	// At is when the report that led to the fetch arrived.
	At time.Time `json:"at"`
}

// MaxDetections bounds Watch.Detections.
const MaxDetections = 200

// DetectedBy says how version seq was detected: by an agent or a client
// when a detection is recorded for it, else by the schedule.
func (w *Watch) DetectedBy(seq int) DetectedBy {
	for i := len(w.Detections) - 1; i >= 0; i-- {
		if w.Detections[i].Seq == seq {
			return w.Detections[i].By
		}
	}
	return DetectedBySchedule
}

// CheckSample is one successful check as the change-rate estimator sees
// it: the time since the previous successful check and whether a change
// was found in between. A page is only observed at check times, so several
// changes within one interval count as one.
type CheckSample struct {
	Interval time.Duration `json:"i"`
	Changed  bool          `json:"c,omitempty"`
	// Reported says the check was made due by a report that the page
	// had changed, and found the change: its interval ended because a
	// change came (soon before it), so it tells when the first change
	// came, not only whether one came by a time chosen beforehand.
	Reported bool `json:"r,omitempty"`
}

// Validate checks the fields a user sets and normalises them in place.
func (w *Watch) Validate() error {
	w.URL = strings.TrimSpace(w.URL)
	if w.URL == "" {
		return Errorf(EINVALID, "watch URL is required")
	}
	w.URL = withScheme(w.URL)
	u, err := url.Parse(w.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Errorf(EINVALID, "watch URL %q is not an absolute http or https URL", w.URL)
	}
	c, err := ParseCategory(string(w.Category))
	if err != nil {
		return err
	}
	w.Category = c
	if w.Interval < 0 {
		return Errorf(EINVALID, "interval %s is negative", w.Interval)
	}
	if w.Interval != 0 && w.Interval < time.Minute {
		return Errorf(EINVALID, "interval %s is shorter than one minute", w.Interval)
	}
	w.Tags = NormaliseTags(w.Tags)
	for _, t := range w.Tags {
		if len(t) > MaxTagLen {
			return Errorf(EINVALID, "tag %q is longer than %d characters", t, MaxTagLen)
		}
	}
	if w.KeepVersions < 0 || w.KeepDays < 0 {
		return Errorf(EINVALID, "retention must not be negative")
	}
	if w.AgentThreshold < 0 {
		return Errorf(EINVALID, "agent threshold %s is negative", w.AgentThreshold)
	}
	if len(w.Zone) > 1024 {
		return Errorf(EINVALID, "zone selector is longer than 1024 characters")
	}
	r, err := ParseRender(string(w.Render))
	if err != nil {
		return err
	}
	w.Render = r
	w.WaitFor = strings.TrimSpace(w.WaitFor)
	if len(w.WaitFor) > 1024 {
		return Errorf(EINVALID, "wait-for selector is longer than 1024 characters")
	}
	if len(w.Steps) == 0 {
		w.Steps = nil
	}
	if len(w.Steps) > MaxSteps {
		return Errorf(EINVALID, "%d steps is more than %d", len(w.Steps), MaxSteps)
	}
	if len(w.Steps) > 0 && w.Render != RenderBrowser {
		return Errorf(EINVALID, "steps need the page to be rendered in a browser")
	}
	for i := range w.Steps {
		if err := w.Steps[i].Validate(); err != nil {
			return Errorf(EINVALID, "step %d: %s", i+1, ErrorMessage(err))
		}
	}
	if err := w.Request.Validate(); err != nil {
		return err
	}
	if w.Request.IsEmpty() {
		w.Request = nil
	}
	if w.Request != nil && w.Render == RenderBrowser {
		return Errorf(EINVALID, "request options (headers, cookies, basic auth, POST) apply to fetched pages, not to pages rendered in a browser")
	}
	return w.validateFilters()
}

// withScheme reads a URL written without a scheme, as people write them
// ("example.org/news"), as https.
func withScheme(s string) string {
	if strings.Contains(s, "://") || strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \t") {
		return s
	}
	host, _, _ := strings.Cut(s, "/")
	host, _, _ = strings.Cut(host, "?")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" || strings.Contains(host, ".") && !strings.HasPrefix(host, ".") && !strings.HasSuffix(host, ".") {
		return "https://" + s
	}
	return s
}

// LastChecked is when w was last checked, whether the check succeeded
// (LastCheck) or failed (LastErrorAt); zero when it never was.
func (w *Watch) LastChecked() time.Time {
	if w.LastErrorAt.After(w.LastCheck) {
		return w.LastErrorAt
	}
	return w.LastCheck
}

// MaxTagLen is the longest tag a watch may carry, in bytes.
const MaxTagLen = 64

// Limits on what a user gives a watch, beyond those Validate checks (a
// watch stored before they were set still validates).
const (
	MaxTags     = 20   // tags on one watch
	MaxTitleLen = 200  // characters of a watch's name
	MaxURLLen   = 2048 // bytes of a watch's URL
)

// CheckInput checks what a user gives a watch against MaxTags,
// MaxTitleLen and MaxURLLen: the URL, name and tags of a new watch (old
// nil), or those that differ from old, the watch as stored. Stores call
// it where a user creates a watch or changes its definition, besides
// Validate.
func (w *Watch) CheckInput(old *Watch) error {
	if len(w.URL) > MaxURLLen && (old == nil || w.URL != old.URL) {
		return Errorf(EINVALID, "watch URL of %d bytes is longer than %d", len(w.URL), MaxURLLen)
	}
	if n := utf8.RuneCountInString(w.Title); n > MaxTitleLen && (old == nil || w.Title != old.Title) {
		return Errorf(EINVALID, "watch name of %d characters is longer than %d", n, MaxTitleLen)
	}
	if tags := NormaliseTags(w.Tags); len(tags) > MaxTags && (old == nil || !slices.Equal(tags, old.Tags)) {
		return Errorf(EINVALID, "%d tags is more than the %d a watch may carry", len(tags), MaxTags)
	}
	return nil
}

// NormaliseTags trims, lower-cases and de-duplicates tags, keeping their order.
func NormaliseTags(tags []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tags {
		for _, part := range strings.Split(t, ",") {
			p := strings.ToLower(strings.TrimSpace(part))
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// HasTag reports whether the watch carries tag t.
func (w *Watch) HasTag(t string) bool {
	for _, x := range w.Tags {
		if x == t {
			return true
		}
	}
	return false
}

// Name is what to call the watch in lists: its title, else its URL.
func (w *Watch) Name() string {
	if w.Title != "" {
		return w.Title
	}
	return w.URL
}

func (w *Watch) String() string { return fmt.Sprintf("watch %d (%s)", w.ID, w.URL) }

// Render is how a watch reads its page.
type Render string

// Ways to read a page.
const (
	RenderFetch   Render = ""        // an HTTP fetch of the document (the default)
	RenderBrowser Render = "browser" // headless Chromium, after the page's scripts ran
)

// ParseRender checks a render mode: "browser", or "" or "fetch" for a
// plain fetch. Errors: EINVALID naming the mode.
func ParseRender(s string) (Render, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "fetch":
		return RenderFetch, nil
	case "browser":
		return RenderBrowser, nil
	default:
		return "", Errorf(EINVALID, "unknown render mode %q (want fetch or browser)", s)
	}
}

// MaxSteps bounds the steps of a watch.
const MaxSteps = 10

// Step is one action on a rendered page before it is read, as a user
// would do it: click an element, type into a field, or wait for an
// element to show. Each step has a time limit of its own.
type Step struct {
	// Action is click, type or wait.
	Action   string `json:"action"`
	Selector string `json:"selector"`
	// Value is the text to type (type only).
	Value string `json:"value,omitempty"`
}

// Validate checks and normalises a step: a known action, a selector of
// at most 1024 bytes, a value only for type (at most 1024 bytes).
// Errors: EINVALID naming what is wrong.
func (s *Step) Validate() error {
	s.Action = strings.ToLower(strings.TrimSpace(s.Action))
	s.Selector = strings.TrimSpace(s.Selector)
	switch s.Action {
	case "click", "wait", "type":
	case "":
		return Errorf(EINVALID, "the action is missing (want click, type or wait)")
	default:
		return Errorf(EINVALID, "unknown action %q (want click, type or wait)", s.Action)
	}
	switch {
	case s.Selector == "":
		return Errorf(EINVALID, "%s needs a CSS selector", s.Action)
	case len(s.Selector) > 1024:
		return Errorf(EINVALID, "the selector is longer than 1024 characters")
	case s.Action != "type" && s.Value != "":
		return Errorf(EINVALID, "%s takes no text (only type does)", s.Action)
	case len(s.Value) > 1024:
		return Errorf(EINVALID, "the text to type is longer than 1024 characters")
	case strings.ContainsAny(s.Selector+s.Value, "\r\n"):
		return Errorf(EINVALID, "a step is one line")
	case s.Action == "type" && strings.ContainsAny(s.Selector, " \t") && strings.Contains(s.Selector, `"`):
		return Errorf(EINVALID, "type: a selector with spaces cannot hold double quotes (use single quotes)")
	}
	return nil
}

// ParseStep reads a step written as one line: "click SELECTOR",
// "wait SELECTOR" or "type SELECTOR TEXT". For click and wait the rest
// of the line is the selector; for type the selector is one word, or
// quoted ("main form input") when it has spaces, and the rest is the
// text. Errors: EINVALID naming what is wrong.
func ParseStep(line string) (Step, error) {
	line = strings.TrimSpace(line)
	action, rest, _ := strings.Cut(line, " ")
	s := Step{Action: action, Selector: strings.TrimSpace(rest)}
	if strings.EqualFold(action, "type") {
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return Step{}, Errorf(EINVALID, "type %s: the quoted selector has no closing quote", rest)
			}
			s.Selector, s.Value = rest[1:1+end], strings.TrimSpace(rest[2+end:])
		} else {
			s.Selector, s.Value, _ = strings.Cut(rest, " ")
			s.Value = strings.TrimSpace(s.Value)
		}
		if s.Value == "" && s.Selector != "" {
			return Step{}, Errorf(EINVALID, "type %s: the text to type is missing (type SELECTOR TEXT)", s.Selector)
		}
	}
	if err := s.Validate(); err != nil {
		return Step{}, err
	}
	return s, nil
}

// String writes the step as ParseStep reads it.
func (s Step) String() string {
	if s.Action != "type" {
		return s.Action + " " + s.Selector
	}
	sel := s.Selector
	if strings.ContainsAny(sel, " \t") {
		sel = `"` + sel + `"`
	}
	return s.Action + " " + sel + " " + s.Value
}

// CopySchedule sets w's schedule state, the fields the crawler owns
// (NextCheck through DueByReport), to src's.
func (w *Watch) CopySchedule(src *Watch) {
	w.NextCheck, w.LastCheck, w.LastChange = src.NextCheck, src.LastCheck, src.LastChange
	w.LastError, w.LastErrorAt, w.ErrorCount = src.LastError, src.LastErrorAt, src.ErrorCount
	w.Checks, w.ChangeChecks = src.Checks, src.ChangeChecks
	w.ETag, w.LastModified, w.RetryAfter = src.ETag, src.LastModified, src.RetryAfter
	w.Samples = slices.Clone(src.Samples)
	w.DueByReport = src.DueByReport
}

// LearnPage records what a stored version of w's page tells of it: the
// page's kind, its title when w has none, whether it looks like a shell
// (shell, as the caller weighed it), and for a feed past the item limit
// how many items it had and kept. It reports whether anything changed.
func (w *Watch) LearnPage(snap *Snapshot, shell bool) bool {
	items, kept := 0, 0
	if snap.FeedItems > 0 {
		items, kept = snap.FeedItems, len(snap.Segments)
	}
	changed := w.Kind != snap.Kind || (w.Title == "" && snap.Title != "") || w.LooksLikeShell != shell ||
		w.FeedItems != items || w.FeedItemsKept != kept
	w.Kind, w.LooksLikeShell = snap.Kind, shell
	w.FeedItems, w.FeedItemsKept = items, kept
	if w.Title == "" {
		w.Title = clipRunes(snap.Title, MaxTitleLen)
	}
	return changed
}

// KeepLearned sets what checks learned of w's page (Kind, LooksLikeShell,
// FeedItems and FeedItemsKept, and a title taken from the page) and what
// the page agent keeps of it (AgentSent, AgentVolatile) to old's,
// the stored watch, for a definition that does not carry them (a
// cluster's watches bucket holds what users define; each node's store
// learns the rest from the versions it holds). pageTitle is the title of
// old's newest version: old's title is kept when w has none and it is the
// page's, not one a user gave and has now cleared.
func (w *Watch) KeepLearned(old *Watch, pageTitle string) {
	if old.Kind != "" {
		w.Kind = old.Kind
	}
	w.LooksLikeShell = old.LooksLikeShell
	w.FeedItems, w.FeedItemsKept = old.FeedItems, old.FeedItemsKept
	w.AgentSent, w.AgentVolatile = old.AgentSent, slices.Clone(old.AgentVolatile)
	if w.Title == "" && old.Title != "" && old.Title == pageTitle {
		w.Title = old.Title
	}
}

// clipRunes cuts s to at most n characters, with an ellipsis when cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// CopyFilters sets w's filters (what of its changes is told: IgnoreText,
// TriggerText, MinSignificance, NotifyTypes, OnlyInterests, ShowNoise,
// ValueSelector and When) to from's.
func (w *Watch) CopyFilters(from *Watch) {
	w.IgnoreText, w.TriggerText = from.IgnoreText, from.TriggerText
	w.MinSignificance, w.NotifyTypes = from.MinSignificance, from.NotifyTypes
	w.OnlyInterests, w.ShowNoise = from.OnlyInterests, from.ShowNoise
	w.ValueSelector, w.When = from.ValueSelector, from.When
}

// ReadsValue reports whether a value is read from w's versions: it has
// a value selector or a condition.
func (w *Watch) ReadsValue() bool { return w.ValueSelector != "" || w.When != "" }

// Condition is w's When, parsed; the zero Condition when it has none or
// it does not parse (Validate refuses it).
func (w *Watch) Condition() Condition {
	c, err := ParseCondition(w.When)
	if err != nil {
		return Condition{}
	}
	return c
}
