// Package pet is the Page Evolution Track: the service's store.
//
// It keeps every fetched version of every watched page or feed (fetch
// metadata, segment layout and hashes, the change set, the raw body), the
// signature matrix of the newest versions, a full-text index over all
// history, and the rest of the service state: users, sessions, API tokens,
// profiles and watches.
//
// Two stores live in the store's directory. pet.db (bbolt) is the truth:
// every write is one bbolt transaction. index.bleve (Bleve) is derived
// from it: a write records the index documents it touches as a pending
// marker in the same transaction, and the index is brought up to date
// after the commit; Open replays what is still pending, and rebuilds the
// index from pet.db when it is missing, unreadable or does not agree with
// pet.db. A version is therefore either stored and searchable or absent,
// even after the process is killed mid-write.
//
// Raw bodies are split at the segments' byte ranges (and the gaps between
// them; content-defined chunking where no ranges are known or a piece is
// large), and each piece is stored once, compressed, under the hash of its
// bytes, so a segment that did not change between versions costs a byte
// or two of reference. A changed piece is stored as a delta against the
// piece that held its place in the previous version when that is smaller
// (chains are bounded; a delta keeps its base alive). Segment texts are
// stored once per watch and hash, deflated against the segment's own
// HTML. Everything is reference-counted, so retention and deletion free
// what no stored version needs; Check verifies it all.
//
// No bleve or bbolt type appears in the API. Errors meant for users carry a
// changedigest error code (changedigest.ErrorCode) and match the sentinels
// below with errors.Is.
package pet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/memo"
)

// Sentinel errors. Errors returned for user input or missing records match
// one of these with errors.Is and carry the changedigest code named beside
// it, so the HTTP edge can map them with changedigest.ErrorCode.
var (
	// ErrNotFound: no such record, or it belongs to another user (ENOTFOUND).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the record already exists (ECONFLICT).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: bad input (EINVALID).
	ErrInvalid = errors.New("invalid")
	// ErrTooLarge: input over a size limit (ETOOLARGE).
	ErrTooLarge = errors.New("too large")
	// ErrClosed: the store is not open (EUNAVAILABLE).
	ErrClosed = errors.New("store is not open")
	// ErrCorrupt: stored data failed a check; the record cannot be read
	// (EINTERNAL).
	ErrCorrupt = errors.New("stored data is corrupt")
	// ErrLocked: another process holds the store (Open gave up after
	// OpenTimeout).
	ErrLocked = errors.New("store is locked by another process")
	// ErrNoSpace: a write failed because the disk is full; nothing was
	// stored (EUNAVAILABLE).
	ErrNoSpace = errors.New("storage is full")
)

// AnyUser, passed where a method takes a user id, lifts the ownership
// check: for internal callers (the crawler, admin tools), never for a
// request made on behalf of a user. User ids start at 1.
const AnyUser int64 = 0

// Defaults set by New (see the Store fields of the same names).
const (
	DefaultMatrix       = 5
	DefaultKeepVersions = 1000
	DefaultKeepDays     = 0 // no age limit
	DefaultMaxBodySize  = 32 << 20
	DefaultOpenTimeout  = 5 * time.Second
	DefaultCommitDelay  = 2 * time.Millisecond
)

// MaxProfileDocument is the largest FOAF document PutProfile accepts.
const MaxProfileDocument = 1 << 20

