package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest/internal/pdftest"
	"github.com/changedigest/changedigest/internal/testenv"
)

func TestDiffPDF(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	dir := t.TempDir()
	pages := []string{
		"Price list\n\nKettle, 1.7 l     24.00\nToaster           31.50",
		"Timetable\n\nRiverside   08:15   09:15\nMarket      08:25   09:25",
	}
	old := writeFile(t, dir, "old.pdf", pdftest.Pages(pages...))
	pages[1] = strings.Replace(pages[1], "09:15", "09:20", 1)
	newf := writeFile(t, dir, "new.pdf", pdftest.Pages(pages...))

	code, out, errs := runCmd(t, "diff", old, newf, "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var d struct {
		Kind    string
		Changes []struct {
			Type, Op, Where string
			New             string `json:"new_text"`
		}
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d.Kind != "page" || len(d.Changes) != 1 || d.Changes[0].Where != "on page 2" || !strings.Contains(d.Changes[0].New, "20") {
		t.Fatalf("got %s, want one change on page 2", out)
	}

	code, out, errs = runCmd(t, "diff", old, newf)
	if code != 0 || !strings.Contains(out, "on page 2") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the change told on page 2", code, out, errs)
	}

	enc := writeFile(t, dir, "secret.pdf", pdftest.Build(pdftest.Options{Encrypt: true}, "secret"))
	code, _, errs = runCmd(t, "diff", old, enc)
	if code != 2 || !strings.Contains(errs, "new: PDF: the document is encrypted") || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
		t.Fatalf("exit %d, stderr %q: want one line saying the new PDF is encrypted", code, errs)
	}
}

// TestPDFWatchCommands watches a PDF: check, change its second page,
// check again; show prints its text by page and the change on page 2.
func TestPDFWatchCommands(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	var mu sync.Mutex
	pages := []string{"Price list\n\nKettle, 1.7 l     24.00", "Timetable\n\nMarket      08:25   09:25"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdftest.Pages(pages...))
	}))
	defer srv.Close()
	data := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, append(args, "--data", data)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out + errs
	}
	run("watch", "add", srv.URL+"/prices.pdf", "--every", "1h")
	run("check", "1", "--allow-private")
	mu.Lock()
	pages[1] = strings.Replace(pages[1], "09:25", "09:40", 1)
	mu.Unlock()
	if out := run("check", "1", "--allow-private"); !strings.Contains(out, "1 changed") {
		t.Errorf("second check: %s", out)
	}
	out := run("show", "1")
	for _, want := range []string{"Page 1", "Kettle, 1.7 l", "Page 2", "09:40"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if out := run("show", "1", "--changes"); !strings.Contains(out, "on page 2") || !strings.Contains(out, "40") {
		t.Errorf("show --changes:\n%s", out)
	}
}
