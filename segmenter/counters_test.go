package segmenter

import (
	"testing"

	"github.com/changedigest/changedigest"
)

// TestCountersOnly: counters next to counter words and times told
// relative to now, in the languages of the pages watched, are noise from
// the first check; prices, scores, votes, dates of events and text around
// a counter that changed too are not.
func TestCountersOnly(t *testing.T) {
	noise := [][2]string{
		{"42Kommentare", "43Kommentare"},
		{"42 Kommentare", "43 Kommentare"},
		{"vor 45 Minuten", "vor 1 Stunde"},
		{"Aktualisiert vor 2 Stunden", "Aktualisiert vor 3 Stunden"},
		{"updated 5 min ago", "updated 12 min ago"},
		{"Posted 3 hours ago by Ann", "Posted 4 hours ago by Ann"},
		{"2 days ago", "a week ago"},
		{"il y a 3 heures", "il y a 4 heures"},
		{"Publié il y a 10 minutes", "Publié à l'instant"},
		{"há 2 horas", "há 3 horas"},
		{"2 horas atrás", "5 horas atrás"},
		{"hace 5 minutos", "hace 1 hora"},
		{"3分钟前", "5分钟前"},
		{"发布于 2小时前", "发布于 3小时前"},
		{"阅读 1234", "阅读 1301"},
		{"5条评论", "7条评论"},
		{"1.2k views", "1.3k views"},
		{"Comments (12)", "Comments (14)"},
		{"128 commentaires", "131 commentaires"},
		{"15 comentários", "16 comentários"},
		{"just now", "3 minutes ago"},
	}
	for _, p := range noise {
		if !countersOnly(p[0], p[1]) {
			t.Errorf("%q → %q: not taken for a counter or relative time", p[0], p[1])
		}
	}
	told := [][2]string{
		{"Price 24 euros", "Price 29 euros"},
		{"€24,99", "€29,99"},
		{"Final score 2 - 1", "Final score 2 - 2"},
		{"1,234 votes", "1,500 votes"},
		{"12 points", "15 points"},
		{"Concert on 12 December", "Concert on 14 December"},
		{"3 people died", "5 people died"},
		{"3人死亡", "5人死亡"},
		{"42 Kommentare zum Haushalt", "43 Kommentare zum Wahlergebnis"},
		{"vor 2 Stunden: Regierung tritt zurück", "vor 3 Stunden: Regierung bleibt"},
		{"Opening hours 9-17", "Opening hours 10-18"},
		{"in 3 days", "in 2 days"},
		{"same", "same"},
	}
	for _, p := range told {
		if countersOnly(p[0], p[1]) {
			t.Errorf("%q → %q: taken for a counter or relative time", p[0], p[1])
		}
	}
	// Marked on content updates, with the words around the change.
	cs := []changedigest.Change{
		{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Before: "vor ", OldText: "45 Minuten", NewText: "1 Stunde"},
		{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Before: "Preis ", OldText: "24", NewText: "29", After: " Euro"},
		{Type: changedigest.ChangeContent, Op: changedigest.OpInsert, NewText: "5 Kommentare"},
	}
	markCounters(cs)
	if cs[0].Noise != NoiseCounter || cs[1].Noise != "" || cs[2].Noise != "" {
		t.Errorf("noise marked: %q %q %q", cs[0].Noise, cs[1].Noise, cs[2].Noise)
	}
}
