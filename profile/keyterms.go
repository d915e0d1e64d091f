package profile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
)

//go:generate go run gen_glossfreq.go -dict /usr/share/wordnet -o glossfreq.txt.gz

// glossFreq holds, for each word, the number of WordNet 3.0 glosses it
// occurs in (words in one gloss only are left out). See
// gen_glossfreq.go and WORDNET-LICENSE.
//
//go:embed glossfreq.txt.gz
var glossFreq []byte

// background is the decoded glossFreq.
type background struct {
	docs float64
	df   map[string]int32
}

var loadBackground = sync.OnceValue(func() *background {
	bg := &background{docs: 1, df: make(map[string]int32, 40000)}
	zr, err := gzip.NewReader(bytes.NewReader(glossFreq))
	if err != nil {
		panic("profile: embedded glossfreq.txt.gz is corrupt: " + err.Error())
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		w, n, ok := strings.Cut(line, "\t")
		v, err := strconv.Atoi(n)
		if !ok || err != nil {
			panic("profile: embedded glossfreq.txt.gz has a bad line: " + line)
		}
		if w == "glosses" {
			bg.docs = float64(v)
			continue
		}
		bg.df[w] = int32(v)
	}
	if err := sc.Err(); err != nil {
		panic("profile: embedded glossfreq.txt.gz is corrupt: " + err.Error())
	}
	return bg
})

// idf is the inverse document frequency of a word against the glosses;
// a word absent from them counts as found in one.
func (bg *background) idf(w string) float64 {
	df := float64(bg.df[w])
	if df < 1 {
		df = 1
	}
	return math.Log((bg.docs + 1) / (df + 1))
}

// Weights of key terms: between minPageWeight and maxPageWeight, by score.
const (
	minPageWeight = 0.3
	maxPageWeight = 0.9
)

// KeyTerms returns up to n key terms of the texts (the main text of the
// pages a profile links), best first, as interests with Source
// changedigest.SourcePage and a Weight from 0.3 to 0.9 that follows the
// score; their URI is empty.
//
// Words are lower-cased runs of letters and digits; stop words (English
// function words and the boilerplate of web pages), words of fewer than
// three characters and numbers are dropped, and a plural is folded onto
// its singular when the singular occurs in the texts or is a word the
// glosses know ("bees": bee, but "physics" stays). A word scores (1 + ln tf) · idf · (1 + ln df),
// where tf counts it in all texts, df is the number of texts holding it
// and idf = ln((N+1)/(g+1)) weighs it against the g of the N WordNet 3.0
// glosses that use it: words common in general English score low, words
// of the page's subject high. In texts of 100 words or more a word must
// occur twice. Two adjacent words (no stop word or punctuation between)
// that occur together at least twice form a phrase, scored like a word
// with the mean idf of its words and a bonus of 1.5; the occurrences
// inside a chosen phrase no longer count for its words alone.
func KeyTerms(texts []string, n int) []changedigest.Interest {
	if n <= 0 {
		return nil
	}
	bg := loadBackground()
	type stat struct {
		tf    int
		texts int
		last  int // index+1 of the last text counted in texts
	}
	uni := map[string]*stat{}
	bi := map[[2]string]*stat{}
	total := 0
	var runs [][]string
	for ti, text := range texts {
		runs = runs[:0]
		runs = contentRuns(text, runs)
		for _, run := range runs {
			for i, w := range run {
				total++
				s := uni[w]
				if s == nil {
					s = &stat{}
					uni[w] = s
				}
				s.tf++
				if s.last != ti+1 {
					s.texts++
					s.last = ti + 1
				}
				if i > 0 && run[i-1] != w {
					k := [2]string{run[i-1], w}
					b := bi[k]
					if b == nil {
						b = &stat{}
						bi[k] = b
					}
					b.tf++
					if b.last != ti+1 {
						b.texts++
						b.last = ti + 1
					}
				}
			}
		}
	}
	if total == 0 {
		return nil
	}
	words := make([]string, 0, len(uni))
	for w := range uni {
		words = append(words, w)
	}
	fold := pluralFolds(func(w string) bool { return uni[w] != nil }, words, bg)
	if len(fold) > 0 {
		for pl, sg := range fold {
			s, p := uni[sg], uni[pl]
			if s == nil {
				s = &stat{}
				uni[sg] = s
			}
			s.tf += p.tf
			s.texts = max(s.texts, p.texts)
			delete(uni, pl)
		}
		folded := make(map[[2]string]*stat, len(bi))
		for k, b := range bi {
			for j := range k {
				if sg, ok := fold[k[j]]; ok {
					k[j] = sg
				}
			}
			if f := folded[k]; f != nil {
				f.tf += b.tf
				f.texts = max(f.texts, b.texts)
			} else {
				folded[k] = b
			}
		}
		bi = folded
	}

	type candidate struct {
		term  string
		score float64
		words [2]string // for phrases
	}
	score := func(tf, texts int, idf float64) float64 {
		return (1 + math.Log(float64(tf))) * idf * (1 + math.Log(float64(texts)))
	}
	var phrases []candidate
	for k, b := range bi {
		if b.tf < 2 {
			continue
		}
		idf := (bg.idf(k[0]) + bg.idf(k[1])) / 2
		phrases = append(phrases, candidate{term: k[0] + " " + k[1], score: 1.5 * score(b.tf, b.texts, idf), words: k})
	}
	sortCandidates := func(cs []candidate) {
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].score != cs[j].score {
				return cs[i].score > cs[j].score
			}
			return cs[i].term < cs[j].term
		})
	}
	sortCandidates(phrases)
	if len(phrases) > n {
		phrases = phrases[:n]
	}
	// Occurrences inside a chosen phrase no longer count for its words.
	for _, p := range phrases {
		c := bi[p.words].tf
		for _, w := range p.words {
			if s := uni[w]; s != nil {
				s.tf -= c
			}
		}
	}
	minTF := 1
	if total >= 100 {
		minTF = 2
	}
	cands := phrases
	for w, s := range uni {
		if s.tf < minTF || s.tf <= 0 {
			continue
		}
		cands = append(cands, candidate{term: w, score: score(s.tf, s.texts, bg.idf(w))})
	}
	sortCandidates(cands)
	if len(cands) > n {
		cands = cands[:n]
	}
	if len(cands) == 0 {
		return nil
	}
	top := cands[0].score
	out := make([]changedigest.Interest, len(cands))
	for i, c := range cands {
		w := minPageWeight
		if top > 0 {
			w += (maxPageWeight - minPageWeight) * c.score / top
		}
		out[i] = changedigest.Interest{Term: c.term, Source: changedigest.SourcePage, Weight: math.Round(w*100) / 100}
	}
	return out
}

