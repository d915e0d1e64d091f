package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"github.com/changedigest/changedigest/metrics"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/browser"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/demo"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/profile"
	"github.com/changedigest/changedigest/render"
	"github.com/changedigest/changedigest/segmenter"
	"github.com/changedigest/changedigest/server"
)

func init() {
	commands["serve"] = command{summary: "run the service: web pages, feeds, API and the scheduler", run: runServe}
}

// Config is what `changedigest serve` is told by its flags.
type Config struct {
	storeFlags
	Addr       string
	BaseURL    string
	Demo       bool
	DemoPeriod time.Duration
	Workers    int
	HostGap    time.Duration
	GapFactor  int
	WordNetDir string
	SMTP       string
	SMTPFrom   string
	SMTPUser   string
	LogLevel   string
	// ClientGap and ClientMinGap bound the polling clients' schedule
	// (agent.Coordinator's ClientGap and MinGap).
	ClientGap    time.Duration
	ClientMinGap time.Duration
	// TrustedProxies are the reverse proxies whose forwarding header
	// (ProxyHeader) names the client (server.Server's TrustedProxies).
	TrustedProxies prefixList
	ProxyHeader    string
	// MemoryLimitMB is the Go runtime's soft memory limit (0: none); the
	// GOMEMLIMIT environment variable overrides it.
	MemoryLimitMB int
	// MetricsAddr, when set, is where /metrics answers a Prometheus
	// scraper, apart from the web server (a loopback or internal address).
	MetricsAddr string
	// Cluster, when it names a cluster (or NATS is an existing NATS
	// deployment), makes this process a node of a cluster; see clusterFlags.
	Cluster clusterFlags
}

// clusterFlags are serve's flags for running as a node of a cluster.
type clusterFlags struct {
	Name       string
	Node       string
	Listen     string
	Routes     string
	NATS       string
	NATSListen string
	Shards     int
	Replicas   int
	AckWait    time.Duration
}

func (f *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Name, "cluster", "", "form or join the cluster of this name (NATS JetStream embedded; see --cluster-listen, --routes)")
	fs.StringVar(&f.Node, "node", "", "this node's name in the cluster, unique (default: host name and --addr port)")
	fs.StringVar(&f.Listen, "cluster-listen", "", "with --cluster: HOST:PORT this node's NATS server takes routes from the others on")
	fs.StringVar(&f.Routes, "routes", "", "with --cluster: comma-separated HOST:PORT route addresses of the other nodes")
	fs.StringVar(&f.NATS, "nats", "", "use the existing NATS deployment at this URL (with JetStream) instead of an embedded server")
	fs.StringVar(&f.NATSListen, "nats-listen", "", "with --cluster: HOST:PORT the embedded NATS server takes clients on (for 'changedigest cluster status')")
	fs.IntVar(&f.Shards, "shards", 16, "shards the watches are divided into, when the cluster first forms")
	fs.IntVar(&f.Replicas, "replicas", 0, "servers keeping each stream and bucket (default 3 in a cluster, 1 alone)")
	fs.DurationVar(&f.AckWait, "check-ack-wait", 2*time.Minute, "how long a check may run on a node before another node takes it over")
}

// on reports whether serve runs as a cluster node.
func (f *clusterFlags) on() bool { return f.Name != "" || f.NATS != "" }

// DefaultMemoryLimitMB keeps a service watching 10,000 pages under 300 MB
// (measured with cmd/checkbench): Bleve's merges would otherwise let the
// heap grow well past what is live.
const DefaultMemoryLimitMB = 180

// EmbeddedServerMemoryMB is added to the default soft memory limit when
// serve runs its own NATS server (always, but with --nats): the server
// keeps what it wrote in the last ten seconds in memory, some 3 KB a
// check, which would otherwise take the collector's room under the
// service's own limit. The first checks of 10,000 farm pages cost 1.32
// to 1.37 times the CPU they cost without the server under 180 MB in all;
// with this, 1.13 to 1.37 times (median 1.25), at a peak of 283 to 298
// MB against 277 (cmd/clusterbench).
const EmbeddedServerMemoryMB = 24

