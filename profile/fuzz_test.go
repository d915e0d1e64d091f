package profile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

// addSeeds adds the test documents matching pattern to the fuzz corpus.
func addSeeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// checkWellFormed checks the invariants of a graph read from any input:
// subjects are IRIs or blank nodes, predicates IRIs, terms valid UTF-8,
// blank nodes named, literals with a language have no datatype, and
// writing the graph as N-Triples and reading it back gives the same graph.
func checkWellFormed(t *testing.T, ts []triple) {
	t.Helper()
	var nt strings.Builder
	for _, tr := range ts {
		if !tr.s.isIRI() && !tr.s.isBlank() {
			t.Fatalf("subject is not an IRI or blank node: %v", tr)
		}
		if !tr.p.isIRI() {
			t.Fatalf("predicate is not an IRI: %v", tr)
		}
		for _, x := range []term{tr.s, tr.p, tr.o} {
			if x.kind < iriTerm || x.kind > literalTerm {
				t.Fatalf("term of no kind in %v", tr)
			}
			if !utf8.ValidString(x.value) || !utf8.ValidString(x.lang) || !utf8.ValidString(x.datatype) {
				t.Fatalf("invalid UTF-8 in %q", tr)
			}
			if x.isBlank() && x.value == "" {
				t.Fatalf("unnamed blank node in %v", tr)
			}
			if x.isLiteral() && x.lang != "" && x.datatype != "" {
				t.Fatalf("literal with language and datatype: %v", tr)
			}
		}
		nt.WriteString(tr.String())
		nt.WriteByte('\n')
	}
	back, err := parseNTriples(nt.String())
	if err != nil {
		t.Fatalf("N-Triples written from the graph do not read back: %v\n%s", err, nt.String())
	}
	if a, b := graphDiff(ts, back); len(a)+len(b) > 0 {
		t.Fatalf("graph changed through N-Triples: %v / %v", a, b)
	}
}

func FuzzRDFXML(f *testing.F) {
	addSeeds(f, "testdata/rdfxml/*.rdf")
	addSeeds(f, "testdata/foaf/*.rdf")
	f.Add([]byte(`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := parseRDFXML(data, testBase)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		checkWellFormed(t, ts)
	})
}

func FuzzTurtle(f *testing.F) {
	addSeeds(f, "testdata/turtle/*")
	addSeeds(f, "testdata/foaf/*.ttl")
	f.Add([]byte(`@prefix : <#> . :a :b ( [ :c "d"@en ] 1.5e0 ) .`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, nt := range []bool{false, true} {
			var ts []triple
			var err error
			if nt {
				ts, err = parseNTriples(string(data))
			} else {
				ts, err = parseTurtle(string(data), turtleBase)
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatal("empty error message")
				}
				continue
			}
			checkWellFormed(t, ts)
		}
	})
}

// FuzzParse reads any input as a FOAF document: it gives a profile whose
// interests all have a term, or an EINVALID or ETOOLARGE error.
func FuzzParse(f *testing.F) {
	addSeeds(f, "testdata/foaf/*")
	addSeeds(f, "testdata/rdfxml/*.rdf")
	b := NewBuilder()
	b.MaxSize = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := b.Parse(Document{Body: bytes.NewReader(data), Name: "upload"})
		if err != nil {
			code := changedigest.ErrorCode(err)
			if code != changedigest.EINVALID && code != changedigest.ETOOLARGE {
				t.Fatalf("error code %q: %v", code, err)
			}
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrNotRDF) && !errors.Is(err, ErrEmpty) &&
				!errors.Is(err, ErrNoPerson) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if p.Interests == nil {
			t.Fatal("nil interests")
		}
		for _, in := range p.Interests {
			if in.Term == "" || in.Weight != 1 || !strings.HasPrefix(in.Source, "foaf:") {
				t.Fatalf("bad interest %+v", in)
			}
		}
		for _, pg := range p.Pages {
			if !isWebURL(pg.URL) {
				t.Fatalf("page %q is not a web URL", pg.URL)
			}
		}
	})
}
