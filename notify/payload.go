package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/render"
)

// Limits on what one notification carries: receivers such as Slack and
// Discord refuse long messages, and a page rewrite can bring hundreds of
// changes. The links lead to the whole version.
const (
	maxPayloadChanges = 50
	maxChangeText     = 2000
	maxChatChanges    = 5
	maxChatText       = 300
	discordLimit      = 2000
)

// Payload is the JSON document a generic webhook receives (Content-Type
// application/json). ID is the idempotency key: a receiver that sees an
// ID twice (a retry after a lost answer, a redelivery) has already
// handled it.
type Payload struct {
	ID    string `json:"id"`
	Event string `json:"event"` // "version" or "test"
	// SentAt is when this try was made (also in the signature header).
	SentAt  time.Time      `json:"sent_at"`
	Watch   PayloadWatch   `json:"watch"`
	Version PayloadVersion `json:"version"`
	// Summary reads like "3 changes, 1 matches your interests".
	Summary string `json:"summary"`
	// Interests lists the user's interests matched by the changes.
	Interests []string        `json:"interests,omitempty"`
	Changes   []PayloadChange `json:"changes"`
	// OmittedChanges counts changes left out by the size limit.
	OmittedChanges int `json:"omitted_changes,omitempty"`
}

// PayloadWatch is the watch of a payload.
type PayloadWatch struct {
	ID    int64    `json:"id"`
	URL   string   `json:"url"`
	Title string   `json:"title,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	// Page is the service's page of the watch.
	Page string `json:"page"`
}

// PayloadVersion is the version of a payload.
type PayloadVersion struct {
	Seq        int       `json:"seq"`
	DetectedAt time.Time `json:"detected_at"`
	// Significance is 0..1 (0 = nothing a reader would notice).
	Significance float64 `json:"significance"`
	Similarity   float64 `json:"similarity"`
	// URL is the service's page of the version and its changes.
	URL string `json:"url"`
}

// PayloadChange is one change (noise left out) with its profile matches.
type PayloadChange struct {
	Type    changedigest.ChangeType `json:"type"`
	Op      changedigest.Op         `json:"op"`
	Path    string                  `json:"path,omitempty"`
	OldText string                  `json:"old_text,omitempty"`
	NewText string                  `json:"new_text,omitempty"`
	// Before and After are the unchanged words around a content update's
	// changed words (OldText, NewText), as in the diff JSON.
	Before  string         `json:"before,omitempty"`
	After   string         `json:"after,omitempty"`
	Title   string         `json:"title,omitempty"`
	Link    string         `json:"link,omitempty"`
	Matches []PayloadMatch `json:"matches,omitempty"`
}

// PayloadMatch is a profile match of a change.
type PayloadMatch struct {
	Interest string `json:"interest"`
	Term     string `json:"term"`
	Relation string `json:"relation"`
	Label    string `json:"label"`
}

// event is what a delivery is about: a version with its watch and profile
// matches, and the service's links.
type event struct {
	key       string
	test      bool
	watch     *changedigest.Watch
	snap      *changedigest.Snapshot
	matches   [][]changedigest.Match
	watchPage string
	url       string
	// view is the version as the feeds and the digest tell it (nil
	// without a render engine): the title and the lines of a push are
	// its headline and brief lines.
	view *render.EventView
	// templated is set once the channel's template wrote the title and
	// text of the message.
	templated       bool
	tmplTitle, text string
}

// payload builds the webhook document of ev at time now.
func (ev *event) payload(now time.Time) Payload {
	p := Payload{
		ID: ev.key, Event: "version", SentAt: now.UTC(),
		Watch: PayloadWatch{ID: ev.watch.ID, URL: ev.watch.URL, Title: ev.watch.Title, Tags: ev.watch.Tags,
			Page: ev.watchPage},
		Version: PayloadVersion{Seq: ev.snap.Seq, DetectedAt: ev.snap.FetchedAt.UTC(),
			Significance: ev.snap.Significance, Similarity: ev.snap.Similarity, URL: ev.url},
		Changes: []PayloadChange{},
	}
	if ev.test {
		p.Event = "test"
	}
	seen := map[string]bool{}
	total, profile := 0, 0
	for i, c := range ev.snap.Changes {
		if !notable(ev.watch, ev.snap, &c, matched(ev.matches, i)) {
			continue
		}
		total++
		var ms []changedigest.Match
		if i < len(ev.matches) {
			ms = ev.matches[i]
		}
		if len(ms) > 0 {
			profile++
		}
		for _, m := range ms {
			if !seen[m.Interest] {
				seen[m.Interest] = true
				p.Interests = append(p.Interests, m.Interest)
			}
		}
		if len(p.Changes) == maxPayloadChanges {
			p.OmittedChanges++
			continue
		}
		pc := PayloadChange{Type: c.Type, Op: c.Op, Path: c.Path, OldText: clip(c.OldText, maxChangeText),
			NewText: clip(c.NewText, maxChangeText), Before: c.Before, After: c.After, Title: c.Title, Link: c.Link}
		for _, m := range ms {
			pc.Matches = append(pc.Matches, PayloadMatch{Interest: m.Interest, Term: m.Term, Relation: m.Relation, Label: m.Label()})
		}
		p.Changes = append(p.Changes, pc)
	}
	p.Summary = summary(total, profile)
	return p
}

// summary reads "3 changes, 1 matches your interests".
func summary(total, profile int) string {
	s := strconv.Itoa(total) + " change"
	if total != 1 {
		s += "s"
	}
	switch {
	case total == 0:
		return "no change"
	case profile == total && total == 1:
		return s + ", matching your interests"
	case profile == total:
		return s + ", all matching your interests"
	case profile == 1:
		return s + ", 1 matches your interests"
	case profile > 1:
		return s + ", " + strconv.Itoa(profile) + " match your interests"
	}
	return s
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// title is the one-line headline of ev, as the feeds title it ("Watch
// name: ‘What changed’ +2 more"), or "Watch name: 3 changes, …".
func (ev *event) title() string {
	if ev.templated {
		return ev.tmplTitle
	}
	if ev.test {
		return "changedigest test message"
	}
	if ev.view != nil {
		return ev.view.Title()
	}
	return oneLine(ev.watch.Name()) + ": " + ev.payload(time.Time{}).Summary
}

// lines returns up to n short lines describing the changes that are not
// noise, and how many were left out.
func (ev *event) lines(n, width int) ([]string, int) {
	if ev.view != nil {
		return ev.briefLines(n, width)
	}
	var out []string
	more := 0
	for i, c := range ev.snap.Changes {
		if !notable(ev.watch, ev.snap, &c, matched(ev.matches, i)) {
			continue
		}
		if len(out) == n {
			more++
			continue
		}
		text := c.NewText
		if c.Op == changedigest.OpDelete || text == "" {
			text = c.OldText
		}
		if c.Before != "" || c.After != "" {
			text = strings.TrimSpace(c.Before + text + c.After)
		}
		if c.Title != "" {
			text = c.Title + ": " + text
		}
		line := string(c.Op) + " (" + string(c.Type) + "): " + clip(oneLine(text), width)
		if i < len(ev.matches) && len(ev.matches[i]) > 0 {
			line += " [" + ev.matches[i][0].Label() + "]"
		}
		out = append(out, line)
	}
	return out, more
}

// briefLines are lines as the feeds tell the changes: where, the item,
// the words changed with [-…-]{+…+} markers, the interest matched.
func (ev *event) briefLines(n, width int) ([]string, int) {
	var out []string
	more := ev.view.Omitted
	for _, c := range append(append([]render.ChangeView(nil), ev.view.Profile...), ev.view.General...) {
		if len(out) == n {
			more++
			continue
		}
		line := clip(render.BriefLine(c), width)
		if len(c.Labels) > 0 {
			line += " [" + c.Labels[0] + "]"
		}
		out = append(out, line)
	}
	return out, more
}

// Signature headers of a generic webhook. SignatureHeader holds
// "t=UNIX,v1=HEX": HEX is the HMAC-SHA256, keyed with the channel secret,
// of "UNIX." followed by the body, so a captured request cannot be
// replayed later with another time. TimestampHeader repeats UNIX.
const (
	SignatureHeader   = "X-Changedigest-Signature"
	TimestampHeader   = "X-Changedigest-Timestamp"
	IdempotencyHeader = "Idempotency-Key"
)

// Sign returns the SignatureHeader value of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ErrSignature is returned by Verify for a missing, malformed, wrong or
// stale signature.
var ErrSignature = fmt.Errorf("notify: bad webhook signature")

// Verify checks a SignatureHeader value against body, as a receiver
// should: the MAC must match and the time must be within tolerance of
// now (either way).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("%w: header %q is not t=UNIX,v1=HEX", ErrSignature, header)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(secret, ts, body)) {
		return fmt.Errorf("%w: the MAC does not match", ErrSignature)
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed %s away from now (tolerance %s)", ErrSignature, d.Round(time.Second), tolerance)
	}
	return nil
}

// chatText is the message of Slack, Mattermost and Discord: a bold linked
// headline and a few changes. Slack's link syntax is <url|text>; Discord
// and Mattermost read Markdown [text](url).
func (ev *event) chatText(kind changedigest.ChannelKind) string {
	if ev.templated {
		return ev.text
	}
	var b strings.Builder
	head := ev.title()
	if kind == changedigest.ChannelSlack {
		fmt.Fprintf(&b, "*<%s|%s>*", ev.url, slackEscape(head))
	} else {
		fmt.Fprintf(&b, "**[%s](%s)**", markdownEscape(head), ev.url)
	}
	lines, more := ev.lines(maxChatChanges, maxChatText)
	for _, l := range lines {
		if kind == changedigest.ChannelSlack {
			l = slackEscape(l)
		} else {
			l = markdownEscape(l)
		}
		b.WriteString("\n• " + l)
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n… and %d more", more)
	}
	return b.String()
}

func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func markdownEscape(s string) string {
	return strings.NewReplacer("\\", "\\\\", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]", "`", "\\`", "~", "\\~", "@", "@\u200b").Replace(s)
}

// chatBody is the JSON body of an incoming webhook of kind.
func (ev *event) chatBody(kind changedigest.ChannelKind) ([]byte, error) {
	text := ev.chatText(kind)
	switch kind {
	case changedigest.ChannelDiscord:
		return json.Marshal(map[string]any{
			"content":          clip(text, discordLimit-10),
			"allowed_mentions": map[string]any{"parse": []string{}},
		})
	case changedigest.ChannelMattermost:
		return json.Marshal(map[string]any{"text": text, "props": map[string]string{"changedigest_id": ev.key}})
	default:
		return json.Marshal(map[string]any{"text": text, "unfurl_links": false})
	}
}

// matrixBody is an m.room.message event (m.text with an HTML body).
func (ev *event) matrixBody() ([]byte, error) {
	if ev.templated {
		return json.Marshal(map[string]any{"msgtype": "m.text", "body": ev.text, "changedigest.id": ev.key})
	}
	head := ev.title()
	lines, more := ev.lines(maxChatChanges*2, maxChatText)
	plain := head + "\n" + ev.url
	var h strings.Builder
	fmt.Fprintf(&h, `<p><a href="%s"><strong>%s</strong></a></p>`, html.EscapeString(ev.url), html.EscapeString(head))
	if len(lines) > 0 {
		h.WriteString("<ul>")
		for _, l := range lines {
			plain += "\n- " + l
			h.WriteString("<li>" + html.EscapeString(l) + "</li>")
		}
		h.WriteString("</ul>")
	}
	if more > 0 {
		plain += fmt.Sprintf("\n… and %d more", more)
		fmt.Fprintf(&h, "<p>… and %d more</p>", more)
	}
	return json.Marshal(map[string]any{
		"msgtype": "m.text", "body": plain,
		"format": "org.matrix.custom.html", "formatted_body": h.String(),
		"changedigest.id": ev.key,
	})
}

// ntfyBody is the message text of an ntfy publication.
func (ev *event) ntfyBody() []byte {
	if ev.templated {
		return []byte(ev.text)
	}
	lines, more := ev.lines(maxChatChanges, maxChatText)
	if ev.test {
		lines = append([]string{"This is a test message from changedigest."}, lines...)
	}
	s := strings.Join(lines, "\n")
	if more > 0 {
		s += fmt.Sprintf("\n… and %d more", more)
	}
	if s == "" {
		s = ev.title()
	}
	return []byte(s)
}
