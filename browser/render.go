package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/andybalholm/cascadia"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
)

// Request is one page to render.
type Request struct {
	URL string
	// WaitFor is a CSS selector that must match before the page is read.
	WaitFor string
	// Timeout bounds the whole page (0: the pool's Timeout).
	Timeout time.Duration
	// Steps run after the page settled and before it is read.
	Steps []Step
	// Screenshot asks for a full-page PNG screenshot; SkipShot, when set,
	// is asked first with the rendered document, and true skips it (the
	// document is already stored).
	Screenshot bool
	SkipShot   func(html []byte) bool
}

// WatchRequest is the request for a check of w: with a screenshot and
// the watch's steps.
func WatchRequest(w *changedigest.Watch) Request {
	req := Request{URL: w.URL, WaitFor: w.WaitFor, Screenshot: true}
	for _, s := range w.Steps {
		req.Steps = append(req.Steps, Step{Action: s.Action, Selector: s.Selector, Text: s.Value})
	}
	return req
}

// RenderWatch renders w's page for the check pipeline (it is a
// crawl.Renderer): the response holds the rendered document in UTF-8.
// Errors: those of Render.
func (p *Pool) RenderWatch(ctx context.Context, w *changedigest.Watch, known func(raw []byte) bool) (*crawl.Response, error) {
	req := WatchRequest(w)
	req.Screenshot = !p.NoScreenshots
	req.SkipShot = known
	pg, err := p.Render(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &crawl.Response{
		Status: pg.Status, Raw: pg.HTML, Body: pg.HTML,
		ContentType: "text/html; charset=utf-8", Charset: "utf-8",
		FinalURL: pg.URL, Duration: pg.Duration,
	}
	if len(pg.Screenshot) > 0 {
		res.Screenshot = &changedigest.Screenshot{PNG: pg.Screenshot, Width: pg.ShotWidth, Height: pg.ShotHeight, Boxes: pg.Boxes}
	}
	return res, nil
}

// Step is one action on a rendered page before it is read, for cookie
// walls and "load more" buttons.
type Step struct {
	// Action is click, type (Text into the field), wait (for the element
	// to appear) or scroll (the element into view).
	Action   string
	Selector string
	Text     string
	// Timeout bounds the step (0: 10 s).
	Timeout time.Duration
}

// Page is a rendered page.
type Page struct {
	// URL is the address of the document after redirects.
	URL    string
	Status int
	// HTML is the serialised DOM after scripts ran, in UTF-8.
	HTML  []byte
	Title string
	// Screenshot is a PNG of the whole page (up to MaxShotHeight), when
	// asked, ShotWidth × ShotHeight pixels; Boxes are where the document's
	// elements were drawn in it (Segment -1, Path as the segmenter writes
	// it), for the elements drawn in the image (at most maxBoxes).
	Screenshot            []byte
	ShotWidth, ShotHeight int
	Boxes                 []changedigest.Box
	// Requests the page made through the proxy, bytes it read, and the
	// requests the guard refused ("URL: reason", the first 20).
	Requests int
	Bytes    int64
	Refused  []string
	Duration time.Duration
}

// Timing knobs of a render; variables so tests can shorten them.
var (
	idleQuiet     = 500 * time.Millisecond // no request in flight for this long is idle
	idleBudget    = 10 * time.Second       // waiting for idle stops after this long in all
	longRequest   = 5 * time.Second        // a request in flight this long (a stream, long polling) does not keep the page busy
	stepTimeout   = 10 * time.Second
	scrollRounds  = 8
	settleMinimum = 100 * time.Millisecond
)

// Render loads req.URL in a fresh browser context, waits for it to settle
// (load, network idle, lazy content on scroll, the WaitFor selector), runs
// the steps, and returns the DOM and, when asked, a screenshot. Errors:
// ErrNoChromium and ErrStart when Chromium cannot run; ErrRefused when the
// guard refuses the document's address; ErrLoad, ErrTimeout, ErrTooLarge,
// ErrStep; ErrClosed after Close; the context's error when ctx ends.
func (p *Pool) Render(ctx context.Context, req Request) (*Page, error) {
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q is not an http or https URL", ErrLoad, req.URL)
	}
	p.init()
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.sem }()
	start := time.Now()
	timeout := cmpOr(req.Timeout, cmpOr(p.Timeout, DefaultTimeout))

	in, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(in)
	px, err := p.takeProxy()
	if err != nil {
		return nil, err
	}
	defer func() { p.proxies <- px }()

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sess := px.begin(rctx, cmpOr(p.MaxBytes, DefaultMaxBytes))
	defer px.end(sess)

	tctx, tcancel := chromedp.NewContext(in.ctx, chromedp.WithNewBrowserContext(
		func(c *target.CreateBrowserContextParams) *target.CreateBrowserContextParams {
			return c.WithProxyServer(px.addr()).WithProxyBypassList("<-loopback>")
		}))
	defer tcancel()
	// The tab's context ends with the render's time limit or the caller.
	stop := context.AfterFunc(rctx, tcancel)
	defer stop()

	r := &run{pool: p, req: req, sess: sess, page: &Page{}}
	err = r.do(tctx)
	pg := r.page
	pg.Requests, pg.Bytes = int(sess.requests.Load()), sess.bytes.Load()
	sess.mu.Lock()
	pg.Refused = append([]string(nil), sess.refused...)
	over := sess.over
	sess.mu.Unlock()
	pg.Duration = time.Since(start)
	switch {
	case over:
		return nil, fmt.Errorf("%w: %s read more than %d bytes", ErrTooLarge, req.URL, cmpOr(p.MaxBytes, DefaultMaxBytes))
	case err == nil:
		return pg, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case in.dead() && !errors.Is(err, ErrRefused) && !errors.Is(err, ErrLoad):
		return nil, fmt.Errorf("browser: chromium exited while rendering %s: %w", req.URL, err)
	case rctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w: %s was not ready within %s (%s)", ErrTimeout, req.URL, timeout, r.stage())
	}
	return nil, err
}

