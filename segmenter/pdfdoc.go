package segmenter

import (
	"bytes"
	"context"
	"errors"
	"html"
	"strconv"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pdftext"
)

// PDF documents.
//
// A PDF (a price list, a timetable, a regulation) is watched by its text:
// package pdftext reads it page by page with pdftotext, in a child
// process under limits, and the pages become the HTML page a person
// would read: one section per page headed "Page N", a paragraph for each
// block of lines between blank lines, the lines kept. Its changes are
// then told as any page's are, placed on their page ("on page 3"). The
// stored body stays the PDF, byte for byte.

// pdfPageAttr marks the section of a page of a PDF with its number; a
// change inside is placed "on page N" (where.go).
const pdfPageAttr = "data-pdf-page"

// pdfPage renders the text of a PDF document as an HTML page (see above).
// Failures are pdftext's errors: a missing pdftotext, an encrypted or
// unreadable document, a limit passed, each with a message for users.
func (s *Segmenter) pdfPage(ctx context.Context, body []byte) ([]byte, error) {
	text, err := s.PDF.Pages(ctx, body)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(body))
	b.WriteString("<!DOCTYPE html><html><head></head><body><main>")
	for i, page := range text.Pages {
		n := strconv.Itoa(i + 1)
		b.WriteString("<section " + pdfPageAttr + "=\"" + n + "\"><h2>Page " + n + "</h2>")
		for _, block := range pdfBlocks(page) {
			b.WriteString("<p>")
			for j, line := range block {
				if j > 0 {
					b.WriteString("<br>\n")
				}
				b.WriteString(html.EscapeString(line))
			}
			b.WriteString("</p>\n")
		}
		b.WriteString("</section>\n")
	}
	if text.More {
		b.WriteString("<p>The document has more than " + strconv.Itoa(len(text.Pages)) + " pages; only those are read.</p>")
	}
	b.WriteString("</main></body></html>")
	return b.Bytes(), nil
}

// pdfBlocks cuts a page's text into its blocks of lines (runs of lines
// between blank lines), each line without its trailing spaces and with
// the indentation common to the page removed.
func pdfBlocks(page string) [][]string {
	lines := strings.Split(page, "\n")
	indent := -1
	for i, l := range lines {
		l = strings.TrimRight(l, " \t\r\f")
		lines[i] = l
		if l == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	var blocks [][]string
	var cur []string
	for _, l := range lines {
		if l == "" {
			if cur != nil {
				blocks = append(blocks, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, l[min(indent, len(l)):])
	}
	if cur != nil {
		blocks = append(blocks, cur)
	}
	return blocks
}

// labelledPDF prefixes the message of a pdftext error with which
// document it is about ("old", "new"); errors.Is still finds its kind.
func labelledPDF(label string, err error) error {
	var ue *changedigest.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &pdfError{err: err, user: changedigest.Errorf(ue.Code, "%s: %s", label, ue.Message)}
}

type pdfError struct {
	err  error
	user *changedigest.Error
}

func (e *pdfError) Error() string   { return "segmenter: " + e.user.Message }
func (e *pdfError) Unwrap() []error { return []error{e.user, e.err} }

// isPDF reports whether body is a PDF document (pdftext.IsPDF).
func isPDF(body []byte) bool { return pdftext.IsPDF(body) }
