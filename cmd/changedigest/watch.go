package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/prefault"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
	"github.com/changedigest/changedigest/server"
)

func init() {
	commands["watch"] = command{summary: "add, list, filter or remove watched pages and feeds (watch add|list|filter|rm)", run: runWatch}
	commands["check"] = command{summary: "check watches once now: check [ID…|--all]", run: runCheck}
}

func runWatch(ctx context.Context, e *env) error {
	if len(e.args) == 0 {
		return usagef("want a sub-command: watch add URL | watch list | watch filter ID|URL | watch rm ID|URL")
	}
	sub, rest := e.args[0], &env{args: e.args[1:], stdin: e.stdin, stdout: e.stdout, stderr: e.stderr, global: e.global}
	if subcommandHelp(e, sub, `usage: changedigest watch SUB-COMMAND …
  add URL…        watch pages or feeds
  list            list the watches (--tag T, --json)
  filter ID|URL   what of a watch's changes is told (--ignore, --trigger, --types, …)
  rm ID|URL…      stop watching
'changedigest watch SUB-COMMAND -h' lists a sub-command's flags.`) {
		return nil
	}
	switch sub {
	case "add":
		return runWatchAdd(ctx, rest)
	case "list", "ls":
		return runWatchList(ctx, rest)
	case "rm", "remove":
		return runWatchRm(ctx, rest)
	case "filter":
		return runWatchFilter(ctx, rest)
	}
	return usagef("unknown sub-command %q: want add, list, filter or rm", sub)
}

func runWatchAdd(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "watch add", "URL [--zone SEL] [--browser [--wait-for SEL] [--step 'click SEL']…] [--header 'K: V']… [--cookie k=v]… [--basic-auth USER[:PASS]] [--method POST --body B] [--category news|personal|academic | --every 30m] [--tag T]…")
	sf.register(fs)
	user := fs.String("user", "", "the user the watch belongs to")
	zone := fs.String("zone", "", "watch only this part of the page: a CSS selector or XPath (xpath:EXPR, or starting with /); of a JSON document also a JSON path ($.a[0]) or a jq program (jq:.items[] | {name, price})")
	var rf requestFlags
	rf.register(fs)
	inBrowser := fs.Bool("browser", false, "render the page in headless Chromium (for pages built by JavaScript)")
	waitFor := fs.String("wait-for", "", "with --browser: CSS selector the rendered page must show before it is read")
	category := fs.String("category", "", "news (1 h), personal (24 h) or academic (48 h): the first check interval")
	every := fs.String("every", "", "check at this interval (e.g. 30m, 2h, 1d) instead of by category and change rate")
	title := fs.String("title", "", "a name for the watch (default: the page title)")
	var tags, steps multiFlag
	fs.Var(&tags, "tag", "a tag (repeat for more)")
	var ff filterFlags
	ff.register(fs)
	fs.Var(&steps, "step", "with --browser: a step before the page is read: 'click SEL', 'type SEL TEXT' or 'wait SEL' (repeat, in order)")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef("watch add takes one URL, got %d arguments", len(args))
	}
	if *category != "" && *every != "" {
		return usagef("give --category or --every, not both")
	}
	if *waitFor != "" && !*inBrowser {
		return usagef("--wait-for needs --browser")
	}
	if len(steps) > 0 && !*inBrowser {
		return usagef("--step needs --browser")
	}
	w := &changedigest.Watch{URL: args[0], Zone: *zone, Category: changedigest.Category(*category), Tags: tags, Title: *title, WaitFor: *waitFor}
	if *inBrowser {
		w.Render = changedigest.RenderBrowser
	}
	for i, line := range steps {
		s, err := changedigest.ParseStep(line)
		if err != nil {
			return changedigest.Errorf(changedigest.EINVALID, "--step %d (%q): %s", i+1, line, changedigest.ErrorMessage(err))
		}
		w.Steps = append(w.Steps, s)
	}
	if *every != "" {
		if w.Interval, err = server.ParseInterval(*every); err != nil {
			return err
		}
	}
	ff.apply(fs, w)
	if w.Request, err = rf.options(e); err != nil {
		return err
	}
	if err := server.CheckWatch(w); err != nil {
		return err
	}
	if err := w.Request.Seal(sf.secrets()); err != nil {
		return err
	}
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	w.UserID = u.ID
	if err := store.CreateWatch(ctx, w); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "watch %d: %s (%s)\n", w.ID, w.URL, intervalText(w))
	return nil
}

