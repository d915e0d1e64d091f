// Package render turns changes into what people read: the Atom feeds of
// changes (RFC 4287), the daily digest as an HTML page, a plain-text
// alternative and a MIME e-mail message, the web pages of the service and
// the SVG chart of change sizes.
//
// render never fetches or stores anything: every function takes values
// and writes bytes. All templates come from package templates; NewEngine
// parses them once, and every output is rendered into a buffer first, so a
// template error never sends half a page.
//
// Changes whose text holds a term of the user's profile ("profile
// changes") are set apart from the others ("general changes"), as CaSePer
// asks: a coloured left border, the matched term in <mark> and a plain
// label such as "matches your interest football (synonym: soccer)", so
// the difference survives readers and mail clients that drop styles.
//
// Every piece of page-derived text is stripped of characters XML cannot
// hold and escaped by html/template or encoding/xml; links into pages
// are kept only when they are absolute http or https URLs.
package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	texttemplate "text/template"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/memo"
	"github.com/changedigest/changedigest/templates"
)

// Errors returned by the package; test with errors.Is.
var (
	// ErrInvalidEvent is wrapped by errors about an Event that cannot be
	// rendered (no watch, no snapshot, no detection time, …).
	ErrInvalidEvent = errors.New("render: invalid event")
	// ErrInvalidFeed is wrapped by errors about a FeedInfo (no id, a self
	// link that is not an absolute http or https URL, …).
	ErrInvalidFeed = errors.New("render: invalid feed")
	// ErrInvalidMail is wrapped by errors about mail headers.
	ErrInvalidMail = errors.New("render: invalid mail")
	// ErrUnknownPage is returned by Render for a page name that has no
	// template.
	ErrUnknownPage = errors.New("render: unknown page")
)

// StaticPath is where the server must serve the static/ folder of
// templates.FS (for example with http.FileServerFS(fs.Sub(templates.FS,
// "static")) under the Site's path + StaticPath). Links to it carry a
// ?v=HASH of the file's content, so the files may be cached for long.
const StaticPath = "/static/"

// CSRFField is the name of the hidden form field written by the "csrf"
// template; the server checks it on every POST.
const CSRFField = "csrf_token"

// Project is the home of the software, used as the Atom generator URI and
// as the base of the category schemes.
const Project = "https://github.com/changedigest/changedigest"

// Defaults of the Engine knobs.
const (
	DefaultName           = "changedigest"
	DefaultMaxEntries     = 100
	DefaultMaxEntryBytes  = 96 << 10
	DefaultMaxChangeChars = 4000
	DefaultContext        = 6
	// DefaultEntryCacheBytes bounds the memory kept for rendered feed entries.
	DefaultEntryCacheBytes = 32 << 20
	DefaultDigestChanges   = 5
	DefaultDigestWatches   = 25
)

// Engine renders feeds, digests and pages. Build it with NewEngine; the
// exported fields are knobs that may be changed before use (not while
// rendering). An Engine is safe for concurrent use.
type Engine struct {
	// Name is the service name shown in titles, mail and the generator.
	Name string
	// Version is written into the Atom generator element when set.
	Version string
	// Authority is the tagging authority of the tag: URIs that identify
	// feeds and entries (RFC 4151). It defaults to the Site's host name;
	// set it to the old name after moving the service to a new domain, so
	// the ids stay the same and feed readers do not see every entry again.
	Authority string
	// MaxEntries caps the entries of one feed (newest kept).
	MaxEntries int
	// MaxEntryBytes caps the HTML content of one feed entry; changes past
	// it are left out and counted in "…and N more changes".
	MaxEntryBytes int
	// MaxChangeChars caps the text shown for one change in feeds and the
	// digest; the rest is cut with "…".
	MaxChangeChars int
	// Context is the number of unchanged words kept around each change in
	// feeds and the digest; longer unchanged runs are shortened to "…".
	Context int
	// DigestChanges caps the changes listed per watch in each section of
	// the digest; DigestWatches caps the watches per section.
	DigestChanges int
	DigestWatches int

	site *url.URL
	// entries keeps rendered feed entries (each format's encoded item) by
	// their event's key (EventKey, with the format's salt). A stored
	// version never changes, so an entry depends only on its event: the
	// watch's fields its rendering reads, the version, and the profile
	// matches. Feed readers poll the same entries over and over, and
	// rendering them is most of a feed's cost.
	entries  memo.Cache[uint64, []byte]
	pages    map[string]*template.Template
	web      *template.Template // layout and components of the web pages (Component)
	inline   *template.Template // feed entries and the digest, styles inlined
	text     *texttemplate.Template
	styles   map[string][]decl // class → declarations, from changes.css and mail.css
	attrs    sync.Map          // class list → template.HTMLAttr, see classAttr
	versions map[string]string // static file → content hash
}

