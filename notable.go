package changedigest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Notable decides whether a change of a stored version is worth telling
// the watch's owner about: the one rule that feeds, digests, e-mail and
// notifications apply. interest says whether the change matched the
// owner's interests (their profile). When it returns false, why says what
// left the change out, for the views ("noise: generated value", "minor
// version: significance 0.02 < 0.10", ...). The track and the API keep
// every change; only the telling is filtered. In order:
//
//   - noise: a change marked noise is not told, unless the watch shows noise;
//   - change types: only the watch's NotifyTypes, or when it lists none
//     DefaultNotifyTypes (the text: what a reader of a page calls a
//     change), and text a reader sees moved to another place (a
//     structural move of words, MovedText); markup, styles and scripts
//     are told when asked for;
//   - minimum significance: not when the version's significance is below
//     the watch's MinSignificance (versions stored before significance was
//     scored, with 0, pass);
//   - ignore text: not when the change only concerns ignored text (with
//     every match of the watch's IgnoreText removed, old and new text are
//     the same);
//   - trigger text: when the watch has TriggerText, only a change in which
//     one of them appears or disappears (its count differs between the old
//     and the new text);
//   - interests: when the watch tells only OnlyInterests, only a change
//     that matched them;
//   - condition: when the watch has a condition (When), only the changes
//     of a version whose value meets it (Condition.Holds), the version's
//     value having been read when it was stored; a version whose value
//     could not be read is not told, and why says so.
func Notable(w *Watch, s *Snapshot, c *Change, interest bool) (ok bool, why string) {
	if c.Noise != "" && (w == nil || !w.ShowNoise) {
		return false, "noise: " + c.Noise
	}
	if w == nil {
		return true, ""
	}
	if !hasType(w.ToldTypes(), c.Type) && !(len(w.NotifyTypes) == 0 && c.MovedText()) {
		if len(w.NotifyTypes) == 0 {
			return false, fmt.Sprintf("%s changes are not told unless the watch asks for them (text changes are)", c.Type)
		}
		return false, fmt.Sprintf("%s changes are not told for this watch", c.Type)
	}
	if w.MinSignificance > 0 && s != nil && s.Significance > 0 && s.Significance < w.MinSignificance {
		return false, fmt.Sprintf("minor version: significance %.3g < %.3g", s.Significance, w.MinSignificance)
	}
	// A content update carries only its changed words; the filters read
	// them with the words around them, so that a pattern such as
	// "/updated \d+ minutes ago/" sees the whole phrase.
	oldText, newText := c.withContext()
	if len(w.IgnoreText) > 0 {
		o, n := oldText, newText
		for _, p := range w.IgnoreText {
			m := compileText(p)
			o, n = m.remove(o), m.remove(n)
		}
		if strings.Join(strings.Fields(o), " ") == strings.Join(strings.Fields(n), " ") {
			return false, "only ignored text changed"
		}
	}
	if len(w.TriggerText) > 0 {
		hit := false
		for _, p := range w.TriggerText {
			m := compileText(p)
			if m.count(oldText) != m.count(newText) {
				hit = true
				break
			}
		}
		if !hit {
			return false, "no trigger text appeared or disappeared"
		}
	}
	if w.OnlyInterests && !interest {
		return false, "does not match your interests"
	}
	if w.When != "" {
		var v *Value
		if s != nil {
			v = s.Value
		}
		if ok, why := w.Condition().Holds(v); !ok {
			return false, "condition " + w.When + ": " + why
		}
	}
	return true, ""
}

// Told applies Notable to every change of version s of watch w, with
// the one rule that reads a version whole: a change of typography only
// (NoiseTypography) is no news alone, but in a version told anyway it is
// part of the text a reader sees, and is told with the rest. interest
// says whether change i matched the owner's interests. It returns, per
// change, whether it is told and, when not, why.
func Told(w *Watch, s *Snapshot, interest func(i int) bool) (told []bool, why []string) {
	told, why = make([]bool, len(s.Changes)), make([]string, len(s.Changes))
	news := false
	for i := range s.Changes {
		told[i], why[i] = Notable(w, s, &s.Changes[i], interest(i))
		news = news || told[i]
	}
	if !news {
		return told, why
	}
	for i, c := range s.Changes {
		if !told[i] && c.Noise == NoiseTypography {
			c.Noise = ""
			told[i], why[i] = Notable(w, s, &c, interest(i))
		}
	}
	return told, why
}

