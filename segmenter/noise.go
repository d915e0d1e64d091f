package segmenter

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/lazyregexp"
	"github.com/changedigest/changedigest/internal/textdiff"
)

// Noise and significance.
//
// After the comparison, each change is looked at once more for what a
// reader would not call a change (Change.Noise says why), and the version
// gets a significance score (Diff.Significance, Snapshot.Significance).
// Nothing is dropped: noise changes stay in the change set, the track and
// the API; the views fold them and the feeds, digests and notifications
// leave them out (changedigest.Notable).
//
// A change is noise when:
//   - generated value: a cosmetic, structural or behavioural update whose
//     attribute values and script or style text differ only in generated
//     tokens: UUIDs, long hex or base64-like runs, numbers in scripts and
//     in attributes that are not link targets, the nonce and integrity
//     attributes, hashed file and class names, and the query strings of
//     resource addresses (cache busters) or session, tracking and time
//     parameters of links. A changed link path, colour, class word or new
//     code is a real change.
//   - repeated edit: the same attribute edit (digits aside) made at many
//     places of one version, e.g. a table column renamed in every row's
//     data attribute: the first place is reported, the others point to it.
//   - counter or relative time: a content update that only moves a count
//     next to a counter word ("42 Kommentare") or a time told relative to
//     now ("vor 45 Minuten", "il y a 3 heures"), from the first check
//     (counters.go);
//   - volatile location: a location that changed at nearly every recent
//     check (NoiseVolatileShare of the last NoiseVolatileWindow versions,
//     at least NoiseVolatileMin of them), when the change is a small edit
//     of numbers, dates or relative times (a counter, "updated 2 hours
//     ago") or not a content change at all. Counting only recent versions,
//     a location that calms down is told about again by itself.
//
// Significance is 0 when every change is noise; otherwise the larger of
// the 64-bit simhash distance between the main texts of the two versions
// (Manku, Jain and Das Sarma 2007: near-duplicates differ in few bits; a
// different page in about half of them, so the distance is divided by
// 32) and twice the share of the page's words that changed in the changes
// that are not noise, at most 1.

// Noise reasons (Change.Noise); a volatile location's reason carries the
// counts, "changes at 19 of the last 20 checks".
const (
	NoiseGenerated    = "generated value"
	NoiseRepeated     = "repeated edit"
	NoiseResourceHint = "resource hint" // a link that only says what to fetch early (isResourceHint)
)

// Learned volatility knobs.
const (
	NoiseVolatileWindow = 20
	NoiseVolatileMin    = 6
	NoiseVolatileShare  = 0.75
)

// Classify marks the noise in a computed diff of old and new (the raw
// bodies of both versions) and sets its significance.
func Classify(d *changedigest.Diff, old, new []byte) {
	classify(nil, d, old, new, nil)
}

// classify is Classify counting its work into w; prints, when set, are
// the text prints of old and new, made from the scans of the comparison.
func classify(w *work, d *changedigest.Diff, old, new []byte, prints *[2]changedigest.TextPrint) {
	if d == nil {
		return
	}
	w.add(changeSteps(d.Changes))
	markGenerated(d.Changes)
	markRepeated(d.Changes)
	markCounters(d.Changes)
	markTypography(d.Changes)
	var o, n changedigest.TextPrint
	switch {
	case d.Kind == changedigest.KindPage && prints != nil:
		o, n = prints[0], prints[1]
	case d.Kind == changedigest.KindPage:
		o, n = pagePrint(w, nil, old), pagePrint(w, nil, new)
	}
	d.Significance = significance(o, n, d.Changes, max(d.Old.Segments, d.New.Segments))
}

// classifySnapshot marks the noise of a new version's changes, learning
// volatile locations from in.Recent (or in.RecentFrom), and sets its
// significance.
func classifySnapshot(w *work, snap *changedigest.Snapshot, in Input) error {
	if snap == nil || len(snap.Changes) == 0 {
		return nil
	}
	w.add(changeSteps(snap.Changes))
	markGenerated(snap.Changes)
	markRepeated(snap.Changes)
	markCounters(snap.Changes)
	markTypography(snap.Changes)
	recent := in.Recent
	if recent == nil && in.RecentFrom != nil && slices.ContainsFunc(snap.Changes, volatileCandidate) {
		var err error
		if recent, err = in.RecentFrom(); err != nil {
			return err
		}
	}
	markVolatile(snap.Changes, recent)
	var o, n changedigest.TextPrint
	if snap.Kind == changedigest.KindPage && (len(in.PrevBody) > 0 || in.lazy() && in.Prev.Size > 0) {
		if stored, ok := storedPrint(in.Prev); ok {
			o = stored
		} else {
			in = in.whole()
			o = pagePrint(w, in.Prev, in.PrevBody)
		}
		n = pagePrint(w, snap, in.Body)
		snap.Print = &n
	} else {
		o, n = printOf(segmentText(in.whole().Prev), ""), printOf(segmentText(snap), "")
	}
	snap.Significance = significance(o, n, snap.Changes, len(snap.Segments))
	return nil
}

