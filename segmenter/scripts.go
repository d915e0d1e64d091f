package segmenter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/changedigest/changedigest"
)

// Scripts and style sheets in people's words.
//
// An edited script or style sheet longer than maxScriptChange is reported
// as what changed in it, not whole (a page's inline state can be a
// megabyte on one line): its texts
// are the part that differs, with a few pieces around it in Before and
// After, cut to maxScriptChange bytes with Truncated set and the lengths
// given. Where says which script it is: the one from a host, the page's
// structured data, an inline script by its id. A script that holds JSON
// (structured data, a framework's page state) is compared as data: each
// value that changed is a change of its own, its key path in Where; the
// price and availability of an offer in structured data are content a
// reader wants, and typed so.

// maxScriptChange bounds the bytes of old or new text a script change
// keeps; maxDataChanges the values told of one JSON script; maxJSON the
// bytes of a script read as JSON.
const (
	maxScriptChange = 240
	maxDataChanges  = 20
	maxJSON         = 4 << 20
	scriptContext   = 8 // pieces kept on each side
)

// narrowScripts tells each edited script or style sheet of cs by what
// changed in it (see above). It runs after the noise marking, which reads
// whole scripts, and may give more changes than it was given.
func (s *Segmenter) narrowScripts(cs []changedigest.Change) []changedigest.Change {
	var out []changedigest.Change
	for i, c := range cs {
		if c.Type != changedigest.ChangeBehavioural && c.Type != changedigest.ChangeCosmetic ||
			c.Op != changedigest.OpUpdate || c.Truncated || c.Before != "" || c.After != "" ||
			!strings.HasPrefix(c.OldText, "<") || !strings.HasPrefix(c.NewText, "<") {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		tagO, codeO := splitStartTag(c.OldText)
		tagN, codeN := splitStartTag(c.NewText)
		if tagN == "" {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]changedigest.Change, 0, len(cs)+4), cs[:i]...)
		}
		name := scriptName(tagN)
		if tagO == tagN && codeO != codeN {
			if data := dataChanges(c, name, codeO, codeN); data != nil {
				out = append(out, data...)
				continue
			}
		}
		c.Where = name
		if len(c.OldText) <= maxScriptChange && len(c.NewText) <= maxScriptChange {
			out = append(out, c) // short enough to read whole
			continue
		}
		old, new := c.OldText, c.NewText
		if tagO != tagN && withoutNonce(tagO) == withoutNonce(tagN) && codeO != codeN {
			// The tag differs only in its nonce (new at every load): the
			// source is what changed.
			old, new = codeO, codeN
		}
		if before, o, n, after, ok := sharedAffixes(old, new, true); ok {
			bp, ap := pieces(before), pieces(after)
			c.Before = strings.TrimLeft(strings.Join(bp[max(0, len(bp)-scriptContext):], ""), " ")
			c.After = strings.TrimRight(strings.Join(ap[:min(len(ap), scriptContext)], ""), " ")
			c.OldText, c.NewText = o, n
		}
		if len(c.OldText) > maxScriptChange || len(c.NewText) > maxScriptChange {
			c.Truncated, c.OldLen, c.NewLen = true, len(c.OldText), len(c.NewText)
			c.OldText, c.NewText = clip(c.OldText, maxScriptChange), clip(c.NewText, maxScriptChange)
		}
		out = append(out, c)
	}
	if out == nil {
		return cs
	}
	return out
}

// splitStartTag splits a script change's text into its start tag and its
// source ("" tag when the text does not start with one).
func splitStartTag(s string) (tag, code string) {
	i := strings.IndexByte(s, '>')
	if i < 0 || !strings.HasPrefix(s, "<") {
		return "", s
	}
	return s[:i+1], strings.TrimSpace(s[i+1:])
}

// scriptName says which script or style sheet a start tag opens, for
// people: "in the script from www.googletagmanager.com", "in the page's
// structured data", "in the script #__NEXT_DATA__".
func scriptName(tag string) string {
	attr := func(k string) string {
		i := strings.Index(tag, " "+k+`="`)
		if i < 0 {
			return ""
		}
		v := tag[i+len(k)+3:]
		if j := strings.IndexByte(v, '"'); j >= 0 {
			return v[:j]
		}
		return ""
	}
	typ, id, src := strings.ToLower(attr("type")), attr("id"), attr("src")
	what := "script"
	switch {
	case strings.HasPrefix(tag, "<style"):
		what = "style sheet"
	case strings.HasPrefix(tag, "<link"):
		what = "linked style sheet"
	case typ == "application/ld+json":
		return "in the page's structured data"
	case strings.Contains(typ, "json"):
		what = "page data"
	case strings.HasPrefix(tag, "<iframe"):
		what = "embedded frame"
	case strings.HasPrefix(tag, "<object"), strings.HasPrefix(tag, "<embed"):
		what = "embedded object"
	}
	if src == "" {
		src = attr("href")
	}
	switch {
	case src != "":
		if u, err := url.Parse(src); err == nil && u.Host != "" {
			return "in the " + what + " from " + u.Host
		}
		return "in the " + what + " " + clipPlace(src)
	case id != "":
		return "in the " + what + " #" + clipPlace(id)
	}
	if what == "script" {
		return "in an inline script"
	}
	return "in the " + what
}

