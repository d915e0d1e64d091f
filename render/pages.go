package render

import (
	"html/template"
	"strconv"

	"github.com/changedigest/changedigest"
)

// DiffPage is the Data of the "diff" page: one version of a watch with
// its changes side by side. Build it with Engine.DiffPage.
type DiffPage struct {
	Event EventView
	// PrevURL and NextURL link the neighbouring versions, "" at the ends.
	PrevURL string
	NextURL string
}

// DiffPage builds the version page of an event, showing the full text of
// every change in two columns. prev and next are the sequence numbers of
// the neighbouring versions with changes, 0 when there is none. Errors as
// for View.
func (e *Engine) DiffPage(ev Event, prev, next int) (*DiffPage, error) {
	v, err := e.View(ev, ViewOptions{SideBySide: true})
	if err != nil {
		return nil, err
	}
	p := &DiffPage{Event: v}
	if prev > 0 {
		p.PrevURL = e.sitePath(versionPath(v.WatchID, prev))
	}
	if next > 0 {
		p.NextURL = e.sitePath(versionPath(v.WatchID, next))
	}
	return p, nil
}

// WatchPage is the Data of the "watch" page: a watch, the chart of its
// change sizes and its latest change events. Build it with
// Engine.WatchPage.
type WatchPage struct {
	ID       int64
	Name     string
	URL      string // the watched address when http or https
	Tags     []string
	Checks   int
	Versions int
	FeedURL  string
	Chart    template.HTML
	Events   []EventView
}

// WatchPage builds the page of a watch from its latest events (newest
// first, as given), the points of its whole history and the address of
// its feed. Errors as for View.
func (e *Engine) WatchPage(w *changedigest.Watch, events []Event, points []ChartPoint, feedURL string) (*WatchPage, error) {
	p := &WatchPage{
		ID:       w.ID,
		Name:     oneLine(w.Name()),
		URL:      safeURL(w.URL),
		Checks:   w.Checks,
		Versions: len(points),
		FeedURL:  safeURL(feedURL),
		Chart:    ChangeChart(points),
	}
	if p.Name == "" {
		p.Name = "watch " + strconv.FormatInt(w.ID, 10)
	}
	for _, t := range w.Tags {
		p.Tags = append(p.Tags, oneLine(t))
	}
	for _, ev := range events {
		v, err := e.View(ev, ViewOptions{Context: e.Context, MaxChars: e.MaxChangeChars})
		if err != nil {
			return nil, err
		}
		p.Events = append(p.Events, v)
	}
	return p, nil
}

// ErrorPage is the Data of the "error" page.
type ErrorPage struct {
	Title   string
	Message string
}
