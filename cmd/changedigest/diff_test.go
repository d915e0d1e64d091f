package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// runCmd runs the command line and returns its exit status and output.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCmdIn(t, "", args...)
}

// runCmdIn runs the command with stdin as its standard input.
func runCmdIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const page1 = `<!DOCTYPE html>
<html><head><title>Notes</title></head>
<body>
  <div id="main">
    <h1>Field notes</h1>
    <p>Beware the Jabberwock my son, the jaws that bite, the claws that catch.</p>
    <p class="aside">Second paragraph with a <a href="/more">link</a>.</p>
  </div>
</body></html>`

func TestDiffJSON(t *testing.T) {
	dir := t.TempDir()
	old := writeFile(t, dir, "old.html", []byte(page1))
	tests := []struct {
		name     string
		new      string
		wantType string
		wantOp   string
	}{
		{"no change", page1, "", ""},
		{"re-indented", strings.ReplaceAll(page1, "\n  ", "\n\t\t"), "", ""},
		{"word", strings.Replace(page1, "bite", "byte", 1), "content", "update"},
		{"paragraph inserted", strings.Replace(page1, "</h1>", "</h1><p>A new paragraph appears here.</p>", 1), "content", "insert"},
		{"style only", strings.Replace(page1, `class="aside"`, `class="aside" style="color:red"`, 1), "cosmetic", "update"},
		{"link target", strings.Replace(page1, `/more`, `/less`, 1), "structural", "update"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newf := writeFile(t, dir, "new.html", []byte(tc.new))
			code, out, errs := runCmd(t, "diff", old, newf, "--json")
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &raw); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out)
			}
			for _, k := range []string{"kind", "old", "new", "changed_segments", "similarity", "changes"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("JSON lacks %q: %s", k, out)
				}
			}
			var d changedigest.Diff
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatal(err)
			}
			if d.Kind != changedigest.KindPage {
				t.Errorf("kind = %q", d.Kind)
			}
			if tc.wantType == "" {
				if string(raw["changes"]) != "[]" {
					t.Errorf("changes = %s, want []", raw["changes"])
				}
				if d.Similarity != 1 || d.ChangedSegments != 0 {
					t.Errorf("similarity %v, changed segments %d for no change", d.Similarity, d.ChangedSegments)
				}
				return
			}
			if len(d.Changes) != 1 {
				t.Fatalf("got %d changes, want 1: %s", len(d.Changes), out)
			}
			c := d.Changes[0]
			if string(c.Type) != tc.wantType || string(c.Op) != tc.wantOp {
				t.Errorf("change %s/%s, want %s/%s", c.Type, c.Op, tc.wantType, tc.wantOp)
			}
			if c.Path == "" || d.Similarity >= 1 || d.Similarity <= 0 {
				t.Errorf("path %q similarity %v", c.Path, d.Similarity)
			}
		})
	}
}

func TestDiffReadable(t *testing.T) {
	dir := t.TempDir()
	old := writeFile(t, dir, "old.html", []byte(page1))
	newf := writeFile(t, dir, "new.html", []byte(strings.Replace(page1, "bite", "byte", 1)))
	code, out, errs := runCmd(t, "diff", old, newf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"1 change in 1 segments", "content update", "html|body|div-main|p", "[-bite-]{+byte+}"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes written to a non-terminal:\n%q", out)
	}
	code, out, _ = runCmd(t, "diff", old, old)
	if code != 0 || !strings.Contains(out, "no changes") {
		t.Errorf("same file: exit %d, output %q", code, out)
	}
}

func TestDiffBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.html", []byte(page1))
	empty := writeFile(t, dir, "empty.html", nil)
	blank := writeFile(t, dir, "blank.html", []byte("  \n\t "))
	binary := writeFile(t, dir, "image.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	json := writeFile(t, dir, "data.json", []byte(`{"temperature": 21.5}`))
	huge := writeFile(t, dir, "huge.html", bytes.Repeat([]byte("<p>x</p>"), 10<<20/8+1))
	tests := []struct {
		name string
		args []string
		want string // in the error line
	}{
		{"missing file", []string{"diff", good, filepath.Join(dir, "nope.html")}, "no such file"},
		{"directory", []string{"diff", good, dir}, "directory"},
		{"empty", []string{"diff", empty, good}, "empty document"},
		{"blank", []string{"diff", good, blank}, "empty document"},
		{"binary", []string{"diff", good, binary}, "binary content (PNG image)"},
		{"json", []string{"diff", json, good}, "JSON that is not a JSON Feed, neither HTML nor a feed"},
		{"huge", []string{"diff", good, huge}, "larger than the limit"},
		{"private url", []string{"diff", "http://127.0.0.1:1/", good}, "refused non-public address"},
		{"one argument", []string{"diff", good}, "two files"},
		{"three arguments", []string{"diff", good, good, good}, "two files"},
		{"bad flag", []string{"diff", "--colour", good, good}, "flag provided but not defined"},
		{"bad zone", []string{"diff", good, good, "--zone", "div[["}, `invalid zone selector "div[["`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCmd(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stdout %q, stderr %q)", code, out, errs)
			}
			if !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q lacks %q", errs, tc.want)
			}
			if lines := strings.Count(strings.TrimRight(errs, "\n"), "\n"); lines > 0 && tc.name != "bad flag" {
				t.Errorf("error is %d lines, want one: %q", lines+1, errs)
			}
		})
	}
}

func TestDiffURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/old":
			io.WriteString(w, page1)
		case "/new":
			io.WriteString(w, strings.Replace(page1, "Field notes", "Field journal", 1))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	code, out, errs := runCmd(t, "diff", "--json", "--allow-private", srv.URL+"/old", srv.URL+"/new")
	if code != 0 || !strings.Contains(out, `"op":"update"`) || !strings.Contains(out, `"new_text":"journal","before":"Field "`) {
		t.Errorf("diff of two URLs: exit %d, %s %s", code, out, errs)
	}
	code, _, errs = runCmd(t, "diff", "--allow-private", srv.URL+"/old", srv.URL+"/missing")
	if code != 2 || !strings.Contains(errs, "404") {
		t.Errorf("diff with a 404: exit %d, %s", code, errs)
	}
}

func TestDiffZone(t *testing.T) {
	dir := t.TempDir()
	old := writeFile(t, dir, "old.html", []byte(page1))
	// a change outside the zone is not reported, one inside is
	outside := strings.Replace(page1, "<title>Notes</title>", "<title>Other</title>", 1)
	newf := writeFile(t, dir, "new.html", []byte(outside))
	code, out, errs := runCmd(t, "diff", "--json", "--zone", "#main", old, newf)
	if code != 0 || !strings.Contains(out, `"changes":[]`) {
		t.Errorf("change outside the zone: exit %d, %s %s", code, out, errs)
	}
	inside := strings.Replace(page1, "Field notes", "Field journal", 1)
	newf = writeFile(t, dir, "new2.html", []byte(inside))
	code, out, _ = runCmd(t, "diff", "--json", "--zone", "#main", old, newf)
	if code != 0 || !strings.Contains(out, `"type":"content"`) {
		t.Errorf("change inside the zone: exit %d, %s", code, out)
	}
}

func TestWordDiffContext(t *testing.T) {
	old := strings.Repeat("alpha beta gamma ", 20) + "delta " + strings.Repeat("epsilon zeta ", 20)
	new := strings.Replace(old, "delta", "DELTA", 1)
	got := wordDiff(old, new, false)
	if !strings.Contains(got, "[-delta-]{+DELTA+}") || !strings.Contains(got, "…") || len(got) > 200 {
		t.Errorf("wordDiff = %q", got)
	}
}