// run is the state of one render.
type run struct {
	pool *Pool
	req  Request
	sess *session
	page *Page

	mu        sync.Mutex
	inflight  map[network.RequestID]time.Time // request → when it started
	lastNet   time.Time
	idleSpent time.Duration
	mainFrame string
	docID     network.RequestID
	docResp   *network.Response
	lastDoc   *network.Response // the main frame's latest document response
	docErr    string
	at        string // what the render is doing, for timeout messages
}

func (r *run) setStage(s string) {
	r.mu.Lock()
	r.at = s
	r.mu.Unlock()
}

func (r *run) stage() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at
}

// listen follows the network events of the tab: requests in flight (for
// network idle) and the main document's response.
func (r *run) listen(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if _, ok := r.inflight[e.RequestID]; !ok {
			r.inflight[e.RequestID] = time.Now()
		}
		r.lastNet = time.Now()
		// The document is the first request of the main frame; its
		// redirect hops keep its id. Later navigations (a script, a form,
		// a download link) are judged by where the page ends up.
		if r.docID == "" && e.Type == network.ResourceTypeDocument && string(e.FrameID) == r.mainFrame {
			r.docID = e.RequestID
		}
	case *network.EventResponseReceived:
		if e.RequestID == r.docID {
			r.docResp = e.Response
		}
		if e.Type == network.ResourceTypeDocument && string(e.FrameID) == r.mainFrame {
			r.lastDoc = e.Response
		}
	case *network.EventLoadingFinished:
		delete(r.inflight, e.RequestID)
		r.lastNet = time.Now()
	case *network.EventLoadingFailed:
		delete(r.inflight, e.RequestID)
		r.lastNet = time.Now()
		if e.RequestID == r.docID && r.docErr == "" {
			r.docErr = e.ErrorText
		}
	}
}

