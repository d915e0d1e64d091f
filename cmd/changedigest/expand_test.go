package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/expand"
)

// run runs the command line and returns its exit status and output.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExpandCommand(t *testing.T) {
	code, out, errOut := run(t, "expand", "cricket", "football", "tennis", "semantic web", "elections")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"cricket: noun, sense 2 (n00476389, noun.act; 3 senses considered)",
		"a game played with a ball and bat",
		"hyponyms:  American football 0.60",
		"soccer 0.60",
		"synonyms:  lawn tennis 0.80",
		"semantic web: not in WordNet; kept as a literal phrase",
		"elections → election (base form): noun, sense 1",
		"general election 0.60",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestExpandCommandJSON(t *testing.T) {
	code, out, errOut := run(t, "expand", "--json", "stock", "soup", "cooking", "blorptastic")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		WordNet    string             `json:"wordnet"`
		Expansions []expand.Expansion `json:"expansions"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.WordNet != "embedded" || len(got.Expansions) != 4 {
		t.Fatalf("got %s with %d expansions", got.WordNet, len(got.Expansions))
	}
	if s := got.Expansions[0].Sense; s == nil || s.ID != "n07585208" || s.POS != expand.Noun {
		t.Errorf("stock beside soup and cooking = %+v, want broth n07585208", s)
	}
	if x := got.Expansions[3]; x.Found != expand.FoundNone || len(x.Terms) != 1 || x.Terms[0].Text != "blorptastic" {
		t.Errorf("unknown word = %+v, want itself alone", x)
	}
	if !strings.Contains(out, `"pos": "noun"`) {
		t.Error("parts of speech are not written as names")
	}
}

func TestExpandCommandWordNetDir(t *testing.T) {
	code, out, errOut := run(t, "expand", "car", "--wordnet-dir", "../../expand/testdata/dict")
	if code != exitOK || !strings.Contains(out, "motor vehicle 0.50") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
}

func TestExpandCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no term", []string{"expand"}, "no term given"},
		{"empty term", []string{"expand", "car", "  "}, "term 2 is empty"},
		{"not UTF-8", []string{"expand", "caf\xe9"}, "not valid UTF-8"},
		{"too long", []string{"expand", strings.Repeat("x", 300)}, "longer than"},
		{"bad flag", []string{"expand", "--nope", "car"}, "flag provided but not defined"},
		{"missing dict files", []string{"expand", "car", "--wordnet-dir", "/nonexistent"}, "--wordnet-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, tt.msg) {
				t.Errorf("stderr %q lacks %q", errOut, tt.msg)
			}
		})
	}
}
