// Command feedbench measures checks of big feeds through a real `serve`
// process: a feed of tens of thousands of items (generated, served on
// loopback) checked through the API (POST /api/v1/watches/{id}/check) as
// a user's "check now" button does, with the index, the version stream
// and the store of a plain `serve`.
//
//	go build -o /tmp/changedigest ./cmd/changedigest
//	go run ./cmd/feedbench -bin /tmp/changedigest
//
// -write DIR only writes the two versions of the first feed, for
// `changedigest diff` or a loopback server.
//
// It runs four phases: the first check of one feed, a second check of it
// after items were added, removed and edited, then the first and second
// checks of four other such feeds at once. For each it prints the time
// the API took to answer, the serve process's CPU until it is idle again
// (the index's batch included), and its peak resident memory during the
// phase against its resident memory before it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
)

func main() {
	bin := flag.String("bin", "", "the changedigest binary")
	items := flag.Int("items", 40000, "items of each feed")
	atom := flag.Bool("atom", false, "Atom feeds (default RSS 2.0)")
	noIDs := flag.Bool("noids", false, "items without GUIDs or links")
	feeds := flag.Int("feeds", 4, "feeds checked at once in the last phases (0: skip them)")
	added := flag.Int("added", 50, "items added on top in the second version")
	removed := flag.Int("removed", 50, "oldest items dropped in the second version")
	edited := flag.Int("edited", 50, "items whose text changes in the second version")
	keep := flag.String("keep", "", "keep the store in this new `directory` (default: a temporary one, removed)")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long to wait for one API answer")
	write := flag.String("write", "", "only write the two versions of the feed to `DIR`/1.xml and DIR/2.xml")
	flag.Parse()
	cfg := crawltest.BigFeedConfig{Items: *items, Atom: *atom, NoIDs: *noIDs,
		Added: *added, Removed: *removed, Edited: *edited, Seed: 1}
	if *write != "" {
		v1, v2 := crawltest.BigFeed(cfg)
		for name, items := range map[string][]crawltest.BigFeedItem{"1.xml": v1, "2.xml": v2} {
			if err := os.WriteFile(filepath.Join(*write, name), crawltest.BigFeedBody(cfg, items), 0o644); err != nil {
				fail(err)
			}
		}
		return
	}
	if *bin == "" {
		fail(errors.New("-bin is required"))
	}
	if err := run(*bin, cfg, *feeds, *keep, *timeout); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "feedbench:", err)
	os.Exit(1)
}

// feedServer serves a generated feed in its first or its second version.
type feedServer struct {
	v1, v2 []byte
	second atomic.Bool
}

func (f *feedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := f.v1
	if f.second.Load() {
		body = f.v2
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Write(body)
}

func run(bin string, cfg crawltest.BigFeedConfig, nfeeds int, keep string, timeout time.Duration) error {
	dir := keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "feedbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	// Each feed on a server of its own: the checks of four publishers'
	// feeds, not four requests to one host, which go one at a time.
	var feeds []*feedServer
	var urls []string
	for i := range 1 + nfeeds {
		c := cfg
		c.Seed += uint64(i)
		a, b := crawltest.BigFeed(c)
		fs := &feedServer{v1: crawltest.BigFeedBody(c, a), v2: crawltest.BigFeedBody(c, b)}
		srv := httptest.NewServer(fs)
		defer srv.Close()
		feeds, urls = append(feeds, fs), append(urls, srv.URL+"/feed.xml")
	}
	fmt.Printf("feeds: %d items, %.1f MB each (%s)\n", cfg.Items, float64(len(feeds[0].v1))/1e6,
		map[bool]string{false: "RSS 2.0", true: "Atom"}[cfg.Atom])

	token, ids, err := prepare(dir, urls)
	if err != nil {
		return err
	}
	p, err := serve(bin, dir)
	if err != nil {
		return err
	}
	defer p.stop()
	client := &http.Client{Timeout: timeout}
	check := func(ids ...int64) phase {
		return p.measure(func() []string {
			out := make([]string, len(ids))
			var wg sync.WaitGroup
			for k, id := range ids {
				wg.Go(func() { out[k] = apiCheck(client, p.base, token, id) })
			}
			wg.Wait()
			return out
		})
	}
	report := func(name string, ph phase) {
		fmt.Printf("%-28s answered in %6.2f s  CPU %6.2f s  peak RSS %4.0f MB (+%3.0f MB over %3.0f MB)  %s\n",
			name, ph.wall.Seconds(), ph.cpu.Seconds(), ph.peak, ph.peak-ph.before, ph.before, strings.Join(ph.results, ", "))
	}
	report("first check, one feed", check(ids[0]))
	feeds[0].second.Store(true)
	report("second check, one feed", check(ids[0]))
	if nfeeds > 0 {
		report(fmt.Sprintf("first check, %d at once", nfeeds), check(ids[1:]...))
		for _, f := range feeds[1:] {
			f.second.Store(true)
		}
		report(fmt.Sprintf("second check, %d at once", nfeeds), check(ids[1:]...))
	}
	if w, err := apiWatch(client, p.base, token, ids[0]); err == nil {
		fmt.Println("watch:", w)
	}
	cpu := p.stop()
	fmt.Printf("serve: %.2f CPU-s in all, peak RSS %.0f MB\n", cpu.Seconds(), p.hwm)
	return nil
}

// prepare creates a user, an API token and one watch per feed, not due
// for a day (the API checks them), in a new store.
func prepare(dir string, urls []string) (string, []int64, error) {
	ctx := context.Background()
	st := pet.New(dir)
	if err := st.Open(ctx); err != nil {
		return "", nil, err
	}
	defer st.Close()
	u := &changedigest.User{Name: "bench", Admin: true, DigestHour: -1}
	if err := st.CreateUser(ctx, u); err != nil {
		return "", nil, err
	}
	tok, _, err := st.CreateToken(ctx, u.ID, "feedbench")
	if err != nil {
		return "", nil, err
	}
	var ids []int64
	for _, url := range urls {
		w := &changedigest.Watch{UserID: u.ID, URL: url, NextCheck: time.Now().Add(24 * time.Hour)}
		if err := st.CreateWatch(ctx, w); err != nil {
			return "", nil, err
		}
		ids = append(ids, w.ID)
	}
	return tok, ids, nil
}

// apiCheck asks the service to check a watch now and returns the result,
// or the HTTP status and error message.
func apiCheck(c *http.Client, base, token string, id int64) string {
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/watches/%d/check", base, id), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Result string `json:"result"`
		Error  any    `json:"error"`
	}
	json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.Join(strings.Fields(string(b)), " "))
	}
	if out.Error != nil {
		return fmt.Sprintf("%s (%v)", out.Result, out.Error)
	}
	return out.Result
}

