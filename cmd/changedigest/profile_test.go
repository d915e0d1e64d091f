package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

func TestProfileCommand(t *testing.T) {
	code, out, errOut := runCmd(t, "profile", "../../profile/testdata/foaf/ppd.rdf")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Name: Alice Example\n", "Nick: alice\n", "Interests (8):",
		"semantic web", "foaf:topic_interest", "http://en.wikipedia.org/wiki/Semantic_Web",
		"Linked pages (4):", "foaf:weblog", "http://alice.example.org/blog/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestProfileCommandJSON(t *testing.T) {
	code, out, errOut := runCmd(t, "profile", "--json", "../../profile/testdata/foaf/most-properties.rdf")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p changedigest.Profile
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if p.Name != "Frank Most" || len(p.Interests) != 1 || p.Interests[0].Term != "open source software" || len(p.Pages) != 1 {
		t.Errorf("profile %+v", p)
	}
}

func TestProfileCommandStdin(t *testing.T) {
	doc := `<http://ex.org/#z> <http://xmlns.com/foaf/0.1/nick> "zed" .`
	code, out, errOut := runCmdIn(t, doc, "profile", "-")
	if code != exitOK || !strings.Contains(out, "Nick: zed") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
}

func TestProfileCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.ttl")
	if err := os.WriteFile(broken, []byte("@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n<#me> foaf:name \"A\" ;\n  foaf:nick ."), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"syntax", []string{"profile", broken}, "Turtle syntax error at line 3, column 13"},
		{"missing file", []string{"profile", filepath.Join(dir, "nope.rdf")}, "cannot read"},
		{"directory", []string{"profile", dir}, "is a directory"},
		{"no file", []string{"profile"}, "want one FOAF file"},
		{"bad flag", []string{"profile", "--nope", broken}, "flag provided but not defined"},
		// Nine and ten levels of nested entities would expand to 3 and 30 GB.
		{"entity bomb", []string{"profile", "../../profile/testdata/bomb/laughs9.rdf"}, "entity expansion refused"},
		{"bigger entity bomb", []string{"profile", "../../profile/testdata/bomb/laughs10.rdf"}, "entity expansion refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if out != "" {
				t.Errorf("output on error: %q", out)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "changedigest profile: ") || !strings.Contains(last, tt.want) {
				t.Errorf("error line %q does not hold %q", last, tt.want)
			}
			if (tt.name == "syntax" || strings.Contains(tt.name, "bomb")) && len(lines) != 1 {
				t.Errorf("error is not one line: %q", errOut)
			}
		})
	}
}

// TestProfileCommandFetch serves the linked pages from loopback: one
// page's key terms are added, a missing page is reported.
func TestProfileCommandFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><head><title>Home</title><script>var tracking = 1;</script></head><body>
				<nav>Home About Contact</nav>
				<article><h1>Beekeeping notes</h1>
				<p>Beekeeping in spring: the <em>honey bees</em> need space. Honey bees build comb fast.</p>
				<p>Varroa mites are the main threat; varroa treatment happens in autumn. Honey bees and varroa mites.</p>
				</article></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	foaf := filepath.Join(dir, "card.ttl")
	doc := fmt.Sprintf(`@prefix foaf: <http://xmlns.com/foaf/0.1/> .
<#me> a foaf:Person ; foaf:name "Bea Keeper" ;
  foaf:homepage <%s/> ; foaf:weblog <%s/missing> .`, srv.URL, srv.URL)
	if err := os.WriteFile(foaf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCmd(t, "profile", foaf, "--fetch"); code != exitOK || !strings.Contains(out, "refused non-public address") {
		t.Errorf("--fetch of loopback pages without --allow-private: exit %d\n%s", code, out)
	}
	code, out, errOut := runCmd(t, "profile", foaf, "--fetch", "--allow-private")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Logf("\n%s", out)
	for _, want := range []string{"honey bee", "varroa", "page 0.", srv.URL + "/missing: crawl: GET " + srv.URL + "/missing: status 404", "Pages not read (1):"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "tracking") {
		t.Errorf("script text became a key term")
	}
}

func TestProfileCommandExpansions(t *testing.T) {
	code, out, errOut := runCmd(t, "profile", "--json", "../../demo/profile.ttl")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		Expansions map[string][]struct{ Text, Relation string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	has := func(interest, text, rel string) bool {
		for _, t := range v.Expansions[interest] {
			if t.Text == text && t.Relation == rel {
				return true
			}
		}
		return false
	}
	for _, c := range [][3]string{{"football", "soccer", "hyponym"}, {"election", "general election", "hyponym"}} {
		if !has(c[0], c[1], c[2]) {
			t.Errorf("expansions of %s lack %s (%s): %v", c[0], c[1], c[2], v.Expansions[c[0]])
		}
	}
}
