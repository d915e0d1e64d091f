// Package browser renders pages in headless Chromium over the DevTools
// protocol (github.com/chromedp/chromedp, kept inside this package), for
// watches whose pages build their content with JavaScript.
//
// A Pool runs one Chromium process and at most Tabs pages at once, each in
// a fresh browser context (its own cookies, cache and storage) that is
// disposed after the page; the process is replaced after PagesPerBrowser
// pages or when it dies. Every request a page makes goes through a proxy
// of this package that dials with the crawler's guarded dialer, so the
// fetcher's address policy, a byte limit and the time limit hold for the
// document, subresources, redirects, WebSockets and service workers alike;
// downloads, pop-ups, permission prompts and non-HTTP URLs are refused.
package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// Errors of the package; Render wraps them with details.
var (
	// ErrNoChromium: no Chromium binary was found or it could not be run.
	ErrNoChromium = errors.New("browser: chromium not found")
	// ErrStart: Chromium did not start within StartTimeout.
	ErrStart = errors.New("browser: chromium did not start")
	// ErrTimeout: the page was not ready within its time limit.
	ErrTimeout = errors.New("browser: time limit reached")
	// ErrTooLarge: the page and its resources passed MaxBytes.
	ErrTooLarge = errors.New("browser: page too large")
	// ErrRefused: the document's address is not allowed (the guard's reason follows).
	ErrRefused = errors.New("browser: address refused")
	// ErrLoad: the document could not be loaded (network error, bad status).
	ErrLoad = errors.New("browser: page did not load")
	// ErrStep: a step or the wait-for selector failed.
	ErrStep = errors.New("browser: step failed")
	// ErrClosed: the pool is closed.
	ErrClosed = errors.New("browser: pool closed")
)

// Dialer opens a connection as the crawler's guarded fetcher does
// (crawl.Fetcher.DialContext).
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Defaults of the Pool knobs.
const (
	DefaultTabs            = 2
	DefaultPagesPerBrowser = 100
	DefaultTimeout         = 30 * time.Second
	DefaultStartTimeout    = 20 * time.Second
	DefaultMaxBytes        = 32 << 20
	DefaultMaxHTML         = 10 << 20
	DefaultWidth           = 1280
	DefaultHeight          = 800
	DefaultMaxShotHeight   = 8000
	DefaultMaxShotBytes    = 4 << 20
	DefaultIdleClose       = 5 * time.Minute
)

// Pool is a bounded pool of headless Chromium tabs. Set the knobs before
// the first Render; Render is safe for concurrent use. Close ends the
// browser process and removes its profile directory.
type Pool struct {
	// Exec is the Chromium binary; empty means the first of chromium,
	// chromium-browser, google-chrome and headless-shell on the PATH.
	Exec string
	// Dial connects for the pages' requests; it must apply the address
	// policy (nil: every request is refused).
	Dial Dialer
	// Tabs bounds the pages rendered at once.
	Tabs int
	// PagesPerBrowser is how many pages one Chromium process renders
	// before it is replaced (a long-lived browser grows).
	PagesPerBrowser int
	// Timeout is the default time limit of one page; StartTimeout of
	// starting Chromium.
	Timeout      time.Duration
	StartTimeout time.Duration
	// MaxBytes caps what one page may read over the network, all
	// requests together; MaxHTML the size of the rendered document.
	MaxBytes int64
	MaxHTML  int
	// Width and Height are the viewport; MaxShotHeight caps the height of
	// a full-page screenshot.
	Width, Height int
	MaxShotHeight int
	// MaxShotBytes caps a screenshot's PNG: a larger one is taken again
	// at a smaller scale, or left out.
	MaxShotBytes int
	// NoScreenshots skips the screenshots of watch checks (RenderWatch),
	// saving their CPU and storage.
	NoScreenshots bool
	// IdleClose stops the browser after this long without a page (0:
	// never); the next page starts a new one. An idle Chromium holds a
	// few hundred MB.
	IdleClose time.Duration
	// UserAgent, when set, replaces Chromium's.
	UserAgent string
	Logger    *slog.Logger

	initOnce sync.Once
	sem      chan struct{}
	proxies  chan *proxy
	deny     *proxy // the browser-wide proxy: refuses everything

	mu     sync.Mutex
	cur    *instance
	closed bool
	starts int
	wg     sync.WaitGroup
}

// NewPool returns a pool with the default knobs that dials with dial.
func NewPool(dial Dialer) *Pool {
	return &Pool{
		Dial: dial, Tabs: DefaultTabs, PagesPerBrowser: DefaultPagesPerBrowser,
		Timeout: DefaultTimeout, StartTimeout: DefaultStartTimeout,
		MaxBytes: DefaultMaxBytes, MaxHTML: DefaultMaxHTML,
		Width: DefaultWidth, Height: DefaultHeight, MaxShotHeight: DefaultMaxShotHeight,
		IdleClose: DefaultIdleClose,
	}
}

func (p *Pool) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

func (p *Pool) init() {
	p.initOnce.Do(func() {
		n := max(p.Tabs, 1)
		p.sem = make(chan struct{}, n)
		p.proxies = make(chan *proxy, n)
	})
}

// FindChromium returns the Chromium binary the pool would run: exec when
// given (a path or a name on the PATH), else the first known name on the
// PATH. Errors: ErrNoChromium.
func FindChromium(exe string) (string, error) {
	if exe != "" {
		path, err := exec.LookPath(exe)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v (install the chromium package or give its path)", ErrNoChromium, exe, err)
		}
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w on the PATH (install the chromium package, or give its path with --chromium)", ErrNoChromium)
}

