package server

import (
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pdftext"
	"github.com/changedigest/changedigest/render"
)

// seqParam reads the {seq} parameter.
func seqParam(r *http.Request, name string) (int, error) {
	v := chiParam(r, name)
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, changedigest.Errorf(changedigest.ENOTFOUND, "%q is not a version number", clip(v))
	}
	return n, nil
}

// userVersion loads the request's watch {id}, if it is the user's, and its
// stored version {seq}.
func (s *Server) userVersion(r *http.Request) (*changedigest.Watch, *changedigest.Snapshot, error) {
	wt, err := s.userWatch(r)
	if err != nil {
		return nil, nil, err
	}
	seq, err := seqParam(r, "seq")
	if err != nil {
		return nil, nil, err
	}
	v, err := s.Store.Version(r.Context(), wt.ID, seq)
	if err != nil {
		return nil, nil, err
	}
	return wt, v, nil
}

// versionPage is the Data of the "version" page: one version's changes
// against the version before it, side by side.
type versionPage struct {
	*render.DiffPage
	WatchID int64
	Seq     int
	At      time.Time
	Status  int
	First   bool
	// Shots are the screenshots of a browser-rendered version; nil for
	// fetched pages.
	Shots *render.ShotPair
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) error {
	wt, v, err := s.userVersion(r)
	if err != nil {
		return err
	}
	seq := v.Seq
	m, err := s.Notify.Matcher(r.Context(), wt.UserID)
	if err != nil {
		return err
	}
	prev, next, err := s.neighbours(r, wt.ID, seq)
	if err != nil {
		return err
	}
	dp, err := s.Render.DiffPage(render.Event{Watch: wt, Snapshot: v, Matches: notify.Match(m, v.Changes)}, prev, next)
	if err != nil {
		return err
	}
	info, err := s.Store.Track(r.Context(), wt.ID)
	if err != nil {
		return err
	}
	p := &versionPage{DiffPage: dp, WatchID: wt.ID, Seq: seq, At: v.FetchedAt, Status: v.Status, First: seq == info.Oldest}
	if v.Screenshot != nil {
		var before *changedigest.Screenshot
		if prev > 0 {
			pv, err := s.Store.Version(r.Context(), wt.ID, prev)
			if err != nil {
				return err
			}
			before = pv.Screenshot
		}
		p.Shots = s.Render.ShotPair(wt.ID, seq, v.Screenshot, prev, before, v.Changes)
	}
	return s.renderPage(w, r, http.StatusOK, "version", "", fmt.Sprintf("%s, version %d", wt.Name(), seq), p)
}

// neighbours finds the stored versions just before and after seq (0 at the ends).
func (s *Server) neighbours(r *http.Request, watchID int64, seq int) (prev, next int, err error) {
	older, err := s.Store.Versions(r.Context(), watchID, seq, 1)
	if err != nil {
		return 0, 0, err
	}
	if len(older) > 0 {
		prev = older[0].Seq
	}
	newer, err := s.Store.Versions(r.Context(), watchID, seq+2, 1)
	if err != nil {
		return 0, 0, err
	}
	if len(newer) > 0 && newer[0].Seq > seq {
		next = newer[0].Seq
	}
	return prev, next, nil
}

// contentPage is the Data of the "content" page: a version's segments.
type contentPage struct {
	WatchID  int64
	Name     string
	Seq      int
	At       time.Time
	Kind     changedigest.Kind
	Size     int
	Segments []changedigest.Segment
}

func (s *Server) handleVersionContent(w http.ResponseWriter, r *http.Request) error {
	wt, v, err := s.userVersion(r)
	if err != nil {
		return err
	}
	seq := v.Seq
	p := &contentPage{WatchID: wt.ID, Name: wt.Name(), Seq: seq, At: v.FetchedAt, Kind: v.Kind, Size: v.Size, Segments: v.Segments}
	return s.renderPage(w, r, http.StatusOK, "content", "", fmt.Sprintf("%s, version %d", wt.Name(), seq), p)
}

