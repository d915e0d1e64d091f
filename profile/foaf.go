package profile

import (
	"strings"

	"github.com/changedigest/changedigest"
)

// This file adapts an RDF graph (the wire form) to the person a FOAF
// document describes: which node is the person, its name and nick, its
// interests with readable labels, and the pages it links.

// More vocabulary.
const (
	dcTitle       = "http://purl.org/dc/elements/1.1/title"
	dctermsTitle  = "http://purl.org/dc/terms/title"
	skosPrefLabel = "http://www.w3.org/2004/02/skos/core#prefLabel"
	vcardNS       = "http://www.w3.org/2006/vcard/ns#"
	schemaHTTP    = "http://schema.org/"
	schemaHTTPS   = "https://schema.org/"
)

// graph indexes a document's triples by subject.
type graph struct {
	triples []triple
	// bySubject lists the positions of each subject's triples, in
	// document order; subjects lists the subjects in order of first use.
	bySubject map[term][]int
	subjects  []term
}

// foafAliases are misspellings of the FOAF namespace that real documents
// use; terms in them are read as FOAF terms.
var foafAliases = []string{"http://xmlns.com/foaf/0.1#", "https://xmlns.com/foaf/0.1/"}

func foafTerm(t term) term {
	if t.isIRI() {
		for _, a := range foafAliases {
			if strings.HasPrefix(t.value, a) {
				return iri(foafNS + t.value[len(a):])
			}
		}
	}
	return t
}

func newGraph(ts []triple) *graph {
	g := &graph{triples: ts, bySubject: map[term][]int{}}
	for i, t := range ts {
		if t.p = foafTerm(t.p); t.p.value == rdfType {
			t.o = foafTerm(t.o)
		}
		ts[i] = t
		if _, ok := g.bySubject[t.s]; !ok {
			g.subjects = append(g.subjects, t.s)
		}
		g.bySubject[t.s] = append(g.bySubject[t.s], i)
	}
	return g
}

// objects returns the objects of s's statements with predicate p, in order.
func (g *graph) objects(s term, p string) []term {
	var out []term
	for _, i := range g.bySubject[s] {
		if t := g.triples[i]; t.p.value == p {
			out = append(out, t.o)
		}
	}
	return out
}

func (g *graph) hasType(s term, types ...string) bool {
	for _, o := range g.objects(s, rdfType) {
		for _, t := range types {
			if o.isIRI() && o.value == t {
				return true
			}
		}
	}
	return false
}

// literalValue returns the best literal among the objects of s with one
// of the predicates, tried in order: one without a language or in
// English wins over one in another language.
func (g *graph) literalValue(s term, preds ...string) string {
	for _, p := range preds {
		best, bestRank := "", 3
		for _, o := range g.objects(s, p) {
			v := cleanText(o.value)
			if !o.isLiteral() || v == "" {
				continue
			}
			rank := 2
			switch {
			case o.lang == "":
				rank = 0
			case o.lang == "en" || strings.HasPrefix(o.lang, "en-"):
				rank = 1
			}
			if rank < bestRank {
				best, bestRank = v, rank
			}
		}
		if best != "" {
			return best
		}
	}
	return ""
}

// cleanText trims a literal and collapses its white space.
func cleanText(s string) string { return strings.Join(strings.Fields(s), " ") }

var (
	personTypes = []string{foafNS + "Person", schemaHTTP + "Person", schemaHTTPS + "Person", vcardNS + "Individual"}
	// otherTypes mark nodes that carry foaf:name but are not people.
	otherTypes = []string{foafNS + "Document", foafNS + "PersonalProfileDocument", foafNS + "Organization",
		foafNS + "Group", foafNS + "Project", foafNS + "Image", foafNS + "OnlineAccount"}
	// personProperties are FOAF properties only a person (or agent) has.
	personProperties = map[string]bool{
		foafNS + "name": true, foafNS + "nick": true, foafNS + "givenName": true, foafNS + "familyName": true,
		foafNS + "firstName": true, foafNS + "surname": true, foafNS + "family_name": true, foafNS + "givenname": true,
		foafNS + "interest": true, foafNS + "topic_interest": true, foafNS + "weblog": true, foafNS + "knows": true,
		foafNS + "mbox": true, foafNS + "mbox_sha1sum": true, foafNS + "workplaceHomepage": true,
		foafNS + "schoolHomepage": true, foafNS + "img": true, foafNS + "currentProject": true,
	}
)

