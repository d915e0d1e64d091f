package segmenter

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// TestTypography: a page whose quotes broke into "???" or became curly
// changed no word; one whose numbers, signs or words changed did.
func TestTypography(t *testing.T) {
	cases := []struct {
		old, new string
		noise    bool
	}{
		{"Putin’s new missile", "Putin???s new missile", true},
		{"it's open", "it’s open", true},
		{"9 – 17", "9 — 17", true},
		{"© 2018 Reporter 💡", "?? 2018 Reporter ????", true},
		{"wait...", "wait…", false}, // full stops are told: "1.5" → "15"
		{"-5 °C", "+5 °C", false},
		{"1.5 million", "15 million", false},
		{"Open today", "Closed today", false},
		{"Open today?", "Open today!", false},
		{"5 €", "5 $", false},
		{"x ≤ 5", "x ≥ 5", false},
		{"Café", "Caf?", false},
	}
	for _, c := range cases {
		d := detectTwo(t, "<html><body><p>"+c.old+"</p><p>The rest of the page stays as it was.</p></body></html>",
			"<html><body><p>"+c.new+"</p><p>The rest of the page stays as it was.</p></body></html>")
		var content []changedigest.Change
		for _, ch := range d {
			if ch.Type == changedigest.ChangeContent {
				content = append(content, ch)
			}
		}
		if len(content) == 0 {
			t.Errorf("%q → %q: no change of text", c.old, c.new)
			continue
		}
		for _, ch := range content {
			if got := ch.Noise == NoiseTypography; got != c.noise {
				t.Errorf("%q → %q: %s %q → %q noise %q, want typography %v", c.old, c.new, ch.Op, ch.OldText, ch.NewText, ch.Noise, c.noise)
			}
		}
	}
}

// untypeset is s without its typographic characters, its spaces
// collapsed: what sameUntypeset compares.
func untypeset(s string) string {
	s = strings.Map(func(r rune) rune {
		if typographic(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// TestSameUntypeset checks sameUntypeset against the texts untypeset
// makes.
func TestSameUntypeset(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"a", "b", "it", " ", "  ", "\n", "\u00a0", "'", "’", "?", "—", "©", "💡", "\xff", "\xe2\x80", "é", "5", "€", ".", "\ufffd"}
	text := func() string {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return sb.String()
	}
	same := 0
	for range 20000 {
		a, b := text(), text()
		want := untypeset(a) == untypeset(b)
		if want {
			same++
		}
		if got := sameUntypeset(a, b); got != want {
			t.Fatalf("sameUntypeset(%q, %q) = %v, untypeset gives %q and %q", a, b, got, untypeset(a), untypeset(b))
		}
	}
	if same == 0 {
		t.Error("no pair read the same")
	}
}