// changeSteps is the work of looking at the texts of changes, in steps.
func changeSteps(cs []changedigest.Change) int {
	n := 0
	for i := range cs {
		n += 1 + (len(cs[i].OldText)+len(cs[i].NewText))/64
	}
	return n
}

// printVersion numbers the rules of printOf: a stored print made by other
// rules is made again from the body.
const printVersion = 1

// pagePrint returns the text print of a page version: the one it carries
// when made by the current rules, else one made from its body.
func pagePrint(w *work, s *changedigest.Snapshot, body []byte) changedigest.TextPrint {
	if p, ok := storedPrint(s); ok {
		return p
	}
	if len(body) == 0 || len(body) > DefaultMaxBytes || binaryKind(body) != "" {
		return printOf("", "")
	}
	d := scan(w, decode(body), nil, step{})
	defer d.release()
	return docPrint(d)
}

// storedPrint is the print stored with a version, when it was made the
// way pagePrint makes it now.
func storedPrint(s *changedigest.Snapshot) (changedigest.TextPrint, bool) {
	if s != nil && s.Print != nil && s.Print.Version == printVersion {
		return *s.Print, true
	}
	return changedigest.TextPrint{}, false
}

// printOf summarises a text for significance: the word counts and
// simhashes of its main text and of all of it (all == "" means the main
// text is all of it).
func printOf(main, all string) changedigest.TextPrint {
	mw := wordsOf(main)
	if all == "" || all == main {
		return printWords(mw, mw)
	}
	return printWords(mw, wordsOf(all))
}

// printWords is printOf of texts already split into words.
func printWords(main, all []string) changedigest.TextPrint {
	p := changedigest.TextPrint{Version: printVersion, MainWords: len(main), MainHash: simhashWords(main)}
	if len(all) == len(main) {
		p.AllWords, p.AllHash = p.MainWords, p.MainHash // all the text is main text
	} else {
		p.AllWords, p.AllHash = len(all), simhashWords(all)
	}
	return p
}

func segmentText(s *changedigest.Snapshot) string {
	if s == nil {
		return ""
	}
	var sb strings.Builder
	for _, sg := range s.Segments {
		sb.WriteString(sg.Text)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// ---------------------------------------------------------------- generated values

func markGenerated(changes []changedigest.Change) {
	for i := range changes {
		c := &changes[i]
		if c.Noise != "" || c.Op != changedigest.OpUpdate || c.Type == changedigest.ChangeContent {
			continue
		}
		if generatedOnly(c.OldText, c.NewText) {
			c.Noise = NoiseGenerated
		}
	}
}

// markup is a change text split into what it is made of: an optional tag
// name, attributes in order and the text after the start tag (a script or
// style source).
type markup struct {
	tag   string
	attrs []attr
	body  string
}

type attr struct{ name, value string }

var attrRE = lazyregexp.New(`^\s*([^\s="'<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?`)

// parseMarkup reads `<tag a="b" ...>body` or `a="b" c="d"`; ok is false
// for anything else (a text).
func parseMarkup(s string) (m markup, ok bool) {
	rest := s
	inTag := false
	if strings.HasPrefix(rest, "<") {
		end := strings.IndexAny(rest[1:], " \t\n>")
		if end < 0 {
			return m, false
		}
		m.tag = strings.ToLower(rest[1 : 1+end])
		rest = rest[1+end:]
		inTag = true
	}
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			return m, true // a text cut before its start tag ends
		}
		if inTag && (strings.HasPrefix(rest, ">") || strings.HasPrefix(rest, "/>")) {
			m.body = strings.TrimPrefix(strings.TrimPrefix(rest, "/"), ">")
			return m, true
		}
		sm := attrRE.FindStringSubmatch(rest)
		if sm == nil {
			return m, false
		}
		m.attrs = append(m.attrs, attr{strings.ToLower(sm[1]), sm[2] + sm[3] + sm[4]})
		rest = rest[len(sm[0]):]
	}
}

// generatedOnly reports whether old and new (texts of a non-content
// update) differ only in generated values.
func generatedOnly(old, new string) bool {
	if old == new {
		return false
	}
	om, ok1 := parseMarkup(old)
	nm, ok2 := parseMarkup(new)
	if (!ok1 || !ok2) && strings.HasPrefix(old, "<script") && strings.HasPrefix(new, "<script") {
		// a script whose attribute holds code with quotes of its own
		// (data-source="return typeof x === "function"") cannot be read
		// attribute by attribute; in a script's tag and text alike,
		// numbers and generated tokens are not changes
		return sameTokensBut(old, new, numberOrRandom)
	}
	if !ok1 || !ok2 || om.tag != nm.tag || len(om.attrs) != len(nm.attrs) {
		return false
	}
	for i := range om.attrs {
		a, b := om.attrs[i], nm.attrs[i]
		if a.name != b.name {
			return false
		}
		if a.value != b.value && !generatedValue(om.tag, a.name, a.value, b.value) {
			return false
		}
	}
	if om.body != nm.body {
		return sameTokensBut(om.body, nm.body, numberOrRandom)
	}
	return true
}

