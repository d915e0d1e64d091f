package segmenter

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/net/html"
)

func BenchmarkParts(b *testing.B) {
	src, _ := os.ReadFile("/work/shared/corpus/pages/readability/pages/wapo-2/source.html")
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
			d := scan(src, nil, step{})
			d.index()
		}
	})
	b.Run("md5", func(b *testing.B) {
		for b.Loop() {
			md5hex(src)
		}
	})
}
