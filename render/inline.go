package render

import (
	"fmt"
	"strings"

	"github.com/changedigest/changedigest/internal/lazyregexp"
)

var (
	cssComment = lazyregexp.New(`(?s)/\*.*?\*/`)
	cssClass   = lazyregexp.New(`^\.[a-zA-Z][a-zA-Z0-9-]*$`)
)

// decl is one CSS declaration.
type decl struct{ prop, value string }

// parseInlineCSS reads a style sheet made only of single-class rules
// (".name { decl; decl }") into class → declarations. Anything else (other selectors, at-rules, quotes, angle
// brackets, url() or expression()) is an error: the declarations go into
// style attributes of feed and mail HTML, so they must stay plain.
func parseInlineCSS(src string) (map[string][]decl, error) {
	src = cssComment.ReplaceAllString(src, "")
	rules := map[string][]decl{}
	for {
		open := strings.IndexByte(src, '{')
		if open < 0 {
			if rest := strings.TrimSpace(src); rest != "" {
				return nil, fmt.Errorf("text %q outside a rule", rest)
			}
			return rules, nil
		}
		sel := strings.TrimSpace(src[:open])
		end := strings.IndexByte(src[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("rule %s is not closed", sel)
		}
		body := src[open+1 : open+end]
		src = src[open+end+1:]
		if !cssClass.MatchString(sel) {
			return nil, fmt.Errorf("selector %q is not a single class (only .name rules can be inlined)", sel)
		}
		if strings.ContainsAny(body, "{\"'<>\\&") || strings.Contains(strings.ToLower(body), "url(") || strings.Contains(strings.ToLower(body), "expression") {
			return nil, fmt.Errorf("rule %s holds a character or function that cannot go into a style attribute", sel)
		}
		var decls []decl
		for _, d := range strings.Split(body, ";") {
			d = strings.Join(strings.Fields(d), " ")
			if d == "" {
				continue
			}
			prop, value, ok := strings.Cut(d, ":")
			prop, value = strings.TrimSpace(prop), strings.TrimSpace(value)
			if !ok || prop == "" || value == "" {
				return nil, fmt.Errorf("rule %s: %q is not a declaration", sel, d)
			}
			decls = append(decls, decl{strings.ToLower(prop), value})
		}
		name := sel[1:]
		if _, dup := rules[name]; dup {
			return nil, fmt.Errorf("class .%s is defined twice", name)
		}
		rules[name] = decls
	}
}
