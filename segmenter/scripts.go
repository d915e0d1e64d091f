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
	"github.com/changedigest/changedigest/internal/textdiff"
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
// keeps, maxWholeScript those of a script added or removed whole; maxDataChanges the values told of one JSON script; maxJSON the
// bytes of a script read as JSON.
const (
	maxScriptChange = 240
	maxWholeScript  = 120
	maxDataChanges  = 20
	maxJSON         = 4 << 20
	scriptContext   = 8 // pieces kept on each side
)

// narrowScripts tells each script or style sheet of cs by what changed
// in it (see above): an edited one by its changed places, an added or
// removed one by its start and length. It runs after the noise marking,
// which reads whole scripts, and may give more changes than it was given.
func (s *Segmenter) narrowScripts(w *work, cs []changedigest.Change) []changedigest.Change {
	cs = joinStreamed(cs)
	var out []changedigest.Change
	for i, c := range cs {
		tagO, codeO := splitStartTag(c.OldText)
		tagN, codeN := splitStartTag(c.NewText)
		tag := tagN
		if c.Op == changedigest.OpDelete {
			tag = tagO
		}
		if c.Type != changedigest.ChangeBehavioural && c.Type != changedigest.ChangeCosmetic ||
			c.Truncated || c.Before != "" || c.After != "" || !codeTag(tag) ||
			c.Op == changedigest.OpUpdate && tagO == "" {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]changedigest.Change, 0, len(cs)+4), cs[:i]...)
		}
		w.add(1 + (len(c.OldText)+len(c.NewText))/64)
		name := scriptName(tag)
		if c.Where == streamedName || streamedCode(codeN) || streamedCode(codeO) {
			name = streamedName
		}
		c.Where = name
		if c.Op != changedigest.OpUpdate {
			// Added or taken out whole: its start tag says which (its
			// nonce, new at every load, left out), its first bytes what
			// it is, its length how much.
			out = append(out, clipWhole(c))
			continue
		}
		if tagO == tagN && codeO != codeN {
			if data := dataChanges(c, name, codeO, codeN); data != nil {
				out = append(out, data...)
				continue
			}
		}
		old, new := c.OldText, c.NewText
		if tagO != tagN && withoutNonce(tagO) == withoutNonce(tagN) && codeO != codeN {
			// The tag differs only in its nonce (new at every load): the
			// source is what changed.
			old, new = codeO, codeN
		}
		hs := codeHunks(w.budget(), old, new)
		if len(hs) == 0 {
			out = append(out, clipScript(c))
			continue
		}
		hs = withoutGenerated(hs)
		for k, h := range hs {
			if k == maxCodeHunks {
				more := c
				more.Where = fmt.Sprintf("%s: %d more places", name, len(hs)-k)
				more.OldText, more.NewText = "", ""
				out = append(out, more)
				break
			}
			d := c
			d.Before, d.OldText, d.NewText, d.After = h.before, h.old, h.new, h.after
			out = append(out, clipScript(d))
		}
	}
	if out == nil {
		return cs
	}
	return out
}

// Streamed page data: a page built by a framework that streams it (the
// React server components of Next.js) carries its data in many inline
// scripts, each pushing a piece of one stream. Where the pieces are cut
// moves with the content, so a small edit changes several of them: they
// are compared as the one stream they are.
var streamedPrefixes = []string{"self.__next_f.push(", "(self.__next_f=self.__next_f||[]).push("}

const streamedName = "in the page's streamed data"

func streamedCode(code string) bool {
	for _, p := range streamedPrefixes {
		if strings.HasPrefix(code, p) {
			return true
		}
	}
	return false
}

// streamedPiece is the piece of the stream a streamed data script
// pushes: the string of `push([1,"…"])`; "" for the pushes that carry
// none (`push([0])`, the stream's start).
func streamedPiece(code string) string {
	for _, p := range streamedPrefixes {
		if rest, ok := strings.CutPrefix(code, p); ok {
			if rest, ok = strings.CutPrefix(rest, `[1,"`); ok {
				rest = strings.TrimRight(rest, "; \n")
				if piece, ok := strings.CutSuffix(rest, `"])`); ok {
					return piece
				}
				return rest
			}
		}
	}
	return ""
}

