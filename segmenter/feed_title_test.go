package segmenter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// rssOf is an RSS feed of items given as title, date (RFC 1123, or "")
// and text, without ids or links.
func rssOf(items ...[3]string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>News</title><link>https://example.org/</link><description>d</description>`)
	for _, it := range items {
		fmt.Fprintf(&b, "<item><title>%s</title>", it[0])
		if it[1] != "" {
			fmt.Fprintf(&b, "<pubDate>%s</pubDate>", it[1])
		}
		fmt.Fprintf(&b, "<description>%s</description></item>", it[2])
	}
	b.WriteString(`</channel></rss>`)
	return []byte(b.String())
}

// TestFeedTitleChangedAtEnd checks that an item whose title changed at
// its end, or kept its title under new text, is told as the same item
// updated when nothing better matches, and that items alike only in
// their first words, or dated apart, stay two.
func TestFeedTitleChangedAtEnd(t *testing.T) {
	other := [3]string{"Harbour ferry timetable", "", "The ferry leaves every hour from the north pier until ten in the evening."}
	cases := []struct {
		name     string
		old, new [][3]string
		want     map[changedigest.Op]int
	}{
		{"suffix changed",
			[][3]string{{"PTR 2.7.3 | Preview Blog", "", "The test realm opens with new dungeons and a reworked talent tree for every class."}, other},
			[][3]string{{"PTR 2.7.3 | Now Live", "", "Patch notes are out: download sizes, server times and the full list of fixes."}, other},
			map[changedigest.Op]int{changedigest.OpUpdate: 1}},
		{"suffix added",
			[][3]string{{"Council meets on Monday", "", "The agenda lists the budget and the new bridge."}, other},
			[][3]string{{"Council meets on Monday: budget passed", "", "Councillors passed the budget by nine votes to four after a long night."}, other},
			map[changedigest.Op]int{changedigest.OpUpdate: 1}},
		{"same title, new text",
			[][3]string{{"Weather this week", "", "Rain on Monday and Tuesday, then sun."}, other},
			[][3]string{{"Weather this week", "", "A storm warning for the coast from Thursday night: stay away from the piers."}, other},
			map[changedigest.Op]int{changedigest.OpUpdate: 1}},
		{"alike in the first words only",
			[][3]string{{"Release notes for version 1.2", "", "Bug fixes in the importer and faster start."}, other},
			[][3]string{{"Release notes for the mobile app", "", "The app now syncs in the background and shows badges."}, other},
			map[changedigest.Op]int{changedigest.OpInsert: 1, changedigest.OpDelete: 1}},
		{"dated apart",
			[][3]string{{"Weekly update: March 3", "Tue, 03 Mar 2026 09:00:00 GMT", "Roadworks on the high street start on Monday."}, {"Harbour ferry timetable", "Mon, 02 Mar 2026 09:00:00 GMT", other[2]}},
			[][3]string{{"Weekly update: March 10", "Tue, 10 Mar 2026 09:00:00 GMT", "The swimming pool closes for repairs for two weeks."}, {"Harbour ferry timetable", "Mon, 02 Mar 2026 09:00:00 GMT", other[2]}},
			map[changedigest.Op]int{changedigest.OpInsert: 1, changedigest.OpDelete: 1}},
		{"a series",
			[][3]string{{"Match report: Riverside v Castle", "", "A draw in the rain."}, {"Match report: Mill Town v Bridge", "", "Bridge won away."}, other},
			[][3]string{{"Match report: Harbour v Quay", "", "Three goals in the second half."}, {"Match report: Mill Town v Bridge", "", "Bridge won away."}, other},
			map[changedigest.Op]int{changedigest.OpInsert: 1, changedigest.OpDelete: 1}},
		{"two candidates",
			[][3]string{{"Match report: Riverside", "", "A draw in the rain."}, other},
			[][3]string{{"Match report: Riverside win", "", "Three goals in the second half."}, {"Match report: Riverside lose", "", "A late goal sank them."}, other},
			map[changedigest.Op]int{changedigest.OpInsert: 2, changedigest.OpDelete: 1}},
	}
	for _, c := range cases {
		d, err := DiffFeeds(rssOf(c.old...), rssOf(c.new...))
		if err != nil {
			t.Fatal(err)
		}
		got := map[changedigest.Op]int{}
		for _, ch := range d.Changes {
			got[ch.Op]++
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
