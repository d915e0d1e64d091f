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
// manual interests, its Excluded terms (applied to fresh's interests), the
// senses chosen by hand (Senses) and its UserID; and the page of an
// interest (About) that was read before and could not be read now. fresh
// is changed and returned; old may be nil.
func Merge(old, fresh *changedigest.Profile) *changedigest.Profile {
	if old == nil {
		return fresh
	}
	fresh.UserID = old.UserID
	fresh.Excluded = slices.Clone(old.Excluded)
	fresh.Senses = slices.Clone(old.Senses)
	about := map[string]*changedigest.About{}
	for _, in := range old.Interests {
		if in.About != nil && in.URI != "" {
			about[in.URI] = in.About
		}
	}
	for i, in := range fresh.Interests {
		if in.About == nil && about[in.URI] != nil {
			fresh.Interests[i].About = about[in.URI]
		}
	}
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

// ChooseSense records that the user means synset (a WordNet 3.0 ID such
// as "n07062697") by term, replacing an earlier choice for the term; an
// empty synset forgets the choice, so that the sense is chosen again
// automatically. The choice is kept across rebuilds of the profile (see
// Merge).
//
// Errors: a term as AddInterest's; a term that is not one of the
// profile's interests, or a synset that is not a letter n, v, a, s or r
// and eight digits, gives EINVALID (ErrTerm, ErrSense). Whether the
// synset is a sense of the term is the caller's to check.
func ChooseSense(p *changedigest.Profile, term, synset string) error {
	t, err := checkTerm(term)
	if err != nil {
		return err
	}
	key := termKey(t)
	if !slices.ContainsFunc(p.Interests, func(in changedigest.Interest) bool { return termKey(in.Term) == key }) {
		return invalid(ErrTerm, "%q is not one of your interests", t)
	}
	synset = strings.TrimSpace(synset)
	if synset != "" && !validSynsetID(synset) {
		return invalid(ErrSense, "%q is not a WordNet sense (want a part of speech letter and eight digits, such as n07062697)", abbreviate(synset, 30))
	}
	p.Senses = slices.DeleteFunc(p.Senses, func(c changedigest.SenseChoice) bool { return termKey(c.Term) == key })
	if synset != "" {
		p.Senses = append(p.Senses, changedigest.SenseChoice{Term: t, Synset: synset})
	}
	return nil
}

// validSynsetID reports whether s looks like "n07062697".
func validSynsetID(s string) bool {
	if len(s) != 9 || !strings.ContainsRune("nvasr", rune(s[0])) {
		return false
	}
	for i := 1; i < 9; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
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
