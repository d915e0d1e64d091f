package crawl

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/segmenter"
)

// Track is the Page Evolution Track as the check pipeline sees it.
type Track interface {
	// Prior returns, in one read, the newest stored version of a watch
	// (nil when it has none), its body byte for byte, and the segment
	// hashes of the last m versions, newest first.
	Prior(ctx context.Context, watchID int64, m int) (*changedigest.Snapshot, []byte, [][]string, error)
	// AddVersion stores a version atomically and returns its sequence number.
	AddVersion(ctx context.Context, watchID int64, snap *changedigest.Snapshot, body []byte) (int, error)
	// UpdateWatch records what a check learned of the watch's page (fn
	// sets its kind, title and whether it looks like a shell), in a
	// transaction after AddVersion. A track whose store learns it from the
	// version itself (a cluster node's view) may return nil and no error.
	UpdateWatch(ctx context.Context, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error)
}

// partsTrack is a Track that reads the newest version without its body
// and segment texts, which the comparison then reads as it needs them
// (pet.Store): a check of a changed page reads the parts that changed
// rather than the whole previous version.
type partsTrack interface {
	PriorParts(ctx context.Context, watchID int64, m int) (*changedigest.Snapshot, changedigest.VersionParts, [][]string, error)
}

// utf8Parts gives the segmenter a stored version's body decoded to UTF-8,
// as PrevBody is. Byte ranges are read as stored: a version has them only
// when its body was UTF-8 already.
type utf8Parts struct {
	changedigest.VersionParts
	contentType string
}

func (p utf8Parts) Body() ([]byte, error) {
	body, err := p.VersionParts.Body()
	if err != nil {
		return nil, err
	}
	return ToUTF8(body, p.contentType), nil
}

// changeLister is the part of the track that lists the changes of the
// last stored versions, newest first, to learn which locations of a page
// change at nearly every check. A track without it learns nothing.
type changeLister interface {
	RecentChanges(ctx context.Context, watchID int64, n int) ([][]changedigest.Change, error)
}

// Renderer reads a watch's page in a browser, for watches with
// Render: browser (package browser's Pool). The response's Raw and Body
// are the rendered document in UTF-8; it has no validators. known
// reports whether a rendered document is the newest stored version's
// (no version will be stored), so the renderer may skip its screenshot.
type Renderer interface {
	RenderWatch(ctx context.Context, w *changedigest.Watch, known func(raw []byte) bool) (*Response, error)
}

// ErrNoRenderer: a watch asks for browser rendering and the pipeline has
// no Renderer.
var ErrNoRenderer = errors.New("crawl: this watch renders its page in a browser, and browser rendering is not set up")

// Pipeline checks one watch: fetch, segment and compare against the
// track, store the new version. It is the scheduler's Checker. A failed
// fetch, or a body that is neither a page nor a feed, returns an error
// and stores nothing; the scheduler records it on the watch.
type Pipeline struct {
	Fetcher   *Fetcher
	Segmenter *segmenter.Segmenter
	Track     Track
	// Renderer reads the pages of watches with Render: browser (nil:
	// their checks fail with ErrNoRenderer).
	Renderer Renderer
	// Matrix is how many earlier versions the signature matrix holds (m).
	Matrix int
	// OnVersion, when set, is called after a version is stored.
	OnVersion func(w *changedigest.Watch, snap *changedigest.Snapshot)
	Now       func() time.Time
}

// NewPipeline returns a pipeline with a 5-row signature matrix.
func NewPipeline(f *Fetcher, s *segmenter.Segmenter, t Track) *Pipeline {
	return &Pipeline{Fetcher: f, Segmenter: s, Track: t, Matrix: 5, Now: time.Now}
}

