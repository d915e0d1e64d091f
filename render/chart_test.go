package render

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// svgStats parses an SVG and counts its bars (rect elements with a
// title), checking that aria-labelledby names a title and a description.
func svgStats(t *testing.T, svg string) (bars int, desc string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	dec.Strict = true
	ids := map[string]string{}
	var labelledby, cur string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			cur = tok.Name.Local
			for _, a := range tok.Attr {
				switch a.Name.Local {
				case "aria-labelledby":
					labelledby = a.Value
				case "id":
					ids[a.Value] = tok.Name.Local
				case "role":
					if a.Value != "img" {
						t.Errorf("role %q", a.Value)
					}
				}
			}
			if cur == "rect" {
				bars++
			}
			if cur == "script" || cur == "foreignObject" {
				t.Errorf("chart holds <%s>", cur)
			}
		case xml.CharData:
			if cur == "desc" {
				desc += string(tok)
			}
		}
	}
	parts := strings.Fields(labelledby)
	if len(parts) != 2 || ids[parts[0]] != "title" || ids[parts[1]] != "desc" {
		t.Errorf("aria-labelledby %q does not name the title and desc (%v)", labelledby, ids)
	}
	return bars, desc
}

func TestChangeChart(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	series := func(n int, step time.Duration) []ChartPoint {
		ps := make([]ChartPoint, n)
		for i := range ps {
			// Given newest first, as a store might list them.
			ps[n-1-i] = ChartPoint{At: base.Add(time.Duration(i) * step), Size: (i*37)%500 + 1, Profile: i%7 == 0}
		}
		return ps
	}
	tests := []struct {
		name     string
		points   []ChartPoint
		maxBars  int
		minBars  int
		descHas  string
		profiles bool
	}{
		{"none", nil, 1, 1, "No version with changes yet.", false},
		{"one", []ChartPoint{{At: base, Size: 12, Profile: true}}, 1, 1, "1 version from 2026-01-01 to 2026-01-01, 12 words changed", true},
		{"same time", []ChartPoint{{At: base, Size: 3}, {At: base, Size: 4}}, 1, 1, "7 words changed in all", false},
		{"zero sizes", []ChartPoint{{At: base}, {At: base.Add(time.Hour)}}, 2, 2, "0 words changed", false},
		{"ten", series(10, 6*time.Hour), 10, 2, "10 versions from 2026-01-01 to 2026-01-03", true},
		{"ten thousand", series(10000, 10*time.Minute), chartMaxBars, chartMaxBars, "Each bar sums 10 hours.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := string(ChangeChart(tt.points))
			bars, desc := svgStats(t, svg)
			if bars < tt.minBars || bars > tt.maxBars {
				t.Errorf("%d bars, want %d to %d", bars, tt.minBars, tt.maxBars)
			}
			if !strings.Contains(desc, tt.descHas) {
				t.Errorf("desc %q lacks %q", desc, tt.descHas)
			}
			if strings.Contains(svg, colourProfile) != tt.profiles {
				t.Errorf("profile colour shown = %v, want %v", !tt.profiles, tt.profiles)
			}
			if len(svg) > 40<<10 {
				t.Errorf("chart is %d bytes", len(svg))
			}
		})
	}
}

func BenchmarkChangeChart10000(b *testing.B) {
	ps := make([]ChartPoint, 10000)
	for i := range ps {
		ps[i] = ChartPoint{At: time.Unix(int64(i)*600, 0), Size: i % 300}
	}
	for b.Loop() {
		ChangeChart(ps)
	}
}

func TestChangeSize(t *testing.T) {
	tests := []struct {
		name    string
		changes []changedigest.Change
		want    int
	}{
		{"none", nil, 0},
		{"insert", []changedigest.Change{{Op: "insert", NewText: "three new words"}}, 3},
		{"update", []changedigest.Change{{Op: "update", OldText: "a b c", NewText: "a x c d"}}, 3},
		{"cosmetic counts one", []changedigest.Change{{Op: "update", Type: "cosmetic", OldText: "same", NewText: "same"}}, 1},
		{"sum", []changedigest.Change{{Op: "delete", OldText: "two words"}, {Op: "move"}}, 3},
	}
	for _, tt := range tests {
		if got := ChangeSize(tt.changes); got != tt.want {
			t.Errorf("%s: ChangeSize = %d, want %d", tt.name, got, tt.want)
		}
	}
}