// linkAttrs hold addresses.
var linkAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "srcset": true, "data-src": true, "data-srcset": true,
	"poster": true, "formaction": true, "data": true, "xlink:href": true, "imagesrcset": true,
}

// resourceTags load what their address names rather than lead to it.
var resourceTags = map[string]bool{
	"script": true, "link": true, "img": true, "source": true, "iframe": true, "video": true,
	"audio": true, "embed": true, "object": true, "track": true, "input": true, "image": true, "use": true,
}

func generatedValue(tag, name, old, new string) bool {
	switch {
	case name == "nonce" || name == "integrity" || name == "data-nonce" || name == "csp-nonce":
		return true
	case linkAttrs[name]:
		if name == "srcset" || name == "data-srcset" || name == "imagesrcset" {
			return sameTokensBut(old, new, func(a, b string) bool { return random(a) && random(b) || numeric(a) && numeric(b) && len(a) >= 8 })
		}
		return generatedURL(tag, name, old, new)
	case name == "class":
		return sameTokensBut(old, new, func(a, b string) bool { return random(a) && random(b) })
	case name == "style":
		return sameTokensBut(old, new, func(a, b string) bool { return random(a) && random(b) })
	default:
		return sameTokensBut(old, new, numberOrRandom)
	}
}

// assetExt are file extensions of addresses that are loaded, not visited.
var assetExt = map[string]bool{
	".js": true, ".mjs": true, ".css": true, ".png": true, ".jpg": true, ".jpeg": true, ".gif": true,
	".svg": true, ".webp": true, ".avif": true, ".ico": true, ".woff": true, ".woff2": true, ".ttf": true,
	".eot": true, ".otf": true, ".json": true, ".map": true, ".gzip": true, ".gz": true,
}

// volatileParams are query parameters that carry sessions, tracking or time.
func volatileParam(k string) bool {
	k = strings.ToLower(k)
	switch k {
	case "v", "ver", "version", "_", "t", "ts", "time", "timestamp", "cb", "cachebuster", "cache", "rand", "rnd",
		"r", "nonce", "sid", "session", "sessionid", "phpsessid", "jsessionid", "token", "csrf", "_csrf",
		"fbclid", "gclid", "mc_cid", "mc_eid", "hash", "h", "rev", "build", "trk", "ref_src", "_ga", "_gl",
		"igshid", "mkt_tok", "msclkid", "yclid", "spm", "si":
		return true
	}
	return strings.HasPrefix(k, "utm_")
}

func generatedURL(tag, name, old, new string) bool {
	ou, err1 := url.Parse(strings.TrimSpace(old))
	nu, err2 := url.Parse(strings.TrimSpace(new))
	if err1 != nil || err2 != nil || ou.Scheme != nu.Scheme || ou.Host != nu.Host || ou.Opaque != nu.Opaque {
		return false
	}
	resource := resourceTags[tag] || name != "href" && name != "action" && name != "formaction" ||
		assetExt[strings.ToLower(path.Ext(nu.Path))]
	if ou.Path != nu.Path && !sameTokensBut(ou.Path, nu.Path, func(a, b string) bool { return random(a) && random(b) }) &&
		!(resource && assetBase(ou.Path) == assetBase(nu.Path)) {
		// A link to another address, or another file loaded.
		return false
	}
	if ou.RawQuery == nu.RawQuery && ou.Fragment == nu.Fragment {
		return true
	}
	if ou.Fragment != nu.Fragment && !sameTokensBut(ou.Fragment, nu.Fragment, numberOrRandom) {
		return false
	}
	if ou.RawQuery == nu.RawQuery {
		return true
	}
	if !strings.Contains(ou.RawQuery+nu.RawQuery, "=") {
		// A bare query ("?1700674753"): a cache buster when only numbers
		// or generated tokens differ.
		return ou.RawQuery != "" && nu.RawQuery != "" && sameTokensBut(ou.RawQuery, nu.RawQuery, numberOrRandom)
	}
	oq, _ := url.ParseQuery(ou.RawQuery)
	nq, _ := url.ParseQuery(nu.RawQuery)
	for k := range union(oq, nq) {
		ov, nv := strings.Join(oq[k], " "), strings.Join(nq[k], " ")
		_, inOld := oq[k]
		_, inNew := nq[k]
		switch {
		case ov == nv && inOld == inNew:
			continue
		case inOld != inNew:
			// A parameter added or removed: only session, tracking and
			// time parameters of a link, never of a file loaded (a query
			// added to a script is another request).
			if resource || !volatileParam(k) {
				return false
			}
		case resource || volatileParam(k):
			// A cache buster or a session: numbers and generated tokens.
			if !sameTokensBut(ov, nv, numberOrRandom) {
				return false
			}
		default:
			// Another parameter of a link: only generated tokens.
			if !sameTokensBut(ov, nv, func(a, b string) bool { return random(a) && random(b) }) {
				return false
			}
		}
	}
	return true
}