// NewEngine parses every template and style sheet of package templates.
// site is the public base URL of the service (e.g.
// "https://changes.example.org" or "https://example.org/cd"); links in
// feeds and mail are absolute under it and page links are under its path.
// It returns an error when site is not an absolute http or https URL or a
// template does not parse: both are start-up errors.
func NewEngine(site string) (*Engine, error) {
	u, err := url.Parse(site)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, changedigest.Errorf(changedigest.EINVALID, "render: site %q is not an absolute http or https URL without query or fragment", site)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	e := &Engine{
		Name:           DefaultName,
		Authority:      hostName(u.Host),
		MaxEntries:     DefaultMaxEntries,
		MaxEntryBytes:  DefaultMaxEntryBytes,
		MaxChangeChars: DefaultMaxChangeChars,
		Context:        DefaultContext,
		DigestChanges:  DefaultDigestChanges,
		DigestWatches:  DefaultDigestWatches,
		site:           u,
		versions:       map[string]string{},
		entries:        memo.Cache[uint64, []byte]{Max: DefaultEntryCacheBytes},
	}
	if err := e.parse(templates.FS); err != nil {
		return nil, err
	}
	return e, nil
}

// hostName strips the port from a URL host: tag URIs name a DNS name.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

// Site returns the public base URL, without a trailing slash.
func (e *Engine) Site() string { return e.site.String() }

// URL returns the absolute URL of a path of the service, given escaped,
// e.g. e.URL("/watches/3") = "https://example.org/cd/watches/3".
func (e *Engine) URL(p string) string {
	return e.site.String() + "/" + strings.TrimLeft(p, "/")
}

// sitePath returns a path of the service (given escaped) relative to the
// host, for links inside web pages.
func (e *Engine) sitePath(p string) string {
	return e.site.EscapedPath() + "/" + strings.TrimLeft(p, "/")
}

func (e *Engine) parse(fsys fs.FS) error {
	for _, name := range []string{"changes.css", "mail.css"} {
		b, err := fs.ReadFile(fsys, "static/"+name)
		if err != nil {
			return fmt.Errorf("render: %w", err)
		}
		rules, err := parseInlineCSS(string(b))
		if err != nil {
			return fmt.Errorf("render: static/%s: %w", name, err)
		}
		if e.styles == nil {
			e.styles = rules
		} else {
			for k, v := range rules {
				if _, dup := e.styles[k]; dup {
					return fmt.Errorf("render: static/%s: class .%s is also defined in changes.css", name, k)
				}
				e.styles[k] = v
			}
		}
	}
	statics, err := fs.Glob(fsys, "static/*")
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	for _, p := range statics {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("render: %w", err)
		}
		sum := sha256.Sum256(b)
		e.versions[path.Base(p)] = hex.EncodeToString(sum[:6])
	}

	inline, err := template.New("inline").Funcs(e.funcs(true)).ParseFS(fsys, "components/*.html", "feed/*.html", "mail/*.html")
	if err != nil {
		return fmt.Errorf("render: parse feed and mail templates: %w", err)
	}
	e.inline = inline
	text, err := texttemplate.New("text").Funcs(e.textFuncs()).ParseFS(fsys, "mail/*.txt")
	if err != nil {
		return fmt.Errorf("render: parse text templates: %w", err)
	}
	e.text = text

	common, err := template.New("base").Funcs(e.funcs(false)).ParseFS(fsys, "layout/*.html", "components/*.html")
	if err != nil {
		return fmt.Errorf("render: parse layout: %w", err)
	}
	pages, err := fs.Glob(fsys, "pages/*.html")
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	e.pages = map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(path.Base(p), ".html")
		t, err := common.Clone()
		if err != nil {
			return fmt.Errorf("render: page %s: %w", name, err)
		}
		if _, err := t.ParseFS(fsys, p); err != nil {
			return fmt.Errorf("render: parse page %s: %w", name, err)
		}
		if t.Lookup("content") == nil {
			return fmt.Errorf("render: page %s defines no \"content\" template", name)
		}
		e.pages[name] = t
	}
	e.web = common // executed from now on, so never cloned again
	// Execute nothing yet, but make every template escape now, so errors in
	// the HTML context show at start-up instead of on the first request.
	for name, t := range e.pages {
		if err := t.ExecuteTemplate(io.Discard, "base", Page{Title: "start-up check"}); err != nil && isEscapeError(err) {
			return fmt.Errorf("render: page %s: %w", name, err)
		}
	}
	return nil
}

// isEscapeError tells a template that cannot be escaped (a bug in the
// template) from an execution error caused by the zero data.
func isEscapeError(err error) bool {
	var ee *template.Error
	return errors.As(err, &ee)
}