// Store is the Page Evolution Track and the service state. Create it with
// New, adjust the exported fields, then call Open. All methods are safe
// for concurrent use once Open has returned.
type Store struct {
	// Dir holds pet.db and index.bleve; Open creates it.
	Dir string
	// Matrix is m, the number of rows of the signature matrix: History's
	// default depth. Retention never removes the newest Matrix versions.
	Matrix int
	// KeepVersions and KeepDays are the retention limits for watches that
	// set none (0 = no limit). A version is removed when it is older than
	// the newest KeepVersions or fetched more than KeepDays ago, unless it
	// is one of the newest Matrix versions.
	KeepVersions int
	KeepDays     int
	// MaxBodySize is the largest body AddVersion accepts.
	MaxBodySize int
	// OpenTimeout bounds how long Open waits for another process holding pet.db.
	OpenTimeout time.Duration
	// NoSync skips fsync on commit. A crash of the process still loses
	// nothing, but a power failure may; for tests and bulk imports only.
	NoSync bool
	// CheckPages makes Open walk every page of pet.db first, so that a
	// damaged page is a clear error at start rather than a crash later
	// (the service sets it; it reads the whole file).
	CheckPages bool
	// CommitDelay is how long a write that may share its commit
	// (AddVersion, SaveSchedule, index bookkeeping) waits for others to
	// join it: one commit and its fsyncs then serve them all, and each
	// returns once that commit is durable. Default 2 ms; a command that
	// checks many pages of one host sets more, since the host's gap
	// spaces its checks.
	CommitDelay time.Duration
	// Now is the clock.
	Now func() time.Time
	// Logger receives index recovery and background failures.
	Logger *slog.Logger
	// Notified, when set, is called after a version that wrote an outbox
	// entry has committed, to wake the notification centre. It must not
	// block.
	Notified func()
	// IndexRetry is how long the index stays read-only after a failure
	// before a write or search reopens it for writing (DefaultIndexRetry
	// when zero).
	IndexRetry time.Duration
	// IndexDelay is how long the index work of a write may wait to be
	// done in one batch with that of later writes (DefaultIndexDelay when
	// zero; negative: at once, in the writing goroutine). Searches apply
	// pending work first, so it bounds only how stale the index files are:
	// a stored version is in the index within IndexDelay, and after a
	// crash the pending markers put it there on the next Open.
	IndexDelay time.Duration
	// DeferIndex leaves the index work of writes to the next search,
	// Check or Stats, or to the next process that indexes (serve): a
	// short command that stores versions then opens no index at all.
	// The pending markers keep the work across processes and crashes.
	DeferIndex bool

	db  *bolt.DB
	idx bleve.Index
	// idxMu guards idx against a swap by Reindex.
	idxMu sync.RWMutex
	// syncMu serialises bringing the index up to date.
	syncMu sync.Mutex
	// behind is set when the index missed a write that the next write,
	// search or Open will apply.
	behind atomic.Bool
	// windowed counts the searches ordered within a window (searchNewest).
	windowed atomic.Int64
	open     atomic.Bool
	// lists keeps users' watch lists (see WatchPage).
	lists listCache
	// damaged notes the records found damaged, each logged once.
	damaged sync.Map
	// events and watches keep the version rows and watches of change
	// events (see Changes).
	events  memo.Cache[eventRef, eventRow]
	watches memo.Cache[int64, decodedWatch]
	refs    memo.Cache[refQuery, refList]

	// faultMu guards fault and faultCh (see health.go); idxReadOnly is
	// guarded by idxMu.
	faultMu     sync.Mutex
	fault       *indexFault
	faultCh     chan struct{}
	idxReadOnly bool
	full        atomic.Pointer[fullState]

	// idxReady is set once the index is open (see ensureIndex).
	idxOpenMu sync.Mutex
	idxReady  atomic.Bool

	// timer, when set, applies pending index work (see syncAfterWrite).
	timerMu sync.Mutex
	timer   *time.Timer

	// afterOpenSync, when set (by tests), runs in openIndex between the
	// replay of pending markers and the count check, where writes of
	// other goroutines may land.
	afterOpenSync func()
}

// New returns a store in dir with default settings. It does no I/O.
func New(dir string) *Store {
	return &Store{
		Dir:          dir,
		Matrix:       DefaultMatrix,
		KeepVersions: DefaultKeepVersions,
		KeepDays:     DefaultKeepDays,
		MaxBodySize:  DefaultMaxBodySize,
		OpenTimeout:  DefaultOpenTimeout,
		Now:          time.Now,
		Logger:       slog.Default(),
	}
}

const (
	dbFile   = "pet.db"
	indexDir = "index.bleve"
	// schema is the layout version of pet.db.
	schema = 1
)

