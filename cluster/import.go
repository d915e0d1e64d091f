package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// A single `serve` keeps everything in its store. Started with --cluster
// on the same data directory, it becomes the cluster's first node: Import
// copies the store into the cluster (accounts and watches into their
// buckets, every stored version into the versions stream, IDs kept), and
// the store goes on as the node's view, which then holds nothing the
// cluster lacks. Another node taking a shard over rebuilds it whole.

// Imported counts what Import copied into the cluster, and what the
// cluster already held (an import that stopped half-way, run again).
type Imported struct {
	Users, Sessions, Tokens, Profiles, Channels, Subscriptions, Watches, Versions int
	// Held counts records and versions the cluster already held.
	Held int
	// TooLarge counts versions over MaxMessage or over a store's limits
	// (pet.CheckVersion, kept before the limits were): the node's store
	// keeps them, the versions stream does not.
	TooLarge int
}

func (im Imported) String() string {
	return fmt.Sprintf("%d users, %d sessions, %d tokens, %d profiles, %d channels, %d subscriptions, %d watches, %d versions (%d held already, %d too large for the stream)",
		im.Users, im.Sessions, im.Tokens, im.Profiles, im.Channels, im.Subscriptions, im.Watches, im.Versions, im.Held, im.TooLarge)
}

// IsView reports whether the store in dir has been a cluster node's view
// (the node keeps its place in each shard there): such a store is the
// cluster's copy, never a single node's to import. A single serve's
// directory (a cluster of one, IsLocal) is not a view: its store is its
// own.
func IsView(dir string) bool {
	_, err := os.Stat((&Node{Dir: dir}).positionFile())
	return err == nil && !IsLocal(dir)
}

// storeContents is what a single node's store holds for the cluster.
type storeContents struct {
	users    []changedigest.User
	sessions []pet.SessionRecord
	tokens   []pet.TokenRecord
	profiles []profileRecord
	channels []changedigest.Channel
	subs     []changedigest.Subscription
	watches  []changedigest.Watch
	// Account administration: the registration mode, the live one-time
	// links, the audit log.
	registration changedigest.Registration
	tickets      []pet.Ticket
	audit        []pet.AuditEntry
	// last are the store's last IDs, deleted records' included.
	last pet.IDs
}

