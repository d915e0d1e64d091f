package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/browser"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/secret"
	"github.com/changedigest/changedigest/segmenter"
)

// defaultDataDir is where the service keeps its data unless told otherwise.
const defaultDataDir = "changedigest-data"

// storeFlags are the flags every command that opens the store shares.
type storeFlags struct {
	data         string
	allowPrivate bool
	matrix       int
	chromium     string // Chromium for watches rendered in a browser ("": on the PATH)
	browserTabs  int
	// commitDelay is the store's CommitDelay (0: its default).
	commitDelay time.Duration
	// mayOpenView: the command may open a cluster node's store (its
	// view of the cluster): it only reads it, or it is the node.
	mayOpenView bool
	// checkPages: the store's every page is read once at opening, so
	// that damage is found then (pet.Store.CheckPages).
	checkPages bool
}

// registerBrowser adds the flags of browser rendering, for the commands
// that check watches.
func (f *storeFlags) registerBrowser(fs *flag.FlagSet) {
	fs.StringVar(&f.chromium, "chromium", "", "Chromium `binary` for watches rendered in a browser (default: chromium on the PATH)")
	fs.IntVar(&f.browserTabs, "browser-tabs", browser.DefaultTabs, "pages rendered in the browser at once")
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	def := os.Getenv("CHANGEDIGEST_DATA")
	if def == "" {
		def = defaultDataDir
	}
	fs.StringVar(&f.data, "data", def, "data directory, created on first use (env CHANGEDIGEST_DATA)")
	fs.BoolVar(&f.allowPrivate, "allow-private", false, "allow fetching private, loopback and link-local addresses")
	fs.IntVar(&f.matrix, "matrix", pet.DefaultMatrix, "versions in the signature matrix (m)")
}

// registerGapFlags adds the politeness flags of serve and check: the
// longest gap between two requests to one host and the gap factor.
func registerGapFlags(fs *flag.FlagSet, hostGap *time.Duration, factor *int) {
	fs.DurationVar(hostGap, "host-gap", *hostGap, "longest gap between two requests to one host")
	fs.IntVar(factor, "gap-factor", *factor, "gap after a host's answer, in times the answer took, up to --host-gap (0: always --host-gap)")
}

// checkGapFlags refuses negative politeness flags.
func checkGapFlags(hostGap time.Duration, factor int) error {
	if hostGap < 0 || factor < 0 {
		return usagef("--host-gap %s and --gap-factor %d must not be negative", hostGap, factor)
	}
	return nil
}

