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
	"sync/atomic"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/internal/memo"
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
	matchers map[int64]*matcher
	// lists keeps the last worked list per filter (see worked).
	lists memo.Cache[listQuery, workedList]
	// kept holds what is worked out of each change event (see
	// compiled): a stored version never changes, so what is worked out
	// of it depends only on the user's profile and on the watch's fields
	// that telling and rendering read, and both are in the key. Feed
	// readers and dashboards ask for the same events at every request,
	// and each version is matched against the profile once, not per
	// request.
	kept memo.Cache[eventKey, *compiled]
}

// matcher is a user's compiled profile. gen tells one compilation from
// every other (0: no profile), so events matched against it are kept
// by it.
type matcher struct {
	updated time.Time
	m       *expand.Matcher
	gen     uint64
}

// noMatcher is the matcher of a user without a profile.
var noMatcher = &matcher{}

// matcherGen numbers the compiled matchers.
var matcherGen atomic.Uint64

// New returns a notifier with defaults.
func New(store Store, ex *expand.Expander, r *render.Engine) *Notifier {
	return &Notifier{Store: store, Expander: ex, Render: r, Location: time.Local, DigestLimit: 1000,
		Now: time.Now, Logger: slog.Default(), kept: memo.Cache[eventKey, *compiled]{Max: DefaultEventCacheBytes},
		lists: memo.Cache[listQuery, workedList]{Max: listsBytes}}
}

// Matcher returns the compiled matcher of a user's profile, nil when the
// user has no profile. It is rebuilt when the profile changes.
func (n *Notifier) Matcher(ctx context.Context, userID int64) (*expand.Matcher, error) {
	m, err := n.matcher(ctx, userID)
	if err != nil {
		return nil, err
	}
	return m.m, nil
}

func (n *Notifier) matcher(ctx context.Context, userID int64) (*matcher, error) {
	p, _, err := n.Store.Profile(ctx, userID)
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		return noMatcher, nil
	} else if err != nil {
		return nil, fmt.Errorf("notify: profile of user %d: %w", userID, err)
	}
	n.mu.Lock()
	c, ok := n.matchers[userID]
	n.mu.Unlock()
	if ok && c.updated.Equal(p.UpdatedAt) {
		return c, nil
	}
	m, err := n.Expander.Matcher(*p)
	if err != nil {
		return nil, fmt.Errorf("notify: expand the profile of user %d: %w", userID, err)
	}
	c = &matcher{updated: p.UpdatedAt, m: m, gen: matcherGen.Add(1)}
	n.mu.Lock()
	if n.matchers == nil {
		n.matchers = map[int64]*matcher{}
	}
	n.matchers[userID] = c
	n.mu.Unlock()
	return c, nil
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
// with the user's profile matches, each with its render key. What is
// worked out of a version (its matches, what is told, the keys) is kept
// by the version, the user's profile and the watch's fields that telling
// and rendering read (DefaultEventCacheBytes of it): a version is
// matched once, not at every request. The events' snapshots and
// matches are shared with later calls: read them, do not change them.
func (n *Notifier) Events(ctx context.Context, f pet.ChangeFilter) ([]render.Event, error) {
	return n.events(ctx, f, false)
}

// ToldEvents is Told(Events(ctx, f)), worked out once per version as
// Events is: what feeds and digests tell.
func (n *Notifier) ToldEvents(ctx context.Context, f pet.ChangeFilter) ([]render.Event, error) {
	return n.events(ctx, f, true)
}