func readStore(ctx context.Context, st *pet.Store, now time.Time) (*storeContents, error) {
	var sc storeContents
	var err error
	if sc.users, err = st.Users(ctx); err != nil {
		return nil, err
	}
	for _, u := range sc.users {
		ss, err := st.Sessions(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			if s.ExpiresAt.After(now) {
				sc.sessions = append(sc.sessions, s)
			}
		}
		ts, err := st.TokenRecords(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		sc.tokens = append(sc.tokens, ts...)
		p, doc, err := st.Profile(ctx, u.ID)
		switch {
		case err == nil:
			sc.profiles = append(sc.profiles, profileRecord{Profile: *p, Document: doc})
		case !errors.Is(err, pet.ErrNotFound):
			return nil, err
		}
		cs, err := st.Channels(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		sc.channels = append(sc.channels, cs...)
	}
	if sc.subs, err = st.Subscriptions(ctx, pet.AnyUser); err != nil {
		return nil, err
	}
	if sc.watches, err = st.Watches(ctx, pet.AnyUser, ""); err != nil {
		return nil, err
	}
	if sc.last, err = st.LastIDs(ctx); err != nil {
		return nil, err
	}
	if sc.registration, err = st.Registration(ctx); err != nil {
		return nil, err
	}
	if sc.tickets, err = st.Tickets(ctx); err != nil {
		return nil, err
	}
	if sc.audit, err = st.Audit(ctx, 0); err != nil {
		return nil, err
	}
	return &sc, nil
}

// empty reports whether the store holds nothing to import.
func (sc *storeContents) empty() bool { return len(sc.users) == 0 && len(sc.watches) == 0 }

// Import copies a single node's store into the cluster, keeping every ID:
// users with their sessions, API tokens, profiles and channels, WebSub
// subscriptions, watches with their schedules, and each watch's stored
// versions, oldest first, into the versions stream (matrix is the
// pipeline's m, for the signature matrix each version message carries).
// The counters are raised past the store's IDs. Run again after it
// stopped half-way, it copies only what the cluster lacks.
//
// It writes nothing when the cluster already holds a different user,
// watch, token or channel under one of the store's IDs, or another user
// of one of its names: the error (ECONFLICT) names them. A store can be
// imported into the cluster it starts, not merged into one that has
// grown apart from it.
func (c *Conn) Import(ctx context.Context, st *pet.Store, matrix int, log *slog.Logger) (Imported, error) {
	var im Imported
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sc, err := readStore(ctx, st, time.Now())
	if err != nil {
		return im, fmt.Errorf("cluster: read the store to import: %w", err)
	}
	if sc.empty() {
		return im, nil
	}
	if err := c.importConflicts(ctx, sc); err != nil {
		return im, err
	}
	start := time.Now()
	if err := c.importAccounts(ctx, sc, &im); err != nil {
		return im, err
	}
	if err := c.importWatches(ctx, sc, &im); err != nil {
		return im, err
	}
	if err := c.raiseCounters(ctx, sc); err != nil {
		return im, err
	}
	for i, w := range sc.watches {
		if err := c.importVersions(ctx, st, w.ID, max(matrix, 1), &im); err != nil {
			return im, err
		}
		if (i+1)%1000 == 0 {
			log.Info("importing the store's versions", "watches", i+1, "of", len(sc.watches), "versions", im.Versions)
		}
	}
	log.Info("imported the store into the cluster", "imported", im.String(), "took", time.Since(start).Round(time.Millisecond))
	return im, nil
}

// importConflicts finds the store's IDs and names the cluster holds for
// something else.
func (c *Conn) importConflicts(ctx context.Context, sc *storeContents) error {
	var clash []string
	note := func(format string, args ...any) {
		if len(clash) < 5 {
			clash = append(clash, fmt.Sprintf(format, args...))
		} else if len(clash) == 5 {
			clash = append(clash, "…")
		}
	}
	get := func(kv jetstream.KeyValue, key string) ([]byte, error) {
		var e jetstream.KeyValueEntry
		err := again(ctx, func() (err error) {
			e, err = kv.Get(ctx, key)
			return err
		})
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: read %s: %w", key, unavailable(err))
		}
		return e.Value(), nil
	}
	for _, u := range sc.users {
		v, err := get(c.accounts, userKey(u.ID))
		if err != nil {
			return err
		}
		var r userRecord
		if v != nil && (json.Unmarshal(v, &r) != nil || !strings.EqualFold(r.Name, u.Name)) {
			note("user %d is %q in the cluster, %q in the store", u.ID, r.Name, u.Name)
		}
		if v, err = get(c.accounts, nameKey(u.Name)); err != nil {
			return err
		}
		if v != nil && string(v) != strconv.FormatInt(u.ID, 10) {
			note("user name %q is user %s in the cluster, %d in the store", u.Name, v, u.ID)
		}
	}
	for _, w := range sc.watches {
		v, err := get(c.watches, watchKey(ShardOf(w.ID, c.Config.Shards), w.ID))
		if err != nil {
			return err
		}
		var cw changedigest.Watch
		if v != nil && (json.Unmarshal(v, &cw) != nil || cw.URL != w.URL || cw.UserID != w.UserID) {
			note("watch %d is %s in the cluster, %s in the store", w.ID, cw.URL, w.URL)
		}
	}
	for _, t := range sc.tokens {
		m, err := c.findAccount(ctx, "token."+strconv.FormatInt(t.ID, 10)+".*")
		if err != nil {
			return fmt.Errorf("cluster: read token %d: %w", t.ID, unavailable(err))
		}
		var r tokenRecord
		if m != nil && (json.Unmarshal(m.Data, &r) != nil || r.Token.UserID != t.UserID || string(r.Hash) != string(t.Hash)) {
			note("API token %d is another token in the cluster", t.ID)
		}
	}
	for _, ch := range sc.channels {
		v, err := get(c.accounts, channelKey(ch.ID))
		if err != nil {
			return err
		}
		var r channelRecord
		if v != nil && (json.Unmarshal(v, &r) != nil || r.UserID != ch.UserID || r.URL != ch.URL) {
			note("channel %d is another channel in the cluster", ch.ID)
		}
	}
	if len(clash) > 0 {
		return changedigest.Errorf(changedigest.ECONFLICT,
			"the store cannot be imported: the cluster already holds other records under its IDs or names (%s); start the cluster's first node on this data directory, or this node on an empty one", strings.Join(clash, "; "))
	}
	return nil
}

// create writes key unless the bucket holds it: true when it wrote.
func create(ctx context.Context, kv jetstream.KeyValue, key string, v any) (bool, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	err = again(ctx, func() error {
		_, err := kv.Create(ctx, key, data)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("cluster: import %s: %w", key, unavailable(err))
	}
	return true, nil
}

func (c *Conn) importAccounts(ctx context.Context, sc *storeContents, im *Imported) error {
	count := func(wrote bool, err error, n *int) error {
		switch {
		case err != nil:
			return err
		case wrote:
			*n++
		default:
			im.Held++
		}
		return nil
	}
	for i := range sc.users {
		u := &sc.users[i]
		if _, err := create(ctx, c.accounts, nameKey(u.Name), u.ID); err != nil {
			return err
		}
		wrote, err := create(ctx, c.accounts, userKey(u.ID), recordOf(u))
		if err := count(wrote, err, &im.Users); err != nil {
			return err
		}
	}
	for _, s := range sc.sessions {
		wrote, err := create(ctx, c.accounts, sessionKey(s.UserID, s.Hash), s.Session)
		if err := count(wrote, err, &im.Sessions); err != nil {
			return err
		}
	}
	for _, t := range sc.tokens {
		wrote, err := create(ctx, c.accounts, tokenKey(t.ID, t.Hash), tokenRecord{Token: t.Token, Hash: t.Hash})
		if err := count(wrote, err, &im.Tokens); err != nil {
			return err
		}
	}
	for _, p := range sc.profiles {
		wrote, err := create(ctx, c.accounts, profileKey(p.Profile.UserID), p)
		if err := count(wrote, err, &im.Profiles); err != nil {
			return err
		}
	}
	for _, ch := range sc.channels {
		wrote, err := create(ctx, c.accounts, channelKey(ch.ID), channelRecord{Channel: ch, Secret: ch.Secret})
		if err := count(wrote, err, &im.Channels); err != nil {
			return err
		}
	}
	for _, s := range sc.subs {
		wrote, err := create(ctx, c.accounts, subscriptionKey(s.Topic, s.Callback), subscriptionRecord{Subscription: s, Secret: s.Secret})
		if err := count(wrote, err, &im.Subscriptions); err != nil {
			return err
		}
	}
	var admin int // account administration's records, not counted apart
	if sc.registration != "" && sc.registration != changedigest.RegistrationClosed {
		wrote, err := create(ctx, c.accounts, registrationKey, sc.registration)
		if err := count(wrote, err, &admin); err != nil {
			return err
		}
	}
	for _, t := range sc.tickets {
		wrote, err := create(ctx, c.accounts, ticketKey(t.Hash), t)
		if err := count(wrote, err, &admin); err != nil {
			return err
		}
	}
	for _, e := range sc.audit {
		wrote, err := create(ctx, c.accounts, auditKey(e.ID), e)
		if err := count(wrote, err, &admin); err != nil {
			return err
		}
	}
	return nil
}

func (c *Conn) importWatches(ctx context.Context, sc *storeContents, im *Imported) error {
	for i := range sc.watches {
		w := &sc.watches[i]
		wrote, err := create(ctx, c.watches, watchKey(ShardOf(w.ID, c.Config.Shards), w.ID), w)
		switch {
		case err != nil:
			return err
		case wrote:
			im.Watches++
		default:
			im.Held++
		}
	}
	return nil
}

// raiseCounters moves the cluster's ID counters past the store's IDs, so
// that what the cluster defines next takes none of them.
func (c *Conn) raiseCounters(ctx context.Context, sc *storeContents) error {
	// Past the IDs of records deleted since, too.
	top := map[string]int64{"user": sc.last.Users, "token": sc.last.Tokens, "channel": sc.last.Channels, "watch": sc.last.Watches}
	for _, u := range sc.users {
		top["user"] = max(top["user"], u.ID)
	}
	for _, t := range sc.tokens {
		top["token"] = max(top["token"], t.ID)
	}
	for _, ch := range sc.channels {
		top["channel"] = max(top["channel"], ch.ID)
	}
	for _, w := range sc.watches {
		top["watch"] = max(top["watch"], w.ID)
	}
	for _, e := range sc.audit {
		top["audit"] = max(top["audit"], e.ID)
	}
	for name, n := range top {
		if n <= 0 {
			continue
		}
		if err := c.raiseCounter(ctx, name, n); err != nil {
			return err
		}
	}
	return nil
}

// raiseCounter sets the named counter to n unless it is there already.
func (c *Conn) raiseCounter(ctx context.Context, name string, n int64) error {
	next := []byte(strconv.FormatInt(n, 10))
	for range 100 {
		var e jetstream.KeyValueEntry
		err := again(ctx, func() (err error) {
			e, err = c.counters.Get(ctx, name)
			return err
		})
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err = c.counters.Create(ctx, name, next)
		case err != nil:
			return fmt.Errorf("cluster: read the %s counter: %w", name, unavailable(err))
		default:
			if cur, _ := strconv.ParseInt(string(e.Value()), 10, 64); cur >= n {
				return nil
			}
			_, err = c.counters.Update(ctx, name, next, e.Revision())
		}
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("cluster: the %s counter is contended", name)
}

// importVersions appends the watch's stored versions the stream does not
// hold yet, oldest first, each with the signature matrix up to it.
func (c *Conn) importVersions(ctx context.Context, st *pet.Store, id int64, matrix int, im *Imported) error {
	info, err := st.Track(ctx, id)
	if err != nil {
		return fmt.Errorf("cluster: import the versions of watch %d: %w", id, err)
	}
	if info.Versions == 0 {
		return nil
	}
	shard := ShardOf(id, c.Config.Shards)
	subject := versionSubject(shard, id)
	from, last := info.Oldest, uint64(0)
	var history [][]string
	var m *jetstream.RawStreamMsg
	err = again(ctx, func() (err error) {
		m, err = c.versions.GetLastMsgForSubject(ctx, subject)
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return fmt.Errorf("cluster: read the versions of watch %d: %w", id, unavailable(err))
	default:
		v, err := decodeRaw(m)
		if err != nil {
			return fmt.Errorf("cluster: the stream's newest version of watch %d: %w", id, err)
		}
		im.Held += max(min(v.seq, info.Latest)-info.Oldest+1, 0)
		from, last, history = v.seq+1, m.Sequence, v.meta.History
	}
	for seq := from; seq <= info.Latest; seq++ {
		snap, err := st.Version(ctx, id, seq)
		if errors.Is(err, pet.ErrNotFound) {
			continue // removed by retention meanwhile
		}
		if err != nil {
			return fmt.Errorf("cluster: import version %d of watch %d: %w", seq, id, err)
		}
		body, err := st.Body(ctx, id, seq)
		if err != nil {
			return fmt.Errorf("cluster: import version %d of watch %d: %w", seq, id, err)
		}
		if snap.Screenshot != nil && snap.Screenshot.PNG == nil {
			sh, err := st.Screenshot(ctx, id, seq)
			if err != nil && !errors.Is(err, pet.ErrNotFound) {
				return fmt.Errorf("cluster: import the screenshot of version %d of watch %d: %w", seq, id, err)
			}
			if sh != nil {
				snap.Screenshot = sh
			}
		}
		snap.WatchID, snap.Seq = id, seq
		msg, next, err := versionMsg(shard, snap, history, matrix, body, snap.FetchedAt)
		var tooLarge *tooLargeError
		if errors.As(err, &tooLarge) || errors.Is(err, pet.ErrTooLarge) {
			im.TooLarge++
			continue
		}
		if err != nil {
			return err
		}
		history = next
		ack, err := c.publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
		if err != nil {
			return fmt.Errorf("cluster: import version %d of watch %d: %w", seq, id, unavailable(err))
		}
		last = ack.Sequence
		im.Versions++
	}
	return nil
}
