package expand

import (
	"slices"
	"strings"
)

// Detachment rules of WordNet's morphy (morph.c), per part of speech: an
// ending and what replaces it.
var detach = map[POS][][2]string{
	Noun:      {{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}},
	Verb:      {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
	Adjective: {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}},
}

// BaseForms returns the lemmas of part of speech pos that word may be a
// form of, as WordNet's morphy finds them: the word itself if it is a
// lemma, then the bases its exception list gives, or else those the
// detachment rules give ("elections" → "election", "ran" → "run" as a
// verb, "geese" → "goose"). Multi-word terms ("general elections", "ran
// away", written with spaces, underscores or hyphens) are looked up whole,
// then with each word reduced to its base, then with only the head reduced
// (the last word of a noun, the first of a verb). Case and spacing are
// folded. No base form gives nil.
func (wn *WordNet) BaseForms(word string, pos POS) []string {
	w := normalize(word)
	if w == "" || !slices.Contains(wordnetPOS, pos) {
		return nil
	}
	var out []string
	add := func(b string) {
		if !slices.Contains(out, b) && wn.t.HasLemma(b, pos) {
			out = append(out, b)
		}
	}
	add(w)
	exc := wn.t.Exceptions(nil, w, pos)
	for _, b := range exc {
		add(b)
	}
	if strings.ContainsAny(w, " -") {
		for _, v := range wn.collocations(w, pos) {
			add(v)
		}
		if strings.Contains(w, "-") {
			for _, b := range wn.BaseForms(strings.ReplaceAll(w, "-", " "), pos) {
				add(b)
			}
		}
		return out
	}
	if len(exc) == 0 {
		for _, b := range wn.detachRules(w, pos) {
			add(b)
		}
	}
	return out
}

var wordnetPOS = []POS{Noun, Verb, Adjective, Adverb}

// detachRules applies morphy's rules once; the results may not be lemmas.
func (wn *WordNet) detachRules(w string, pos POS) []string {
	var out []string
	if pos == Noun {
		// "boxesful" → "boxful"; nouns in "ss" and very short words have
		// no regular forms to undo.
		if stem, ok := strings.CutSuffix(w, "ful"); ok && stem != "" {
			for _, b := range wn.BaseForms(stem, Noun) {
				out = append(out, b+"ful")
			}
			return out
		}
		if strings.HasSuffix(w, "ss") || len(w) <= 2 {
			return nil
		}
	}
	for _, r := range detach[pos] {
		if stem, ok := strings.CutSuffix(w, r[0]); ok && stem != "" {
			out = append(out, stem+r[1])
		}
	}
	return out
}

// firstBase returns the first base form of a single word, or the word.
func (wn *WordNet) firstBase(w string, pos POS) string {
	if b := wn.BaseForms(w, pos); len(b) > 0 {
		return b[0]
	}
	return w
}

// collocations returns candidate lemmas for a multi-word form: every word
// reduced, then only the head reduced.
func (wn *WordNet) collocations(w string, pos POS) []string {
	words, seps := splitWords(w)
	if len(words) < 2 {
		return nil
	}
	all := make([]string, len(words))
	for i, x := range words {
		all[i] = wn.firstBase(x, pos)
	}
	out := []string{joinWords(all, seps)}
	// The head need not be a lemma on its own ("motor vehicles" where
	// "vehicle" is not): try its exceptions and every rule.
	h := len(words) - 1
	if pos == Verb {
		h = 0
	}
	bases := wn.t.Exceptions(nil, words[h], pos)
	if len(bases) == 0 {
		bases = wn.detachRules(words[h], pos)
	}
	for _, b := range bases {
		ws := slices.Clone(words)
		ws[h] = b
		out = append(out, joinWords(ws, seps))
	}
	return out
}

// splitWords splits a normalised form at spaces and hyphens, keeping the
// separators.
func splitWords(w string) (words []string, seps []byte) {
	start := 0
	for i := 0; i < len(w); i++ {
		if w[i] == ' ' || w[i] == '-' {
			words = append(words, w[start:i])
			seps = append(seps, w[i])
			start = i + 1
		}
	}
	return append(words, w[start:]), seps
}

func joinWords(words []string, seps []byte) string {
	var b strings.Builder
	for i, x := range words {
		if i > 0 {
			b.WriteByte(seps[i-1])
		}
		b.WriteString(x)
	}
	return b.String()
}