// dataChanges compares a script's old and new source as JSON: one change
// per value that differs, its key path in Where. Nil when either is not
// JSON.
func dataChanges(c changedigest.Change, name, old, new string) []changedigest.Change {
	if len(old) > maxJSON || len(new) > maxJSON || !looksJSON(old) || !looksJSON(new) {
		return nil
	}
	ov, err1 := decodeJSON(old)
	nv, err2 := decodeJSON(new)
	if err1 != nil || err2 != nil {
		return nil
	}
	var found []valueChange
	diffJSON("", ov, nv, &found)
	if len(found) == 0 {
		return nil // the same data, written another way
	}
	structured := name == "in the page's structured data"
	out := make([]changedigest.Change, 0, min(len(found), maxDataChanges+1))
	for i, f := range found {
		if i == maxDataChanges {
			// The rest in one change, counted.
			more := c
			more.Where = fmt.Sprintf("%s: %d more values", name, len(found)-i)
			more.OldText, more.NewText = "", ""
			out = append(out, more)
			break
		}
		d := c
		d.Where = name + " at ‘" + f.path + "’"
		d.OldText, d.NewText = clip(f.old, maxScriptChange), clip(f.new, maxScriptChange)
		if len(f.old) > maxScriptChange || len(f.new) > maxScriptChange {
			d.Truncated, d.OldLen, d.NewLen = true, len(f.old), len(f.new)
		}
		switch {
		case f.old == "":
			d.Op = changedigest.OpInsert
		case f.new == "":
			d.Op = changedigest.OpDelete
		}
		if structured && offerKey(f.path) {
			d.Type = changedigest.ChangeContent
		}
		out = append(out, d)
	}
	return out
}

// looksJSON reports whether s starts and ends as a JSON object or array.
func looksJSON(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 2 && (s[0] == '{' && s[len(s)-1] == '}' || s[0] == '[' && s[len(s)-1] == ']')
}

func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// valueChange is a value of a JSON document that changed: its key path,
// and its old and new value written out ("" where absent).
type valueChange struct{ path, old, new string }

// diffJSON appends the values that differ between o and n, at path.
func diffJSON(path string, o, n any, out *[]valueChange) {
	if len(*out) > maxDataChanges*8 {
		return // counted enough
	}
	switch ov := o.(type) {
	case map[string]any:
		if nv, ok := n.(map[string]any); ok {
			keys := make([]string, 0, len(ov)+len(nv))
			for k := range ov {
				keys = append(keys, k)
			}
			for k := range nv {
				if _, ok := ov[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				diffJSON(joinKey(path, k), ov[k], nv[k], out)
			}
			return
		}
	case []any:
		if nv, ok := n.([]any); ok {
			for i := range max(len(ov), len(nv)) {
				var a, b any
				if i < len(ov) {
					a = ov[i]
				}
				if i < len(nv) {
					b = nv[i]
				}
				diffJSON(path+"["+strconv.Itoa(i)+"]", a, b, out)
			}
			return
		}
	}
	if a, b := jsonText(o), jsonText(n); a != b {
		*out = append(*out, valueChange{path: strings.TrimPrefix(path, "."), old: a, new: b})
	}
}

func joinKey(path, k string) string {
	if k == "" || strings.ContainsAny(k, ".[] ") {
		return path + "[" + strconv.Quote(k) + "]"
	}
	return path + "." + k
}

// jsonText writes a value as a reader reads it: a string without quotes,
// a number or a literal as written, an object or array compact ("" for
// none).
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSpace(b.String())
}

// offerKey reports whether a key path of structured data is an offer's
// price or availability.
func offerKey(path string) bool {
	last := path
	if i := strings.LastIndexAny(path, ".]"); i >= 0 {
		last = path[i+1:]
	}
	switch last {
	case "price", "lowPrice", "highPrice", "priceCurrency", "availability":
		return true
	}
	return false
}

// withoutNonce is a start tag without its nonce and integrity attributes.
func withoutNonce(tag string) string {
	for _, k := range []string{" nonce=\"", " integrity=\""} {
		if i := strings.Index(tag, k); i >= 0 {
			if j := strings.IndexByte(tag[i+len(k):], '"'); j >= 0 {
				tag = tag[:i] + tag[i+len(k)+j+1:]
			}
		}
	}
	return tag
}
