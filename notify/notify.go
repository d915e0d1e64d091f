// Package notify is the notification centre: it compiles each user's
// change events together with the profile matches found in them, for the
// Atom feeds, the digest and the web pages, and e-mails the daily digest
// at the hour each user chose.
package notify

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/render"
)

// Store is the store as the notification centre sees it.
type Store interface {
	Changes(ctx context.Context, f pet.ChangeFilter) ([]pet.Event, error)
	Profile(ctx context.Context, userID int64) (*changedigest.Profile, []byte, error)
	Users(ctx context.Context) ([]changedigest.User, error)
	UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error)
}

// Notifier compiles events and sends digests. Set the knobs, then use it;
// it is safe for concurrent use.
type Notifier struct {
	Store    Store
	Expander *expand.Expander
	Render   *render.Engine
	// Mail delivers digests; nil disables e-mail.
	Mail *Mailer
	// Location is the time zone of digest days and hours; time.Local unless set.
	Location *time.Location
	// DigestLimit bounds the events of one digest.
	DigestLimit int
	Now         func() time.Time
	Logger      *slog.Logger

	mu       sync.Mutex
	matchers map[int64]cachedMatcher
}

type cachedMatcher struct {
	updated time.Time
	m       *expand.Matcher
}

// New returns a notifier with defaults.
func New(store Store, ex *expand.Expander, r *render.Engine) *Notifier {
	return &Notifier{Store: store, Expander: ex, Render: r, Location: time.Local, DigestLimit: 1000,
		Now: time.Now, Logger: slog.Default()}
}

// Matcher returns the compiled matcher of a user's profile, nil when the
// user has no profile. It is rebuilt when the profile changes.
func (n *Notifier) Matcher(ctx context.Context, userID int64) (*expand.Matcher, error) {
	p, _, err := n.Store.Profile(ctx, userID)
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("notify: profile of user %d: %w", userID, err)
	}
	n.mu.Lock()
	c, ok := n.matchers[userID]
	n.mu.Unlock()
	if ok && c.updated.Equal(p.UpdatedAt) {
		return c.m, nil
	}
	m, err := n.Expander.Matcher(*p)
	if err != nil {
		return nil, fmt.Errorf("notify: expand the profile of user %d: %w", userID, err)
	}
	n.mu.Lock()
	if n.matchers == nil {
		n.matchers = map[int64]cachedMatcher{}
	}
	n.matchers[userID] = cachedMatcher{updated: p.UpdatedAt, m: m}
	n.mu.Unlock()
	return m, nil
}

// Match finds the profile terms in each change, on the unit that changed
// (see MatchChange). It returns nil for a nil matcher.
func Match(m *expand.Matcher, changes []changedigest.Change) [][]changedigest.Match {
	if m == nil {
		return nil
	}
	out := make([][]changedigest.Match, len(changes))
	for i, c := range changes {
		out[i] = MatchChange(m, c)
	}
	return out
}

// MatchChange finds the profile terms in a change: in its changed words
// (the new text, or the old text of a deletion); where they hold none, in
// the sentence they belong to (the words before and after them, cut at
// the sentence's ends: "The blue kettle now costs 24 → 29 euros" for
// the interest kettle); where that holds none either, in the title of the
// feed item or the heading of the part of the page the change is in.
// Matches found around the changed words say so (changedigest.Match's
// Unit and Context, their offsets into Context).
func MatchChange(m *expand.Matcher, c changedigest.Change) []changedigest.Match {
	if m == nil {
		return nil
	}
	text := c.NewText
	if c.Op == changedigest.OpDelete || text == "" {
		text = c.OldText
	}
	if ms := m.Match(text); len(ms) > 0 {
		return ms
	}
	around := func(unit, context string) []changedigest.Match {
		ms := m.Match(context)
		for i := range ms {
			ms[i].Unit, ms[i].Context = unit, context
		}
		return ms
	}
	if s := sentence(c.Before, text, c.After); s != strings.TrimSpace(text) {
		if ms := around(changedigest.UnitSentence, s); len(ms) > 0 {
			return ms
		}
	}
	if item := cmp.Or(c.Title, c.PlaceName()); item != "" {
		return around(changedigest.UnitItem, item)
	}
	return nil
}

