package pdftext

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/pdftest"
	"github.com/changedigest/changedigest/internal/testenv"
)

func needPdftotext(t *testing.T) {
	t.Helper()
	testenv.Tool(t, "pdftotext")
}

func TestPages(t *testing.T) {
	needPdftotext(t)
	for _, limiter := range []string{"prlimit", "sh"} {
		t.Run(limiter, func(t *testing.T) {
			if limiter == "prlimit" {
				testenv.Tool(t, "prlimit")
			}
			x := New()
			x.limiter = limiter
			doc := pdftest.Pages("Price list\n\nKettle, 1.7 l   24.00\nToaster   31.50", "Timetable\n\nDep 08:15", "Notes")
			text, err := x.Pages(context.Background(), doc)
			if err != nil {
				t.Fatal(err)
			}
			if len(text.Pages) != 3 || text.More {
				t.Fatalf("got %d pages (more %v), want 3: %q", len(text.Pages), text.More, text.Pages)
			}
			for i, want := range []string{"Kettle, 1.7 l", "Dep 08:15", "Notes"} {
				if !strings.Contains(text.Pages[i], want) {
					t.Errorf("page %d = %q, want it to hold %q", i+1, text.Pages[i], want)
				}
			}
			if strings.Contains(text.Pages[0], "Timetable") {
				t.Errorf("page 1 holds page 2's text: %q", text.Pages[0])
			}
		})
	}
}

func TestPageLimit(t *testing.T) {
	needPdftotext(t)
	x := New()
	x.MaxPages = 2
	text, err := x.Pages(context.Background(), pdftest.Pages("one", "two", "three", "four"))
	if err != nil {
		t.Fatal(err)
	}
	if len(text.Pages) != 2 || !text.More || !strings.Contains(text.Pages[1], "two") {
		t.Fatalf("got %q (more %v), want the first 2 pages and more", text.Pages, text.More)
	}
}

// TestBadDocuments: each bad input fails with its own error, whose message
// says what is wrong.
func TestBadDocuments(t *testing.T) {
	needPdftotext(t)
	good := pdftest.Pages("Price list", "Timetable")
	tests := []struct {
		name string
		doc  []byte
		x    func(*Extractor)
		want error
		msg  string
		code string
	}{
		{"encrypted", pdftest.Build(pdftest.Options{Encrypt: true}, "secret"), nil, ErrEncrypted, "encrypted", changedigest.EINVALID},
		{"garbage", []byte("%PDF-1.4\nthis is not a PDF at all\n"), nil, ErrCorrupt, "cannot be read", changedigest.EINVALID},
		{"cut short", good[:len(good)/3], nil, ErrCorrupt, "cannot be read", changedigest.EINVALID},
		{"output", pdftest.Pages(strings.Repeat("many words on a line\n", 40), strings.Repeat("more words\n", 40)),
			func(x *Extractor) { x.MaxOutput = 1 << 10 }, ErrOutputLimit, "output limit of 1 KiB", changedigest.ETOOLARGE},
		// A stream that inflates to 8 MB of overlapping text: pdftotext
		// takes seconds and gigabytes over it (a 50 MB one took 4 GB in
		// a minute before it was stopped).
		{"bomb time", pdftest.Bomb(8 << 20), func(x *Extractor) { x.Timeout = 300 * time.Millisecond }, ErrTimeLimit, "time limit of 300ms", changedigest.ETOOLARGE},
		{"bomb memory", pdftest.Bomb(8 << 20), func(x *Extractor) { x.MaxMemory = 160 << 20; x.Timeout = time.Minute }, ErrMemoryLimit, "memory limit of 160 MiB", changedigest.ETOOLARGE},
		{"bomb memory, ulimit", pdftest.Bomb(8 << 20), func(x *Extractor) { x.MaxMemory = 160 << 20; x.Timeout = time.Minute; x.limiter = "sh" }, ErrMemoryLimit, "memory limit of 160 MiB", changedigest.ETOOLARGE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New()
			if tt.x != nil {
				tt.x(x)
			}
			start := time.Now()
			text, err := x.Pages(context.Background(), tt.doc)
			t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v (text %v), want %v", err, text, tt.want)
			}
			if errors.Is(tt.want, ErrLimit) && !errors.Is(err, ErrLimit) {
				t.Errorf("%v is not an ErrLimit", err)
			}
			if msg := changedigest.ErrorMessage(err); !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q does not say %q", msg, tt.msg)
			}
			if code := changedigest.ErrorCode(err); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
		})
	}
}

// TestSlowProgram: a reader that never ends is stopped at the time limit,
// and a cancelled context stops it at once.
func TestSlowProgram(t *testing.T) {
	testenv.Tool(t, "sleep")
	prog := filepath.Join(t.TempDir(), "pdftotext")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	x := New()
	x.Program, x.Timeout = prog, 200*time.Millisecond
	start := time.Now()
	_, err := x.Pages(context.Background(), pdftest.Pages("x"))
	if !errors.Is(err, ErrTimeLimit) || time.Since(start) > 5*time.Second {
		t.Fatalf("got %v after %v, want ErrTimeLimit at once", err, time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	x.Timeout = time.Minute
	if _, err := x.Pages(ctx, pdftest.Pages("x")); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrLimit) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
}

func TestNotInstalled(t *testing.T) {
	x := New()
	x.Program = "pdftotext-not-here"
	_, err := x.Pages(context.Background(), pdftest.Pages("x"))
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(changedigest.ErrorMessage(err), "install poppler-utils") {
		t.Fatalf("got %v, want ErrNotInstalled saying to install poppler-utils", err)
	}
	if err := x.Available(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Available: %v", err)
	}
}

func TestIsPDF(t *testing.T) {
	for in, want := range map[string]bool{
		"%PDF-1.7\n":                        true,
		"\xef\xbb\xbf\r\n%PDF-1.4":          true,
		strings.Repeat(" ", 2000) + "%PDF-": false,
		"\x00\x05junk\n%PDF-1.3":            true, // within the first KiB, as readers look
		"<html>%PDF-":                       false,
		"<html>":                            false,
	} {
		if got := IsPDF([]byte(in)); got != want {
			t.Errorf("IsPDF(%.20q) = %v, want %v", in, got, want)
		}
	}
	if !IsPDFType("Application/PDF; name=x.pdf") || IsPDFType("text/html") {
		t.Error("IsPDFType")
	}
}
