package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/server"
)

func init() {
	commands["cluster"] = command{summary: "a cluster of serve nodes: status, add watches, manage users", run: runCluster}
}

func runCluster(ctx context.Context, e *env) error {
	if len(e.args) == 0 {
		return usagef("cluster needs a sub-command: status, add or user")
	}
	sub, args := e.args[0], e.args[1:]
	if subcommandHelp(e, sub, `usage: changedigest cluster SUB-COMMAND …
  status                 the nodes, shards, lag and queue depth
  add URL…               watches defined on the cluster
  user add|passwd|list   the cluster's users
'changedigest cluster SUB-COMMAND -h' lists a sub-command's flags.`) {
		return nil
	}
	switch sub {
	case "status":
		return runClusterStatus(ctx, e, args)
	case "add":
		return runClusterAdd(ctx, e, args)
	case "user":
		return runClusterUser(ctx, e, args)
	}
	return usagef("cluster: unknown sub-command %q: want status, add or user", sub)
}

func runClusterStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "cluster status", "--nats URL [--json] [--audit]")
	url := fs.String("nats", "nats://127.0.0.1:4222", "a node's NATS client address (serve --nats-listen)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	audit := fs.Bool("audit", false, "also read every stored version: count them per watch and find due checks stored twice")
	rest, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("cluster status takes no arguments, got %q", rest)
	}
	conn, err := cluster.Connect(ctx, *url, os.Getenv(clusterSecretEnv))
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := conn.Status(ctx, true)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	printClusterStatus(e.stdout, st)
	if *audit {
		counts, dups, err := conn.VersionCounts(ctx)
		if err != nil {
			return err
		}
		total, most := 0, 0
		for _, n := range counts {
			total += n
			most = max(most, n)
		}
		fmt.Fprintf(e.stdout, "audit: %d versions of %d watches (at most %d a watch); %d due checks stored more than one version\n",
			total, len(counts), most, dups)
		if dups > 0 {
			return fmt.Errorf("%d due checks stored more than one version", dups)
		}
	}
	return nil
}

func printClusterStatus(out io.Writer, st *cluster.Status) {
	fmt.Fprintf(out, "%d nodes, %d shards (%d replicas), %d watches, %d versions; queue: %d waiting, %d running\n",
		len(st.Nodes), len(st.Owners), st.Replicas, st.Watches, st.Versions, st.Queued, st.Running)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tSHARDS\tSERVED\tLAG\tCHECKS\tFAILED\tUP\tLAST BEAT")
	down := map[string]bool{}
	for _, n := range st.Nodes {
		// A node that is down serves nothing and is not up: no shards,
		// no up time (its checks are those of its last heartbeat).
		state, up := "up", n.Beat.Sub(n.Started).Round(time.Second).String()
		if n.Down {
			state, up = "down", "-"
			down[n.Name] = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s ago\n", n.Name, state, len(n.Shards), len(n.Ready), n.Lag,
			n.Checks, n.Failed, up, time.Since(n.Beat).Round(100*time.Millisecond))
	}
	tw.Flush()
	tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tOWNER")
	for s, owner := range st.Owners {
		if owner == "" {
			owner = "(none)"
		} else if down[owner] {
			owner += " (down)"
		}
		fmt.Fprintf(tw, "%d\t%s\n", s, owner)
	}
	tw.Flush()
	tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tMESSAGES\tLEADER\tCURRENT\tBEHIND")
	for _, s := range st.Streams {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.Name, s.Messages, s.Leader, strings.Join(s.Current, ","), strings.Join(s.Behind, ","))
	}
	tw.Flush()
}