// sentence returns the sentence that holds text, as far as before and
// after show it: before from its last sentence end on, after up to its
// first one.
func sentence(before, text, after string) string {
	if i := lastSentenceEnd(before); i >= 0 {
		before = before[i:]
	}
	if i := firstSentenceEnd(after); i >= 0 {
		after = after[:i]
	}
	return strings.TrimSpace(strings.Join(strings.Fields(before+text+after), " "))
}

// lastSentenceEnd returns the offset just past the last sentence end in
// s (a full stop, question or exclamation mark followed by a space, or a
// line break, or a CJK full stop), -1 when there is none.
func lastSentenceEnd(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		switch {
		case s[i] == '\n':
			return i + 1
		case (s[i] == '.' || s[i] == '!' || s[i] == '?') && i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\t'):
			return i + 1
		case strings.HasPrefix(s[i:], "。") || strings.HasPrefix(s[i:], "！") || strings.HasPrefix(s[i:], "？"):
			return i + len("。")
		}
	}
	return -1
}

// firstSentenceEnd returns the offset just past the first sentence end in
// s, -1 when there is none.
func firstSentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\n':
			return i
		case (s[i] == '.' || s[i] == '!' || s[i] == '?') && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t'):
			return i + 1
		case strings.HasPrefix(s[i:], "。") || strings.HasPrefix(s[i:], "！") || strings.HasPrefix(s[i:], "？"):
			return i + len("。")
		}
	}
	return -1
}

// Events lists the change events of f (f.UserID's watches; newest first)
// with the user's profile matches.
func (n *Notifier) Events(ctx context.Context, f pet.ChangeFilter) ([]render.Event, error) {
	evs, err := n.Store.Changes(ctx, f)
	if err != nil {
		return nil, err
	}
	var m *expand.Matcher
	if f.UserID != pet.AnyUser {
		if m, err = n.Matcher(ctx, f.UserID); err != nil {
			return nil, err
		}
	}
	out := make([]render.Event, len(evs))
	for i := range evs {
		out[i] = render.Event{Watch: &evs[i].Watch, Snapshot: &evs[i].Version, Matches: Match(m, evs[i].Version.Changes)}
	}
	return out, nil
}

// Told keeps of each event the changes that changedigest.Notable lets
// through (with their matches) and drops the events left with none: what
// feeds, digests and e-mail tell. The track and the API keep every change.
// The events' snapshots are copied, never changed.
func Told(evs []render.Event) []render.Event {
	out := evs[:0:0]
	for _, ev := range evs {
		if ev.Watch == nil || ev.Snapshot == nil {
			continue
		}
		var keep []changedigest.Change
		var ms [][]changedigest.Match
		for i := range ev.Snapshot.Changes {
			var m []changedigest.Match
			if i < len(ev.Matches) {
				m = ev.Matches[i]
			}
			if ok, _ := changedigest.Notable(ev.Watch, ev.Snapshot, &ev.Snapshot.Changes[i], len(m) > 0); ok {
				keep = append(keep, ev.Snapshot.Changes[i])
				if ev.Matches != nil {
					ms = append(ms, m)
				}
			}
		}
		if len(keep) == 0 {
			continue
		}
		if len(keep) < len(ev.Snapshot.Changes) {
			snap := *ev.Snapshot
			snap.Changes = keep
			ev.Snapshot, ev.Matches = &snap, ms
		}
		out = append(out, ev)
	}
	return out
}