// handleVersionSource sends a stored body as plain text in a sandbox, so
// the page's own markup and scripts never run on this site; a PDF as its
// text, page by page (its bytes are the API's body download).
func (s *Server) handleVersionSource(w http.ResponseWriter, r *http.Request) error {
	wt, v, err := s.userVersion(r)
	if err != nil {
		return err
	}
	seq := v.Seq
	body, err := s.Store.Body(r.Context(), wt.ID, seq)
	if err != nil {
		return err
	}
	if pdftext.IsPDF(body) {
		// A PDF's source, as people read it, is its text page by page.
		text, err := s.Segmenter.PDF.Pages(r.Context(), body)
		if err != nil {
			return err
		}
		var b strings.Builder
		for i, p := range text.Pages {
			fmt.Fprintf(&b, "--- Page %d ---\n\n%s\n", i+1, strings.TrimRight(p, "\n "))
		}
		if text.More {
			fmt.Fprintf(&b, "--- The document has more than %d pages; only those are read. ---\n", len(text.Pages))
		}
		body = []byte(b.String())
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": fmt.Sprintf("watch-%d-version-%d.txt", wt.ID, seq)}))
	h.Set("Cache-Control", "private, max-age=86400")
	_, err = w.Write(crawl.ToUTF8(body, v.ContentType))
	return err
}

// comparePage is the Data of the "compare" page: any two versions.
type comparePage struct {
	*render.DiffPage
	WatchID  int64
	From, To int
	Latest   int
	Similar  float64
}

func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) error {
	wt, err := s.userWatch(r)
	if err != nil {
		return err
	}
	info, err := s.Store.Track(r.Context(), wt.ID)
	if err != nil {
		return err
	}
	if info.Versions == 0 {
		return changedigest.Errorf(changedigest.ENOTFOUND, "%s has no stored version yet", wt.Name())
	}
	from, err := formSeq(r.URL.Query().Get("from"), info.Oldest, "from")
	if err != nil {
		return err
	}
	to, err := formSeq(r.URL.Query().Get("to"), info.Latest, "to")
	if err != nil {
		return err
	}
	if from > to {
		from, to = to, from
	}
	vf, err := s.Store.Version(r.Context(), wt.ID, from)
	if err != nil {
		return err
	}
	vt, err := s.Store.Version(r.Context(), wt.ID, to)
	if err != nil {
		return err
	}
	bf, err := s.Store.Body(r.Context(), wt.ID, from)
	if err != nil {
		return err
	}
	bt, err := s.Store.Body(r.Context(), wt.ID, to)
	if err != nil {
		return err
	}
	d, err := s.Segmenter.DiffContext(r.Context(), crawl.ToUTF8(bf, vf.ContentType), crawl.ToUTF8(bt, vt.ContentType), vt.Zone)
	if err != nil {
		return err
	}
	m, err := s.Notify.Matcher(r.Context(), wt.UserID)
	if err != nil {
		return err
	}
	snap := *vt
	snap.Changes = d.Changes
	dp, err := s.Render.DiffPage(render.Event{Watch: wt, Snapshot: &snap, Matches: notify.Match(m, d.Changes)}, 0, 0)
	if err != nil {
		return err
	}
	p := &comparePage{DiffPage: dp, WatchID: wt.ID, From: from, To: to, Latest: info.Latest, Similar: d.Similarity}
	return s.renderPage(w, r, http.StatusOK, "compare", "", fmt.Sprintf("%s, version %d to %d", wt.Name(), from, to), p)
}

// Percent is the similarity of the two versions in whole percent.
func (p *comparePage) Percent() int { return int(math.Round(p.Similar * 100)) }

// formSeq reads a version number from a form, def when empty.
func formSeq(v string, def int, name string) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, changedigest.Errorf(changedigest.EINVALID, "%s: %q is not a version number", name, v)
	}
	return n, nil
}
