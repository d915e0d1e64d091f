package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testSite = "https://changes.example.org"

// fixture is testdata/events.json: a user and their change events.
type fixture struct {
	User   *changedigest.User `json:"user"`
	Events []Event            `json:"events"`
}

// MustFixture loads testdata/events.json. Matches that give no span are
// placed on the first occurrence of their term in the text they search.
func MustFixture(tb testing.TB) fixture {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "events.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var f fixture
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		tb.Fatalf("testdata/events.json: %v", err)
	}
	for _, ev := range f.Events {
		for i, ms := range ev.Matches {
			c := ev.Snapshot.Changes[i]
			text := c.NewText
			if markedOld(c) {
				text = c.OldText
			}
			for j := range ms {
				if ms[j].End == 0 {
					k := strings.Index(text, ms[j].Term)
					if k < 0 {
						tb.Fatalf("fixture: term %q not in change %d of watch %d", ms[j].Term, i, ev.Watch.ID)
					}
					ms[j].Start, ms[j].End = k, k+len(ms[j].Term)
				}
			}
		}
	}
	return f
}

// MustEngine returns an engine on testSite with a fixed version.
func MustEngine(tb testing.TB) *Engine {
	tb.Helper()
	e, err := NewEngine(testSite)
	if err != nil {
		tb.Fatal(err)
	}
	e.Version = "test"
	return e
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from the golden file at line %d:\ngot:  %q\nwant: %q\n(run go test -update if the change is intended)", name, i+1, g, w)
			}
		}
	}
}

// digestDay is the day of the fixture's digest, in a zone east of UTC.
var digestDay = time.Date(2026, 3, 14, 0, 0, 0, 0, time.FixedZone("CET", 3600))
