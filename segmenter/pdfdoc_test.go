package segmenter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/pdftest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/pdftext"
	"github.com/changedigest/changedigest/segmenter"
)

// pdfPages are the pages of a small price list and timetable.
var pdfPages = []string{
	"Riverside Hardware price list\n\nKettle, 1.7 l        24.00\nToaster, 2 slots     31.50\nIron                 19.90\n\nPrices include VAT.",
	"Bus timetable, line 4\n\nRiverside    08:15   09:15   10:15\nMarket       08:25   09:25   10:25\nStation      08:40   09:40   10:40\n\nNo service on public holidays.",
	"Contact\n\nRiverside Hardware, 3 Mill Lane\nOpen Monday to Saturday",
}

func TestDiffPDF(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	changed := append([]string(nil), pdfPages...)
	changed[1] = strings.Replace(changed[1], "09:25", "09:35", 1)
	d, err := segmenter.New().Diff(pdftest.Pages(pdfPages...), pdftest.Pages(changed...), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != changedigest.KindPage || len(d.Changes) == 0 {
		t.Fatalf("kind %s, %d changes, want a page with changes", d.Kind, len(d.Changes))
	}
	for _, c := range d.Changes {
		t.Logf("%s %s %s: %q -> %q", c.Type, c.Op, c.Where, c.OldText, c.NewText)
		if c.Type != changedigest.ChangeContent || c.Where != "on page 2" ||
			!strings.Contains(c.OldText, "25") || !strings.Contains(c.NewText, "35") {
			t.Errorf("change %+v, want a content change of 09:25 to 09:35 on page 2", c)
		}
	}
	same, err := segmenter.New().Diff(pdftest.Pages(pdfPages...), pdftest.Build(pdftest.Options{Compress: true}, pdfPages...), "")
	if err != nil || len(same.Changes) != 0 {
		t.Fatalf("the same text written otherwise: %v, %+v", err, same)
	}
}

func TestDetectPDF(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	s := segmenter.New()
	first := pdftest.Pages(pdfPages...)
	snap, err := s.Detect(segmenter.Input{Body: first})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, sg := range snap.Segments {
		text.WriteString(sg.Text + "\n")
	}
	for _, want := range []string{"Page 1", "Kettle, 1.7 l", "Page 3", "Open Monday to Saturday"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the segments do not hold %q:\n%s", want, text.String())
		}
	}
	changed := append([]string(nil), pdfPages...)
	changed[0] = strings.Replace(changed[0], "31.50", "33.00", 1)
	hashes := make([]string, len(snap.Segments))
	for i, sg := range snap.Segments {
		hashes[i] = sg.Hash
	}
	next, err := s.Detect(segmenter.Input{Body: pdftest.Pages(changed...), Prev: snap, PrevBody: first, History: [][]string{hashes}})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Changes) != 1 || next.Changes[0].Where != "on page 1" || !strings.Contains(next.Changes[0].NewText, "33.00") {
		t.Fatalf("changes %+v, want the toaster's price on page 1", next.Changes)
	}
}

func TestDiffBadPDF(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	good := pdftest.Pages(pdfPages...)
	_, err := segmenter.New().Diff(good, pdftest.Build(pdftest.Options{Encrypt: true}, "secret"), "")
	if !errors.Is(err, pdftext.ErrEncrypted) || !strings.HasPrefix(changedigest.ErrorMessage(err), "new: PDF: the document is encrypted") {
		t.Fatalf("got %v (%q), want new: an encrypted PDF", err, changedigest.ErrorMessage(err))
	}
	s := segmenter.New()
	s.PDF = pdftext.New()
	s.PDF.MaxOutput = 100
	_, err = s.Diff(good, good, "")
	if !errors.Is(err, pdftext.ErrOutputLimit) || changedigest.ErrorCode(err) != changedigest.ETOOLARGE ||
		!strings.Contains(changedigest.ErrorMessage(err), "old: PDF: its text is over the output limit of 100 bytes") {
		t.Fatalf("got %v (%q), want the output limit", err, changedigest.ErrorMessage(err))
	}
}

func TestPDFPageLimit(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	s := segmenter.New()
	s.PDF = pdftext.New()
	s.PDF.MaxPages = 2
	snap, err := s.Detect(segmenter.Input{Body: pdftest.Pages(pdfPages...)})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, sg := range snap.Segments {
		text.WriteString(sg.Text + "\n")
	}
	if got := text.String(); strings.Contains(got, "Page 3") || !strings.Contains(got, "more than 2 pages; only those are read") {
		t.Fatalf("want the first 2 of 3 pages and a note saying so; got:\n%s", got)
	}
}
