package segmenter

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func mustRead(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func typeOps(cs []changedigest.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c.Type) + "/" + string(c.Op)
	}
	slices.Sort(out)
	return out
}

// TestPairs diffs testdata/pairs/base.html with each edited version: the
// changes must be exactly the expected types and operations, the same
// through DiffPages (the diff command) and DetectPage (the track), and
// match the golden JSON.
func TestPairs(t *testing.T) {
	base := mustRead(t, "testdata/pairs/base.html")
	tests := []struct {
		name string
		want []string
	}{
		{"content-update-word", []string{"content/update"}},
		{"content-update-title", []string{"content/update"}},
		{"content-update-cell", []string{"content/update"}},
		{"content-insert-paragraph", []string{"content/insert"}},
		{"content-delete-block", []string{"content/delete"}},
		{"structural-insert-rule", []string{"structural/insert"}},
		{"structural-delete-image", []string{"structural/delete"}},
		{"structural-update-href", []string{"structural/update"}},
		{"structural-update-rename", []string{"structural/update"}},
		{"structural-move-swap", []string{"structural/move"}},
		{"structural-move-item", []string{"structural/move"}},
		{"structural-delete-unwrapped-link", []string{"structural/delete"}},
		{"cosmetic-update-style", []string{"cosmetic/update"}},
		{"cosmetic-update-class", []string{"cosmetic/update"}},
		{"cosmetic-update-formatting", []string{"cosmetic/update"}},
		{"cosmetic-update-stylesheet", []string{"cosmetic/update"}},
		{"behavioural-update-script", []string{"behavioural/update"}},
		{"behavioural-update-src", []string{"behavioural/update"}},
		{"behavioural-update-handler", []string{"behavioural/update"}},
		{"behavioural-insert-iframe", []string{"behavioural/insert"}},
		{"behavioural-delete-script", []string{"behavioural/delete"}},
		{"same-identical", nil},
		{"same-reindented", nil},
		{"same-attribute-order", nil},
		{"same-comments", nil},
		{"same-br-style", nil},
		{"same-character-references", nil},
		{"same-quoting", nil},
		{"same-tag-case", nil},
		{"same-explicit-tbody", nil},
		{"same-optional-end-tags", nil},
	}
	s := New()
	first, err := s.DetectPage(Input{Body: base})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			edited := mustRead(t, filepath.Join("testdata", "pairs", tc.name+".html"))
			d, err := s.DiffPages(base, edited, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := typeOps(d.Changes); !slices.Equal(got, tc.want) {
				t.Errorf("DiffPages changes %v, want %v\n%s", got, tc.want, dump(d.Changes))
			}
			if d.Changes == nil {
				t.Error("Changes is nil, want an empty list")
			}
			if len(tc.want) == 0 && (d.Similarity != 1 || d.ChangedSegments != 0) {
				t.Errorf("no change but similarity %v, %d changed segments", d.Similarity, d.ChangedSegments)
			}
			if len(tc.want) > 0 && (d.Similarity >= 1 || d.ChangedSegments == 0) {
				t.Errorf("a change but similarity %v, %d changed segments", d.Similarity, d.ChangedSegments)
			}
			for _, c := range d.Changes {
				if c.Path == "" || !strings.HasPrefix(c.Path, "html|") {
					t.Errorf("change %v has path %q", c, c.Path)
				}
				if c.Type == changedigest.ChangeContent && c.Op == changedigest.OpUpdate && c.OldText == c.NewText {
					t.Errorf("content update with equal texts %q", c.OldText)
				}
			}
			snap, err := s.DetectPage(Input{Body: edited, Prev: first, PrevBody: base})
			if err != nil {
				t.Fatal(err)
			}
			if got := typeOps(snap.Changes); !slices.Equal(got, tc.want) {
				t.Errorf("DetectPage changes %v, want %v\n%s", got, tc.want, dump(snap.Changes))
			}
			golden(t, filepath.Join("testdata", "pairs", tc.name+".json"), d)
		})
	}
}

func dump(cs []changedigest.Change) string {
	b, _ := json.MarshalIndent(cs, "  ", "  ")
	return "  " + string(b)
}

// golden compares v as indented JSON with the file, or rewrites it with -update.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the result (run with -update to accept):\n%s", name, got)
	}
}

