package wordnetdata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"
)

// dictDir returns the installed WordNet dict files, skipping the test when
// they are absent (failing it under CI).
func dictDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("CHANGEDIGEST_WORDNET")
	if dir == "" {
		dir = "/usr/share/wordnet"
	}
	if _, err := os.Stat(dir + "/data.noun"); err != nil {
		if testenv.InCI() {
			tb.Fatalf("WordNet dict files absent: %v", err)
		}
		tb.Skipf("WordNet dict files absent (install wordnet-base): %v", err)
	}
	return dir
}

// diffData describes the first difference between two Data, or "".
func diffData(a, b *Data) string {
	if len(a.Lemmas) != len(b.Lemmas) {
		return fmt.Sprintf("%d lemmas vs %d", len(a.Lemmas), len(b.Lemmas))
	}
	for i := range a.Lemmas {
		if a.Lemmas[i] != b.Lemmas[i] {
			return fmt.Sprintf("lemma %d: %q vs %q", i, a.Lemmas[i], b.Lemmas[i])
		}
		if !reflect.DeepEqual(a.Senses[i], b.Senses[i]) {
			return fmt.Sprintf("lemma %q senses: %v vs %v", a.Lemmas[i], a.Senses[i], b.Senses[i])
		}
	}
	if len(a.Synsets) != len(b.Synsets) {
		return fmt.Sprintf("%d synsets vs %d", len(a.Synsets), len(b.Synsets))
	}
	for i := range a.Synsets {
		if !reflect.DeepEqual(a.Synsets[i], b.Synsets[i]) {
			return fmt.Sprintf("synset %d:\n%+v\nvs\n%+v", i, a.Synsets[i], b.Synsets[i])
		}
	}
	for p := range a.Exceptions {
		if !reflect.DeepEqual(a.Exceptions[p], b.Exceptions[p]) {
			return fmt.Sprintf("exceptions of %v differ", POSes[p])
		}
	}
	return ""
}

// TestEmbeddedMatchesDict checks that the embedded table is what the
// generator makes of the installed dict files.
func TestEmbeddedMatchesDict(t *testing.T) {
	dir := dictDir(t)
	want, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	got, err := tab.Data()
	if err != nil {
		t.Fatal(err)
	}
	if d := diffData(want, got); d != "" {
		t.Fatalf("embedded table differs from %s (run go generate ./wordnet-data/): %s", dir, d)
	}
}

// smallData is a hand-made table with the cases the encoding must keep:
// capitals, a lemma repeated in a synset, asymmetric and self pointers,
// lexical pointers, odd spacing in glosses, an adjective satellite.
func smallData() *Data {
	return &Data{
		Lemmas: []string{"car", "dog", "domestic dog", "go", "motor vehicle", "run", "swift", "zz top"},
		Senses: [][]Sense{
			{{Synset: 1, TagCount: 71}},             // car
			{{Synset: 0, TagCount: 42}},             // dog
			{{Synset: 0}},                           // domestic dog
			{{Synset: 4, TagCount: 3}},              // go (verb)
			{{Synset: 2, TagCount: 5}},              // motor vehicle
			{{Synset: 3}, {Synset: 4, TagCount: 1}}, // run: noun, then verb
			{{Synset: 5, TagCount: 2}, {Synset: 6}}, // swift: adjective senses
			{{Synset: 1}},                           // zz top
		},
		Synsets: []Synset{
			{Offset: 100, POS: Noun, LexFile: 5, Words: []Word{{Lemma: 1, Display: "dog"}, {Lemma: 2, Display: "domestic dog"}},
				Gloss: `a member of the genus Canis;  "the dog barked" `, Pointers: []Pointer{{Rel: AlsoSee, Target: 0}}},
			{Offset: 200, POS: Noun, LexFile: 6, Words: []Word{{Lemma: 0, Display: "car"}, {Lemma: 7, Display: "ZZ Top"}, {Lemma: 0, Display: "Car"}},
				Gloss: "a motor vehicle", Pointers: []Pointer{{Rel: Hypernym, Target: 2}, {Rel: Derivation, Target: 3, Source: 1, Dest: 1}}},
			{Offset: 300, POS: Noun, LexFile: 6, Words: []Word{{Lemma: 4, Display: "motor vehicle"}},
				Gloss: "", Pointers: []Pointer{{Rel: Hyponym, Target: 1}}},
			{Offset: 400, POS: Noun, LexFile: 4, Words: []Word{{Lemma: 5, Display: "run"}},
				Gloss: "a score in baseball; é", Pointers: []Pointer{{Rel: DomainTopic, Target: 4}}},
			{Offset: 50, POS: Verb, LexFile: 38, Words: []Word{{Lemma: 5, Display: "run"}, {Lemma: 3, Display: "go"}},
				Gloss: "move fast by using one's feet", Pointers: []Pointer{{Rel: VerbGroup, Target: 4}}},
			{Offset: 10, POS: Adjective, LexFile: 0, Words: []Word{{Lemma: 6, Display: "swift"}},
				Gloss: "moving very fast", Pointers: []Pointer{{Rel: SimilarTo, Target: 6}}},
			{Offset: 20, POS: Adjective, Satellite: true, LexFile: 0, Words: []Word{{Lemma: 6, Display: "swift"}},
				Gloss: "x ", Pointers: []Pointer{{Rel: SimilarTo, Target: 5}}},
		},
		Exceptions: [4][]Exception{
			{{Form: "geese", Base: "goose"}},
			{{Form: "ran", Base: "run"}, {Form: "went", Base: "go"}},
			{{Form: "better", Base: "good"}, {Form: "better", Base: "well"}},
			nil,
		},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			want := smallData()
			var buf bytes.Buffer
			if err := want.Encode(&buf, compress); err != nil {
				t.Fatal(err)
			}
			tab, err := Decode(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			// The decoder rebuilds the inverse pointers the data leaves
			// implicit only where both sides are present, so the hand-made
			// data lists both sides where it has them.
			got, err := tab.Data()
			if err != nil {
				t.Fatal(err)
			}
			if d := diffData(want, got); d != "" {
				t.Fatal(d)
			}
			if i, ok := tab.LookupLemma("motor vehicle"); !ok || tab.Lemma(i) != "motor vehicle" {
				t.Errorf("LookupLemma(motor vehicle) = %d, %v", i, ok)
			}
			if _, ok := tab.LookupLemma("motor"); ok {
				t.Error("LookupLemma(motor) found a lemma")
			}
			if got := tab.Exceptions(nil, "better", Adjective); !reflect.DeepEqual(got, []string{"good", "well"}) {
				t.Errorf("Exceptions(better) = %q", got)
			}
			if got := tab.Senses(nil, 5, Verb); len(got) != 1 || got[0].Synset != 4 || got[0].Number != 1 || got[0].TagCount != 1 {
				t.Errorf("Senses(run, verb) = %+v", got)
			}
			if id := tab.ID(4); id != "v00000050" {
				t.Errorf("ID = %q", id)
			}
			if i, ok := tab.FindID("v00000050"); !ok || i != 4 {
				t.Errorf("FindID = %d, %v", i, ok)
			}
			if _, ok := tab.FindID("q1"); ok {
				t.Error("FindID(q1) found a synset")
			}
		})
	}
}

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(d *Data)
	}{
		{"unsorted lemmas", func(d *Data) { d.Lemmas[0], d.Lemmas[1] = d.Lemmas[1], d.Lemmas[0] }},
		{"sense out of range", func(d *Data) { d.Senses[0][0].Synset = 99 }},
		{"sense not a word of its synset", func(d *Data) { d.Senses[0][0].Synset = 0 }},
		{"display is not the lemma", func(d *Data) { d.Synsets[0].Words[0].Display = "cat" }},
		{"non-ASCII capital", func(d *Data) { d.Synsets[0].Words[0].Display = "Dög" }},
		{"pointer out of range", func(d *Data) { d.Synsets[0].Pointers[0].Target = 99 }},
		{"unsorted synsets", func(d *Data) { d.Synsets[1].Offset = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := smallData()
			tt.break_(d)
			if err := d.Encode(io.Discard, false); !errors.Is(err, ErrFormat) {
				t.Fatalf("Encode = %v, want ErrFormat", err)
			}
		})
	}
}

