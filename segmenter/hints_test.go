package segmenter

import (
	"testing"

	"github.com/changedigest/changedigest"
)

// TestResourceHints checks that links that only say what to fetch early
// are noise when a new build renames their bundles, while a style sheet
// and a script that changed are told.
func TestResourceHints(t *testing.T) {
	page := func(build string) string {
		return `<html><head><title>Shop</title>
<link rel="modulepreload" href="/assets/app.` + build + `.js">
<link rel="preload" as="font" href="/fonts/sans.` + build + `.woff2">
<link rel="dns-prefetch" href="//cdn-` + build + `.example.com">
<link rel="stylesheet" href="/assets/site-` + build + `-theme.css">
<script src="/assets/main-` + build + `-bundle.js"></script>
</head><body><p>Opening hours: 9 to 17.</p></body></html>`
	}
	changes := detectTwo(t, page("one"), page("two"))
	hints, told := 0, map[changedigest.ChangeType]int{}
	for _, c := range changes {
		switch {
		case c.Noise == NoiseResourceHint:
			hints++
		case c.Noise == "":
			told[c.Type]++
		}
	}
	if hints != 3 {
		t.Errorf("%d changes of resource hints marked noise, want 3: %+v", hints, changes)
	}
	if told[changedigest.ChangeCosmetic] != 1 || told[changedigest.ChangeBehavioural] != 1 {
		t.Errorf("told %v, want the style sheet (cosmetic) and the script (behavioural)", told)
	}
}

// TestCSSForm checks that inline styles differing only in white space
// read alike, and differing values do not.
func TestCSSForm(t *testing.T) {
	same := [][2]string{
		{"color:red;margin:0 auto", "color: red; margin: 0  auto;"},
		{"--button-height:var(--h-sm);font:12px/1.2 a,b", " --button-height: var( --h-sm ); font: 12px/1.2 a, b ; "},
	}
	for _, p := range same {
		if cssForm(p[0]) != cssForm(p[1]) {
			t.Errorf("%q and %q: %q ≠ %q", p[0], p[1], cssForm(p[0]), cssForm(p[1]))
		}
	}
	differ := [][2]string{
		{"margin:0 auto", "margin:0auto"},
		{"color:red", "color:blue"},
		{"font:a b", "font:ab"},
	}
	for _, p := range differ {
		if cssForm(p[0]) == cssForm(p[1]) {
			t.Errorf("%q and %q read alike (%q)", p[0], p[1], cssForm(p[0]))
		}
	}
}