// Main is the running service: the store, the scheduler and the HTTP
// server, and with --demo the demo site. Run starts it; Close stops it.
type Main struct {
	Config Config
	Stdout io.Writer
	Logger *slog.Logger

	Store     *pet.Store
	Server    *server.Server
	Scheduler *crawl.Scheduler
	Notify    *notify.Notifier
	// Digests mails the daily digests: Notify, or on a cluster node a
	// notifier that reads the cluster's changes and mails only the users
	// of this node's shards.
	Digests  *notify.Notifier
	Dispatch *notify.Dispatcher
	Hub      *notify.Hub
	Demo     *demo.Site
	Agent    *agent.Manager
	Clients  *agent.Coordinator
	Browser  *browser.Pool
	// Cluster and Node: serve runs as a cluster node (of a cluster of one
	// without --cluster and --nats).
	Cluster *cluster.Conn
	Node    *cluster.Node
	// MetricsURL is where /metrics answers, with Config.MetricsAddr.
	MetricsURL string

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// serveMetrics serves /metrics on Config.MetricsAddr until ctx ends, with
// the gauges of this node: the checks waiting in the work queue and the
// bytes of the data directory.
func (m *Main) serveMetrics(ctx context.Context) error {
	ln, err := net.Listen("tcp", m.Config.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen on %s for metrics: %w", m.Config.MetricsAddr, err)
	}
	reg := metrics.Default
	reg.Gauge("changedigest_check_queue_depth", "Checks waiting in the work queue.", func() (float64, bool) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := m.Cluster.Status(sctx, false)
		if err != nil {
			return 0, false
		}
		return float64(st.Queued), true
	})
	data := m.Config.data
	reg.Gauge("changedigest_store_bytes", "Bytes of the data directory (store, search index, streams).", func() (float64, bool) {
		var n int64
		err := filepath.WalkDir(data, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // a file gone meanwhile
			}
			if d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
		return float64(n), err == nil
	})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	m.goRun(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	})
	m.goRun(func() error {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	m.MetricsURL = "http://" + displayAddr(ln.Addr().String()) + "/metrics"
	m.Logger.Info("metrics", "url", m.MetricsURL)
	return nil
}

// NewMain returns a Main with the default configuration.
func NewMain() *Main {
	return &Main{
		Config: Config{
			storeFlags: storeFlags{data: defaultDataDir, matrix: pet.DefaultMatrix},
			Addr:       "127.0.0.1:8080", DemoPeriod: 5 * time.Second, Workers: 16, HostGap: time.Second,
			GapFactor:     crawl.DefaultGapFactor,
			MemoryLimitMB: DefaultMemoryLimitMB, ClientGap: 5 * time.Minute, ClientMinGap: 30 * time.Second,
		},
		Stdout: os.Stdout,
		Logger: slog.Default(),
	}
}

func runServe(ctx context.Context, e *env) error {
	m := NewMain()
	m.Stdout = e.stdout
	c := &m.Config
	fs := newFlagSet(e, "serve", "[--addr HOST:PORT] [--data DIR] [--demo] [flags]")
	c.storeFlags.register(fs)
	c.storeFlags.registerBrowser(fs)
	fs.StringVar(&c.Addr, "addr", c.Addr, "address to listen on")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "also serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464; off by default)")
	fs.StringVar(&c.BaseURL, "base-url", "", "public URL of the service, for links in feeds and mail (default http://ADDR)")
	fs.BoolVar(&c.Demo, "demo", false, "also run a local demo site whose pages change every few seconds, with a demo user watching it")
	fs.DurationVar(&c.DemoPeriod, "demo-period", c.DemoPeriod, "how often the demo site changes")
	fs.IntVar(&c.Workers, "workers", c.Workers, "checks running at once")
	registerGapFlags(fs, &c.HostGap, &c.GapFactor)
	fs.StringVar(&c.WordNetDir, "wordnet-dir", "", "read WordNet from these dict files instead of the embedded table (slow)")
	fs.StringVar(&c.SMTP, "smtp", "", "SMTP relay host:port for the daily digest e-mail (password in env CHANGEDIGEST_SMTP_PASSWORD)")
	fs.StringVar(&c.SMTPFrom, "smtp-from", "changedigest <changedigest@localhost>", "sender of digest e-mail")
	fs.StringVar(&c.SMTPUser, "smtp-user", "", "SMTP user name")
	fs.DurationVar(&c.ClientGap, "client-gap", c.ClientGap, "least time between two polls of one page by one polling client")
	fs.DurationVar(&c.ClientMinGap, "client-min-gap", c.ClientMinGap, "least time between two polls of one page by all polling clients together")
	fs.Var(&c.TrustedProxies, "trusted-proxy", "CIDR[,CIDR…] or address of reverse proxies in front of the service: their --proxy-header names the client (repeatable; default none, every client is its connection's address)")
	fs.StringVar(&c.ProxyHeader, "proxy-header", "X-Forwarded-For", "with --trusted-proxy: the header the proxies append the client's address to, X-Forwarded-For or Forwarded")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	c.Cluster.register(fs)
	fs.IntVar(&c.MemoryLimitMB, "memory-limit", c.MemoryLimitMB, fmt.Sprintf("soft memory limit in MB: the garbage collector works harder near it (0: none; env GOMEMLIMIT wins; not given, %d more for the embedded NATS server)", EmbeddedServerMemoryMB))
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return usagef("serve takes no arguments, got %q", args)
	}
	if c.Cluster.NATS == "" && !flagSet(fs, "memory-limit") {
		c.MemoryLimitMB += EmbeddedServerMemoryMB
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	m.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	if c.ClientGap <= 0 || c.ClientMinGap <= 0 {
		return usagef("--client-gap %s and --client-min-gap %s must be positive", c.ClientGap, c.ClientMinGap)
	}
	if !strings.EqualFold(c.ProxyHeader, "X-Forwarded-For") && !strings.EqualFold(c.ProxyHeader, "Forwarded") {
		return usagef("--proxy-header %q: want X-Forwarded-For or Forwarded", c.ProxyHeader)
	}
	if c.MemoryLimitMB < 0 {
		return usagef("--memory-limit %d is negative", c.MemoryLimitMB)
	}
	if err := checkGapFlags(c.HostGap, c.GapFactor); err != nil {
		return err
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && c.MemoryLimitMB > 0 {
		debug.SetMemoryLimit(int64(c.MemoryLimitMB) << 20)
	}
	if err := m.Run(ctx); err != nil {
		m.Close()
		return err
	}
	<-ctx.Done()
	fmt.Fprintln(e.stderr, "shutting down")
	return m.Close()
}

// Run opens the store, starts the scheduler, the digest mailer and the
// HTTP server (and the demo site), prints where to go, and returns; the
// service runs until Close.
func (m *Main) Run(ctx context.Context) error {
	c := &m.Config
	log := m.Logger
	if c.Demo && c.Cluster.on() {
		// The demo site is on this process's loopback, which other
		// nodes' workers cannot reach.
		return usagef("--demo runs a single serve: leave out --cluster and --nats")
	}
	// serve is the node whose view the store is. A plain serve runs as
	// a cluster of one on a single serve's store, never on a node's of
	// a cluster of several.
	if !c.Cluster.on() && cluster.IsView(c.data) {
		return viewRefused(c.data)
	}
	c.mayOpenView, c.checkPages = true, true
	store, err := c.openStore(ctx, log.With("component", "pet"))
	if err != nil {
		return err
	}
	m.Store = store
	// The embedded server starts while the rest does.
	var dialing <-chan dialed
	defer func() {
		if dialing != nil { // Run failed before it joined
			if d := <-dialing; d.conn != nil {
				d.conn.Close()
			}
		}
	}()
	if !c.Cluster.on() {
		dialing = m.dial(ctx, m.nodeName(nil))
	}
	if c.Demo {
		m.Demo = demo.New()
		m.Demo.Period = c.DemoPeriod
		if err := m.Demo.Start(); err != nil {
			return err
		}
	}

	wn, _, err := loadWordNet(c.WordNetDir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	base := c.BaseURL
	if base == "" {
		base = "http://" + displayAddr(ln.Addr().String())
	}
	eng, err := render.NewEngine(base)
	if err != nil {
		ln.Close()
		return usagef("--base-url: %v", err)
	}
	eng.Version = buildVersion()
	if eng.Authority, err = server.LoadAuthority(filepath.Join(c.data, "tag-authority"), eng.Authority); err != nil {
		ln.Close()
		return err
	}

	fetcher, pipeline, pool := c.pipeline(store)
	pool.Logger = log.With("component", "browser")
	m.Browser = pool
	if m.Demo != nil {
		// The demo site is on loopback: allow it, and only it.
		fetcher.Allow = append(fetcher.Allow, m.Demo.AddrPort())
	}
	sched := crawl.NewScheduler(store, pipeline)
	sched.Workers, sched.HostGap, sched.GapFactor = c.Workers, c.HostGap, c.GapFactor
	sched.Logger = log.With("component", "crawl")
	// A disabled account's watches wait: nothing is fetched for it until
	// an administrator enables it again.
	sched.Hold = func(w *changedigest.Watch) bool {
		u, err := store.User(ctx, w.UserID)
		return err == nil && u.Disabled
	}
	m.Scheduler = sched
	if dialing == nil {
		dialing = m.dial(ctx, m.nodeName(ln.Addr()))
	}
	err = m.joinCluster(ctx, pipeline, dialing)
	dialing = nil
	if err != nil {
		ln.Close()
		return err
	}
	// The web server, the notifier and the agents read the cluster's
	// store: the node's view, with the cluster's accounts and watch
	// definitions, and what other nodes serve.
	cs := m.clusterStore()

	// Collaborative detection: reports of page agents and polling
	// clients make a watch due; the scheduler's fetch verifies them.
	m.Agent = agent.New(store, eng.URL("/agent/report"))
	m.Agent.Logger = log.With("component", "agent")
	m.Clients = agent.NewCoordinator(store, m.Agent)
	if c.ClientGap > 0 {
		m.Clients.ClientGap = c.ClientGap
	}
	if c.ClientMinGap > 0 {
		m.Clients.MinGap = c.ClientMinGap
	}
	pipeline.OnVersion = m.Agent.Stored
	m.Agent.Due = sched.Wake
	// A watch's agent work is done by the node serving it, whose
	// scheduler learns the outcome of its checks, wherever they ran.
	m.Node.Agent = m.Agent
	agents := cluster.Agents{Node: m.Node, Local: m.Agent}
	m.Agent.Definitions = cs
	m.Clients.Store, m.Clients.Manager = cs, agents
	sched.OnCheck = agents.OnCheck

	ex := expand.NewExpander(wn)
	m.Notify = notify.New(store, ex, eng)
	m.Notify.Logger = log.With("component", "notify")
	if c.SMTP != "" {
		mailer, err := notify.NewMailer(c.SMTP, c.SMTPFrom)
		if err != nil {
			ln.Close()
			return err
		}
		mailer.Username, mailer.Password = c.SMTPUser, os.Getenv("CHANGEDIGEST_SMTP_PASSWORD")
		m.Notify.Mail = mailer
	}

	// Pushes go through the fetcher's address guard: no private receiver
	// unless --allow-private.
	pushClient := fetcher.Client(30 * time.Second)
	disp := notify.NewDispatcher(store, m.Notify, pushClient)
	disp.Logger = log.With("component", "dispatch")
	// Subscriptions are the cluster's.
	hub := notify.NewHub(cs, m.Notify, pushClient, eng.URL(server.HubPath))
	hub.Logger = log.With("component", "websub")
	disp.Hub = hub
	store.Notified = disp.Wake
	m.Dispatch, m.Hub = disp, hub
	// Another node's redelivery of a delivery made here.
	m.Node.Redeliver = disp.Redeliver

	profiles := profile.NewBuilder()
	profiles.Logger = log.With("component", "profile")
	profiles.Fetch = pageText(fetcher)
	profiles.Describe = interestPage(fetcher)

	srv := server.New()
	srv.Render = eng
	srv.TrustedProxies = c.TrustedProxies
	if c.ProxyHeader != "" {
		srv.ProxyHeader = c.ProxyHeader
	}
	// "Check now" of a watch another node serves is run there.
	m.Node.Scheduler = sched
	srv.Checker = cluster.Checker{Node: m.Node, Local: sched}
	srv.Dispatch, srv.Hub = disp, hub
	srv.Segmenter, srv.Expander, srv.Profiles = segmenter.New(), ex, profiles
	srv.Logger = log.With("component", "server")
	srv.Secrets = c.secrets()
	if srv.Key, err = server.LoadKey(filepath.Join(c.data, "server.key")); err != nil {
		ln.Close()
		return err
	}
	// Every node signs forms with the same key.
	if srv.Key, err = m.Cluster.WebKey(ctx, srv.Key); err != nil {
		ln.Close()
		return err
	}
	// Report tokens are signed under the forms' key: they hold after a
	// restart, and on every node of a cluster.
	if err := m.Agent.SetSecret(srv.Key); err != nil {
		ln.Close()
		return err
	}
	// A watch's agent requests go to the node serving it.
	srv.Agent, srv.Clients = agents, m.Clients
	// Pages, feeds, searches and digests read across the cluster. A
	// user's digest is mailed by the node serving the user's shard,
	// pushes by the node that stored the version: no two nodes send the
	// same message.
	srv.Ready, srv.Store = m.Node.Ready, cs
	m.Digests = notify.New(cluster.DigestStore{Store: cs}, ex, eng)
	m.Digests.Logger, m.Digests.Mail = m.Notify.Logger, m.Notify.Mail
	srv.Notify = m.Digests
	m.Server = srv

	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.goRun(func() error { return m.Node.Run(runCtx) })
	m.goRun(func() error { return m.Node.Worker.Run(runCtx) })
	if !c.Cluster.on() {
		// A cluster of one answers once it serves all its watches, as a
		// single node's store did.
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
		err := m.Node.AwaitServing(wctx)
		wcancel()
		if err != nil {
			ln.Close()
			return err
		}
	}
	if m.Demo != nil {
		if err := m.startDemo(ctx, eng); err != nil {
			ln.Close()
			return err
		}
	} else if err := m.firstAdmin(ctx); err != nil {
		ln.Close()
		return err
	}
	if err := srv.Serve(ln); err != nil {
		return err
	}
	if c.MetricsAddr != "" {
		if err := m.serveMetrics(runCtx); err != nil {
			return err
		}
	}
	// backup and user export/import reach the running service there.
	if err := m.serveAdmin(runCtx); err != nil {
		return err
	}
	m.Agent.Start()
	m.goRun(func() error { return sched.Run(runCtx) })
	m.goRun(func() error { return m.Digests.Run(runCtx, time.Minute) })
	m.goRun(func() error { return disp.Run(runCtx) })
	m.goRun(func() error { return m.maintain(runCtx, time.Hour) })
	if m.Demo != nil {
		m.goRun(func() error { return m.demoWarmUp(runCtx) })
	}
	fmt.Fprintf(m.Stdout, "changedigest is running at %s (data in %s)\n", eng.Site(), absData(c.data))
	return nil
}

// joinCluster makes the service a cluster node once dialing has reached
// the cluster (see dial): a single serve's store is imported first when
// it is to be, and the scheduler then runs the checks of this node's
// shards through the cluster's work queue, which this node's workers also
// take from.
func (m *Main) joinCluster(ctx context.Context, pipeline *crawl.Pipeline, dialing <-chan dialed) error {
	c := &m.Config
	d := <-dialing
	if d.err != nil {
		return d.err
	}
	conn, cfg := d.conn, d.conn.Config
	local := !c.Cluster.on()
	if d.importStore {
		// A single serve's store becomes the first node's view: the
		// cluster takes everything it holds first.
		start := time.Now()
		im, err := conn.Import(ctx, m.Store, pipeline.Matrix, cfg.Logger)
		if err == nil && local {
			err = conn.MarkInSync(ctx, c.data)
		}
		if err != nil {
			conn.Close()
			return err
		}
		if !local && im.Users+im.Watches+im.Versions > 0 {
			fmt.Fprintf(m.Stdout, "imported this data directory's store into the cluster in %s: %s\n", time.Since(start).Round(time.Millisecond), im)
		}
	}
	m.Cluster = conn
	worker := &cluster.Worker{Conn: conn, Pipeline: pipeline, Workers: c.Workers, Logger: cfg.Logger}
	m.Node = &cluster.Node{Conn: conn, Store: m.Store, Dir: c.data, Worker: worker, Logger: cfg.Logger}
	worker.Node = m.Node
	// The scheduler only waits on the queue: let it wait on many.
	m.Scheduler.Store, m.Scheduler.Checker = m.Node, m.Node
	m.Scheduler.Workers = 4 * c.Workers
	// The workers keep the gap between two requests to a host across the
	// cluster; the scheduler only keeps one check of a host in flight, and
	// spaces the host's other due watches by the gap, not by the round
	// trip through the queue.
	m.Scheduler.HostGap = time.Millisecond
	m.Scheduler.MaxSlotStep = max(c.HostGap, 10*time.Millisecond)
	// A check taken by a node that died goes to another after AckWait;
	// a stream whose leader died answers again some seconds later.
	m.Scheduler.CheckTimeout = 3*c.Cluster.AckWait + 30*time.Second
	if local {
		m.Logger.Info("running as a cluster of one", "shards", cfg.Shards)
	} else {
		m.Logger.Info("joined the cluster", "node", cfg.Name, "shards", cfg.Shards, "replicas", cfg.Replicas, "nats", conn.ClientURL())
	}
	return nil
}

// dialed is the cluster a serve reached, and whether its store is to be
// imported into it.
type dialed struct {
	conn        *cluster.Conn
	importStore bool
	err         error
}

// dial starts the embedded NATS server (or reaches --nats) in the
// background, while the rest of the service starts; name is the node's
// name ("local" for a plain serve, a cluster of one). Call it once the
// store is open: the store's lock keeps a second serve of the directory
// away from the server's files. joinCluster takes the result.
func (m *Main) dial(ctx context.Context, name string) <-chan dialed {
	ch := make(chan dialed, 1)
	go func() {
		conn, imp, err := m.dialNow(ctx, name)
		ch <- dialed{conn: conn, importStore: imp, err: err}
	}()
	return ch
}

func (m *Main) dialNow(ctx context.Context, name string) (*cluster.Conn, bool, error) {
	c := &m.Config
	f := &c.Cluster
	local := !f.on()
	cfg := cluster.Config{
		Name: name, Dir: cluster.DataDir(c.data), URL: f.NATS, ClusterName: f.Name,
		Listen: f.Listen, Client: f.NATSListen, Replicas: f.Replicas, Shards: f.Shards,
		AckWait: f.AckWait, HostGap: c.HostGap, GapFactor: c.GapFactor, Logger: m.Logger.With("component", "cluster"),
		Secret: os.Getenv(clusterSecretEnv),
	}
	if f.Routes != "" {
		for _, r := range strings.Split(f.Routes, ",") {
			if r = strings.TrimSpace(r); r != "" {
				cfg.Routes = append(cfg.Routes, r)
			}
		}
	}
	if f.Name == "" && (f.Listen != "" || len(cfg.Routes) > 0) {
		return nil, false, usagef("--cluster-listen and --routes need --cluster NAME")
	}
	importStore := !cluster.IsView(c.data)
	if local {
		var err error
		// With no port open, no other node can join, and the store is
		// the only track of record there can be: the versions stream
		// keeps each watch's newest version only.
		cfg.NewestOnly = f.NATSListen == ""
		if importStore, err = cluster.PrepareLocal(c.data, cfg.NewestOnly); err != nil {
			return nil, false, err
		}
	} else if cluster.IsLocal(c.data) {
		// A single serve's directory joins a cluster: its store is
		// imported, as before it ran as a cluster of one.
		if err := cluster.ForgetCluster(c.data); err != nil {
			return nil, false, err
		}
	}
	if cfg.Secret == "" {
		for _, a := range []string{f.Listen, f.NATSListen} {
			if host, _, err := net.SplitHostPort(a); err == nil && !isLoopback(host) {
				m.Logger.Warn("the cluster's ports take any server and client that reach them: set "+clusterSecretEnv+" (the same on every node)", "address", a)
			}
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := cluster.Dial(dctx, cfg)
	if err != nil && local && !importStore {
		// The cluster of one's files do not open: the store is the
		// whole truth, and the cluster is made from it again.
		m.Logger.Warn("the cluster of one's files are damaged: importing the store into a new one", "err", err)
		return m.redial(dctx, cfg)
	}
	if err == nil && local && !importStore {
		lost, err := conn.LostSince(dctx, c.data)
		if err != nil {
			conn.Close()
			return nil, false, err
		}
		if lost {
			conn.Close()
			m.Logger.Warn("the cluster of one lost messages its views had read (its files damaged): importing the store into a new one")
			return m.redial(dctx, cfg)
		}
	}
	return conn, importStore, err
}

// redial drops a cluster of one's files and starts its server anew, for
// the store to be imported into it.
func (m *Main) redial(ctx context.Context, cfg cluster.Config) (*cluster.Conn, bool, error) {
	if err := cluster.ResetLocal(m.Config.data, cfg.NewestOnly); err != nil {
		return nil, false, err
	}
	conn, err := cluster.Dial(ctx, cfg)
	return conn, true, err
}

// nodeName is the node's name: --node, or the host name and the web
// server's port; a plain serve's is "local". Only the characters a node
// name may have are kept (nodeName).
func (m *Main) nodeName(addr net.Addr) string {
	f := &m.Config.Cluster
	switch {
	case !f.on():
		return "local"
	case f.Node != "":
		return nodeName(f.Node)
	}
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(addr.String())
	return nodeName(host + "-" + port)
}

// clusterStore is the store as the web server sees it: the node's view,
// written through the cluster.
func (m *Main) clusterStore() cluster.Store { return cluster.Store{Store: m.Store, Node: m.Node} }

// nodeName keeps the characters a node name may have.
func nodeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, s)
}

func (m *Main) goRun(fn func() error) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			m.Logger.Error("background task stopped", "err", err)
		}
	}()
}

