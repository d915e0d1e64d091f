// Package cluster runs changedigest on more than one machine over NATS
// JetStream: due checks go through a work-queue stream that any node's
// workers take from, every stored version is appended to a replicated
// stream (the track of record), and each node keeps a bbolt and Bleve
// store (package pet) as the view of the shards it owns, rebuilt from
// that stream when it takes a shard over.
//
// NATS is wrapped here and nowhere else. A node embeds a NATS server
// (optionally routed to its peers) or connects to an existing deployment.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names of the streams and buckets.
const (
	checksStream   = "CD_CHECKS"
	versionsStream = "CD_VERSIONS"
	watchesBucket  = "cd_watches"
	nodesBucket    = "cd_nodes"
	shardsBucket   = "cd_shards"
	hostsBucket    = "cd_hosts"
	countersBucket = "cd_counters"
	accountsBucket = "cd_accounts"
	workerDurable  = "workers"
)

// MaxMessage is the largest message (a version with its body) the
// embedded server accepts; bodies larger than the fetcher's cap never
// reach it.
const MaxMessage = 8 << 20

// Config is how a node joins the cluster.
type Config struct {
	// Name names the node; unique in the cluster (default: host name).
	Name string
	// Dir holds the embedded server's JetStream files.
	Dir string
	// URL, when set, is an existing NATS deployment to use instead of an
	// embedded server (nats://host:port[,nats://...]).
	URL string
	// ClusterName, Listen and Routes form a cluster of embedded servers:
	// Listen is this server's route address (host:port), Routes the
	// other servers' route addresses. With no Routes the server runs
	// alone and, with no Client address, opens no port at all.
	ClusterName string
	Listen      string
	Routes      []string
	// Client, when set, is the address the embedded server takes client
	// connections on (for `changedigest cluster status` and other nodes'
	// tools); empty: in-process only.
	Client string
	// Secret, when set, is the cluster's shared secret: the embedded
	// server takes routes only from servers that give it (user
	// "changedigest") and client connections only with it as their token,
	// and a node reaching an existing deployment (URL) gives it as its
	// token. Without it any server that reaches the route address joins
	// the cluster, and any client of the client address reads it all.
	Secret string
	// Replicas is how many servers keep each stream and bucket (default:
	// 3 in a cluster, 1 alone).
	Replicas int
	// Shards is how many shards the watches are divided into (default 16;
	// fixed when the cluster is first formed).
	Shards int
	// Lease is how long a node is taken for alive after its last
	// heartbeat; its shards go to the others after that (default 4 s).
	Lease time.Duration
	// AckWait is how long a check may run on a worker before it is given
	// to another (default 2 min).
	AckWait time.Duration
	// HostGap is the longest gap between two requests to one host, kept
	// across the cluster (default 1 s); GapFactor makes a host's gap that
	// many times its last answer time, up to HostGap, as the single
	// node's scheduler does (0: always HostGap).
	HostGap   time.Duration
	GapFactor int
	// ScheduleEvery is how often a node keeps a copy of its shards'
	// schedule state in the cluster, for a node that takes a shard over
	// after it died (default 10 min: each copy is some 430 bytes a
	// watch, a shard's whole at each write).
	ScheduleEvery time.Duration
	// NewestOnly makes the versions stream keep each watch's newest
	// version only, which a check appends on top of: for a cluster of
	// one that no other server or client can reach, whose store is the
	// track of record (see PrepareLocal). Fixed when the stream is made.
	NewestOnly bool
	Logger     *slog.Logger
}

