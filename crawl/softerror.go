package crawl

import (
	"bytes"
	"fmt"
	"mime"
	"strings"

	"golang.org/x/net/html"

	"github.com/changedigest/changedigest/internal/lazyregexp"
)

// Soft errors: servers that answer 200 with an error page ("soft 404").
// The rules are deliberately narrow, since a false positive hides a real
// version of a page:
//
//   - only HTML documents (never feeds or other XML);
//   - only small ones: at most Fetcher.SoftErrorMaxBytes bytes (8 KiB by
//     default; real pages are larger, stock error pages smaller);
//   - only when the <title>, or one of its parts separated by " | ",
//     " - ", " – ", " — ", " : " or " :: ", is nothing but an error phrase
//     (punctuation aside, and optionally after "Error:"): a 4xx/5xx
//     status code alone or with its reason ("404", "Error 404",
//     "404 Not Found", "HTTP 403 Forbidden"), or one of the phrases in
//     errorTitles ("Not Found", "Page not found", "Error", "Access
//     Denied", "Too Many Requests", "Service Unavailable", ...).
//
// A title that merely contains such words ("Error handling in Go",
// "404 ways to cook rice", "Not found: my lost cat") does not match.

var (
	// statusTitle: an HTTP status code, optionally preceded by "http"
	// and/or "error" and followed by "error" and/or a reason phrase, e.g.
	// "404", "error 404", "404 error", "http 403 forbidden".
	statusTitle = lazyregexp.New(`^(?:http )?(?:error )?(\d{3})(?: error)?(?: (.+))?$`)

	errorTitles = map[string]bool{
		"not found": true, "page not found": true, "file not found": true,
		"document not found": true, "object not found": true, "resource not found": true,
		"the page you requested could not be found": true,
		"error": true, "an error occurred": true, "an error has occurred": true,
		"server error": true, "internal server error": true, "application error": true,
		"access denied": true, "forbidden": true, "unauthorized": true, "request rejected": true,
		"too many requests": true, "rate limited": true, "rate limit exceeded": true,
		"service unavailable": true, "service temporarily unavailable": true,
		"bad gateway": true, "gateway timeout": true, "bad request": true,
		"gone": true, "page unavailable": true, "site unavailable": true,
		"attention required": true, "just a moment": true, // bot walls
		"seite nicht gefunden": true, "page introuvable": true,
		"página no encontrada": true, "pagina non trovata": true,
	}

	titleSeparators = lazyregexp.New(` [|\-–—·:]+ `)
	titleJunk       = lazyregexp.New(`[^\p{L}\p{N}' ]+`)
)

// IsErrorPage reports whether body, served with status 200 and the given
// Content-Type, is evidently an error page, and why. maxBytes is the size
// above which no page is judged an error page (0: the check is off).
func IsErrorPage(body []byte, contentType string, maxBytes int) (reason string, ok bool) {
	if maxBytes <= 0 || len(body) > maxBytes || !isHTML(contentType, body) {
		return "", false
	}
	title := pageTitle(body)
	if title == "" {
		return "", false
	}
	for _, part := range titleSeparators.Split(strings.ToLower(title), -1) {
		p := strings.Join(strings.Fields(titleJunk.ReplaceAllString(part, " ")), " ")
		if isErrorTitle(p) {
			return fmt.Sprintf("title %s of a %d-byte page", strconvQuote(title), len(body)), true
		}
	}
	return "", false
}

// isHTML reports whether the media type is HTML, or, when there is none
// or a generic one, whether the body starts like HTML.
func isHTML(contentType string, body []byte) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "text/html", "application/xhtml+xml":
		return true
	case "", "text/plain", "application/octet-stream":
		head := bytes.ToLower(bytes.TrimLeft(body[:min(len(body), 512)], " \t\r\n\ufeff"))
		return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html"))
	}
	return false
}

// pageTitle returns the text of the first <title> element, space-collapsed.
func pageTitle(body []byte) string {
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			name, _ := z.TagName()
			if string(name) != "title" {
				continue
			}
			var b strings.Builder
			for z.Next() == html.TextToken {
				b.Write(z.Text())
			}
			return strings.Join(strings.Fields(b.String()), " ")
		}
	}
}

func strconvQuote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// isErrorTitle reports whether a normalised title part is an error phrase.
func isErrorTitle(p string) bool {
	if errorTitles[p] {
		return true
	}
	if rest, ok := strings.CutPrefix(p, "error "); ok && errorTitles[rest] {
		return true
	}
	m := statusTitle.FindStringSubmatch(p)
	if m == nil || (m[1][0] != '4' && m[1][0] != '5') {
		return false
	}
	return m[2] == "" || errorTitles[m[2]]
}