// looksLikePerson reports whether a node is typed as a person, or is
// untyped (or of an unknown type) and has a property only people have.
func (g *graph) looksLikePerson(n term) bool {
	if n.isLiteral() {
		return false
	}
	if g.hasType(n, personTypes...) {
		return true
	}
	if g.hasType(n, otherTypes...) {
		return false
	}
	for _, i := range g.bySubject[n] {
		if personProperties[g.triples[i].p.value] {
			return true
		}
	}
	return false
}

// Ways the person was chosen, for logs.
const (
	chosenProfileDocument = "primary topic of the foaf:PersonalProfileDocument"
	chosenDocumentMaker   = "maker of the foaf:PersonalProfileDocument"
	chosenPrimaryTopic    = "foaf:primaryTopic of the document"
	chosenMostProperties  = "the person with the most properties"
)

// findPerson picks the node the document is about:
//
//  1. the foaf:primaryTopic of a node typed foaf:PersonalProfileDocument,
//     else that document's foaf:maker, provided the document describes it;
//  2. else the foaf:primaryTopic (or foaf:maker) of the document itself
//     (its base IRI), or any foaf:primaryTopic that is a person;
//  3. else, among the nodes typed foaf:Person (schema:Person,
//     vcard:Individual), or failing those the nodes with a property only
//     people have (foaf:name, foaf:nick, foaf:interest, foaf:knows, ...),
//     the one that is the subject of the most statements; ties go to the
//     one described first.
func (g *graph) findPerson(docIRI string) (term, string, bool) {
	// A topic the document says nothing about, or that is the document
	// itself (a PersonalProfileDocument pointing at #me while the person
	// is written with rdf:ID="alex", as FOAF-a-matic output sometimes
	// is), does not count.
	described := func(o term) bool {
		return !o.isLiteral() && len(g.bySubject[o]) > 0 &&
			!g.hasType(o, foafNS+"PersonalProfileDocument", foafNS+"Document")
	}
	for _, s := range g.subjects {
		if !g.hasType(s, foafNS+"PersonalProfileDocument") {
			continue
		}
		for _, o := range g.objects(s, foafNS+"primaryTopic") {
			if described(o) {
				return o, chosenProfileDocument, true
			}
		}
		for _, o := range g.objects(s, foafNS+"maker") {
			if described(o) {
				return o, chosenDocumentMaker, true
			}
		}
	}
	doc := iri(stripFragment(docIRI))
	for _, p := range []string{foafNS + "primaryTopic", foafNS + "maker"} {
		for _, o := range g.objects(doc, p) {
			if described(o) {
				return o, chosenPrimaryTopic, true
			}
		}
	}
	for _, t := range g.triples {
		if t.p.value == foafNS+"primaryTopic" && g.looksLikePerson(t.o) {
			return t.o, chosenPrimaryTopic, true
		}
	}
	var best term
	bestCount := 0
	for _, typed := range []bool{true, false} {
		for _, s := range g.subjects {
			if typed && !g.hasType(s, personTypes...) || !typed && !g.looksLikePerson(s) {
				continue
			}
			if n := len(g.bySubject[s]); n > bestCount {
				best, bestCount = s, n
			}
		}
		if bestCount > 0 {
			return best, chosenMostProperties, true
		}
	}
	return term{}, "", false
}

// foafPerson is what the document says of its person.
type foafPerson struct {
	node      term
	chosen    string
	name      string
	nick      string
	interests []changedigest.Interest
	pages     []changedigest.LinkedPage
	// skipped counts interests with no label to show.
	skipped int
}

// Interest and page properties, with the names profiles show.
var (
	interestProperties = []struct{ iri, name string }{
		{foafNS + "interest", "foaf:interest"},
		{foafNS + "topic_interest", "foaf:topic_interest"},
	}
	pageProperties = []struct{ iri, name string }{
		{foafNS + "homepage", "foaf:homepage"},
		{foafNS + "weblog", "foaf:weblog"},
		{foafNS + "workplaceHomepage", "foaf:workplaceHomepage"},
		{foafNS + "schoolHomepage", "foaf:schoolHomepage"},
	}
	// labelProperties give a resource's readable name, best first.
	labelProperties = []string{dcTitle, dctermsTitle, rdfsLabel, foafNS + "name", skosPrefLabel}
)

