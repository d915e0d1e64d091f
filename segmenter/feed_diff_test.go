package segmenter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// feedChangeSummary is the part of a change the table tests compare.
type feedChangeSummary struct {
	op       changedigest.Op
	typ      changedigest.ChangeType
	old, new int
	title    string
	oldText  string // substring expected in OldText
	newText  string // substring expected in NewText
}

func TestDiffFeeds(t *testing.T) {
	const (
		ins = changedigest.OpInsert
		del = changedigest.OpDelete
		upd = changedigest.OpUpdate
		con = changedigest.ChangeContent
		str = changedigest.ChangeStructural
	)
	tests := []struct {
		name     string
		old, new string
		want     []feedChangeSummary
	}{
		{
			name: "rss 2.0: added, removed, text, title and link edits", old: "rss2_v1.xml", new: "rss2_v2.xml",
			want: []feedChangeSummary{
				{ins, con, -1, 0, "Storm warning for Thursday", "", "Gale force winds"},
				{upd, con, 0, 1, "Ferry timetable changes", "leaves at 7:15 instead", "leaves at 7:30 instead"},
				{upd, con, 1, 2, "Lighthouse open day postponed", "Lighthouse open day\n", "Lighthouse open day postponed"},
				{upd, str, 2, 3, "New mooring fees", "Link: https://harbour.example/news/mooring-fees", "Link: https://harbour.example/news/mooring-fees-2025"},
				{del, con, 3, -1, "Fish market moves indoors", "customs hall", ""},
			},
		},
		{
			name: "rss 1.0: items identified by link", old: "rdf_v1.xml", new: "rdf_v2.xml",
			want: []feedChangeSummary{
				{ins, con, -1, 0, "Summer festival programme", "", "fireworks"},
				{upd, con, 1, 2, "Library hours extended", "until eight on", "until nine on"},
				{del, con, 2, -1, "Road works on Main Street", "Main Street is closed", ""},
			},
		},
		{
			name: "atom: edit, addition, and an id change on the same link is no change", old: "atom_v1.xml", new: "atom_v2.xml",
			want: []feedChangeSummary{
				{ins, con, -1, 0, "Kingfisher nest found", "", "kingfisher pair"},
				{upd, con, 0, 1, "Otters are back", "years, otters have", "years, two otters have"},
			},
		},
		{
			name: "json feed", old: "json_v1.json", new: "json_v2.json",
			want: []feedChangeSummary{
				{ins, con, -1, 0, "First strawberries", "", "strawberries today"},
				{upd, con, 0, 1, "Runner beans are up", "Beans are up", "Runner beans are up"},
				{del, con, 2, -1, "Compost bins", "old pallets", ""},
			},
		},
		{
			name: "every item has the same guid", old: "sameguid_v1.xml", new: "sameguid_v2.xml",
			want: []feedChangeSummary{
				{ins, con, -1, 0, "Summer barbecue", "", "Bring a salad"},
				{upd, con, 2, 3, "Volunteers wanted", "need three people", "need four people"},
			},
		},
		{
			name: "items without guid or link", old: "noid_v1.xml", new: "noid_v2.xml",
			want: []feedChangeSummary{
				{ins, con, -1, 0, "Sunshine record", "", "Fourteen hours"},
				{upd, con, 0, 1, "Rain gauge report", "most of it before midnight", "most of it after midnight"},
				{del, con, 2, -1, "Frost warning", "Ground frost", ""},
			},
		},
		{
			name: "reverse: removals become additions", old: "rdf_v2.xml", new: "rdf_v1.xml",
			want: []feedChangeSummary{
				{upd, con, 2, 1, "Library hours extended", "until nine on", "until eight on"},
				{ins, con, -1, 2, "Road works on Main Street", "", "Main Street is closed"},
				{del, con, 0, -1, "Summer festival programme", "fireworks", ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldBody, newBody := feedFixture(t, tt.old), feedFixture(t, tt.new)
			d, err := DiffFeeds(oldBody, newBody)
			if err != nil {
				t.Fatal(err)
			}
			if d.Kind != changedigest.KindFeed || d.Old.Bytes != len(oldBody) || d.New.Bytes != len(newBody) {
				t.Errorf("header %+v %+v %+v", d.Kind, d.Old, d.New)
			}
			if d.ChangedSegments != len(d.Changes) {
				t.Errorf("changed_segments %d for %d changes", d.ChangedSegments, len(d.Changes))
			}
			if len(d.Changes) != len(tt.want) {
				for _, c := range d.Changes {
					t.Logf("got %s %s %d→%d %q", c.Op, c.Type, *c.OldItem, *c.NewItem, c.Title)
				}
				t.Fatalf("%d changes, want %d", len(d.Changes), len(tt.want))
			}
			of, nf := mustParseFeed(t, oldBody), mustParseFeed(t, newBody)
			for i, w := range tt.want {
				c := d.Changes[i]
				if c.OldItem == nil || c.NewItem == nil || c.Similarity == nil {
					t.Fatalf("change %d lacks old_item, new_item or similarity: %+v", i, c)
				}
				if c.Op != w.op || c.Type != w.typ || *c.OldItem != w.old || *c.NewItem != w.new || c.Title != w.title {
					t.Errorf("change %d = %s %s %d→%d %q, want %s %s %d→%d %q", i,
						c.Op, c.Type, *c.OldItem, *c.NewItem, c.Title, w.op, w.typ, w.old, w.new, w.title)
				}
				if !strings.Contains(c.OldText, w.oldText) || !strings.Contains(c.NewText, w.newText) {
					t.Errorf("change %d texts %q → %q, want %q → %q", i, c.OldText, c.NewText, w.oldText, w.newText)
				}
				// Position, path and similarity follow the contract.
				switch c.Op {
				case changedigest.OpDelete:
					if c.Segment != w.old || c.Path != of.Items[w.old].Key || c.NewText != "" || *c.Similarity != 0 {
						t.Errorf("delete %d: segment %d path %q sim %v", i, c.Segment, c.Path, *c.Similarity)
					}
				case changedigest.OpInsert:
					if c.Segment != w.new || c.Path != nf.Items[w.new].Key || c.OldText != "" || *c.Similarity != 0 {
						t.Errorf("insert %d: segment %d path %q sim %v", i, c.Segment, c.Path, *c.Similarity)
					}
				default:
					if c.Segment != w.new || c.Path != nf.Items[w.new].Key || c.OldText == c.NewText ||
						*c.Similarity <= 0 || *c.Similarity > 1 {
						t.Errorf("update %d: segment %d path %q sim %v", i, c.Segment, c.Path, *c.Similarity)
					}
				}
			}
			if d.Similarity <= 0 || d.Similarity >= 1 {
				t.Errorf("similarity %v for versions that differ", d.Similarity)
			}
		})
	}
}

// TestDiffFeedsNoChange: rebuilt, re-dated and reordered feeds, and every
// feed against itself, have no change.
func TestDiffFeedsNoChange(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"build date, item dates, order and spacing", "rss2_v1.xml", "rss2_redated.xml"},
	}
	for _, f := range []string{"rss2_v1.xml", "rss2_v2.xml", "rdf_v1.xml", "atom_v1.xml", "json_v1.json",
		"sameguid_v1.xml", "noid_v1.xml", "truncated.xml", "sloppy.xml", "latin1.xml"} {
		tests = append(tests, struct{ name, old, new string }{"itself: " + f, f, f})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := DiffFeeds(feedFixture(t, tt.old), feedFixture(t, tt.new))
			if err != nil {
				t.Fatal(err)
			}
			if d.Changes == nil || len(d.Changes) != 0 || d.ChangedSegments != 0 || d.Similarity != 1 {
				t.Errorf("changes %+v (changed %d, similarity %v), want none", d.Changes, d.ChangedSegments, d.Similarity)
			}
			js, _ := json.Marshal(d)
			if !strings.Contains(string(js), `"changes":[]`) || !strings.Contains(string(js), `"kind":"feed"`) {
				t.Errorf("json %s", js)
			}
		})
	}
}