// openStore opens the Page Evolution Track in the data directory.
func (f *storeFlags) openStore(ctx context.Context, logger *slog.Logger) (*pet.Store, error) {
	if f.matrix < 1 || f.matrix > 100 {
		return nil, usagef("--matrix %d is not between 1 and 100", f.matrix)
	}
	if !f.mayOpenView && cluster.IsView(f.data) {
		return nil, viewRefused(f.data)
	}
	s := pet.New(f.data)
	s.Matrix = f.matrix
	s.CommitDelay = f.commitDelay
	s.CheckPages = f.checkPages
	if logger != nil {
		s.Logger = logger
	}
	if err := s.Open(ctx); err != nil {
		if errors.Is(err, pet.ErrLocked) {
			return nil, lockedError{f.data}
		}
		return nil, err
	}
	if !f.mayOpenView {
		// A command that may write: the next serve imports the store
		// into its cluster of one again.
		if err := cluster.StoreWritten(f.data); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// viewRefused is the error of a command that would write a cluster
// node's store: the view is the cluster's copy of the node's shards, and
// what is written to it alone the cluster never sees.
func viewRefused(dir string) error {
	return usagef("the data directory %s is a cluster node's (its copy of the cluster's watches and versions): change it through the cluster (its web pages and API, 'changedigest cluster add' and 'cluster user'), or run 'serve --cluster NAME' on it", dir)
}

// secrets is the box of the watches' secrets: the key file in the data
// directory, made on first use.
func (f *storeFlags) secrets() *secret.Box {
	return secret.NewBox(filepath.Join(f.data, secret.KeyFile))
}

// pipeline builds the fetcher, the browser pool (Chromium starts at the
// first page rendered) and the check pipeline over a store. The caller
// closes the pool.
func (f *storeFlags) pipeline(store *pet.Store) (*crawl.Fetcher, *crawl.Pipeline, *browser.Pool) {
	fetcher := crawl.NewFetcher()
	fetcher.AllowPrivate = f.allowPrivate
	fetcher.Secrets = f.secrets()
	pool := browser.NewPool(fetcher.DialContext)
	pool.Exec = f.chromium
	if f.browserTabs > 0 {
		pool.Tabs = f.browserTabs
	}
	p := crawl.NewPipeline(fetcher, segmenter.New(), store)
	p.Matrix = f.matrix
	p.Renderer = pool
	return fetcher, p, pool
}

// openAs opens the store and finds the user a command acts for (see
// cliUser). The caller closes the store.
func (f *storeFlags) openAs(ctx context.Context, name string, e *env) (*pet.Store, *changedigest.User, error) {
	store, err := f.openStore(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	// A command leaves the index work of what it stores to the next
	// search or to serve (pet.Store.DeferIndex): checking opens no index,
	// and the work of many commands is done in a few large batches.
	store.DeferIndex = true
	u, err := cliUser(ctx, store, name, e)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, u, nil
}

// lockedError is the error of a command whose data directory another
// process (a running serve) holds.
type lockedError struct{ data string }

func (e lockedError) Error() string {
	return fmt.Sprintf("the data directory %s is in use by another changedigest process (stop it, or use --data)", e.data)
}

func (e lockedError) Unwrap() error { return pet.ErrLocked }

// openCLI opens what the user and watch commands read and write: the
// store, or, while a running service holds it, the service's store
// through its admin socket (remote.go). The caller closes it.
func (f *storeFlags) openCLI(ctx context.Context) (cliStore, error) {
	// A service that answers on the socket holds the store: asked first,
	// it spares the wait for the store's lock.
	if c := adminClient(ctx, f.data); c != nil && !cluster.IsView(f.data) {
		return remoteStore{c}, nil
	}
	store, err := f.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	store.DeferIndex = true // see openAs
	return localStore{store}, nil
}

// openCLIAs is openCLI and the user a command acts for (see cliUser).
func (f *storeFlags) openCLIAs(ctx context.Context, name string, e *env) (cliStore, *changedigest.User, error) {
	store, err := f.openCLI(ctx)
	if err != nil {
		return nil, nil, err
	}
	u, err := cliUser(ctx, store, name, e)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, u, nil
}

// userStore is where cliUser finds users.
type userStore interface {
	Users(ctx context.Context) ([]changedigest.User, error)
	UserByName(ctx context.Context, name string) (*changedigest.User, error)
	CreateUser(ctx context.Context, u *changedigest.User) error
}

// cliUser is the user command-line watches belong to: the one named, or
// the only user, or (in an empty store) a new user "admin".
func cliUser(ctx context.Context, store userStore, name string, e *env) (*changedigest.User, error) {
	if name != "" {
		return store.UserByName(ctx, name)
	}
	users, err := store.Users(ctx)
	if err != nil {
		return nil, err
	}
	switch len(users) {
	case 0:
		u := &changedigest.User{Name: "admin", Admin: true, DigestHour: -1}
		if err := store.CreateUser(ctx, u); err != nil {
			return nil, err
		}
		fmt.Fprintf(e.stderr, "created the local user %q; give it a password with: changedigest user passwd admin\n", u.Name)
		return u, nil
	case 1:
		return &users[0], nil
	}
	for i := range users {
		if users[i].Admin {
			return &users[i], nil
		}
	}
	return nil, usagef("there are %d users: say which with --user NAME", len(users))
}

// absData returns the data directory as an absolute path, for messages.
func absData(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