// Check fetches w (or renders it in a browser) and stores a new version
// when the body differs from the newest stored one.
func (p *Pipeline) Check(ctx context.Context, w *changedigest.Watch) (Outcome, error) {
	var (
		prev    *changedigest.Snapshot
		prevRaw []byte
		parts   changedigest.VersionParts
		history [][]string
		read    bool
		err     error
	)
	prior := func() error {
		if read {
			return nil
		}
		read = true
		if pt, ok := p.Track.(partsTrack); ok {
			prev, parts, history, err = pt.PriorParts(ctx, w.ID, p.Matrix)
		} else {
			prev, prevRaw, history, err = p.Track.Prior(ctx, w.ID, p.Matrix)
		}
		if err != nil {
			return fmt.Errorf("crawl: read the newest version of %s: %w", w, err)
		}
		return nil
	}
	if w.Render == changedigest.RenderBrowser {
		// Known before rendering, so an unchanged page skips its screenshot.
		if err := prior(); err != nil {
			return Outcome{}, err
		}
	}
	res, err := p.read(ctx, w, func(raw []byte) bool {
		sum := md5.Sum(raw)
		return prev != nil && prev.BodyHash == hex.EncodeToString(sum[:]) && prev.Zone == w.Zone
	})
	if err != nil {
		return Outcome{}, err
	}
	if res.NotModified {
		return res.Outcome(NotModified), nil
	}
	Answered(ctx, res.Duration)
	sum := md5.Sum(res.Raw)
	bodyHash := hex.EncodeToString(sum[:])

	if err := prior(); err != nil {
		return Outcome{}, err
	}
	if prev != nil && prev.BodyHash == bodyHash && prev.Zone == w.Zone {
		return res.Outcome(Unchanged), nil
	}
	in := segmenter.Input{Body: res.Body, Zone: w.Zone, Prev: prev, History: history}
	if prev != nil {
		if parts != nil {
			in.PrevParts = utf8Parts{parts, prev.ContentType}
		} else {
			in.PrevBody = ToUTF8(prevRaw, prev.ContentType)
		}
		if cl, ok := p.Track.(changeLister); ok && mostChecksChange(w) {
			in.RecentFrom = func() ([][]changedigest.Change, error) {
				recent, err := cl.RecentChanges(ctx, w.ID, segmenter.NoiseVolatileWindow)
				if err != nil {
					return nil, fmt.Errorf("crawl: read the recent changes of %s: %w", w, err)
				}
				return recent, nil
			}
		}
	}
	snap, err := p.Segmenter.DetectContext(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, fmt.Errorf("crawl: check of %s stopped while comparing its versions: %w", w, err)
		}
		return Outcome{}, err
	}
	snap.WatchID = w.ID
	snap.FetchedAt = p.now()
	snap.Status = res.Status
	snap.ETag, snap.LastModified, snap.ContentType = res.ETag, res.LastModified, res.ContentType
	if res.FinalURL != w.URL {
		snap.FinalURL = res.FinalURL
	}
	resolveLinks(snap.Changes, res.FinalURL)
	snap.Size, snap.BodyHash = len(res.Raw), bodyHash
	snap.Zone = w.Zone
	snap.Screenshot = segmentBoxes(res.Screenshot, snap.Segments)
	if !sameBytes(res.Raw, res.Body) {
		// Segment ranges point into the UTF-8 text, not the stored bytes.
		for i := range snap.Segments {
			snap.Segments[i].Start, snap.Segments[i].End = -1, -1
		}
	}
	snap.Value = ReadValue(w, res.Body, prev)
	seq, err := p.Track.AddVersion(ctx, w.ID, snap, res.Raw)
	if err != nil {
		return Outcome{}, fmt.Errorf("crawl: store a version of %s: %w", w, err)
	}
	snap.Seq = seq
	// The segmenter weighed the page as it read it (only pages have a weight).
	shell := w.Render != changedigest.RenderBrowser && snap.Weight != nil && ShellWeight(*snap.Weight)
	if probe := *w; probe.LearnPage(snap, shell) {
		learn := func(x *changedigest.Watch) error {
			x.LearnPage(snap, shell)
			return nil
		}
		updated, err := p.Track.UpdateWatch(ctx, w.UserID, w.ID, learn)
		if err != nil && !errors.Is(err, context.Canceled) {
			return Outcome{}, fmt.Errorf("crawl: record the kind of %s: %w", w, err)
		}
		if updated != nil {
			w.Kind, w.Title, w.LooksLikeShell = updated.Kind, updated.Title, updated.LooksLikeShell
			w.FeedItems, w.FeedItemsKept = updated.FeedItems, updated.FeedItemsKept
		} else if err == nil {
			learn(w) // the track's store learns it from the version
		}
	}
	if p.OnVersion != nil {
		p.OnVersion(w, snap)
	}
	var out Outcome
	switch {
	case prev == nil:
		out = res.Outcome(FirstVersion)
	case len(snap.Changes) > 0:
		out = res.Outcome(Changed)
	default:
		out = res.Outcome(Unchanged)
	}
	out.Seq = seq
	return out, nil
}