// instance is one Chromium process.
type instance struct {
	ctx      context.Context // the browser's chromedp context
	cancel   context.CancelFunc
	dir      string
	pid      int
	pages    int // pages started on it
	used     int // releases, to tell an idle browser from a busy one
	active   int
	retired  bool
	closeErr error
}

// dead reports whether the browser process is gone.
func (in *instance) dead() bool { return in.ctx.Err() != nil }

// start runs a new Chromium process.
func (p *Pool) start(ctx context.Context) (*instance, error) {
	exe, err := FindChromium(p.Exec)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "changedigest-chromium-")
	if err != nil {
		return nil, fmt.Errorf("browser: profile directory: %w", err)
	}
	if p.deny == nil {
		if p.deny, err = newProxy(nil); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	w, h := cmpOr(p.Width, DefaultWidth), cmpOr(p.Height, DefaultHeight)
	startTimeout := cmpOr(p.StartTimeout, DefaultStartTimeout)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(w, h),
		// Nothing of Chromium's own may phone home (the network may be
		// closed, and it is not the page's traffic).
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions,AutofillServerCommunication,CertificateTransparencyComponentUpdater,DialMediaRouteProvider"),
		chromedp.Flag("disable-dev-shm-usage", true),
		// A page's scripts get a bounded heap: a runaway page fails, the
		// service does not.
		chromedp.Flag("js-flags", "--max-old-space-size=256"),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		// All traffic through a proxy, loopback included (<-loopback>
		// removes Chromium's implicit bypass); browser contexts get their
		// own proxy, this one refuses. No QUIC (UDP would skip the
		// proxy), no non-proxied WebRTC, no DNS of Chromium's own.
		chromedp.ProxyServer(p.deny.addr()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
		// Pop-ups and permission prompts are refused.
		chromedp.Flag("block-new-web-contents", true),
		chromedp.Flag("deny-permission-prompts", true),
		chromedp.Flag("disable-notifications", true),
		chromedp.WSURLReadTimeout(startTimeout),
		chromedp.CombinedOutput(io.Discard),
	}
	if p.UserAgent != "" {
		opts = append(opts, chromedp.UserAgent(p.UserAgent))
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(allocCtx)
	in := &instance{ctx: bctx, dir: dir}
	in.cancel = func() {
		bcancel()
		allocCancel()
		os.RemoveAll(dir)
	}
	done := make(chan error, 1)
	go func() { done <- chromedp.Run(bctx) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		err = fmt.Errorf("%w within %s", ErrStart, startTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		in.cancel()
		if !errors.Is(err, ErrStart) && ctx.Err() == nil {
			err = fmt.Errorf("%w: %s: %s", ErrStart, exe, strings.TrimSpace(oneLine(err.Error())))
		}
		return nil, err
	}
	if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		in.pid = c.Browser.Process().Pid
	}
	p.starts++
	p.logger().Info("chromium started", "exec", exe, "pid", in.pid)
	return in, nil
}

// acquire returns a live browser, starting one when there is none, the
// current one died or has rendered PagesPerBrowser pages.
func (p *Pool) acquire(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if in := p.cur; in != nil && (in.dead() || in.pages >= cmpOr(p.PagesPerBrowser, DefaultPagesPerBrowser)) {
		if in.dead() {
			p.logger().Warn("chromium exited; starting a new one", "pid", in.pid)
		}
		p.retire(in)
		p.cur = nil
	}
	if p.cur == nil {
		in, err := p.start(ctx)
		if err != nil {
			return nil, err
		}
		p.cur = in
	}
	p.cur.pages++
	p.cur.active++
	return p.cur, nil
}

// retire marks in for closing once its last page is done. p.mu is held.
func (p *Pool) retire(in *instance) {
	in.retired = true
	if in.active == 0 {
		p.shut(in)
	}
}

func (p *Pool) shut(in *instance) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		in.cancel()
	}()
}

func (p *Pool) release(in *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in.active--
	if in.retired && in.active == 0 {
		p.shut(in)
		return
	}
	if idle := p.IdleClose; idle > 0 && in.active == 0 && p.cur == in {
		in.used++
		used := in.used
		time.AfterFunc(idle, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			// Still the current browser, unused since this release.
			if p.cur == in && in.active == 0 && in.used == used {
				p.logger().Info("chromium idle; stopping it", "pid", in.pid, "idle", idle)
				p.cur = nil
				p.retire(in)
			}
		})
	}
}

// proxy takes a free tab proxy, making one when the pool has fewer than Tabs.
func (p *Pool) takeProxy() (*proxy, error) {
	select {
	case px := <-p.proxies:
		return px, nil
	default:
		return newProxy(p.Dial)
	}
}

// Close stops the browser and waits for it to exit. Renders in progress
// fail; later ones return ErrClosed.
func (p *Pool) Close() error {
	p.init()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.cur != nil {
		p.cur.retired = true
		p.shut(p.cur)
		p.cur = nil
	}
	p.mu.Unlock()
	p.wg.Wait()
	for {
		select {
		case px := <-p.proxies:
			px.close()
			continue
		default:
		}
		break
	}
	if p.deny != nil {
		p.deny.close()
	}
	return nil
}

// Stats are the pool's counters, for logs and benchmarks.
type Stats struct {
	Starts int // Chromium processes started
	PID    int // the current process, 0 when none
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Starts: p.starts}
	if p.cur != nil && !p.cur.dead() {
		s.PID = p.cur.pid
	}
	return s
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
