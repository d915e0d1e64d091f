package render

import (
	"cmp"
	"slices"
	"strings"

	"github.com/changedigest/changedigest"
)

// ShotPair is the Data of the screenshots of a version page: the version
// before and this one side by side, the elements that changed outlined,
// and the overlay of the pixels that differ. Build it with
// Engine.ShotPair.
type ShotPair struct {
	// Before is nil when the version before has no screenshot.
	Before *ShotView
	After  *ShotView
	// OverlayURL is the image of the pixels that differ; "" without Before.
	OverlayURL string
}

// ShotView is one screenshot with its outlines.
type ShotView struct {
	Seq           int
	URL           string
	Width, Height int
	Outlines      []Outline
}

// Outline is a changed element's rectangle in the image's pixels, and
// the type of its change.
type Outline struct {
	X, Y, W, H int
	Type       changedigest.ChangeType
	Title      string
}

// maxOutlineShare: a box covering more of the image than this (the body,
// a page-wide wrapper) outlines nothing useful and is left out.
const maxOutlineShare = 0.6

// ShotPair builds the screenshots of version seq of watch watchID (after)
// against the version prevSeq before it (before, nil when it has none).
// Each change is outlined on the image where its element exists: on the
// newer one unless it was deleted, on the older one unless it was
// inserted; an element without a box is outlined by its nearest ancestor
// below body, or its segment. Noise changes are not outlined.
func (e *Engine) ShotPair(watchID int64, seq int, after *changedigest.Screenshot, prevSeq int, before *changedigest.Screenshot, changes []changedigest.Change) *ShotPair {
	if after == nil {
		return nil
	}
	view := func(seq int, sh *changedigest.Screenshot, older bool) *ShotView {
		v := &ShotView{Seq: seq, URL: e.sitePath(versionPath(watchID, seq) + "/screenshot.png"), Width: sh.Width, Height: sh.Height}
		idx := boxIndex(sh)
		seen := map[changedigest.Box]bool{}
		for _, c := range changes {
			if c.Noise != "" || (older && c.Op == changedigest.OpInsert) || (!older && c.Op == changedigest.OpDelete) {
				continue
			}
			seg := -1
			if older == (c.Op == changedigest.OpDelete) {
				seg = c.Segment
			}
			b, ok := idx.find(c.Path, seg)
			if !ok || seen[b] || float64(b.W)*float64(b.H) > maxOutlineShare*float64(sh.Width)*float64(sh.Height) {
				continue
			}
			seen[b] = true
			v.Outlines = append(v.Outlines, Outline{
				X: b.X, Y: b.Y, W: b.W, H: b.H,
				Type: c.Type, Title: oneLine(string(c.Type) + " " + string(c.Op) + " at " + c.Path),
			})
		}
		return v
	}
	p := &ShotPair{After: view(seq, after, false)}
	if before != nil && prevSeq > 0 {
		p.Before = view(prevSeq, before, true)
		p.OverlayURL = e.sitePath(versionPath(watchID, seq) + "/overlay.png")
	}
	return p
}

type boxes struct {
	byPath map[string]changedigest.Box
	bySeg  map[int]changedigest.Box
}

func boxIndex(sh *changedigest.Screenshot) boxes {
	x := boxes{byPath: make(map[string]changedigest.Box, len(sh.Boxes)), bySeg: map[int]changedigest.Box{}}
	for _, b := range sh.Boxes {
		if _, ok := x.byPath[b.Path]; !ok {
			x.byPath[b.Path] = b
		}
		if _, ok := x.bySeg[b.Segment]; !ok && b.Segment >= 0 {
			x.bySeg[b.Segment] = b
		}
	}
	return x
}

// find returns the box of path, else of its nearest ancestor deeper than
// html|body, else of segment seg (-1: none).
func (x boxes) find(path string, seg int) (changedigest.Box, bool) {
	for p := path; strings.Count(p, "|") >= 2; p = p[:strings.LastIndexByte(p, '|')] {
		if b, ok := x.byPath[p]; ok {
			return b, true
		}
	}
	b, ok := x.bySeg[seg]
	return b, ok && seg >= 0
}

// BoxesAt returns the boxes of sh that contain the point (x, y) of its
// image, smallest first (deeper first among equal sizes), each path
// once; the boxes of html and body, which hold every point, are left
// out. They are the elements a click at that point may mean.
func BoxesAt(sh *changedigest.Screenshot, x, y int) []changedigest.Box {
	if sh == nil || x < 0 || y < 0 || x >= sh.Width || y >= sh.Height {
		return nil
	}
	var out []changedigest.Box
	seen := map[string]bool{}
	for _, b := range sh.Boxes {
		if x < b.X || y < b.Y || x >= b.X+b.W || y >= b.Y+b.H || strings.Count(b.Path, "|") < 2 || seen[b.Path] {
			continue
		}
		seen[b.Path] = true
		out = append(out, b)
	}
	slices.SortStableFunc(out, func(a, b changedigest.Box) int {
		if c := cmp.Compare(a.W*a.H, b.W*b.H); c != 0 {
			return c
		}
		return cmp.Compare(strings.Count(b.Path, "|"), strings.Count(a.Path, "|"))
	})
	return out
}
