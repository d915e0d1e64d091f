package segmenter

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/itchyny/gojq"
)

// TestJQZone checks zones that are jq programs: their output is what is
// compared, several outputs as an array, none as an empty page, and an
// invalid program is an invalid zone naming it.
func TestJQZone(t *testing.T) {
	old := `{"updated": "2026-05-01", "offers": [{"name": "City bike", "price": 24, "stock": 3}, {"name": "Cargo bike", "price": 80, "stock": 1}], "opening hours": {"weekdays": "9-18"}}`
	new := strings.NewReplacer(`"2026-05-01"`, `"2026-05-02"`, `"price": 80`, `"price": 85`, `"stock": 3`, `"stock": 2`, `"9-18"`, `"9-19"`).Replace(old)
	s := New()
	cases := []struct {
		zone string
		want []string // the new texts of the content changes
	}{
		{"jq:.offers[] | {name, price}", []string{"85"}},
		{"jq: .offers | map(.stock)", []string{"2"}},
		{"jq:.offers[] | select(.price > 50) | .name", nil},
		{"jq:[.offers[].price] | add", []string{"109"}},
		{"jq:[.offers[] | .price * 2 + .stock]", []string{"50 171"}},
		{`jq:.["opening hours"].weekdays`, []string{"19"}},
		{"jq:.updated", []string{"02"}},
		{"jq:empty", nil},
		{"jq:.nothing", nil},
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
	// A detection (a check) reads the same way, told under the object's
	// name.
	changes := detectZone(t, s, "jq:.offers[] | {name, price}", old, new)
	if len(changes) != 1 || changes[0].Where != "under ‘Cargo bike’" || changes[0].OldText != "80" || changes[0].NewText != "85" {
		t.Errorf("detected %+v", changes)
	}
	for _, bad := range []string{"jq:", "jq:.offers[", "jq:.a | foo", "jq:$x", "jq:input", "jq:{", "jq:" + strings.Repeat(".a", 600)} {
		err := CheckZone(bad)
		if err == nil || !errors.Is(err, ErrZone) || changedigest.ErrorCode(err) != changedigest.EINVALID ||
			!strings.Contains(changedigest.ErrorMessage(err), "invalid jq zone") {
			t.Errorf("CheckZone(%q): %v", bad, err)
		}
	}
	if err := CheckZone("jq:.offers[] | {name, price}"); err != nil {
		t.Errorf("a good program: %v", err)
	}
	// "+" and "*", bounded, give what jq's own give, in the same order.
	for _, prog := range []string{"[(1,2) + (10,20)]", "[(1,2) * (10,20)]", `["ab" * 2, 2 * "ab", ("a" + null), ({"a":{"b":1}} * {"a":{"c":2}}), ([1] + [2]), (1.5 * 2), (9007199254740993 + 1)]`,
		// Assignments, over the bounded setpath.
		`{"a":[1,2,3],"b":null} | [.a[0] = 5, (.a[] |= . + 1), (.a += [4]), (.b //= 3), ((.a[], .b) = 9), (.x.y[2] = 1), (.a[1:2] = ["x","y"]), (.a[] *= 2), (.a |= map(select(. > 1))), (.a[0] -= 1), (.a[2] /= 2), (.a[2] %= 2)]`,
		`[(1,2) as $x | {"a":0} | .a += $x], ({"a":1} | .a = (2,3)), ({"a":[1,2]} | .a[] |= empty)`,
		`[[[0],1],[[1],2],[[1]]] | [fromstream(.[])], ({"a":{"b":1,"c":2}} | pick(.a.b)), ([1,[2]] | [tostream] | fromstream(.[]))`} {
		q, _ := gojq.Parse(prog)
		code, _ := gojq.Compile(q)
		want, _ := code.Run(nil).Next()
		wantJSON, _ := gojq.Marshal(want)
		bounded, err := parseJQ(JQPrefix + prog)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := bounded.Run(nil).Next()
		gotJSON, _ := gojq.Marshal(got)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: %s, jq gives %s", prog, gotJSON, wantJSON)
		}
	}
	// The program sees nothing of the service: no environment.
	t.Setenv("CHANGEDIGEST_TEST_SECRET", "hush")
	p, err := jsonPage([]byte(`{"a":1}`), "jq:$ENV | tostring")
	if err != nil || strings.Contains(string(p), "hush") {
		t.Errorf("$ENV: %v\n%s", err, p)
	}
	// A jq zone on a page that is not JSON says so.
	if _, err := s.Diff([]byte("<p>a</p>"), []byte("<p>b</p>"), "jq:.a"); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("jq zone on HTML: %v", err)
	}
	// A runtime error names the zone.
	if _, err := s.Diff([]byte(old), []byte(new), "jq:.updated.x"); err == nil || !strings.Contains(err.Error(), `jq zone "jq:.updated.x"`) {
		t.Errorf("runtime error: %v", err)
	}
}

