package segmenter

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// contentWords is the words of the content changes' old and new texts.
func contentWords(cs []changedigest.Change) (old, new []string) {
	for _, c := range cs {
		if c.Type == changedigest.ChangeContent {
			old = append(old, strings.Fields(c.OldText)...)
			new = append(new, strings.Fields(c.NewText)...)
		}
	}
	return old, new
}

func mustDiffPages(t *testing.T, old, new string) *changedigest.Diff {
	t.Helper()
	d, err := New().DiffPages([]byte(old), []byte(new), "")
	if err != nil {
		t.Fatal(err)
	}
	checkChanges(t, t.Name(), []byte(old), []byte(new), d.Changes)
	return d
}

// entries is a page whose main part holds one section per entry, with
// ids numbered by position, as documentation generators do.
func entries(tag string, es ...string) string {
	var b strings.Builder
	b.WriteString("<html><body><main>")
	for i, e := range es {
		fmt.Fprintf(&b, `<%s class="section" id="id%d"><h2>%s</h2><p>The release notes of %s, with the fixes and the new features that came with it.</p></%s>`,
			tag, i+1, e, e, tag)
	}
	b.WriteString("</main></body></html>")
	return b.String()
}

// TestRenamedContainer: a container rebuilt with another tag but the same
// text is one structural change per element, and the one word that
// changed is the only content.
func TestRenamedContainer(t *testing.T) {
	d := mustDiffPages(t, entries("div", "Version 3.6", "Version 3.5", "Version 3.4"),
		entries("section", "Version 3.6.2", "Version 3.5", "Version 3.4"))
	old, new := contentWords(d.Changes)
	// the version is in the heading and in the paragraph; the word only
	// gained a part, which is what is shown, after "3.6"
	if len(old) != 0 || !slices.Equal(new, []string{".2", ".2"}) {
		t.Errorf("content words %q → %q, want .2 inserted twice\n%s", old, new, dump(d.Changes))
	}
	for _, c := range d.Changes {
		if c.Type == changedigest.ChangeContent && (c.Op != changedigest.OpInsert || !strings.HasSuffix(c.Before, "Version 3.6")) {
			t.Errorf("want .2 inserted after \"Version 3.6\":\n%s", dump([]changedigest.Change{c}))
		}
	}
	structural := 0
	for _, c := range d.Changes {
		if c.Type == changedigest.ChangeStructural {
			structural++
		}
	}
	if structural == 0 {
		t.Errorf("the tag change is not reported:\n%s", dump(d.Changes))
	}
}

// TestEntryAddedOnTopWithPositionalIDs: an entry added at the top and one
// dropped at the bottom, while every id is renumbered, is an insertion
// and a deletion, not every entry updated into its neighbour.
func TestEntryAddedOnTopWithPositionalIDs(t *testing.T) {
	d := mustDiffPages(t, entries("section", "Version 3.5", "Version 3.4", "Version 3.3", "Version 3.2"),
		entries("section", "Version 3.6", "Version 3.5", "Version 3.4", "Version 3.3"))
	var ops []string
	for _, c := range d.Changes {
		if c.Type == changedigest.ChangeContent {
			ops = append(ops, string(c.Op))
			if c.Op == changedigest.OpInsert && !strings.Contains(c.NewText, "3.6") ||
				c.Op == changedigest.OpDelete && !strings.Contains(c.OldText, "3.2") {
				t.Errorf("%s", dump([]changedigest.Change{c}))
			}
		}
	}
	if !slices.Equal(ops, []string{"insert", "delete"}) && !slices.Equal(ops, []string{"delete", "insert"}) {
		t.Errorf("content changes %v, want one insert and one delete\n%s", ops, dump(d.Changes))
	}
}

// TestTextRewrappedInParagraphs: text that was loose in a broken caption
// and now stands in paragraphs of its own is the same text: only the
// words that changed are content.
func TestTextRewrappedInParagraphs(t *testing.T) {
	body := []string{
		"Certain groups have found a way to bring their programme into public schools during school hours.",
		"Recently the organisation has been trying to get a foothold in the districts of the state.",
		"Students whose parents do not allow them to take part have to stay in school for study hall.",
	}
	old := `<html><body><article><figure><img src="a.jpg"><figcaption>A photo of the school. ` +
		strings.Join(body, " ") + `</figcaption></figure></article></body></html>`
	body[1] = strings.Replace(body[1], "state.", "state, one by one.", 1)
	new := `<html><body><article><figure><img src="a.jpg"><figcaption>A photo of the school.</figcaption></figure><p>` +
		strings.Join(body, "</p><p>") + `</p></article></body></html>`
	d := mustDiffPages(t, old, new)
	o, n := contentWords(d.Changes)
	if len(o)+len(n) > 6 || !slices.Contains(n, "one") {
		t.Errorf("content words %q → %q, want the few changed ones\n%s", o, n, dump(d.Changes))
	}
}