// MovedText reports whether c moves text a reader sees (words, not
// markup alone) to another place of the page: the page reads otherwise,
// though no word of it changed.
func (c *Change) MovedText() bool {
	if c.Type != ChangeStructural && c.Type != ChangeContent || c.Op != OpMove || strings.HasPrefix(c.NewText, "<") {
		return false
	}
	return strings.IndexFunc(c.NewText, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// DefaultNotifyTypes are the change types told for a watch that names
// none: changes of the text a reader sees.
var DefaultNotifyTypes = []ChangeType{ChangeContent}

// ToldTypes returns the change types told for w: its NotifyTypes, or
// DefaultNotifyTypes when it names none.
func (w *Watch) ToldTypes() []ChangeType {
	if len(w.NotifyTypes) > 0 {
		return w.NotifyTypes
	}
	return DefaultNotifyTypes
}

// withContext returns the old and new text of c with the words before
// and after the change, when it has them.
func (c *Change) withContext() (string, string) {
	if c.Before == "" && c.After == "" {
		return c.OldText, c.NewText
	}
	return c.Before + c.OldText + c.After, c.Before + c.NewText + c.After
}

func hasType(ts []ChangeType, t ChangeType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// textPattern is one ignore or trigger text: plain text matched without
// regard to case, or a regular expression written between slashes; re
// matches either.
type textPattern struct {
	plain string // lower-cased, for plain text
	re    *regexp.Regexp
}

func (p *textPattern) remove(s string) string { return p.re.ReplaceAllString(s, " ") }

func (p *textPattern) count(s string) int { return len(p.re.FindAllStringIndex(s, -1)) }

var textPatterns sync.Map // string -> *textPattern

// compileText returns the compiled pattern of a filter text; Validate has
// checked it, so a bad expression (an old record) matches as plain text.
func compileText(s string) *textPattern {
	if p, ok := textPatterns.Load(s); ok {
		return p.(*textPattern)
	}
	p, err := parseTextPattern(s)
	if err != nil {
		p = &textPattern{plain: strings.ToLower(s)}
	}
	if p.re == nil {
		p.re = regexp.MustCompile("(?i)" + regexp.QuoteMeta(p.plain))
	}
	textPatterns.Store(s, p)
	return p
}

func parseTextPattern(s string) (*textPattern, error) {
	if len(s) >= 2 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/") {
		re, err := regexp.Compile(s[1 : len(s)-1])
		if err != nil {
			return nil, err
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("it matches the empty text")
		}
		return &textPattern{re: re}, nil
	}
	return &textPattern{plain: strings.ToLower(s)}, nil
}

// validateFilters checks and normalises the watch's filter fields.
func (w *Watch) validateFilters() error {
	clean := func(field string, in []string) ([]string, error) {
		var out []string
		seen := map[string]bool{}
		for _, s := range in {
			s = strings.TrimSpace(s)
			if s == "" || seen[s] {
				continue
			}
			if len(s) > 512 {
				return nil, Errorf(EINVALID, "%s %q is longer than 512 characters", field, s[:40]+"…")
			}
			if _, err := parseTextPattern(s); err != nil {
				return nil, Errorf(EINVALID, "%s %q is not a valid regular expression: %v", field, s, err)
			}
			seen[s] = true
			out = append(out, s)
		}
		if len(out) > 50 {
			return nil, Errorf(EINVALID, "%s has %d entries (at most 50)", field, len(out))
		}
		return out, nil
	}
	var err error
	if w.IgnoreText, err = clean("ignore text", w.IgnoreText); err != nil {
		return err
	}
	if w.TriggerText, err = clean("trigger text", w.TriggerText); err != nil {
		return err
	}
	if w.MinSignificance < 0 || w.MinSignificance > 1 || w.MinSignificance != w.MinSignificance {
		return Errorf(EINVALID, "minimum significance %g is not between 0 and 1", w.MinSignificance)
	}
	var types []ChangeType
	for _, t := range w.NotifyTypes {
		ct, err := ParseChangeType(strings.ToLower(strings.TrimSpace(string(t))))
		if err != nil {
			return err
		}
		if !hasType(types, ct) {
			types = append(types, ct)
		}
	}
	w.NotifyTypes = types
	w.ValueSelector = strings.TrimSpace(w.ValueSelector)
	if len(w.ValueSelector) > 1024 {
		return Errorf(EINVALID, "value selector is longer than 1024 characters")
	}
	c, err := ParseCondition(w.When)
	if err != nil {
		return err
	}
	w.When = c.String()
	return nil
}
