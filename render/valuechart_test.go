package render

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func TestValueChart(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		points  []ValuePoint
		circles int
		descHas string
	}{
		{"none", nil, 0, "No value read yet."},
		{"one", []ValuePoint{{At: base, Value: 24}}, 1, "now 24 EUR"},
		{"price", []ValuePoint{{At: base.Add(48 * time.Hour), Value: 19.5, Told: true}, {At: base, Value: 24}, {At: base.Add(time.Hour), Value: 29}},
			3, "3 values from 2026-01-01 to 2026-01-03, from 19.5 EUR to 29 EUR; now 19.5 EUR."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := string(ValueChart(tt.points, "EUR"))
			if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
				t.Fatalf("not XML: %v\n%s", err, svg)
			}
			if n := strings.Count(svg, "<circle"); n != tt.circles {
				t.Errorf("%d points drawn, want %d", n, tt.circles)
			}
			if !strings.Contains(svg, tt.descHas) || strings.Contains(svg, "<script") {
				t.Errorf("description lacks %q (or the SVG has a script):\n%s", tt.descHas, svg)
			}
		})
	}
	if svg := string(ValueChart([]ValuePoint{{At: base, Value: 1, Told: true}}, "")); !strings.Contains(svg, "(told)") {
		t.Errorf("a told point is not said so:\n%s", svg)
	}
}