// TestChangeDetails checks the located texts of a few changes.
func TestChangeDetails(t *testing.T) {
	base := mustRead(t, "testdata/pairs/base.html")
	tests := []struct {
		name, path, old, new string
		before, after        string
	}{
		{"content-update-word", "html|body|main-content|article|p", "quiet", "calm", "The harbour was ", " this morning; only the ferry moved."},
		{"content-insert-paragraph", "html|body|main-content|article|p[3]", "", "A seal surfaced near the pier.", "", ""},
		{"content-update-title", "html|head|title", "notes", "diary", "Harbour ", ""},
		{"structural-update-href", "html|body|header-top|nav|ul|li[2]|a", `href="/archive"`, `href="/archives"`, "", ""},
		{"structural-move-swap", "html|body|main-content|article|p[2]", "The harbour was quiet this morning; only the ferry moved.", "The harbour was quiet this morning; only the ferry moved.", "", ""},
		{"cosmetic-update-style", "html|body|main-content|article|h1", "", `style="color: navy"`, "", ""},
		{"behavioural-update-handler", "html|body|footer|p|a", `onclick="track()"`, `onclick="track(2)"`, "", ""},
	}
	s := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := s.DiffPages(base, mustRead(t, filepath.Join("testdata", "pairs", tc.name+".html")), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Changes) != 1 {
				t.Fatalf("%d changes: %s", len(d.Changes), dump(d.Changes))
			}
			c := d.Changes[0]
			if c.Path != tc.path || c.OldText != tc.old || c.NewText != tc.new || c.Before != tc.before || c.After != tc.after {
				t.Errorf("got %q %q [%q → %q] %q\nwant %q %q [%q → %q] %q", c.Path, c.Before, c.OldText, c.NewText, c.After,
					tc.path, tc.before, tc.old, tc.new, tc.after)
			}
		})
	}
}

