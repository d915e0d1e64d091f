// Command clusterbench measures what running as a cluster costs, with real
// processes on loopback over a farm of pages:
//
//   - cpu: the CPU a first check of every page costs, summed over the
//     serve processes, for a single `serve` (its own scheduler and store),
//     a one-node cluster (`serve --cluster`, embedded NATS alone) and a
//     three-node cluster (three processes, a three-server JetStream
//     cluster inside them, every stream kept three times);
//
//   - startup: the time from exec to "changedigest is running" and the
//     resident memory a few seconds later, for `serve` and for a
//     one-node `serve --cluster`;
//
//   - kill: what kill -9 of one of three nodes costs in steady state
//     (every watch checked every minute; with -change every page changes
//     20 s before the kill): how late the checks come around the kill, how
//     long the changes take to be read, the farm's requests in each ten
//     seconds, the answers of the watches' versions on a survivor, and the
//     status of the dead node.
//
// A plain `serve` is itself a cluster of one (its own embedded server);
// -before BIN adds the mode "before": a plain `serve` of another build
// (one without NATS), run in turn with the others, so that what the
// cluster's code path costs a single node is measured side by side.
//
// Run it as
//
//	go build -o /tmp/changedigest ./cmd/changedigest
//	go run ./cmd/clusterbench -bin /tmp/changedigest -pages 3000
//	go run ./cmd/clusterbench -bin /tmp/changedigest -measure kill -pages 600 -hosts 20 [-change]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
)

// tb is the little of testing.TB a farm needs.
type tb struct{ cleanups []func() }

func (t *tb) Helper()           {}
func (t *tb) Cleanup(fn func()) { t.cleanups = append(t.cleanups, fn) }

func main() {
	bin := flag.String("bin", "", "the changedigest binary")
	before := flag.String("before", "", "another changedigest binary, whose plain serve is the mode \"before\"")
	pages := flag.Int("pages", 5000, "pages on the farm (one watch each)")
	hosts := flag.Int("hosts", 100, "loopback servers the pages are spread over")
	runs := flag.Int("runs", 3, "runs of each measurement")
	what := flag.String("measure", "cpu,startup", "cpu, startup or both; or kill")
	modes := flag.String("modes", "single,cluster1,cluster3", "the set-ups -measure cpu runs (and before, with -before)")
	pass := flag.String("pass", "first", "the checks -measure cpu counts: first (every page new), second (a minute later every watch is checked again; a tenth of the pages changed, the others answer 304) or define (the watches defined, paused: what the first pass of a cluster counts besides its checks; a single serve's watches are defined before it starts)")
	settle := flag.Duration("settle", 3*time.Minute, "-measure kill: the steady state before the change or the kill")
	ackWait := flag.Duration("ack-wait", 2*time.Minute, "-measure kill: serve's --check-ack-wait")
	change := flag.Bool("change", false, "-measure kill: every page changes 20 s before the kill")
	after := flag.Duration("after", 4*time.Minute, "-measure kill: how long the run goes on after the kill")
	keep := flag.Bool("keep", false, "-measure kill: keep the data directories and the nodes' logs")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "clusterbench: -bin is required")
		os.Exit(2)
	}
	// binFor is the binary and serve's mode of a mode.
	binFor := func(mode string) (string, string) {
		if mode == "before" {
			if *before == "" {
				fail(fmt.Errorf("mode before needs -before BIN"))
			}
			return *before, "single"
		}
		return *bin, mode
	}
	if *what == "kill" {
		for range *runs {
			if err := killRun(killConfig{bin: *bin, pages: *pages, hosts: *hosts, settle: *settle, ackWait: *ackWait,
				change: *change, changeToKill: 20 * time.Second, watchAfterKill: *after, keep: *keep}); err != nil {
				fail(err)
			}
		}
		return
	}
	if strings.Contains(*what, "startup") {
		startModes := []string{"single", "cluster1"}
		if *before != "" {
			startModes = append(startModes, "before")
		}
		times, rss := map[string][]float64{}, map[string][]float64{}
		// In turn, run by run: the machine's speed drifts.
		for range *runs + 2 {
			for _, mode := range startModes {
				b, m := binFor(mode)
				d, r, err := startup(b, m)
				if err != nil {
					fail(err)
				}
				times[mode], rss[mode] = append(times[mode], d.Seconds()*1000), append(rss[mode], r)
			}
		}
		for _, mode := range startModes {
			fmt.Printf("startup %-8s  to running: median %.1f ms (%s)   RSS after 3 s: median %.1f MB (%s)\n",
				mode, median(times[mode]), list(times[mode]), median(rss[mode]), list(rss[mode]))
		}
	}
	if strings.Contains(*what, "cpu") {
		for range *runs {
			for _, mode := range strings.Split(*modes, ",") {
				b, m := binFor(mode)
				if *pass == "define" && m == "single" {
					continue // defined before it starts, not counted
				}
				cpu, wall, err := cpuRun(b, m, *pages, *hosts, *pass)
				if err != nil {
					fail(err)
				}
				fmt.Printf("cpu %-8s  %d pages, %s pass: %.2f CPU-s, %.3f ms CPU per check, %.1f s wall\n",
					mode, *pages, *pass, cpu.Seconds(), cpu.Seconds()*1000/float64(*pages), wall.Seconds())
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "clusterbench:", err)
	os.Exit(1)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func list(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, strconv.FormatFloat(x, 'f', 1, 64))
	}
	return strings.Join(parts, " ")
}

