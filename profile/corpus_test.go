package profile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// corpusFile is one line of the FOAF corpus manifest.
type corpusFile struct {
	Local    string `json:"local"`
	Category string `json:"category"`
	Bytes    int    `json:"bytes"`
}

func corpusFiles(t testing.TB) (string, []corpusFile) {
	t.Helper()
	dir := testenv.Corpus(t, "foaf")
	f, err := os.Open(filepath.Join(dir, "manifest.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var files []corpusFile
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c corpusFile
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("manifest: %v", err)
		}
		files = append(files, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("empty manifest")
	}
	return dir, files
}

// rapperFormat is rapper's name for a format.
func rapperFormat(f Format) string {
	switch f {
	case FormatTurtle:
		return "turtle"
	case FormatNTriples:
		return "ntriples"
	}
	return "rdfxml"
}

// runRapper parses path with rapper against base and returns its triples,
// or its error output when it reports an error.
func runRapper(t *testing.T, rapper, path string, f Format, base string) ([]triple, string) {
	t.Helper()
	cmd := exec.Command(rapper, "-q", "-i", rapperFormat(f), "-o", "ntriples", path, base)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runErr := cmd.Run()
	if runErr != nil || strings.Contains(stderr.String(), "Error") {
		return nil, strings.TrimSpace(stderr.String())
	}
	ts, err := parseNTriples(out.String())
	if err != nil {
		t.Fatalf("reading rapper's output for %s: %v", path, err)
	}
	return ts, ""
}

// TestCorpusTriplesMatchRapper reads every FOAF file of the corpus and
// compares the graph with the one rapper (raptor2) reads from the same
// file and base IRI. Where rapper reports an error the reader must fail too.
func TestCorpusTriplesMatchRapper(t *testing.T) {
	dir, files := corpusFiles(t)
	rapper := testenv.Tool(t, "rapper")
	for _, c := range files {
		t.Run(c.Local, func(t *testing.T) {
			path := filepath.Join(dir, c.Local)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, _ := DetectFormat(path, "", data)
			base := "http://example.org/corpus/" + c.Local
			want, rapperErr := runRapper(t, rapper, path, f, base)
			var got []triple
			if f == FormatRDFXML {
				got, err = (&rdfxmlParser{raptorCompat: true}).parse(data, base)
			} else {
				got, err = parseGraph(data, f, base)
			}
			if rapperErr != "" {
				if err == nil {
					t.Fatalf("rapper fails (%s) but %d triples were read", rapperErr, len(got))
				}
				t.Logf("both fail: rapper: %s\n  here: %v", firstLine(rapperErr), err)
				return
			}
			if err != nil {
				t.Fatalf("rapper reads %d triples, here: %v", len(want), err)
			}
			onlyHere, onlyRapper := graphDiff(got, want)
			for _, l := range onlyHere {
				t.Errorf("only here:   %s", l)
			}
			for _, l := range onlyRapper {
				t.Errorf("only rapper: %s", l)
			}
			if len(onlyHere)+len(onlyRapper) == 0 {
				t.Logf("%s: %d triples, same graph as rapper", f.Name(), len(got))
			}
		})
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestCorpusProfiles reads every corpus file into a profile. Files rapper
// rejects must give an EINVALID error; the others a profile, except
// documents that describe no person (vocabularies), which must say so.
// A few profiles are printed to the test log (go test -v).
func TestCorpusProfiles(t *testing.T) {
	dir, files := corpusFiles(t)
	b := NewBuilder()
	profiles, noPerson, failed := 0, 0, 0
	for _, c := range files {
		t.Run(c.Local, func(t *testing.T) {
			path := filepath.Join(dir, c.Local)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := b.Parse(Document{Body: f, Name: path})
			if err != nil {
				if code := changedigest.ErrorCode(err); code != changedigest.EINVALID {
					t.Fatalf("error code %q: %v", code, err)
				}
				if errors.Is(err, ErrNoPerson) {
					noPerson++
				} else {
					failed++
				}
				t.Logf("error: %s", changedigest.ErrorMessage(err))
				return
			}
			profiles++
			if p.Name == "" && p.Nick == "" && len(p.Interests) == 0 && len(p.Pages) == 0 {
				t.Errorf("empty profile")
			}
			t.Logf("%s", describeProfile(p))
		})
	}
	t.Logf("%d profiles, %d documents without a person, %d rejected", profiles, noPerson, failed)
}

func describeProfile(p *changedigest.Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name %q nick %q", p.Name, p.Nick)
	for _, in := range p.Interests {
		fmt.Fprintf(&b, "\n    interest %q (%s) %s", in.Term, in.Source, in.URI)
	}
	for _, pg := range p.Pages {
		fmt.Fprintf(&b, "\n    page %s %s", pg.Property, pg.URL)
	}
	return b.String()
}

// BenchmarkParseLargestCorpusFile reads the largest FOAF file of the
// corpus into triples and into a profile.
func BenchmarkParseLargestCorpusFile(b *testing.B) {
	dir, files := corpusFiles(b)
	largest := files[0]
	for _, c := range files {
		if c.Bytes > largest.Bytes {
			largest = c
		}
	}
	path := filepath.Join(dir, largest.Local)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s, %d bytes", largest.Local, len(data))
	b.Run("triples", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseRDFXML(data, "file://"+path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("profile", func(b *testing.B) {
		pb := NewBuilder()
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pb.Parse(Document{Body: bytes.NewReader(data), Name: path}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