func (c *Config) defaults() {
	if c.Name == "" {
		c.Name, _ = os.Hostname()
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
		if c.ClusterName != "" && c.URL == "" {
			c.Replicas = min(3, 1+len(c.Routes))
		}
	}
	if c.Shards <= 0 {
		c.Shards = 16
	}
	if c.Lease <= 0 {
		c.Lease = 4 * time.Second
	}
	if c.AckWait <= 0 {
		c.AckWait = 2 * time.Minute
	}
	if c.HostGap <= 0 {
		c.HostGap = time.Second
	}
	if c.ScheduleEvery <= 0 {
		c.ScheduleEvery = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Conn is a node's connection to JetStream: the embedded server (nil
// with an external URL), the client, and the streams and buckets.
type Conn struct {
	Config Config

	server   *natsserver.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	checks   jetstream.Stream
	versions jetstream.Stream
	watches  jetstream.KeyValue
	nodes    jetstream.KeyValue
	shards   jetstream.KeyValue
	hosts    jetstream.KeyValue
	counters jetstream.KeyValue
	accounts jetstream.KeyValue
	// schedules is nil on a connection that only reads (Connect).
	schedules jetstream.KeyValue
	// nodesStream, watchesStream and accountsStream are the buckets'
	// streams, read message by message.
	nodesStream, watchesStream, accountsStream jetstream.Stream
	// oneCopy: the versions stream and the watches bucket are each kept
	// by one server, which answers every read of them, so that what it
	// acknowledged or counted it also gives to a read (see follow).
	oneCopy bool
	// room is the space free on the disk holding the embedded server's
	// streams (nil with an external deployment).
	room *room
}

// Dial starts the embedded server (or reaches the external one), waits
// for JetStream and creates the streams and buckets that do not exist.
// It gives up when ctx ends: a cluster whose other servers are not up
// cannot elect its JetStream leader.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	cfg.defaults()
	c := &Conn{Config: cfg}
	if err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	// A cluster forming elects leaders for each stream and bucket in
	// turn; until then requests time out or find no responder: retry.
	for {
		err := c.setup(ctx)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			c.Close()
			return nil, err
		}
		cfg.Logger.Debug("cluster not ready yet", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Connect reaches an existing cluster as a client only (no embedded
// server, nothing created): for tools such as `cluster status`. A secret,
// when given, is the client's token, unless the URL holds credentials.
func Connect(ctx context.Context, url, secret string) (*Conn, error) {
	c := &Conn{Config: Config{URL: url, Secret: secret}}
	c.Config.defaults()
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	if err := c.open(ctx); err != nil {
		c.Close()
		return nil, err
	}
	n, err := c.storedShards(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("cluster: the cluster at %s has not formed yet: %w", redact(url), err)
	}
	c.Config.Shards = n
	return c, nil
}

func (c *Conn) connect(ctx context.Context) error {
	cfg := &c.Config
	opts := []nats.Option{nats.Name("changedigest " + cfg.Name), nats.MaxReconnects(-1), nats.ReconnectWait(200 * time.Millisecond)}
	if cfg.Secret != "" && !strings.Contains(cfg.URL, "@") {
		opts = append(opts, nats.Token(cfg.Secret))
	}
	if cfg.URL != "" {
		nc, err := nats.Connect(cfg.URL, append(opts, nats.Timeout(5*time.Second))...)
		if err != nil {
			return fmt.Errorf("cluster: connect to NATS at %s: %w", redact(cfg.URL), err)
		}
		c.nc = nc
	} else {
		so, err := serverOptions(cfg)
		if err != nil {
			return err
		}
		// The server exits the process when it cannot listen: find out first.
		for _, addr := range []string{cfg.Client, cfg.Listen} {
			if addr == "" {
				continue
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("cluster: cannot listen on %s: %w", addr, err)
			}
			ln.Close()
		}
		s, err := natsserver.NewServer(so)
		if err != nil {
			return fmt.Errorf("cluster: start the NATS server: %w", err)
		}
		c.server = s
		c.room = &room{dir: cfg.Dir}
		if os.Getenv("CHANGEDIGEST_NATS_LOG") != "" {
			s.ConfigureLogger()
		}
		go s.Start()
		if !s.ReadyForConnections(10 * time.Second) {
			return errors.New("cluster: the embedded NATS server did not start within 10 s")
		}
		nc, err := nats.Connect("", append(opts, nats.InProcessServer(s))...)
		if err != nil {
			return fmt.Errorf("cluster: connect in-process: %w", err)
		}
		c.nc = nc
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return fmt.Errorf("cluster: JetStream: %w", err)
	}
	c.js = js
	return nil
}

// redact removes the credentials (a token, a user's password) from the
// NATS URLs in raw (comma-separated), for messages.
func redact(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// routeUser is the user a route gives with the cluster's secret.
const routeUser = "changedigest"

// serverOptions turns the config into the embedded server's options.
func serverOptions(cfg *Config) (*natsserver.Options, error) {
	so := &natsserver.Options{
		ServerName:            cfg.Name,
		JetStream:             true,
		StoreDir:              cfg.Dir,
		JetStreamMaxStore:     serverMaxStore,
		JetStreamMaxMemory:    serverMaxMemory,
		MaxPayload:            MaxMessage,
		NoSigs:                true,
		NoLog:                 os.Getenv("CHANGEDIGEST_NATS_LOG") == "",
		DisableShortFirstPing: true,
	}
	if cfg.Dir == "" {
		return nil, errors.New("cluster: no directory for the NATS server's files")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if cfg.Client != "" {
		host, port, err := splitAddr(cfg.Client)
		if err != nil {
			return nil, fmt.Errorf("cluster: client address %q: %w", cfg.Client, err)
		}
		so.Host, so.Port = host, port
	} else {
		so.DontListen = true
	}
	if cfg.Secret != "" {
		so.Authorization = cfg.Secret
	}
	if cfg.ClusterName == "" || len(cfg.Routes) == 0 {
		// Alone: a cluster of one, which nobody can join.
		if cfg.Listen != "" {
			return nil, errors.New("cluster: a route address (--cluster-listen) needs the other nodes' routes (--routes)")
		}
		return so, nil
	}
	if cfg.Listen == "" {
		return nil, errors.New("cluster: a cluster needs this server's route address (--cluster-listen)")
	}
	host, port, err := splitAddr(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("cluster: route address %q: %w", cfg.Listen, err)
	}
	so.Cluster = natsserver.ClusterOpts{Name: cfg.ClusterName, Host: host, Port: port}
	if cfg.Secret != "" {
		so.Cluster.Username, so.Cluster.Password = routeUser, cfg.Secret
	}
	for _, r := range cfg.Routes {
		if !strings.Contains(r, "://") {
			r = "nats-route://" + r
		}
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("cluster: route %q is not host:port", r)
		}
		if cfg.Secret != "" && u.User == nil {
			u.User = url.UserPassword(routeUser, cfg.Secret)
		}
		so.Routes = append(so.Routes, u)
	}
	if so.DontListen {
		// A clustered server needs its client listener for nothing but
		// is refused DontListen with routes; keep it on loopback, port
		// chosen by the system.
		so.DontListen = false
		so.Host, so.Port = "127.0.0.1", -1
	}
	return so, nil
}

func splitAddr(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", ps)
	}
	return host, port, nil
}

// setup creates the streams and buckets (leaving existing ones as they
// are: the shard count is fixed when the cluster forms).
func (c *Conn) setup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := &c.Config
	// JetStream in a cluster answers once a meta leader is elected.
	var err error
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = c.js.AccountInfo(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("cluster: JetStream is not available (are the other servers up?): %w", err)
	}
	r := cfg.Replicas
	perSubject := int64(-1)
	if cfg.NewestOnly {
		perSubject = 1
	}
	streams := []jetstream.StreamConfig{
		{Name: checksStream, Subjects: []string{"cd.check.>"}, Retention: jetstream.WorkQueuePolicy,
			Replicas: r, Duplicates: 20 * time.Minute, Storage: jetstream.FileStorage},
		{Name: versionsStream, Subjects: []string{"cd.ver.>"}, Replicas: r, Duplicates: 20 * time.Minute,
			Storage: jetstream.FileStorage, Compression: jetstream.S2Compression, AllowDirect: true, MaxMsgSize: MaxMessage,
			MaxMsgsPerSubject: perSubject},
	}
	for _, sc := range streams {
		if _, err := c.js.Stream(ctx, sc.Name); err == nil {
			continue
		}
		if _, err := c.js.CreateStream(ctx, sc); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("cluster: create stream %s: %w", sc.Name, err)
		}
	}
	buckets := []jetstream.KeyValueConfig{
		{Bucket: watchesBucket, Replicas: r, History: 1},
		{Bucket: nodesBucket, Replicas: r, History: 1},
		{Bucket: shardsBucket, Replicas: r},
		{Bucket: hostsBucket, Replicas: r, TTL: time.Hour},
		{Bucket: countersBucket, Replicas: r},
		{Bucket: accountsBucket, Replicas: r, History: 1, MaxValueSize: MaxMessage},
		{Bucket: schedulesBucket, Replicas: r, History: 1, MaxValueSize: MaxMessage},
	}
	for _, kc := range buckets {
		if _, err := c.js.KeyValue(ctx, kc.Bucket); err == nil {
			continue
		}
		if _, err := c.js.CreateKeyValue(ctx, kc); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("cluster: create bucket %s: %w", kc.Bucket, err)
		}
	}
	if err := c.open(ctx); err != nil {
		return err
	}
	if c.schedules, err = c.js.KeyValue(ctx, schedulesBucket); err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", schedulesBucket, err)
	}
	// The shard count is the first node's.
	n, err := c.storedShards(ctx)
	switch {
	case err == nil:
		cfg.Shards = n
	case errors.Is(err, jetstream.ErrKeyNotFound):
		if _, err := c.counters.Create(ctx, "shards", []byte(strconv.Itoa(cfg.Shards))); err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) {
				return fmt.Errorf("cluster: record the shard count: %w", err)
			}
			return c.setup(ctx)
		}
	default:
		return err
	}
	return nil
}