// requestFlags are the flags of a watch's request options.
type requestFlags struct {
	headers, cookies   multiFlag
	method, body, auth string
}

func (rf *requestFlags) register(fs *flag.FlagSet) {
	fs.Var(&rf.headers, "header", "a request header 'Name: value' (repeat for more); credential headers are stored encrypted")
	fs.Var(&rf.cookies, "cookie", "a cookie 'name=value' sent to the page's host (repeat for more); stored encrypted")
	fs.StringVar(&rf.method, "method", "", "GET (the default) or POST")
	fs.StringVar(&rf.body, "body", "", "with --method POST: the body (a form, unless a Content-Type header says otherwise); @FILE reads it from FILE")
	fs.StringVar(&rf.auth, "basic-auth", "", "HTTP basic auth USER:PASSWORD, or USER alone to read the password from standard input; stored encrypted")
}

// options reads the flags into request options (nil when none is set).
// Errors: EINVALID naming the flag.
func (rf *requestFlags) options(e *env) (*changedigest.RequestOptions, error) {
	o := &changedigest.RequestOptions{Method: rf.method, Body: rf.body}
	if name, ok := strings.CutPrefix(rf.body, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, changedigest.Errorf(changedigest.EINVALID, "--body: %v", err)
		}
		o.Body = string(b)
	}
	for _, l := range rf.headers {
		h, err := changedigest.ParseHeaderLine(l)
		if err != nil {
			return nil, changedigest.Errorf(changedigest.EINVALID, "--header: %s", changedigest.ErrorMessage(err))
		}
		o.Headers = append(o.Headers, h)
	}
	for _, l := range rf.cookies {
		c, err := changedigest.ParseCookieLine(l)
		if err != nil {
			return nil, changedigest.Errorf(changedigest.EINVALID, "--cookie: %s", changedigest.ErrorMessage(err))
		}
		o.Cookies = append(o.Cookies, c)
	}
	if rf.auth != "" {
		user, pass, ok := strings.Cut(rf.auth, ":")
		if !ok {
			line, err := readLine(e.stdin)
			if err != nil {
				return nil, changedigest.Errorf(changedigest.EINVALID, "--basic-auth %s: give the password on standard input (%v)", user, err)
			}
			pass = line
		}
		o.BasicAuth = &changedigest.BasicAuth{User: user, Password: changedigest.Secret{Plain: pass}}
	}
	if o.IsEmpty() {
		return nil, nil
	}
	return o, nil
}

// readLine reads the first line of r, without its line ending.
func readLine(r io.Reader) (string, error) {
	if r == nil {
		return "", io.EOF
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// filterFlags are the flags of a watch's filters (changedigest.Notable).
type filterFlags struct {
	ignore, trigger multiFlag
	minSig          float64
	types           string
	onlyInterests   bool
	showNoise       bool
	valueSelector   string
	when            string
}

func (f *filterFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.ignore, "ignore", "do not tell changes that only concern this text: plain, or /regexp/ (repeat for more)")
	fs.Var(&f.trigger, "trigger", "tell only changes in which this text appears or disappears: plain, or /regexp/ (repeat for more)")
	fs.Float64Var(&f.minSig, "min-significance", 0, "do not tell versions whose significance (0..1) is below this")
	fs.StringVar(&f.types, "types", "", "change types to tell, comma-separated (content,structural,cosmetic,behavioural; empty: all)")
	fs.BoolVar(&f.onlyInterests, "only-interests", false, "tell only changes that match my interests")
	fs.BoolVar(&f.showNoise, "show-noise", false, "tell noise changes too")
	fs.StringVar(&f.valueSelector, "value-selector", "", "read a value (a price, an availability) from each version: a CSS selector, an XPath expression (xpath:EXPR or /…) or a JSON path ($.price); \"\" with --when: the page's ld+json offer")
	fs.StringVar(&f.when, "when", "", "tell a version only when its value meets this: 'below 20', 'above 100', 'drop 10%', 'rise 10%', 'change 5%', 'in stock', 'out of stock', 'appears TEXT', 'disappears TEXT'; \"\" to tell every version")
}

// apply sets the filters whose flags were given; Validate checks them.
func (f *filterFlags) apply(fs *flag.FlagSet, w *changedigest.Watch) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "ignore":
			w.IgnoreText = f.ignore
		case "trigger":
			w.TriggerText = f.trigger
		case "min-significance":
			w.MinSignificance = f.minSig
		case "types":
			w.NotifyTypes = nil
			for _, t := range strings.Split(f.types, ",") {
				if t = strings.TrimSpace(t); t != "" {
					w.NotifyTypes = append(w.NotifyTypes, changedigest.ChangeType(t))
				}
			}
		case "only-interests":
			w.OnlyInterests = f.onlyInterests
		case "show-noise":
			w.ShowNoise = f.showNoise
		case "value-selector":
			w.ValueSelector = f.valueSelector
		case "when":
			w.When = f.when
		}
	})
}