// process is a serve process.
type process struct {
	cmd     *exec.Cmd
	running chan struct{}
	started time.Time
}

func serve(bin string, args ...string) (*process, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--allow-private", "--log-level", "error"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	p := &process{cmd: cmd, running: make(chan struct{}), started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "changedigest is running") {
				close(p.running)
			}
		}
		io.Copy(io.Discard, out)
	}()
	return p, nil
}

// cpu is the CPU the process used so far.
func (p *process) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks (USER_HZ 100)
}

// stop ends the process and returns the CPU it used.
func (p *process) stop() time.Duration {
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	st := p.cmd.ProcessState
	return st.UserTime() + st.SystemTime()
}

func dirSize(root string) int64 {
	var n int64
	filepath.Walk(root, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func freePorts(n int) []string {
	var addrs []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fail(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return addrs
}

func startup(bin, mode string) (time.Duration, float64, error) {
	dir, err := os.MkdirTemp("", "clusterbench")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	args := []string{"--data", dir}
	if mode == "cluster1" {
		args = append(args, "--cluster", "bench")
	}
	p, err := serve(bin, args...)
	if err != nil {
		return 0, 0, err
	}
	defer p.stop()
	select {
	case <-p.running:
	case <-time.After(30 * time.Second):
		return 0, 0, fmt.Errorf("%s did not start", mode)
	}
	d := time.Since(p.started)
	time.Sleep(3 * time.Second)
	return d, rssMB(p.cmd.Process.Pid), nil
}

// cpuRun runs the first check of every page of a farm in one set-up and
// returns the CPU its serve processes used and the time it took; with
// pass "second", the watches are checked again a minute later (a tenth of
// the pages changed) and the figures are those of the second pass,
// counted from the end of the first (the idle minute between included);
// with pass "define", a cluster's watches are defined paused and the
// figures are those of defining them.
func cpuRun(bin, mode string, pages, hosts int, pass string) (cpu, wall time.Duration, err error) {
	second, define := pass == "second", pass == "define"
	t := &tb{}
	defer func() {
		for _, fn := range t.cleanups {
			fn()
		}
	}()
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: hosts, Pages: pages, Size: 8 << 10, Rate: func(int) float64 { return 0 }})
	root, err := os.MkdirTemp("", "clusterbench")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(root)
	ctx := context.Background()
	ws := make([]*changedigest.Watch, pages)
	for i := range ws {
		ws[i] = &changedigest.Watch{UserID: 1, URL: farm.URL(i), Paused: define}
		if second {
			ws[i].Interval = time.Minute
		}
	}
	common := []string{"--host-gap", "20ms", "--workers", "16"}
	var procs []*process
	begin := time.Now()
	var startup time.Duration // CPU before the first pass, not counted
	switch mode {
	case "single":
		data := filepath.Join(root, "single")
		store := pet.New(data)
		if err := store.Open(ctx); err != nil {
			return 0, 0, err
		}
		u := &changedigest.User{Name: "admin", Admin: true, DigestHour: -1}
		if err := store.CreateUser(ctx, u); err != nil {
			return 0, 0, err
		}
		for _, w := range ws {
			w.UserID = u.ID
			if err := store.CreateWatch(ctx, w); err != nil {
				return 0, 0, err
			}
		}
		store.Close()
		begin = time.Now()
		p, err := serve(bin, append([]string{"--data", data}, common...)...)
		if err != nil {
			return 0, 0, err
		}
		procs = append(procs, p)
		// Counted from when the service runs: its start-up is not a check's.
		<-p.running
		begin, startup = time.Now(), p.cpu()
		for {
			if _, full, _ := farm.Requests(); full >= int64(pages) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second) // the last versions are stored
		if second {
			secondPass(farm, procs, &cpu, &wall)
			for {
				if total, _, _ := farm.Requests(); total >= int64(2*pages) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(time.Second)
			finishPass(procs, &cpu, &wall)
		}
	case "cluster1", "cluster3":
		n := 1
		if mode == "cluster3" {
			n = 3
		}
		ports := freePorts(2 * n)
		routes, clients := ports[:n], ports[n:]
		for i := range n {
			args := append([]string{"--data", filepath.Join(root, "node"+strconv.Itoa(i)), "--cluster", "bench",
				"--node", "n" + strconv.Itoa(i), "--nats-listen", clients[i], "--shards", "12"}, common...)
			if n > 1 {
				var others []string
				for j, r := range routes {
					if j != i {
						others = append(others, r)
					}
				}
				args = append(args, "--cluster-listen", routes[i], "--routes", strings.Join(others, ","))
			}
			p, err := serve(bin, args...)
			if err != nil {
				return 0, 0, err
			}
			procs = append(procs, p)
		}
		var conn *cluster.Conn
		for conn == nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			conn, _ = cluster.Connect(cctx, "nats://"+clients[0], "")
			cancel()
			time.Sleep(200 * time.Millisecond)
		}
		defer conn.Close()
		// Wait for every shard to be served before defining the watches.
		for {
			st, err := conn.Status(ctx, false)
			if err == nil && len(st.Nodes) == n && !slices.Contains(st.Owners, "") {
				// Every shard served, and each node at its fair share (no
				// shard moves during the run).
				ready, fair := 0, true
				for _, nd := range st.Nodes {
					ready += len(nd.Ready)
					fair = fair && len(nd.Shards) <= (len(st.Owners)+n-1)/n
				}
				if ready == len(st.Owners) && fair {
					break
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Counted from here: the start-up and the shards' claims are not
		// a check's (defining the watches in the cluster is counted).
		begin = time.Now()
		for _, p := range procs {
			startup += p.cpu()
		}
		if err := conn.AddWatches(ctx, ws); err != nil {
			return 0, 0, err
		}
		if define {
			settle(procs) // the views hold the definitions
			wall = time.Since(begin)
			break
		}
		stored := func(versions int) {
			for {
				st, err := conn.Status(ctx, false)
				if err == nil && st.Versions >= uint64(versions) && st.Queued == 0 && st.Running == 0 {
					lag := uint64(0)
					for _, nd := range st.Nodes {
						lag += nd.Lag
					}
					if lag == 0 {
						break
					}
				}
				time.Sleep(200 * time.Millisecond)
			}
			time.Sleep(time.Second)
		}
		stored(pages)
		if second {
			secondPass(farm, procs, &cpu, &wall)
			stored(pages + (pages+9)/10)
			finishPass(procs, &cpu, &wall)
		}
		if st, err := conn.Status(ctx, true); err == nil {
			var checks, busy, retried int64
			for _, nd := range st.Nodes {
				checks, busy, retried = checks+nd.Checks, busy+nd.Busy, retried+nd.Retried
			}
			fmt.Printf("  %s: %d checks run, %d put back for a busy host, %d for an unavailable stream\n", mode, checks, busy, retried)
			for _, ss := range st.Streams {
				if ss.Name == "CD_VERSIONS" {
					fmt.Printf("  %s: versions stream %d messages, %.1f MB (%.1f KB a version, each server)\n",
						mode, ss.Messages, float64(ss.Bytes)/1e6, float64(ss.Bytes)/1e3/float64(max(ss.Messages, 1)))
				}
			}
		}
	}
	if !second && !define {
		wall = time.Since(begin)
	}
	fmt.Printf("  %s: data directories %.1f MB (stores and NATS files together)\n", mode, float64(dirSize(root))/1e6)
	var peakMB, faults int64
	for _, p := range procs {
		used := p.stop()
		if !second {
			cpu += used
		}
		if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peakMB, faults = max(peakMB, ru.Maxrss>>10), faults+ru.Minflt
		}
	}
	// A first touch of a page the runtime gave back to the kernel is a
	// fault; on a virtual machine each may cost several microseconds.
	fmt.Printf("  %s: peak RSS %d MB (largest process), %d page faults (all processes, start-up included)\n", mode, peakMB, faults)
	if !second {
		cpu -= startup
		fmt.Printf("  %s: start-up %.2f CPU-s, not counted\n", mode, startup.Seconds())
	}
	want := int64(pages)
	if define {
		want = 0
	}
	if second {
		want += int64(pages+9) / 10
	}
	if total, full, notModified := farm.Requests(); full < want {
		return cpu, wall, fmt.Errorf("%s: the farm answered %d pages in full, want %d", mode, full, want)
	} else if full > want {
		fmt.Printf("  %s: %d pages fetched in full more than needed (%d requests, %d answered 304)\n", mode, full-want, total, notModified)
	}
	return cpu, wall, nil
}

// secondPass waits for the processes to finish the first pass's work
// (index batches and merges, seconds after the last version), notes the
// CPU they used (the second pass is counted from here) and changes a
// tenth of the pages.
func secondPass(farm *crawltest.Farm, procs []*process, cpu, wall *time.Duration) {
	settle(procs)
	*cpu, *wall = 0, time.Duration(time.Now().UnixNano())
	for _, p := range procs {
		*cpu -= p.cpu()
	}
	for i, p := range farm.Pages {
		if i%10 == 0 {
			p.Touch()
		}
	}
	// Until the first check of the second pass: the idle wait.
	for {
		if total, _, _ := farm.Requests(); total > int64(len(farm.Pages)) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	idle := *cpu
	for _, p := range procs {
		idle += p.cpu()
	}
	fmt.Printf("  CPU while idle until the second pass (counted in it): %.2f s\n", idle.Seconds())
}

// settle waits until the processes are idle: a second in which they used
// no more than 20 ms of CPU each (30 s at most).
func settle(procs []*process) {
	used := func() (d time.Duration) {
		for _, p := range procs {
			d += p.cpu()
		}
		return d
	}
	for end, last := time.Now().Add(30*time.Second), used(); time.Now().Before(end); {
		time.Sleep(time.Second)
		now := used()
		if now-last <= 20*time.Millisecond*time.Duration(len(procs)) {
			break
		}
		last = now
	}
}

// finishPass ends the second pass's count.
func finishPass(procs []*process, cpu, wall *time.Duration) {
	for _, p := range procs {
		*cpu += p.cpu()
	}
	*wall = time.Duration(time.Now().UnixNano()) - *wall
}