func (n *Notifier) events(ctx context.Context, f pet.ChangeFilter, told bool) ([]render.Event, error) {
	evs, err := n.Store.Changes(ctx, f)
	if err != nil {
		return nil, err
	}
	m := noMatcher
	if f.UserID != pet.AnyUser {
		if m, err = n.matcher(ctx, f.UserID); err != nil {
			return nil, err
		}
	}
	out := make([]render.Event, 0, len(evs))
	if len(f.Types) > 0 {
		// The versions come with some of their changes: not what is kept.
		for i := range evs {
			out = append(out, render.Event{Watch: &evs[i].Watch, Snapshot: &evs[i].Version, Matches: Match(m.m, evs[i].Version.Changes)})
		}
		if told {
			out = Told(out)
		}
		return out, nil
	}
	watchKeys := map[int64]uint64{}
	for i := range evs {
		w, s := &evs[i].Watch, &evs[i].Version
		wk, ok := watchKeys[w.ID]
		if !ok {
			wk = render.WatchKey(w)
			watchKeys[w.ID] = wk
		}
		x := n.compile(w, s, m, wk)
		if !told {
			out = append(out, render.Event{Watch: w, Snapshot: s, Matches: x.matches(), Key: x.render})
		} else if ev, ok := x.toldEvent(w, s); ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// FeedEvents lists what ToldEvents does, for the feed writers: each
// event comes with its Key and a Load function, and with a Snapshot that
// holds only WatchID, Seq and FetchedAt. The store lists the events
// without their versions; a version is read (and matched against the
// profile) when it is first seen, and again only when the feed writer
// asks for the whole event (Load) to render an entry it does not keep.
// A feed reader's poll then costs the list of events, not their
// versions. Load reads with ctx.
func (n *Notifier) FeedEvents(ctx context.Context, f pet.ChangeFilter) ([]render.Event, error) {
	if len(f.Types) > 0 || f.UserID == pet.AnyUser {
		return n.ToldEvents(ctx, f)
	}
	return n.lazy(ctx, f, true)
}

// LazyEvents lists what Events does as FeedEvents lists what ToldEvents
// does: each event with its Key, a Load function that gives the whole
// event (with every change and its matches), and a Snapshot with only
// WatchID, Seq and FetchedAt. For callers that keep what they render of
// an event by its Key.
func (n *Notifier) LazyEvents(ctx context.Context, f pet.ChangeFilter) ([]render.Event, error) {
	if len(f.Types) > 0 || f.UserID == pet.AnyUser {
		return n.Events(ctx, f)
	}
	return n.lazy(ctx, f, false)
}

func (n *Notifier) lazy(ctx context.Context, f pet.ChangeFilter, told bool) ([]render.Event, error) {
	f.Refs = true
	refs, err := n.Store.Changes(ctx, f)
	if err != nil {
		return nil, err
	}
	m, err := n.matcher(ctx, f.UserID)
	if err != nil {
		return nil, err
	}
	made, rows, err := n.worked(ctx, f, refs, m)
	if err != nil {
		return nil, err
	}
	out := make([]render.Event, 0, len(made))
	for i, x := range made {
		if x == nil || told && !x.told {
			continue
		}
		ref, key, row := &refs[i], x.render, rows[i]
		if told {
			key = x.toldRender
		}
		out = append(out, render.Event{Watch: &ref.Watch, Snapshot: &ref.Version, Key: key,
			Load: func() (render.Event, error) {
				// A version read to work it out is at hand.
				if row == nil {
					var err error
					if row, err = n.row(ctx, f.UserID, ref); err != nil {
						return render.Event{}, err
					}
				}
				if row == nil {
					return render.Event{}, changedigest.Errorf(changedigest.ENOTFOUND, "version %d of watch %d was removed", ref.Version.Seq, ref.Watch.ID)
				}
				if !told {
					return render.Event{Watch: &ref.Watch, Snapshot: row, Matches: x.matches(), Key: x.render}, nil
				}
				ev, ok := x.toldEvent(&ref.Watch, row)
				if !ok {
					return render.Event{}, fmt.Errorf("notify: version %d of watch %d tells nothing now", ref.Version.Seq, ref.Watch.ID)
				}
				return ev, nil
			}})
	}
	return out, nil
}

// workedList is what worked found in a listing of the store, for a
// matcher.
type workedList struct {
	refs []pet.Event
	gen  uint64
	made []*compiled
}

// listQuery is a ChangeFilter with Refs, comparable.
type listQuery struct {
	userID, watchID int64
	tag             string
	since, until    int64
	limit           int
}

// listsBytes bounds the memory of the worked lists kept (each holds on
// to its listing, which the store may have let go).
const listsBytes = 8 << 20

// worked returns what is worked out of each event of the listing refs
// (f's), from what is kept of it or worked out now (reading its version);
// nil for an event whose version is gone. The versions it read are
// returned by their place in refs, for the caller to render from. A
// listing the store gives again (it shares one until its next write:
// pet.ChangeFilter.Refs) is not looked through again.
func (n *Notifier) worked(ctx context.Context, f pet.ChangeFilter, refs []pet.Event, m *matcher) ([]*compiled, map[int]*changedigest.Snapshot, error) {
	q := listQuery{userID: f.UserID, watchID: f.WatchID, tag: f.Tag, since: f.Since.UnixNano(), until: f.Until.UnixNano(), limit: f.Limit}
	if l, ok := n.lists.Get(q); ok && l.gen == m.gen && sameListing(l.refs, refs) {
		return l.made, nil, nil
	}
	watchKeys := map[int64]uint64{}
	keys := make([]eventKey, len(refs))
	made := make([]*compiled, len(refs))
	var missing []int
	for i := range refs {
		w := &refs[i].Watch
		wk, ok := watchKeys[w.ID]
		if !ok {
			wk = render.WatchKey(w)
			watchKeys[w.ID] = wk
		}
		keys[i] = keyOf(w, &refs[i].Version, m, wk)
		var ok2 bool
		if made[i], ok2 = n.kept.Get(keys[i]); !ok2 {
			missing = append(missing, i)
		}
	}
	rows, err := n.rows(ctx, f.UserID, refs, missing)
	if err != nil {
		return nil, nil, err
	}
	for _, i := range missing {
		w, ref, k := &refs[i].Watch, &refs[i], keys[i]
		x, err := n.kept.Do(k, func() (*compiled, int, error) {
			row := rows[i]
			if row == nil {
				var err error
				if row, err = n.row(ctx, f.UserID, ref); row == nil || err != nil {
					return nil, -1, err // nil, nil: removed since the list was read
				}
				rows[i] = row
			}
			x := work(k, w, row, m)
			return x, x.size, nil
		})
		if err != nil {
			return nil, nil, err
		}
		made[i] = x
	}
	n.lists.Put(q, workedList{refs: refs, gen: m.gen, made: made}, len(refs)*eventSize)
	return made, rows, nil
}

// rows reads the versions of the events at the places missing of refs
// (listed without their versions) in one listing of the time they span,
// rather than one read each (on a cluster, each a question to the nodes):
// the first poll of a feed after a start reads its hundreds of versions.
// Versions the listing does not hold (more events in their span than a
// listing gives) are left out, for row.
func (n *Notifier) rows(ctx context.Context, userID int64, refs []pet.Event, missing []int) (map[int]*changedigest.Snapshot, error) {
	rows := map[int]*changedigest.Snapshot{}
	if len(missing) == 0 {
		return rows, nil
	}
	since, until := refs[missing[0]].Version.FetchedAt, refs[missing[0]].Version.FetchedAt
	for _, i := range missing {
		at := refs[i].Version.FetchedAt
		if at.Before(since) {
			since = at
		}
		if at.After(until) {
			until = at
		}
	}
	evs, err := n.Store.Changes(ctx, pet.ChangeFilter{UserID: userID, Since: since, Until: until, Limit: 1000})
	if err != nil {
		return nil, err
	}
	type ref struct {
		watchID int64
		seq     int
	}
	at := make(map[ref]int, len(missing))
	for _, i := range missing {
		at[ref{refs[i].Watch.ID, refs[i].Version.Seq}] = i
	}
	for j := range evs {
		if i, ok := at[ref{evs[j].Watch.ID, evs[j].Version.Seq}]; ok {
			rows[i] = &evs[j].Version
		}
	}
	return rows, nil
}

// eventSize is about the memory of a pet.Event and what is kept with it.
const eventSize = 1024

// sameListing reports whether a and b are the same listing of the store
// (not only equal ones): the same elements of the same array.
func sameListing(a, b []pet.Event) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// row reads the version of an event listed without it (pet.ChangeFilter
// Refs); nil when it is no longer stored.
func (n *Notifier) row(ctx context.Context, userID int64, ref *pet.Event) (*changedigest.Snapshot, error) {
	at := ref.Version.FetchedAt
	evs, err := n.Store.Changes(ctx, pet.ChangeFilter{UserID: userID, WatchID: ref.Watch.ID, Since: at, Until: at, Limit: 1000})
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	for i := range evs {
		if evs[i].Version.Seq == ref.Version.Seq {
			return &evs[i].Version, nil
		}
	}
	return nil, nil
}

// Told keeps of each event the changes that changedigest.Told lets
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
		match := func(i int) []changedigest.Match {
			if i < len(ev.Matches) {
				return ev.Matches[i]
			}
			return nil
		}
		told, _ := changedigest.Told(ev.Watch, ev.Snapshot, func(i int) bool { return len(match(i)) > 0 })
		for i, ok := range told {
			if ok {
				keep = append(keep, ev.Snapshot.Changes[i])
				if ev.Matches != nil {
					ms = append(ms, match(i))
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
	evs, err := n.ToldEvents(ctx, pet.ChangeFilter{
		UserID: u.ID,
		Since:  day,
		Until:  day.AddDate(0, 0, 1).Add(-time.Nanosecond),
		Limit:  n.DigestLimit,
	})
	if err != nil {
		return render.DigestData{}, err
	}
	return render.DigestData{User: u, Day: day, Events: evs}, nil
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
		if u.Email == "" || u.Disabled || u.DigestHour < 0 || now.Hour() < u.DigestHour || u.DigestSent == key {
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