// funcs are the template functions; inline selects feed and mail output,
// where the change list's style sheet is copied into style attributes.
func (e *Engine) funcs(inline bool) template.FuncMap {
	return template.FuncMap{
		"cls": func(classes string) template.HTMLAttr {
			return e.classAttr(classes, inline)
		},
		"static": func(name string) string {
			return e.sitePath(StaticPath+name) + "?v=" + e.versions[name]
		},
		"url":    e.sitePath,
		"abs":    e.URL,
		"site":   func() string { return e.Name },
		"date":   FormatTime,
		"day":    formatDay,
		"plural": plural,
		"runs":   runs,
		// The RSS and JSON Feed addresses of an Atom feed address.
		"rssURL":  func(atom string) string { r, _ := AlternateURLs(atom); return r },
		"jsonURL": func(atom string) string { _, j := AlternateURLs(atom); return j },
	}
}

func (e *Engine) textFuncs() texttemplate.FuncMap {
	return texttemplate.FuncMap{
		"site":   func() string { return e.Name },
		"date":   FormatTime,
		"day":    formatDay,
		"plural": plural,
		"pieces": PiecesText,
		"brief":  BriefLine,
		"indent": indent,
		"rule":   func(s string) string { return strings.Repeat("-", min(72, len([]rune(s)))) },
	}
}

// classAttr writes ` class="…"` and, when inline, ` style="…"` with the
// declarations of those classes, a later class overriding a property of
// an earlier one. Class names come from the templates only, and
// declarations from our own style sheets, checked at start-up to hold no
// quote or angle bracket. Results are cached: templates use few class sets.
func (e *Engine) classAttr(classes string, inline bool) template.HTMLAttr {
	key := classes
	if inline {
		key = "\x00" + classes
	}
	if a, ok := e.attrs.Load(key); ok {
		return a.(template.HTMLAttr)
	}
	var b strings.Builder
	b.WriteString(` class="`)
	b.WriteString(template.HTMLEscapeString(classes))
	b.WriteByte('"')
	if inline {
		var props []string
		values := map[string]string{}
		for _, c := range strings.Fields(classes) {
			for _, d := range e.styles[c] {
				if _, seen := values[d.prop]; !seen {
					props = append(props, d.prop)
				}
				values[d.prop] = d.value
			}
		}
		if len(props) > 0 {
			b.WriteString(` style="`)
			for i, p := range props {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(template.HTMLEscapeString(p + ":" + values[p] + ";"))
			}
			b.WriteByte('"')
		}
	}
	a := template.HTMLAttr(b.String())
	e.attrs.Store(key, a)
	return a
}

// FormatTime is how pages, feeds and mail show a moment ("date" in the
// templates).
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func formatDay(t time.Time) string { return t.Format("Monday 2 January 2006") }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Page is what every web page template receives as dot. Page templates
// read the page's own values from Data.
type Page struct {
	// Title is the page title (before " · Name"); pages may define
	// "title" instead.
	Title string
	// User is the logged-in user, nil for visitors.
	User *changedigest.User
	// Nav names the active navigation item: "dashboard", "add", "search"
	// or "profile".
	Nav string
	// Flash is a message left by the previous request, if any.
	Flash *Flash
	// CSRF is the token the "csrf" template writes into forms.
	CSRF string
	// Data holds the page's own values (e.g. *DiffPage for "diff").
	Data any
}

// Flash is a one-time message shown at the top of a page.
type Flash struct {
	// Kind is "error" for failures, anything else is shown as information.
	Kind    string
	Message string
}

// Class returns the flash's style class: "error" or "info".
func (f Flash) Class() string {
	if f.Kind == "error" {
		return "error"
	}
	return "info"
}

// Render executes the page template name (a file pages/NAME.html) inside
// the base layout into a buffer and writes it to w only when it all
// succeeded. It returns ErrUnknownPage for a name without a template and
// the template's error (wrapped) when execution fails; w then has
// received nothing.
func (e *Engine) Render(w io.Writer, name string, p Page) error {
	t, ok := e.pages[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownPage, name)
	}
	if b, ok := w.(*bytes.Buffer); ok {
		// A buffer takes the page as it is made; a failed page is cut off.
		n := b.Len()
		if err := t.ExecuteTemplate(b, "base", p); err != nil {
			b.Truncate(n)
			return fmt.Errorf("render: page %s: %w", name, err)
		}
		return nil
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "base", p); err != nil {
		return fmt.Errorf("render: page %s: %w", name, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Component renders one component of the web pages (a define in
// templates/components) with data, as a page renders it: for views that
// keep parts of pages they show again and again.
func (e *Engine) Component(name string, data any) (template.HTML, error) {
	var buf bytes.Buffer
	if err := e.web.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("render: component %s: %w", name, err)
	}
	return template.HTML(buf.String()), nil
}

// Pages lists the names Render accepts.
func (e *Engine) Pages() []string {
	names := make([]string, 0, len(e.pages))
	for n := range e.pages {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Path returns a path of the service (given escaped) relative to the host,
// e.g. e.Path("/watches/3") = "/cd/watches/3": for links and redirects
// within the site, which work whatever host name the browser used.
func (e *Engine) Path(p string) string { return e.sitePath(p) }

// Prefix is the path the service is mounted under ("" at the root).
func (e *Engine) Prefix() string { return e.site.EscapedPath() }
