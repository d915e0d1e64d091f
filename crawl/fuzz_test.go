package crawl

import (
	"bytes"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzToUTF8 checks that any body under any Content-Type converts to
// valid UTF-8 without panicking, and that valid UTF-8 is left alone.
func FuzzToUTF8(f *testing.F) {
	f.Add([]byte("<p>café</p>"), "text/html; charset=utf-8")
	f.Add([]byte("<meta charset=\"koi8-r\"><p>\xf0\xd2\xc9\xd7\xc5\xd4</p>"), "text/html")
	f.Add([]byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss>\xe9</rss>"), "application/xml")
	f.Add([]byte{0xFF, 0xFE, '<', 0, 'p', 0, 0xD8}, "")
	f.Add([]byte{0xFE, 0xFF, 0, '<'}, "text/html; charset=utf-16")
	f.Add([]byte("\x1b$B$3$s\x1b(B"), "text/html; charset=iso-2022-jp")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		out, name, err := toUTF8(body, contentType)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v is not ErrBadEncoding", err)
			}
			return
		}
		if !utf8.Valid(out) {
			t.Fatalf("output in %s is not valid UTF-8: %q", name, out)
		}
		if name == "" {
			t.Fatal("no charset name")
		}
		if utf8.Valid(body) && !bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}) && name == "utf-8" && !bytes.Equal(out, body) {
			t.Fatalf("valid UTF-8 was changed: %q -> %q", body, out)
		}
	})
}

// FuzzDecodeContent checks that no compressed stream panics the decoder
// or decodes past the limit.
func FuzzDecodeContent(f *testing.F) {
	f.Add(compress(f, "gzip", []byte("hello hello hello")), "gzip")
	f.Add(compress(f, "br", []byte("hello hello hello")), "br")
	f.Add(compress(f, "deflate", []byte("hello hello hello")), "deflate")
	f.Add(compress(f, "raw-deflate", []byte("hello")), "deflate")
	f.Add([]byte("plain"), "gzip, br")
	f.Fuzz(func(t *testing.T, body []byte, coding string) {
		const limit = 1 << 16
		out, err := decodeContent(body, coding, limit, 10)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("decoded %d bytes, over the %d limit", len(out), limit)
		}
	})
}

// FuzzIsErrorPage checks that the soft-error rules never panic and never
// judge a page over the size limit.
func FuzzIsErrorPage(f *testing.F) {
	f.Add([]byte("<title>404 Not Found</title>"), "text/html")
	f.Add([]byte("<title>Error handling</title>"), "")
	f.Add([]byte("<html><title>"), "text/html")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		reason, bad := IsErrorPage(body, contentType, 512)
		if bad && (len(body) > 512 || reason == "") {
			t.Fatalf("judged an error page: %d bytes, reason %q", len(body), reason)
		}
	})
}
