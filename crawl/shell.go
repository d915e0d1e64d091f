package crawl

import (
	"bytes"
	"unicode"

	"golang.org/x/net/html"

	"github.com/changedigest/changedigest"
)

// Shell pages: HTML documents that are an empty frame filled in by their
// scripts, which a plain fetch cannot watch. LooksLikeShell tells them
// apart so the watch page can suggest rendering them in a browser.
const (
	// shellMaxText is the most visible text (non-space characters of
	// the body, outside scripts, styles, templates and noscript) a shell
	// shows.
	shellMaxText = 300
	// shellScriptRatio is how many times the visible text the scripts
	// must weigh; an external script counts as shellExternalScript bytes.
	shellScriptRatio    = 20
	shellExternalScript = 10 << 10
)

// LooksLikeShell reports whether an HTML page has little visible text and
// large scripts: at most 300 visible characters, and scripts (inline
// bytes, 10 KB for each external one) weighing at least 20 times as much
// and at least 2 KB. Feeds and other documents are never shells. A page
// the segmenter read has its weight in its snapshot: see ShellWeight.
func LooksLikeShell(body []byte, contentType string) bool {
	if !isHTML(contentType, body) {
		return false
	}
	return ShellWeight(PageWeight(body))
}

// ShellWeight reports whether a page of this weight looks like a shell
// (see LooksLikeShell).
func ShellWeight(w changedigest.PageWeight) bool {
	script := w.InlineScript + shellExternalScript*w.ExternalScripts
	return w.Text <= shellMaxText && script >= 2<<10 && script >= shellScriptRatio*max(w.Text, 1)
}

// PageWeight reads an HTML page's visible text and scripts as the
// segmenter does when it scans a page (changedigest.Snapshot.Weight): text
// inside style, template, noscript and title tags is not seen, and the
// text right after a script start tag is its source.
func PageWeight(body []byte) changedigest.PageWeight {
	var w changedigest.PageWeight
	z := html.NewTokenizer(bytes.NewReader(body))
	unseen := 0 // open tags whose text is not shown
	for {
		switch z.Next() {
		case html.ErrorToken:
			return w
		case html.StartTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "script":
				external := false
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					external = external || (string(k) == "src" && len(bytes.TrimSpace(v)) > 0)
				}
				if external {
					w.ExternalScripts++
				}
				// The tokenizer gives a script's content as one text token.
				if z.Next() == html.TextToken {
					w.InlineScript += len(z.Raw())
				}
			case "style", "template", "noscript", "title":
				unseen++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "style", "template", "noscript", "title":
				unseen = max(unseen-1, 0)
			}
		case html.TextToken:
			if unseen > 0 {
				continue
			}
			for _, r := range string(z.Text()) {
				if !unicode.IsSpace(r) {
					w.Text++
				}
			}
		}
	}
}