func TestDiffFeedsJSON(t *testing.T) {
	d, err := DiffFeeds(feedFixture(t, "json_v1.json"), feedFixture(t, "json_v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(d.Changes[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"op":"insert"`, `"old_item":-1`, `"new_item":0`, `"similarity":0`, `"title":"First strawberries"`, `"type":"content"`, `"segment":0`, `"path":"guid:43"`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("%s lacks %s", js, want)
		}
	}
}

func TestDiffFeedsErrors(t *testing.T) {
	good := feedFixture(t, "rss2_v1.xml")
	tests := []struct {
		name     string
		old, new []byte
		kind     error
		msg      string
	}{
		{"old is a page", feedFixture(t, "notfeed.html"), good, ErrNotFeed, "old version: not a feed: the root element is <html>"},
		{"new is empty", good, nil, ErrNotFeed, "new version: not a feed: the document is empty"},
		{"new is broken", good, feedFixture(t, "broken.xml"), ErrBadFeed, "new version: malformed feed: XML syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DiffFeeds(tt.old, tt.new)
			if !errors.Is(err, tt.kind) || changedigest.ErrorCode(err) != changedigest.EINVALID {
				t.Fatalf("error %v (code %q), want %v", err, changedigest.ErrorCode(err), tt.kind)
			}
			if msg := changedigest.ErrorMessage(err); !strings.HasPrefix(msg, tt.msg) || strings.Contains(msg, "\n") {
				t.Errorf("message %q, want one line starting %q", msg, tt.msg)
			}
		})
	}
}