// filterText describes a watch's filters in one line.
func filterText(w *changedigest.Watch) string {
	var parts []string
	if w.Zone != "" {
		parts = append(parts, fmt.Sprintf("zone %q", w.Zone))
	}
	if len(w.NotifyTypes) > 0 {
		ts := make([]string, len(w.NotifyTypes))
		for i, t := range w.NotifyTypes {
			ts[i] = string(t)
		}
		parts = append(parts, "types "+strings.Join(ts, ","))
	}
	for _, t := range w.IgnoreText {
		parts = append(parts, fmt.Sprintf("ignore %q", t))
	}
	for _, t := range w.TriggerText {
		parts = append(parts, fmt.Sprintf("trigger %q", t))
	}
	if w.MinSignificance > 0 {
		parts = append(parts, fmt.Sprintf("min significance %g", w.MinSignificance))
	}
	if w.OnlyInterests {
		parts = append(parts, "only my interests")
	}
	if w.ValueSelector != "" {
		parts = append(parts, fmt.Sprintf("value %q", w.ValueSelector))
	}
	if w.When != "" {
		if w.ValueSelector == "" {
			parts = append(parts, "value: the page's offer")
		}
		parts = append(parts, fmt.Sprintf("when %q", w.When))
	}
	if w.ShowNoise {
		parts = append(parts, "noise shown")
	} else {
		parts = append(parts, "noise left out")
	}
	return strings.Join(parts, "; ")
}

// runWatchFilter sets the filters of a watch: the flags given change, the
// others stay.
func runWatchFilter(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "watch filter", "ID|URL [--zone Z] [--ignore T]… [--trigger T]… [--min-significance F] [--types T,…] [--only-interests] [--show-noise] [--value-selector SEL] [--when COND]")
	sf.register(fs)
	user := fs.String("user", "", "whose watch")
	zone := fs.String("zone", "", "watch only this part: a CSS selector, a JSON path ($.a[0]) or a jq program (jq:.items[] | {name, price}); \"\" for the whole page")
	var ff filterFlags
	ff.register(fs)
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef("watch filter takes one watch id or URL, got %d arguments", len(args))
	}
	if err := segmenter.CheckZone(*zone); err != nil {
		return err
	}
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := findWatch(ctx, store, u, args[0])
	if err != nil {
		return err
	}
	if err := segmenter.CheckValueSelector(ff.valueSelector); err != nil {
		return err
	}
	w, err = store.SetFilters(ctx, u.ID, w.ID, func(x *changedigest.Watch) {
		ff.apply(fs, x)
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "zone" {
				x.Zone = strings.TrimSpace(*zone)
			}
		})
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "watch %d: %s\n", w.ID, filterText(w))
	return nil
}

func intervalText(w *changedigest.Watch) string {
	if w.Interval > 0 {
		return "every " + w.Interval.String()
	}
	return string(w.Category) + ", first check interval " + w.Category.Interval().String()
}

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runWatchList(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "watch list", "[--tag T] [--json]")
	sf.register(fs)
	user := fs.String("user", "", "whose watches")
	tag := fs.String("tag", "", "only watches with this tag")
	asJSON := fs.Bool("json", false, "print the watches as a JSON array, as the API gives them")
	if _, err := e.parse(fs, e.args); err != nil {
		return err
	}
	sf.mayOpenView = true // reads only
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	ws, err := store.Watches(ctx, u.ID, *tag)
	if err != nil {
		return err
	}
	if *asJSON {
		if ws == nil {
			ws = []changedigest.Watch{}
		}
		for i := range ws {
			ws[i].Request = ws[i].Request.Hinted() // secrets as hints only
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ws)
	}
	if len(ws) == 0 {
		fmt.Fprintf(e.stdout, "no watches yet for user %q: add one with 'changedigest watch add URL', or name another user with --user NAME\n", u.Name)
		return nil
	}
	fmt.Fprintf(e.stdout, "watches of user %q\n", u.Name)
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tKIND\tTAGS\tLAST CHECK\tLAST CHANGE\tNEXT CHECK\tERROR")
	for _, w := range ws {
		kind := orDash(string(w.Kind))
		if w.Render == changedigest.RenderBrowser {
			kind += " (browser)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", w.ID, w.URL, kind, orDash(strings.Join(w.Tags, ",")),
			when(w.LastChecked()), when(w.LastChange), when(w.NextCheck), orDash(oneLine(w.LastError, 60)))
	}
	return tw.Flush()
}

