package profile

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest/internal/lazyregexp"
)

// labelFromIRI derives a readable label from an IRI that the document
// gives no label for:
//
//   - the fragment, when it names something (http://ex.org/topics#SemanticWeb);
//   - else the last segment of the path, percent-decoded, with a file
//     extension and index pages dropped (Wikipedia's /wiki/Semantic_Web,
//     DBpedia's /resource/Semantic_Web, http://ex.org/topics/go-lang.html);
//   - else the site's name (http://www.python.org/ gives "python").
//
// Underscores, hyphens and plus signs become spaces, camelCase is split,
// a trailing qualifier in parentheses is dropped ("Python_(programming_language)"
// gives "python") and the result is in lower case. Opaque identifiers
// (Wikidata's Q42, hashes, numbers) give no label from the path and fall
// back to the site's name only when the IRI has no path at all; IRIs
// without a host (urn:, mailto:) give no label. No label is "".
func labelFromIRI(s string) string {
	p := splitIRI(s)
	if !p.hasAuthority {
		return "" // urn:, mailto:, tag: and the like name no words
	}
	if p.hasFragment {
		if l := wordsOf(p.fragment); l != "" && !genericFragments[l] {
			return l
		}
	}
	segs := strings.Split(p.path, "/")
	seen := false
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		if seg == "" {
			continue
		}
		seen = true
		if dec, err := url.PathUnescape(seg); err == nil && utf8.ValidString(dec) {
			seg = dec
		}
		if j := strings.LastIndexByte(seg, '.'); j > 0 && fileExtensions[strings.ToLower(seg[j+1:])] {
			seg = seg[:j]
		}
		if indexPages[strings.ToLower(seg)] {
			continue
		}
		l := wordsOf(seg)
		if l == "" || opaqueID.MatchString(strings.ReplaceAll(l, " ", "")) {
			return ""
		}
		return l
	}
	if seen {
		return ""
	}
	return siteName(p.authority)
}

var (
	genericFragments = map[string]bool{"me": true, "i": true, "this": true, "self": true, "id": true, "it": true, "top": true, "main": true, "content": true}
	fileExtensions   = map[string]bool{"html": true, "htm": true, "xhtml": true, "php": true, "asp": true, "aspx": true, "jsp": true, "shtml": true, "cgi": true, "rdf": true, "xml": true, "ttl": true, "txt": true, "pdf": true}
	indexPages       = map[string]bool{"index": true, "default": true, "home": true, "main": true, "start": true}
	// opaqueID matches identifiers that are not words: Wikidata items,
	// numbers, hex hashes, UUIDs.
	opaqueID = lazyregexp.New(`^(?:[qp][0-9]+|[0-9]+|[0-9a-f]{8,}|[0-9a-f-]{32,})$`)
)

// siteName is the distinctive label of a host name: www.python.org gives
// python, news.bbc.co.uk gives bbc.
func siteName(host string) string {
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	labels := strings.Split(strings.ToLower(host), ".")
	if len(labels) < 2 {
		return wordsOf(host)
	}
	labels = labels[:len(labels)-1] // the top-level domain
	if n := len(labels); n >= 2 && secondLevel[labels[n-1]] {
		labels = labels[:n-1]
	}
	return wordsOf(labels[len(labels)-1])
}

var secondLevel = map[string]bool{"co": true, "ac": true, "com": true, "org": true, "net": true, "gov": true, "edu": true}

// wordsOf splits a name into lower-case words: separators become spaces,
// camelCase is split (XMLParser gives "xml parser"), a trailing
// parenthesised qualifier is dropped.
func wordsOf(s string) string {
	if i := strings.LastIndexByte(s, '('); i > 0 && strings.HasSuffix(strings.TrimRight(s, "_ "), ")") {
		s = s[:i]
	}
	var b strings.Builder
	var prev rune
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '+' || r == '.' || r == '~' || unicode.IsSpace(r):
			b.WriteByte(' ')
			prev = ' '
			continue
		case !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '&':
			b.WriteByte(' ')
			prev = ' '
			continue
		}
		if i > 0 && unicode.IsUpper(r) {
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte(' ')
			}
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// termKey is the form terms are compared in: lower case, single spaces.
func termKey(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}
