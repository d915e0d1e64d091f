package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

const testBase = "http://example.org/dir/doc.rdf"

// mustNTriples reads a hand-written expected graph.
func mustNTriples(tb testing.TB, path string) []triple {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ts, err := parseNTriples(string(data))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return ts
}

func checkGraph(t *testing.T, got, want []triple) {
	t.Helper()
	onlyGot, onlyWant := graphDiff(got, want)
	for _, l := range onlyGot {
		t.Errorf("unexpected: %s", l)
	}
	for _, l := range onlyWant {
		t.Errorf("missing:    %s", l)
	}
}

// TestRDFXMLConstructs reads each testdata/rdfxml/NAME.rdf, one per
// construct of the grammar, and compares the graph with NAME.nt.
func TestRDFXMLConstructs(t *testing.T) {
	files, err := filepath.Glob("testdata/rdfxml/*.rdf")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test documents: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".rdf")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseRDFXML(data, testBase)
			if err != nil {
				t.Fatal(err)
			}
			checkGraph(t, got, mustNTriples(t, strings.TrimSuffix(f, ".rdf")+".nt"))
		})
	}
}

// TestRDFXMLConstructsAgainstRapper reads the same documents with rapper,
// so the hand-written expectations are checked by a second reader too.
// Property attributes are read in raptor's way here (see raptorCompat).
func TestRDFXMLConstructsAgainstRapper(t *testing.T) {
	rapper := testenv.Tool(t, "rapper")
	files, _ := filepath.Glob("testdata/rdfxml/*.rdf")
	more, _ := filepath.Glob("testdata/foaf/*.rdf")
	files = append(files, more...)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, rerr := runRapper(t, rapper, f, FormatRDFXML, testBase)
			if rerr != "" {
				t.Fatalf("rapper: %s", rerr)
			}
			got, err := (&rdfxmlParser{raptorCompat: true}).parse(data, testBase)
			if err != nil {
				t.Fatal(err)
			}
			checkGraph(t, got, want)
		})
	}
}

func TestRDFXMLErrors(t *testing.T) {
	const head = `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/ns#">` + "\n"
	const tail = "\n</rdf:RDF>"
	tests := []struct {
		name string
		doc  string
		// want is a piece of the message; line the line reported (0: any).
		want string
		line int
		is   error
	}{
		{"not closed", head + `<ex:T rdf:about="http://a/">`, "is not closed", 0, ErrSyntax},
		{"mismatched end", head + `<ex:T rdf:about="http://a/"></ex:U>` + tail, "unexpected end tag </ex:U>", 2, ErrSyntax},
		{"broken xml", head + `<ex:T rdf:about="http://a/>` + tail, "not well-formed XML", 0, ErrSyntax},
		{"undeclared prefix", head + `<foo:T/>` + tail, `namespace prefix "foo" of element <foo:T> is not declared`, 2, ErrSyntax},
		{"undeclared attribute prefix", head + `<ex:T foo:a="1"/>` + tail, `prefix "foo" of attribute foo:a`, 2, ErrSyntax},
		{"text in node element", head + `<ex:T>stray text</ex:T>` + tail, `text "stray text" inside node element <ex:T>`, 2, ErrSyntax},
		{"text in rdf:RDF", head + `stray` + tail, `text "stray" inside <rdf:RDF>`, 1, ErrSyntax},
		{"mixed content", head + "<ex:T>\n<ex:p>a<ex:b/></ex:p></ex:T>" + tail, "mixes text", 3, ErrSyntax},
		{"two node elements in property", head + "<ex:T><ex:p>\n<ex:A/>\n<ex:B/></ex:p></ex:T>" + tail, "more than one node element", 4, ErrSyntax},
		{"resource and child", head + "<ex:T>\n<ex:p rdf:resource=\"http://x/\"><ex:A/></ex:p></ex:T>" + tail, "both a child node element and rdf:resource", 3, ErrSyntax},
		{"resource and nodeID", head + `<ex:T><ex:p rdf:resource="http://x/" rdf:nodeID="n"/></ex:T>` + tail, "both rdf:resource and rdf:nodeID", 2, ErrSyntax},
		{"about and ID", head + `<ex:T rdf:about="http://a/" rdf:ID="a"/>` + tail, "a node has one name", 2, ErrSyntax},
		{"bad ID", head + `<ex:T rdf:ID="1a"/>` + tail, `rdf:ID "1a"`, 2, ErrSyntax},
		{"duplicate ID", head + "<ex:T rdf:ID=\"a\"/>\n<ex:T rdf:ID=\"a\"/>" + tail, `rdf:ID "a" is used twice`, 3, ErrSyntax},
		{"bad nodeID", head + `<ex:T rdf:nodeID="a b"/>` + tail, `rdf:nodeID "a b"`, 2, ErrSyntax},
		{"li as node", head + `<rdf:li/>` + tail, "<rdf:li> cannot be a node element", 2, ErrSyntax},
		{"Description as property", head + `<ex:T><rdf:Description/></ex:T>` + tail, "<rdf:Description> cannot be a property element", 2, ErrSyntax},
		{"aboutEach", head + `<ex:T rdf:aboutEach="http://a/"/>` + tail, "rdf:aboutEach is not allowed", 2, ErrSyntax},
		{"li attribute", head + `<ex:T rdf:li="x"/>` + tail, "rdf:li is not allowed", 2, ErrSyntax},
		{"unqualified property", head + `<ex:T><name>x</name></ex:T>` + tail, "<name> has no namespace", 2, ErrSyntax},
		{"parseType with resource", head + `<ex:T><ex:p rdf:parseType="Resource" rdf:resource="http://x/"/></ex:T>` + tail, `rdf:parseType="Resource" and also`, 2, ErrSyntax},
		{"two roots", head + tail + "\n<rdf:RDF/>", "second root element", 4, ErrSyntax},
		{"text before root", "hello\n" + head + tail, `text "hello" before the root element`, 1, ErrSyntax},
		{"late xml declaration", "\n" + `<!-- c --><?xml version="1.0"?>` + head + tail, "XML declaration", 2, ErrSyntax},
		{"html page", "<html><body><p>Hi</p></body></html>", "neither rdf:RDF nor an RDF node element", 0, ErrNotRDF},
		{"no element", "<!-- only a comment -->", "no XML element", 0, ErrEmpty},
		{"unknown encoding", `<?xml version="1.0" encoding="x-klingon"?>` + head + tail, "unsupported character encoding", 0, ErrSyntax},
		{"undefined entity", head + `<ex:T ex:a="&nope;"/>` + tail, "not well-formed XML", 2, ErrSyntax},
		{"deep nesting", head + strings.Repeat("<ex:T><ex:p>", 300) + tail, "nested deeper", 0, ErrSyntax},
		{"entity bomb", `<!DOCTYPE rdf:RDF [<!ENTITY a "` + strings.Repeat("x", 1<<16) + `">]>` + head + `<ex:T ex:a="` + strings.Repeat("&a;", 200) + `"/>` + tail, "expand to more than", 0, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := parseRDFXML([]byte(tt.doc), testBase)
			if err == nil {
				t.Fatalf("no error; %d triples", len(ts))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			var se *SyntaxError
			if tt.line > 0 {
				if !errors.As(err, &se) {
					t.Fatalf("error %q is not a *SyntaxError", err)
				}
				if se.Line != tt.line {
					t.Errorf("line %d, want %d (%v)", se.Line, tt.line, err)
				}
			}
		})
	}
}