// apiWatch returns the watch as the API shows it, without its schedule
// samples.
func apiWatch(c *http.Client, base, token string, id int64) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/watches/%d", base, id), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var w map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
		return "", err
	}
	keep := map[string]any{}
	for _, k := range []string{"kind", "title", "last_error", "feed_items", "feed_items_kept"} {
		if v, ok := w[k]; ok {
			keep[k] = v
		}
	}
	b, _ := json.Marshal(keep)
	return string(b), nil
}

// process is the serve process.
type process struct {
	cmd  *exec.Cmd
	base string
	hwm  float64 // peak RSS over the whole run, MB
	once sync.Once
	cpuT time.Duration
}

func serve(bin, dir string) (*process, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--data", dir, "--addr", addr, "--allow-private", "--log-level", "warn")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	running := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "changedigest is running") {
				close(running)
			}
		}
	}()
	p := &process{cmd: cmd, base: "http://" + addr}
	select {
	case <-running:
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, errors.New("serve did not start within a minute")
	}
	return p, nil
}

// phase is what one phase measured.
type phase struct {
	wall         time.Duration
	cpu          time.Duration
	before, peak float64 // resident memory before and at the peak, MB
	results      []string
}

// measure runs fn, the phase's requests, and waits until the process is
// idle (no CPU used for two seconds) to count what it did after answering.
func (p *process) measure(fn func() []string) phase {
	p.settle()
	pid := p.cmd.Process.Pid
	// Reset the peak resident size (VmHWM) to the current one.
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	ph := phase{before: status(pid, "VmRSS:")}
	c0 := p.cpu()
	start := time.Now()
	ph.results = fn()
	ph.wall = time.Since(start)
	p.settle()
	ph.cpu = p.cpu() - c0
	ph.peak = status(pid, "VmHWM:")
	p.hwm = max(p.hwm, ph.peak)
	return ph
}

// settle waits until the process used no CPU for two seconds.
func (p *process) settle() {
	last := p.cpu()
	for {
		time.Sleep(2 * time.Second)
		c := p.cpu()
		if c-last <= 20*time.Millisecond {
			return
		}
		last = c
	}
}

// cpu is the CPU the process used so far.
func (p *process) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks (USER_HZ 100)
}

// stop ends the process (once) and returns the CPU it used.
func (p *process) stop() time.Duration {
	p.once.Do(func() {
		p.hwm = max(p.hwm, status(p.cmd.Process.Pid, "VmHWM:"))
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
		st := p.cmd.ProcessState
		p.cpuT = st.UserTime() + st.SystemTime()
	})
	return p.cpuT
}

// status reads a memory line of /proc/PID/status, in MB.
func status(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