// joinStreamed replaces the changes of a page's streamed data scripts,
// when there are two or more, by one update of the whole stream's
// changed pieces: the pieces of the scripts updated or removed, joined,
// against those of the scripts updated or added, in order, so that where
// the stream was cut does not count. It
// is noise when each of them was.
func joinStreamed(cs []changedigest.Change) []changedigest.Change {
	var at []int
	for i, c := range cs {
		if c.Type != changedigest.ChangeBehavioural || c.Truncated || c.Before != "" || c.After != "" {
			continue
		}
		tagO, codeO := splitStartTag(c.OldText)
		tagN, codeN := splitStartTag(c.NewText)
		switch c.Op {
		case changedigest.OpUpdate:
			if strings.HasPrefix(tagO, "<script") && strings.HasPrefix(tagN, "<script") && (streamedCode(codeO) || streamedCode(codeN)) {
				at = append(at, i)
			}
		case changedigest.OpInsert:
			if strings.HasPrefix(tagN, "<script") && streamedCode(codeN) {
				at = append(at, i)
			}
		case changedigest.OpDelete:
			if strings.HasPrefix(tagO, "<script") && streamedCode(codeO) {
				at = append(at, i)
			}
		}
	}
	if len(at) < 2 {
		return cs
	}
	var old, new strings.Builder
	noise := true
	for _, i := range at {
		c := cs[i]
		if _, code := splitStartTag(c.OldText); c.Op != changedigest.OpInsert {
			old.WriteString(streamedPiece(code))
		}
		if _, code := splitStartTag(c.NewText); c.Op != changedigest.OpDelete {
			new.WriteString(streamedPiece(code))
		}
		noise = noise && c.Noise != ""
	}
	joined := cs[at[0]]
	joined.Op = changedigest.OpUpdate
	joined.OldText = "<script>" + old.String()
	joined.NewText = "<script>" + new.String()
	joined.Where = streamedName
	if !noise {
		joined.Noise = ""
	}
	out := make([]changedigest.Change, 0, len(cs)-len(at)+1)
	k := 0
	for i, c := range cs {
		switch {
		case k < len(at) && at[k] == i:
			if k == 0 {
				out = append(out, joined)
			}
			k++
		default:
			out = append(out, c)
		}
	}
	return out
}

// codeTag reports whether a start tag opens a script, a style sheet or
// an embedded object, whose text is code rather than words.
func codeTag(tag string) bool {
	for _, p := range []string{"<script", "<style", "<link", "<iframe", "<object", "<embed", "<noscript", "<template"} {
		if strings.HasPrefix(tag, p) && len(tag) > len(p) && (tag[len(p)] == ' ' || tag[len(p)] == '>' || tag[len(p)] == '/') {
			return true
		}
	}
	return false
}

// clipWhole tells a script or style sheet added or removed whole by its
// start tag without nonce and integrity and the first bytes of its
// source, up to maxWholeScript bytes, the lengths given when cut.
func clipWhole(c changedigest.Change) changedigest.Change {
	short := func(s string) string {
		tag, code := splitStartTag(s)
		if tag == "" {
			return s
		}
		if code == "" {
			return withoutNonce(tag)
		}
		return withoutNonce(tag) + " " + code
	}
	oldLen, newLen := len(c.OldText), len(c.NewText)
	c.OldText, c.NewText = short(c.OldText), short(c.NewText)
	if len(c.OldText) > maxWholeScript || len(c.NewText) > maxWholeScript {
		c.Truncated, c.OldLen, c.NewLen = true, oldLen, newLen
		c.OldText, c.NewText = clip(c.OldText, maxWholeScript), clip(c.NewText, maxWholeScript)
	}
	return c
}

