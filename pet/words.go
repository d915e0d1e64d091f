package pet

import (
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

// The index's words: Bleve's English analyzer ("en": the Unicode word
// tokenizer, possessives, lower case, English stop words, Porter's
// stemmer) with a tokenizer that gives the same tokens faster, and the
// stems of words already seen remembered. Bleve's
// tokenizer runs a Unicode word-boundary automaton over every byte, a
// tenth of the CPU of a first check in the service; wordTokenizer reads
// runs of ASCII itself and gives the automaton only the runs that are not.
const (
	wordsAnalyzer  = "changedigest_en"
	wordsTokenizer = "changedigest_words"
)

func init() {
	registry.RegisterTokenizer(wordsTokenizer, func(map[string]any, *registry.Cache) (analysis.Tokenizer, error) {
		return &wordTokenizer{unicode: unicode.NewUnicodeTokenizer()}, nil
	})
	registry.RegisterAnalyzer(wordsAnalyzer, func(config map[string]any, cache *registry.Cache) (analysis.Analyzer, error) {
		tok, err := cache.TokenizerNamed(wordsTokenizer)
		if err != nil {
			return nil, err
		}
		a := &analysis.DefaultAnalyzer{Tokenizer: tok}
		for _, name := range []string{en.PossessiveName, lowercase.Name, en.StopName, porter.Name} {
			f, err := cache.TokenFilterNamed(name)
			if err != nil {
				return nil, err
			}
			if name == porter.Name {
				f = &stemCache{stemmer: f, stems: map[string][]byte{}}
			}
			a.TokenFilters = append(a.TokenFilters, f)
		}
		return a, nil
	})
}

// wordTokenizer gives the tokens of Bleve's unicode tokenizer. Text is
// cut at ASCII whitespace, which no word rule joins across; a run of
// ASCII is read by asciiWord, any other run by the Unicode tokenizer
// (a text that is not UTF-8 wholly by the Unicode tokenizer).
type wordTokenizer struct {
	unicode analysis.Tokenizer
}

// wordClass is the word-boundary class of an ASCII byte, as Bleve's
// automaton (Unicode 8.0's WordBreakProperty) has it.
type wordClass uint8

const (
	wOther     wordClass = iota
	wSpace               // ASCII whitespace: never inside a token
	wLetter              // ALetter
	wDigit               // Numeric
	wJoin                // ExtendNumLet ('_'): joins anything
	wMidLetter           // MidLetter (':'): between two letters
	wMidNum              // MidNum (',' ';'): between two digits
	wMidBoth             // MidNumLet ('.') and Single_Quote ('\''): between two letters or two digits
)

var wordClasses = func() (c [128]wordClass) {
	for b := 'a'; b <= 'z'; b++ {
		c[b], c[b-'a'+'A'] = wLetter, wLetter
	}
	for b := '0'; b <= '9'; b++ {
		c[b] = wDigit
	}
	for _, b := range "\t\n\v\f\r " {
		c[b] = wSpace
	}
	c['_'], c[':'], c[','], c[';'], c['.'], c['\''] = wJoin, wMidLetter, wMidNum, wMidNum, wMidBoth, wMidBoth
	return c
}()

func (t *wordTokenizer) Tokenize(input []byte) analysis.TokenStream {
	// About a token per six bytes of text (a word and a space).
	out := make(analysis.TokenStream, 0, len(input)/6+1)
	var slab []analysis.Token
	pos := 1
	checked := false // whether the input was found to be UTF-8
	emit := func(start, end int, typ analysis.TokenType) {
		if len(slab) == cap(slab) {
			slab = make([]analysis.Token, 0, max(16, (len(input)-start)/6))
		}
		slab = append(slab, analysis.Token{Term: input[start:end], Start: start, End: end, Position: pos, Type: typ})
		out = append(out, &slab[len(slab)-1])
		pos++
	}
	for i := 0; i < len(input); {
		if c := input[i]; c < 128 && wordClasses[c] == wSpace {
			i++
			continue
		}
		// A run up to the next ASCII whitespace.
		end, ascii := i, true
		for end < len(input) {
			c := input[end]
			if c >= 128 {
				ascii = false
			} else if wordClasses[c] == wSpace {
				break
			}
			end++
		}
		if !ascii {
			// Bleve's automaton stops at a byte that is not UTF-8, in
			// ways that depend on what came before: such a text is left to
			// it whole.
			if !checked {
				checked = true
				if !utf8.Valid(input) {
					return t.unicode.Tokenize(input)
				}
			}
			for _, tok := range t.unicode.Tokenize(input[i:end]) {
				tok.Start += i
				tok.End += i
				tok.Position = pos
				pos++
				out = append(out, tok)
			}
			i = end
			continue
		}
		for i < end {
			n, number := asciiWord(input[i:end])
			if n == 0 {
				i++ // a byte of no word: Bleve's automaton gives it a token of no type, not kept
				continue
			}
			typ := analysis.AlphaNumeric
			if number {
				typ = analysis.Numeric
			}
			emit(i, i+n, typ)
			i += n
		}
	}
	return out
}

// asciiWord is the length of the longest word Bleve's automaton reads at
// the start of the ASCII run b (0 when b starts with no word), and
// whether it reads it as a number. A word is letters, digits and '_',
// with a MidLetter between two letters, a MidNum between two digits, and
// a MidNumLet or quote between two of either; it is a number when it has
// digits and no letter (the automaton's numeric rule comes first).
func asciiWord(b []byte) (n int, number bool) {
	letters, digits := false, false
	for n < len(b) {
		switch wordClasses[b[n]] {
		case wLetter:
			letters = true
		case wDigit:
			digits = true
		case wJoin:
		case wMidLetter, wMidNum, wMidBoth:
			if n == 0 || n+1 == len(b) {
				return n, digits && !letters
			}
			prev, next := wordClasses[b[n-1]], wordClasses[b[n+1]]
			cl := wordClasses[b[n]]
			byLetters := prev == wLetter && next == wLetter && cl != wMidNum
			byDigits := prev == wDigit && next == wDigit && cl != wMidLetter
			if !byLetters && !byDigits {
				return n, digits && !letters
			}
		default:
			return n, digits && !letters
		}
		n++
	}
	return n, digits && !letters
}

// stemCacheMax bounds the words whose stems stemCache keeps (a few MB).
const stemCacheMax = 1 << 15

// stemCache is Porter's stemmer remembering the stems of the words it has
// seen: the words of pages repeat, and stemming each (with two
// allocations) was a sixth of analysing them. Stems are shared between
// tokens; nothing after the stemmer changes a term in place.
type stemCache struct {
	stemmer analysis.TokenFilter
	mu      sync.RWMutex
	stems   map[string][]byte
}

func (c *stemCache) Filter(input analysis.TokenStream) analysis.TokenStream {
	var miss analysis.TokenStream
	c.mu.RLock()
	for _, tok := range input {
		if tok.KeyWord {
			continue
		}
		if stem, ok := c.stems[string(tok.Term)]; ok {
			tok.Term = stem
		} else {
			miss = append(miss, tok)
		}
	}
	full := len(c.stems) >= stemCacheMax
	c.mu.RUnlock()
	if len(miss) == 0 {
		return input
	}
	var words []string
	if !full {
		words = make([]string, len(miss))
		for i, tok := range miss {
			words[i] = string(tok.Term)
		}
	}
	c.stemmer.Filter(miss)
	if words != nil {
		c.mu.Lock()
		for i, tok := range miss {
			if len(c.stems) >= stemCacheMax {
				break
			}
			c.stems[words[i]] = tok.Term
		}
		c.mu.Unlock()
	}
	return input
}
