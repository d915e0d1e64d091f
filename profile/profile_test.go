package profile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testBuilder() *Builder {
	b := NewBuilder()
	b.Now = func() time.Time { return fixedNow }
	return b
}

// mustParseFile reads a FOAF test document with the base IRI
// http://example.org/foaf/NAME.
func mustParseFile(tb testing.TB, b *Builder, name string) *changedigest.Profile {
	tb.Helper()
	p, err := b.Parse(fileDocument(tb, name))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func fileDocument(tb testing.TB, name string) Document {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/foaf", name))
	if err != nil {
		tb.Fatal(err)
	}
	return Document{Body: bytes.NewReader(data), Name: name, Base: "http://example.org/foaf/" + name}
}

// interestLines renders interests as "term|uri|source" for comparison.
func interestLines(in []changedigest.Interest) []string {
	var out []string
	for _, i := range in {
		out = append(out, fmt.Sprintf("%s|%s|%s", i.Term, i.URI, i.Source))
	}
	return out
}

func pageLines(ps []changedigest.LinkedPage) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Property+" "+p.URL)
	}
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestParseProfile(t *testing.T) {
	tests := []struct {
		file       string
		name, nick string
		interests  []string
		pages      []string
	}{
		{
			file: "ppd.rdf", name: "Alice Example", nick: "alice",
			interests: []string{
				"Resource Description Framework|http://www.w3.org/RDF/|foaf:interest",
				"semantic web|http://en.wikipedia.org/wiki/Semantic_Web|foaf:interest",
				"rock climbing|https://en.wikipedia.org/wiki/Rock_climbing|foaf:interest",
				"cello music||foaf:interest",
				"My reading list|http://example.org/reading-list|foaf:interest",
				"knowledge graph|http://dbpedia.org/resource/Knowledge_graph|foaf:topic_interest",
				"Cartography|http://example.org/topics#t1|foaf:topic_interest",
				"bird watching|http://en.wikipedia.org/wiki/Bird_watching|foaf:topic_interest",
			},
			pages: []string{
				"foaf:homepage http://alice.example.org/",
				"foaf:weblog http://alice.example.org/blog/",
				"foaf:workplaceHomepage https://www.example-lab.org/",
				"foaf:schoolHomepage http://www.example.edu/",
			},
		},
		{
			file: "maker.ttl", name: "Carol Card",
			interests: []string{
				"python|https://en.wikipedia.org/wiki/Python_(programming_language)|foaf:interest",
				"Jazz||foaf:interest",
			},
			pages: []string{"foaf:homepage http://example.org/index.html"},
		},
		{
			file: "primarytopic.ttl", name: "Dan Given",
			interests: []string{"machine learning|http://example.org/topics/MachineLearning|foaf:topic_interest"},
		},
		{
			file: "most-properties.rdf", name: "Frank Most", nick: "frank",
			interests: []string{"open source software|http://example.org/interests/open-source-software.html|foaf:interest"},
			pages:     []string{"foaf:weblog http://frank.example/weblog"},
		},
		{
			file: "ppd-self.rdf", name: "Henry Selfie",
			pages: []string{"foaf:homepage http://henry.example/"},
		},
		{
			file: "namespace-typo.rdf", name: "Jos Typo",
			interests: []string{"namespace|http://en.wikipedia.org/wiki/Namespace|foaf:interest"},
		},
		{
			file: "untyped.nt", name: "Grace Untyped", nick: "grace",
			interests: []string{"Compilers|http://en.wikipedia.org/wiki/Compiler|foaf:interest"},
			pages:     []string{"foaf:schoolHomepage https://school.example/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := mustParseFile(t, testBuilder(), tt.file)
			if p.Name != tt.name || p.Nick != tt.nick {
				t.Errorf("name %q nick %q, want %q %q", p.Name, p.Nick, tt.name, tt.nick)
			}
			sameLines(t, "interests", interestLines(p.Interests), tt.interests)
			sameLines(t, "pages", pageLines(p.Pages), tt.pages)
			for _, in := range p.Interests {
				if in.Weight != 1 {
					t.Errorf("interest %q has weight %v, want 1", in.Term, in.Weight)
				}
			}
			if !p.UpdatedAt.Equal(fixedNow) {
				t.Errorf("UpdatedAt %v, want the builder's clock", p.UpdatedAt)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	b := testBuilder()
	b.MaxSize = 4096
	noPerson, _ := os.ReadFile("testdata/foaf/no-person.ttl")
	tests := []struct {
		name, doc, contentType string
		code                   string
		is                     error
		want                   []string
	}{
		{"empty.rdf", "", "", changedigest.EINVALID, ErrEmpty, []string{"empty.rdf is empty"}},
		{"blank.ttl", " \n\t\n", "", changedigest.EINVALID, ErrEmpty, []string{"is empty"}},
		{"big.rdf", strings.Repeat("x", 5000), "", changedigest.ETOOLARGE, ErrTooLarge, []string{"big.rdf is larger than the limit of 4096 bytes"}},
		{"broken.rdf", "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n<rdf:Description>\n</rdf:RDF>", "", changedigest.EINVALID, ErrSyntax,
			[]string{"broken.rdf", "RDF/XML syntax error at line 3", "unexpected end tag </rdf:RDF>"}},
		{"broken.ttl", "@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n<#me> foaf:name \"A\" ;\n  foaf:nick .", "", changedigest.EINVALID, ErrSyntax,
			[]string{"broken.ttl: Turtle syntax error at line 3, column 13", "expected an object"}},
		{"upload", "<#me> <http://xmlns.com/foaf/0.1/name> \"A\" ", "", changedigest.EINVALID, ErrSyntax,
			[]string{"upload (read as Turtle, guessed from its content)", "does not end with '.'"}},
		{"page", "<!DOCTYPE html>\n<html><body>Hello</body></html>", "", changedigest.EINVALID, ErrNotRDF, []string{"page is an HTML page, not a FOAF document"}},
		{"text.txt", "Just some notes about me.", "", changedigest.EINVALID, ErrSyntax, []string{"read as Turtle, guessed", "expected a subject"}},
		{"served.xml", "<notes><note>hi</note></notes>", "application/xml", changedigest.EINVALID, ErrNotRDF, []string{"root element <notes> is neither rdf:RDF nor an RDF node element"}},
		{"vocab.ttl", string(noPerson), "", changedigest.EINVALID, ErrNoPerson, []string{"vocab.ttl (Turtle, 4 statements) describes no person"}},
		{"nameless.rdf", mustRead("testdata/foaf/nameless.rdf"), "", changedigest.EINVALID, ErrNoPerson, []string{"describes a person (an unnamed node) but gives no name, nick, interest or linked page"}},
		{"nothing.ttl", "# only a comment\n", "", changedigest.EINVALID, ErrEmpty, []string{"nothing.ttl holds no RDF statements"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := b.Parse(Document{Body: strings.NewReader(tt.doc), Name: tt.name, ContentType: tt.contentType})
			if err == nil {
				t.Fatalf("no error; profile %+v", p)
			}
			if c := changedigest.ErrorCode(err); c != tt.code {
				t.Errorf("code %q, want %q (%v)", c, tt.code, err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("%v is not %v", err, tt.is)
			}
			msg := changedigest.ErrorMessage(err)
			if !strings.HasPrefix(msg, "profile: ") {
				t.Errorf("message %q does not start with the package name", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func mustRead(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		name, contentType, data string
		want                    Format
		declared                bool
	}{
		{"card", "text/turtle; charset=utf-8", "", FormatTurtle, true},
		{"foaf.ttl", "application/rdf+xml", "", FormatRDFXML, true},
		{"foaf.rdf", "", "", FormatRDFXML, true},
		{"https://x.example/card.ttl?v=2#me", "", "", FormatTurtle, true},
		{"dump.nt", "text/plain", "", FormatNTriples, true},
		{"upload", "", `<?xml version="1.0"?><rdf:RDF/>`, FormatRDFXML, false},
		{"upload", "", "\ufeff<rdf:RDF xmlns:rdf=\"x\">", FormatRDFXML, false},
		{"upload", "", "<!-- c --><rdf:RDF/>", FormatRDFXML, false},
		{"upload", "", "<foaf:Person>\n</foaf:Person>", FormatRDFXML, false},
		{"upload", "", "<http://a/> <http://b/> <http://c/> .", FormatTurtle, false},
		{"upload", "", "<#me> a <http://xmlns.com/foaf/0.1/Person> .", FormatTurtle, false},
		{"upload", "", "@prefix foaf: <http://xmlns.com/foaf/0.1/> .", FormatTurtle, false},
		{"upload", "application/octet-stream", "# comment\n_:a <http://b/> \"c\" .", FormatTurtle, false},
	}
	for _, tt := range tests {
		f, declared := DetectFormat(tt.name, tt.contentType, []byte(tt.data))
		if f != tt.want || declared != tt.declared {
			t.Errorf("DetectFormat(%q, %q, %.20q) = %s, %v; want %s, %v", tt.name, tt.contentType, tt.data, f, declared, tt.want, tt.declared)
		}
	}
}

func TestDocumentBase(t *testing.T) {
	tests := []struct {
		doc  Document
		want string
	}{
		{Document{Name: "https://alice.example/card.ttl"}, "https://alice.example/card.ttl"},
		{Document{Name: "/home/alice/foaf.rdf"}, "file:///home/alice/foaf.rdf"},
		{Document{Name: "my foaf.rdf"}, "file:///my%20foaf.rdf"},
		{Document{Name: "x.rdf", Base: "http://b.example/"}, "http://b.example/"},
		{Document{}, "file:///profile"},
	}
	for _, tt := range tests {
		if got := tt.doc.baseIRI(); got != tt.want {
			t.Errorf("base of %+v = %q, want %q", tt.doc, got, tt.want)
		}
	}
}

// TestBuildWithPages checks that Build adds the key terms of each linked
// page, reports a page that fails without failing, and skips terms the
// FOAF document states already.
func TestBuildWithPages(t *testing.T) {
	pages := map[string]string{
		"http://alice.example.org/": `Alice works on the semantic web. Semantic web tools, RDF parsers and
			SPARQL endpoints fill her days; RDF parsers are her favourite. SPARQL queries too.`,
		"http://alice.example.org/blog/": `Cello practice log. Cello strings, cello bows and the cello
			repertoire of Bach: the cello suites. Bach wrote six cello suites.`,
		"http://www.example.edu/": "",
	}
	var fetched []string
	b := testBuilder()
	b.TermsPerPage = 4
	b.Fetch = func(ctx context.Context, url string) (string, error) {
		fetched = append(fetched, url)
		text, ok := pages[url]
		if !ok {
			return "", errors.New("connection refused")
		}
		return text, nil
	}
	p, pageErrs, err := b.Build(context.Background(), fileDocument(t, "ppd.rdf"))
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, "fetched", fetched, []string{"http://alice.example.org/", "http://alice.example.org/blog/", "https://www.example-lab.org/", "http://www.example.edu/"})
	var errLines []string
	for _, e := range pageErrs {
		errLines = append(errLines, e.Error())
	}
	sameLines(t, "page errors", errLines, []string{
		"profile: page https://www.example-lab.org/: connection refused",
		"profile: page http://www.example.edu/: no text to draw key terms from",
	})
	if !errors.Is(&pageErrs[1], ErrPageEmpty) {
		t.Errorf("empty page error is not ErrPageEmpty")
	}
	var fromPages []string
	for _, in := range p.Interests {
		if in.Source != changedigest.SourcePage {
			continue
		}
		if in.Weight <= 0 || in.Weight >= 1 {
			t.Errorf("page term %q has weight %v, want 0 < w < 1", in.Term, in.Weight)
		}
		fromPages = append(fromPages, in.Term+" <- "+in.URI)
	}
	t.Logf("key terms from pages:\n  %s", strings.Join(fromPages, "\n  "))
	has := func(term, uri string) bool {
		for _, l := range fromPages {
			if l == term+" <- "+uri {
				return true
			}
		}
		return false
	}
	for _, want := range [][2]string{
		{"rdf parser", "http://alice.example.org/"},
		{"sparql", "http://alice.example.org/"},
		{"cello", "http://alice.example.org/blog/"},
		{"cello suite", "http://alice.example.org/blog/"},
	} {
		if !has(want[0], want[1]) {
			t.Errorf("key term %q from %s missing", want[0], want[1])
		}
	}
	if has("semantic web", "http://alice.example.org/") {
		t.Errorf("page term duplicates the FOAF interest semantic web")
	}

	// A cancelled context stops the build.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := b.Build(ctx, fileDocument(t, "ppd.rdf")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled build: %v", err)
	}
}

func TestManualTerms(t *testing.T) {
	p := mustParseFile(t, testBuilder(), "maker.ttl")
	// python (foaf:interest), Jazz (foaf:interest)

	if err := AddInterest(p, "  Go   programming "); err != nil {
		t.Fatal(err)
	}
	if err := AddInterest(p, "jazz"); err != nil { // already there: becomes manual
		t.Fatal(err)
	}
	removed, err := RemoveInterest(p, "PYTHON")
	if err != nil || !removed {
		t.Fatalf("remove python: %v %v", removed, err)
	}
	if removed, _ := RemoveInterest(p, "golf"); removed {
		t.Errorf("golf was not in the profile")
	}
	sameLines(t, "after edits", interestLines(p.Interests), []string{
		"Jazz||manual",
		"Go programming||manual",
	})
	sameLines(t, "excluded", p.Excluded, []string{"PYTHON", "golf"})

	for _, bad := range []string{"", "   ", strings.Repeat("x", MaxTermLength+1), "a\x00b"} {
		if err := AddInterest(p, bad); changedigest.ErrorCode(err) != changedigest.EINVALID || !errors.Is(err, ErrTerm) {
			t.Errorf("AddInterest(%q): %v", bad, err)
		}
	}

	// Re-uploading the document keeps the manual terms and exclusions.
	p.UserID = 7
	fresh := mustParseFile(t, testBuilder(), "maker.ttl")
	merged := Merge(p, fresh)
	if merged.UserID != 7 {
		t.Errorf("UserID %d after merge", merged.UserID)
	}
	sameLines(t, "after merge", interestLines(merged.Interests), []string{
		"Jazz||manual",
		"Go programming||manual",
	})
	sameLines(t, "excluded after merge", merged.Excluded, []string{"PYTHON", "golf"})

	// Adding an excluded term back takes it off the list.
	if err := AddInterest(merged, "Python"); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "excluded after re-adding", merged.Excluded, []string{"golf"})

	// Exclude applies the list to a profile built otherwise.
	q := &changedigest.Profile{Interests: []changedigest.Interest{{Term: "Golf", Source: "page"}, {Term: "chess", Source: "page"}}, Excluded: []string{"golf"}}
	Exclude(q)
	sameLines(t, "after Exclude", interestLines(q.Interests), []string{"chess||page"})

	if Merge(nil, fresh) != fresh {
		t.Errorf("Merge(nil, fresh) is not fresh")
	}
}

// TestProfileBounds: a profile holds at most MaxInterests interests, by
// hand or from a document, and forgets its oldest exclusions past it.
func TestProfileBounds(t *testing.T) {
	p := &changedigest.Profile{}
	for i := range MaxInterests {
		if err := AddInterest(p, fmt.Sprintf("topic %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	err := AddInterest(p, "one more")
	if !errors.Is(err, ErrTooMany) || changedigest.ErrorCode(err) != changedigest.EINVALID ||
		!strings.Contains(err.Error(), fmt.Sprintf("holds %d interests", MaxInterests)) {
		t.Errorf("interest %d: %v", MaxInterests+1, err)
	}
	if err := AddInterest(p, "topic 7"); err != nil { // held already
		t.Errorf("an interest held already: %v", err)
	}
	for i := range MaxInterests + 10 {
		if _, err := RemoveInterest(p, fmt.Sprintf("gone %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.Excluded) != MaxInterests || p.Excluded[0] != "gone 10" {
		t.Errorf("%d exclusions, the oldest %q", len(p.Excluded), p.Excluded[0])
	}
	var b strings.Builder
	b.WriteString("@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n<#me> a foaf:Person ; foaf:name \"Ann\"")
	for i := range MaxLinkedPages + 1 {
		fmt.Fprintf(&b, " ;\n foaf:homepage <http://example.org/%d>", i)
	}
	b.WriteString(" .\n")
	_, err = Parse(Document{Body: strings.NewReader(b.String()), Name: "ann.ttl"})
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), fmt.Sprintf("links %d pages", MaxLinkedPages+1)) {
		t.Errorf("%d linked pages: %v", MaxLinkedPages+1, err)
	}
}