// storedShards reads the cluster's shard count (ErrKeyNotFound before the
// first node recorded it).
func (c *Conn) storedShards(ctx context.Context) (int, error) {
	e, err := c.counters.Get(ctx, "shards")
	if err != nil {
		return 0, fmt.Errorf("cluster: read the shard count: %w", err)
	}
	n, err := strconv.Atoi(string(e.Value()))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("cluster: stored shard count %q is not a number", e.Value())
	}
	return n, nil
}

// open binds the existing streams and buckets.
func (c *Conn) open(ctx context.Context) error {
	var err error
	if c.nodesStream, err = c.js.Stream(ctx, "KV_"+nodesBucket); err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", nodesBucket, err)
	}
	if c.watchesStream, err = c.js.Stream(ctx, "KV_"+watchesBucket); err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", watchesBucket, err)
	}
	if c.accountsStream, err = c.js.Stream(ctx, "KV_"+accountsBucket); err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", accountsBucket, err)
	}
	if c.checks, err = c.js.Stream(ctx, checksStream); err != nil {
		return fmt.Errorf("cluster: stream %s: %w", checksStream, err)
	}
	if c.versions, err = c.js.Stream(ctx, versionsStream); err != nil {
		return fmt.Errorf("cluster: stream %s: %w", versionsStream, err)
	}
	c.oneCopy = c.versions.CachedInfo().Config.Replicas <= 1 && c.watchesStream.CachedInfo().Config.Replicas <= 1
	for _, b := range []struct {
		name string
		kv   *jetstream.KeyValue
	}{{watchesBucket, &c.watches}, {nodesBucket, &c.nodes}, {shardsBucket, &c.shards},
		{hostsBucket, &c.hosts}, {countersBucket, &c.counters}, {accountsBucket, &c.accounts}} {
		if *b.kv, err = c.js.KeyValue(ctx, b.name); err != nil {
			return fmt.Errorf("cluster: bucket %s: %w", b.name, err)
		}
	}
	return nil
}

// ClientURL is where the embedded server takes client connections
// ("" when it takes none).
func (c *Conn) ClientURL() string {
	if c.server == nil {
		return c.Config.URL
	}
	if c.Config.Client == "" && c.Config.ClusterName == "" {
		return ""
	}
	return c.server.ClientURL()
}

// Close drains the client and shuts the embedded server down.
func (c *Conn) Close() error {
	if c.nc != nil {
		c.nc.Drain()
		c.nc.Close()
	}
	if c.server != nil {
		c.server.Shutdown()
		c.server.WaitForShutdown()
	}
	return nil
}

// DataDir is the embedded server's directory under a node's data directory.
func DataDir(data string) string { return filepath.Join(data, "nats") }
