package render

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
)

// DigestData is the input of the daily digest of one user.
type DigestData struct {
	User *changedigest.User
	// Day is the day covered, in the user's time zone: times are shown in
	// Day's location.
	Day time.Time
	// Events are the user's change events of that day, in any order.
	Events []Event
}

// DigestView is what the digest templates see, and the Data of the web
// page of a digest ("digest"). Build it with Engine.DigestPage.
type DigestView struct {
	Name     string // service name
	UserName string
	Day      time.Time
	Title    string
	Lead     string
	Profile  []DigestGroup
	General  []DigestGroup
	// MoreProfile and MoreGeneral count watch groups left out by DigestWatches.
	MoreProfile int
	MoreGeneral int
	Dashboard   string
	ProfileURL  string
}

// DigestGroup is one watch within a digest section of a DigestView.
type DigestGroup struct {
	WatchID   int64
	WatchName string
	WatchURL  string
	WatchPage string
	// Versions hold the watch's changes, newest version first.
	Versions []DigestVersion
	// More counts the watch's changes left out by DigestChanges.
	More  int
	count int // changes kept and left out
}

// DigestVersion is one version's changes within a DigestGroup.
type DigestVersion struct {
	Seq     int
	When    string // time of day in the digest's zone
	URL     string // the version page
	Changes []ChangeView
	at      time.Time
}

func (e *Engine) digestView(d DigestData) (*DigestView, error) {
	if d.User == nil {
		return nil, fmt.Errorf("%w: digest without a user", ErrInvalidEvent)
	}
	if d.Day.IsZero() {
		return nil, fmt.Errorf("%w: digest for user %d without a day", ErrInvalidEvent, d.User.ID)
	}
	loc := d.Day.Location()
	v := &DigestView{
		Name:       e.Name,
		UserName:   oneLine(d.User.Name),
		Day:        d.Day,
		Dashboard:  e.URL("/"),
		ProfileURL: e.URL("/profile"),
	}
	profile := map[int64]*DigestGroup{}
	general := map[int64]*DigestGroup{}
	total, nprofile := 0, 0
	for _, ev := range d.Events {
		ev2, err := e.View(ev, ViewOptions{Context: e.Context, MaxChars: e.MaxChangeChars})
		if err != nil {
			return nil, err
		}
		add := func(groups map[int64]*DigestGroup, cs []ChangeView) {
			if len(cs) == 0 {
				return
			}
			g := groups[ev2.WatchID]
			if g == nil {
				g = &DigestGroup{WatchID: ev2.WatchID, WatchName: ev2.WatchName, WatchURL: ev2.WatchURL, WatchPage: ev2.WatchPage}
				groups[ev2.WatchID] = g
			}
			g.Versions = append(g.Versions, DigestVersion{
				Seq: ev2.Seq, URL: ev2.URL, at: ev2.Detected, Changes: cs,
				When: ev2.Detected.In(loc).Format("15:04"),
			})
			g.count += len(cs)
		}
		add(profile, ev2.Profile)
		add(general, ev2.General)
		total += len(ev2.Profile) + len(ev2.General)
		nprofile += len(ev2.Profile)
	}
	v.Profile, v.MoreProfile = e.digestSection(profile)
	v.General, v.MoreGeneral = e.digestSection(general)
	v.Title = "Your " + e.Name + " for " + formatDay(d.Day)
	switch {
	case total == 0:
		v.Lead = "None of your watched pages changed that day."
	default:
		watches := map[int64]bool{}
		for id := range profile {
			watches[id] = true
		}
		for id := range general {
			watches[id] = true
		}
		v.Lead = strconv.Itoa(total) + " " + plural(total, "change", "changes") + " on " +
			strconv.Itoa(len(watches)) + " " + plural(len(watches), "watch", "watches")
		switch {
		case nprofile == total:
			v.Lead += ", all matching your interests."
		case nprofile > 0:
			v.Lead += ", " + strconv.Itoa(nprofile) + " matching your interests."
		default:
			v.Lead += "."
		}
	}
	return v, nil
}

// digestSection orders a section's groups (most changes first, then by
// name), newest change first within a group, and applies the caps.
func (e *Engine) digestSection(groups map[int64]*DigestGroup) ([]DigestGroup, int) {
	out := make([]DigestGroup, 0, len(groups))
	for _, g := range groups {
		slices.SortStableFunc(g.Versions, func(a, b DigestVersion) int {
			if c := b.at.Compare(a.at); c != 0 {
				return c
			}
			return cmp.Compare(b.Seq, a.Seq)
		})
		if n := e.DigestChanges; n > 0 && g.count > n {
			kept := 0
			for i := range g.Versions {
				v := &g.Versions[i]
				if kept+len(v.Changes) > n {
					v.Changes = v.Changes[:n-kept]
				}
				kept += len(v.Changes)
				if kept == n {
					g.Versions = g.Versions[:i+1]
					break
				}
			}
			g.More = g.count - n
		}
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b DigestGroup) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		if c := cmp.Compare(strings.ToLower(a.WatchName), strings.ToLower(b.WatchName)); c != 0 {
			return c
		}
		return cmp.Compare(a.WatchID, b.WatchID)
	})
	more := 0
	if n := e.DigestWatches; n > 0 && len(out) > n {
		more = len(out) - n
		out = out[:n]
	}
	return out, more
}

