package profile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is an RDF/XML reader following the grammar of "RDF 1.1
// XML Syntax" (W3C Recommendation, 25 February 2014), section 7: node
// elements nested inside property elements (typed nodes such as
// <foaf:Person> inside <foaf:knows>), rdf:about / rdf:ID / rdf:nodeID /
// rdf:resource, rdf:parseType Resource, Literal and Collection, property
// attributes, rdf:li numbering, reification through rdf:ID on property
// elements, xml:base, xml:lang and rdf:datatype. Where the grammar says a
// document is in error, the reader stops with a *SyntaxError giving the
// element and its position; it does not skip and carry on as some
// readers do, so a user learns what is wrong with the file.

// parseRDFXML reads an RDF/XML document into triples.
func parseRDFXML(data []byte, base string) ([]triple, error) {
	return (&rdfxmlParser{}).parse(data, base)
}

func (p *rdfxmlParser) parse(data []byte, base string) ([]triple, error) {
	root, err := readXMLTree(data, base)
	if err != nil {
		return nil, err
	}
	p.ids, p.nodeIDs = map[string]bool{}, map[string]string{}
	if root.ns == rdfNS && root.local == "RDF" {
		for _, a := range root.attrs {
			if a.ns != xmlNS {
				return nil, p.errorf(root, "attribute %s is not allowed on rdf:RDF", a.qname())
			}
		}
		if err := p.nodeElementList(root); err != nil {
			return nil, err
		}
	} else {
		if !declaresRDF(root) {
			return nil, fmt.Errorf("%w: the root element <%s> is neither rdf:RDF nor an RDF node element (the RDF namespace %s is not used)", ErrNotRDF, root.qname(), rdfNS)
		}
		if _, err := p.nodeElement(root); err != nil {
			return nil, err
		}
	}
	return p.triples, nil
}

// declaresRDF reports whether a root element other than rdf:RDF uses the
// RDF namespace (in its name or attributes, or in those of a child), the
// mark of an RDF/XML document whose rdf:RDF wrapper was left out.
func declaresRDF(e *xelem) bool {
	if e.ns == rdfNS {
		return true
	}
	for _, a := range e.attrs {
		if a.ns == rdfNS {
			return true
		}
	}
	for _, k := range e.kids {
		if k.el == nil {
			continue
		}
		if k.el.ns == rdfNS {
			return true
		}
		for _, a := range k.el.attrs {
			if a.ns == rdfNS {
				return true
			}
		}
	}
	return false
}

type rdfxmlParser struct {
	triples []triple
	blanks  int
	// ids holds the rdf:ID IRIs used so far: each may be used once.
	ids map[string]bool
	// nodeIDs maps rdf:nodeID values to blank node labels.
	nodeIDs map[string]string
	// raptorCompat reads property attributes as raptor 2.0.15 does:
	// without the xml:lang in scope and with runs of white space
	// collapsed. The grammar (7.2.11, 7.2.21) gives them the language and
	// XML keeps their spaces; the switch exists only so that tests can
	// compare graphs with rapper's.
	raptorCompat bool
}

func (p *rdfxmlParser) errorf(e *xelem, format string, args ...any) error {
	return &SyntaxError{Format: FormatRDFXML, Line: e.line, Column: e.col, Msg: fmt.Sprintf(format, args...)}
}

func (p *rdfxmlParser) emit(s, pr, o term) { p.triples = append(p.triples, triple{s, pr, o}) }

func (p *rdfxmlParser) newBlank() term {
	p.blanks++
	return blank("b" + strconv.Itoa(p.blanks))
}

func (p *rdfxmlParser) nodeIDBlank(e *xelem, id string) (term, error) {
	if !isNCName(id) {
		return term{}, p.errorf(e, "rdf:nodeID %q on <%s> is not an XML name", id, e.qname())
	}
	if l, ok := p.nodeIDs[id]; ok {
		return blank(l), nil
	}
	b := p.newBlank()
	p.nodeIDs[id] = b.value
	return b, nil
}

