package profile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// nestedEntities is a DOCTYPE internal subset of levels entities after
// "lol", each ten references to the one before: the last expands to
// 3·10^levels bytes.
func nestedEntities(levels int) string {
	var b strings.Builder
	b.WriteString("<!ENTITY lol \"lol\">\n")
	prev := "lol"
	for i := 1; i <= levels; i++ {
		name := fmt.Sprintf("lol%d", i)
		fmt.Fprintf(&b, "<!ENTITY %s \"%s\">\n", name, strings.Repeat("&"+prev+";", 10))
		prev = name
	}
	return b.String()
}

// foafWithDoctype is a FOAF person whose name is text, after a DOCTYPE
// with the given internal subset.
func foafWithDoctype(subset, text string) string {
	return `<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
` + subset + `]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:foaf="http://xmlns.com/foaf/0.1/">
  <foaf:Person rdf:about="http://example.org/#me">
    <foaf:name>` + text + `</foaf:name>
    <foaf:topic_interest>cycling</foaf:topic_interest>
  </foaf:Person>
</rdf:RDF>
`
}

// TestEntityExpansionRefused feeds documents whose entities would expand
// far beyond their size, in every way found to reach the decoder: each is
// refused as an entity expansion, with EINVALID and ErrSyntax, before the
// expansion takes memory.
func TestEntityExpansionRefused(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile("testdata/bomb/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	// 30 KB of text from four levels, referenced 100 times: 3 MB.
	manyRefs := foafWithDoctype(nestedEntities(4), strings.Repeat("&lol4;", 100))
	// The same references with an ISO-2022-JP escape (back to ASCII, a
	// no-op) inside each name: the bytes do not hold "&lol4;", the
	// decoded text does.
	hidden := strings.Replace(manyRefs, `<?xml version="1.0"?>`, `<?xml version="1.0" encoding="iso-2022-jp"?>`, 1)
	hidden = strings.Replace(hidden, strings.Repeat("&lol4;", 100), strings.Repeat("&lo\x1b(Bl4;", 100), 1)
	// A chain of single references, 17 deep.
	var chain strings.Builder
	chain.WriteString("<!ENTITY e0 \"x\">\n")
	for i := 1; i <= maxEntityNesting+1; i++ {
		fmt.Fprintf(&chain, "<!ENTITY e%d \"&e%d;\">\n", i, i-1)
	}
	tests := []struct {
		name, doc, want string
	}{
		{"nine levels", read("laughs9.rdf"), `line 9: entity expansion refused: the DOCTYPE's entities, up to "lol6", expand to more than 1048576 bytes`},
		{"ten levels", read("laughs10.rdf"), `line 10: entity expansion refused: the DOCTYPE's entities, up to "lol6", expand to more than 1048576 bytes`},
		{"references in the document", manyRefs, "line 11: entity expansion refused: the document's entity references expand to more than 1048576 bytes"},
		{"references hidden by the encoding", hidden, "the document's entity references expand to more than 1048576 bytes"},
		{"references in attributes", strings.Replace(foafWithDoctype(nestedEntities(4), "Ann"), `rdf:about="http://example.org/#me"`,
			`rdf:about="http://example.org/#me" foaf:nick="`+strings.Repeat("&lol4;", 100)+`"`, 1), "the document's entity references expand"},
		{"nesting", foafWithDoctype(chain.String(), "&e17;"), `entity "e17" nests entity references more than 16 deep`},
		{"references in declarations", foafWithDoctype("<!ENTITY z \"\">\n<!ENTITY many \""+strings.Repeat("&z;", maxEntityRefs+1)+"\">\n", "&many;"),
			`up to "many", hold more than 10000 entity references`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(Document{Body: strings.NewReader(tt.doc), Name: "bomb.rdf"})
			if err == nil {
				t.Fatal("accepted")
			}
			if changedigest.ErrorCode(err) != changedigest.EINVALID || !errors.Is(err, ErrSyntax) {
				t.Errorf("code %q, not a syntax error: %v", changedigest.ErrorCode(err), err)
			}
			if msg := err.Error(); !strings.Contains(msg, "entity expansion refused") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not say %q", msg, tt.want)
			}
		})
	}
}