// assetBase is a loaded file's address as the build that made it does
// not change it: generated tokens (content hashes) masked and the
// compression suffix (.gz, .gzip, .br) removed, so that
// "app-3f2a…9c.js.gzip" and "app-77b1…e0.js" are the same file.
func assetBase(p string) string {
	for _, ext := range []string{".gzip", ".gz", ".br"} {
		p = strings.TrimSuffix(p, ext)
	}
	if ext := path.Ext(p); ext != "" {
		// "app.DKIAYdjR.js": the content hash a bundler puts between the
		// name and the extension, of any letters
		stem := p[:len(p)-len(ext)]
		if i := strings.LastIndexByte(stem, '.'); i >= 0 && i > strings.LastIndexByte(stem, '/') && bundleHash(stem[i+1:]) {
			p = stem[:i+1] + "#" + ext
		}
	}
	var sb strings.Builder
	for _, t := range tokens(p) {
		if random(t) {
			t = "#"
		}
		sb.WriteString(t)
	}
	return sb.String()
}

// bundleHash reports whether s looks like the content hash a bundler
// names files with: 6 to 16 letters, digits, '_' or '-' (base64url),
// mixing at least two of lower case, upper case and digits.
func bundleHash(s string) bool {
	if len(s) < 6 || len(s) > 16 {
		return false
	}
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case r == '_' || r == '-':
		default:
			return false
		}
	}
	return lower && upper || lower && digit || upper && digit
}

func union(a, b url.Values) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// tokens splits s into runs of letters and digits and single other
// characters (spaces collapsed to one).
func tokens(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		if alnum {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
		if unicode.IsSpace(r) {
			if len(out) > 0 && out[len(out)-1] == " " {
				continue
			}
			out = append(out, " ")
			continue
		}
		out = append(out, string(r))
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

var uuidRE = lazyregexp.New(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)

// sameTokensBut reports whether a and b differ, token by token, only in
// pairs that gen accepts. Runs that differ in length are aligned by their
// common prefix and suffix; what is left must be one token each side.
func sameTokensBut(a, b string, gen func(x, y string) bool) bool {
	// A UUID is generated whatever its parts look like.
	a, b = uuidRE.ReplaceAllString(a, "\x00uuid"), uuidRE.ReplaceAllString(b, "\x00uuid")
	ta, tb := tokens(a), tokens(b)
	p, q := textdiff.Affixes(ta, tb)
	ma, mb := ta[p:len(ta)-q], tb[p:len(tb)-q]
	if len(ma) != len(mb) {
		return false
	}
	for i := range ma {
		if ma[i] == mb[i] {
			continue
		}
		if !gen(ma[i], mb[i]) {
			return false
		}
	}
	return true
}

func numberOrRandom(a, b string) bool {
	return numeric(a) && numeric(b) || random(a) && random(b)
}

func numeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// random reports whether a token looks generated rather than written: a
// long number (a timestamp or id), a long hex run with letters and
// digits, or a mixed run whose character classes (lower, upper, digit)
// alternate often, as in base64, hashed class names and session ids.
func random(s string) bool {
	n := len(s)
	if n < 5 {
		return false
	}
	if numeric(s) {
		return n >= 9
	}
	hex, digits, letters := true, 0, 0
	changes := 0 // between character classes
	prev := -1
	for _, r := range s {
		cls := 0
		switch {
		case r >= '0' && r <= '9':
			digits++
			cls = 1
		case r >= 'a' && r <= 'z':
			letters++
			cls = 2
		case r >= 'A' && r <= 'Z':
			letters++
			cls = 3
		default:
			return false
		}
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			hex = false
		}
		if prev >= 0 && cls != prev {
			changes++
		}
		prev = cls
	}
	if hex && n >= 8 && digits > 0 && letters > 0 {
		return true
	}
	return changes >= 3 && digits > 0 || changes >= 4 && n >= 6
}

// ---------------------------------------------------------------- repeated edits

// markRepeated marks every non-content update after the first that makes
// the same edit (the same tag, attributes and removed and added tokens,
// digits aside) as an earlier one, and every structural insert or delete
// of markup alone (a start tag, the text around it unchanged) after the
// first of the same element, digits aside: a table column's cell
// removed from every row (or moved: a move of markup alone shows start
// tags).
func markRepeated(changes []changedigest.Change) {
	first := map[string]int{}
	count := map[string]int{}
	keys := make([]string, len(changes))
	for i := range changes {
		c := &changes[i]
		if c.Noise != "" || c.Type == changedigest.ChangeContent {
			continue
		}
		var k string
		switch c.Op {
		case changedigest.OpUpdate:
			k = editKey(c)
		case changedigest.OpInsert, changedigest.OpDelete, changedigest.OpMove:
			if c.Type == changedigest.ChangeStructural {
				k = markupKey(c)
			}
		}
		if k == "" {
			continue
		}
		keys[i] = k
		count[k]++
		if _, ok := first[k]; !ok {
			first[k] = i
		}
	}
	for i, k := range keys {
		if k == "" || first[k] == i || count[k] < 3 {
			continue
		}
		changes[i].Noise = fmt.Sprintf("%s: as at %s (%d places)", NoiseRepeated, changes[first[k]].Path, count[k])
	}
}

// markupKey describes the element a structural insert or delete of
// markup alone adds or removes, digits masked outside link addresses; ""
// when the change shows text.
func markupKey(c *changedigest.Change) string {
	t := c.NewText
	if c.Op == changedigest.OpDelete {
		t = c.OldText
	}
	if !strings.HasPrefix(t, "<") {
		return ""
	}
	m, ok := parseMarkup(t)
	if !ok || m.tag == "" || strings.TrimSpace(m.body) != "" {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s|%s|%s", c.Type, c.Op, m.tag)
	for _, a := range m.attrs {
		fmt.Fprintf(&sb, "|%s=%s", a.name, maskAttr(a.name, a.value))
	}
	return sb.String()
}

// editKey describes what an update changes, digits masked outside link
// addresses, so that the same edit at two places has the same key; "" for
// a text it cannot read. A tag renamed (a theme that turns its
// <div class="section"> into <section>) and attributes added or removed
// are part of the edit; attributes are compared by name. A link within
// the page (href="#id4") is masked too: anchors renumbered after a new
// section are the same edit.
func editKey(c *changedigest.Change) string {
	om, ok1 := parseMarkup(c.OldText)
	nm, ok2 := parseMarkup(c.NewText)
	if !ok1 || !ok2 || om.body != nm.body {
		return ""
	}
	var sb strings.Builder
	sb.WriteString(string(c.Type))
	sb.WriteString("|" + om.tag)
	if nm.tag != om.tag {
		sb.WriteString(">" + nm.tag)
	}
	newVal := make(map[string]string, len(nm.attrs))
	for _, a := range nm.attrs {
		newVal[a.name] = a.value
	}
	oldHas := make(map[string]bool, len(om.attrs))
	for _, a := range om.attrs {
		oldHas[a.name] = true
		nv, ok := newVal[a.name]
		switch {
		case !ok:
			fmt.Fprintf(&sb, "|-%s=%s", a.name, maskAttr(a.name, a.value))
		case nv != a.value:
			del, ins := bagDiff(tokens(maskAttr(a.name, a.value)), tokens(maskAttr(a.name, nv)))
			fmt.Fprintf(&sb, "|%s-%s+%s", a.name, strings.Join(del, " "), strings.Join(ins, " "))
		}
	}
	for _, a := range nm.attrs {
		if !oldHas[a.name] {
			fmt.Fprintf(&sb, "|+%s=%s", a.name, maskAttr(a.name, a.value))
		}
	}
	return sb.String()
}

// maskAttr is an attribute's value with its digits masked, but for a link
// address (other than an anchor in the page): a link to another number is
// another link.
func maskAttr(name, v string) string {
	if !linkAttrs[name] || strings.HasPrefix(v, "#") {
		return maskDigits(v)
	}
	return v
}

// maskDigits turns every run of digits into one '#' (id9 and id10 alike).
func maskDigits(s string) string {
	var sb strings.Builder
	digit := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !digit {
				sb.WriteByte('#')
			}
			digit = true
			continue
		}
		digit = false
		sb.WriteRune(r)
	}
	return sb.String()
}

