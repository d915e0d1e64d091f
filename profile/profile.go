// Package profile builds a user's interest profile (the profile bag of
// CaSePer) from a FOAF document and from the pages the document links.
//
// A FOAF document in RDF/XML, Turtle or N-Triples is read into RDF triples
// (by readers written for this package on encoding/xml and by recursive
// descent; see rdfxml.go and turtle.go for why no library was used), and
// the triples into a changedigest.Profile:
//
//   - The person is the foaf:primaryTopic of the document's
//     foaf:PersonalProfileDocument (else its foaf:maker); else the
//     foaf:primaryTopic of the document itself; else the foaf:Person
//     (or, failing any, the node with person-only properties such as
//     foaf:nick or foaf:knows) that is the subject of the most statements.
//   - Name is foaf:name (else vcard:fn, schema:name, given and family
//     names, rdfs:label), Nick is foaf:nick.
//   - Interests are the objects of foaf:interest and foaf:topic_interest,
//     labelled by dc:title, dcterms:title, rdfs:label, foaf:name or
//     skos:prefLabel in the document, else by words drawn from the IRI
//     (".../wiki/Semantic_Web" gives "semantic web"); literals are their
//     own labels. They carry weight 1 and the FOAF property as Source.
//   - Pages are the http(s) objects of foaf:homepage, foaf:weblog,
//     foaf:workplaceHomepage and foaf:schoolHomepage.
//
// Terms in the misspelt namespaces http://xmlns.com/foaf/0.1# and
// https://xmlns.com/foaf/0.1/ are read as FOAF terms.
//
// A Builder with a Fetch function also reads each linked page's main text
// and adds its key terms (KeyTerms: TF-IDF against word frequencies of the
// WordNet 3.0 glosses) as weaker interests with Source
// changedigest.SourcePage. AddInterest, RemoveInterest and Merge keep the
// terms a user adds or removes by hand across re-uploads.
//
// The package does not know about WordNet expansion; that is the expand
// package's work.
package profile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/changedigest/changedigest"
)

// Defaults of a Builder.
const (
	DefaultTermsPerPage = 10
	DefaultMaxPages     = 6
)

// Builder reads FOAF documents into profiles. Create it with NewBuilder;
// the exported fields are the knobs.
type Builder struct {
	// MaxSize is the largest document accepted, in bytes.
	MaxSize int64
	// Fetch returns the main text of a linked page. When nil, Build reads
	// no pages. It should honour ctx and bound its own time and size.
	Fetch func(ctx context.Context, url string) (string, error)
	// TermsPerPage is how many key terms one page contributes.
	TermsPerPage int
	// MaxPages is how many linked pages Build reads at most.
	MaxPages int
	// Describe reads the page an interest names (foaf:interest
	// <http://en.wikipedia.org/wiki/Jazz>): its title and the start of its
	// main text or abstract, which tell which meaning of the term is
	// meant. When nil, Build reads no interest pages. Like Fetch, it
	// should honour ctx and bound its own time and size, and refuse the
	// addresses Fetch refuses.
	Describe func(ctx context.Context, url string) (changedigest.About, error)
	// MaxInterestPages is how many interest pages one Build reads at
	// most; pages read lately (up to AboutCacheSize of them, for
	// AboutCacheTTL) are taken from a cache and not counted.
	MaxInterestPages int
	AboutCacheSize   int
	AboutCacheTTL    time.Duration
	Now              func() time.Time
	Logger           *slog.Logger

	cache aboutCache
}

// NewBuilder returns a Builder with the defaults and no Fetch.
func NewBuilder() *Builder {
	return &Builder{
		MaxSize:      DefaultMaxSize,
		TermsPerPage: DefaultTermsPerPage,
		MaxPages:     DefaultMaxPages,
		Now:          time.Now,
		Logger:       slog.Default(),
	}
}

// Parse reads a FOAF document into a profile with NewBuilder's defaults.
// See Builder.Parse.
func Parse(doc Document) (*changedigest.Profile, error) {
	return NewBuilder().Parse(doc)
}