// TestFeedMatch covers the mapping passes and the two thresholds.
func TestFeedMatch(t *testing.T) {
	story := func(guid, link, title, text string) FeedItem {
		return FeedItem{GUID: guid, Link: link, Title: title, Text: text}
	}
	const long = "The council met on Tuesday evening and agreed to repair the old bridge before the winter, at a cost shared with the county."
	// A text sharing 16 of 23 words with long: same series, other story.
	const similar = "The council met on Tuesday evening and agreed to repair the old school roof before the spring, at a cost of its own."
	tests := []struct {
		name     string
		old, new []FeedItem
		want     []int
	}{
		{
			name: "guid wins over position and text",
			old:  []FeedItem{story("a", "https://x/1", "A", "alpha"), story("b", "https://x/2", "B", "beta")},
			new:  []FeedItem{story("b", "https://x/2", "B", "beta gamma"), story("a", "https://x/1", "A", "alpha")},
			want: []int{1, 0},
		},
		{
			name: "link pairs items whose guids all changed",
			old:  []FeedItem{story("old-1", "https://x/1", "A", "alpha"), story("old-2", "https://x/2", "B", "beta")},
			new:  []FeedItem{story("new-2", "https://x/2", "B", "beta"), story("new-1", "https://x/1", "A", "alpha")},
			want: []int{1, 0},
		},
		{
			name: "a shared link proves nothing",
			old:  []FeedItem{story("", "https://x/", "A", "alpha one"), story("", "https://x/", "B", "beta two")},
			new:  []FeedItem{story("", "https://x/", "B", "beta two"), story("", "https://x/", "A", "alpha one")},
			want: []int{1, 0},
		},
		{
			name: "exact duplicates pair in order",
			old:  []FeedItem{story("", "", "Ad", "buy now"), story("", "", "Ad", "buy now")},
			new:  []FeedItem{story("", "", "Ad", "buy now"), story("", "", "Ad", "buy now")},
			want: []int{0, 1},
		},
		{
			name: "ids changed everywhere: similar text maps at the lower threshold",
			old:  []FeedItem{story("x1", "https://old/1", "Bridge repair agreed", long), story("x2", "https://old/2", "Parking", "New parking rules start in May for the whole town centre.")},
			new:  []FeedItem{story("y2", "https://new/2", "Parking", "New parking rules start in May for the town centre."), story("y1", "https://new/1", "Bridge repair agreed", long)},
			want: []int{1, 0},
		},
		{
			name: "stable guids: a look-alike new story stays new",
			old: []FeedItem{
				story("keep", "https://x/keep", "Kept", "unchanged story"),
				story("bridge", "https://x/bridge", "Council agrees repairs", long),
			},
			new: []FeedItem{
				story("roof", "https://x/roof", "Council agrees repairs", similar),
				story("keep", "https://x/keep", "Kept", "unchanged story"),
			},
			want: []int{1, -1},
		},
		{
			name: "stable guids: a republished story under a new address maps",
			old: []FeedItem{
				story("keep", "https://x/keep", "Kept", "unchanged story"),
				story("typo", "https://x/coppege", "David Coppege makes it clear a refresher course is needed", long),
			},
			new: []FeedItem{
				story("fixed", "https://x/coppedge", "David Coppedge makes it clear a refresher course is needed", long),
				story("keep", "https://x/keep", "Kept", "unchanged story"),
			},
			want: []int{1, 0},
		},
		{
			name: "no identifiers: best pair first, weak pair left",
			old:  []FeedItem{story("", "", "Rain", "Twelve millimetres of rain fell overnight."), story("", "", "Wind", "Gusts of sixty on the hill.")},
			new:  []FeedItem{story("", "", "Sun", "Fourteen hours of sunshine today."), story("", "", "Rain", "Twelve millimetres of rain fell last night.")},
			want: []int{1, -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := feedMatch(nil, tt.old, tt.new)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("mapping %v, want %v", got, tt.want)
			}
		})
	}
	// The look-alike pair above really sits between the two thresholds.
	a, b := feedTokenize(&FeedItem{Title: "Council agrees repairs", Text: long}), feedTokenize(&FeedItem{Title: "Council agrees repairs", Text: similar})
	if s := feedScore(&a, &b); s < feedMatchThreshold || s >= feedRepublishThreshold {
		t.Errorf("look-alike score %.3f is not in [%.2f, %.2f)", s, feedMatchThreshold, feedRepublishThreshold)
	}
}

