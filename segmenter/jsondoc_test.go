package segmenter

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// TestJSONDocument checks a JSON API's answer read as a page: a changed
// value told with its key under the heading of its object, an object
// added to an array told by its name, keys in the document's order, and
// what is not a JSON document left to Sniff.
func TestJSONDocument(t *testing.T) {
	old := `{"shop": "Harbour Bikes", "updated": "2026-05-01",
  "offers": [
    {"name": "City bike", "price": 24, "currency": "EUR", "in_stock": true},
    {"name": "Cargo bike", "price": 80, "currency": "EUR", "in_stock": false}
  ],
  "opening": {"weekdays": "9-18", "saturday": "10-14"}}`
	new := strings.Replace(strings.Replace(old, `"price": 24`, `"price": 29`, 1),
		`"in_stock": false}`, `"in_stock": false},
    {"name": "Tandem", "price": 45, "currency": "EUR", "in_stock": true}`, 1)
	if !isJSONDocument([]byte(old)) || isJSONDocument([]byte(`{"version": "https://jsonfeed.org/version/1.1", "items": []}`)) ||
		isJSONDocument([]byte(`<p>{"a": 1}</p>`)) || isJSONDocument([]byte(`{"a": `)) {
		t.Fatal("isJSONDocument: wrong answer")
	}
	changes := detectTwo(t, old, new)
	var price, tandem bool
	for _, c := range changes {
		if c.Type != changedigest.ChangeContent {
			continue
		}
		switch {
		case c.Op == changedigest.OpUpdate && c.Where == "under ‘City bike’" && c.OldText == "24" && c.NewText == "29":
			price = true
		case c.Op == changedigest.OpInsert && c.Title == "Tandem":
			tandem = true
		default:
			t.Errorf("unexpected change %+v", c)
		}
	}
	if !price || !tandem {
		t.Errorf("price change told %v, tandem added told %v: %+v", price, tandem, changes)
	}
	page, err := jsonPage([]byte(old), "")
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(page), "shop: Harbour Bikes"), strings.Index(string(page), "updated: 2026-05-01"); i < 0 || j < i {
		t.Errorf("keys out of order or missing:\n%s", page)
	}
	// Python's encoder writes NaN and Infinity, which JSON has not.
	nan := []byte(`{"avg": NaN, "max": -Infinity, "note": "NaN stays"}`)
	if p, err := jsonPage(nan, ""); !isJSONDocument(nan) || err != nil || !strings.Contains(string(p), "avg: NaN") ||
		!strings.Contains(string(p), "max: -Infinity") || !strings.Contains(string(p), "note: NaN stays") {
		t.Errorf("NaN: %v\n%s", err, p)
	}
	// Rendering is bounded by the document: a long key over many
	// nameless objects is not repeated for each.
	bomb := []byte(`{"` + strings.Repeat("k", 20000) + `":[` + strings.TrimSuffix(strings.Repeat("{},", 50000), ",") + `]}`)
	if p, err := jsonPage(bomb, ""); err != nil || len(p) > 3*len(bomb)+(64<<10)+1024 {
		t.Errorf("a %d-byte document rendered to %d bytes (%v)", len(bomb), len(p), err)
	}
	if p, err := jsonPage([]byte("\xef\xbb\xbf {\"a\": 1}"), ""); err != nil || !strings.Contains(string(p), "a: 1") {
		t.Errorf("with a byte order mark: %v", err)
	}
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if _, err := jsonPage([]byte(deep), ""); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("100 levels deep: %v", err)
	}
}

// TestJSONHistories detects the versions of the corpus's JSON histories
// (a state-by-state vaccination table, a game's trade prices) as checks
// do: every version reads, and the changes of each are placed under the
// object they are in.
func TestJSONHistories(t *testing.T) {
	dir := testenv.Corpus(t, "versions-json")
	hists, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(hists) == 0 {
		t.Fatal("no JSON histories")
	}
	s := New()
	for _, h := range hists {
		files, _ := filepath.Glob(filepath.Join(h, "*.json"))
		sort.Strings(files)
		files = files[:min(len(files), 6)]
		var prev *changedigest.Snapshot
		var prevBody []byte
		placed, content := 0, 0
		for _, f := range files {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in := Input{Body: body}
			if prev != nil {
				in.Prev, in.PrevBody, in.History = prev, prevBody, [][]string{prev.Hashes()}
			}
			snap, err := s.Detect(in)
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(f), err)
			}
			for _, c := range snap.Changes {
				if c.Type == changedigest.ChangeContent {
					content++
					if strings.HasPrefix(c.Where, "under ‘") || c.Title != "" {
						placed++
					}
				}
			}
			prev, prevBody = snap, body
		}
		if content == 0 || placed*10 < content*9 {
			t.Errorf("%s: %d content changes, %d placed under their object", filepath.Base(h), content, placed)
		}
	}
}

// TestJSONZone checks zones that are JSON paths: the part they select is
// what is compared, a wildcard gathers its matches, and a bad path is an
// invalid zone.
func TestJSONZone(t *testing.T) {
	old := `{"updated": "2026-05-01", "offers": [{"name": "City bike", "price": 24}, {"name": "Cargo bike", "price": 80}], "opening hours": {"weekdays": "9-18"}}`
	new := strings.NewReplacer(`"2026-05-01"`, `"2026-05-02"`, `"price": 80`, `"price": 85`, `"9-18"`, `"9-19"`).Replace(old)
	s := New()
	cases := []struct {
		zone string
		want []string // the new texts of the content changes
	}{
		{"", []string{"02", "85", "19"}},
		{"$.offers", []string{"85"}},
		{"$.offers[1].price", []string{"85"}},
		{"$.offers[*].price", []string{"85"}},
		{"$['opening hours']", []string{"19"}},
		{"$.offers[0]", nil},
		{"$.nothing", nil},
	}
	for _, c := range cases {
		d, err := s.Diff([]byte(old), []byte(new), c.zone)
		if err != nil {
			t.Fatalf("%q: %v", c.zone, err)
		}
		var got []string
		for _, ch := range d.Changes {
			if ch.Type == changedigest.ChangeContent {
				got = append(got, ch.NewText)
			}
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("zone %q: changes %q, want %q", c.zone, got, c.want)
		}
	}
	for _, bad := range []string{"$..price", "$.offers[x]", "$.offers[0", "$.", "$offers"} {
		if err := CheckZone(bad); err == nil || !strings.Contains(err.Error(), "invalid JSON path") {
			t.Errorf("CheckZone(%q): %v", bad, err)
		}
	}
	if err := CheckZone("$.offers[*]['name']"); err != nil {
		t.Errorf("a good path: %v", err)
	}
}
