package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ValuePoint is one version's value on the value chart.
type ValuePoint struct {
	At    time.Time
	Value float64
	// Told is set when the version met the watch's condition.
	Told bool
}

// chartMaxValuePoints bounds the points drawn; past it the newest are drawn.
const chartMaxValuePoints = 500

// ValueChart draws the series of a watch's values (a price over time) as
// an inline SVG line chart: no script, a title and a description for
// screen readers, a tooltip per point, told versions drawn as filled
// dots. Points may come in any order; past 500 only the newest 500 are
// drawn. With no points it draws an empty frame saying so.
func ValueChart(points []ValuePoint, unit string) template.HTML {
	ps := slices.Clone(points)
	slices.SortStableFunc(ps, func(a, b ValuePoint) int { return a.At.Compare(b.At) })
	if len(ps) > chartMaxValuePoints {
		ps = ps[len(ps)-chartMaxValuePoints:]
	}
	h := sha256.New()
	for _, p := range ps {
		fmt.Fprintf(h, "%d %g %t;", p.At.UnixNano(), p.Value, p.Told)
	}
	id := "vc-" + hex.EncodeToString(h.Sum(nil)[:4])

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-labelledby="%s-t %s-d" font-family="sans-serif" font-size="11">`, chartW, chartH, id, id)
	title := "Value over time"
	if len(ps) == 0 {
		fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">No value read yet.</desc>`, id, title, id)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f6f8fa" stroke="#d0d7de"/>`, plotX0, plotY0, plotX1-plotX0, plotY1-plotY0)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#57606a" font-size="14">No value yet</text></svg>`, (plotX0+plotX1)/2, (plotY0+plotY1)/2+5)
		return template.HTML(b.String())
	}
	lo, hi := ps[0].Value, ps[0].Value
	for _, p := range ps {
		lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
	}
	if hi == lo {
		pad := math.Max(math.Abs(hi)*0.1, 1)
		lo, hi = lo-pad, hi+pad
	}
	t0, t1 := ps[0].At, ps[len(ps)-1].At
	span := t1.Sub(t0)
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return (plotX0 + plotX1) / 2
		}
		return plotX0 + float64(t.Sub(t0))/float64(span)*(plotX1-plotX0)
	}
	yOf := func(v float64) float64 { return plotY1 - (v-lo)/(hi-lo)*(plotY1-plotY0) }
	last := ps[len(ps)-1]
	desc := fmt.Sprintf("%d %s from %s to %s, from %s to %s; now %s.", len(ps), plural(len(ps), "value", "values"),
		t0.UTC().Format(chartDay), t1.UTC().Format(chartDay), valueText(lo, unit), valueText(hi, unit), valueText(last.Value, unit))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, id, title, id, template.HTMLEscapeString(desc))
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#d0d7de" stroke-width="1"/>`, plotX0, num(y), plotX1, num(y))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" fill="#57606a">%s</text>`, plotX0-6, num(y+4), template.HTMLEscapeString(axisValue(v)))
	}
	if unit != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#57606a">%s</text>`, 4, plotY0-12, template.HTMLEscapeString(unit))
	}
	// The line steps: a value holds until the next version.
	var path strings.Builder
	for i, p := range ps {
		x, y := xOf(p.At), yOf(p.Value)
		if i == 0 {
			fmt.Fprintf(&path, "M%s %s", num(x), num(y))
		} else {
			fmt.Fprintf(&path, " H%s V%s", num(x), num(y))
		}
	}
	fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`, path.String(), colourGeneral)
	for _, p := range ps {
		fill := "#ffffff"
		if p.Told {
			fill = colourProfile
		}
		tip := p.At.UTC().Format("2006-01-02 15:04") + ": " + valueText(p.Value, unit)
		if p.Told {
			tip += " (told)"
		}
		fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s" stroke="%s" stroke-width="1.5"><title>%s</title></circle>`,
			num(xOf(p.At)), num(yOf(p.Value)), fill, colourGeneral, template.HTMLEscapeString(tip))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f" stroke-width="1"/>`, plotX0, plotY1, plotX1, plotY1)
	first, lastDay := t0.UTC().Format(chartDay), t1.UTC().Format(chartDay)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#57606a">%s</text>`, plotX0, plotY1+22, first)
	if lastDay != first {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#57606a">%s</text>`, plotX1, plotY1+22, lastDay)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// valueText writes a value with its unit: "19.5 EUR".
func valueText(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if math.Abs(v) >= 1e-2 && math.Abs(v) < 1e15 {
		s = strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// axisValue writes an axis label: large values short (1.2k), small ones
// with two decimals at most.
func axisValue(v float64) string {
	if math.Abs(v) >= 1e3 {
		sign := ""
		if v < 0 {
			sign, v = "-", -v
		}
		return sign + shortNum(v)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
