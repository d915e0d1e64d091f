package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/changedigest/changedigest"
)

// Message templates.
//
// A channel may carry a message template (Channel.Template): a Go
// text/template (https://pkg.go.dev/text/template) over MessageData that
// writes the message in place of the default one. What it replaces, by
// kind: the body of a generic webhook (sent as application/json when it
// is JSON, else as text/plain, signed as always), the text of a Slack,
// Mattermost or Discord message, a Matrix message's body, an ntfy
// publication, a Gotify, Telegram or Pushover message, and the plain-text
// body of an e-mail. A template that defines "title" ({{define
// "title"}}…{{end}}) also writes the title (ntfy, Gotify and Pushover
// titles, the e-mail subject).
//
// A template is bounded so that no template can hang a delivery or fill
// memory: its output is at most MaxTemplateOutput bytes, it runs for at
// most TemplateTimeout, "range" goes only over the lists of the data
// (.Changes, .Interests, .Lines, .Tags, .Matches, nested at most three
// deep; never over a number), {{template}} and {{block}} are refused (so
// nothing recurses), and printf takes no width or precision over 999.
// Past a bound, or on any error, the delivery fails with the error; the
// template is checked (parsed and run against a sample event) when the
// channel is saved.

// Bounds of a message template.
const (
	MaxTemplateLen    = 16 << 10
	MaxTemplateOutput = 64 << 10
	TemplateTimeout   = time.Second
	maxRangeDepth     = 3
)

// templateTimeout is TemplateTimeout, shortened by tests.
var templateTimeout = TemplateTimeout

// MessageData is what a message template sees (its dot).
type MessageData struct {
	// Test is true for a test message (channel test).
	Test bool
	// Watch is the watch whose version is told.
	Watch MessageWatch
	// Title is the headline as the feeds title the version ("★ election:
	// Riverside Daily: General election date announced +1 more").
	Title string
	// Summary reads "3 changes, 1 matches your interests".
	Summary string
	// URL is the service's page of the version and its changes.
	URL string
	// Seq is the version's number within its watch.
	Seq int
	// Time is when the version was detected.
	Time time.Time
	// Significance is 0..1.
	Significance float64
	// Interests are the user's interests the changes match.
	Interests []string
	// Lines are the changes in short lines, as the default message
	// tells them (where, the words changed with [-…-]{+…+}, the
	// interest).
	Lines []string
	// Changes are the changes told (noise and filtered ones left out),
	// at most 50; Omitted counts the rest.
	Changes []MessageChange
	Omitted int
}

// MessageWatch is the watch of a MessageData.
type MessageWatch struct {
	ID int64
	// Name is the watch's title, else its URL.
	Name, Title, URL string
	Tags             []string
	// Page is the service's page of the watch.
	Page string
}

// MessageChange is one change told.
type MessageChange struct {
	// Type is content, structural, cosmetic or behavioural; Op insert,
	// delete, update or move.
	Type, Op string
	// Where places it ("under ‘Fixtures’", "in the sidebar"); Title is
	// the item or story it is about.
	Where, Title string
	// Old and New are the text removed and added; Before and After the
	// unchanged words around them.
	Old, New, Before, After string
	// Link is the link of the item, if any.
	Link string
	// Matches are the labels of the interests it matches ("matches your
	// interest election (hyponym: primary)").
	Matches []string
}

// data builds the MessageData of ev.
func (ev *event) data() MessageData {
	p := ev.payload(time.Time{})
	d := MessageData{Test: ev.test, Title: ev.title(), Summary: p.Summary, URL: ev.url, Seq: ev.snap.Seq,
		Time: ev.snap.FetchedAt.UTC(), Significance: ev.snap.Significance, Interests: p.Interests,
		Omitted: p.OmittedChanges,
		Watch: MessageWatch{ID: ev.watch.ID, Name: ev.watch.Name(), Title: ev.watch.Title, URL: ev.watch.URL,
			Tags: ev.watch.Tags, Page: ev.watchPage}}
	d.Lines, _ = ev.lines(maxChatChanges*2, maxChatText)
	where := map[int]string{}
	n := 0
	for i, c := range ev.snap.Changes {
		if notable(ev.watch, ev.snap, &c, matched(ev.matches, i)) {
			where[n] = c.Where
			n++
		}
	}
	for i, c := range p.Changes {
		mc := MessageChange{Type: string(c.Type), Op: string(c.Op), Where: where[i], Title: c.Title,
			Old: c.OldText, New: c.NewText, Before: c.Before, After: c.After, Link: c.Link}
		for _, m := range c.Matches {
			mc.Matches = append(mc.Matches, m.Label)
		}
		d.Changes = append(d.Changes, mc)
	}
	return d
}

