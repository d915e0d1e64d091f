package changedigest

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Profile is what a user cares about: the profile bag of CaSePer, read
// from a FOAF document and edited by hand.
type Profile struct {
	UserID    int64      `json:"user_id"`
	Name      string     `json:"name,omitempty"`
	Nick      string     `json:"nick,omitempty"`
	Interests []Interest `json:"interests"`
	// Pages are the documents the person links (homepage, weblog,
	// workplace and school homepages); key terms are drawn from them.
	Pages []LinkedPage `json:"pages,omitempty"`
	// Excluded holds terms the user removed by hand; they stay out even
	// when the FOAF document or a linked page yields them again.
	Excluded []string `json:"excluded,omitempty"`
	// Senses holds the meanings the user chose by hand for some terms;
	// like Excluded, they are kept when the profile is built again.
	Senses    []SenseChoice `json:"senses,omitempty"`
	UpdatedAt time.Time     `json:"updated_at"`
}

// Interest is one term of the profile bag.
type Interest struct {
	// Term is the readable label matched against changes, e.g. "semantic web".
	Term string `json:"term"`
	// URI is the resource the FOAF document named, if any.
	URI string `json:"uri,omitempty"`
	// Source says where the term came from: a FOAF property such as
	// "foaf:interest", "page" for key terms of a linked page, or "manual".
	Source string `json:"source"`
	// Weight is 1 for stated interests and lower for derived key terms.
	Weight float64 `json:"weight"`
	// About is what the page URI names says of itself (a Wikipedia
	// article, a DBpedia resource, a project's home page), read when the
	// profile was built; it tells which meaning of Term is meant. Nil
	// when URI is not a web page or could not be read.
	About *About `json:"about,omitempty"`
}

// About is the title and the opening text of a page an interest names.
type About struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
	// Text is the start of the page's main text or abstract, at most
	// MaxAboutText bytes.
	Text string `json:"text,omitempty"`
}

// MaxAboutText bounds About.Text.
const MaxAboutText = 2000

// SenseChoice is the meaning a user chose for an interest term: a
// WordNet 3.0 synset such as "n07062697" (jazz, the music genre).
type SenseChoice struct {
	Term   string `json:"term"`
	Synset string `json:"synset"`
}

// ChosenSense returns the synset the user chose for term (compared
// without regard to case and spacing), or "".
func (p *Profile) ChosenSense(term string) string {
	k := strings.ToLower(strings.Join(strings.Fields(term), " "))
	for _, c := range p.Senses {
		if strings.ToLower(strings.Join(strings.Fields(c.Term), " ")) == k {
			return c.Synset
		}
	}
	return ""
}

// Interest sources that are not FOAF properties.
const (
	SourceManual = "manual"
	SourcePage   = "page"
)

// LinkedPage is a page the profile links, with the FOAF property naming it.
type LinkedPage struct {
	URL      string `json:"url"`
	Property string `json:"property"`
}

// Match is one place in a change's text where a profile term was found.
type Match struct {
	// Interest is the profile interest that matched; Term the word or
	// phrase that was found (the interest itself or one of its expansions).
	Interest string `json:"interest"`
	Term     string `json:"term"`
	// Relation is how Term relates to Interest: "term", "synonym",
	// "hypernym", "hyponym" or "key term".
	Relation string  `json:"relation"`
	Weight   float64 `json:"weight"`
	// Start and End are byte offsets of the match in the text searched:
	// with Unit empty, the change's own words.
	Start int `json:"start"`
	End   int `json:"end"`
	// Unit says where the term was found when it was not among the
	// changed words: UnitSentence, the sentence they belong to, or
	// UnitItem, the title of the feed item or the heading of the part of
	// the page they are in. Context is that sentence or title; Start and
	// End are then offsets into Context.
	Unit    string `json:"unit,omitempty"`
	Context string `json:"context,omitempty"`
}

// Units of a Match found around the changed words.
const (
	UnitSentence = "sentence"
	UnitItem     = "item"
)

// Label describes a match for people, e.g.
// "matches your interest football (synonym: soccer)", or for a match
// around the changed words "matches your interest kettle in the item
// 'Blue kettle, 1.7 l'".
func (m Match) Label() string {
	l := "matches your interest " + m.Interest
	if m.Relation != "" && m.Relation != "term" && m.Term != m.Interest {
		l += " (" + m.Relation + ": " + m.Term + ")"
	}
	if m.Unit != "" {
		l += " in the " + m.Unit + " '" + quoteShort(m.Context, 80) + "'"
	}
	return l
}

// quoteShort cuts s to about n bytes at a word boundary, with "…".
func quoteShort(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return strings.TrimRight(s[:cut], " ,;:") + "…"
}