// TestEntitiesNotFromComments: a DOCTYPE written inside a comment
// declares nothing, so its entities neither expand nor escape the count.
func TestEntitiesNotFromComments(t *testing.T) {
	doc := `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:foaf="http://xmlns.com/foaf/0.1/">
  <!-- <!DOCTYPE x [ ` + nestedEntities(4) + ` --> <foaf:Person rdf:about="http://example.org/#me">
    <foaf:name>` + strings.Repeat("&lol4;", 100) + `]></foaf:name>
  </foaf:Person>
</rdf:RDF>
`
	_, err := Parse(Document{Body: strings.NewReader(doc), Name: "comment.rdf"})
	if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "lol4") {
		t.Fatalf("want the undeclared entity lol4 refused, got %v", err)
	}
}

// TestEntitiesWithinLimits: declared entities that nest and repeat within
// the limits expand as XML says, character references included.
func TestEntitiesWithinLimits(t *testing.T) {
	subset := nestedEntities(3) + `<!ENTITY foaf "http://xmlns.com/foaf/0.1/">
<!ENTITY who "Ann &#x00C9;&#233;&amp;&undeclared;">
`
	doc := foafWithDoctype(subset, "&who; &lol3;&lol3;")
	doc = strings.Replace(doc, `xmlns:foaf="http://xmlns.com/foaf/0.1/"`, `xmlns:foaf="&foaf;"`, 1)
	p, err := Parse(Document{Body: strings.NewReader(doc), Name: "ok.rdf"})
	if err != nil {
		t.Fatal(err)
	}
	want := "Ann Éé&&undeclared; " + strings.Repeat("lol", 2000)
	if p.Name != want {
		t.Errorf("name %q…, want %q…", abbreviate(p.Name, 40), abbreviate(want, 40))
	}
}

// TestManyCDATASections: text made of many CDATA sections is joined once
// (it was joined section by section, in time quadratic in their number).
func TestManyCDATASections(t *testing.T) {
	n := 100000
	doc := foafWithDoctype("", strings.Repeat("<![CDATA[x]]>", n))
	p, err := Parse(Document{Body: strings.NewReader(doc), Name: "cdata.rdf"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != strings.Repeat("x", n) {
		t.Errorf("name of %d bytes, want %d", len(p.Name), n)
	}
}

// FuzzEntities reads any document with the entity code: whatever its
// DOCTYPE declares, the text of the tree read (characters and attribute
// values) is at most the document's size plus its entity budget, and the
// entities declared hold no more than the budget.
func FuzzEntities(f *testing.F) {
	addSeeds(f, "testdata/bomb/*.rdf")
	addSeeds(f, "testdata/rdfxml/*.rdf")
	f.Add([]byte(foafWithDoctype(nestedEntities(3), "&lol3;&lol3;&lol2;")))
	f.Add([]byte(foafWithDoctype(`<!ENTITY a "&#38;b;"><!ENTITY b "&a;&a;"><!ENTITY c '&b;&b;'>`, "&c;&c;<x a='&c;'/>")))
	f.Add([]byte("<!DOCTYPE r [<!ENTITY a \"<!--]>-->\">]><r>&a;&a;</r>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		root, err := readXMLTree(data, "http://example.org/")
		if err != nil {
			return
		}
		utf, err := toUTF8(mustDecodeBOM(t, data))
		if err != nil {
			t.Fatalf("tree read, but toUTF8 fails: %v", err)
		}
		limit := len(utf) + entityBudget(len(utf))
		if n := treeText(root); n > limit {
			t.Fatalf("%d bytes of text from a document of %d bytes (limit %d)", n, len(utf), limit)
		}
	})
}

func mustDecodeBOM(t *testing.T, data []byte) []byte {
	out, err := decodeBOM(data)
	if err != nil {
		t.Fatalf("tree read, but decodeBOM fails: %v", err)
	}
	return out
}

// treeText is the bytes of text and attribute values in the tree.
func treeText(e *xelem) int {
	n := 0
	for _, a := range e.attrs {
		n += len(a.value)
	}
	for _, k := range e.kids {
		if k.el != nil {
			n += treeText(k.el)
		} else {
			n += len(k.text)
		}
	}
	return n
}

// TestDeclaredEntitiesDirect checks the limits on the declarations alone.
func TestDeclaredEntitiesDirect(t *testing.T) {
	doctype := []byte("DOCTYPE r [\n" + nestedEntities(5) + "]")
	ents, err := declaredEntities(doctype, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents["lol5"]) != 300000 || ents["lol"] != "lol" {
		t.Errorf("lol5 is %d bytes", len(ents["lol5"]))
	}
	_, err = declaredEntities(doctype, bytes.Repeat([]byte("&lol5;"), 4), 1000)
	if err == nil || !strings.Contains(err.Error(), "references expand") {
		t.Errorf("four references to 300 KB in a 1 MB document: %v", err)
	}
}