// idIRI returns the IRI of an rdf:ID, checking it is a name and unused.
func (p *rdfxmlParser) idIRI(e *xelem, id string) (term, error) {
	if !isNCName(id) {
		return term{}, p.errorf(e, "rdf:ID %q on <%s> is not an XML name", id, e.qname())
	}
	u := resolveIRI(e.base, "#"+id)
	if p.ids[u] {
		return term{}, p.errorf(e, "rdf:ID %q is used twice (it names <%s>)", id, u)
	}
	p.ids[u] = true
	return iri(u), nil
}

// Name classes of the grammar (section 7.2.2 to 7.2.5).
var (
	coreSyntaxTerms = map[string]bool{"RDF": true, "ID": true, "about": true, "parseType": true, "resource": true, "nodeID": true, "datatype": true}
	oldTerms        = map[string]bool{"aboutEach": true, "aboutEachPrefix": true, "bagID": true}
)

// nodeElementList reads the children of rdf:RDF.
func (p *rdfxmlParser) nodeElementList(e *xelem) error {
	for _, k := range e.kids {
		switch {
		case k.el != nil:
			if _, err := p.nodeElement(k.el); err != nil {
				return err
			}
		case k.comment:
		case strings.TrimSpace(k.text) != "":
			return p.errorf(e, "text %q inside <%s>, where only node elements may be", abbreviate(k.text, 30), e.qname())
		}
	}
	return nil
}

// nodeElement reads a node element and returns its subject (7.2.11).
func (p *rdfxmlParser) nodeElement(e *xelem) (term, error) {
	if e.ns == rdfNS && (coreSyntaxTerms[e.local] || oldTerms[e.local] || e.local == "li") {
		return term{}, p.errorf(e, "<%s> cannot be a node element", e.qname())
	}
	if e.ns == "" {
		return term{}, p.errorf(e, "node element <%s> has no namespace", e.qname())
	}
	var (
		subj      term
		subjFrom  string
		propAttrs []xattr
	)
	for _, a := range e.attrs {
		switch {
		case a.ns == xmlNS || isXMLReserved(a):
			continue
		case a.ns == rdfNS || (a.ns == "" && unqualifiedRDF[a.local]):
			switch a.local {
			case "about", "ID", "nodeID":
				if subjFrom != "" {
					return term{}, p.errorf(e, "<%s> has both rdf:%s and rdf:%s; a node has one name", e.qname(), subjFrom, a.local)
				}
				subjFrom = a.local
				var err error
				switch a.local {
				case "about":
					subj = iri(resolveIRI(e.base, a.value))
				case "ID":
					subj, err = p.idIRI(e, a.value)
				case "nodeID":
					subj, err = p.nodeIDBlank(e, a.value)
				}
				if err != nil {
					return term{}, err
				}
				continue
			case "type":
				propAttrs = append(propAttrs, xattr{ns: rdfNS, local: "type", value: a.value})
				continue
			}
			if coreSyntaxTerms[a.local] || oldTerms[a.local] || a.local == "li" || a.local == "Description" {
				return term{}, p.errorf(e, "attribute rdf:%s is not allowed on node element <%s>", a.local, e.qname())
			}
			propAttrs = append(propAttrs, a)
		case a.ns == "":
			return term{}, p.errorf(e, "attribute %s on <%s> has no namespace", a.local, e.qname())
		default:
			propAttrs = append(propAttrs, a)
		}
	}
	if subjFrom == "" {
		subj = p.newBlank()
	}
	if !(e.ns == rdfNS && e.local == "Description") {
		p.emit(subj, iri(rdfType), iri(e.ns+e.local))
	}
	p.propertyAttrs(subj, e, propAttrs)
	li := 0
	for _, k := range e.kids {
		switch {
		case k.el != nil:
			if err := p.propertyElement(subj, k.el, &li); err != nil {
				return term{}, err
			}
		case k.comment:
		case strings.TrimSpace(k.text) != "":
			return term{}, p.errorf(e, "text %q inside node element <%s>, where only property elements may be", abbreviate(k.text, 30), e.qname())
		}
	}
	return subj, nil
}