// TestDiffScriptsBounded: a long style sheet and a long script edited in
// many places are told by a few changed places each, named, the rest
// counted; no line of the report carries the whole sheet.
func TestDiffScriptsBounded(t *testing.T) {
	var css, js strings.Builder
	for i := range 400 {
		fmt.Fprintf(&css, ".c%d{background:url(https://cdn.example.net/sdk/HASH/img%d.png);color:#333}\n", i, i)
		fmt.Fprintf(&js, "window.s%d={id:%d,build:'HASH'};", i, i)
	}
	page := func(h string) string {
		return `<html><head><title>Shop</title><style id="theme">` + strings.ReplaceAll(css.String(), "HASH", h) +
			`</style><script>` + strings.ReplaceAll(js.String(), "HASH", h) + `</script></head>` +
			`<body><p>Kettles and teapots, sold here since 1902.</p></body></html>`
	}
	dir := t.TempDir()
	old := writeFile(t, dir, "old.html", []byte(page("cf70eb5b3f4a")))
	newf := writeFile(t, dir, "new.html", []byte(page("50888b6d7194")))
	// The build hash is a generated token (noise): listed on request.
	code, out, errs := runCmd(t, "diff", "--show-noise", old, newf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"in the style sheet #theme", "in the style sheet #theme: 397 more places",
		"in an inline script", "[-cf70eb5b3f4a-]{+50888b6d7194+}"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 400 {
			t.Errorf("a line of %d bytes: %.200s…", len(line), line)
		}
	}
	code, out, errs = runCmd(t, "diff", "--json", "--show-noise", old, newf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d changedigest.Diff
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 8 {
		t.Errorf("%d changes, want 3 places and a count for each of the two:\n%s", len(d.Changes), out)
	}
	for _, c := range d.Changes {
		if len(c.OldText) > 240 || len(c.NewText) > 240 {
			t.Errorf("%s: %d and %d bytes told", c.Where, len(c.OldText), len(c.NewText))
		}
	}
}

// Noise that shows no text (generated tokens in attributes, as a CDN's
// e-mail obfuscation renews at every load) is counted, not listed, unless
// asked for; a counter's content change stays listed.
func TestDiffFoldsNoise(t *testing.T) {
	page := func(keys []string, word string) string {
		var b strings.Builder
		b.WriteString(`<html><body><h1>Contact</h1><p>Write to us ` + word + ` by e-mail.</p><ul>`)
		for i, k := range keys {
			fmt.Fprintf(&b, `<li>Office %d: <a href="/cdn-cgi/l/email-protection#%s"><span data-cfemail="%s">[email protected]</span></a></li>`, i, k, k)
		}
		b.WriteString(`</ul></body></html>`)
		return b.String()
	}
	dir := t.TempDir()
	old := writeFile(t, dir, "old.html", []byte(page([]string{"4129242d31012633282f25336f222e2c", "97fff2fbe7d7f0e5fef9f3e5b9f4f8fa"}, "anytime")))
	newf := writeFile(t, dir, "new.html", []byte(page([]string{"660e030a162601140f0802144805090b", "f69e939a86b691849f989284d895999b"}, "today")))

	code, out, errs := runCmd(t, "diff", old, newf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"4 changes that are noise not listed (generated value 4; --show-noise lists them)", "1 change in 1 segments", "[-anytime-]{+today+}"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cfemail") {
		t.Errorf("noise listed:\n%s", out)
	}

	code, out, _ = runCmd(t, "diff", "--json", old, newf)
	var folded struct {
		changedigest.Diff
		Noise struct {
			Changes int            `json:"changes"`
			Reasons map[string]int `json:"reasons"`
		} `json:"noise_folded"`
	}
	if err := json.Unmarshal([]byte(out), &folded); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if len(folded.Changes) != 1 || folded.Changes[0].Type != changedigest.ChangeContent || folded.Noise.Changes != 4 || folded.Noise.Reasons["generated value"] != 4 {
		t.Errorf("changes %+v, folded %+v", folded.Changes, folded.Noise)
	}

	_, out, _ = runCmd(t, "diff", "--json", "--show-noise", old, newf)
	var all changedigest.Diff
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all.Changes) != 5 || strings.Contains(out, "noise_folded") {
		t.Errorf("--show-noise: %v, %d changes: %s", err, len(all.Changes), out)
	}
}