func runWatchRm(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "watch rm", "ID|URL…")
	sf.register(fs)
	user := fs.String("user", "", "whose watch")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("watch rm takes watch ids or URLs")
	}
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	for _, a := range args {
		w, err := findWatch(ctx, store, u, a)
		if err != nil {
			return err
		}
		if err := store.DeleteWatch(ctx, u.ID, w.ID); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed watch %d (%s) and its history\n", w.ID, w.URL)
	}
	return nil
}

// watchStore is where findWatch finds watches.
type watchStore interface {
	Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error)
	Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error)
}

// findWatch finds a user's watch by id or URL.
func findWatch(ctx context.Context, store watchStore, u *changedigest.User, arg string) (*changedigest.Watch, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil && id > 0 {
		return store.Watch(ctx, u.ID, id)
	}
	ws, err := store.Watches(ctx, u.ID, "")
	if err != nil {
		return nil, err
	}
	for i := range ws {
		if ws[i].URL == arg {
			return &ws[i], nil
		}
	}
	return nil, changedigest.Errorf(changedigest.ENOTFOUND, "no watch of %s has the URL or id %q (see 'changedigest watch list')", u.Name, arg)
}

// likelyNewVersions counts the watches whose check is likely to bring a
// new version to compare and store (the heavy part of a check): those
// never checked, and those whose last check found a change. A page that
// has not changed lately is most often answered with "not modified".
func likelyNewVersions(ws []*changedigest.Watch) int {
	n := 0
	for _, w := range ws {
		if k := len(w.Samples); k == 0 || w.Samples[k-1].Changed {
			n++
		}
	}
	return n
}

// checkProcs is how many processors a check of ws with this many workers
// can keep busy: one per host at most, since a host's checks run one
// after the other (the scheduler's politeness), and one per worker. A
// short check runs with no more (see runCheck): an idle processor
// woken for each hand-off between goroutines costs a thread wake-up and
// sleep, which on a virtual machine are traps into the hypervisor (a
// check of 60 pages of one host used 12% less CPU on one processor than
// on two).
func checkProcs(ws []*changedigest.Watch, workers int) int {
	hosts := map[string]bool{}
	for _, w := range ws {
		hosts[crawl.HostKey(w.URL)] = true
	}
	return max(1, min(len(hosts), workers))
}

