package segmenter

import (
	"context"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pdftext"
)

// Segmenter cuts pages into segments and finds the typed changes between
// versions. Its exported fields are the knobs; New sets their defaults. A
// Segmenter is not changed by use and is safe for concurrent use.
type Segmenter struct {
	// Delta (δ) is the subtree size, in nodes (elements and texts), from
	// which a block becomes a segment of its own; smaller blocks merge
	// with their neighbour.
	Delta int
	// Lambda (λ) is the relative text-density slope between two adjacent
	// blocks above which densitometry cuts a large block between them.
	Lambda float64
	// LineWidth is the column width densitometry wraps text at.
	LineWidth int
	// MaxSegment is the size in bytes past which densitometry also cuts a
	// run of alike blocks (long prose has no density slope to cut at).
	MaxSegment int
	// Cascade is the number of tokens opening a segment that identify its
	// boundary in the next version (the cascaded node sequence).
	Cascade int
	// MaxBytes is the largest document accepted; larger ones are an
	// ETOOLARGE error.
	MaxBytes int
	// MaxText, when positive, bounds the old and new text of a change,
	// in bytes: longer texts are cut to the part around the difference
	// and the change says so (Truncated, OldLen, NewLen). 0, the default,
	// keeps every text whole.
	MaxText int
	// Context is the number of unchanged words shown before and after
	// the changed words of a content update (Change.Before and After). A
	// negative value reports updated blocks whole, one change per block
	// with its full old and new text.
	Context int
	// MaxItems bounds the items of a feed a version keeps: of a feed
	// with more, the newest MaxItems are its segments and are compared,
	// and the snapshot's FeedItems says how many the feed had (see
	// DetectFeed). Diff compares every item.
	MaxItems int
	// PDF reads the text of PDF documents (pdfdoc.go) under its limits;
	// nil reads with pdftext's defaults.
	PDF *pdftext.Extractor
	// JQTimeout bounds the run of a zone that is a jq program on one
	// JSON document (see JQPrefix); 0 is DefaultJQTimeout.
	JQTimeout time.Duration
}

// Defaults, chosen by measurement on the test corpus (see the package
// documentation).
const (
	DefaultDelta      = 20
	DefaultLambda     = 0.7
	DefaultLineWidth  = 80
	DefaultMaxSegment = 8 << 10
	DefaultCascade    = 8
	DefaultMaxBytes   = 10 << 20
	DefaultContext    = 6
	// DefaultMaxItems keeps a few months of a busy news feed. A
	// publisher's whole archive can be tens of thousands of items, each a
	// segment to store and index: the first check of a feed of 40,000
	// short items took 5 CPU-s whole, of four such feeds at once 200.
	DefaultMaxItems = 2000
)

// New returns a Segmenter with the default knobs.
func New() *Segmenter {
	return &Segmenter{
		Delta:      DefaultDelta,
		Lambda:     DefaultLambda,
		LineWidth:  DefaultLineWidth,
		MaxSegment: DefaultMaxSegment,
		Cascade:    DefaultCascade,
		MaxBytes:   DefaultMaxBytes,
		Context:    DefaultContext,
		MaxItems:   DefaultMaxItems,
		PDF:        pdftext.New(),
	}
}