func detectZone(t *testing.T, s *Segmenter, zone, old, new string) []changedigest.Change {
	t.Helper()
	prev, err := s.Detect(Input{Body: []byte(old), Zone: zone})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Detect(Input{Body: []byte(new), Zone: zone, Prev: prev, PrevBody: []byte(old), History: [][]string{prev.Hashes()}})
	if err != nil {
		t.Fatal(err)
	}
	return snap.Changes
}

// TestJQZoneBounds runs programs that loop, recurse or explode: each is
// stopped within its time limit or output bounds with an error naming
// the zone, and memory stays bounded.
func TestJQZoneBounds(t *testing.T) {
	doc := []byte(`{"a": [1, 2, 3], "s": "x"}`)
	// Programs that loop run 300 ms; the others are given 10 s so that
	// a busy machine does not stop them before their bound.
	loops, others := New(), New()
	loops.JQTimeout, others.JQTimeout = 300*time.Millisecond, 10*time.Second
	cases := []struct{ zone, want string }{
		{"jq:def f: f; f", "ran longer than 300ms"},
		{"jq:def f: 1 + f; f", "ran longer than 300ms"},
		{"jq:last(range(1e15))", "ran longer than 300ms"},
		{"jq:[repeat(.)] | length", "ran longer than 300ms"},
		{"jq:repeat(.)", "more than 10000 outputs"},
		{"jq:range(1e9)", "more than 10000 outputs"},
		{"jq:[range(2e5)]", "more than 1048576 bytes"},
		{`jq:.s * 1e9`, "longer than 16777216 bytes"},
		{`jq:reduce range(3) as $i (.s; . * 1000)`, "longer than 16777216 bytes"},
		{`jq:reduce range(40) as $i (.s; . + .)`, "longer than 16777216 bytes"},
		{`jq:reduce range(40) as $i (.a; . + .)`, "longer than 1048576 values"},
		{`jq:[.s * 1e6, .s * 1e6]`, "more than 1048576 bytes"},
		{`jq:[limit(100; repeat(.s * 1e5))]`, "more than 1048576 bytes"},
		{`jq:.a[100000000] = 1`, "setting index 100000000 makes an array longer than 1048576 values"},
		{`jq:.a[100000000] |= 1`, "longer than 1048576 values"},
		{`jq:.a[100000000] += 1`, "longer than 1048576 values"},
		{`jq:setpath(["a", 50000000]; 1)`, "longer than 1048576 values"},
		{`jq:fromstream([[100000000], 1], [[100000000]])`, "longer than 1048576 values"},
		{`jq:pick(.a[100000000])`, "longer than 1048576 values"},
		{`jq:.a[1:100000000] = [1]`, "longer than 1048576 values"},
		{`jq:error("boom")`, "boom"},
	}
	for _, c := range cases {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		s := others
		if strings.Contains(c.want, "ran longer") {
			s = loops
		}
		start := time.Now()
		_, err := s.Diff(doc, doc, c.zone)
		took := time.Since(start)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if err == nil || !errors.Is(err, ErrZone) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), strconv.Quote(c.zone)) {
			t.Errorf("%q: %v, want an error saying %q and naming the zone", c.zone, err, c.want)
		}
		if took > 2*time.Second {
			t.Errorf("%q: stopped after %v", c.zone, took)
		}
		t.Logf("%-40q %7v %6d MB allocated: %v", c.zone, took.Round(time.Millisecond), (after.TotalAlloc-before.TotalAlloc)>>20, err)
	}
	// The check's own context still stops it, as a cancellation.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := others.DiffContext(ctx, doc, doc, "jq:def f: f; f"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrZone) {
		t.Errorf("cancelled check: %v", err)
	}
}