// Parse reads a FOAF document into a profile: the person's name, nick,
// interests and linked pages. It reads no pages.
//
// Errors: a document over MaxSize gives ETOOLARGE (ErrTooLarge); an empty
// document, one that is not RDF/XML, Turtle or N-Triples (ErrSyntax, with
// a *SyntaxError giving line and column), not RDF (ErrNotRDF, e.g. an
// HTML page) or without a person (ErrNoPerson) gives EINVALID with a
// message naming the document and what is wrong. Only a failing
// doc.Body gives another error.
func (b *Builder) Parse(doc Document) (*changedigest.Profile, error) {
	ts, f, err := readTriples(doc, b.maxSize())
	if err != nil {
		return nil, err
	}
	g := newGraph(ts)
	p, ok := g.person(doc.baseIRI())
	if !ok {
		return nil, invalid(ErrNoPerson, "%s (%s, %d statements) describes no person: it has no foaf:PersonalProfileDocument with a foaf:primaryTopic, no foaf:Person and nothing with foaf:name, foaf:nick or foaf:interest", doc.label(), f.Name(), len(ts))
	}
	if p.empty() {
		return nil, invalid(ErrNoPerson, "%s (%s) describes a person (%s) but gives no name, nick, interest or linked page to build a profile from", doc.label(), f.Name(), nodeName(p.node))
	}
	b.logger().Debug("profile read", "document", doc.label(), "format", string(f), "statements", len(ts),
		"person", p.node.String(), "chosen_as", p.chosen, "interests", len(p.interests), "unlabelled_interests", p.skipped, "pages", len(p.pages))
	if n := len(p.interests); n > MaxInterests {
		return nil, invalid(ErrTooMany, "%s names %d interests; a profile holds at most %d: keep the ones you care about most", doc.label(), n, MaxInterests)
	}
	if n := len(p.pages); n > MaxLinkedPages {
		return nil, invalid(ErrTooMany, "%s links %d pages (homepage, weblog…); a profile holds at most %d", doc.label(), n, MaxLinkedPages)
	}
	pr := p.profile()
	pr.UpdatedAt = b.now()
	return pr, nil
}

// PageError reports a linked page whose key terms could not be read.
type PageError struct {
	URL string
	Err error
}

func (e *PageError) Error() string { return fmt.Sprintf("profile: page %s: %v", e.URL, e.Err) }
func (e *PageError) Unwrap() error { return e.Err }

// ErrPageEmpty is the PageError cause for a page with no text to read.
var ErrPageEmpty = errors.New("no text to draw key terms from")

// Build reads a FOAF document as Parse does and then, if Describe is
// set, the pages its interests name (their About), and if Fetch is set,
// the main text of up to MaxPages linked pages, adding each page's key
// terms (Source changedigest.SourcePage, URI the page, Weight below 1)
// unless the document already states the same term. A page that cannot
// be fetched or has no text is reported in the returned PageErrors and
// the others are still read; an interest page that cannot be read is
// only logged. The error is Parse's, or ctx's when it ends.
func (b *Builder) Build(ctx context.Context, doc Document) (*changedigest.Profile, []PageError, error) {
	pr, err := b.Parse(doc)
	if err != nil {
		return nil, nil, err
	}
	if err := b.describeInterests(ctx, pr); err != nil {
		return nil, nil, fmt.Errorf("profile: reading interest pages: %w", err)
	}
	if b.Fetch == nil {
		return pr, nil, nil
	}
	have := map[string]bool{}
	for _, in := range pr.Interests {
		have[termKey(in.Term)] = true
	}
	var pageErrs []PageError
	for i, page := range pr.Pages {
		if i >= b.maxPages() {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, pageErrs, fmt.Errorf("profile: reading linked pages: %w", err)
		}
		text, err := b.Fetch(ctx, page.URL)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, pageErrs, fmt.Errorf("profile: reading linked pages: %w", ctxErr)
			}
			b.logger().Info("linked page not read", "url", page.URL, "error", err)
			pageErrs = append(pageErrs, PageError{URL: page.URL, Err: err})
			continue
		}
		terms := KeyTerms([]string{text}, b.termsPerPage())
		if len(terms) == 0 {
			pageErrs = append(pageErrs, PageError{URL: page.URL, Err: ErrPageEmpty})
			continue
		}
		for _, t := range terms {
			k := termKey(t.Term)
			if have[k] {
				continue
			}
			have[k] = true
			t.URI = page.URL
			pr.Interests = append(pr.Interests, t)
		}
	}
	return pr, pageErrs, nil
}

// nodeName names a node for messages.
func nodeName(t term) string {
	if t.isIRI() {
		return "<" + t.value + ">"
	}
	return "an unnamed node"
}

func (b *Builder) maxSize() int64 {
	if b.MaxSize > 0 {
		return b.MaxSize
	}
	return DefaultMaxSize
}

func (b *Builder) maxPages() int {
	if b.MaxPages > 0 {
		return b.MaxPages
	}
	return DefaultMaxPages
}

func (b *Builder) termsPerPage() int {
	if b.TermsPerPage > 0 {
		return b.TermsPerPage
	}
	return DefaultTermsPerPage
}

func (b *Builder) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Builder) logger() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}
