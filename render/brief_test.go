package render

import (
	"slices"
	"testing"

	"github.com/changedigest/changedigest"
)

// TestDropTitle checks that an item's title is taken off the start of
// its text, also when a word of it is a piece of its own (a marked
// interest), and that a text that is only the title, or does not start
// with it, is kept.
func TestDropTitle(t *testing.T) {
	title := "General election date announced"
	cases := []struct {
		name string
		in   []Piece
		want []Piece
	}{
		{"one piece", []Piece{{Op: "ins", Text: "General election date announced The vote is in May."}},
			[]Piece{{Op: "ins", Text: "The vote is in May."}}},
		{"marked word", []Piece{{Op: "ins", Text: "General "}, {Op: "ins", Text: "election", Mark: "election"}, {Op: "ins", Text: " date announced The vote is in May."}},
			[]Piece{{Op: "ins", Text: "The vote is in May."}}},
		{"title ends a piece", []Piece{{Op: "ins", Text: "General election date announced"}, {Op: "ins", Text: " The vote", Mark: "vote"}},
			[]Piece{{Op: "ins", Text: " The vote", Mark: "vote"}}},
		{"only the title", []Piece{{Op: "ins", Text: "General election date announced"}},
			[]Piece{{Op: "ins", Text: "General election date announced"}}},
		{"another start", []Piece{{Op: "ins", Text: "The prime minister said"}},
			[]Piece{{Op: "ins", Text: "The prime minister said"}}},
		{"differs inside", []Piece{{Op: "ins", Text: "General "}, {Op: "ins", Text: "elections", Mark: "election"}, {Op: "ins", Text: " are near"}},
			[]Piece{{Op: "ins", Text: "General "}, {Op: "ins", Text: "elections", Mark: "election"}, {Op: "ins", Text: " are near"}}},
	}
	for _, c := range cases {
		if got := dropTitle(c.in, title); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestHeadline checks the headline and the title a version gets: a new
// item by its title, an edit by its words, "+N more" for the others, and
// the lead of the change the headline tells, not of another.
func TestHeadline(t *testing.T) {
	item := func(title string, op changedigest.Op, text string, interests ...string) ChangeView {
		return ChangeView{Op: op, Item: &ItemView{Title: title}, Pieces: []Piece{{Op: "ins", Text: text}}, Interests: interests}
	}
	edit := ChangeView{Op: changedigest.OpUpdate, Pieces: []Piece{{Op: "eq", Text: "Tickets cost "}, {Op: "del", Text: "24"}, {Op: "ins", Text: "29"}, {Op: "eq", Text: " euros"}}}
	// A Japanese sentence rewritten tells more than two names added
	// beside it, though it is one run of letters.
	ja := ChangeView{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Where: "in the footer",
		Pieces: []Piece{{Op: "del", Text: "News and Updates（英語）でご確認いただけます"}, {Op: "ins", Text: "ニュースとアップデートでご確認いただけます"}}}
	names := ChangeView{Type: changedigest.ChangeContent, Op: changedigest.OpInsert, Where: "in the footer", Pieces: []Piece{{Op: "ins", Text: "English 한국어"}}}
	// The year at the foot of the page changed while the menu moved:
	// the edit tells more than the words that read elsewhere.
	year := ChangeView{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Where: "in the footer",
		Pieces: []Piece{{Op: "eq", Text: "Civitai "}, {Op: "del", Text: "2025"}, {Op: "ins", Text: "2026"}}}
	menu := ChangeView{Type: changedigest.ChangeContent, Op: changedigest.OpMove,
		Pieces: []Piece{{Op: "eq", Text: "Models Images Articles Users Collections Bounties Tools"}}}
	// A table gained a column and lost two: the column headers tell,
	// the cells repeated in every row ("No") do not.
	cell := func(op changedigest.Op, text string) ChangeView {
		side := "ins"
		if op == changedigest.OpDelete {
			side = "del"
		}
		return ChangeView{Type: changedigest.ChangeContent, Op: op, Pieces: []Piece{{Op: side, Text: text}}}
	}
	table := []ChangeView{cell(changedigest.OpDelete, "FF 91 ESR"), cell(changedigest.OpDelete, "FF 103"), cell(changedigest.OpInsert, "FF 119"),
		cell(changedigest.OpDelete, "No"), cell(changedigest.OpDelete, "No"), cell(changedigest.OpDelete, "Yes"), cell(changedigest.OpDelete, "Yes"), menu}
	cases := []struct {
		name     string
		v        EventView
		headline string
		title    string
		lead     string
	}{
		{"a new item", EventView{WatchName: "Riverside Daily", General: []ChangeView{item("Tennis courts reopen", changedigest.OpInsert, "Tennis courts reopen The courts are open.")}},
			"Tennis courts reopen", "Riverside Daily: Tennis courts reopen", ""},
		{"an edit and more", EventView{WatchName: "Tickets", General: []ChangeView{edit, edit}},
			"cost 24 → 29 euros +1 more", "Tickets: cost 24 → 29 euros +1 more", ""},
		{"an interest leads", EventView{WatchName: "Riverside Daily",
			Profile: []ChangeView{item("Rugby final moved", changedigest.OpDelete, "Rugby final moved The final is on Saturday.", "football"),
				item("General election date announced", changedigest.OpInsert, "General election date announced The vote is in May.", "election")},
			General: []ChangeView{edit}},
			"General election date announced +2 more", "★ election: Riverside Daily: General election date announced +2 more", "election"},
		{"an edit before a move", EventView{WatchName: "Terms", General: []ChangeView{menu, year}},
			"Civitai 2025 → 2026 +1 more", "Terms: Civitai 2025 → 2026 +1 more", ""},
		{"short ones together", EventView{WatchName: "Compatibility", General: table},
			"‘FF 119’; removed: ‘FF 91 ESR’, ‘FF 103’ +5 more", "Compatibility: ‘FF 119’; removed: ‘FF 91 ESR’, ‘FF 103’ +5 more", ""},
		{"a sentence without spaces", EventView{WatchName: "Guidelines", General: []ChangeView{names, ja}},
			changeHeadline(ja) + " +1 more", "Guidelines: " + changeHeadline(ja) + " +1 more", ""},
	}
	for _, c := range cases {
		h, lead := headline(&c.v)
		c.v.Headline, c.v.Lead = h, lead
		if h != c.headline || lead != c.lead || c.v.Title() != c.title {
			t.Errorf("%s: headline %q (lead %q), title %q; want %q (%q), %q", c.name, h, lead, c.v.Title(), c.headline, c.lead, c.title)
		}
	}
}