// clipScript cuts a script change's texts to maxScriptChange bytes,
// saying so with the full lengths.
func clipScript(c changedigest.Change) changedigest.Change {
	if len(c.OldText) > maxScriptChange || len(c.NewText) > maxScriptChange {
		c.Truncated, c.OldLen, c.NewLen = true, len(c.OldText), len(c.NewText)
		c.OldText, c.NewText = clip(c.OldText, maxScriptChange), clip(c.NewText, maxScriptChange)
	}
	return c
}

// maxCodeHunks is the number of changed places of one script told, the
// rest counted; maxCodeDiff the bytes of the part of a script between its
// first and last difference that are compared piece by piece (a longer
// one is told as that one part).
const (
	maxCodeHunks = 3
	maxCodeDiff  = 64 << 10
	maxPlaceDiff = 256 << 10 // the same for one place of a long script found by its lines
	maxCodeLines = 4096      // lines of a long script's two versions compared line by line
	maxRefined   = 1 << 20   // bytes of a long script's places compared piece by piece
)

// withoutGenerated leaves out of hs the places where only generated
// tokens changed (a bundle's hash, a build number), when another place
// changed more: that one says what the change is.
func withoutGenerated(hs []hunk) []hunk {
	if len(hs) < 2 {
		return hs
	}
	var kept []hunk
	for _, h := range hs {
		if len(h.old) > maxCodeDiff || len(h.new) > maxCodeDiff || !sameTokensBut(h.old, h.new, numberOrRandom) {
			kept = append(kept, h)
		}
	}
	if len(kept) == 0 {
		return hs
	}
	return kept
}

