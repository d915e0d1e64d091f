package profile

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

const turtleBase = "http://example.org/dir/doc.ttl"

func TestTurtleSyntax(t *testing.T) {
	data, err := os.ReadFile("testdata/turtle/syntax.ttl")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseTurtle(string(data), turtleBase)
	if err != nil {
		t.Fatal(err)
	}
	checkGraph(t, got, mustNTriples(t, "testdata/turtle/syntax.nt"))

	t.Run("rapper", func(t *testing.T) {
		rapper := testenv.Tool(t, "rapper")
		want, rerr := runRapper(t, rapper, "testdata/turtle/syntax.ttl", FormatTurtle, turtleBase)
		if rerr != "" {
			t.Fatal(rerr)
		}
		checkGraph(t, got, want)
	})
}

func TestNTriples(t *testing.T) {
	data, err := os.ReadFile("testdata/turtle/card.nt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseNTriples(string(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []triple{
		{iri("http://example.org/card#me"), iri(rdfType), iri(foafNS + "Person")},
		{iri("http://example.org/card#me"), iri(foafNS + "name"), literal("N. Triples", "en", "")},
		{iri("http://example.org/card#me"), iri(foafNS + "topic_interest"), blank("x")},
		{blank("x"), iri(rdfsLabel), literal("Line-based formats\tà la carte", "", "")},
		{iri("http://example.org/card#me"), iri(foafNS + "age"), literal("33", "", xsdInteger)},
	}
	checkGraph(t, got, want)

	// The same document is valid Turtle with the same graph.
	asTurtle, err := parseTurtle(string(data), turtleBase)
	if err != nil {
		t.Fatal(err)
	}
	checkGraph(t, asTurtle, want)
}

func TestTurtleErrors(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		nt        bool
		want      string
		line, col int
	}{
		{"missing dot", "<http://a/> <http://b/> <http://c/>\n<http://a/> <http://b/> <http://d/> .", false, "expected '.' at the end of the statement", 2, 1},
		{"missing final dot", "<http://a/> <http://b/> <http://c/>", false, "does not end with '.'", 1, 36},
		{"undeclared prefix", "foaf:me <http://b/> <http://c/> .", false, `prefix "foaf:" is not declared`, 1, 1},
		{"unclosed string", "<http://a/> <http://b/> \"abc .\n", false, "line break inside a string", 1, 31},
		{"unclosed long string", "<http://a/> <http://b/> \"\"\"abc .", false, "string is never closed", 1, 25},
		{"unclosed iri", "<http://a/ <http://b/> <http://c/> .", false, `character ' ' is not allowed in an IRI`, 1, 11},
		{"unclosed bracket", "<http://a/> <http://b/> [ <http://c/> <http://d/> .", false, "expected ']'", 1, 51},
		{"unclosed collection", "<http://a/> <http://b/> ( <http://c/> ", false, "'(' is never closed", 1, 25},
		{"bad escape", `<http://a/> <http://b/> "a\qb" .`, false, `unknown escape \q`, 1, 27},
		{"bad unicode escape", `<http://a/> <http://b/> "\uD800" .`, false, "not a Unicode character", 1, 26},
		{"literal subject", `"s" <http://b/> <http://c/> .`, false, "expected a subject", 1, 1},
		{"unknown directive", "@prefixx a: <http://a/> .", false, "unknown directive", 1, 1},
		{"prefix without iri", "@prefix a: b .", false, "expected an <IRI> for prefix", 1, 12},
		{"bad number", "<http://a/> <http://b/> 1e .", false, "exponent without digits", 1, 26},
		{"bad language tag", `<http://a/> <http://b/> "x"@ .`, false, "expected a language tag", 1, 29},
		{"not utf-8", "<http://a/> <http://b/> \"caf\xe9\" .", false, "not valid UTF-8", 1, 29},
		{"deep nesting", "<http://a/> <http://b/> " + strings.Repeat("[ <http://b/> ", 300) + ".", false, "nested deeper", 0, 0},
		{"n3 formula", "{ <http://a/> <http://b/> <http://c/> } => { } .", false, "expected a subject", 1, 1},
		{"html", "<!DOCTYPE html><html></html>", false, "is not allowed in an IRI", 1, 10},
		{"nt prefix", "@prefix a: <http://a/> .", true, "directives are not allowed in N-Triples", 1, 1},
		{"nt semicolon", "<http://a/> <http://b/> <http://c/> ; <http://d/> <http://e/> .", true, "';' is not allowed", 1, 37},
		{"nt number", "<http://a/> <http://b/> 1 .", true, "expected an object", 1, 25},
		{"nt a", "<http://a/> a <http://c/> .", true, "expected a predicate <IRI>", 1, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			var ts []triple
			if tt.nt {
				ts, err = parseNTriples(tt.doc)
			} else {
				ts, err = parseTurtle(tt.doc, turtleBase)
			}
			if err == nil {
				t.Fatalf("no error; %d triples", len(ts))
			}
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %q is not a *SyntaxError", err)
			}
			if !strings.Contains(se.Msg, tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if tt.line > 0 && (se.Line != tt.line || se.Column != tt.col) {
				t.Errorf("at %d:%d, want %d:%d (%v)", se.Line, se.Column, tt.line, tt.col, err)
			}
		})
	}
}

func TestResolveIRI(t *testing.T) {
	// RFC 3986 section 5.4 examples.
	const base = "http://a/b/c/d;p?q"
	tests := map[string]string{
		"g:h": "g:h", "g": "http://a/b/c/g", "./g": "http://a/b/c/g", "g/": "http://a/b/c/g/",
		"/g": "http://a/g", "//g": "http://g", "?y": "http://a/b/c/d;p?y", "g?y": "http://a/b/c/g?y",
		"#s": "http://a/b/c/d;p?q#s", "g#s": "http://a/b/c/g#s", "g?y#s": "http://a/b/c/g?y#s",
		";x": "http://a/b/c/;x", "g;x": "http://a/b/c/g;x", "g;x?y#s": "http://a/b/c/g;x?y#s",
		"": "http://a/b/c/d;p?q", ".": "http://a/b/c/", "./": "http://a/b/c/", "..": "http://a/b/",
		"../": "http://a/b/", "../g": "http://a/b/g", "../..": "http://a/", "../../": "http://a/",
		"../../g": "http://a/g", "../../../g": "http://a/g", "../../../../g": "http://a/g",
		"/./g": "http://a/g", "/../g": "http://a/g", "g.": "http://a/b/c/g.", ".g": "http://a/b/c/.g",
		"g..": "http://a/b/c/g..", "..g": "http://a/b/c/..g", "./../g": "http://a/b/g",
		"./g/.": "http://a/b/c/g/", "g/./h": "http://a/b/c/g/h", "g/../h": "http://a/b/c/h",
		"g;x=1/./y": "http://a/b/c/g;x=1/y", "g;x=1/../y": "http://a/b/c/y",
		"g?y/./x": "http://a/b/c/g?y/./x", "g#s/../x": "http://a/b/c/g#s/../x",
		"http:g": "http:g", "café": "http://a/b/c/café",
	}
	for ref, want := range tests {
		if got := resolveIRI(base, ref); got != want {
			t.Errorf("resolve(%q) = %q, want %q", ref, got, want)
		}
	}
	if got := resolveIRI("http://a/doc#frag", ""); got != "http://a/doc" {
		t.Errorf("empty reference keeps the base fragment: %q", got)
	}
	if got := resolveIRI("", "rel"); got != "rel" {
		t.Errorf("no base: %q", got)
	}
}
