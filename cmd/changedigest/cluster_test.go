package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
)

// freePorts returns n loopback ports free a moment ago.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return addrs
}

// killSecret is the kill test's cluster secret.
const killSecret = "kill-test-secret"

// TestClusterKill runs three serve processes as a cluster on loopback (a
// three-server JetStream cluster inside them) over a farm of pages,
// kills one with SIGKILL while the first versions are being stored, and
// checks that every watch got its one version, none twice, that the dead
// node's shards are served again by the others, and that each owner's
// store holds every version of its shards, and that a login made on one
// node holds on the others, before and after the kill. Then a rolling
// restart (the killed node back, each node stopped and started again in
// turn) runs while a second batch of watches gets its first versions,
// and the same is checked of both batches. Last, in steady state (watches
// checked every minute, some of their pages changed a moment before), a
// node is killed again: every check overdue when the others take its
// shards over runs within a check interval, the failover and a margin,
// every change is stored once, and the watches' pages answer 200 or 503
// (never 404) on a survivor meanwhile.
// CHANGEDIGEST_CLUSTER_WATCHES sets the number of watches (default
// 10,000), CHANGEDIGEST_CLUSTER_STEADY the number checked every minute
// (default 600).
func TestClusterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of three processes")
	}
	watches := 10000
	if v := os.Getenv("CHANGEDIGEST_CLUSTER_WATCHES"); v != "" {
		watches, _ = strconv.Atoi(v)
	}
	steady := 600
	if v := os.Getenv("CHANGEDIGEST_CLUSTER_STEADY"); v != "" {
		steady, _ = strconv.Atoi(v)
	}
	const shards, hosts, steadyHosts = 12, 100, 5
	// The pages past the first watches' are the steady state's, on 5 of
	// the hosts.
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: hosts, Pages: watches + steady*hosts/steadyHosts + hosts, Size: 2 << 10,
		Rate: func(int) float64 { return 0 }})

	ports := freePorts(t, 6)
	routes, clients := ports[:3], ports[3:]
	dirs := make([]string, 3)
	procs := make([]*exec.Cmd, 3)
	logs := make([]string, 3)
	exited := make([]chan struct{}, 3)
	logged := make([]bool, 3)
	// start starts node i, again on its data when it ran before.
	start := func(i int) {
		if dirs[i] == "" {
			dirs[i] = filepath.Join(t.TempDir(), "node"+strconv.Itoa(i))
			logs[i] = filepath.Join(dirs[i] + ".log")
		}
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		cmd := exec.Command(os.Args[0], "serve", "--data", dirs[i], "--addr", "127.0.0.1:0", "--allow-private",
			"--log-level", "info", "--cluster", "killtest", "--node", "n"+strconv.Itoa(i),
			"--cluster-listen", routes[i], "--routes", strings.Join(others, ","), "--nats-listen", clients[i],
			"--shards", strconv.Itoa(shards), "--host-gap", "20ms", "--check-ack-wait", "15s", "--workers", "16")
		// The nodes ask the secret of each other's routes and of clients.
		cmd.Env = append(os.Environ(), "CHANGEDIGEST_TEST_MAIN=1", clusterSecretEnv+"="+killSecret)
		f, err := os.OpenFile(logs[i], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		procs[i], exited[i] = cmd, done
		go func() {
			err := cmd.Wait()
			t.Logf("node %d exited: %v", i, err)
			close(done)
		}()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-done
			f.Close()
			if t.Failed() && !logged[i] {
				logged[i] = true
				b, _ := os.ReadFile(logs[i])
				t.Logf("node %d's log:\n%s", i, b)
			}
		})
	}
	for i := range 3 {
		start(i)
	}

	ctx := context.Background()
	var conn *cluster.Conn
	// wait polls the status until cond holds; at the limit it fails the
	// test, at once when fatal, else returning the last status so that
	// what follows can say what is missing.
	waitOr := func(fatal bool, what string, limit time.Duration, cond func(*cluster.Status) bool) *cluster.Status {
		t.Helper()
		end := time.Now().Add(limit)
		var (
			last    *cluster.Status
			lastErr error
			logged  = time.Now()
		)
		for {
			if conn == nil {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				conn, lastErr = cluster.Connect(cctx, "nats://"+clients[0], killSecret)
				cancel()
			}
			if conn != nil {
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				st, err := conn.Status(sctx, false)
				cancel()
				if err == nil && cond(st) {
					return st
				}
				last, lastErr = st, err
				if testing.Verbose() && time.Since(logged) > 5*time.Second {
					logged = time.Now()
					if st != nil {
						t.Logf("waiting for %s: %d versions, %d queued, %d running, owners %v, nodes %+v", what, st.Versions, st.Queued, st.Running, st.Owners, st.Nodes)
					} else {
						t.Logf("waiting for %s: %v", what, err)
					}
				}
			}
			if time.Now().After(end) {
				if last != nil {
					t.Logf("streams: %+v", last.Streams)
				}
				if fatal || last == nil {
					t.Fatalf("timed out after %s waiting for %s; last status %+v, error %v", limit, what, last, lastErr)
				}
				t.Errorf("timed out after %s waiting for %s; last status %+v, error %v", limit, what, last, lastErr)
				return last
			}
			time.Sleep(time.Second)
		}
	}
	wait := func(what string, limit time.Duration, cond func(*cluster.Status) bool) *cluster.Status {
		t.Helper()
		return waitOr(true, what, limit, cond)
	}
	served := func(st *cluster.Status, nodes int) bool {
		ready := map[int]string{}
		live := 0
		for _, n := range st.Nodes {
			if n.Down {
				continue
			}
			live++
			for _, s := range n.Ready {
				ready[s] = n.Name
			}
		}
		for s, owner := range st.Owners {
			if owner == "" || ready[s] != owner {
				return false
			}
		}
		return live == nodes
	}
	began := time.Now()
	wait("three nodes serving every shard", 90*time.Second, func(st *cluster.Status) bool {
		return served(st, 3) && len(slices.Compact(slices.Sorted(slices.Values(st.Owners)))) == 3
	})
	defer conn.Close()
	t.Logf("cluster formed in %s", time.Since(began).Round(time.Millisecond))

	// One node made the administrator of the cluster: log in on another,
	// and the session is good on every node.
	sites := make([]string, 3)
	// readSites reads where each node runs (a node started again runs
	// on another port).
	readSites := func() {
		for i := range 3 {
			b, _ := os.ReadFile(logs[i])
			if ms := regexp.MustCompile(`running at (http://\S+)`).FindAllSubmatch(b, -1); len(ms) > 0 {
				sites[i] = string(ms[len(ms)-1][1])
			}
		}
	}
	readSites()
	password := ""
	for i := range 3 {
		b, _ := os.ReadFile(logs[i])
		if m := regexp.MustCompile(`log in as admin with password (\S+)`).FindSubmatch(b); m != nil {
			if password != "" {
				t.Errorf("two nodes made an administrator")
			}
			password = string(m[1])
		}
	}
	if password == "" || slices.Contains(sites, "") {
		t.Fatalf("no node says it made the administrator, or a node did not say where it runs: %q", sites)
	}
	web := webLogin(t, sites[2], "admin", password)
	// While the cluster replaces a server, a page may answer 503 with a
	// Retry-After, as a reader's reload would, never an error of its own.
	signedIn := func(when string, nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			code, busy := webGetRetrying(t, web, sites[i]+"/settings", 30*time.Second)
			if code != http.StatusOK {
				t.Errorf("%s: the session made on node 2 gets %d from node %d's settings page", when, code, i)
			}
			if busy > 0 {
				t.Logf("%s: node %d's settings page answered 503 %d times before 200", when, i, busy)
			}
		}
	}
	signedIn("before the kill", 0, 1, 2)

	ws := make([]*changedigest.Watch, watches)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i)}
	}
	began = time.Now()
	if err := conn.AddWatches(ctx, ws); err != nil {
		t.Fatal(err)
	}
	t.Logf("defined %d watches in %s", watches, time.Since(began).Round(time.Millisecond))

	wait("the first two fifths of the versions", 5*time.Minute, func(st *cluster.Status) bool {
		return st.Versions >= uint64(watches*2/5)
	})
	const victim = 1
	if err := procs[victim].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited[victim]
	killed := time.Now()
	// The shards and the nodes' heartbeats answer while the streams
	// whose leader died elect another (the full status does not): look
	// at them alone, five times a second.
	for end := killed.Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		nodes, owners, err := conn.Shards(sctx)
		cancel()
		if err == nil {
			victimDown := true
			for _, n := range nodes {
				if n.Name == "n1" && !n.Down {
					victimDown = false
				}
			}
			if victimDown && served(&cluster.Status{Nodes: nodes, Owners: owners}, 2) {
				break
			}
		}
		if time.Now().After(end) {
			t.Fatalf("the dead node's shards were not served again within 2 minutes (last error %v)", err)
		}
	}
	t.Logf("the dead node's shards were served again %s after the kill", time.Since(killed).Round(time.Millisecond))
	signedIn("after the kill", 0, 2)
	webLogin(t, sites[0], "admin", password)
	st := waitOr(false, "every watch's first version", 5*time.Minute, func(st *cluster.Status) bool {
		return st.Versions >= uint64(watches) && st.Queued == 0 && st.Running == 0 && served(st, 2) && lagless(st)
	})
	t.Logf("all %d checks done %s after the watches were defined", watches, time.Since(began).Round(time.Millisecond))

	// audit reads every stored version: each of ws has one, and no due
	// check stored two.
	audit := func(when string, ws []*changedigest.Watch) map[int64]int {
		t.Helper()
		counts, dups, err := conn.VersionCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if dups != 0 {
			t.Errorf("%s: %d due checks stored more than one version", when, dups)
		}
		missing, extra := 0, 0
		for _, w := range ws {
			switch n := counts[w.ID]; {
			case n == 0:
				missing++
			case n > 1:
				extra++
			}
		}
		if missing > 0 || extra > 0 || len(counts) != len(ws) {
			t.Errorf("%s: of %d watches, %d have no version and %d more than one (%d with versions)", when, len(ws), missing, extra, len(counts))
		}
		return counts
	}
	counts := audit("after the kill", ws)
	var checks, failed int64
	for _, n := range st.Nodes {
		if n.Down {
			continue
		}
		checks += n.Checks
		failed += n.Failed
	}
	t.Logf("survivors ran %d checks, %d failed", checks, failed)

	// A rolling restart while more watches get their first versions: the
	// killed node comes back on its data while a second batch (another
	// user's, of the same pages) is checked, then each node in turn is
	// stopped (SIGTERM) and started again on its data, each time just
	// after a further batch was defined, once every shard is served.
	var ws2 []*changedigest.Watch
	define := func(user int64, n int) {
		t.Helper()
		batch := make([]*changedigest.Watch, n)
		for i := range batch {
			batch[i] = &changedigest.Watch{UserID: user, URL: farm.URL(i)}
		}
		if err := conn.AddWatches(ctx, batch); err != nil {
			t.Fatal(err)
		}
		ws2 = append(ws2, batch...)
	}
	began = time.Now()
	start(victim)
	define(2, watches/2)
	back := wait("the killed node back", 2*time.Minute, func(st *cluster.Status) bool { return served(st, 3) })
	t.Logf("the killed node back %s after the second batch was defined: %d of %d versions", time.Since(began).Round(time.Millisecond), back.Versions, watches+len(ws2))
	for i := range 3 {
		define(int64(3+i), watches/5)
		if err := procs[i].Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		<-exited[i]
		start(i)
		back = wait(fmt.Sprintf("node %d back after its restart", i), 2*time.Minute, func(st *cluster.Status) bool { return served(st, 3) })
		t.Logf("node %d stopped just after %d more watches were defined, back %s after the second batch: %d of %d versions", i, watches/5, time.Since(began).Round(time.Millisecond), back.Versions, watches+len(ws2))
	}
	t.Logf("rolling restart done %s after the second batch was defined", time.Since(began).Round(time.Millisecond))
	st = waitOr(false, "every watch of both batches with its version", 5*time.Minute, func(st *cluster.Status) bool {
		return st.Versions >= uint64(watches+len(ws2)) && st.Queued == 0 && st.Running == 0 && served(st, 3) && lagless(st)
	})
	t.Logf("the later batches' %d checks done %s after the second batch was defined", len(ws2), time.Since(began).Round(time.Millisecond))
	ws = append(ws, ws2...)
	counts = audit("after the rolling restart", ws)
	readSites()
	signedIn("after the rolling restart", 0, 1, 2)

	// Steady state: watches checked every minute, on 5 hosts. Once each
	// was checked twice, half their pages change, and another node is
	// killed in the middle of the next round of checks (some of its
	// watches have found the change, others not yet), as a kill 20 s
	// after a change of every page would be with watches checked at any
	// time of the minute.
	var steadyWs []*changedigest.Watch
	var steadyPages []int
	for i := watches; len(steadyPages) < steady; i++ {
		if i%hosts < steadyHosts {
			steadyPages = append(steadyPages, i)
			steadyWs = append(steadyWs, &changedigest.Watch{UserID: 1, URL: farm.URL(i), Interval: time.Minute})
		}
	}
	rec := newRequestLog(farm, steadyPages)
	recCtx, stopRec := context.WithCancel(ctx)
	defer stopRec()
	go rec.run(recCtx)
	if err := conn.AddWatches(ctx, steadyWs); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	// rounds waits until a share of the pages were requested n times.
	rounds := func(n int, share float64, limit time.Duration) {
		t.Helper()
		for end := time.Now().Add(limit); rec.requested(n) < share; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("steady state: %.0f %% of the pages were requested %d times after %s, want %.0f %%", 100*rec.requested(n), n, time.Since(began).Round(time.Second), 100*share)
			}
		}
	}
	rounds(1, 1, 2*time.Minute)
	t.Logf("the steady state's %d watches checked once %s after they were defined", steady, time.Since(began).Round(time.Millisecond))
	rounds(2, 1, 2*time.Minute)
	time.Sleep(25 * time.Second)
	changed := time.Now()
	for k, i := range steadyPages {
		if k%2 == 0 {
			farm.Pages[i].Touch()
		}
	}
	rec.changed(changed, func(k int) bool { return k%2 == 0 })
	// The steady watches' pages on a survivor through the kill.
	const steadyVictim = 2
	codes := map[int]int{}
	readCtx, stopReads := context.WithCancel(ctx)
	readsDone := make(chan struct{})
	go func() {
		defer close(readsDone)
		for k := 0; readCtx.Err() == nil; k++ {
			req, _ := http.NewRequestWithContext(readCtx, "GET", fmt.Sprintf("%s/watches/%d", sites[0], steadyWs[k%steady].ID), nil)
			resp, err := web.Do(req)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[resp.StatusCode]++
		}
	}()
	rounds(3, 0.4, 90*time.Second)
	t.Logf("steady state: the pages changed %s before the kill", time.Since(changed).Round(100*time.Millisecond))
	if err := procs[steadyVictim].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited[steadyVictim]
	killed = time.Now()
	for end := killed.Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		nodes, owners, err := conn.Shards(sctx)
		cancel()
		if err == nil && served(&cluster.Status{Nodes: nodes, Owners: owners}, 2) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("in steady state, the dead node's shards were not served again within 2 minutes (last error %v)", err)
		}
	}
	failover := time.Since(killed)
	// A check is due a minute after the last, give or take a tenth; one
	// of the dead node's shards, or one its worker had taken, runs once a
	// survivor serves the shard, or once the check is given to another
	// worker (AckWait, 15 s here). The margin is for this machine's load.
	const interval, ackWait, margin = 66 * time.Second, 15 * time.Second, 30 * time.Second
	bound := interval + failover + ackWait + margin
	for end := killed.Add(bound + 10*time.Second); time.Now().Before(end) && !rec.allAfter(killed); time.Sleep(time.Second) {
	}
	stopReads()
	<-readsDone
	// Every page is checked within the bound of its last check before
	// the kill; every change is read within the bound of the change.
	var late, lateChanged []string
	var worst, worstChange time.Duration
	for k := range steadyPages {
		before, after := rec.around(k, killed)
		if after.IsZero() {
			after = time.Now()
		}
		worst = max(worst, after.Sub(before))
		if after.Sub(before) > bound {
			late = append(late, fmt.Sprintf("watch %d %s", steadyWs[k].ID, after.Sub(before).Round(time.Second)))
		}
		if k%2 == 0 {
			seen := rec.firstFull(k)
			if seen.IsZero() {
				seen = time.Now()
			}
			worstChange = max(worstChange, seen.Sub(changed))
			if seen.Sub(changed) > bound {
				lateChanged = append(lateChanged, fmt.Sprintf("watch %d %s", steadyWs[k].ID, seen.Sub(changed).Round(time.Second)))
			}
		}
	}
	t.Logf("steady state: the dead node's shards served again %s after the kill; the longest gap between two checks of a page across the kill %s, the latest change read %s after it was made (bound %s); pages on a survivor: %v",
		failover.Round(time.Millisecond), worst.Round(100*time.Millisecond), worstChange.Round(100*time.Millisecond), bound.Round(time.Second), codes)
	if len(late) > 0 {
		t.Errorf("%d pages checked more than %s apart across the kill: %s", len(late), bound.Round(time.Second), strings.Join(late[:min(10, len(late))], ", "))
	}
	if len(lateChanged) > 0 {
		t.Errorf("%d changes read more than %s after they were made: %s", len(lateChanged), bound.Round(time.Second), strings.Join(lateChanged[:min(10, len(lateChanged))], ", "))
	}
	for c, n := range codes {
		if c != http.StatusOK && c != http.StatusServiceUnavailable {
			t.Errorf("a steady watch's page on a survivor answered %d %d times through the kill", c, n)
		}
	}
	// Each change stored once, nothing else.
	steadyCounts, dups, err := conn.VersionCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Errorf("steady state: %d due checks stored more than one version", dups)
	}
	for k, w := range steadyWs {
		if want := 1 + (1 - k%2); steadyCounts[w.ID] != want {
			t.Errorf("steady state: watch %d has %d versions, want %d", w.ID, steadyCounts[w.ID], want)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(ws), func(w *changedigest.Watch) bool { return steadyCounts[w.ID] == 1 })); n > 0 {
		t.Errorf("after the steady state's kill: %d watches of the first batches have other than one version", n)
	}
	start(steadyVictim)
	// Back and given its share of the shards (one a second), so that the
	// owners read below are the ones whose stores hold the shards.
	st = wait("the node killed in steady state back", 2*time.Minute, func(st *cluster.Status) bool {
		held := map[string]int{}
		for _, o := range st.Owners {
			held[o]++
		}
		return served(st, 3) && lagless(st) && len(held) == 3 && held["n0"] == shards/3 && held["n1"] == shards/3 && held["n2"] == shards/3
	})
	if counts, _, err = conn.VersionCounts(ctx); err != nil {
		t.Fatal(err)
	}
	ws = append(ws, steadyWs...)

	// Stop the nodes and read their stores: each owner holds every
	// version of its shards.
	for i, p := range procs {
		p.Process.Signal(syscall.SIGTERM)
		<-exited[i]
	}
	owners := st.Owners
	lost := 0
	for i := range procs {
		store := pet.New(dirs[i])
		if err := store.Open(ctx); err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if owners[cluster.ShardOf(w.ID, shards)] != "n"+strconv.Itoa(i) {
				continue
			}
			info, err := store.Track(ctx, w.ID)
			if counts[w.ID] == 0 {
				// Say why a watch got no version: its state in the view.
				lw, werr := store.Watch(ctx, pet.AnyUser, w.ID)
				if werr != nil {
					t.Logf("watch %d (shard %d) without a version: not in node %d's view: %v", w.ID, cluster.ShardOf(w.ID, shards), i, werr)
				} else {
					t.Logf("watch %d (shard %d) without a version, in node %d's view: next check %s, last check %s, checks %d, errors %d %q",
						w.ID, cluster.ShardOf(w.ID, shards), i, lw.NextCheck.Format(time.RFC3339Nano), lw.LastCheck.Format(time.RFC3339Nano), lw.Checks, lw.ErrorCount, lw.LastError)
				}
			}
			if err != nil || info.Versions != counts[w.ID] {
				lost++
				if lost <= 5 {
					t.Errorf("node %d's view of watch %d: %d versions, %v (the track of record has %d)", i, w.ID, info.Versions, err, counts[w.ID])
				}
			}
		}
		store.Close()
	}
	if lost > 0 {
		t.Errorf("%d watches' versions are missing from their owner's store", lost)
	}
}

