package profile

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

// MaxTermLength is the longest term a user may add by hand, in characters.
const MaxTermLength = 100

// AddInterest adds a term the user typed (Source changedigest.SourceManual,
// weight 1) and takes it off the profile's Excluded list. A term the
// profile already has becomes a manual one, so a rebuild keeps it.
// Terms are trimmed and their white space collapsed; the comparison
// with existing terms ignores case.
//
// Errors: an empty term, one longer than MaxTermLength or one holding
// control characters gives EINVALID (ErrTerm); a term past MaxInterests
// gives EINVALID (ErrTooMany).
func AddInterest(p *changedigest.Profile, term string) error {
	t, err := checkTerm(term)
	if err != nil {
		return err
	}
	key := termKey(t)
	p.Excluded = slices.DeleteFunc(p.Excluded, func(x string) bool { return termKey(x) == key })
	for i, in := range p.Interests {
		if termKey(in.Term) == key {
			p.Interests[i].Source, p.Interests[i].Weight = changedigest.SourceManual, 1
			return nil
		}
	}
	if len(p.Interests) >= MaxInterests {
		return invalid(ErrTooMany, "the profile holds %d interests, the most it may: remove one before adding %q", len(p.Interests), t)
	}
	p.Interests = append(p.Interests, changedigest.Interest{Term: t, Source: changedigest.SourceManual, Weight: 1})
	return nil
}

// RemoveInterest removes every interest with the term (ignoring case) and
// records the term in Excluded, so that rebuilding the profile from the
// FOAF document or the linked pages does not bring it back. It reports
// whether the profile held the term; a term it did not hold is excluded
// all the same.
//
// Errors: as AddInterest's.
func RemoveInterest(p *changedigest.Profile, term string) (bool, error) {
	t, err := checkTerm(term)
	if err != nil {
		return false, err
	}
	key := termKey(t)
	n := len(p.Interests)
	p.Interests = slices.DeleteFunc(p.Interests, func(in changedigest.Interest) bool { return termKey(in.Term) == key })
	if !slices.ContainsFunc(p.Excluded, func(x string) bool { return termKey(x) == key }) {
		// The oldest exclusions are forgotten past MaxInterests.
		p.Excluded = append(p.Excluded[max(0, len(p.Excluded)+1-MaxInterests):], t)
	}
	return len(p.Interests) < n, nil
}

// Merge returns the profile built from a re-uploaded FOAF document
// (fresh) carrying over what the user did by hand to the old one: its
// manual interests, its Excluded terms (applied to fresh's interests) and
// its UserID. fresh is changed and returned; old may be nil.
func Merge(old, fresh *changedigest.Profile) *changedigest.Profile {
	if old == nil {
		return fresh
	}
	fresh.UserID = old.UserID
	fresh.Excluded = slices.Clone(old.Excluded)
	excluded := map[string]bool{}
	for _, x := range fresh.Excluded {
		excluded[termKey(x)] = true
	}
	manual := map[string]bool{}
	var keep []changedigest.Interest
	for _, in := range old.Interests {
		if in.Source == changedigest.SourceManual {
			manual[termKey(in.Term)] = true
			keep = append(keep, in)
		}
	}
	out := make([]changedigest.Interest, 0, len(fresh.Interests)+len(keep))
	for _, in := range fresh.Interests {
		k := termKey(in.Term)
		if excluded[k] || manual[k] {
			continue
		}
		out = append(out, in)
	}
	fresh.Interests = append(out, keep...)
	return fresh
}

// Exclude drops the profile's Excluded terms from its interests; Merge
// does this, and callers that build a profile otherwise may call it.
func Exclude(p *changedigest.Profile) {
	if len(p.Excluded) == 0 {
		return
	}
	excluded := map[string]bool{}
	for _, x := range p.Excluded {
		excluded[termKey(x)] = true
	}
	p.Interests = slices.DeleteFunc(p.Interests, func(in changedigest.Interest) bool {
		return in.Source != changedigest.SourceManual && excluded[termKey(in.Term)]
	})
}

// checkTerm validates and tidies a term typed by a user.
func checkTerm(term string) (string, error) {
	t := strings.Join(strings.Fields(term), " ")
	switch {
	case t == "":
		return "", invalid(ErrTerm, "an interest term must not be empty")
	case !utf8.ValidString(t):
		return "", invalid(ErrTerm, "interest term %q is not valid UTF-8", t)
	case utf8.RuneCountInString(t) > MaxTermLength:
		return "", invalid(ErrTerm, "interest term %q is longer than %d characters", abbreviate(t, 30), MaxTermLength)
	case strings.IndexFunc(t, unicode.IsControl) >= 0:
		return "", invalid(ErrTerm, "interest term %q holds control characters", t)
	}
	return t, nil
}
