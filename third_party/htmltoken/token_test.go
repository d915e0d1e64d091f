package htmltoken

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/changedigest/changedigest/internal/testenv"
)

// tokens lists what a reader of the tokenizer sees: each token's type and
// raw bytes, then its text (text, comments, doctypes) or its name and
// attributes (tags), as the segmenter reads them.
func tokens(b []byte) []string {
	var out []string
	z := NewTokenizer(b)
	for {
		tt := z.Next()
		line := fmt.Sprintf("%d %q", tt, z.Raw())
		switch tt {
		case ErrorToken:
			return append(out, line+" "+z.Err().Error())
		case TextToken, CommentToken, DoctypeToken:
			line += fmt.Sprintf(" %q", z.Text())
		case StartTagToken, EndTagToken, SelfClosingTagToken:
			name, more := z.TagName()
			line += fmt.Sprintf(" <%s", name)
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				line += fmt.Sprintf(" %q=%q", k, v)
			}
		}
		out = append(out, line)
	}
}

// upstream is tokens read with golang.org/x/net/html's tokenizer.
func upstream(b []byte) []string {
	var out []string
	z := html.NewTokenizer(bytes.NewReader(b))
	for {
		tt := z.Next()
		line := fmt.Sprintf("%d %q", tt, z.Raw())
		switch tt {
		case html.ErrorToken:
			return append(out, line+" "+z.Err().Error())
		case html.TextToken, html.CommentToken, html.DoctypeToken:
			line += fmt.Sprintf(" %q", z.Text())
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			line += fmt.Sprintf(" <%s", name)
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				line += fmt.Sprintf(" %q=%q", k, v)
			}
		}
		out = append(out, line)
	}
}

// sameTokens fails t when the two tokenizers read b differently.
func sameTokens(t *testing.T, name string, b []byte) {
	t.Helper()
	got, want := tokens(b), upstream(b)
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s: token %d differs\n got: %.300s\nwant: %.300s", name, i, g, w)
		}
	}
}

var cases = []string{
	"",
	"plain",
	"<",
	"</",
	"</>",
	"<!",
	"<!--",
	"<!-- a -- b --!>c",
	"<!DOCTYPE html><html lang=en>",
	"<a href='x'>A &amp; B &notin; &notit; &amp &ampx &#65;&#x42;&#0;&#x110000;&#128;&#xD800;</a>",
	"<a title='&amp=1&ampx=2&notin;'>x</a>",
	"<a title=&lt;&gt; title=again TITLE=third data-x>y</a>",
	"<p CLASS=a class=b Class=c>case-folded duplicates</p>",
	"<div a=1 b=2 a=3 c='4' b=\"5\" d>",
	"<img src=x/>",
	"<br/><br /><br/ >",
	"<script>if (a < b && c > d) { x = '</scr' + 'ipt>'; }</script>after",
	"<script><!--<script></script>--></script>x",
	"<style>p > a { color: red }</style>",
	"<title>a <b> &amp; c</title>",
	"<textarea>a <b>&lt;</textarea>",
	"<plaintext>everything </plaintext> after",
	"<xmp><b>raw</b></xmp>",
	"<iframe><p>in iframe</p></iframe>",
	"<noembed>x</noembed><noframes>y</noframes>",
	"a\r\nb\rc\n\r",
	"nul \x00 in text<p a='\x00'>\x00</p>",
	"<![CDATA[x]]>",
	"<?xml version='1.0'?><p>",
	"<a b='c\n d'\n e=f\tg >",
	"<a/b/c/>",
	"&lt&gt&amp&quot&nbsp&copy;&AElig&AElig;&acE;&NotEqualTilde;",
	"&#x;&#;&#a;&",
	"<svg><title>t</title></svg>",
	"<p>unclosed <b>tags",
	"<a href=\"unterminated",
	"<a href='x'",
	"</p foo=bar>",
	"<\xff\xfe>\xe2\x82",
}

func TestTokensAsUpstream(t *testing.T) {
	for i, c := range cases {
		sameTokens(t, fmt.Sprintf("case %d", i), []byte(c))
	}
}

// TestCorpusTokensAsUpstream reads every HTML and XML file of the shared
// corpus with both tokenizers.
func TestCorpusTokensAsUpstream(t *testing.T) {
	dir := testenv.Corpus(t)
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".html", ".xml", ".rss", ".atom", ".rdf", ".before", ".after":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sameTokens(t, path, b)
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d corpus files read alike", n)
}

// TestRandomTokensAsUpstream reads strings made of the pieces of markup
// where tokenizers go wrong.
func TestRandomTokensAsUpstream(t *testing.T) {
	pieces := []string{"<", ">", "/", "!", "-", "--", "?", "=", "'", "\"", " ", "\n", "\r", "\t", "\x00",
		"&", ";", "#", "x", "amp", "AMP", "notin", "acE", "#65", "#x42", "a", "b", "A", "p", "script",
		"style", "title", "textarea", "plaintext", "xmp", "iframe", "![CDATA[", "]]>", "DOCTYPE",
		"é", "\xff", "href", "class", "CLASS", "svg", "math"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		sameTokens(t, fmt.Sprintf("random %d %q", i, b.String()), []byte(b.String()))
	}
}