// rss is a feed of items without GUIDs or links: title, date, description.
func rss(items ...[3]string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Harbour news</title>`)
	for _, it := range items {
		fmt.Fprintf(&b, "<item><title>%s</title><pubDate>%s</pubDate><description>%s</description></item>", it[0], it[1], it[2])
	}
	b.WriteString("</channel></rss>")
	return []byte(b.String())
}

// TestFeedItemIdentityByTitleAndDate: without GUIDs or links, an item
// whose description was rewritten keeps its title and date and is the same
// item; an item of a series with the same title but dated months apart is
// another item.
func TestFeedItemIdentityByTitleAndDate(t *testing.T) {
	const (
		d1 = "Mon, 06 Jul 2009 09:14:49 -0500"
		d2 = "Mon, 06 Jul 2009 10:30:00 -0500"
		d3 = "Tue, 07 Jul 2009 08:00:00 -0500"
		d4 = "Thu, 29 Oct 2009 09:10:00 -0500"
	)
	old := rss(
		[3]string{"Ferry timetable changes", d2, "From Monday the morning ferry leaves at a quarter past seven, not at seven."},
		[3]string{"Open thread", d1, "Talk about anything."},
		[3]string{"Fish market moves indoors", d3, "The market moves into the old customs hall for the winter."},
	)
	new := rss(
		[3]string{"Open thread", d4, "Talk about anything."},
		[3]string{"Ferry timetable changes", d2, "Le ferry du matin part désormais à sept heures et quart."},
		[3]string{"Fish market moves indoors", d3, "The market moves into the old customs hall for the winter."},
	)
	d, err := DiffFeeds(old, new)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Changes {
		got = append(got, fmt.Sprintf("%s %d→%d", c.Op, *c.OldItem, *c.NewItem))
	}
	slices.Sort(got)
	want := []string{"delete 1→-1", "insert -1→0", "update 0→1"}
	if !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v\n%s", got, want, dump(d.Changes))
	}
}

// TestWholeTextsAndTheCap: an inserted block keeps its whole text; with
// MaxText set the text is cut and the change says so, with the full
// lengths; similarity comes from the whole texts either way.
func TestWholeTextsAndTheCap(t *testing.T) {
	long := strings.Repeat("The council met again tonight and talked about the harbour wall. ", 40)
	old := `<html><body><main><p>Opening words of the page.</p></main></body></html>`
	new := `<html><body><main><p>Opening words of the page.</p><p>` + long + `</p></main></body></html>`
	whole, err := New().DiffPages([]byte(old), []byte(new), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Changes) != 1 || whole.Changes[0].NewText != strings.TrimSpace(long) || whole.Changes[0].Truncated {
		t.Fatalf("want one insertion with the whole text:\n%s", dump(whole.Changes))
	}
	s := New()
	s.MaxText = 200
	capped, err := s.DiffPages([]byte(old), []byte(new), "")
	if err != nil {
		t.Fatal(err)
	}
	c := capped.Changes[0]
	if !c.Truncated || len(c.NewText) > 200 || c.NewLen != len(strings.TrimSpace(long)) || c.OldLen != 0 {
		t.Errorf("capped change: truncated %v, %d bytes, new_len %d, old_len %d", c.Truncated, len(c.NewText), c.NewLen, c.OldLen)
	}
	if capped.Similarity != whole.Similarity {
		t.Errorf("similarity %v with the cap, %v without", capped.Similarity, whole.Similarity)
	}
}

// TestNarrow: a word that changed in a part shows that part, with the
// rest of the word as context; a word is never cut inside its letters.
func TestNarrow(t *testing.T) {
	for _, tc := range []struct {
		old, new                  string
		op                        changedigest.Op
		before, wold, wnew, after string
	}{
		{"3.6", "3.6.2", changedigest.OpInsert, "v 3.6", "", ".2", " x"},
		{"Kentucky's", "Kentucky’s", changedigest.OpUpdate, "v Kentucky", "'", "’", "s x"},
		{"2021-04-07", "2021-04-20", changedigest.OpUpdate, "v 2021-04-", "07", "20", " x"},
		{"v3.6.2 release", "v3.6 release", changedigest.OpDelete, "v v3.6", ".2", "", " release x"},
		{"cats", "cat", changedigest.OpUpdate, "v ", "cats", "cat", " x"},
		{"elections held", "election held", changedigest.OpUpdate, "v ", "elections", "election", " held x"},
	} {
		c := changedigest.Change{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate,
			OldText: tc.old, NewText: tc.new, Before: "v ", After: " x"}
		narrow(&c)
		if c.Op != tc.op || c.Before != tc.before || c.OldText != tc.wold || c.NewText != tc.wnew || c.After != tc.after {
			t.Errorf("%q → %q: %s %q[%q→%q]%q, want %s %q[%q→%q]%q", tc.old, tc.new,
				c.Op, c.Before, c.OldText, c.NewText, c.After, tc.op, tc.before, tc.wold, tc.wnew, tc.after)
		}
		if c.Before+c.OldText+c.After != "v "+tc.old+" x" {
			t.Errorf("%q → %q: before+old+after = %q, not the old passage", tc.old, tc.new, c.Before+c.OldText+c.After)
		}
	}
}

// compatTable is a table of features by browser, as compatibility tables
// are: a header row of browsers and one row per feature whose cells say
// Yes or No; cell(r, b) is the text of row r under browser b.
func compatTable(browsers []string, rows int, cell func(r int, b string) string) string {
	var sb strings.Builder
	sb.WriteString("<html><body><table><thead><tr><th>Feature</th>")
	for _, b := range browsers {
		fmt.Fprintf(&sb, `<th class="platform %s">%s</th>`, b, b)
	}
	sb.WriteString("</tr></thead><tbody>")
	for r := range rows {
		fmt.Fprintf(&sb, `<tr><td>feature number %d of the language</td>`, r)
		for _, b := range browsers {
			v := cell(r, b)
			fmt.Fprintf(&sb, `<td class="%s" data-browser="%s">%s</td>`, strings.ToLower(v), b, v)
		}
		sb.WriteString("</tr>")
	}
	sb.WriteString("</tbody></table></body></html>")
	return sb.String()
}

// TestColumnDroppedAndAdded: a table that retires one browser's column
// and adds the next one's reads the same in every row where the cells
// between hold the same words; those rows change only their markup. A
// row whose retired cell said something else still shows the words it
// lost and gained.
func TestColumnDroppedAndAdded(t *testing.T) {
	var oldB, newB []string
	for v := 100; v < 140; v++ {
		oldB = append(oldB, fmt.Sprintf("ff%d", v))
	}
	newB = append(append(newB, oldB[1:]...), "ff140")
	cell := func(r int, b string) string {
		if r == 7 && b == "ff100" {
			return "Yes" // the row that loses a Yes and gains a No
		}
		return "No"
	}
	ob, nb := []byte(compatTable(oldB, 40, cell)), []byte(compatTable(newB, 40, cell))
	s := New()
	d, err := s.Diff(ob, nb, "")
	if err != nil {
		t.Fatal(err)
	}
	// the same through a check, against the version as the track keeps it
	prev, err := s.DetectPage(Input{Body: ob})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Detect(Input{Body: nb, Prev: prev, PrevBody: ob, History: [][]string{prev.Hashes()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name    string
		changes []changedigest.Change
	}{{"diff", d.Changes}, {"check", snap.Changes}} {
		old, new := contentWords(run.changes)
		slices.Sort(old)
		slices.Sort(new)
		if !slices.Equal(old, []string{"Yes", "ff100"}) || !slices.Equal(new, []string{"No", "ff140"}) {
			t.Errorf("%s: content words %q → %q, want the header's ff100 → ff140 and row 7's Yes → No\n%s", run.name, old, new, dump(run.changes))
		}
		told := 0
		for _, c := range run.changes {
			if c.Type == changedigest.ChangeStructural && c.Noise == "" {
				told++
			}
		}
		if told == 0 || told > 8 {
			t.Errorf("%s: %d structural changes told, want the cells' markup once per kind of cell, the rest repeated edits\n%s", run.name, told, dump(run.changes))
		}
		// every row's retired cell is at its own row
		rows := map[string]bool{}
		for _, c := range run.changes {
			if c.Op == changedigest.OpDelete && strings.Contains(c.Path, "tbody") {
				rows[c.Path] = true
			}
		}
		if len(rows) != 40 {
			t.Errorf("%s: deletes at %d distinct paths, want one in each of the 40 rows\n%s", run.name, len(rows), dump(run.changes))
		}
	}
}

// TestHunksOnlyDeleted: words deleted on either side of kept words are
// two deletions, the kept words shown as context only; a run that
// replaces words keeps a short gap in one hunk.
func TestHunksOnlyDeleted(t *testing.T) {
	hs := hunks(nil, "gall fly </i>Urophora cardui</i> on a thistle", "gall fly Urophora cardui on a thistle", 4)
	if len(hs) != 2 || hs[0].old != "</i>" || hs[1].old != "</i>" || hs[0].new != "" || hs[1].new != "" {
		t.Errorf("hunks %+v, want two deletions of </i>", hs)
	}
	hs = hunks(nil, "the old cat sat on the old mat", "the new cat sat on the new mat", 4)
	if len(hs) != 2 {
		t.Errorf("hunks %+v, want two updates", hs)
	}
	hs = hunks(nil, "a red cat and dog", "a blue cat and fox", 3)
	if len(hs) != 1 || hs[0].old != "red cat and dog" || hs[0].new != "blue cat and fox" {
		t.Errorf("hunks %+v, want one update across the short gap", hs)
	}
}

// TestColumnMoved: a column moved to the end of every row, whose cells
// read like their neighbours, leaves the rows reading the same: the cells
// that moved are markup, told once, the other rows repeated edits.
func TestColumnMoved(t *testing.T) {
	var oldB, newB []string
	for v := 100; v < 140; v++ {
		oldB = append(oldB, fmt.Sprintf("ff%d", v))
	}
	newB = append(append(append(newB, oldB[:5]...), oldB[6:]...), oldB[5])
	cell := func(r int, b string) string { return "No" }
	d, err := New().Diff([]byte(compatTable(oldB, 40, cell)), []byte(compatTable(newB, 40, cell)), "")
	if err != nil {
		t.Fatal(err)
	}
	told, moved := 0, 0
	for _, c := range d.Changes {
		if c.Op == changedigest.OpMove && strings.Contains(c.Path, "tbody") {
			moved++
			if c.Noise == "" {
				told++
			}
			if c.Type != changedigest.ChangeStructural || !strings.HasPrefix(c.NewText, "<td") {
				t.Errorf("a cell moved with the row reading the same is markup: %s", dump([]changedigest.Change{c}))
			}
		}
	}
	if moved == 0 {
		t.Errorf("no cell move reported\n%s", dump(d.Changes))
	}
	if told != 1 {
		t.Errorf("%d of %d cell moves told, want the first only\n%s", told, moved, dump(d.Changes))
	}
	t.Logf("%d cell moves, %d told, %d changes in all", moved, told, len(d.Changes))
}

// TestNarrowMarkup: an attribute edit shows the part of the value that
// changed, with the rest of the listing as context, through Diff; a
// script's start tag shows its changed part too, and the noise marking still sees it
// (a cache-busting query string is noise, the link change is not).
func TestNarrowMarkup(t *testing.T) {
	page := func(href, src, class string) string {
		return `<html><body><p>Release notes for the toolkit, kept for every version we made.` +
			` <a href="` + href + `">source tree</a></p><script src="` + src + `"></script>` +
			`<div class="` + class + `"><p>Another paragraph of words that stays the same.</p></div></body></html>`
	}
	old := page("https://github.com/nltk/nltk/tree/3.6.4", "/static/app.js?v=49", "box wide")
	new := page("https://github.com/nltk/nltk/tree/3.6.5", "/static/app.js?v=52", "box narrow")
	d, err := New().Diff([]byte(old), []byte(new), "")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]changedigest.Change{}
	for _, c := range d.Changes {
		found[c.Before+"|"+c.OldText+"|"+c.NewText+"|"+c.After] = c
		if c.Op != changedigest.OpUpdate || c.OldText == "" || c.NewText == "" {
			t.Errorf("%s %s %q → %q: want an update with both sides", c.Type, c.Op, c.OldText, c.NewText)
		}
	}
	for key, want := range map[string]struct {
		typ   changedigest.ChangeType
		noise bool
	}{
		`href="https://github.com/nltk/nltk/tree/3.6.|4|5|"`: {changedigest.ChangeStructural, false},
		`class="box |wide|narrow|"`:                          {changedigest.ChangeCosmetic, false},
		`static/app.js?v=|49|52|">`:                          {changedigest.ChangeBehavioural, true},
	} {
		c, ok := found[key]
		if !ok {
			t.Errorf("no change %s; have %v", key, keys(found))
			continue
		}
		if c.Type != want.typ || (c.Noise != "") != want.noise {
			t.Errorf("%s: %s, noise %q; want %s, noise %v", key, c.Type, c.Noise, want.typ, want.noise)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