func TestNewSegments(t *testing.T) {
	tests := []struct {
		name    string
		current []string
		history [][]string
		want    []bool
	}{
		{"no history", []string{"a", "b"}, nil, []bool{true, true}},
		{"unchanged", []string{"a", "b"}, [][]string{{"a", "b"}}, []bool{false, false}},
		{"one new", []string{"a", "x"}, [][]string{{"a", "b"}}, []bool{false, true}},
		{"flip back to an older version", []string{"a", "b"}, [][]string{{"a", "c"}, {"a", "b"}}, []bool{false, false}},
		{"new to every row", []string{"a", "z"}, [][]string{{"a", "c"}, {"a", "b"}, {"y"}}, []bool{false, true}},
		{"shifted segments", []string{"n", "a", "b"}, [][]string{{"a", "b", "c"}}, []bool{true, false, false}},
		{"empty current", nil, [][]string{{"a"}}, []bool{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewSegments(tc.current, tc.history); !slices.Equal(got, tc.want) {
				t.Errorf("NewSegments = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		name string
		body string
		want changedigest.Kind
		err  error
		msg  string
	}{
		{"html", "<!DOCTYPE html><html><body><p>x</p></body></html>", changedigest.KindPage, nil, ""},
		{"fragment", "<p>Hello</p>", changedigest.KindPage, nil, ""},
		{"text then tags", "Hello <b>world</b>", changedigest.KindPage, nil, ""},
		{"xhtml", `<?xml version="1.0"?><!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "x"><html xmlns="http://www.w3.org/1999/xhtml"><body/></html>`, changedigest.KindPage, nil, ""},
		{"bom", "\xef\xbb\xbf<html><body>x</body></html>", changedigest.KindPage, nil, ""},
		{"utf-16", "\xff\xfe<\x00p\x00>\x00x\x00<\x00/\x00p\x00>\x00", changedigest.KindPage, nil, ""},
		{"rss 2.0", `<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>`, changedigest.KindFeed, nil, ""},
		{"rss 0.91", `<rss version="0.91"><channel></channel></rss>`, changedigest.KindFeed, nil, ""},
		{"rss 1.0", `<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><channel rdf:about="x"/></rdf:RDF>`, changedigest.KindFeed, nil, ""},
		{"atom", `<?xml version="1.0" encoding="utf-8"?><?xml-stylesheet href="s.xsl"?><feed xmlns="http://www.w3.org/2005/Atom"><title>x</title></feed>`, changedigest.KindFeed, nil, ""},
		{"json feed", `{"version": "https://jsonfeed.org/version/1.1", "title": "x", "items": []}`, changedigest.KindFeed, nil, ""},
		{"empty", "", "", ErrEmpty, "empty document"},
		{"blank", " \n\t ", "", ErrEmpty, "empty document"},
		{"png", "\x89PNG\r\n\x1a\n\x00\x00", "", ErrBinary, "binary content (PNG image)"},
		{"pdf", "%PDF-1.7\n", "", ErrBinary, "binary content (PDF)"},
		{"nul bytes", "abc\x00def<p>", "", ErrBinary, "binary content (NUL bytes)"},
		{"plain text", "Just words.", changedigest.KindPage, nil, ""},
		{"plain text, several lines", "Hi!\nBack soon.\n", changedigest.KindPage, nil, ""},
		{"other json", `{"a": 1}`, "", ErrNotDocument, "JSON that is not a JSON Feed"},
		{"other xml", `<?xml version="1.0"?><note><to>x</to></note>`, "", ErrNotDocument, "XML document with root <note>"},
		{"foaf is not a feed", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:foaf="http://xmlns.com/foaf/0.1/"><foaf:Person/></rdf:RDF>`, "", ErrNotDocument, "root <rdf:rdf>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Sniff([]byte(tc.body))
			if tc.err == nil {
				if err != nil || got != tc.want {
					t.Errorf("Sniff = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("Sniff error %v, want %v", err, tc.err)
			}
			if changedigest.ErrorCode(err) != changedigest.EINVALID || !strings.Contains(changedigest.ErrorMessage(err), tc.msg) {
				t.Errorf("error code %q message %q, want EINVALID with %q", changedigest.ErrorCode(err), changedigest.ErrorMessage(err), tc.msg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	s := New()
	s.MaxBytes = 1000
	page := []byte("<html><body><p>Hello there, a small page.</p></body></html>")
	tests := []struct {
		name     string
		old, new []byte
		zone     string
		code     string
		msg      string
	}{
		{"old empty", nil, page, "", changedigest.EINVALID, "old: empty document"},
		{"new binary", page, []byte("GIF89a\x01\x00"), "", changedigest.EINVALID, "new: binary content (GIF image)"},
		{"too large", page, bytes.Repeat([]byte("<p>x</p>"), 200), "", changedigest.ETOOLARGE, "new: document of 1600 bytes is larger than the limit of 1000 bytes"},
		{"bad zone", page, page, "div[", changedigest.EINVALID, `invalid zone selector "div["`},
		{"page and feed", page, []byte(`<rss version="2.0"><channel/></rss>`), "", changedigest.EINVALID, "old is a page and new is a feed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Diff(tc.old, tc.new, tc.zone)
			if changedigest.ErrorCode(err) != tc.code || !strings.Contains(changedigest.ErrorMessage(err), tc.msg) {
				t.Errorf("err = %v (code %q), want %s containing %q", err, changedigest.ErrorCode(err), tc.code, tc.msg)
			}
			if _, err := s.DetectPage(Input{Body: tc.new, Zone: tc.zone}); err == nil && tc.name != "page and feed" && tc.name != "old empty" {
				t.Errorf("DetectPage accepted bad input")
			}
		})
	}
	feed := []byte(`<rss version="2.0"><channel><title>T</title><item><guid>1</guid><title>One</title></item></channel></rss>`)
	if snap, err := s.Detect(Input{Body: feed}); err != nil || snap.Kind != changedigest.KindFeed || len(snap.Segments) != 1 {
		t.Errorf("Detect of a feed = %+v, %v; want a feed snapshot with one item", snap, err)
	}
}

// TestLayout checks that a later version is cut along the stored layout
// (not re-segmented) and that a damaged layout falls back sensibly.
func TestLayout(t *testing.T) {
	s := New()
	base := mustRead(t, "testdata/pairs/base.html")
	edited := mustRead(t, "testdata/pairs/content-update-word.html")
	first, err := s.DetectPage(Input{Body: base})
	if err != nil {
		t.Fatal(err)
	}
	if first.Changes != nil || first.Kind != changedigest.KindPage || first.Title != "Harbour notes" {
		t.Fatalf("first version: %+v", first)
	}
	// segments cover the body, in order
	end := 0
	for i, sg := range first.Segments {
		if sg.Index != i || sg.Start != end || sg.End < sg.Start || len(sg.Hash) != 32 {
			t.Fatalf("segment %d: %+v after %d", i, sg, end)
		}
		end = sg.End
	}
	if end != len(base) {
		t.Fatalf("segments end at %d of %d bytes", end, len(base))
	}
	if _, ok := s.knobs().usableLayout(Input{Body: edited, Prev: first, PrevBody: base}); !ok {
		t.Fatal("the layout of the first version is not usable")
	}
	next, err := s.DetectPage(Input{Body: edited, Prev: first, PrevBody: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Segments) != len(first.Segments) {
		t.Errorf("segments %d → %d for a one-word change", len(first.Segments), len(next.Segments))
	}
	changed := 0
	for i := range next.Segments {
		if next.Segments[i].Hash != first.Segments[i].Hash {
			changed++
		}
	}
	if changed != 1 || len(next.Changes) != 1 {
		t.Errorf("%d segment hashes changed, %d changes; want 1 and 1", changed, len(next.Changes))
	}
	for _, tc := range []struct {
		name   string
		layout []byte
	}{
		{"missing", nil},
		{"garbage", []byte("not a layout")},
		{"truncated", first.Layout[:len(first.Layout)/2]},
		{"other zone", []byte(strings.Replace(string(first.Layout), layoutHeader+"\n", layoutHeader+"main\n", 1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := *first
			prev.Layout = tc.layout
			got, err := s.DetectPage(Input{Body: edited, Prev: &prev, PrevBody: base})
			if err != nil {
				t.Fatal(err)
			}
			if ops := typeOps(got.Changes); !slices.Equal(ops, []string{"content/update"}) {
				t.Errorf("changes %v after falling back", ops)
			}
		})
	}
	t.Run("without the previous body or a usable layout", func(t *testing.T) {
		prev := *first
		prev.Layout = nil
		got, err := s.DetectPage(Input{Body: edited, Prev: &prev})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Changes) != 1 || got.Changes[0].Type != changedigest.ChangeContent ||
			!strings.Contains(got.Changes[0].OldText, "quiet") || !strings.Contains(got.Changes[0].NewText, "calm") ||
			got.Similarity <= 0.5 || got.Similarity >= 1 {
			t.Errorf("changes %s, similarity %v", dump(got.Changes), got.Similarity)
		}
		same, _ := s.DetectPage(Input{Body: base, Prev: &prev})
		if len(same.Changes) != 0 || same.Similarity != 1 {
			t.Errorf("same page: %s", dump(same.Changes))
		}
	})
	t.Run("without the previous body", func(t *testing.T) {
		got, err := s.DetectPage(Input{Body: edited, Prev: first})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Changes) != 1 || got.Changes[0].Type != changedigest.ChangeContent ||
			!strings.Contains(got.Changes[0].OldText, "quiet") || !strings.Contains(got.Changes[0].NewText, "calm") {
			t.Errorf("changes %s", dump(got.Changes))
		}
	})
}

// TestHistory checks the signature matrix in DetectPage: content that
// flips back to an earlier version is not a change.
func TestHistory(t *testing.T) {
	s := New()
	a := mustRead(t, "testdata/pairs/base.html")
	b := mustRead(t, "testdata/pairs/content-update-word.html")
	va, _ := s.DetectPage(Input{Body: a})
	vb, err := s.DetectPage(Input{Body: b, Prev: va, PrevBody: a, History: [][]string{va.Hashes()}})
	if err != nil || len(vb.Changes) != 1 {
		t.Fatalf("a→b: %v, %d changes", err, len(vb.Changes))
	}
	back, err := s.DetectPage(Input{Body: a, Prev: vb, PrevBody: b, History: [][]string{vb.Hashes(), va.Hashes()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Changes) != 0 {
		t.Errorf("flip back to a seen version: %s", dump(back.Changes))
	}
	again, _ := s.DetectPage(Input{Body: a, Prev: vb, PrevBody: b, History: [][]string{vb.Hashes()}})
	if len(again.Changes) != 1 {
		t.Errorf("with only the last version in the history the flip is a change: %d changes", len(again.Changes))
	}
}

func TestZone(t *testing.T) {
	s := New()
	base := mustRead(t, "testdata/pairs/base.html")
	title := mustRead(t, "testdata/pairs/content-update-title.html")
	word := mustRead(t, "testdata/pairs/content-update-word.html")
	d, err := s.DiffPages(base, title, "main")
	if err != nil || len(d.Changes) != 0 {
		t.Errorf("change outside the zone: %v %s", err, dump(d.Changes))
	}
	d, err = s.DiffPages(base, word, "main article > p")
	if err != nil || len(d.Changes) != 1 {
		t.Fatalf("change inside the zone: %v %s", err, dump(d.Changes))
	}
	first, _ := s.DetectPage(Input{Body: base, Zone: "article"})
	for _, sg := range first.Segments {
		if sg.Start < bytes.Index(base, []byte("<article")) || sg.End > bytes.Index(base, []byte("</article>"))+len("</article>") {
			t.Errorf("segment %+v outside the zone", sg)
		}
	}
	next, err := s.DetectPage(Input{Body: word, Zone: "article", Prev: first, PrevBody: base})
	if err != nil || len(next.Changes) != 1 {
		t.Errorf("DetectPage in a zone: %v %s", err, dump(next.Changes))
	}
	none, err := s.DiffPages(base, word, "#no-such-element")
	if err != nil || len(none.Changes) != 0 || none.New.Segments != 0 {
		t.Errorf("zone matching nothing: %v %+v", err, none)
	}
}