// contentRuns splits text into runs of adjacent content words: stop words,
// short words, numbers and punctuation other than hyphens and apostrophes
// inside words end a run.
func contentRuns(text string, runs [][]string) [][]string {
	var run []string
	flush := func() {
		if len(run) > 0 {
			runs = append(runs, run)
			run = nil
		}
	}
	i := 0
	for i < len(text) {
		// Find the next word: a run of letters and digits.
		start := -1
		brk := false
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				start = i
				break
			}
			if !unicode.IsSpace(r) && r != '-' && r != '\'' && r != '’' {
				brk = true
			}
			i += size
		}
		if brk {
			flush()
		}
		if start < 0 {
			break
		}
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			i += size
		}
		w := strings.ToLower(text[start:i])
		if !isContentWord(w) {
			flush()
			continue
		}
		run = append(run, w)
	}
	flush()
	return runs
}

// isContentWord reports whether a lower-case word may be a key term.
func isContentWord(w string) bool {
	if len(w) < 3 || utf8.RuneCountInString(w) < 3 || stopWords()[w] {
		return false
	}
	letters, digits := 0, 0
	for _, r := range w {
		if unicode.IsDigit(r) {
			digits++
		} else {
			letters++
		}
	}
	return letters > digits
}

// pluralFolds maps plural words of the texts to their singular: a
// candidate singular ("networks": network; "technologies": technology;
// "boxes", "churches": box, church) is taken when it occurs in the texts
// too, or when the glosses know it and do not use the plural far more
// (so "physics" stays, the glosses using "physic" rarely). A word the
// glosses do not know loses a final s after a consonant ("parsers").
func pluralFolds(inText func(string) bool, words []string, bg *background) map[string]string {
	fold := map[string]string{}
	for _, w := range words {
		n := len(w)
		if n < 4 || w[n-1] != 's' || strings.HasSuffix(w, "ss") ||
			strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is") {
			continue
		}
		var sg []string
		if strings.HasSuffix(w, "ies") {
			sg = append(sg, w[:n-3]+"y")
		}
		sg = append(sg, w[:n-1])
		if stem := w[:n-2]; strings.HasSuffix(w, "es") && (strings.HasSuffix(stem, "s") || strings.HasSuffix(stem, "x") ||
			strings.HasSuffix(stem, "z") || strings.HasSuffix(stem, "ch") || strings.HasSuffix(stem, "sh") || strings.HasSuffix(stem, "o")) {
			sg = append(sg, stem)
		}
		for _, s := range sg {
			if len(s) < 3 || stopWords()[s] {
				continue
			}
			if inText(s) || (bg.df[s] > 0 && bg.df[w] <= 4*bg.df[s]) {
				fold[w] = s
				break
			}
		}
		if _, ok := fold[w]; !ok && bg.df[w] == 0 && bg.df[w[:n-1]] == 0 && !strings.ContainsRune("aeiousy", rune(w[n-2])) {
			fold[w] = w[:n-1]
		}
	}
	return fold
}
