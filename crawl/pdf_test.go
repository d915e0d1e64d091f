package crawl_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/internal/pdftest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/pdftext"
)

var pdfPages = []string{
	"Riverside Hardware price list\n\nKettle, 1.7 l        24.00\nToaster, 2 slots     31.50\n\nPrices include VAT.",
	"Bus timetable, line 4\n\nRiverside    08:15   09:15\nMarket       08:25   09:25\n\nNo service on public holidays.",
	"Contact\n\nRiverside Hardware, 3 Mill Lane",
}

// TestPDFWatch checks a PDF over HTTP: the first version, a changed
// timetable on page 2 told as a change on page 2, and bad documents
// that fail the check with a clear error and lose nothing stored.
func TestPDFWatch(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	ctx := context.Background()
	e := newTrackEnv(t, "application/pdf")
	first := pdftest.Pages(pdfPages...)
	e.site.set(first)
	if o, err := e.check(t); err != nil || o.Result != crawl.FirstVersion {
		t.Fatalf("first check: %+v, %v", o, err)
	}
	changed := append([]string(nil), pdfPages...)
	changed[1] = strings.Replace(changed[1], "Market       08:25", "Market       08:29", 1)
	second := pdftest.Pages(changed...)
	e.site.set(second)
	o, err := e.check(t)
	if err != nil || o.Result != crawl.Changed {
		t.Fatalf("second check: %+v, %v", o, err)
	}
	v, err := e.store.Version(ctx, e.watch.ID, o.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != changedigest.KindPage || len(v.Changes) != 1 {
		t.Fatalf("version: kind %s, changes %+v", v.Kind, v.Changes)
	}
	if c := v.Changes[0]; c.Type != changedigest.ChangeContent || c.Where != "on page 2" || !strings.Contains(c.NewText, "29") {
		t.Fatalf("change %+v, want 08:25 to 08:29 on page 2", c)
	}
	body, err := e.store.Body(ctx, e.watch.ID, o.Seq)
	if err != nil || !bytes.Equal(body, second) {
		t.Fatalf("the stored body is not the PDF byte for byte (%v)", err)
	}

	e.watch.ETag = "" // full responses from here on
	for _, tc := range []struct {
		name  string
		ctype string
		body  []byte
		want  error
		msg   string
	}{
		{"corrupt", "application/pdf", second[:len(second)/2], pdftext.ErrCorrupt, "the document cannot be read"},
		{"encrypted", "application/pdf", pdftest.Build(pdftest.Options{Encrypt: true}, "secret"), pdftext.ErrEncrypted, "encrypted"},
		{"not a PDF", "application/pdf", []byte("<html><body>Service unavailable</body></html>"), crawl.ErrNotPDF, "does not start as a PDF does"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.site.mu.Lock()
			e.site.body, e.site.ctype = tc.body, tc.ctype
			e.site.mu.Unlock()
			_, err := e.pipeline.Check(ctx, e.watch)
			t.Log(err)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.msg)
			}
			info, err := e.store.Track(ctx, e.watch.ID)
			if err != nil || info.Versions != 2 {
				t.Fatalf("versions after a bad PDF: %d, %v", info.Versions, err)
			}
			if body, err := e.store.Body(ctx, e.watch.ID, 2); err != nil || !bytes.Equal(body, second) {
				t.Fatalf("the stored version changed: %v", err)
			}
		})
	}

	t.Run("pdftotext missing", func(t *testing.T) {
		e.site.set(first)
		e.pipeline.Segmenter.PDF = pdftext.New()
		e.pipeline.Segmenter.PDF.Program = "pdftotext-not-installed"
		defer func() { e.pipeline.Segmenter.PDF = pdftext.New() }()
		_, err := e.pipeline.Check(ctx, e.watch)
		if !errors.Is(err, pdftext.ErrNotInstalled) || !strings.Contains(changedigest.ErrorMessage(err), "install poppler-utils") {
			t.Fatalf("got %v (%q), want a missing pdftotext saying to install poppler-utils", err, changedigest.ErrorMessage(err))
		}
	})
}

// TestHugePDF: a 200 MB PDF is refused at the body limit, announced or not.
func TestHugePDF(t *testing.T) {
	const size = 200 << 20
	for _, announce := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/pdf")
			if announce {
				w.Header().Set("Content-Length", "209715200")
			}
			io.Copy(w, io.LimitReader(io.MultiReader(strings.NewReader("%PDF-1.7\n"), zeros{}), size))
		}))
		f := crawl.NewFetcher()
		f.AllowPrivate = true
		_, err := f.Fetch(context.Background(), crawl.Request{URL: srv.URL})
		srv.Close()
		t.Log(err)
		if !errors.Is(err, crawl.ErrTooLarge) || !strings.Contains(err.Error(), "10 MiB limit") {
			t.Fatalf("announced %v: got %v, want the 10 MiB body limit", announce, err)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
