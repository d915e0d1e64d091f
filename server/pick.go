package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/render"
	"github.com/changedigest/changedigest/segmenter"
)

// The zone picker: the newest screenshot of a browser-rendered watch as
// an image button (<input type="image">), whose click the browser sends
// as pick.x and pick.y with no script. The server finds the element
// drawn there from the screenshot's boxes, derives a selector that
// selects it alone in the stored page, outlines it with an SVG over the
// image, and sets it as the watch's zone on a post.

// pickPage is the Data of the "pick" page.
type pickPage struct {
	ID            int64
	Name          string
	Zone          string // the watch's zone now
	Seq           int    // the version whose screenshot is shown
	ShotURL       string
	Width, Height int
	// After a click at X, Y: Missed when no element was drawn there,
	// else Picked (nil with Error when it cannot be a zone), its Box,
	// and the picks of the element around it and of one inside it at
	// the same point ("" when there is none).
	Clicked         bool
	X, Y            int
	Missed          bool
	Picked          *segmenter.Picked
	Box             changedigest.Box
	Larger, Smaller string
	Error           string
}

// maxPickText is how much of the picked element's text the page shows.
const maxPickText = 2000

// maxShotScan is how many of the newest versions are looked through for
// one with a screenshot.
const maxShotScan = 100

// newestShot returns the newest stored version of a watch with a
// screenshot, 0 when none of the newest maxShotScan has one.
func (s *Server) newestShot(ctx context.Context, watchID int64) (int, error) {
	vs, err := s.Store.Versions(ctx, watchID, 0, maxShotScan)
	if err != nil {
		return 0, err
	}
	return newestShotOf(vs), nil
}

// newestShotOf is the newest of versions (newest first) with a
// screenshot, 0 when none has.
func newestShotOf(versions []changedigest.Snapshot) int {
	for _, v := range versions {
		if v.Screenshot != nil {
			return v.Seq
		}
	}
	return 0
}

// handlePick shows the screenshot to click on and, after a click, the
// element picked there.
func (s *Server) handlePick(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	seq, _ := strconv.Atoi(q.Get("seq"))
	if seq <= 0 {
		if seq, err = s.newestShot(r.Context(), wt.ID); err != nil {
			return err
		}
	}
	if seq <= 0 {
		return changedigest.Errorf(changedigest.ENOTFOUND, "this watch has no screenshot to pick from: set it to render the page in a browser (render: browser) and check it once")
	}
	v, err := s.Store.Version(r.Context(), wt.ID, seq)
	if err != nil {
		return err
	}
	sh := v.Screenshot
	if sh == nil {
		return changedigest.Errorf(changedigest.ENOTFOUND, "version %d has no screenshot", seq)
	}
	p := &pickPage{ID: wt.ID, Name: wt.Name(), Zone: wt.Zone, Seq: seq,
		ShotURL: s.Render.Path(fmt.Sprintf("/watches/%d/versions/%d/screenshot.png", wt.ID, seq)),
		Width:   sh.Width, Height: sh.Height}
	xs, ys := q.Get("pick.x"), q.Get("pick.y")
	if xs != "" || ys != "" {
		if err := s.pickAt(r, p, v, xs, ys, q.Get("path")); err != nil {
			return err
		}
	}
	return s.renderPage(w, r, http.StatusOK, "pick", "", "Pick a zone of "+wt.Name(), p)
}

// pickAt fills p with the element drawn at the clicked point of version
// v's screenshot: the one at path when path is one of them, else the
// smallest, preferring elements with text.
func (s *Server) pickAt(r *http.Request, p *pickPage, v *changedigest.Snapshot, xs, ys, path string) error {
	x, errX := strconv.Atoi(xs)
	y, errY := strconv.Atoi(ys)
	if errX != nil || errY != nil {
		return changedigest.Errorf(changedigest.EINVALID, "the click at %q, %q is not a point of the image", clip(xs), clip(ys))
	}
	p.Clicked, p.X, p.Y = true, x, y
	boxes := render.BoxesAt(v.Screenshot, x, y)
	if len(boxes) == 0 {
		p.Missed = true
		return nil
	}
	paths := make([]string, 0, len(boxes))
	for _, b := range boxes {
		if b.Path == path {
			paths = []string{path}
			break
		}
		paths = append(paths, b.Path)
	}
	body, err := s.Store.Body(r.Context(), p.ID, p.Seq)
	if err != nil {
		return err
	}
	picked, err := segmenter.Pick(crawl.ToUTF8(body, v.ContentType), paths...)
	if errors.Is(err, segmenter.ErrNoElement) || errors.Is(err, segmenter.ErrZone) {
		p.Error = changedigest.ErrorMessage(err)
		return nil
	} else if err != nil {
		return err
	}
	if len(picked.Text) > maxPickText {
		picked.Text = strings.ToValidUTF8(picked.Text[:maxPickText], "") + "…"
	}
	p.Picked = picked
	depth := strings.Count(picked.Path, "|")
	larger, smaller := -1, -1
	for _, b := range boxes {
		d := strings.Count(b.Path, "|")
		switch {
		case b.Path == picked.Path:
			p.Box = b
		case strings.HasPrefix(picked.Path, b.Path+"|") && d < depth && (larger < 0 || d > larger):
			larger, p.Larger = d, s.pickURL(p, b.Path)
		case strings.HasPrefix(b.Path, picked.Path+"|") && (smaller < 0 || d < smaller):
			smaller, p.Smaller = d, s.pickURL(p, b.Path)
		}
	}
	return nil
}

// pickURL is the address of the pick of the element at path under the
// clicked point.
func (s *Server) pickURL(p *pickPage, path string) string {
	q := url.Values{"seq": {strconv.Itoa(p.Seq)}, "pick.x": {strconv.Itoa(p.X)}, "pick.y": {strconv.Itoa(p.Y)}, "path": {path}}
	return s.Render.Path(fmt.Sprintf("/watches/%d/pick", p.ID)) + "?" + q.Encode()
}

// handleSetPickedZone sets the watch's zone to the picked selector.
func (s *Server) handleSetPickedZone(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	zone := strings.TrimSpace(r.FormValue("zone"))
	if zone == "" {
		return changedigest.Errorf(changedigest.EINVALID, "no zone was picked")
	}
	if err := segmenter.CheckZone(zone); err != nil {
		return err
	}
	_, err = s.Store.UpdateWatch(r.Context(), wt.UserID, wt.ID, func(x *changedigest.Watch) error {
		x.Zone = zone
		return x.Validate()
	})
	if err != nil {
		return err
	}
	s.setFlash(w, "info", "Zone set to "+zone+": the next checks compare only what it selects.")
	return s.redirect(w, r, fmt.Sprintf("/watches/%d", wt.ID))
}
