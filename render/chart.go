package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// ChartPoint is one version of a watch on the change chart.
type ChartPoint struct {
	At time.Time
	// Size is how much changed, in words (see ChangeSize).
	Size int
	// Profile is set when the version held a change matching the profile.
	Profile bool
}

// ChangeSize counts the words a version's changes inserted or deleted;
// a change without any changed word (a move, a cosmetic or structural
// change) counts as 1, so every change shows on the chart.
func ChangeSize(changes []changedigest.Change) int {
	n := 0
	for _, c := range changes {
		words := 0
		for _, ed := range textdiff.WordDiff(c.OldText, c.NewText) {
			if ed.Op == textdiff.Equal {
				continue
			}
			for _, t := range textdiff.Words(ed.Text) {
				if !textdiff.IsSpace(t) {
					words++
				}
			}
		}
		n += max(words, 1)
	}
	return n
}

// Chart geometry, in SVG user units; the SVG scales to its container.
const (
	chartW, chartH    = 640, 210
	plotX0, plotX1    = 52, 628
	plotY0, plotY1    = 30, 176
	chartMaxBars      = 160
	chartBarMax       = 24.0
	colourGeneral     = "#6e7781"
	colourProfile     = "#e36209"
	chartDay          = "2006-01-02"
	chartMinBarHeight = 1.5
)

type bucket struct {
	from, to time.Time
	size     int
	versions int
	profile  int
}