// lineHunks finds the places where the long texts o and n (between
// before and after, which they share) differ line by line, and compares
// each piece by piece, within maxPlaceDiff a place and maxRefined in
// all (past them a place is told whole); nil for texts of more than
// maxCodeLines lines or no place found.
// Lines end at a new line, or at "\n" written in a string literal, as a
// streamed page's rows are.
func lineHunks(bu *textdiff.Budget, before, o, n, after string) []hunk {
	lo, ln := codeLines(o), codeLines(n)
	if len(lo)+len(ln) > maxCodeLines {
		return nil
	}
	runs := bu.Script(lo, ln)
	var out []hunk
	refined := 0
	for i := 0; i < len(runs); i++ {
		if runs[i].Op == textdiff.Equal {
			continue
		}
		j := i
		for j < len(runs) && runs[j].Op != textdiff.Equal {
			j++
		}
		a0, b0 := runs[i].A, runs[i].B
		a1, b1 := a0, b0
		for _, r := range runs[i:j] {
			if r.Op == textdiff.Delete {
				a1 = r.A + r.N
			} else {
				b1 = r.B + r.N
			}
		}
		ow, nw := strings.Join(lo[a0:a1], ""), strings.Join(ln[b0:b1], "")
		lead := strings.Join(lo[max(0, a0-2):a0], "")
		if a0 < 2 {
			lead = before + lead
		}
		trail := strings.Join(lo[a1:min(len(lo), a1+2)], "")
		if a1+2 > len(lo) {
			trail += after
		}
		if refined+len(ow)+len(nw) > maxRefined || len(ow) > maxPlaceDiff || len(nw) > maxPlaceDiff {
			// Past what is compared piece by piece, a place is told whole.
			out = append(out, wholeHunk(lead, ow, nw, trail))
		} else {
			refined += len(ow) + len(nw)
			out = append(out, placeHunks(bu, lead+ow+trail, lead+nw+trail)...)
		}
		i = j - 1
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// codeLines cuts code after each new line and each "\n" of a string
// literal.
func codeLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\n':
			out = append(out, s[start:i+1])
			start = i + 1
		case s[i] == '\\' && i+1 < len(s):
			if s[i+1] == 'n' {
				out = append(out, s[start:i+2])
				start = i + 2
			}
			i++
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// codeHunks splits the edit of a script's source into its changed places:
// pieces (runs of letters and digits, single other characters) compared
// by a diff drawn on bu, changed runs apart by fewer than scriptContext
// equal pieces joined, each with up to scriptContext pieces on each side.
// Nil when the texts share neither start nor end nor differ in words.
func codeHunks(bu *textdiff.Budget, old, new string) []hunk {
	before, o, n, after := affixesOrNone(old, new)
	if len(o) > maxCodeDiff || len(n) > maxCodeDiff {
		// Far apart changes of a long script (a page's streamed data):
		// its lines say where, and each place is compared piece by piece.
		if hs := lineHunks(bu, before, o, n, after); hs != nil {
			return hs
		}
		return []hunk{wholeHunk(before, o, n, after)}
	}
	return changedPlaces(bu, before, o, n, after)
}

// placeHunks is codeHunks for one place of a long script found by its
// lines, compared piece by piece up to maxPlaceDiff bytes.
func placeHunks(bu *textdiff.Budget, old, new string) []hunk {
	before, o, n, after := affixesOrNone(old, new)
	if len(o) > maxPlaceDiff || len(n) > maxPlaceDiff {
		return []hunk{wholeHunk(before, o, n, after)}
	}
	return changedPlaces(bu, before, o, n, after)
}

// affixesOrNone splits old and new into what they share at the start and
// the end and what differs between; all differs when they share neither.
func affixesOrNone(old, new string) (before, o, n, after string) {
	before, o, n, after, ok := sharedAffixes(old, new, false)
	if !ok {
		return "", old, new, ""
	}
	return before, o, n, after
}

// wholeHunk tells o and n as one changed place, with the ends of before
// and after around them.
func wholeHunk(before, o, n, after string) hunk {
	return hunk{before: tailPieces(before), old: o, new: n, after: headPieces(after)}
}

// changedPlaces compares o and n (between before and after) piece by
// piece.
func changedPlaces(bu *textdiff.Budget, before, o, n, after string) []hunk {
	po, pn := pieces(o), pieces(n)
	runs := bu.Script(po, pn)
	// the changed places: [i, j) ranges of runs that are not Equal, short
	// equal runs between them folded in
	type place struct{ i, j int }
	var places []place
	for i := 0; i < len(runs); {
		if runs[i].Op == textdiff.Equal {
			i++
			continue
		}
		j := i
		for j < len(runs) && runs[j].Op != textdiff.Equal {
			j++
		}
		if k := len(places); k > 0 && places[k-1].j == i-1 && runs[i-1].N < scriptContext {
			places[k-1].j = j
		} else {
			places = append(places, place{i, j})
		}
		i = j
	}
	join := func(ps []string) string { return strings.Join(ps, "") }
	var out []hunk
	for _, p := range places {
		r0, r1 := runs[p.i], runs[p.j-1]
		a0, b0 := r0.A, r0.B
		a1, b1 := r1.A, r1.B
		if r1.Op == textdiff.Delete {
			a1 += r1.N
		} else {
			b1 += r1.N // the last run of a place changes something
		}
		h := hunk{old: join(po[a0:a1]), new: join(pn[b0:b1])}
		if strings.TrimSpace(h.old) == strings.TrimSpace(h.new) {
			continue
		}
		h.before = tailPieces(before + join(po[:a0]))
		h.after = headPieces(join(po[a1:]) + after)
		out = append(out, h)
	}
	return out
}

// tailPieces is the last scriptContext pieces of s, headPieces the first.
func tailPieces(s string) string {
	if len(s) > 4<<10 {
		s = s[len(s)-4<<10:]
		for len(s) > 0 && !isUTF8Start(s[0]) {
			s = s[1:]
		}
	}
	p := pieces(s)
	return strings.TrimLeft(strings.Join(p[max(0, len(p)-scriptContext):], ""), " ")
}

func headPieces(s string) string {
	if len(s) > 4<<10 {
		cut := 4 << 10
		for cut > 0 && !isUTF8Start(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	p := pieces(s)
	return strings.TrimRight(strings.Join(p[:min(len(p), scriptContext)], ""), " ")
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