// maintain applies the retention limits by age (which move with the
// clock even when nothing is fetched) and drops expired sessions, every
// interval until ctx ends.
func (m *Main) maintain(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := m.Store.Prune(ctx); err != nil && ctx.Err() == nil {
			m.Logger.Warn("applying retention", "err", err)
		} else if n > 0 {
			m.Logger.Info("retention removed old versions", "versions", n)
		}
		// The versions stream keeps what the store keeps.
		if n, err := m.Node.TrimStream(ctx); err != nil && ctx.Err() == nil {
			m.Logger.Warn("trimming the versions stream", "err", err)
		} else if n > 0 {
			m.Logger.Info("retention removed old versions from the stream", "versions", n)
		}
		if _, err := m.clusterStore().PurgeSessions(ctx); err != nil && ctx.Err() == nil {
			m.Logger.Warn("purging sessions", "err", err)
		}
		// Delivered notifications are kept a month; dead ones until sent
		// again or their channel goes.
		if _, err := m.Store.PurgeDeliveries(ctx, time.Now().AddDate(0, -1, 0)); err != nil && ctx.Err() == nil {
			m.Logger.Warn("purging deliveries", "err", err)
		}
		if m.Hub != nil {
			if _, err := m.Hub.Expire(ctx); err != nil && ctx.Err() == nil {
				m.Logger.Warn("expiring WebSub subscriptions", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Close stops the server, the scheduler and the demo site, then closes the store.
func (m *Main) Close() error {
	var errs []error
	if m.Server != nil {
		errs = append(errs, m.Server.Close())
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	if m.Hub != nil {
		errs = append(errs, m.Hub.Close())
	}
	if m.Agent != nil {
		m.Agent.Stop()
	}
	if m.Cluster != nil {
		errs = append(errs, m.Cluster.Close())
	}
	if m.Browser != nil {
		errs = append(errs, m.Browser.Close())
	}
	if m.Demo != nil {
		errs = append(errs, m.Demo.Close())
	}
	if m.Store != nil {
		errs = append(errs, m.Store.Close())
	}
	return errors.Join(errs...)
}

// displayAddr makes a listening address something a browser can open.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// pageText reads a linked profile page through the guarded fetcher and
// returns its main text.
func pageText(f *crawl.Fetcher) func(ctx context.Context, url string) (string, error) {
	return func(ctx context.Context, url string) (string, error) {
		res, err := f.Fetch(ctx, crawl.Request{URL: url})
		if err != nil {
			return "", err
		}
		return segmenter.MainText(res.Body), nil
	}
}

// interestPage reads, through the fetcher and its address guard, what the
// page an interest names says of itself: the label and abstract of an
// RDF document (a DBpedia resource served as RDF), else the title and
// main text of an HTML page.
func interestPage(f *crawl.Fetcher) func(ctx context.Context, url string) (changedigest.About, error) {
	return func(ctx context.Context, url string) (changedigest.About, error) {
		res, err := f.Fetch(ctx, crawl.Request{URL: url})
		if err != nil {
			return changedigest.About{}, err
		}
		if ct := strings.ToLower(res.ContentType); strings.Contains(ct, "rdf") || strings.Contains(ct, "turtle") || strings.Contains(ct, "n-triples") {
			if a, ok := profile.DescribeRDF(res.Body, res.ContentType, url); ok {
				return a, nil
			}
		}
		return changedigest.About{URL: url, Title: segmenter.PageTitle(res.Body), Text: segmenter.MainText(res.Body)}, nil
	}
}

// firstAdmin creates an administrator with a random password when the
// store has no user yet, and prints the password once.
func (m *Main) firstAdmin(ctx context.Context) error {
	// The cluster's first node makes the administrator of all.
	us, err := m.Cluster.Users(ctx)
	if err != nil || len(us) > 0 {
		return err
	}
	password := randomPassword()
	hash, err := server.HashPassword(password)
	if err != nil {
		return err
	}
	u := &changedigest.User{Name: "admin", Admin: true, PasswordHash: hash, DigestHour: -1}
	if err := m.clusterStore().CreateUser(ctx, u); err != nil {
		if changedigest.ErrorCode(err) == changedigest.ECONFLICT {
			return nil // another node made it first
		}
		return err
	}
	fmt.Fprintf(m.Stdout, "created the administrator: log in as admin with password %s (change it under Settings)\n", password)
	return nil
}

func randomPassword() string {
	b := make([]byte, 12)
	rand.Read(b)
	return strings.NewReplacer("-", "x", "_", "y").Replace(base64.RawURLEncoding.EncodeToString(b))
}

// Demo login.
const (
	demoUser     = "demo"
	demoPassword = "demo-password"
)

// startDemo gives the demo user a profile and watches on the demo site.
func (m *Main) startDemo(ctx context.Context, eng *render.Engine) error {
	site := m.Demo
	// Written through the cluster, as the web pages write.
	cs := m.clusterStore()
	u, err := cs.UserByName(ctx, demoUser)
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		hash, herr := server.HashPassword(demoPassword)
		if herr != nil {
			return herr
		}
		u = &changedigest.User{Name: demoUser, PasswordHash: hash, DigestHour: -1}
		err = cs.CreateUser(ctx, u)
	}
	if err != nil {
		return err
	}
	if _, _, err := cs.Profile(ctx, u.ID); changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		p, err := profile.Parse(profile.Document{Body: strings.NewReader(string(demo.Profile)), Name: "demo-profile.ttl"})
		if err != nil {
			return fmt.Errorf("demo profile: %w", err)
		}
		p.UserID = u.ID
		if err := cs.PutProfile(ctx, p, demo.Profile); err != nil {
			return err
		}
	}
	// The demo site gets a new port each run: old demo watches go.
	ws, err := cs.Watches(ctx, u.ID, "")
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w.HasTag("demo") {
			if err := cs.DeleteWatch(ctx, u.ID, w.ID); err != nil {
				return err
			}
		}
	}
	for _, pg := range site.Pages() {
		w := &changedigest.Watch{UserID: u.ID, URL: pg, Category: changedigest.CategoryNews, Interval: time.Minute, Tags: []string{"demo"}}
		if strings.HasSuffix(pg, "/club") {
			w.Tags = append(w.Tags, "sport")
		}
		if err := cs.CreateWatch(ctx, w); err != nil {
			return err
		}
	}
	fmt.Fprintf(m.Stdout, "demo site: %s (changes every %s)\n", site.URL(), site.Period)
	fmt.Fprintf(m.Stdout, "demo login: %s / %s\n", demoUser, demoPassword)
	fmt.Fprintf(m.Stdout, "demo feed: %s\n", eng.URL("/feeds/"+u.FeedToken+"/atom.xml"))
	return nil
}

// demoWarmUp checks the demo watches a few times in the first minute, so
// a newcomer sees changes without waiting for the one-minute interval.
func (m *Main) demoWarmUp(ctx context.Context) error {
	wait := m.Config.DemoPeriod*2 + time.Second
	for i := 0; i < 3; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		u, err := m.Store.UserByName(ctx, demoUser)
		if err != nil {
			return err
		}
		ws, err := m.Store.Watches(ctx, u.ID, "demo")
		if err != nil {
			return err
		}
		var ptrs []*changedigest.Watch
		for i := range ws {
			ptrs = append(ptrs, &ws[i])
		}
		if _, err := m.Scheduler.CheckNow(ctx, nil, ptrs...); err != nil && ctx.Err() == nil {
			m.Logger.Warn("demo check", "err", err)
		}
	}
	return nil
}

// prefixList is a flag of address prefixes: CIDRs or single addresses,
// comma-separated, the flag repeatable.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	var parts []string
	for _, p := range *l {
		parts = append(parts, p.String())
	}
	return strings.Join(parts, ",")
}

func (l *prefixList) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			a, aerr := netip.ParseAddr(part)
			if aerr != nil {
				return fmt.Errorf("%q is neither a CIDR nor an address", part)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		*l = append(*l, p.Masked())
	}
	return nil
}