// unqualifiedRDF are the RDF attributes that old documents write without
// the rdf: prefix; the reader takes them as RDF attributes, as raptor does.
var unqualifiedRDF = map[string]bool{"about": true, "ID": true, "resource": true, "parseType": true, "type": true, "nodeID": true, "datatype": true}

// isXMLReserved reports attributes in no namespace whose names start with
// "xml", which the grammar ignores.
func isXMLReserved(a xattr) bool {
	return a.ns == "" && len(a.local) >= 3 && strings.EqualFold(a.local[:3], "xml")
}

// propertyAttrs emits one triple per property attribute of a node.
func (p *rdfxmlParser) propertyAttrs(subj term, e *xelem, attrs []xattr) {
	for _, a := range attrs {
		if a.ns == rdfNS && a.local == "type" {
			p.emit(subj, iri(rdfType), iri(resolveIRI(e.base, a.value)))
			continue
		}
		if p.raptorCompat {
			p.emit(subj, iri(a.ns+a.local), literal(strings.Join(strings.Fields(a.value), " "), "", ""))
			continue
		}
		p.emit(subj, iri(a.ns+a.local), literal(a.value, e.lang, ""))
	}
}

// propertyElement reads one property element of subj (7.2.14 to 7.2.21).
func (p *rdfxmlParser) propertyElement(subj term, e *xelem, li *int) error {
	if e.ns == "" {
		return p.errorf(e, "property element <%s> has no namespace", e.qname())
	}
	pred := e.ns + e.local
	if e.ns == rdfNS {
		switch {
		case e.local == "li":
			*li++
			pred = rdfNS + "_" + strconv.Itoa(*li)
		case coreSyntaxTerms[e.local] || oldTerms[e.local] || e.local == "Description":
			return p.errorf(e, "<%s> cannot be a property element", e.qname())
		}
	}
	var (
		id, parseType, resource, nodeID, datatype *string
		propAttrs                                 []xattr
	)
	for _, a := range e.attrs {
		v := a.value
		switch {
		case a.ns == xmlNS || isXMLReserved(a):
			continue
		case a.ns == rdfNS || (a.ns == "" && unqualifiedRDF[a.local]):
			switch a.local {
			case "ID":
				id = &v
			case "parseType":
				parseType = &v
			case "resource":
				resource = &v
			case "nodeID":
				nodeID = &v
			case "datatype":
				datatype = &v
			case "type":
				propAttrs = append(propAttrs, xattr{ns: rdfNS, local: "type", value: v})
			default:
				if coreSyntaxTerms[a.local] || oldTerms[a.local] || a.local == "li" || a.local == "Description" {
					return p.errorf(e, "attribute rdf:%s is not allowed on property element <%s>", a.local, e.qname())
				}
				propAttrs = append(propAttrs, a)
			}
		case a.ns == "":
			return p.errorf(e, "attribute %s on <%s> has no namespace", a.local, e.qname())
		default:
			propAttrs = append(propAttrs, a)
		}
	}
	reify := func(o term) error {
		if id == nil {
			return nil
		}
		r, err := p.idIRI(e, *id)
		if err != nil {
			return err
		}
		p.emit(r, iri(rdfType), iri(rdfStatement))
		p.emit(r, iri(rdfSubject), subj)
		p.emit(r, iri(rdfPredicate), iri(pred))
		p.emit(r, iri(rdfObject), o)
		return nil
	}
	if parseType != nil {
		if resource != nil || nodeID != nil || datatype != nil || len(propAttrs) > 0 {
			return p.errorf(e, "<%s> has rdf:parseType=%q and also rdf:resource, rdf:nodeID, rdf:datatype or property attributes", e.qname(), *parseType)
		}
		switch *parseType {
		case "Resource":
			n := p.newBlank()
			p.emit(subj, iri(pred), n)
			if err := reify(n); err != nil {
				return err
			}
			inner := 0
			for _, k := range e.kids {
				switch {
				case k.el != nil:
					if err := p.propertyElement(n, k.el, &inner); err != nil {
						return err
					}
				case k.comment:
				case strings.TrimSpace(k.text) != "":
					return p.errorf(e, "text %q inside <%s rdf:parseType=\"Resource\">, where only property elements may be", abbreviate(k.text, 30), e.qname())
				}
			}
			return nil
		case "Collection":
			var items []term
			for _, k := range e.kids {
				switch {
				case k.el != nil:
					n, err := p.nodeElement(k.el)
					if err != nil {
						return err
					}
					items = append(items, n)
				case k.comment:
				case strings.TrimSpace(k.text) != "":
					return p.errorf(e, "text %q inside <%s rdf:parseType=\"Collection\">, where only node elements may be", abbreviate(k.text, 30), e.qname())
				}
			}
			head := iri(rdfNil)
			cells := make([]term, len(items))
			for i := range items {
				cells[i] = p.newBlank()
			}
			if len(cells) > 0 {
				head = cells[0]
			}
			p.emit(subj, iri(pred), head)
			for i, c := range cells {
				p.emit(c, iri(rdfFirst), items[i])
				next := iri(rdfNil)
				if i+1 < len(cells) {
					next = cells[i+1]
				}
				p.emit(c, iri(rdfRest), next)
			}
			return reify(head)
		default: // "Literal" and, as the grammar says, any other value
			o := literal(xmlLiteral(e), "", rdfXMLLiteral)
			p.emit(subj, iri(pred), o)
			return reify(o)
		}
	}
	text, hasEl := e.text()
	if hasEl {
		if strings.TrimSpace(text) != "" {
			return p.errorf(e, "<%s> mixes text %q with elements; put the text in a property or use rdf:parseType=\"Literal\"", e.qname(), abbreviate(text, 30))
		}
		if resource != nil || nodeID != nil || datatype != nil || len(propAttrs) > 0 {
			return p.errorf(e, "property element <%s> has both a child node element and rdf:resource, rdf:nodeID, rdf:datatype or property attributes", e.qname())
		}
		var child *xelem
		for _, k := range e.kids {
			if k.el == nil {
				continue
			}
			if child != nil {
				return p.errorf(k.el, "property element <%s> holds more than one node element (<%s> and <%s>)", e.qname(), child.qname(), k.el.qname())
			}
			child = k.el
		}
		o, err := p.nodeElement(child)
		if err != nil {
			return err
		}
		p.emit(subj, iri(pred), o)
		return reify(o)
	}
	hasObjectAttrs := resource != nil || nodeID != nil || len(propAttrs) > 0
	if text != "" && (!hasObjectAttrs || strings.TrimSpace(text) != "") {
		// literalPropertyElt
		if hasObjectAttrs {
			return p.errorf(e, "<%s> has text %q and also rdf:resource, rdf:nodeID or property attributes", e.qname(), abbreviate(text, 30))
		}
		o := literal(text, e.lang, "")
		if datatype != nil {
			o = literal(text, "", resolveIRI(e.base, *datatype))
		}
		p.emit(subj, iri(pred), o)
		return reify(o)
	}
	// emptyPropertyElt
	if !hasObjectAttrs {
		o := literal("", e.lang, "")
		if datatype != nil {
			o = literal("", "", resolveIRI(e.base, *datatype))
		}
		p.emit(subj, iri(pred), o)
		return reify(o)
	}
	if datatype != nil {
		return p.errorf(e, "<%s> has rdf:datatype and also rdf:resource, rdf:nodeID or property attributes", e.qname())
	}
	var o term
	switch {
	case resource != nil && nodeID != nil:
		return p.errorf(e, "<%s> has both rdf:resource and rdf:nodeID", e.qname())
	case resource != nil:
		o = iri(resolveIRI(e.base, *resource))
	case nodeID != nil:
		var err error
		if o, err = p.nodeIDBlank(e, *nodeID); err != nil {
			return err
		}
	default:
		o = p.newBlank()
	}
	p.emit(subj, iri(pred), o)
	if err := reify(o); err != nil {
		return err
	}
	p.propertyAttrs(o, e, propAttrs)
	return nil
}