// Buckets of pet.db. Integer keys are 8-byte big-endian.
var (
	bMeta       = []byte("meta")        // "schema" → uvarint
	bUsers      = []byte("users")       // uid → userRec JSON
	bUserNames  = []byte("user_names")  // lower(name) → uid
	bFeedTokens = []byte("feed_tokens") // token → uid
	bSessions   = []byte("sessions")    // sha256(token) → sessionRec JSON
	bTokens     = []byte("tokens")      // tid → tokenRec JSON
	bTokenHash  = []byte("token_hash")  // sha256(secret) → tid
	bProfiles   = []byte("profiles")    // uid → profileRec JSON
	bWatches    = []byte("watches")     // wid → Watch JSON
	bUserWatch  = []byte("user_watch")  // uid|wid → summary (watchlist.go)
	bWatchKeys  = []byte("watch_keys")  // uid|sha256(url, zone)[:16] → wid
	bDue        = []byte("due")         // nextcheck|wid → "" (not paused)
	bTracks     = []byte("tracks")      // wid → trackMeta
	bVersions   = []byte("versions")    // wid|seq → version record
	bSegs       = []byte("segs")        // wid|segid → segRec
	bSegHash    = []byte("seg_hash")    // wid|hash → segid
	bChunkHash  = []byte("chunk_hash")  // sha256[:16] → cid
	bChunkData  = []byte("chunk_data")  // cid → encoded chunk
	bChunkRefs  = []byte("chunk_refs")  // cid → uvarint refs + hash
	bEvents     = []byte("events")      // uid|time|wid|seq → change type mask
	bPending    = []byte("pending")     // n → doc keys to bring into the index
	// account administration (accounts.go)
	bAccountSettings = []byte("account_settings") // "registration" → mode
	bTickets         = []byte("tickets")          // sha256(secret) → Ticket JSON
	bAudit           = []byte("audit")            // id → AuditEntry JSON
	allBuckets       = [][]byte{bMeta, bUsers, bUserNames, bFeedTokens, bSessions, bTokens, bTokenHash,
		bProfiles, bWatches, bUserWatch, bWatchKeys, bDue, bTracks, bVersions, bSegs, bSegHash,
		bChunkHash, bChunkData, bChunkRefs, bEvents, bPending,
		// notifications (outbox.go)
		bOutbox, bChannels, bUserChans, bDeliveries, bDelivDue, bUserDeliv, bWebSub, bShots,
		bAccountSettings, bTickets, bAudit}
)

// Open creates the directory and the databases on first use and opens
// pet.db. The search index is opened when first needed (a search, or the
// index work of a write), and then brought up to date with pet.db
// (replaying writes a crash interrupted, or rebuilding the index when it
// is missing or does not agree). It fails when pet.db is locked by another process for longer
// than OpenTimeout or is not a store.
func (s *Store) Open(ctx context.Context) error {
	if s.open.Load() {
		return fmt.Errorf("pet: open %s: already open", s.Dir)
	}
	if s.Dir == "" {
		return fmt.Errorf("pet: open: %w", invalidf("store directory is not set"))
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.Matrix <= 0 {
		s.Matrix = DefaultMatrix
	}
	s.faultMu.Lock()
	s.fault, s.faultCh = nil, make(chan struct{})
	s.faultMu.Unlock()
	if err := os.MkdirAll(s.Dir, 0o750); err != nil {
		return fmt.Errorf("pet: create store directory: %w", err)
	}
	path := filepath.Join(s.Dir, dbFile)
	db, err := openFile(path, &bolt.Options{Timeout: s.OpenTimeout, NoSync: s.NoSync})
	if err != nil {
		return err
	}
	if err := checkSize(db, path); err != nil {
		db.Close()
		return err
	}
	if s.CheckPages {
		if err := checkPages(db, path); err != nil {
			db.Close()
			return err
		}
	}
	// Batched writes (AddVersion, index bookkeeping) wait at most this
	// long for company; a lone writer pays it once.
	db.MaxBatchDelay = DefaultCommitDelay
	if s.CommitDelay > 0 {
		db.MaxBatchDelay = s.CommitDelay
	}
	err = guarded(path, func() error { return s.prepare(db) })
	if err != nil {
		db.Close()
		if errors.Is(err, ErrCorrupt) {
			return err
		}
		if damagedRecords(err) {
			return damagedf(path, "%v", err)
		}
		return fmt.Errorf("pet: open %s: %w", path, err)
	}
	s.db = db
	s.lists.reset() // lists of another opening of the store are not this one's
	s.events = memo.Cache[eventRef, eventRow]{Max: DefaultEventCacheBytes}
	s.watches = memo.Cache[int64, decodedWatch]{Max: watchCacheBytes}
	s.refs = memo.Cache[refQuery, refList]{Max: refListsBytes}
	s.idxReady.Store(false)
	s.open.Store(true)
	return nil
}

// prepare makes the buckets a new store lacks and brings the records of
// an older one up to date.
func (s *Store) prepare(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := rebuildWatchKeys(tx); err != nil {
			return err
		}
		if err := fillWatchSummaries(tx); err != nil {
			return err
		}
		m := tx.Bucket(bMeta)
		if v := m.Get([]byte("schema")); v == nil {
			return m.Put([]byte("schema"), putUvarint(nil, schema))
		} else if n, _ := uvarint(v); n != schema {
			return fmt.Errorf("schema %d is not supported (want %d)", n, schema)
		}
		return nil
	})
}