func TestDecodeCorrupt(t *testing.T) {
	var buf bytes.Buffer
	if err := smallData().Encode(&buf, false); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	tests := map[string][]byte{
		"empty":         nil,
		"other magic":   []byte("GIF89a"),
		"other version": append([]byte("CDWN\x09"), good[5:]...),
		"truncated":     good[:len(good)/2],
		"trailing":      append(bytes.Clone(good), 0),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(b); !errors.Is(err, ErrFormat) {
				t.Fatalf("Decode = %v, want ErrFormat", err)
			}
		})
	}
}

// FuzzDecode checks that no file makes Decode or the accessors panic.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := smallData().Encode(&buf, false); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	buf.Reset()
	smallData().Encode(&buf, true)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for i := range tab.NumSynsets() {
			_ = tab.Gloss(i)
			for w := range tab.NumWords(i) {
				_ = tab.Word(i, w)
			}
			_ = tab.Pointers(nil, i, 0)
		}
		for i := range tab.NumLemmas() {
			_ = tab.Senses(nil, i, 0)
			tab.LookupLemma(tab.Lemma(i))
		}
		for _, p := range POSes {
			tab.EachException(p, func(form, base string) { tab.Exceptions(nil, form, p) })
		}
	})
}

// TestEmbeddedCounts checks the embedded table against WordNet 3.0's
// published statistics (wnstats(7WN)): 117,659 synsets and 206,941
// word-sense pairs; 155,287 index entries over the four parts of speech.
func TestEmbeddedCounts(t *testing.T) {
	tab, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	st := tab.Stats()
	if st.Synsets != 117659 || st.Senses != 206941 {
		t.Errorf("stats %+v, want 117659 synsets and 206941 senses", st)
	}
	entries := 0
	var refs []SenseRef
	for i := range tab.NumLemmas() {
		for _, p := range POSes {
			if refs = tab.Senses(refs[:0], i, p); len(refs) > 0 {
				entries++
			}
		}
	}
	if entries != 155287 {
		t.Errorf("%d lemma/POS entries, want 155287", entries)
	}
	core, gloss, _, err := splitFile(embedded)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("table file %d bytes (%d lemmas, %d pointers); core part %d bytes uncompressed, gloss part %d bytes compressed",
		EmbeddedSize(), st.Lemmas, st.Pointers, len(core), len(gloss))
}

func BenchmarkDecode(b *testing.B) {
	for b.Loop() {
		if _, err := Decode(embedded); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeWithGlosses(b *testing.B) {
	for b.Loop() {
		tab, err := Decode(embedded)
		if err != nil {
			b.Fatal(err)
		}
		if err := tab.LoadGlosses(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild parses the dict files the way the generator does: what
// start-up would cost without the table.
func BenchmarkBuild(b *testing.B) {
	dir := dictDir(b)
	for b.Loop() {
		if _, err := Build(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	tab, err := Embedded()
	if err != nil {
		b.Fatal(err)
	}
	words := []string{"car", "motor vehicle", "football", "zyzzyva", "not a lemma", "election"}
	for b.Loop() {
		for _, w := range words {
			tab.LookupLemma(w)
		}
	}
}