// TestTokenizerLeavesInputAlone: Text and TagAttr unescape in place, in
// the tokenizer's copy.
func TestTokenizerLeavesInputAlone(t *testing.T) {
	in := []byte("<a title='&amp;&lt;'>A&amp;B\r\n</a>")
	keep := bytes.Clone(in)
	tokens(in)
	if !bytes.Equal(in, keep) {
		t.Fatalf("input changed to %q", in)
	}
}

// TestEntitiesAsUpstream looks every entity up, with and without what
// may follow it, as text and as an attribute value.
func TestEntitiesAsUpstream(t *testing.T) {
	for i := 1; i < len(entities); i++ {
		if entities[i-1].name >= entities[i].name {
			t.Fatalf("entities not sorted at %q", entities[i].name)
		}
	}
	for _, e := range entities {
		for _, tail := range []string{"", ";", "x", "=", "1"} {
			s := "&" + e.name + tail
			sameTokens(t, s, []byte("<p a='"+s+"'>"+s))
		}
	}
}

func FuzzTokensAsUpstream(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sameTokens(t, "fuzz", b)
	})
}

// BenchmarkTokenizer reads the readability pages of the corpus as the
// segmenter does (raw bytes, and the text of text tokens), with this
// tokenizer and with golang.org/x/net/html's over a bytes.Reader.
func BenchmarkTokenizer(b *testing.B) {
	dir := testenv.Corpus(b, "pages", "readability", "pages")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	var pages [][]byte
	size := 0
	for _, f := range files {
		p, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, p)
		size += len(p)
	}
	b.Run("htmltoken", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pages {
				z := NewTokenizer(p)
				for tt := z.Next(); tt != ErrorToken; tt = z.Next() {
					_ = z.Raw()
					if tt == TextToken {
						_ = z.Text()
					}
				}
			}
		}
	})
	b.Run("x-net-html", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pages {
				z := html.NewTokenizer(bytes.NewReader(p))
				for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
					_ = z.Raw()
					if tt == html.TextToken {
						_ = z.Text()
					}
				}
			}
		}
	})
}

// manyAttrs is a start tag with n attributes whose keys repeat every
// distinct keys, in mixed case, followed by text.
func manyAttrs(n, distinct int) []byte {
	var b bytes.Buffer
	b.WriteString("<div")
	for i := range n {
		k := fmt.Sprintf("k%d", i%distinct)
		if i%3 == 1 {
			k = strings.ToUpper(k)
		}
		fmt.Fprintf(&b, " %s=v%d", k, i)
	}
	b.WriteString(">text</div>")
	return b.Bytes()
}

// TestManyAttributesAsUpstream: tags with many attributes, many of them
// repeated, read as x/net/html reads them (the first of repeated keys
// kept, keys compared without case), tags of few attributes after them.
func TestManyAttributesAsUpstream(t *testing.T) {
	for _, c := range [][2]int{{9, 9}, {20, 7}, {300, 300}, {3000, 1000}, {3000, 1}} {
		b := append(manyAttrs(c[0], c[1]), "<p a=1 A=2 b=3 a=4>x<p>"...)
		sameTokens(t, fmt.Sprintf("%d attributes, %d keys", c[0], c[1]), b)
	}
}

// TestRepeatedKeysCostLinear: finding repeated keys costs key comparisons
// in proportion to a tag's attributes, not to their square (one tag of
// 25,000 attributes took seconds).
func TestRepeatedKeysCostLinear(t *testing.T) {
	for _, c := range [][2]int{{4000, 4000}, {8000, 8000}, {8000, 100}, {8000, 1}} {
		z := NewTokenizer(manyAttrs(c[0], c[1]))
		if tt := z.Next(); tt != StartTagToken {
			t.Fatalf("got %v, want a start tag", tt)
		}
		if z.NumAttr() != c[1] {
			t.Errorf("%d attributes, %d keys: NumAttr %d", c[0], c[1], z.NumAttr())
		}
		if z.probes > 4*c[0] {
			t.Errorf("%d attributes, %d keys: %d key comparisons, want at most %d", c[0], c[1], z.probes, 4*c[0])
		}
	}
}

// TestAttrSpan: AttrSpan locates each kept attribute in Raw as written.
func TestAttrSpan(t *testing.T) {
	z := NewTokenizer([]byte(`<P Class="a b" id=x CLASS=y data-x='1&amp;2' e>`))
	z.Next()
	raw := z.Raw()
	var got []string
	for i := range z.NumAttr() {
		k0, k1, v0, v1 := z.AttrSpan(i)
		got = append(got, fmt.Sprintf("%s=%s", raw[k0:k1], raw[v0:v1]))
	}
	want := []string{"Class=a b", "id=x", "data-x=1&amp;2", "e="}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