func (r *run) do(ctx context.Context) error {
	r.inflight = map[network.RequestID]time.Time{}
	r.setStage("opening a tab")
	// The first Run creates the browser context and the tab.
	if err := chromedp.Run(ctx); err != nil {
		return err
	}
	c := chromedp.FromContext(ctx)
	r.mainFrame = string(c.Target.TargetID)
	chromedp.ListenTarget(ctx, r.listen)
	bexec := cdp.WithExecutor(ctx, c.Browser)
	if err := browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorDeny).
		WithBrowserContextID(c.BrowserContextID).Do(bexec); err != nil {
		return fmt.Errorf("browser: refuse downloads: %w", err)
	}
	w, h := cmpOr(r.pool.Width, DefaultWidth), cmpOr(r.pool.Height, DefaultHeight)
	err := chromedp.Run(ctx,
		emulation.SetDeviceMetricsOverride(int64(w), int64(h), 1, false),
		// Non-HTTP schemes never reach the proxy; refuse them outright.
		network.SetBlockedURLs([]string{"file:*", "ftp:*", "chrome:*", "chrome-extension:*", "devtools:*"}),
	)
	if err != nil {
		return err
	}

	r.setStage("loading the document")
	navErr := chromedp.Run(ctx, chromedp.Navigate(r.req.URL))
	r.mu.Lock()
	resp, docErr := r.docResp, r.docErr
	r.mu.Unlock()
	if resp != nil {
		if why, ok := resp.Headers[refusedHeader]; ok {
			return fmt.Errorf("%w: %s: %v", ErrRefused, r.req.URL, why)
		}
		if why, ok := resp.Headers[failedHeader]; ok {
			return fmt.Errorf("%w: %s: %v", ErrLoad, r.req.URL, why)
		}
		r.page.Status = int(resp.Status)
		if resp.Status >= 400 {
			return fmt.Errorf("%w: %s: HTTP status %d", ErrLoad, r.req.URL, resp.Status)
		}
	}
	if navErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if docErr == "" {
			docErr = navErr.Error()
		}
		// A TLS document goes through a tunnel, whose failure Chromium
		// reports without the proxy's reason.
		if u, err := url.Parse(r.req.URL); err == nil && u.Scheme == "https" {
			hostport := u.Host
			if u.Port() == "" {
				hostport = net.JoinHostPort(u.Hostname(), "443")
			}
			if err := r.sess.tunnelError(hostport); err != nil {
				if isRefusal(err) {
					return fmt.Errorf("%w: %s: %v", ErrRefused, r.req.URL, err)
				}
				return fmt.Errorf("%w: %s: %v", ErrLoad, r.req.URL, err)
			}
		}
		return fmt.Errorf("%w: %s: %s", ErrLoad, r.req.URL, docErr)
	}

	r.setStage("waiting for the network to be idle")
	if err := r.idle(ctx); err != nil {
		return err
	}
	if r.req.WaitFor != "" {
		r.setStage("waiting for " + r.req.WaitFor)
		if err := chromedp.Run(ctx, chromedp.WaitReady(r.req.WaitFor, chromedp.ByQuery)); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: wait for %q: %v", ErrStep, r.req.WaitFor, err)
		}
	}
	for i, s := range r.req.Steps {
		r.setStage(fmt.Sprintf("step %d (%s %s)", i+1, s.Action, s.Selector))
		if err := r.step(ctx, s); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: step %d (%s %s): %v", ErrStep, i+1, s.Action, s.Selector, err)
		}
		if err := r.idle(ctx); err != nil {
			return err
		}
	}
	r.setStage("scrolling for lazy content")
	if err := r.scroll(ctx); err != nil {
		return err
	}

	r.setStage("reading the document")
	var html, loc, title string
	err = chromedp.Run(ctx,
		chromedp.Evaluate(`(document.doctype ? "<!DOCTYPE " + document.doctype.name + ">\n" : "") + document.documentElement.outerHTML`, &html),
		chromedp.Location(&loc),
		chromedp.Title(&title),
	)
	if err != nil {
		return err
	}
	if lu, err := url.Parse(loc); err != nil || (lu.Scheme != "http" && lu.Scheme != "https") {
		return fmt.Errorf("%w: the page went to %q", ErrLoad, loc)
	}
	r.mu.Lock()
	last := r.lastDoc
	r.mu.Unlock()
	if last != nil {
		if why, ok := last.Headers[refusedHeader]; ok {
			return fmt.Errorf("%w: the page went to %s: %v", ErrRefused, last.URL, why)
		}
	}
	if max := cmpOr(r.pool.MaxHTML, DefaultMaxHTML); len(html) > max {
		return fmt.Errorf("%w: the rendered document is %d bytes (limit %d)", ErrTooLarge, len(html), max)
	}
	r.page.HTML, r.page.URL, r.page.Title = []byte(html), loc, title
	if r.page.Status == 0 {
		r.page.Status = 200
	}
	if r.req.Screenshot && (r.req.SkipShot == nil || !r.req.SkipShot(r.page.HTML)) {
		r.setStage("taking the screenshot")
		if err := r.screenshot(ctx); err != nil {
			return fmt.Errorf("browser: screenshot of %s: %w", r.req.URL, err)
		}
	}
	return nil
}