// ChangeChart draws the change sizes of a watch over time as an inline
// SVG bar chart: no script, a title and a description for screen
// readers, a tooltip per bar. Points may come in any order; more than 160
// are summed into time buckets, so 10,000 points draw as fast and as
// small as 160. Bars of buckets holding a profile change are orange.
// With no points it draws an empty frame saying so.
func ChangeChart(points []ChartPoint) template.HTML {
	ps := slices.Clone(points)
	slices.SortStableFunc(ps, func(a, b ChartPoint) int { return a.At.Compare(b.At) })

	h := sha256.New()
	for _, p := range ps {
		fmt.Fprintf(h, "%d %d %t;", p.At.UnixNano(), p.Size, p.Profile)
	}
	id := "cc-" + hex.EncodeToString(h.Sum(nil)[:4])

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-labelledby="%s-t %s-d" font-family="sans-serif" font-size="11">`, chartW, chartH, id, id)
	title, desc := "Change size over time", ""
	if len(ps) == 0 {
		desc = "No version with changes yet."
		fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, id, title, id, desc)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f6f8fa" stroke="#d0d7de"/>`, plotX0, plotY0, plotX1-plotX0, plotY1-plotY0)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#57606a" font-size="14">No changes yet</text></svg>`, (plotX0+plotX1)/2, (plotY0+plotY1)/2+5)
		return template.HTML(b.String())
	}

	t0, t1 := ps[0].At, ps[len(ps)-1].At
	span := t1.Sub(t0)
	nb := min(len(ps), chartMaxBars)
	if span <= 0 {
		nb = 1
	}
	bs := make([]bucket, nb)
	for i := range bs {
		bs[i].from = t0.Add(time.Duration(float64(span) * float64(i) / float64(nb)))
		bs[i].to = t0.Add(time.Duration(float64(span) * float64(i+1) / float64(nb)))
	}
	total, biggest := 0, 0
	var biggestAt time.Time
	for _, p := range ps {
		i := 0
		if span > 0 {
			i = int(float64(p.At.Sub(t0)) / float64(span) * float64(nb))
			i = min(max(i, 0), nb-1)
		}
		size := max(p.Size, 0)
		bs[i].size += size
		bs[i].versions++
		if p.Profile {
			bs[i].profile++
		}
		total += size
		if size > biggest || biggestAt.IsZero() {
			biggest, biggestAt = size, p.At
		}
	}
	top := 0
	for _, bk := range bs {
		top = max(top, bk.size)
	}
	desc = fmt.Sprintf("%d %s from %s to %s, %d words changed in all; the largest change, %d words, on %s.",
		len(ps), plural(len(ps), "version", "versions"), t0.UTC().Format(chartDay), t1.UTC().Format(chartDay),
		total, biggest, biggestAt.UTC().Format(chartDay))
	if len(ps) > nb {
		desc += fmt.Sprintf(" Each bar sums %s.", durationWords(span/time.Duration(nb)))
	}
	fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, id, title, id, template.HTMLEscapeString(desc))

	// Grid and y labels: 0, half, top.
	yOf := func(v float64) float64 {
		if top == 0 {
			return plotY1
		}
		return plotY1 - v/float64(top)*(plotY1-plotY0)
	}
	ticks := []float64{0, float64(top)}
	if top >= 4 {
		ticks = []float64{0, float64(top) / 2, float64(top)}
	}
	for _, v := range ticks {
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#d0d7de" stroke-width="1"/>`, plotX0, num(y), plotX1, num(y))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" fill="#57606a">%s</text>`, plotX0-6, num(y+4), shortNum(v))
		if top == 0 {
			break
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#57606a">words changed</text>`, 4, plotY0-12)

	// Bars.
	slot := float64(plotX1-plotX0) / float64(nb)
	w := min(slot*0.8, chartBarMax)
	w = max(w, 1)
	for i, bk := range bs {
		if bk.versions == 0 {
			continue
		}
		x := float64(plotX0) + slot*float64(i) + (slot-w)/2
		y := yOf(float64(bk.size))
		hgt := float64(plotY1) - y
		if hgt < chartMinBarHeight {
			hgt, y = chartMinBarHeight, plotY1-chartMinBarHeight
		}
		colour := colourGeneral
		if bk.profile > 0 {
			colour = colourProfile
		}
		when := bk.from.UTC().Format(chartDay)
		if to := bk.to.UTC().Format(chartDay); nb > 1 && len(ps) > nb && to != when {
			when += " to " + to
		}
		tip := fmt.Sprintf("%s: %d %s changed in %d %s", when, bk.size, plural(bk.size, "word", "words"), bk.versions, plural(bk.versions, "version", "versions"))
		if bk.profile > 0 {
			tip += fmt.Sprintf(", %d matching your interests", bk.profile)
		}
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
			num(x), num(y), num(w), num(hgt), colour, template.HTMLEscapeString(tip))
	}

	// Time axis: first and last day, and the middle one when they differ.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f" stroke-width="1"/>`, plotX0, plotY1, plotX1, plotY1)
	first, last := t0.UTC().Format(chartDay), t1.UTC().Format(chartDay)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#57606a">%s</text>`, plotX0, plotY1+22, first)
	if last != first {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#57606a">%s</text>`, plotX1, plotY1+22, last)
		if mid := t0.Add(span / 2).UTC().Format(chartDay); mid != first && mid != last {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#57606a">%s</text>`, (plotX0+plotX1)/2, plotY1+22, mid)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// num formats a coordinate with at most one decimal.
func num(f float64) string { return strconv.FormatFloat(float64(int(f*10+0.5))/10, 'f', -1, 64) }

// shortNum writes an axis value: 950, 1.2k, 34k, 1.5M.
func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(float64(int(v/1e5))/10, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.Itoa(int(v/1e3)) + "k"
	case v >= 1e3:
		return strconv.FormatFloat(float64(int(v/1e2))/10, 'f', -1, 64) + "k"
	}
	return strconv.Itoa(int(v + 0.5))
}

// durationWords writes a bucket width for people: "6 hours", "3 days".
func durationWords(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		n := int(d.Hours()/24 + 0.5)
		return strconv.Itoa(n) + " days"
	case d >= 2*time.Hour:
		return strconv.Itoa(int(d.Hours()+0.5)) + " hours"
	case d >= 2*time.Minute:
		return strconv.Itoa(int(d.Minutes()+0.5)) + " minutes"
	}
	return "a few minutes"
}