// bagDiff returns the tokens of a missing from b and of b missing from a,
// spaces left out.
func bagDiff(a, b []string) (del, ins []string) {
	n := map[string]int{}
	for _, t := range a {
		if t != " " {
			n[t]++
		}
	}
	for _, t := range b {
		if t == " " {
			continue
		}
		if n[t] > 0 {
			n[t]--
		} else {
			ins = append(ins, t)
		}
	}
	for _, t := range a {
		if t != " " && n[t] > 0 {
			n[t]--
			del = append(del, t)
		}
	}
	return del, ins
}

// bagDiffSize is len(del)+len(ins) of bagDiff(a, b): the words of
// both, less twice those they have in common.
func bagDiffSize(a, b []string) int {
	la, lb, common := 0, 0, 0
	if len(a) <= 64 && len(b) <= 64 {
		// a few words (most changes): paired without a map
		var used uint64
		for _, t := range a {
			if t != " " {
				la++
			}
		}
		for _, t := range b {
			if t == " " {
				continue
			}
			lb++
			for i, x := range a {
				if used&(1<<i) == 0 && x == t {
					used |= 1 << i
					common++
					break
				}
			}
		}
		return la + lb - 2*common
	}
	// many words: by their hashes, sorted (a map of hundreds of
	// thousands of words costs a cache miss a word); words of the same
	// hash are compared, so that a collision counts nothing in common
	ae, be := bagHashes(a), bagHashes(b)
	la, lb = len(ae), len(be)
	for p, q := 0, 0; p < len(ae) && q < len(be); {
		switch {
		case ae[p].k < be[q].k:
			p++
		case ae[p].k > be[q].k:
			q++
		default:
			pe, qe := p, q
			for pe < len(ae) && ae[pe].k == ae[p].k {
				pe++
			}
			for qe < len(be) && be[qe].k == be[q].k {
				qe++
			}
			common += commonWords(a, b, ae[p:pe], be[q:qe])
			p, q = pe, qe
		}
	}
	return la + lb - 2*common
}

var bagSeed = maphash.MakeSeed()