// idle waits until no request has been in flight for idleQuiet, ignoring
// requests older than longRequest; all the waits of a render together
// last at most idleBudget.
func (r *run) idle(ctx context.Context) error {
	start := time.Now()
	defer func() { r.idleSpent += time.Since(start) }()
	limit := start.Add(idleBudget - r.idleSpent)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		now := time.Now()
		r.mu.Lock()
		busy, last := 0, r.lastNet
		for _, at := range r.inflight {
			if now.Sub(at) < longRequest {
				busy++
			}
		}
		r.mu.Unlock()
		if (busy == 0 && now.Sub(last) >= idleQuiet && now.Sub(start) >= settleMinimum) || now.After(limit) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// scroll scrolls to the bottom until the page stops growing (lazy
// loading on scroll), then back to the top.
func (r *run) scroll(ctx context.Context) error {
	var prev float64 = -1
	for range scrollRounds {
		var h float64
		if err := chromedp.Run(ctx, chromedp.Evaluate(`(() => { const h = document.documentElement.scrollHeight; window.scrollTo(0, h); return h })()`, &h)); err != nil {
			return err
		}
		if err := r.idle(ctx); err != nil {
			return err
		}
		if h == prev {
			break
		}
		prev = h
	}
	return chromedp.Run(ctx, chromedp.Evaluate(`window.scrollTo(0, 0)`, nil))
}

func (r *run) step(ctx context.Context, s Step) error {
	sctx, cancel := context.WithTimeout(ctx, cmpOr(s.Timeout, stepTimeout))
	defer cancel()
	var err error
	switch s.Action {
	case "click":
		err = chromedp.Run(sctx, chromedp.Click(s.Selector, chromedp.ByQuery, chromedp.NodeVisible))
	case "type":
		sel, _ := json.Marshal(s.Selector)
		err = chromedp.Run(sctx, chromedp.Focus(s.Selector, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector(`+string(sel)+`).value = ""`, nil),
			chromedp.SendKeys(s.Selector, s.Text, chromedp.ByQuery))
	case "wait":
		err = chromedp.Run(sctx, chromedp.WaitReady(s.Selector, chromedp.ByQuery))
	case "scroll":
		err = chromedp.Run(sctx, chromedp.ScrollIntoView(s.Selector, chromedp.ByQuery))
	default:
		return fmt.Errorf("unknown action %q", s.Action)
	}
	if sctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("not done within %s", cmpOr(s.Timeout, stepTimeout))
	}
	return err
}

// screenshot captures the whole page, up to MaxShotHeight pixels high,
// as PNG, and where its elements were drawn. A PNG over MaxShotBytes is
// taken again at half the scale (then a quarter); one still over it is
// left out (the page is still read).
func (r *run) screenshot(ctx context.Context) error {
	var boxes []changedigest.Box
	if err := chromedp.Run(ctx, chromedp.Evaluate(boxesScript, &boxes)); err != nil {
		return fmt.Errorf("element boxes: %w", err)
	}
	return chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		_, _, _, _, _, css, err := page.GetLayoutMetrics().Do(ctx)
		if err != nil {
			return err
		}
		w := float64(cmpOr(r.pool.Width, DefaultWidth))
		h := math.Ceil(css.Height)
		if h < 1 {
			h = float64(cmpOr(r.pool.Height, DefaultHeight))
		}
		h = math.Min(h, float64(cmpOr(r.pool.MaxShotHeight, DefaultMaxShotHeight)))
		limit := cmpOr(r.pool.MaxShotBytes, DefaultMaxShotBytes)
		for _, scale := range []float64{1, 0.5, 0.25} {
			shot, err := page.CaptureScreenshot().
				WithFormat(page.CaptureScreenshotFormatPng).
				WithCaptureBeyondViewport(true).
				WithFromSurface(true).
				WithClip(&page.Viewport{X: 0, Y: 0, Width: w, Height: h, Scale: scale}).
				Do(ctx)
			if err != nil {
				return err
			}
			if len(shot) > limit {
				continue
			}
			sw, sh := int(math.Round(w*scale)), int(math.Round(h*scale))
			r.page.Screenshot, r.page.ShotWidth, r.page.ShotHeight = shot, sw, sh
			r.page.Boxes = scaleBoxes(boxes, scale, sw, sh)
			return nil
		}
		r.pool.logger().Warn("screenshot over the size limit; left out", "url", r.req.URL, "limit", limit)
		return nil
	}))
}

// scaleBoxes scales boxes to an image of w×h pixels and drops those
// outside it.
func scaleBoxes(boxes []changedigest.Box, scale float64, w, h int) []changedigest.Box {
	out := boxes[:0]
	for _, b := range boxes {
		x0, y0 := int(math.Floor(float64(b.X)*scale)), int(math.Floor(float64(b.Y)*scale))
		x1, y1 := int(math.Ceil(float64(b.X+b.W)*scale)), int(math.Ceil(float64(b.Y+b.H)*scale))
		x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
		if x1 <= x0 || y1 <= y0 {
			continue
		}
		b.X, b.Y, b.W, b.H = x0, y0, x1-x0, y1-y0
		out = append(out, b)
	}
	return out
}

// boxesScript lists the rectangles of the document's drawn elements
// that can be a segment's root or hold a change: block elements, elements
// with text of their own and replaced elements (images, frames, media,
// form fields). Each has its path as the segmenter writes it: tag, "-id"
// when the id attribute has text (white space collapsed), "[n]" for the
// n-th sibling of its tag (n > 1), joined by "|" over at most the 64
// nearest ancestors.
const boxesScript = `(() => {
  const out = [], parts = [], max = 20000;
  const sx = window.scrollX, sy = window.scrollY;
  const block = new Set(['html','body','div','section','article','main','header','footer','nav','aside',
    'ul','ol','li','dl','dt','dd','table','thead','tbody','tfoot','tr','td','th','caption','p','pre',
    'blockquote','figure','figcaption','form','fieldset','h1','h2','h3','h4','h5','h6','details','summary',
    'img','picture','video','audio','iframe','canvas','svg','object','embed','input','select','textarea','button']);
  const ownText = (el) => {
    for (let n = el.firstChild; n; n = n.nextSibling) {
      if (n.nodeType === 3 && n.nodeValue.trim() !== '') return true;
    }
    return false;
  };
  const add = (el, path) => {
    const r = el.getBoundingClientRect();
    if (r.width >= 1 && r.height >= 1 && (block.has(el.localName) || ownText(el))) {
      out.push({segment: -1, path: path,
        x: Math.round(r.left + sx), y: Math.round(r.top + sy), w: Math.round(r.width), h: Math.round(r.height)});
    }
  };
  const walk = (el) => {
    const counts = new Map(), implied = new Map();
    for (let c = el.firstElementChild; c && out.length < max; c = c.nextElementSibling) {
      const tag = c.localName;
      // A tr built by a script straight into a table: the parser of the
      // serialised page puts it in an implied tbody.
      const inBody = tag === 'tr' && el.localName === 'table';
      const cs = inBody ? implied : counts;
      const n = (cs.get(tag) || 0) + 1;
      cs.set(tag, n);
      if (inBody && n === 1) counts.set('tbody', (counts.get('tbody') || 0) + 1);
      let part = inBody ? 'tbody|' + tag : tag;
      const id = (c.getAttribute('id') || '').replace(/\s+/g, ' ').trim();
      if (id) part += '-' + id;
      if (n > 1) part += '[' + n + ']';
      parts.push(part);
      if (tag !== 'head' && tag !== 'script' && tag !== 'style' && tag !== 'template') {
        add(c, parts.slice(-64).join('|'));
        walk(c);
      }
      parts.pop();
    }
  };
  const root = document.documentElement;
  parts.push(root.localName);
  add(root, root.localName);
  walk(root);
  return out;
})()`

// CheckWaitFor reports whether sel is a CSS selector a page can wait for:
// nil for "" and valid selectors, else an EINVALID error naming it.
func CheckWaitFor(sel string) error {
	if sel == "" {
		return nil
	}
	if _, err := cascadia.Compile(sel); err != nil {
		return changedigest.Errorf(changedigest.EINVALID, "invalid wait-for selector %q: %v", sel, err)
	}
	return nil
}

// CheckSteps reports whether a watch's steps can run: nil when every
// selector is valid CSS, else an EINVALID error naming the step.
func CheckSteps(steps []changedigest.Step) error {
	for i, s := range steps {
		if _, err := cascadia.Compile(s.Selector); err != nil {
			return changedigest.Errorf(changedigest.EINVALID, "step %d (%s): invalid selector %q: %v", i+1, s.Action, s.Selector, err)
		}
	}
	return nil
}
