package changedigest

import "time"

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
	Excluded  []string  `json:"excluded,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
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
	// Start and End are byte offsets of the match in the text searched.
	Start int `json:"start"`
	End   int `json:"end"`
}

// Label describes a match for people, e.g.
// "matches your interest football (synonym: soccer)".
func (m Match) Label() string {
	if m.Relation == "" || m.Relation == "term" || m.Term == m.Interest {
		return "matches your interest " + m.Interest
	}
	return "matches your interest " + m.Interest + " (" + m.Relation + ": " + m.Term + ")"
}
