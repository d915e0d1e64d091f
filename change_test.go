package changedigest

import "testing"

func TestPlaceName(t *testing.T) {
	for where, want := range map[string]string{
		"under ‘Blue kettle, 1.7 l’": "Blue kettle, 1.7 l",
		"in ‘Basket’":                "Basket",
		"in the navigation":          "",
		"under ‘unclosed":            "",
		"":                           "",
	} {
		if got := (Change{Where: where}).PlaceName(); got != want {
			t.Errorf("PlaceName of %q = %q, want %q", where, got, want)
		}
	}
}
