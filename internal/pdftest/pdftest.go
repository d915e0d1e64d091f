// Package pdftest writes small PDF files for tests: pages of text in
// Helvetica, and the bad inputs a PDF reader must survive (a stream that
// inflates to far more than its size, an encrypted document, a cut-off
// file).
package pdftest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// Options change how Build writes a document.
type Options struct {
	// Title, when set, is the document's /Title.
	Title string
	// Encrypt adds a standard security handler whose user password is
	// not empty, so that the document cannot be read without it.
	Encrypt bool
	// Compress deflates the page streams.
	Compress bool
}

// Pages returns a PDF whose pages hold the given texts, one page each:
// a text's lines are lines of the page, and a blank line leaves a gap
// between paragraphs. Characters outside Latin-1 are written as '?'.
func Pages(pages ...string) []byte { return Build(Options{}, pages...) }

// Build is Pages with options.
func Build(o Options, pages ...string) []byte {
	streams := make([][]byte, len(pages))
	for i, p := range pages {
		streams[i] = pageStream(p)
	}
	return build(o, streams)
}

// Bomb returns a one-page PDF whose content stream is n bytes of text
// drawing operators deflated to a small fraction of that: reading its
// text takes time and makes a large output.
func Bomb(n int) []byte {
	var raw bytes.Buffer
	raw.WriteString("BT /F1 10 Tf 12 TL\n")
	for i := 0; raw.Len() < n; i++ {
		// Sixty lines down the page, then from the top again: every
		// line is on the page and read.
		fmt.Fprintf(&raw, "1 0 0 1 72 %d Tm (bomb %d bomb bomb bomb bomb bomb bomb bomb) Tj\n", 740-12*(i%60), i)
	}
	raw.WriteString("\nET\n")
	return build(Options{Compress: true}, [][]byte{raw.Bytes()})
}

// pageStream draws text's lines from the top of a page.
func pageStream(text string) []byte {
	var b bytes.Buffer
	b.WriteString("BT /F1 11 Tf 72 760 Td 14 TL\n")
	for _, line := range strings.Split(text, "\n") {
		b.WriteString("(")
		b.WriteString(escape(line))
		b.WriteString(") '\n")
	}
	b.WriteString("ET\n")
	return b.Bytes()
}

// escape writes s as the inside of a PDF literal string in WinAnsi.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r >= 0xa0 && r <= 0xff:
			fmt.Fprintf(&b, "\\%03o", r)
		case r == '\t':
			b.WriteByte(' ')
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// build writes the catalog, the page tree, one page per stream, the font
// and the cross-reference table.
func build(o Options, streams [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	n := len(streams)
	// Objects: 1 catalog, 2 pages, 3 font, 4 info, 5 encrypt, then page
	// i at 6+2i and its content at 7+2i.
	total := 5 + 2*n
	offsets := make([]int, total+1)
	obj := func(id int, body string) {
		offsets[id] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", id, body)
	}
	obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	kids := make([]string, n)
	for i := range n {
		kids[i] = fmt.Sprintf("%d 0 R", 6+2*i)
	}
	obj(2, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj(3, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	obj(4, fmt.Sprintf("<< /Title (%s) /Producer (pdftest) >>", escape(o.Title)))
	obj(5, "<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44"+
		" /O <"+strings.Repeat("5a", 32)+"> /U <"+strings.Repeat("c3", 32)+"> >>")
	for i, s := range streams {
		obj(6+2*i, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 7+2*i))
		filter := ""
		if o.Compress {
			var z bytes.Buffer
			w := zlib.NewWriter(&z)
			w.Write(s)
			w.Close()
			s, filter = z.Bytes(), " /Filter /FlateDecode"
		}
		offsets[7+2*i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n<< /Length %d%s >>\nstream\n", 7+2*i, len(s), filter)
		b.Write(s)
		b.WriteString("\nendstream\nendobj\n")
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", total+1)
	for id := 1; id <= total; id++ {
		fmt.Fprintf(&b, "%010d 00000 n \n", offsets[id])
	}
	enc := ""
	if o.Encrypt {
		enc = " /Encrypt 5 0 R"
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R%s /ID [<%s> <%s>] >>\nstartxref\n%d\n%%%%EOF\n",
		total+1, enc, strings.Repeat("ab", 16), strings.Repeat("ab", 16), xref)
	return b.Bytes()
}