// bagHashes returns the hashes of the words of ws (spaces left out) with
// their positions, sorted.
func bagHashes(ws []string) []keyEnt {
	out := make([]keyEnt, 0, len(ws))
	for i, t := range ws {
		if t != " " {
			out = append(out, keyEnt{maphash.String(bagSeed, t), int32(i)})
		}
	}
	sortKeyEnts(out)
	return out
}

// commonWords is the size of the intersection of the multisets of words
// of a and b at positions x and y (words of one hash).
func commonWords(a, b []string, x, y []keyEnt) int {
	w := a[x[0].ei]
	same := true
	for _, e := range x {
		same = same && a[e.ei] == w
	}
	for _, e := range y {
		same = same && b[e.ei] == w
	}
	if same {
		return min(len(x), len(y))
	}
	n := map[string]int{}
	for _, e := range x {
		n[a[e.ei]]++
	}
	common := 0
	for _, e := range y {
		if t := b[e.ei]; n[t] > 0 {
			n[t]--
			common++
		}
	}
	return common
}

// ---------------------------------------------------------------- volatile locations

// markVolatile marks changes at locations that changed in most of the
// recent versions (newest first), when the change is a small edit.
func markVolatile(changes []changedigest.Change, recent [][]changedigest.Change) {
	if len(recent) > NoiseVolatileWindow {
		recent = recent[:NoiseVolatileWindow]
	}
	if len(recent) < NoiseVolatileMin {
		return
	}
	seen := map[string]int{}
	for _, cs := range recent {
		at := map[string]bool{}
		for _, c := range cs {
			at[location(c)] = true
		}
		for k := range at {
			seen[k]++
		}
	}
	need := int(math.Ceil(NoiseVolatileShare * float64(len(recent))))
	for i := range changes {
		c := &changes[i]
		n := seen[location(*c)]
		if n < need || !volatileCandidate(*c) {
			continue
		}
		// The version at hand is a check too: "19 of the last 20" counts it.
		c.Noise = fmt.Sprintf("volatile location: changes at %d of the last %d checks", n+1, len(recent)+1)
	}
}

// volatileCandidate reports whether c is marked volatile when its
// location changed at nearly every check: a small edit not yet marked.
func volatileCandidate(c changedigest.Change) bool { return c.Noise == "" && smallEdit(&c) }

// location is where a change happened: its type and path.
func location(c changedigest.Change) string { return string(c.Type) + " " + c.Path }

// smallEdit reports whether a change only edits numbers, dates and
// relative times, only moves words, or is not a content change at all.
func smallEdit(c *changedigest.Change) bool {
	if c.Op == changedigest.OpMove {
		return true // the same words in another order
	}
	if c.Type != changedigest.ChangeContent {
		return c.Op == changedigest.OpUpdate
	}
	if c.Op != changedigest.OpUpdate {
		return false
	}
	del, ins := bagDiff(tokens(strings.ToLower(c.OldText)), tokens(strings.ToLower(c.NewText)))
	if len(del)+len(ins) == 0 || len(del) > 6 || len(ins) > 6 {
		return false
	}
	for _, t := range append(del, ins...) {
		if !timeish(t) {
			return false
		}
	}
	return true
}

// timeWords are the words of dates, times and counters in the languages
// of the test histories.
var timeWords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`ago hour hours hr hrs h minute minutes min mins m second seconds sec secs s
		day days d week weeks month months year years yesterday today now just
		am pm utc gmt est edt cet cest mst mdt pst pdt bst
		jan feb mar apr may jun jul aug sep sept oct nov dec
		january february march april june july august september october november december
		mon tue wed thu fri sat sun monday tuesday wednesday thursday friday saturday sunday
		views view comments comment replies reply likes like shares visits visitors
		hora horas minuto minutos dia dias semana semanas mês meses ano anos há ontem hoje
		stunde stunden minute minuten tag tagen vor gestern heute kommentare kommentar
		il y a heure heures jour jours hier aujourd`) {
		m[w] = true
	}
	return m
})

func timeish(t string) bool {
	if t == " " || len(t) == 1 && !unicode.IsLetter(rune(t[0])) && !unicode.IsDigit(rune(t[0])) {
		return true // punctuation
	}
	if numeric(t) || timeWords()[t] {
		return true
	}
	// 2nd, 3rd, 10am, 5pm, 12h, 30min
	digits := strings.TrimLeftFunc(t, unicode.IsDigit)
	return digits != t && (timeWords()[digits] || digits == "st" || digits == "nd" || digits == "rd" || digits == "th")
}

// ---------------------------------------------------------------- significance