// xmlLiteral serialises the content of a parseType="Literal" element in
// the exclusive canonical form of XML (W3C xml-exc-c14n): each element
// declares the namespaces it and its attributes use unless an output
// ancestor already did, attributes are sorted, empty elements are written
// as start and end tags, and text and attribute values are escaped as the
// canonical form says. Comments are kept; processing instructions are not.
func xmlLiteral(e *xelem) string {
	var b strings.Builder
	for _, k := range e.kids {
		writeC14N(&b, k, map[string]string{})
	}
	return b.String()
}

func writeC14N(b *strings.Builder, k xkid, rendered map[string]string) {
	switch {
	case k.comment:
		b.WriteString("<!--")
		b.WriteString(k.text)
		b.WriteString("-->")
		return
	case k.el == nil:
		b.WriteString(escapeC14NText(k.text))
		return
	}
	e := k.el
	// Namespaces visibly used by the element and its attributes.
	used := map[string]string{e.prefix: e.ns}
	for _, a := range e.attrs {
		if a.prefix != "" && a.prefix != "xml" {
			used[a.prefix] = a.ns
		}
	}
	scope := rendered
	var decls []string
	for prefix, ns := range used {
		have, ok := rendered[prefix]
		if (ok && have == ns) || (!ok && prefix == "" && ns == "") {
			continue
		}
		if len(decls) == 0 {
			scope = make(map[string]string, len(rendered)+len(used))
			for p, v := range rendered {
				scope[p] = v
			}
		}
		scope[prefix] = ns
		decls = append(decls, prefix)
	}
	sort.Strings(decls)
	b.WriteByte('<')
	b.WriteString(e.qname())
	for _, prefix := range decls {
		if prefix == "" {
			b.WriteString(` xmlns="`)
		} else {
			b.WriteString(" xmlns:" + prefix + `="`)
		}
		b.WriteString(escapeC14NAttr(scope[prefix]))
		b.WriteByte('"')
	}
	attrs := append([]xattr(nil), e.attrs...)
	sort.Slice(attrs, func(i, j int) bool {
		if attrs[i].ns != attrs[j].ns {
			return attrs[i].ns < attrs[j].ns
		}
		return attrs[i].local < attrs[j].local
	})
	for _, a := range attrs {
		b.WriteString(" " + a.qname() + `="`)
		b.WriteString(escapeC14NAttr(a.value))
		b.WriteByte('"')
	}
	b.WriteByte('>')
	for _, c := range e.kids {
		writeC14N(b, c, scope)
	}
	b.WriteString("</" + e.qname() + ">")
}

var (
	c14nText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\r", "&#xD;")
	c14nAttr = strings.NewReplacer("&", "&amp;", "<", "&lt;", `"`, "&quot;", "\t", "&#x9;", "\n", "&#xA;", "\r", "&#xD;")
)

func escapeC14NText(s string) string { return c14nText.Replace(s) }
func escapeC14NAttr(s string) string { return c14nAttr.Replace(s) }

// isNCName reports whether s is an XML name without colons, as rdf:ID
// and rdf:nodeID values must be.
func isNCName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == utf8.RuneError {
			return false
		}
		start := r == '_' || unicode.IsLetter(r)
		if i == 0 {
			if !start {
				return false
			}
			continue
		}
		if !(start || unicode.IsDigit(r) || r == '-' || r == '.' || r == 0xB7 || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Nl, r) || (r >= 0x203F && r <= 0x2040)) {
			return false
		}
	}
	return true
}