func runClusterAdd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "cluster add", "--nats URL [--user ID] [--interval D] URL... (or - to read URLs from standard input)")
	url := fs.String("nats", "nats://127.0.0.1:4222", "a node's NATS client address (serve --nats-listen)")
	user := fs.String("user", "", "the user (name or ID) the watches are for (default: the first user)")
	interval := fs.Duration("interval", 0, "check interval (default: learnt from each page's change rate)")
	rest, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	var urls []string
	for _, a := range rest {
		if a != "-" {
			urls = append(urls, a)
			continue
		}
		sc := bufio.NewScanner(e.stdin)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				urls = append(urls, line)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read URLs: %w", err)
		}
	}
	if len(urls) == 0 {
		return usagef("cluster add needs URLs (or - to read them from standard input)")
	}
	ws := make([]*changedigest.Watch, len(urls))
	for i, u := range urls {
		ws[i] = &changedigest.Watch{UserID: 1, URL: u, Interval: *interval}
		if err := ws[i].Validate(); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	conn, err := cluster.Connect(ctx, *url, os.Getenv(clusterSecretEnv))
	if err != nil {
		return err
	}
	defer conn.Close()
	owner, err := clusterUser(ctx, conn, *user)
	if err != nil {
		return err
	}
	for _, w := range ws {
		w.UserID = owner
	}
	if err := conn.AddWatches(ctx, ws); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "added %d watches (IDs %d to %d)\n", len(ws), ws[0].ID, ws[len(ws)-1].ID)
	return nil
}

// clusterUser finds the user named (by name or ID; "" for the first) in
// the cluster, and returns its ID.
func clusterUser(ctx context.Context, conn *cluster.Conn, name string) (int64, error) {
	if name != "" {
		u, err := conn.UserByName(ctx, name)
		if err == nil {
			return u.ID, nil
		}
		if id, perr := strconv.ParseInt(name, 10, 64); perr == nil && id > 0 {
			return id, nil
		}
		return 0, err
	}
	users, err := conn.Users(ctx)
	if err != nil {
		return 0, err
	}
	if len(users) == 0 {
		return 0, usagef("the cluster has no users yet: start a node (it makes the administrator) or run cluster user add")
	}
	return users[0].ID, nil
}

func runClusterUser(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("want a sub-command: cluster user add NAME [--admin] | cluster user passwd NAME | cluster user list")
	}
	sub := args[0]
	fs := newFlagSet(e, "cluster user "+sub, "--nats URL NAME [--admin] [--email ADDR]  (the password is read from standard input)")
	url := fs.String("nats", "nats://127.0.0.1:4222", "a node's NATS client address (serve --nats-listen)")
	admin := fs.Bool("admin", false, "make the user an administrator")
	email := fs.String("email", "", "e-mail address for the daily digest")
	rest, err := e.parse(fs, args[1:])
	if err != nil {
		return err
	}
	switch sub {
	case "add", "passwd":
		if len(rest) != 1 {
			return usagef("cluster user %s takes one user name", sub)
		}
		if err := changedigest.ValidateUserName(rest[0]); err != nil {
			return err
		}
	case "list":
		if len(rest) != 0 {
			return usagef("cluster user list takes no arguments")
		}
	default:
		return usagef("cluster user: unknown sub-command %q: want add, passwd or list", sub)
	}
	var hash []byte
	if sub != "list" {
		pw, err := readPassword(e)
		if err != nil {
			return err
		}
		if hash, err = server.HashPassword(pw); err != nil {
			return err
		}
	}
	conn, err := cluster.Connect(ctx, *url, os.Getenv(clusterSecretEnv))
	if err != nil {
		return err
	}
	defer conn.Close()
	switch sub {
	case "add":
		u := &changedigest.User{Name: rest[0], Admin: *admin, Email: *email, PasswordHash: hash, DigestHour: -1}
		if err := conn.CreateUser(ctx, u); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created user %s (id %d) in the cluster\n", u.Name, u.ID)
	case "passwd":
		u, err := conn.UserByName(ctx, rest[0])
		if err != nil {
			return err
		}
		if _, err := conn.UpdateUser(ctx, u.ID, func(x *changedigest.User) error {
			x.PasswordHash = hash
			return nil
		}); err != nil {
			return err
		}
		n, err := conn.DeleteUserSessions(ctx, u.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "password of %s changed on every node; %d sessions ended\n", u.Name, n)
	case "list":
		users, err := conn.Users(ctx)
		if err != nil {
			return err
		}
		return printUsers(e.stdout, users)
	}
	return nil
}

// clusterSecretEnv names the variable that holds the cluster's shared
// secret: serve's embedded server asks it of routes and clients, and the
// cluster commands give it as their token.
const clusterSecretEnv = "CHANGEDIGEST_CLUSTER_SECRET"

// isLoopback reports whether host (a name or an address) is this
// machine's loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