// DigestPage builds the digest for the web page "digest". Errors as for Digest.
func (e *Engine) DigestPage(d DigestData) (*DigestView, error) { return e.digestView(d) }

// Digest writes the daily digest of one user as a complete HTML page with
// inline styles only, fit to be the HTML body of an e-mail: the changes
// that match the user's interests first, grouped by watch, then the other
// changes, each section cut after DigestChanges changes per watch and
// DigestWatches watches with a link to the rest. It returns an error
// wrapping ErrInvalidEvent for a digest without user or day or an event
// View rejects; nothing is written then.
func (e *Engine) Digest(w io.Writer, d DigestData) error {
	v, err := e.digestView(d)
	if err != nil {
		return err
	}
	return e.digestHTML(w, v)
}

func (e *Engine) digestHTML(w io.Writer, v *DigestView) error {
	var buf bytes.Buffer
	if err := e.inline.ExecuteTemplate(&buf, "digest", v); err != nil {
		return fmt.Errorf("render: digest: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// DigestText writes the plain-text alternative of the digest: insertions
// as {+…+}, deletions as [-…-], matched terms as **…** with the label on
// its own line. Errors as for Digest.
func (e *Engine) DigestText(w io.Writer, d DigestData) error {
	v, err := e.digestView(d)
	if err != nil {
		return err
	}
	return e.digestText(w, v)
}

func (e *Engine) digestText(w io.Writer, v *DigestView) error {
	var buf bytes.Buffer
	if err := e.text.ExecuteTemplate(&buf, "digest.txt", v); err != nil {
		return fmt.Errorf("render: digest text: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// PiecesText writes pieces as a text-only reader should see them, with
// wdiff-like markers: kept text as it is, "[-deleted-]", "{+inserted+}",
// "**matched**", "…" for a cut.
func PiecesText(ps []Piece) string {
	var b strings.Builder
	for _, r := range runs(ps) {
		switch r.Op {
		case "ins":
			b.WriteString("{+")
		case "del":
			b.WriteString("[-")
		}
		for _, p := range r.Pieces {
			if p.Mark != "" {
				b.WriteString("**" + p.Text + "**")
			} else {
				b.WriteString(p.Text)
			}
		}
		switch r.Op {
		case "ins":
			b.WriteString("+}")
		case "del":
			b.WriteString("-]")
		}
	}
	return b.String()
}

// indent prefixes every line of s with pre.
func indent(pre, s string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

// MailHeader holds the headers of a digest e-mail.
type MailHeader struct {
	From mail.Address
	// To defaults to the digest user's name and e-mail address.
	To mail.Address
	// Date is the sending time (required: the renderer reads no clock).
	Date time.Time
	// Subject defaults to the digest's title and summary.
	Subject string
	// MessageID defaults to <digest.USER.YYYYMMDD@AUTHORITY>.
	MessageID string
}

// DigestEmail writes the digest as an RFC 5322 message, ready for an SMTP
// DATA command: headers, then a multipart/alternative body with the plain
// text (DigestText) and the HTML page (Digest), both UTF-8 and
// quoted-printable, lines ending in CRLF. The boundary is derived from the
// content, so the output is reproducible. It returns an error wrapping
// ErrInvalidMail for a missing or malformed address or date, and the
// errors of Digest.
func (e *Engine) DigestEmail(w io.Writer, h MailHeader, d DigestData) error {
	v, err := e.digestView(d)
	if err != nil {
		return err
	}
	if h.To.Address == "" {
		h.To = mail.Address{Name: d.User.Name, Address: d.User.Email}
	}
	from, err := mailAddress("From", h.From)
	if err != nil {
		return err
	}
	to, err := mailAddress("To", h.To)
	if err != nil {
		return err
	}
	if h.Date.IsZero() {
		return fmt.Errorf("%w: no date", ErrInvalidMail)
	}
	subject := oneLine(h.Subject)
	if subject == "" {
		subject = v.Title + ": " + strings.TrimSuffix(v.Lead, ".")
	}
	msgID := h.MessageID
	if msgID == "" {
		msgID = "<digest." + strconv.FormatInt(d.User.ID, 10) + "." + d.Day.Format("20060102") + "@" + e.Authority + ">"
	}
	if strings.ContainsAny(msgID, "\r\n \t") || !strings.HasPrefix(msgID, "<") || !strings.HasSuffix(msgID, ">") || !strings.Contains(msgID, "@") {
		return fmt.Errorf("%w: message id %q is not <local@domain>", ErrInvalidMail, msgID)
	}

	var text, html bytes.Buffer
	if err := e.digestText(&text, v); err != nil {
		return err
	}
	if err := e.digestHTML(&html, v); err != nil {
		return err
	}
	sum := sha256.New()
	sum.Write(text.Bytes())
	sum.Write(html.Bytes())
	// "=_" cannot occur in quoted-printable text, so the boundary cannot
	// appear in either part.
	boundary := "=_" + e.Name + "_" + hex.EncodeToString(sum.Sum(nil)[:16])
	if len(boundary) > 70 {
		boundary = boundary[:70]
	}

	var buf bytes.Buffer
	hdr := func(k, v string) { buf.WriteString(k + ": " + v + "\r\n") }
	hdr("From", from)
	hdr("To", to)
	hdr("Subject", mime.QEncoding.Encode("utf-8", subject))
	hdr("Date", h.Date.Format(time.RFC1123Z))
	hdr("Message-ID", msgID)
	hdr("MIME-Version", "1.0")
	hdr("Auto-Submitted", "auto-generated")
	hdr("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": boundary}))
	buf.WriteString("\r\n")

	mw := multipart.NewWriter(&buf)
	if err := mw.SetBoundary(boundary); err != nil {
		return fmt.Errorf("render: mail boundary: %w", err)
	}
	for _, part := range []struct {
		typ  string
		body []byte
	}{{"text/plain; charset=utf-8", text.Bytes()}, {"text/html; charset=utf-8", html.Bytes()}} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.typ},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return fmt.Errorf("render: mail part: %w", err)
		}
		qp := quotedprintable.NewWriter(pw)
		if _, err := qp.Write(part.body); err != nil {
			return fmt.Errorf("render: mail part: %w", err)
		}
		if err := qp.Close(); err != nil {
			return fmt.Errorf("render: mail part: %w", err)
		}
	}
	if err := mw.Close(); err != nil {
		return fmt.Errorf("render: mail: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// mailAddress checks an address and formats it for a header (RFC 2047
// encoding the name when needed).
func mailAddress(field string, a mail.Address) (string, error) {
	if a.Address == "" {
		return "", fmt.Errorf("%w: no %s address", ErrInvalidMail, field)
	}
	p, err := mail.ParseAddress(a.Address)
	if err != nil || p.Address != a.Address {
		return "", fmt.Errorf("%w: %s address %q is not a plain e-mail address", ErrInvalidMail, field, a.Address)
	}
	a.Name = oneLine(a.Name)
	return a.String(), nil
}

// TextEmail writes a message with body as its only part (text/plain,
// UTF-8, quoted-printable, lines ending in CRLF): a channel's message
// written by its own template. h needs every field. It returns an error
// wrapping ErrInvalidMail for a missing or malformed address, date or
// message id.
func (e *Engine) TextEmail(w io.Writer, h MailHeader, body string) error {
	from, err := mailAddress("From", h.From)
	if err != nil {
		return err
	}
	to, err := mailAddress("To", h.To)
	if err != nil {
		return err
	}
	if h.Date.IsZero() {
		return fmt.Errorf("%w: no date", ErrInvalidMail)
	}
	msgID := h.MessageID
	if strings.ContainsAny(msgID, "\r\n \t") || !strings.HasPrefix(msgID, "<") || !strings.HasSuffix(msgID, ">") || !strings.Contains(msgID, "@") {
		return fmt.Errorf("%w: message id %q is not <local@domain>", ErrInvalidMail, msgID)
	}
	var buf bytes.Buffer
	hdr := func(k, v string) { buf.WriteString(k + ": " + v + "\r\n") }
	hdr("From", from)
	hdr("To", to)
	hdr("Subject", mime.QEncoding.Encode("utf-8", oneLine(h.Subject)))
	hdr("Date", h.Date.Format(time.RFC1123Z))
	hdr("Message-ID", msgID)
	hdr("MIME-Version", "1.0")
	hdr("Auto-Submitted", "auto-generated")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "quoted-printable")
	buf.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&buf)
	if _, err := qp.Write([]byte(body)); err != nil {
		return fmt.Errorf("render: mail body: %w", err)
	}
	if err := qp.Close(); err != nil {
		return fmt.Errorf("render: mail body: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}