// ErrTemplate is wrapped by every error of a message template.
var ErrTemplate = errors.New("notify: message template")

// templateError is a user-facing template error: errors.Is matches
// ErrTemplate, changedigest.ErrorCode and ErrorMessage read its code
// (EINVALID) and message.
type templateError struct{ user *changedigest.Error }

func (e *templateError) Error() string   { return "notify: " + e.user.Message }
func (e *templateError) Unwrap() []error { return []error{ErrTemplate, e.user} }

func templateErr(format string, args ...any) error {
	return &templateError{user: changedigest.Errorf(changedigest.EINVALID, "message template: "+format, args...)}
}

// wideVerb reports whether a verb of format has a width or precision of
// four digits or more, or one given by an argument (*, %[2]*d).
func wideVerb(format string) bool {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		digits := 0
		for i++; i < len(format); i++ {
			c := format[i]
			switch {
			case c == '*':
				return true
			case c >= '0' && c <= '9':
				if digits++; digits > 3 {
					return true
				}
				continue
			case c == '[':
				// An argument index: its digits are no width.
				for i < len(format) && format[i] != ']' {
					i++
				}
			case strings.IndexByte("+-# .", c) >= 0:
			default: // the verb (or %%)
				goto next
			}
			digits = 0
		}
	next:
	}
	return false
}

var templateFuncs = template.FuncMap{
	"printf": func(format string, args ...any) (string, error) {
		if wideVerb(format) {
			return "", errors.New("printf: a width or precision over 999")
		}
		return fmt.Sprintf(format, args...), nil
	},
	// json writes v as JSON (a string quoted and escaped), for webhook
	// bodies.
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	// clip cuts s to at most n characters, marking the cut with "…".
	"clip": func(n int, s string) string {
		r := []rune(s)
		if n < 0 || len(r) <= n {
			return s
		}
		return string(r[:max(n-1, 0)]) + "…"
	},
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"trim":  strings.TrimSpace,
	// date formats t with Go's layout ("2006-01-02 15:04").
	"date": func(layout string, t time.Time) string { return t.Format(layout) },
}

// rangeLists are the fields a template may range over.
var rangeLists = map[string]bool{"Changes": true, "Interests": true, "Lines": true, "Tags": true, "Matches": true}

// ParseTemplate parses and checks a message template (see above). Errors
// wrap ErrTemplate and carry EINVALID with a message saying what and
// where.
func ParseTemplate(src string) (*template.Template, error) {
	if len(src) > MaxTemplateLen {
		return nil, templateErr("longer than %d bytes", MaxTemplateLen)
	}
	t, err := template.New("message").Funcs(templateFuncs).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, templateErr("%s", strings.TrimPrefix(err.Error(), "template: "))
	}
	for _, d := range t.Templates() {
		if d.Name() != "message" && d.Name() != "title" {
			return nil, templateErr("defines %q: only \"title\" may be defined", d.Name())
		}
		if d.Tree == nil {
			continue
		}
		if err := checkNode(d.Tree, d.Tree.Root, 0); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// checkNode refuses what could run without bound: {{template}}, and a
// range over anything but a list of the data or nested too deep.
func checkNode(tree *parse.Tree, n parse.Node, depth int) error {
	at := func(n parse.Node) string {
		loc, _ := tree.ErrorContext(n)
		return loc
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, k := range n.Nodes {
			if err := checkNode(tree, k, depth); err != nil {
				return err
			}
		}
	case *parse.TemplateNode:
		return templateErr("%s: {{template}} and {{block}} are not supported: write the message in one template", at(n))
	case *parse.IfNode:
		return checkBranch(tree, &n.BranchNode, depth)
	case *parse.WithNode:
		return checkBranch(tree, &n.BranchNode, depth)
	case *parse.RangeNode:
		if depth == maxRangeDepth {
			return templateErr("%s: ranges are nested more than %d deep", at(n), maxRangeDepth)
		}
		if !rangesOverList(n.Pipe) {
			return templateErr("%s: range goes only over .Changes, .Interests, .Lines, .Tags or .Matches", at(n))
		}
		return checkBranch(tree, &n.BranchNode, depth+1)
	}
	return nil
}

func checkBranch(tree *parse.Tree, b *parse.BranchNode, depth int) error {
	if err := checkNode(tree, b.List, depth); err != nil {
		return err
	}
	return checkNode(tree, b.ElseList, depth)
}

// rangesOverList reports whether p is one field chain ending in a list of
// MessageData (.Changes, $.Interests, $c.Matches …).
func rangesOverList(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	var idents []string
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode:
		idents = a.Ident
	case *parse.VariableNode:
		idents = a.Ident[1:]
	case *parse.ChainNode:
		idents = a.Field
	}
	return len(idents) > 0 && rangeLists[idents[len(idents)-1]]
}