func TestFeedExcerpts(t *testing.T) {
	long := strings.Repeat("word ", 30)
	tests := []struct {
		name             string
		old, new         FeedItem
		wantOld, wantNew string
	}{
		{
			name:    "change in the middle keeps context both sides",
			old:     FeedItem{Title: "T", Text: "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 w20"},
			new:     FeedItem{Title: "T", Text: "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 W11 w12 w13 w14 w15 w16 w17 w18 w19 w20"},
			wantOld: "… w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 …",
			wantNew: "… w3 w4 w5 w6 w7 w8 w9 w10 W11 w12 w13 w14 w15 w16 w17 w18 w19 …",
		},
		{
			name:    "two changes far apart",
			old:     FeedItem{Title: "Alpha", Text: long + "omega"},
			new:     FeedItem{Title: "Beta", Text: long + "end"},
			wantOld: "Alpha\nword word word word word word word word … word word word word word word word word omega",
			wantNew: "Beta\nword word word word word word word word … word word word word word word word word end",
		},
		{
			name:    "words moved from the text into the title",
			old:     FeedItem{Text: "Only a description"},
			new:     FeedItem{Title: "Only a description"},
			wantOld: "Title: \nOnly a description",
			wantNew: "Title: Only a description",
		},
		{
			name:    "link only",
			old:     FeedItem{Title: "T", Link: "https://x/a", Text: "same"},
			new:     FeedItem{Title: "T", Link: "https://x/b", Text: "same"},
			wantOld: "Link: https://x/a",
			wantNew: "Link: https://x/b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, n := feedExcerpts(nil, &tt.old, &tt.new)
			if o != tt.wantOld || n != tt.wantNew {
				t.Errorf("got\n%q\n%q\nwant\n%q\n%q", o, n, tt.wantOld, tt.wantNew)
			}
		})
	}
}