// ensureIndex opens the search index on first use: a command that reads
// or writes only records (most of the command line) never pays for it.
// Opening replays pending markers, and rebuilds the index when it is
// missing or does not agree with pet.db.
func (s *Store) ensureIndex(ctx context.Context) error {
	if s.idxReady.Load() {
		return nil
	}
	s.idxOpenMu.Lock()
	defer s.idxOpenMu.Unlock()
	if s.idxReady.Load() {
		return nil
	}
	if !s.open.Load() {
		return userErr(changedigest.EUNAVAILABLE, ErrClosed, "the store is not open")
	}
	if err := s.openIndex(ctx); err != nil {
		// Close what openIndex left open, or the next attempt would wait
		// for its lock.
		s.syncMu.Lock()
		s.idxMu.Lock()
		if s.idx != nil {
			closeIndex(s.idx)
			s.idx = nil
		}
		s.idxMu.Unlock()
		s.syncMu.Unlock()
		return err
	}
	s.idxReady.Store(true)
	return nil
}

// Close flushes and closes both databases. Calls after the first return nil.
func (s *Store) Close() error {
	if !s.open.Load() {
		return nil
	}
	s.stopTimer()
	if s.behind.Load() && !s.DeferIndex {
		// One batch for what this process left pending, rather than a
		// replay by the next Open.
		s.flushIndex()
	}
	if !s.open.Swap(false) {
		return nil
	}
	s.stopTimer()
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	var errs []error
	if s.idx != nil {
		if f, _ := s.currentFault(); f != nil {
			closeIndex(s.idx)
		} else if err := s.idx.Close(); err != nil {
			errs = append(errs, fmt.Errorf("pet: close index: %w", err))
		}
		s.idx = nil
	}
	stores.Delete(filepath.Join(s.Dir, indexDir, "store"))
	recent.forget(s.db)
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("pet: close %s: %w", dbFile, err))
	}
	return errors.Join(errs...)
}

// ready checks that the store is open and the context is live.
func (s *Store) ready(ctx context.Context) error {
	if !s.open.Load() {
		return userErr(changedigest.EUNAVAILABLE, ErrClosed, "the store is not open")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pet: %w", err)
	}
	return nil
}

func (s *Store) now() time.Time { return s.Now().UTC() }

// view and update run fn in a bbolt transaction after the ready check.
func (s *Store) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.db.View(fn)
}

// update runs fn in a write transaction.
func (s *Store) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.writeErr(s.db.Update(fn))
}

// batchUpdate is update in a transaction that bbolt may share with those
// of other goroutines (one commit, one fsync for all of them); fn may run
// more than once, so it must only depend on tx.
func (s *Store) batchUpdate(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.writeErr(s.db.Batch(fn))
}

// userError is an error for users: a changedigest.Error (code and safe
// message) that also matches one of the package sentinels.
type userError struct {
	user     *changedigest.Error
	sentinel error
}

func (e *userError) Error() string   { return "pet: " + e.user.Message }
func (e *userError) Unwrap() []error { return []error{e.user, e.sentinel} }

func userErr(code string, sentinel error, format string, args ...any) error {
	return &userError{user: changedigest.Errorf(code, format, args...), sentinel: sentinel}
}

func notFoundf(format string, args ...any) error {
	return userErr(changedigest.ENOTFOUND, ErrNotFound, format, args...)
}

func conflictf(format string, args ...any) error {
	return userErr(changedigest.ECONFLICT, ErrConflict, format, args...)
}

func invalidf(format string, args ...any) error {
	return userErr(changedigest.EINVALID, ErrInvalid, format, args...)
}

func tooLargef(format string, args ...any) error {
	return userErr(changedigest.ETOOLARGE, ErrTooLarge, format, args...)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("pet: %w: "+format, append([]any{ErrCorrupt}, args...)...)
}