// Day returns the start of the day holding t in the notifier's time zone.
func (n *Notifier) Day(t time.Time) time.Time {
	t = t.In(n.location())
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

// ParseDay reads a YYYY-MM-DD day in the notifier's time zone, from 1970
// to 9998. Errors: EINVALID for anything else.
func (n *Notifier) ParseDay(s string) (time.Time, error) {
	shown := s
	if len(shown) > 32 {
		shown = shown[:32] + "…"
	}
	d, err := time.ParseInLocation(time.DateOnly, s, n.location())
	if err != nil {
		return time.Time{}, changedigest.Errorf(changedigest.EINVALID, "%q is not a day (want YYYY-MM-DD)", shown)
	}
	if d.Year() < 1970 || d.Year() > 9998 {
		return time.Time{}, changedigest.Errorf(changedigest.EINVALID, "%q is not a day between 1970 and 9998", shown)
	}
	return d, nil
}

func (n *Notifier) location() *time.Location {
	if n.Location == nil {
		return time.Local
	}
	return n.Location
}

// Digest compiles the digest of a user for the day starting at day.
func (n *Notifier) Digest(ctx context.Context, u *changedigest.User, day time.Time) (render.DigestData, error) {
	day = n.Day(day)
	evs, err := n.Events(ctx, pet.ChangeFilter{
		UserID: u.ID,
		Since:  day,
		Until:  day.AddDate(0, 0, 1).Add(-time.Nanosecond),
		Limit:  n.DigestLimit,
	})
	if err != nil {
		return render.DigestData{}, err
	}
	return render.DigestData{User: u, Day: day, Events: Told(evs)}, nil
}

// SendDigest e-mails a user the digest of a day.
func (n *Notifier) SendDigest(ctx context.Context, u *changedigest.User, day time.Time) error {
	if n.Mail == nil {
		return changedigest.Errorf(changedigest.EINVALID, "e-mail is not configured (set --smtp)")
	}
	if u.Email == "" {
		return changedigest.Errorf(changedigest.EINVALID, "user %s has no e-mail address", u.Name)
	}
	d, err := n.Digest(ctx, u, day)
	if err != nil {
		return err
	}
	var msg bytes.Buffer
	h := render.MailHeader{From: n.Mail.From, Date: n.now()}
	if err := n.Render.DigestEmail(&msg, h, d); err != nil {
		return fmt.Errorf("notify: digest of %s: %w", u.Name, err)
	}
	return n.Mail.Send(ctx, u.Email, msg.Bytes())
}

// SendDue e-mails the digest of the previous day to every user whose
// digest hour has come today and who has not had it yet. It returns how
// many digests were sent; one user's failure does not stop the others.
func (n *Notifier) SendDue(ctx context.Context) (int, error) {
	if n.Mail == nil {
		return 0, nil
	}
	users, err := n.Store.Users(ctx)
	if err != nil {
		return 0, err
	}
	now := n.now().In(n.location())
	yesterday := n.Day(now).AddDate(0, 0, -1)
	key := yesterday.Format(time.DateOnly)
	sent := 0
	var firstErr error
	for i := range users {
		u := &users[i]
		if u.Email == "" || u.DigestHour < 0 || now.Hour() < u.DigestHour || u.DigestSent == key {
			continue
		}
		if err := n.SendDigest(ctx, u, yesterday); err != nil {
			n.logger().Warn("digest not sent", "user", u.Name, "day", key, "err", err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if _, err := n.Store.UpdateUser(ctx, u.ID, func(x *changedigest.User) error {
			x.DigestSent = key
			return nil
		}); err != nil {
			return sent, err
		}
		sent++
		n.logger().Info("digest sent", "user", u.Name, "day", key)
	}
	return sent, firstErr
}

// Run sends due digests every interval until ctx ends.
func (n *Notifier) Run(ctx context.Context, interval time.Duration) error {
	if n.Mail == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := n.SendDue(ctx); err != nil && ctx.Err() == nil {
			n.logger().Warn("sending digests", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

func (n *Notifier) logger() *slog.Logger {
	if n.Logger != nil {
		return n.Logger
	}
	return slog.Default()
}