func TestDetectFeed(t *testing.T) {
	v1, v2 := feedFixture(t, "rss2_v1.xml"), feedFixture(t, "rss2_v2.xml")
	first, err := DetectFeed(Input{Body: v1})
	if err != nil {
		t.Fatal(err)
	}
	if first.Kind != changedigest.KindFeed || first.Title != "Harbour Notes" || first.Layout != nil ||
		first.Changes != nil || len(first.Segments) != 4 || first.Size != len(v1) || len(first.BodyHash) != 32 {
		t.Fatalf("first snapshot %+v", first)
	}
	f1 := mustParseFeed(t, v1)
	for i, s := range first.Segments {
		it := f1.Items[i]
		if s.Index != i || s.Hash != it.Hash() || s.Path != it.Key || s.Text != it.Title+"\n"+it.Text || s.Start != it.Start || s.End != it.End {
			t.Errorf("segment %d = %+v", i, s)
		}
	}

	second, err := DetectFeed(Input{Body: v2, Prev: first, PrevBody: v1, History: [][]string{first.Hashes()}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := DiffFeeds(v1, v2)
	if len(second.Changes) != len(d.Changes) || second.Similarity != d.Similarity {
		t.Fatalf("detect found %d changes (similarity %v), diff %d (%v)", len(second.Changes), second.Similarity, len(d.Changes), d.Similarity)
	}

	// Back to the first version: the edited items flip back to texts the
	// track has seen and the fish market returns as it was, so only the
	// removal of the storm warning is left...
	third, err := DetectFeed(Input{Body: v1, Prev: second, PrevBody: v2, History: [][]string{second.Hashes(), first.Hashes()}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, c := range third.Changes {
		ops = append(ops, fmt.Sprintf("%s %s", c.Op, c.Title))
	}
	if want := "delete Storm warning for Thursday"; strings.Join(ops, "; ") != want {
		t.Errorf("flip back gave %q, want %q", ops, want)
	}
	// ...whereas without the older row all of them are changes.
	third, _ = DetectFeed(Input{Body: v1, Prev: second, PrevBody: v2, History: [][]string{second.Hashes()}})
	if len(third.Changes) != len(d.Changes) {
		t.Errorf("without history: %d changes, want %d", len(third.Changes), len(d.Changes))
	}

	// No previous body: additions by hash only.
	nobody, err := DetectFeed(Input{Body: v2, Prev: first, History: [][]string{first.Hashes()}})
	if err != nil {
		t.Fatal(err)
	}
	ops = ops[:0]
	for _, c := range nobody.Changes {
		ops = append(ops, fmt.Sprintf("%s %s", c.Op, c.Title))
	}
	if want := "insert Storm warning for Thursday; insert Ferry timetable changes; insert Lighthouse open day postponed; insert New mooring fees"; strings.Join(ops, "; ") != want {
		t.Errorf("without previous body: %q", ops)
	}

	// A previous version that was not a feed counts as empty.
	fromPage, err := DetectFeed(Input{Body: v1, Prev: &changedigest.Snapshot{Kind: changedigest.KindPage}, PrevBody: feedFixture(t, "notfeed.html")})
	if err != nil || len(fromPage.Changes) != 4 {
		t.Errorf("after a page: %v, %d changes", err, len(fromPage.Changes))
	}

	// A body that is no feed is an input error.
	if _, err := DetectFeed(Input{Body: []byte("<html></html>")}); !errors.Is(err, ErrNotFeed) || changedigest.ErrorCode(err) != changedigest.EINVALID {
		t.Errorf("page body: %v", err)
	}
}

// TestFeedSameHash checks feedSameHash against the items' hashes.
func TestFeedSameHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"a", "b", " ", "\n", "\u00a0", "\x00", "é", "http://x/"}
	field := func() string {
		var sb strings.Builder
		for range rng.IntN(5) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return sb.String()
	}
	item := func() FeedItem { return FeedItem{Title: field(), Link: field(), Text: field()} }
	same := 0
	for range 20000 {
		a, b := item(), item()
		want := a.Hash() == b.Hash()
		if want {
			same++
		}
		if got := feedSameHash(&a, &b); got != want {
			t.Fatalf("feedSameHash(%+v, %+v) = %v, hashes equal %v", a, b, got, want)
		}
	}
	if same == 0 {
		t.Error("no pair of the same hash")
	}
}

// TestFeedExactMatchByHash checks feedExactMatch against the same passes
// with a plain list of the old items of each hash.
func TestFeedExactMatchByHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 300 {
		items := func(n int) []FeedItem {
			out := make([]FeedItem, n)
			for i := range out {
				out[i] = FeedItem{Title: fmt.Sprintf("t%d", rng.IntN(1+round%4)), Text: fmt.Sprintf("x%d", rng.IntN(1+round%5)),
					Published: base.Add(time.Duration(i*(round%3)) * 24 * time.Hour)}
			}
			return out
		}
		old, new := items(rng.IntN(150)), items(rng.IntN(150))
		got, want := feedExactMatch(old, new).oldTo, feedExactMatchRef(old, new).oldTo
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: pairs %v, want %v", round, got, want)
		}
	}
}

// feedExactMatchRef is feedExactMatch with a list of old items for
// each hash in its content pass, the reference of
// TestFeedExactMatchByHash.
func feedExactMatchRef(old, new []FeedItem) *feedMatching {
	m := feedIDMatch(old, new)
	byHash := map[string][]int{}
	for i := range old {
		if m.oldTo[i] < 0 {
			h := old[i].Hash()
			byHash[h] = append(byHash[h], i)
		}
	}
	for n := range new {
		if m.newTo[n] >= 0 {
			continue
		}
		h := new[n].Hash()
		q := byHash[h]
		// the first of the same content not dated apart, among the
		// next few (thousands of items alike would otherwise each be
		// looked for among all the others)
		for k, o := range q[:min(len(q), feedSameProbes)] {
			if !m.otherDate(o, n) {
				m.oldTo[o], m.newTo[n] = n, o
				if k == 0 {
					byHash[h] = q[1:]
				} else {
					byHash[h] = append(q[:k:k], q[k+1:]...)
				}
				break
			}
		}
	}
	m.titleDatePass()
	return m
}