// limitWriter takes at most n bytes, then fails.
type limitWriter struct {
	b bytes.Buffer
	n int
}

var errTooLong = errors.New("output too long")

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.n {
		return 0, errTooLong
	}
	return w.b.Write(p)
}

// ExecuteTemplate runs template name ("message" or "title") of t over d
// within the bounds above. Errors wrap ErrTemplate.
func ExecuteTemplate(t *template.Template, name string, d MessageData) (string, error) {
	w := &limitWriter{n: MaxTemplateOutput}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%v", r)
			}
		}()
		done <- t.ExecuteTemplate(w, name, d)
	}()
	timer := time.NewTimer(templateTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		switch {
		case errors.Is(err, errTooLong):
			return "", templateErr("the message is longer than %d bytes", MaxTemplateOutput)
		case err != nil:
			return "", templateErr("%s", strings.TrimPrefix(err.Error(), "template: "))
		}
		return w.b.String(), nil
	case <-timer.C:
		return "", templateErr("ran longer than %v and was stopped", templateTimeout)
	}
}

// CheckTemplate parses src and runs it against a sample event, as a
// channel is saved; nil for "". Errors carry EINVALID and say what is
// wrong where.
func CheckTemplate(src string) error {
	if strings.TrimSpace(src) == "" {
		return nil
	}
	_, _, err := RenderSample(src)
	return err
}

// RenderSample renders src against a sample event (the preview of the
// channel form): the title (the default headline unless src defines
// "title") and the message.
func RenderSample(src string) (title, message string, err error) {
	t, err := ParseTemplate(src)
	if err != nil {
		return "", "", err
	}
	ev := sampleEvent(time.Now())
	return ev.render(t)
}

// render executes t over ev: its title and message.
func (ev *event) render(t *template.Template) (title, message string, err error) {
	d := ev.data()
	if message, err = ExecuteTemplate(t, "message", d); err != nil {
		return "", "", err
	}
	title = d.Title
	if t.Lookup("title") != nil {
		if title, err = ExecuteTemplate(t, "title", d); err != nil {
			return "", "", err
		}
		title = oneLine(title)
	}
	return title, message, nil
}

// sampleEvent is a made-up version of a made-up watch with a change of
// each kind a template meets: an update placed under a heading with an
// interest matched, an inserted item.
func sampleEvent(now time.Time) *event {
	w := &changedigest.Watch{ID: 7, URL: "https://shop.example.org/bikes", Title: "Harbour Bikes", Tags: []string{"bikes"}}
	snap := &changedigest.Snapshot{Seq: 12, FetchedAt: now, Kind: changedigest.KindPage, Significance: 0.4,
		Similarity: 0.95, Changes: []changedigest.Change{
			{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Where: "under ‘Cargo bike’",
				Before: "price: ", OldText: "80", NewText: "85"},
			{Type: changedigest.ChangeContent, Op: changedigest.OpInsert, Title: "Tandem",
				NewText: "Tandem: a bike for two, 45 euros a day.", Link: "https://shop.example.org/bikes/tandem"},
		}}
	matches := [][]changedigest.Match{nil, {{Interest: "cycling", Term: "tandem", Relation: "hyponym"}}}
	return &event{key: "sample", watch: w, snap: snap, matches: matches,
		watchPage: "https://changedigest.example.org/watches/7", url: "https://changedigest.example.org/watches/7/versions/12"}
}