// irregular returns the forms the exception list of pos gives base
// ("goose" → "geese").
func (wn *WordNet) irregular(base string, pos POS) []string {
	wn.excOnce.Do(func() {
		for i, p := range wordnetPOS {
			m := map[string][]string{}
			wn.t.EachException(p, func(form, base string) {
				m[base] = append(m[base], form)
			})
			wn.revExc[i] = m
		}
	})
	i := slices.Index(wordnetPOS, pos)
	if i < 0 {
		return nil
	}
	return wn.revExc[i][base]
}

// Inflections returns the forms of a lemma in part of speech pos that text
// may use: the lemma, its irregular forms from WordNet's exception lists
// and its regular forms by English spelling rules (plurals of nouns; -s,
// -ed and -ing forms of verbs, with a doubled final consonant after a
// short vowel; comparatives and superlatives of one-word adjectives). A
// multi-word noun inflects its last word, a verb its first. Most regular
// forms are ones morphy's detachment rules take back to the lemma; those
// it knows only from its exception lists (doubled consonants, "jogged";
// -ied and -ier, "tried", "happier") are made by rule here as well, so
// that forms the lists miss still match. Forms that are no English word
// ("gooses" beside "geese") may be among them: they match nothing.
func (wn *WordNet) Inflections(lemma string, pos POS) []string {
	l := normalize(lemma)
	if l == "" {
		return nil
	}
	out := []string{l}
	add := func(f string) {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for _, f := range wn.irregular(l, pos) {
		add(f)
	}
	words, seps := splitWords(l)
	h := len(words) - 1
	if pos == Verb {
		h = 0
	}
	if len(words) > 1 && pos != Noun && pos != Verb {
		return out
	}
	head := words[h]
	forms := wn.irregular(head, pos)
	forms = append(forms, regularForms(head, pos)...)
	for _, f := range forms {
		ws := slices.Clone(words)
		ws[h] = f
		add(joinWords(ws, seps))
	}
	return out
}

// regularForms inflects one word by English spelling rules.
func regularForms(w string, pos POS) []string {
	if len(w) < 2 || !isLowerASCII(w) {
		return nil
	}
	switch pos {
	case Noun:
		out := []string{plural(w)}
		if strings.HasSuffix(w, "o") && !isVowel(w[len(w)-2]) {
			out = append(out, w+"es") // "potatoes" beside "photos"
		}
		if stem, ok := strings.CutSuffix(w, "man"); ok && len(w) > 3 {
			out = append(out, stem+"men")
		}
		return out
	case Verb:
		out := []string{plural(w)}
		if strings.HasSuffix(w, "o") {
			out = []string{w + "es", w + "s"} // "echoes", "goes"
		}
		switch {
		case strings.HasSuffix(w, "ie"):
			out = append(out, w+"d", w[:len(w)-2]+"ying")
		case strings.HasSuffix(w, "ee") || strings.HasSuffix(w, "ye") || strings.HasSuffix(w, "oe"):
			out = append(out, w+"d", w+"ing")
		case strings.HasSuffix(w, "e"):
			out = append(out, w+"d", w[:len(w)-1]+"ing")
		case consonantY(w):
			out = append(out, w[:len(w)-1]+"ied", w+"ing")
		case doubles(w):
			d := w + w[len(w)-1:]
			out = append(out, d+"ed", d+"ing", w+"ed", w+"ing")
		default:
			out = append(out, w+"ed", w+"ing")
		}
		return out
	case Adjective:
		switch {
		case strings.HasSuffix(w, "e"):
			return []string{w + "r", w + "st"}
		case consonantY(w):
			return []string{w[:len(w)-1] + "ier", w[:len(w)-1] + "iest"}
		case doubles(w):
			d := w + w[len(w)-1:]
			return []string{d + "er", d + "est"}
		}
		return []string{w + "er", w + "est"}
	}
	return nil
}

func plural(w string) string {
	switch {
	case strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") ||
		strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh"):
		return w + "es"
	case consonantY(w):
		return w[:len(w)-1] + "ies"
	}
	return w + "s"
}

func isVowel(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

func consonantY(w string) bool {
	n := len(w)
	return n >= 2 && w[n-1] == 'y' && !isVowel(w[n-2])
}

// doubles reports whether w doubles its last consonant before -ed, -ing,
// -er: one syllable ending consonant, single vowel, consonant ("stop",
// "run", "big"), the last not w, x or y.
func doubles(w string) bool {
	n := len(w)
	if n < 3 || isVowel(w[n-1]) || strings.ContainsRune("wxy", rune(w[n-1])) || !isVowel(w[n-2]) || isVowel(w[n-3]) {
		return false
	}
	groups := 0
	for i := 0; i < n; i++ {
		if isVowel(w[i]) && (i == 0 || !isVowel(w[i-1])) {
			groups++
		}
	}
	return groups == 1
}

func isLowerASCII(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
