package render

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// cleanText makes page-derived text safe to put in XML and HTML text:
// invalid UTF-8 becomes U+FFFD and characters XML 1.0 cannot hold (C0
// controls other than tab, newline and carriage return, surrogates,
// U+FFFE, U+FFFF) are dropped, as are C1 controls and DEL, which no page
// means to show. Escaping is left to html/template and encoding/xml.
func cleanText(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !keepRune(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
			continue
		}
		if keepRune(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// keepRune reports whether r is an XML 1.0 Char and not a control
// character other than tab, newline and carriage return.
func keepRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return false
	case r >= 0xd800 && r <= 0xdfff, r == 0xfffe, r == 0xffff:
		return false
	case r > utf8.MaxRune:
		return false
	}
	return true
}

// maxLine caps one-line texts (titles, names, paths, labels): a page
// cannot make a title fill a feed.
const maxLine = 300

// oneLine cleans s, folds every run of white space (newlines included)
// into one space and cuts it to maxLine bytes with "…": for titles,
// paths and labels.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(cleanText(s)), " ")
	if t, cut := clip(s, maxLine); cut {
		return t + "…"
	}
	return s
}

// safeURL returns s when it is an absolute http or https URL with a host
// and no credentials, else "". Links into watched pages pass through it
// before reaching an href, so a page cannot plant javascript: or data:
// links in a feed or the digest.
func safeURL(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 4096 || cleanText(s) != s || strings.ContainsAny(s, " \t\r\n<>\"'`\\") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.String()
	}
	return ""
}

// clip returns s cut to at most n bytes at a rune boundary, preferring the
// last white space in its final quarter, and whether it cut anything.
func clip(s string, n int) (string, bool) {
	if n <= 0 || len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexAny(s[:cut], " \t\n"); sp > cut*3/4 {
		cut = sp
	}
	return s[:cut], true
}