// webLogin logs in through the login form of the site and returns a
// client holding the session (cookies of 127.0.0.1 go to every port).
func webLogin(t *testing.T, site, name, password string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := c.Get(site + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("%s/login has no form token", site)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// A 503 (the cluster replacing a server) is tried again after its
	// Retry-After, for up to 30 s.
	resp, busy, err := untilNotBusy(30*time.Second, func() (*http.Response, error) {
		return c.PostForm(site+"/login", url.Values{"csrf_token": {string(m[1])}, "name": {name}, "password": {password}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if busy > 0 {
		t.Logf("logging in as %s at %s: 503 %d times first", name, site, busy)
	}
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logging in as %s at %s: %s", name, site, resp.Status)
	}
	return c
}

// webGetRetrying returns the status of a GET (redirects not followed),
// following 503 answers' Retry-After for up to patience, and how many
// 503s came first.
func webGetRetrying(t *testing.T, c *http.Client, u string, patience time.Duration) (code, busy int) {
	t.Helper()
	resp, busy, err := untilNotBusy(patience, func() (*http.Response, error) { return c.Get(u) })
	if err != nil {
		t.Errorf("GET %s: %v", u, err)
		return 0, busy
	}
	return resp.StatusCode, busy
}

// untilNotBusy makes a request again, after the Retry-After of each 503
// answer, until it answers anything else or patience has passed; it
// returns the last answer (its body closed) and how many 503s came first.
// A 503 without a Retry-After is returned at once.
func untilNotBusy(patience time.Duration, do func() (*http.Response, error)) (*http.Response, int, error) {
	for end, busy := time.Now().Add(patience), 0; ; busy++ {
		resp, err := do()
		if err != nil {
			return nil, busy, err
		}
		resp.Body.Close()
		after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || err != nil || time.Now().After(end) {
			return resp, busy, nil
		}
		time.Sleep(time.Duration(after) * time.Second)
	}
}

// requestLog records when the pages of a farm were requested, as seen by
// looking at their counters every 100 ms.
type requestLog struct {
	farm  *crawltest.Farm
	pages []int // the pages followed (k: index here)
	mu    sync.Mutex
	at    [][]time.Time
	// full is the first answer in full after the change, of the pages
	// changed.
	base []int64
	full []time.Time
	want func(k int) bool
}

func newRequestLog(f *crawltest.Farm, pages []int) *requestLog {
	return &requestLog{farm: f, pages: pages, at: make([][]time.Time, len(pages))}
}

func (r *requestLog) run(ctx context.Context) {
	last := make([]int64, len(r.pages))
	for ctx.Err() == nil {
		now := time.Now()
		r.mu.Lock()
		for k, i := range r.pages {
			p := r.farm.Pages[i]
			if n := p.Requests.Load(); n != last[k] {
				for range n - last[k] {
					r.at[k] = append(r.at[k], now)
				}
				last[k] = n
			}
			if r.want != nil && r.want(k) && r.full[k].IsZero() && p.Full.Load() > r.base[k] {
				r.full[k] = now
			}
		}
		r.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
}

// changed notes that the pages want says changed at.
func (r *requestLog) changed(at time.Time, want func(k int) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base, r.full, r.want = make([]int64, len(r.pages)), make([]time.Time, len(r.pages)), want
	for k, i := range r.pages {
		r.base[k] = r.farm.Pages[i].Full.Load()
	}
}

// requested is the share of the pages requested at least n times.
func (r *requestLog) requested(n int) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := 0
	for _, at := range r.at {
		if len(at) >= n {
			k++
		}
	}
	return float64(k) / float64(max(len(r.at), 1))
}

// allAfter reports whether every page was requested after t, and every
// page changed read in full since.
func (r *requestLog) allAfter(t time.Time) bool {
	for k := range r.pages {
		if _, after := r.around(k, t); after.IsZero() {
			return false
		}
		if r.want != nil && r.want(k) && r.firstFull(k).IsZero() {
			return false
		}
	}
	return true
}

// around returns page k's last request before t and its first after.
func (r *requestLog) around(k int, t time.Time) (before, after time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.at[k] {
		if at.Before(t) {
			before = at
		} else if after.IsZero() {
			after = at
		}
	}
	return before, after
}

func (r *requestLog) firstFull(k int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.full[k]
}

func lagless(st *cluster.Status) bool {
	for _, n := range st.Nodes {
		if !n.Down && n.Lag != 0 {
			return false
		}
	}
	return true
}

// TestClusterUserCommands: cluster user add, passwd and list against a
// node's NATS address; a name taken is refused whatever its case.
func TestClusterUserCommands(t *testing.T) {
	addr := freePorts(t, 1)[0]
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := cluster.Dial(dctx, cluster.Config{Name: "solo", Dir: t.TempDir(), Client: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	url := "nats://" + addr
	if code, out, errOut := runCmdIn(t, "a good password\n", "cluster", "user", "add", "--nats", url, "--email", "ann@example.org", "ann"); code != 0 || !strings.Contains(out, "created user ann (id 1)") {
		t.Fatalf("user add: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCmdIn(t, "another password\n", "cluster", "user", "add", "--nats", url, "ANN"); code == 0 || !strings.Contains(errOut, "taken") {
		t.Errorf("a second ann: %d %q", code, errOut)
	}
	if code, out, errOut := runCmdIn(t, "a new password\n", "cluster", "user", "passwd", "--nats", url, "ann"); code != 0 || !strings.Contains(out, "password of ann changed") {
		t.Errorf("user passwd: %d %q %q", code, out, errOut)
	}
	u, err := conn.UserByName(ctx, "ann")
	if err != nil || bcrypt.CompareHashAndPassword(u.PasswordHash, []byte("a new password")) != nil || u.Email != "ann@example.org" {
		t.Errorf("ann in the cluster: %+v, %v", u, err)
	}
	if code, out, _ := runCmd(t, "cluster", "user", "list", "--nats", url); code != 0 || !strings.Contains(out, "ann") || !strings.Contains(out, "ann@example.org") {
		t.Errorf("user list: %d %q", code, out)
	}
}

// TestServeClusterImportsASingleStore: a single serve's data directory,
// made with the commands, is started as a cluster's first node; its user,
// watch and versions are the cluster's (the user logs in, the versions are
// served); the directory is then the node's, which the commands that
// write and a plain serve refuse, while those that read still read it.
func TestServeClusterImportsASingleStore(t *testing.T) {
	var edition atomic.Int32
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><h1>News</h1><p>Edition %d of the news.</p></body></html>", edition.Load())
	}))
	defer page.Close()
	data := t.TempDir()
	cmd := func(stdin string, want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmdIn(t, stdin, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d: %s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	cmd("a good password\n", 0, "user", "add", "ann", "--admin")
	cmd("", 0, "watch", "add", "--allow-private", page.URL)
	for e := range 2 {
		edition.Store(int32(e + 1))
		cmd("", 0, "check", "--allow-private", "--all")
	}

	m, out := startServe(t, data, "solo")
	if !strings.Contains(out.String(), "imported this data directory's store into the cluster") || !strings.Contains(out.String(), "1 users,") ||
		!strings.Contains(out.String(), "1 watches, 2 versions") || strings.Contains(out.String(), "created the administrator") {
		t.Errorf("start-up output:\n%s", out.String())
	}
	site := regexp.MustCompile(`running at (\S+)`).FindStringSubmatch(out.String())[1]
	c := webLogin(t, site, "ann", "a good password")
	code, body := get(t, c, site+"/watches/1/versions/2")
	if code != 200 || !strings.Contains(body, "Version 2") || !strings.Contains(body, "Edition") {
		t.Errorf("version 2 on the node: %d\n%s", code, body)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	refused := cmd("", 2, "watch", "add", "--allow-private", page.URL+"/other")
	if !strings.Contains(refused, "is a cluster node's") {
		t.Errorf("watch add on a node's data directory: %s", refused)
	}
	if list := cmd("", 0, "watch", "list"); !strings.Contains(list, page.URL) {
		t.Errorf("watch list on a node's data directory: %s", list)
	}
	single := NewMain()
	single.Stdout, single.Logger = io.Discard, slogDiscard()
	single.Config.data, single.Config.Addr = data, "127.0.0.1:0"
	if err := single.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "is a cluster node's") {
		single.Close()
		t.Errorf("a plain serve on a node's data directory: %v", err)
	}
}

// TestServeDemoIsSingle: the demo writes into the store itself, which a
// cluster node's is not: the two are refused together, clearly.
func TestServeDemoIsSingle(t *testing.T) {
	for _, flag := range [][]string{{"--cluster", "cd"}, {"--nats", "nats://127.0.0.1:1"}} {
		code, _, errs := runCmd(t, append([]string{"serve", "--demo", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, flag...)...)
		if code != 2 || !strings.Contains(errs, "--demo runs a single serve") {
			t.Errorf("serve --demo %v: exit %d, %s", flag, code, errs)
		}
	}
}

// TestClusterStatusOfADownNode: a node that is down is shown serving
// nothing, with no up time, and the shards still recorded as its are
// marked.
func TestClusterStatusOfADownNode(t *testing.T) {
	now := time.Now()
	st := &cluster.Status{
		Nodes: []cluster.NodeInfo{
			{Name: "a", Started: now.Add(-time.Hour), Beat: now, Shards: []int{0}, Ready: []int{0}, Checks: 12},
			{Name: "b", Started: now.Add(-time.Hour), Beat: now.Add(-time.Minute), Down: true, Checks: 7},
		},
		Owners: []string{"a", "b"},
	}
	var out strings.Builder
	printClusterStatus(&out, st)
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	if !slices.Contains(lines, "b down 0 0 0 7 0 - 1m0s ago") || !slices.Contains(lines, "1 b (down)") {
		t.Errorf("a node that is down, and its shard:\n%s", out.String())
	}
}