// TestJQHistories runs jq zones over the corpus's JSON histories as
// checks do: one state's doses in the vaccination table are told exactly
// when they changed, under the state's name, with their key and their old
// and new value, whatever else changed;
// a zone over what never changes tells nothing.
func TestJQHistories(t *testing.T) {
	dir := testenv.Corpus(t, "versions-json")
	files, _ := filepath.Glob(filepath.Join(dir, "cdc-vaccinations-by-state", "*.json"))
	if len(files) < 10 {
		t.Fatal("no vaccination history")
	}
	sort.Strings(files)
	files = files[:20]
	s := New()
	const zone = `jq:.vaccination_data[] | select(.Location == "NY") | {LongName, Doses_Administered}`
	doses := func(body []byte) string {
		var d struct {
			Data []struct {
				Location string
				Doses    json.Number `json:"Doses_Administered"`
			} `json:"vaccination_data"`
		}
		if err := json.Unmarshal(body, &d); err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Data {
			if r.Location == "NY" {
				return r.Doses.String()
			}
		}
		t.Fatal("no NY")
		return ""
	}
	var prev, still *changedigest.Snapshot
	var prevBody []byte
	told, same := 0, 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Body: body, Zone: zone}
		quiet := Input{Body: body, Zone: `jq:[.vaccination_data[] | {Location, LongName}]`}
		if prev != nil {
			in.Prev, in.PrevBody, in.History = prev, prevBody, [][]string{prev.Hashes()}
			quiet.Prev, quiet.PrevBody, quiet.History = still, prevBody, [][]string{still.Hashes()}
		}
		start := time.Now()
		snap, err := s.Detect(in)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: took %v", filepath.Base(f), took)
		}
		qsnap, err := s.Detect(quiet)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if prev != nil {
			was, now := doses(prevBody), doses(body)
			var content []changedigest.Change
			for _, c := range snap.Changes {
				if c.Type == changedigest.ChangeContent {
					content = append(content, c)
				}
			}
			switch {
			case was == now && len(content) != 0:
				t.Errorf("%s: doses unchanged (%s), told %+v", filepath.Base(f), now, content)
			case was == now:
				same++
			case len(content) != 1 || content[0].OldText != was || content[0].NewText != now ||
				content[0].Where != "under ‘New York State’" || !strings.Contains(content[0].Before, "Doses_Administered"):
				t.Errorf("%s: doses %s → %s, told %d: where %q old %q new %q before %q", filepath.Base(f), was, now, len(content), content[0].Where, content[0].OldText, content[0].NewText, content[0].Before)
			default:
				told++
			}
			if len(qsnap.Changes) != 0 && filepath.Base(f)[:4] != "0361" {
				t.Errorf("%s: a zone of names told %+v", filepath.Base(f), qsnap.Changes)
			}
		}
		prev, still, prevBody = snap, qsnap, body
	}
	if told == 0 || same == 0 {
		t.Errorf("told %d changes of doses, %d pairs without", told, same)
	}
	t.Logf("%d pairs told the doses' change, %d pairs with the same doses told nothing", told, same)
}

// TestJQTradePrices runs a jq zone over the corpus's trade price history
// (hundreds of items, prices changing every week): the medians of the
// generic mods are told exactly where they changed, each under its mod's
// name, and nothing else is.
func TestJQTradePrices(t *testing.T) {
	dir := testenv.Corpus(t, "versions-json")
	files, _ := filepath.Glob(filepath.Join(dir, "warframe-riven-trade-prices", "[0-9]*.json"))
	if len(files) < 10 {
		t.Fatal("no trade price history")
	}
	sort.Strings(files)
	const zone = `jq:.[] | select(.compatibility == null and .rerolled == false) | {itemType, median}`
	medians := func(body []byte) map[string]string {
		var items []struct {
			ItemType      string
			Compatibility *string
			Rerolled      bool
			Median        json.RawMessage
		}
		if err := json.Unmarshal(quoteNonNumbers(body), &items); err != nil { // NaN as Python writes it
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, it := range items {
			if it.Compatibility == nil && !it.Rerolled {
				m[it.ItemType] = strings.Trim(string(it.Median), `"`)
			}
		}
		return m
	}
	s := New()
	var prev *changedigest.Snapshot
	var prevBody []byte
	told := 0
	for _, f := range files[:16] {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Body: body, Zone: zone}
		if prev != nil {
			in.Prev, in.PrevBody, in.History = prev, prevBody, [][]string{prev.Hashes()}
		}
		snap, err := s.Detect(in)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if prev != nil {
			var want, got []string
			was, now := medians(prevBody), medians(body)
			for k, v := range now {
				if w, ok := was[k]; ok && w != v {
					want = append(want, "under ‘"+k+"’")
				}
			}
			for _, c := range snap.Changes {
				if c.Type != changedigest.ChangeContent || c.Op != changedigest.OpUpdate {
					continue
				}
				got = append(got, c.Where)
				if !strings.HasPrefix(c.Before, "median: ") {
					t.Errorf("%s: %s: %q %q → %q", filepath.Base(f), c.Where, c.Before, c.OldText, c.NewText)
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s: told %q, want %q", filepath.Base(f), got, want)
			}
			told += len(got)
		}
		prev, prevBody = snap, body
	}
	if told == 0 {
		t.Error("no median change told")
	}
	t.Logf("%d median changes told, each under its mod", told)
}
