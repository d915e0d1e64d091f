package segmenter

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/changedigest/changedigest/internal/testenv"

	"golang.org/x/net/html"
)

// BenchmarkScan sets the scanner against its parts: the tokenizer alone,
// the tokenizer reading names, attributes and texts, and html.Parse.
func BenchmarkScan(b *testing.B) {
	src := mustRead(b, filepath.Join(testenv.Corpus(b, "pages", "readability", "pages"), "wapo-2", "source.html"))
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			html.Parse(bytes.NewReader(src))
		}
	})
	b.Run("tokenizer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			z := html.NewTokenizer(bytes.NewReader(src))
			for z.Next() != html.ErrorToken {
			}
		}
	})
	b.Run("tokenizer+names", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			z := html.NewTokenizer(bytes.NewReader(src))
			for {
				tt := z.Next()
				if tt == html.ErrorToken {
					break
				}
				switch tt {
				case html.StartTagToken, html.SelfClosingTagToken:
					_, more := z.TagName()
					for more {
						_, _, more = z.TagAttr()
					}
				case html.TextToken:
					z.Text()
				}
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			scan(nil, src, nil, step{}).release()
		}
	})
}