func runCheck(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "check", "[ID|URL…] [--all]")
	sf.register(fs)
	sf.registerBrowser(fs)
	user := fs.String("user", "", "whose watches")
	all := fs.Bool("all", false, "check every watch of the user")
	workers := fs.Int("workers", 8, "checks running at once")
	hostGap, gapFactor := time.Second, crawl.DefaultGapFactor
	registerGapFlags(fs, &hostGap, &gapFactor)
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if err := checkGapFlags(hostGap, gapFactor); err != nil {
		return err
	}
	if *all == (len(args) > 0) {
		return usagef("give watch ids or URLs, or --all")
	}
	sf.commitDelay = checkCommitDelay
	if c := adminClient(ctx, sf.data); c != nil && !cluster.IsView(sf.data) {
		// A running service checks them, as its "check now" does.
		r := remoteStore{c}
		defer r.Close()
		u, err := cliUser(ctx, r, *user, e)
		if err != nil {
			return err
		}
		ws, err := checkList(ctx, r, u, *all, args)
		if err != nil || len(ws) == 0 {
			return noneToCheck(e, err)
		}
		sum, err := remoteCheck(ctx, e, r, ws)
		if err != nil {
			return err
		}
		return checkSummary(e, sum)
	}
	store, u, err := sf.openAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	ws, err := checkList(ctx, store, u, *all, args)
	if err != nil || len(ws) == 0 {
		return noneToCheck(e, err)
	}
	if shortLived {

		if _, set := os.LookupEnv("GOMAXPROCS"); !set {
			runtime.GOMAXPROCS(min(runtime.GOMAXPROCS(0), checkProcs(ws, *workers)))
		}
		if likelyNewVersions(ws) >= hugeHeapChecks && prefault.SmallFaultsDear() {
			hugeHeap()
		}
	}
	_, pipeline, pool := sf.pipeline(store)
	defer pool.Close()
	saves := &scheduleSaves{Store: store}
	sched := crawl.NewScheduler(saves, pipeline)
	sched.Workers = max(*workers, 1)
	sched.HostGap, sched.GapFactor = hostGap, gapFactor
	sched.Logger = slog.New(slog.DiscardHandler) // each check prints its own line
	bar := newProgress(e.stderr, len(ws))
	sum, err := sched.CheckNow(ctx, func(r crawl.Report) {
		bar.step()
		errText := ""
		if r.Err != nil {
			errText = plainError(r.Err)
		}
		bar.println(e.stdout, checkLineText(r.Watch.ID, r.Watch.URL, r.Outcome.Result.String(), errText))
	}, ws...)
	bar.done()
	if serr := saves.flush(context.WithoutCancel(ctx)); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return err
	}
	return checkSummary(e, sum)
}

// checkList is the watches check is to check: all the user's, or those
// named. None is not an error: it says so.
func checkList(ctx context.Context, store watchStore, u *changedigest.User, all bool, args []string) ([]*changedigest.Watch, error) {
	var ws []*changedigest.Watch
	if all {
		list, err := store.Watches(ctx, u.ID, "")
		if err != nil {
			return nil, err
		}
		for i := range list {
			ws = append(ws, &list[i])
		}
	} else {
		for _, a := range args {
			w, err := findWatch(ctx, store, u, a)
			if err != nil {
				return nil, err
			}
			ws = append(ws, w)
		}
	}
	return ws, nil
}

// noneToCheck says there is nothing to check, unless err says why.
func noneToCheck(e *env, err error) error {
	if err == nil {
		fmt.Fprintln(e.stdout, "no watches to check")
	}
	return err
}

// checkSummary prints check's last line; failed checks make its error.
func checkSummary(e *env, sum crawl.Summary) error {
	fmt.Fprintln(e.stdout, checkSummaryText(sum))
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d checks failed", sum.Failed, sum.Checked)
	}
	return nil
}

// scheduleSaves holds the schedule saves of a check run and writes them
// in one transaction every scheduleSaveBatch checks and at the end, rather
// than one commit (two fsyncs) per check. Versions are committed as they
// are found; a run killed midway loses only schedule state (next check
// times, validators), so those watches are fetched again in full.
type scheduleSaves struct {
	*pet.Store
	mu      sync.Mutex
	pending []*changedigest.Watch
}

const scheduleSaveBatch = 64

// checkCommitDelay is how long a version found by check waits for others
// to share its commit (pet.Store.CommitDelay).
const checkCommitDelay = 100 * time.Millisecond

func (s *scheduleSaves) SaveSchedule(ctx context.Context, w *changedigest.Watch) error {
	c := *w
	c.Samples, c.Tags = slices.Clone(w.Samples), slices.Clone(w.Tags)
	s.mu.Lock()
	s.pending = append(s.pending, &c)
	full := len(s.pending) >= scheduleSaveBatch
	s.mu.Unlock()
	if full {
		return s.flush(ctx)
	}
	return nil
}

func (s *scheduleSaves) flush(ctx context.Context) error {
	s.mu.Lock()
	ws := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(ws) == 0 {
		return nil
	}
	if err := s.Store.SaveSchedules(ctx, ws); err != nil {
		return fmt.Errorf("saving the schedule of %d watches: %w", len(ws), err)
	}
	return nil
}

// progress draws a progress bar on a terminal, and nothing elsewhere.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	n     int
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, tty: isTerminal(w), total: total}
}

func (p *progress) step() { p.n++ }

// println prints a line above the bar.
func (p *progress) println(w io.Writer, line string) {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(w, line)
	if p.tty {
		const width = 30
		fill := width * p.n / max(p.total, 1)
		fmt.Fprintf(p.w, "[%s%s] %d/%d", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.n, p.total)
	}
}

func (p *progress) done() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