// knobs returns s with unset or invalid knobs replaced by the defaults.
func (s *Segmenter) knobs() *Segmenter {
	c := *s
	if c.Delta < 2 {
		c.Delta = DefaultDelta
	}
	if c.Lambda <= 0 {
		c.Lambda = DefaultLambda
	}
	if c.LineWidth <= 0 {
		c.LineWidth = DefaultLineWidth
	}
	if c.MaxSegment <= 0 {
		c.MaxSegment = DefaultMaxSegment
	}
	if c.Cascade <= 0 {
		c.Cascade = DefaultCascade
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxText < 0 {
		c.MaxText = 0
	}
	if c.MaxItems <= 0 {
		c.MaxItems = DefaultMaxItems
	}
	return &c
}

// Detect segments a new version of a page or feed and finds its changes
// against in.Prev, dispatching on Sniff to DetectPage or DetectFeed. Bad
// input gives an EINVALID or ETOOLARGE error (see Sniff). It is
// DetectContext without a context.
func (s *Segmenter) Detect(in Input) (*changedigest.Snapshot, error) {
	return s.DetectContext(context.Background(), in)
}

// DetectContext is Detect under ctx: segmentation and comparison look at
// ctx as they go, and once it is done the detection stops within a few
// milliseconds with an error wrapping ctx's (context.Canceled or
// context.DeadlineExceeded). A check's time limit so holds for any page.
func (s *Segmenter) DetectContext(ctx context.Context, in Input) (*changedigest.Snapshot, error) {
	return s.detect(newWork(ctx), in)
}

// detect is Detect counting its work into w.
func (s *Segmenter) detect(w *work, in Input) (snap *changedigest.Snapshot, err error) {
	defer catch(&snap, &err)
	if w.texts == nil {
		size := len(in.Body)
		if in.Prev != nil {
			size += max(in.Prev.Size, len(in.PrevBody))
		}
		w.texts, w.cells = textBudget(size), cellBudget(size)
	}
	w.check()
	if err := s.checkSize(in.Body, ""); err != nil {
		return nil, err
	}
	if isPDF(in.Body) {
		// Read as the page its text renders to (pdfdoc.go), the previous
		// version too; without it, changes are told from the stored
		// segments' texts.
		in = in.whole()
		if in.Body, err = s.pdfPage(w.ctx, in.Body); err != nil {
			return nil, err
		}
		if in.PrevBody != nil && isPDF(in.PrevBody) {
			if in.PrevBody, err = s.pdfPage(w.ctx, in.PrevBody); err != nil {
				if w.ctx.Err() != nil {
					return nil, err
				}
				in.PrevBody = nil
			}
		}
		defer func() {
			if snap != nil {
				for i := range snap.Segments {
					// The segments are of the rendered page, not the body.
					snap.Segments[i].Start, snap.Segments[i].End = -1, -1
				}
			}
		}()
	}
	jsonDoc := isJSONDocument(in.Body)
	if jsonDoc {
		// Read as the page it renders to (jsondoc.go), the previous
		// version too.
		in = in.whole()
		var zone string
		zone, in.Zone = splitJSONZone(in.Zone)
		if in.Body, err = jsonPageContext(w.ctx, in.Body, zone, s.JQTimeout); err != nil {
			return nil, err
		}
		if in.PrevBody != nil && isJSONDocument(in.PrevBody) {
			if prev, err := jsonPageContext(w.ctx, in.PrevBody, zone, s.JQTimeout); err == nil {
				in.PrevBody = prev
			}
		}
		defer func() {
			if snap != nil {
				for i := range snap.Segments {
					// The segments are of the rendered page, not the body.
					snap.Segments[i].Start, snap.Segments[i].End = -1, -1
				}
			}
		}()
	}
	kind, err := Sniff(in.Body)
	if err != nil {
		return nil, err
	}
	detect := func(in Input) (*changedigest.Snapshot, error) { return s.detectPage(w, in) }
	if kind == changedigest.KindFeed {
		maxItems := s.knobs().MaxItems
		detect = func(in Input) (*changedigest.Snapshot, error) { return detectFeed(w, in, maxItems) }
		in = in.whole() // a feed's items are compared whole
	}
	in.lazy()
	snap, err = detect(in)
	if err == nil {
		textMoves(snap.Changes)
		err = classifySnapshot(w, snap, in) // noise and significance (noise.go)
	}
	if err == nil {
		s.narrowMarkup(w, snap.Changes)
		snap.Changes = s.narrowScripts(w, snap.Changes)
	}
	if err == nil {
		if err = in.readErr(); err != nil {
			return nil, err
		}
	}
	return snap, err
}

// Diff compares two versions of a page or feed (the `changedigest diff`
// command), dispatching on Sniff to DiffPages or DiffFeeds; both must be of
// the same kind. Bodies that are not UTF-8 are decoded from the charset
// they declare. Bad input gives an EINVALID or ETOOLARGE error naming
// which document it is about. It is DiffContext without a context.
func (s *Segmenter) Diff(old, new []byte, zone string) (*changedigest.Diff, error) {
	return s.DiffContext(context.Background(), old, new, zone)
}

// DiffContext is Diff under ctx: once ctx is done the comparison stops
// within a few milliseconds with an error wrapping ctx's.
func (s *Segmenter) DiffContext(ctx context.Context, old, new []byte, zone string) (*changedigest.Diff, error) {
	return s.diff(newWork(ctx), old, new, zone)
}

// diff is Diff counting its work into w.
func (s *Segmenter) diff(w *work, old, new []byte, zone string) (d *changedigest.Diff, err error) {
	defer catch(&d, &err)
	if w.texts == nil {
		w.texts, w.cells = textBudget(len(old)+len(new)), cellBudget(len(old)+len(new))
	}
	w.check()
	if err := s.checkSize(old, "old"); err != nil {
		return nil, err
	}
	if err := s.checkSize(new, "new"); err != nil {
		return nil, err
	}
	if isPDF(old) {
		// A PDF is compared as the page its text renders to (pdfdoc.go).
		if old, err = s.pdfPage(w.ctx, old); err != nil {
			return nil, labelledPDF("old", err)
		}
	}
	if isPDF(new) {
		if new, err = s.pdfPage(w.ctx, new); err != nil {
			return nil, labelledPDF("new", err)
		}
	}
	if isJSONDocument(old) && isJSONDocument(new) {
		// Both JSON documents: compared as the pages they render to.
		var path string
		path, zone = splitJSONZone(zone)
		if old, err = jsonPageContext(w.ctx, old, path, s.JQTimeout); err != nil {
			return nil, labelled("old", err)
		}
		if new, err = jsonPageContext(w.ctx, new, path, s.JQTimeout); err != nil {
			return nil, labelled("new", err)
		}
	}
	ko, err := Sniff(old)
	if err != nil {
		return nil, labelled("old", err)
	}
	kn, err := Sniff(new)
	if err != nil {
		return nil, labelled("new", err)
	}
	if ko != kn {
		return nil, inputErrorf(ErrNotDocument, "old is a %s and new is a %s: cannot compare them", ko, kn)
	}
	var prints *[2]changedigest.TextPrint
	diff := func() (*changedigest.Diff, error) {
		prints = &[2]changedigest.TextPrint{}
		return s.diffPages(w, old, new, zone, prints)
	}
	if ko == changedigest.KindFeed {
		diff = func() (*changedigest.Diff, error) { return diffFeeds(w, old, new) }
	}
	d, err = diff()
	if err == nil {
		textMoves(d.Changes)
		classify(w, d, old, new, prints) // noise and significance (noise.go)
		s.narrowMarkup(w, d.Changes)
		d.Changes = s.narrowScripts(w, d.Changes)
	}
	return d, err
}

func (s *Segmenter) checkSize(body []byte, label string) error {
	max := s.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if len(body) > max {
		return labelled(label, inputErrorf(ErrTooLarge, "document of %d bytes is larger than the limit of %d bytes", len(body), max))
	}
	return nil
}

// checkPage rejects what cannot be a page: too large, empty, binary, or
// neither HTML nor a feed.
func (s *Segmenter) checkPage(body []byte, label string) error {
	if err := s.checkSize(body, label); err != nil {
		return err
	}
	if _, err := Sniff(body); err != nil {
		return labelled(label, err)
	}
	return nil
}