// person reads the person the document describes.
func (g *graph) person(docIRI string) (*foafPerson, bool) {
	n, chosen, ok := g.findPerson(docIRI)
	if !ok {
		return nil, false
	}
	p := &foafPerson{node: n, chosen: chosen}
	p.name = g.literalValue(n, foafNS+"name", vcardNS+"fn", schemaHTTP+"name", schemaHTTPS+"name")
	if p.name == "" {
		for _, pair := range [][2]string{{"givenName", "familyName"}, {"firstName", "surname"}, {"givenname", "family_name"}, {"firstName", "family_name"}} {
			given, family := g.literalValue(n, foafNS+pair[0]), g.literalValue(n, foafNS+pair[1])
			if given != "" || family != "" {
				p.name = strings.TrimSpace(given + " " + family)
				break
			}
		}
	}
	if p.name == "" {
		p.name = g.literalValue(n, rdfsLabel)
	}
	p.nick = g.literalValue(n, foafNS+"nick")

	seen := map[string]bool{}
	for _, prop := range interestProperties {
		for _, o := range g.objects(n, prop.iri) {
			label, uri := g.interestLabel(o)
			key := termKey(label)
			if key == "" {
				p.skipped++
				continue
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			p.interests = append(p.interests, changedigest.Interest{Term: label, URI: uri, Source: prop.name, Weight: 1})
		}
	}
	seenPage := map[string]bool{}
	for _, prop := range pageProperties {
		for _, o := range g.objects(n, prop.iri) {
			u := normaliseURL(o.value)
			if o.isBlank() || !isWebURL(u) || seenPage[u] {
				continue
			}
			seenPage[u] = true
			p.pages = append(p.pages, changedigest.LinkedPage{URL: u, Property: prop.name})
		}
	}
	return p, true
}

// interestLabel returns the readable label of an interest and the IRI it
// names: a literal is its own label; a resource's label comes from the
// document (dc:title, dcterms:title, rdfs:label, foaf:name, skos:prefLabel)
// or, failing that, from its IRI; a blank node without a label is named
// by the page it points to (foaf:page, foaf:homepage, foaf:isPrimaryTopicOf,
// rdfs:seeAlso).
func (g *graph) interestLabel(o term) (label, uri string) {
	if o.isLiteral() {
		v := cleanText(o.value)
		if isWebURL(v) && !strings.Contains(v, " ") {
			return labelFromIRI(v), v // a URL written as a literal
		}
		return v, ""
	}
	if l := g.literalValue(o, labelProperties...); l != "" {
		if o.isIRI() {
			uri = o.value
		}
		return l, uri
	}
	if o.isIRI() {
		return labelFromIRI(o.value), o.value
	}
	for _, p := range []string{foafNS + "page", foafNS + "homepage", foafNS + "isPrimaryTopicOf", rdfsNS + "seeAlso"} {
		for _, x := range g.objects(o, p) {
			if x.isIRI() {
				if l := labelFromIRI(x.value); l != "" {
					return l, x.value
				}
			}
		}
	}
	return "", ""
}

// isWebURL reports whether s is an absolute http or https URL.
func isWebURL(s string) bool {
	p := splitIRI(s)
	return p.hasScheme && p.hasAuthority && p.authority != "" &&
		(strings.EqualFold(p.scheme, "http") || strings.EqualFold(p.scheme, "https"))
}

// normaliseURL gives an http(s) URL the form used to compare pages: the
// scheme and host in lower case and an empty path as "/".
func normaliseURL(s string) string {
	s = strings.TrimSpace(s)
	p := splitIRI(s)
	if !p.hasScheme || !p.hasAuthority {
		return s
	}
	p.scheme, p.authority = strings.ToLower(p.scheme), strings.ToLower(p.authority)
	if p.path == "" {
		p.path = "/"
	}
	return p.String()
}

// empty reports whether the document says nothing of the person that a
// profile could use.
func (p *foafPerson) empty() bool {
	return p.name == "" && p.nick == "" && len(p.interests) == 0 && len(p.pages) == 0
}

// profile adapts the person to the domain type.
func (p *foafPerson) profile() *changedigest.Profile {
	pr := &changedigest.Profile{Name: p.name, Nick: p.nick, Interests: p.interests, Pages: p.pages}
	if pr.Interests == nil {
		pr.Interests = []changedigest.Interest{}
	}
	return pr
}
