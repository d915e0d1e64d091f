package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

func TestFeedEntryMentionsScreenshots(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	ev := fx.Events[0]
	snap := *ev.Snapshot
	snap.Screenshot = &changedigest.Screenshot{Width: 1280, Height: 900}
	ev.Snapshot = &snap
	var buf bytes.Buffer
	if err := e.Atom(&buf, e.UserFeed(fx.User, testSelf), []Event{ev}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Screenshots before and after&lt;/a&gt;") {
		t.Errorf("the entry of a version with a screenshot does not say so:\n%s", buf.String())
	}
	buf.Reset()
	e = MustEngine(t) // entries are cached per version
	if err := e.Atom(&buf, e.UserFeed(fx.User, testSelf), fx.Events[:1]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "screenshots") {
		t.Errorf("the entry of a fetched version mentions screenshots")
	}
}

func TestShotPairOutlines(t *testing.T) {
	e := MustEngine(t)
	before := &changedigest.Screenshot{Width: 1000, Height: 2000, Boxes: []changedigest.Box{
		{Segment: -1, Path: "html|body", X: 0, Y: 0, W: 1000, H: 2000},
		{Segment: 0, Path: "html|body|main", X: 0, Y: 0, W: 1000, H: 1900},
		{Segment: -1, Path: "html|body|main|p", X: 10, Y: 100, W: 500, H: 40},
		{Segment: 1, Path: "html|body|aside", X: 600, Y: 100, W: 300, H: 200},
	}}
	after := &changedigest.Screenshot{Width: 1000, Height: 2000, Boxes: []changedigest.Box{
		{Segment: -1, Path: "html|body", X: 0, Y: 0, W: 1000, H: 2000},
		{Segment: 0, Path: "html|body|main", X: 0, Y: 0, W: 1000, H: 1900},
		{Segment: -1, Path: "html|body|main|p", X: 10, Y: 100, W: 500, H: 60},
		{Segment: -1, Path: "html|body|main|p[2]", X: 10, Y: 200, W: 500, H: 40},
	}}
	changes := []changedigest.Change{
		{Segment: 0, Path: "html|body|main|p", Type: changedigest.ChangeContent, Op: changedigest.OpUpdate},
		// Inserted: only on the newer image.
		{Segment: 0, Path: "html|body|main|p[2]", Type: changedigest.ChangeContent, Op: changedigest.OpInsert},
		// Deleted: only on the older image, by the old segment's index.
		{Segment: 1, Path: "html|body|aside|ul", Type: changedigest.ChangeStructural, Op: changedigest.OpDelete},
		// A script has no box, and its ancestors are page-wide: no outline.
		{Segment: 0, Path: "html|body|main|script", Type: changedigest.ChangeBehavioural, Op: changedigest.OpUpdate},
		{Segment: 0, Path: "html|body|main|p", Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Noise: "generated"},
	}
	p := e.ShotPair(4, 7, after, 6, before, changes)
	got := func(v *ShotView) []Outline { return v.Outlines }
	wantAfter := []Outline{{X: 10, Y: 100, W: 500, H: 60}, {X: 10, Y: 200, W: 500, H: 40}}
	wantBefore := []Outline{{X: 10, Y: 100, W: 500, H: 40}, {X: 600, Y: 100, W: 300, H: 200}}
	for _, tc := range []struct {
		name string
		v    *ShotView
		want []Outline
	}{{"after", p.After, wantAfter}, {"before", p.Before, wantBefore}} {
		o := got(tc.v)
		if len(o) != len(tc.want) {
			t.Errorf("%s: %d outlines %+v, want %d", tc.name, len(o), o, len(tc.want))
			continue
		}
		for i := range o {
			if o[i].X != tc.want[i].X || o[i].Y != tc.want[i].Y || o[i].W != tc.want[i].W || o[i].H != tc.want[i].H {
				t.Errorf("%s outline %d = %+v, want %+v", tc.name, i, o[i], tc.want[i])
			}
		}
	}
	if p.After.URL != "/watches/4/versions/7/screenshot.png" && !strings.HasSuffix(p.After.URL, "/watches/4/versions/7/screenshot.png") {
		t.Errorf("after URL %q", p.After.URL)
	}
	if !strings.HasSuffix(p.Before.URL, "/watches/4/versions/6/screenshot.png") || !strings.HasSuffix(p.OverlayURL, "/watches/4/versions/7/overlay.png") {
		t.Errorf("before URL %q, overlay %q", p.Before.URL, p.OverlayURL)
	}
	if q := e.ShotPair(4, 7, after, 0, nil, changes); q.Before != nil || q.OverlayURL != "" {
		t.Errorf("without a screenshot before: %+v", q)
	}
}

func TestBoxesAt(t *testing.T) {
	sh := &changedigest.Screenshot{Width: 100, Height: 100, Boxes: []changedigest.Box{
		{Segment: -1, Path: "html|body", X: 0, Y: 0, W: 100, H: 100},
		{Segment: 0, Path: "html|body|main", X: 0, Y: 0, W: 100, H: 80},
		{Segment: -1, Path: "html|body|main|div", X: 10, Y: 10, W: 50, H: 20},
		{Segment: -1, Path: "html|body|main|div|p", X: 10, Y: 10, W: 50, H: 20},
		{Segment: -1, Path: "html|body|main|div|p", X: 10, Y: 10, W: 50, H: 20},
		{Segment: 1, Path: "html|body|footer", X: 0, Y: 80, W: 100, H: 20},
	}}
	paths := func(bs []changedigest.Box) string {
		var p []string
		for _, b := range bs {
			p = append(p, b.Path)
		}
		return strings.Join(p, " ")
	}
	for _, tc := range []struct {
		name string
		x, y int
		want string
	}{
		{"nested, deeper first", 20, 15, "html|body|main|div|p html|body|main|div html|body|main"},
		{"one box", 70, 50, "html|body|main"},
		{"edge is outside", 60, 15, "html|body|main"},
		{"footer", 5, 90, "html|body|footer"},
		{"outside the image", 100, 5, ""},
		{"negative", -1, 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := paths(BoxesAt(sh, tc.x, tc.y)); got != tc.want {
				t.Errorf("BoxesAt(%d, %d) = %q, want %q", tc.x, tc.y, got, tc.want)
			}
		})
	}
	if got := BoxesAt(nil, 1, 1); got != nil {
		t.Errorf("BoxesAt(nil) = %v", got)
	}
}