// ReadValue reads the value of w from a new version's body (UTF-8),
// with what the versions before held (prev is the newest stored version,
// nil for none), so that the watch's condition is weighed from the
// version alone. Nil for a watch that reads no value.
func ReadValue(w *changedigest.Watch, body []byte, prev *changedigest.Snapshot) *changedigest.Value {
	if !w.ReadsValue() {
		return nil
	}
	v := segmenter.ReadValue(body, w.ValueSelector)
	var was *changedigest.Value
	if prev != nil {
		was = prev.Value
	}
	v.Follow(was, w.Condition())
	return v
}

// mostChecksChange reports whether most of the watch's recent checks
// stored a version: only then can a location that changed in most stored
// versions have changed at most checks (a page stored once in ten checks
// has no volatile location, however its versions differ).
func mostChecksChange(w *changedigest.Watch) bool {
	if len(w.Samples) == 0 {
		return true // no check history yet: the versions are the checks
	}
	n := 0
	for _, s := range w.Samples {
		if s.Changed {
			n++
		}
	}
	return float64(n) >= segmenter.NoiseVolatileShare*float64(len(w.Samples))
}

// read fetches w's page, or renders it when the watch asks for a browser.
func (p *Pipeline) read(ctx context.Context, w *changedigest.Watch, known func([]byte) bool) (*Response, error) {
	if w.Render != changedigest.RenderBrowser {
		return p.Fetcher.Fetch(ctx, WatchRequest(w))
	}
	if p.Renderer == nil {
		return nil, ErrNoRenderer
	}
	return p.Renderer.RenderWatch(ctx, w, known)
}

func (p *Pipeline) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// sameBytes reports whether a and b are the same memory (the fetcher
// shares the body when no charset conversion was needed).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// segmentBoxes returns shot with its boxes marked with the segment whose
// root they are (the first box of a path when several share it), for the
// views to outline segments and changes. Nil when shot is nil.
func segmentBoxes(shot *changedigest.Screenshot, segs []changedigest.Segment) *changedigest.Screenshot {
	if shot == nil {
		return nil
	}
	seg := make(map[string]int, len(segs))
	for _, sg := range segs {
		if _, ok := seg[sg.Path]; !ok && sg.Path != "" {
			seg[sg.Path] = sg.Index
		}
	}
	out := *shot
	out.Boxes = make([]changedigest.Box, 0, len(shot.Boxes))
	seen := make(map[string]bool, len(shot.Boxes))
	for _, b := range shot.Boxes {
		if seen[b.Path] {
			continue
		}
		seen[b.Path] = true
		b.Segment = -1
		if i, ok := seg[b.Path]; ok {
			b.Segment = i
		}
		out.Boxes = append(out.Boxes, b)
	}
	return &out
}

// resolveLinks makes the links of changes (a story's headline, a feed
// item's) absolute against the address the page was read from; a link
// that does not resolve to http or https is dropped.
func resolveLinks(cs []changedigest.Change, base string) {
	var b *url.URL
	for i := range cs {
		c := &cs[i]
		if c.Link == "" || hasHTTPScheme(c.Link) {
			continue
		}
		if b == nil {
			var err error
			if b, err = url.Parse(base); err != nil {
				b = &url.URL{} // links that are not absolute are dropped below
			}
		}
		u, err := b.Parse(c.Link)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			c.Link = ""
			continue
		}
		c.Link = u.String()
	}
}

func hasHTTPScheme(s string) bool {
	return len(s) > 8 && (strings.EqualFold(s[:7], "http://") || strings.EqualFold(s[:8], "https://"))
}