// significance scores a version against the previous one from their
// texts and the changes that are not noise; items is the number of
// segments (feed items) for the share when there is no text.
func significance(o, n changedigest.TextPrint, changes []changedigest.Change, items int) float64 {
	changed, notable, floor := 0.0, 0, 0.0
	for _, c := range changes {
		if c.Noise != "" {
			continue
		}
		notable++
		weight := 1.0
		boiler := boilerPath(c.Path)
		if boiler {
			weight = 0.25 // menus and footers matter less than the page's own text
		}
		if (c.Op == changedigest.OpInsert || c.Op == changedigest.OpDelete) && !boiler &&
			(c.Type == changedigest.ChangeContent && namesDownload(c.OldText+c.NewText)) {
			floor = MediaSignificance // a download (a data set, a report) came or went
		}
		if c.Type != changedigest.ChangeContent {
			if (c.Op == changedigest.OpInsert || c.Op == changedigest.OpDelete) && mediaMarkup(c.OldText+c.NewText) {
				floor = MediaSignificance // an image, a table or a data file came or went
			}
			if c.Op == changedigest.OpUpdate || c.Op == changedigest.OpMove {
				changed += weight // markup edited or moved: one word
				continue
			}
		}
		changed += weight * float64(bagDiffSize(wordsOf(c.OldText), wordsOf(c.NewText)))
	}
	if notable == 0 {
		return 0
	}
	total := max(o.AllWords, n.AllWords)
	var share float64
	switch {
	case total > 0:
		share = changed / float64(total)
	case items > 0:
		share = float64(notable) / float64(items)
	}
	// The simhash reads the main text when there is enough of it (a link
	// list has next to none), else all the text.
	om, nm := o.MainHash, n.MainHash
	if o.MainWords < 50 || n.MainWords < 50 {
		om, nm = o.AllHash, n.AllHash
	}
	dist := min(1, float64(bits.OnesCount64(om^nm))/32)
	s := max(dist*dist, min(1, 2*share), floor)
	s = math.Round(s*1000) / 1000
	if s == 0 {
		s = 0.001 // a change that is not noise is never insignificant to the last digit
	}
	return s
}

// MediaSignificance is the least significance of a version in which an
// image, a video, a table, an embedded object or a link to a data file
// came or went.
const MediaSignificance = 0.2

var mediaRE = lazyregexp.New(`(?i)^\s*<(img|picture|video|audio|iframe|object|embed|table|figure|svg)\b|` +
	`href="[^"]+\.(csv|tsv|xlsx?|ods|json|xml|zip|gz|tar|pdf|docx?|parquet|geojson|shp|kml|sav|dta|rdata)(\?[^"]*)?"`)

// dataText names a download in the text of a link or a list item.
var dataText = lazyregexp.New(`(?i)\b(csv|tsv|xlsx?|json|zip|pdf|geojson|shapefile|kml|dataset|datasets|data set|data sets|download)\b`)

func mediaMarkup(s string) bool {
	// The expression needs a tag at the start or an href: texts with
	// neither are told without running it, which on a long text is slow.
	if !strings.HasPrefix(strings.TrimLeft(s, "\t\n\f\r "), "<") && !hasFoldASCII(s, []string{`href="`}) {
		return false
	}
	return mediaRE.MatchString(s)
}

// namesDownload reports whether dataText matches s. The expression needs
// one of dataWords, in any case: a text with none of them is told without
// running it, which on a long text is slow. (Its case folding also takes
// ſ for s and the Kelvin sign for k, so a text holding either is always
// given to it.)
func namesDownload(s string) bool {
	if !strings.Contains(s, "ſ") && !strings.Contains(s, "K") && !hasFoldASCII(s, dataWords) {
		return false
	}
	return dataText.MatchString(s)
}

// dataWords are parts of the alternatives of dataText, one in each.
var dataWords = []string{"csv", "tsv", "xls", "json", "zip", "pdf", "shapefile", "kml", "data", "download"}

