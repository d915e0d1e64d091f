package crawl

import (
	"bytes"
	"unicode"

	"golang.org/x/net/html"
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
// and at least 2 KB. Feeds and other documents are never shells.
func LooksLikeShell(body []byte, contentType string) bool {
	if !isHTML(contentType, body) {
		return false
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	text, script := 0, 0
	hidden := 0 // depth inside elements whose text is not shown
	for {
		switch z.Next() {
		case html.ErrorToken:
			return text <= shellMaxText && script >= 2<<10 && script >= shellScriptRatio*max(text, 1)
		case html.StartTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "script":
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					if string(k) == "src" && len(bytes.TrimSpace(v)) > 0 {
						script += shellExternalScript
					}
				}
				// The tokenizer gives a script's content as one text token.
				if z.Next() == html.TextToken {
					script += len(z.Raw())
				}
			case "style", "template", "noscript", "title":
				hidden++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "style", "template", "noscript", "title":
				hidden = max(hidden-1, 0)
			}
		case html.TextToken:
			if hidden > 0 {
				continue
			}
			for _, r := range string(z.Text()) {
				if !unicode.IsSpace(r) {
					text++
				}
			}
			if text > shellMaxText {
				return false
			}
		}
	}
}