// hasFoldASCII reports whether s holds one of the words (lower-case
// ASCII), ignoring the case of ASCII letters.
func hasFoldASCII(s string, words []string) bool {
	var first [256]bool
	for _, w := range words {
		first[w[0]] = true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if !first[c] {
			continue
		}
		for _, w := range words {
			if w[0] == c && len(s)-i >= len(w) && equalFoldASCII(s[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

// equalFoldASCII reports whether s is w (lower-case ASCII) but for the
// case of ASCII letters.
func equalFoldASCII(s, w string) bool {
	for i := 0; i < len(w); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// boilerPath reports whether a location lies in a menu, a sidebar or a footer.
func boilerPath(p string) bool {
	p = strings.ToLower(p)
	for part := range strings.SplitSeq(p, "|") {
		if strings.HasPrefix(part, "nav") || strings.HasPrefix(part, "footer") || strings.HasPrefix(part, "aside") ||
			strings.Contains(part, "-footer") || strings.Contains(part, "-nav") || strings.Contains(part, "sidebar") {
			return true
		}
	}
	return false
}

// wordsOf returns the lower-cased words (runs of letters and digits) of s.
func wordsOf(s string) []string {
	s = strings.ToLower(s)
	n := 0
	eachWordOf(s, func(string) { n++ })
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	eachWordOf(s, func(w string) { out = append(out, w) })
	return out
}

// eachWordOf calls f with each run of letters and digits of s.
func eachWordOf(s string, f func(string)) {
	start := -1
	for i := 0; i < len(s); {
		c := s[i]
		var word bool
		size := 1
		if c < utf8.RuneSelf {
			word = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			word = unicode.IsLetter(r) || unicode.IsDigit(r)
		}
		if word {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			f(s[start:i])
			start = -1
		}
		i += size
	}
	if start >= 0 {
		f(s[start:])
	}
}

// Simhash returns the 64-bit simhash of a text (Charikar; Manku et al.):
// each word shingle (two words) votes with its FNV-1a hash on every bit.
// Texts that share most shingles differ in few bits.
func Simhash(text string) uint64 { return simhashWords(wordsOf(text)) }

// FNV-1a, 64 bits, written out so that hashing a shingle allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// simhashWords is Simhash of a text already split into words.
func simhashWords(ws []string) uint64 {
	var h simhasher
	for _, w := range ws {
		h.word(w)
	}
	return h.sum()
}

// simhasher computes Simhash word by word, without keeping the words: a
// shingle's FNV-1a hash continues from the state after its first word
// and the space, which is all it keeps of the previous word.
//
// The votes of each bit are counted eight bits at a time: each byte of a
// hash adds its bits spread over the byte lanes of a word, and the lanes
// are emptied into the counts before they can overflow.
type simhasher struct {
	lanes  [8]uint64
	ones   [64]int
	votes  int
	inLane int
	words  int
	prev   uint64 // FNV state after the previous word and " "
	first  uint64 // hash of the first word alone (a one-word text's only vote)
}

// word adds the next word, already lower-cased.
func (h *simhasher) word(w string) {
	h.add(fnvAdd(h.prev, w), fnvAdd(fnvOffset, w))
}

// add adds the next word given as the hash of the shingle it closes (the
// previous word's state continued with it) and its hash alone.
func (h *simhasher) add(shingle, alone uint64) {
	if h.words == 0 {
		h.first = alone
	} else {
		h.vote(shingle)
	}
	h.words++
	h.prev = (alone ^ ' ') * fnvPrime
}

func (h *simhasher) vote(x uint64) {
	for k := range h.lanes {
		h.lanes[k] += spread[byte(x>>(8*k))]
	}
	h.votes++
	if h.inLane++; h.inLane == 255 {
		h.flush()
	}
}

func (h *simhasher) flush() {
	for k, l := range h.lanes {
		for i := range 8 {
			h.ones[8*k+i] += int(byte(l >> (8 * i)))
		}
		h.lanes[k] = 0
	}
	h.inLane = 0
}

// sum is the simhash of the words added so far (0 for none). It ends the
// hasher.
func (h *simhasher) sum() uint64 {
	switch h.words {
	case 0:
		return 0
	case 1:
		h.vote(h.first)
	}
	h.flush()
	var out uint64
	for i, n := range h.ones {
		if 2*n > h.votes { // more ones than zeros
			out |= 1 << i
		}
	}
	return out
}

// textPrinter makes a page's TextPrint from its text blocks in one pass
// over their bytes: the words of every block go to all, those of main
// text blocks to main as well. Words are split and lower-cased as
// wordsOf does.
type textPrinter struct {
	main, all simhasher
}

func (p *textPrinter) text(s string, main bool) {
	for i := 0; i < len(s); {
		if c := s[i]; c >= utf8.RuneSelf {
			if r, n := utf8.DecodeRuneInString(s[i:]); !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				i += n
				continue
			}
		} else if !asciiWord[c] {
			i++
			continue
		}
		// A word: hash it as it is read while it is ASCII.
		start := i
		hm, ha, hw := p.main.prev, p.all.prev, uint64(fnvOffset)
		for i < len(s) && s[i] < utf8.RuneSelf && asciiWord[s[i]] {
			b := s[i]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			hm = (hm ^ uint64(b)) * fnvPrime
			ha = (ha ^ uint64(b)) * fnvPrime
			hw = (hw ^ uint64(b)) * fnvPrime
			i++
		}
		if i < len(s) && s[i] >= utf8.RuneSelf && wordRuneAt(s, i) {
			// Not ASCII throughout: take the whole word the slow way.
			for i < len(s) {
				r, n := utf8.DecodeRuneInString(s[i:])
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				i += n
			}
			for _, w := range wordsOf(s[start:i]) {
				p.word(w, main)
			}
			continue
		}
		if main {
			p.main.add(hm, hw)
		}
		p.all.add(ha, hw)
	}
}

func (p *textPrinter) word(w string, main bool) {
	if main {
		p.main.word(w)
	}
	p.all.word(w)
}

func (p *textPrinter) print() changedigest.TextPrint {
	tp := changedigest.TextPrint{Version: printVersion, MainWords: p.main.words, AllWords: p.all.words}
	tp.MainHash = p.main.sum()
	if p.all.words == p.main.words {
		tp.AllHash = tp.MainHash // all the text is main text
	} else {
		tp.AllHash = p.all.sum()
	}
	return tp
}

// wordRuneAt reports whether the rune at s[i] is a letter or digit.
func wordRuneAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// asciiWord[c] reports whether the ASCII byte c is a letter or digit.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
	}
	return t
}()

// spread[b] holds bit i of b in the low bit of byte i.
var spread = func() (t [256]uint64) {
	for b := range t {
		for i := range 8 {
			t[b] |= uint64(b>>i&1) << (8 * i)
		}
	}
	return t
}()
