package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/segmenter"
)

// OPML import limits.
const (
	// maxOPMLOutlines bounds the outlines (feeds and folders) of one file.
	maxOPMLOutlines = 1000
	// maxOPMLDepth bounds the nesting of outlines.
	maxOPMLDepth = 32
	// maxOPMLTitle bounds a watch title taken from an outline, in bytes
	// (as many characters at most: changedigest.MaxTitleLen).
	maxOPMLTitle = changedigest.MaxTitleLen
	// maxTagBytes is the longest tag a watch takes (changedigest.Watch.Validate).
	maxTagBytes = changedigest.MaxTagLen
)

// opmlTypes are the media types POST /api/v1/opml takes.
var opmlTypes = []string{"text/x-opml", "application/xml", "text/xml", "application/x-opml"}

// opmlDoc is an OPML document as read, before it becomes watches.
type opmlDoc struct {
	Title    string
	Outlines []*opmlOutline
}

// opmlOutline is one <outline> with the attributes an import uses. Files
// in the wild spell them in any case (xmlUrl, xmlURL, xmlurl), so
// attribute and element names are matched ignoring case.
type opmlOutline struct {
	Text, Title, Type, XMLURL, HTMLURL, Category string
	// URL is the address of a link outline (type="link").
	URL      string
	Children []*opmlOutline
}

// parseOPML reads an OPML document (any version; the encoding from a
// byte order mark, the Content-Type charset or the XML declaration).
// Errors: EINVALID for malformed XML (with the line), a DOCTYPE that
// declares entities, a document that is not OPML or has no <body>, or
// outlines nested deeper than maxOPMLDepth; ETOOLARGE for more than maxOPMLOutlines outlines.
func parseOPML(data []byte, contentType string) (*opmlDoc, error) {
	d := xml.NewDecoder(bytes.NewReader(crawl.ToUTF8(data, contentType)))
	d.Strict = true
	// &nbsp; and friends are common in exported titles.
	d.Entity = xml.HTMLEntity
	// ToUTF8 has decoded the document already, whatever it declares.
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	doc := &opmlDoc{}
	var (
		stack          []*opmlOutline // open outlines, innermost last
		depth, count   int
		root, haveBody bool
		inHead, inBody bool
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, opmlSyntaxError(d, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name := strings.ToLower(t.Name.Local)
			switch {
			case depth == 1:
				if name != "opml" {
					return nil, changedigest.Errorf(changedigest.EINVALID, "this is not an OPML file: its root element is <%s>, not <opml>", t.Name.Local)
				}
				root = true
			case depth == 2 && name == "head":
				inHead = true
			case depth == 2 && name == "body":
				inBody, haveBody = true, true
			case depth == 3 && inHead && name == "title":
				var title string
				if err := d.DecodeElement(&title, &t); err != nil {
					return nil, opmlSyntaxError(d, err)
				}
				doc.Title = strings.TrimSpace(title)
				depth--
			case inBody && name == "outline":
				line, _ := d.InputPos()
				if count++; count > maxOPMLOutlines {
					return nil, changedigest.Errorf(changedigest.ETOOLARGE,
						"the OPML file has more than %d outlines (line %d); split it into smaller files", maxOPMLOutlines, line)
				}
				if len(stack) >= maxOPMLDepth {
					return nil, changedigest.Errorf(changedigest.EINVALID,
						"the OPML file nests outlines more than %d deep (line %d)", maxOPMLDepth, line)
				}
				o := outlineOf(t.Attr)
				if len(stack) == 0 {
					doc.Outlines = append(doc.Outlines, o)
				} else {
					top := stack[len(stack)-1]
					top.Children = append(top.Children, o)
				}
				stack = append(stack, o)
			case depth > 2:
				// Anything else inside <head> or <body> is left alone.
				if err := d.Skip(); err != nil {
					return nil, opmlSyntaxError(d, err)
				}
				depth--
			}
		case xml.Directive:
			// encoding/xml never expands what a DOCTYPE declares, so an
			// entity bomb fails at its first reference; say why, rather
			// than that the entity is not a character entity.
			if bytes.HasPrefix(t, []byte("DOCTYPE")) && bytes.Contains(t, []byte("<!ENTITY")) {
				line, _ := d.InputPos()
				return nil, changedigest.Errorf(changedigest.EINVALID,
					"the OPML file declares entities in its <!DOCTYPE> (ending at line %d); an import does not expand them: remove the DOCTYPE", line)
			}
		case xml.EndElement:
			depth--
			name := strings.ToLower(t.Name.Local)
			switch {
			case depth == 0:
				if !haveBody {
					return nil, changedigest.Errorf(changedigest.EINVALID, "the OPML file has no <body> with outlines")
				}
				return doc, nil // what follows the root element is not OPML's business
			case depth == 1:
				inHead, inBody = false, false
			case inBody && name == "outline" && len(stack) > 0:
				stack = stack[:len(stack)-1]
			}
		}
	}
	if !root {
		return nil, changedigest.Errorf(changedigest.EINVALID, "this is not an OPML file: it holds no XML element")
	}
	line, _ := d.InputPos()
	return nil, changedigest.Errorf(changedigest.EINVALID, "the OPML file ends early at line %d: <opml> is not closed", line)
}

func opmlSyntaxError(d *xml.Decoder, err error) error {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		if se.Msg == "unexpected EOF" {
			return changedigest.Errorf(changedigest.EINVALID, "the OPML file is not well-formed XML: it ends early, at line %d, inside an element", se.Line)
		}
		return changedigest.Errorf(changedigest.EINVALID, "the OPML file is not well-formed XML: line %d: %s", se.Line, se.Msg)
	}
	line, _ := d.InputPos()
	return changedigest.Errorf(changedigest.EINVALID, "the OPML file could not be read at line %d: %v", line, err)
}

func outlineOf(attrs []xml.Attr) *opmlOutline {
	o := &opmlOutline{}
	for _, a := range attrs {
		v := strings.TrimSpace(a.Value)
		switch strings.ToLower(a.Name.Local) {
		case "text":
			o.Text = v
		case "title":
			o.Title = v
		case "type":
			o.Type = v
		case "xmlurl":
			o.XMLURL = v
		case "htmlurl":
			o.HTMLURL = v
		case "category":
			o.Category = v
		case "url":
			o.URL = v
		}
	}
	return o
}

// opmlFeed is a feed to watch, adapted from an outline.
type opmlFeed struct {
	URL, Title string
	Tags       []string
}

// opmlSkip is an outline that was not imported, and why.
type opmlSkip struct {
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	Reason string `json:"reason"`
}

// feeds adapts the outlines to watches. An outline with an xmlUrl is a feed,
// one of type "link" with a url a page;
// its tags are the titles of the folders (outlines without xmlUrl that
// hold others) it sits in and the parts of its category attribute
// (comma-separated, slash-delimited paths, as OPML 2.0 has them). An
// outline with neither an xmlUrl nor children is skipped.
func (d *opmlDoc) feeds() ([]opmlFeed, []opmlSkip) {
	var feeds []opmlFeed
	var skips []opmlSkip
	var walk func(outlines []*opmlOutline, folders []string)
	walk = func(outlines []*opmlOutline, folders []string) {
		for _, o := range outlines {
			name := strings.Join(strings.Fields(cmp.Or(o.Title, o.Text)), " ")
			switch {
			case o.XMLURL != "":
				u := opmlURL(o.XMLURL)
				title := name
				if title == u || title == o.XMLURL {
					title = "" // the file had no title; let the feed's own show
				}
				feeds = append(feeds, opmlFeed{URL: u, Title: truncate(title, maxOPMLTitle),
					Tags: opmlTags(append(slices.Clone(folders), strings.Split(o.Category, ",")...))})
				walk(o.Children, folders)
			case len(o.Children) > 0:
				walk(o.Children, append(slices.Clone(folders), name))
			case strings.EqualFold(o.Type, "link") && o.URL != "":
				// A page (as this service exports its page watches).
				title := name
				if title == o.URL {
					title = ""
				}
				feeds = append(feeds, opmlFeed{URL: strings.TrimSpace(o.URL), Title: truncate(title, maxOPMLTitle),
					Tags: opmlTags(append(slices.Clone(folders), strings.Split(o.Category, ",")...))})
			default:
				skips = append(skips, opmlSkip{URL: cmp.Or(o.HTMLURL, o.URL), Title: truncate(name, maxOPMLTitle), Reason: "no xmlUrl: not a feed"})
			}
		}
	}
	walk(d.Outlines, nil)
	return feeds, skips
}

// opmlURL undoes the feed: pseudo-scheme some readers write.
func opmlURL(s string) string {
	s = strings.TrimSpace(s)
	low := strings.ToLower(s)
	switch {
	case strings.HasPrefix(low, "feed://"):
		return "http://" + s[len("feed://"):]
	case strings.HasPrefix(low, "feed:http:"), strings.HasPrefix(low, "feed:https:"):
		return s[len("feed:"):]
	}
	return s
}

// opmlTags turns folder names and category paths into watch tags: each
// part of a slash-delimited path is a tag, cut to the longest tag allowed.
func opmlTags(names []string) []string {
	var parts []string
	for _, n := range names {
		for _, p := range strings.Split(n, "/") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, truncate(p, maxTagBytes))
			}
		}
	}
	return changedigest.NormaliseTags(parts)
}

// truncate cuts s to at most n bytes at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// opmlImport is what an import did.
type opmlImport struct {
	Imported       []changedigest.Watch
	Skipped        []opmlSkip
	AlreadyWatched int
	Invalid        int
}

// Summary says what the import did, for people.
func (res *opmlImport) Summary() string {
	msg := "Imported " + plural(len(res.Imported), "watch", "watches")
	if n := len(res.Skipped); n > 0 {
		msg += fmt.Sprintf(", skipped %d (%d already watched, %d invalid)", n, res.AlreadyWatched, res.Invalid)
	}
	return msg + "."
}

// importOPML creates a watch of u for every feed of an OPML document that
// u does not watch yet, due at once. A feed whose URL is not an absolute
// http(s) URL is skipped as invalid. Errors: parseOPML's; a store failure
// stops the import (the watches created so far stay).
func (s *Server) importOPML(ctx context.Context, u *changedigest.User, data []byte, contentType string) (*opmlImport, error) {
	doc, err := parseOPML(data, contentType)
	if err != nil {
		return nil, err
	}
	feeds, skips := doc.feeds()
	res := &opmlImport{Skipped: skips, Invalid: len(skips)}
	existing, err := s.Store.Watches(ctx, u.ID, "")
	if err != nil {
		return nil, err
	}
	watched := map[string]bool{}
	for _, w := range existing {
		watched[w.URL] = true
	}
	skip := func(f opmlFeed, reason string, invalid bool) {
		res.Skipped = append(res.Skipped, opmlSkip{URL: f.URL, Title: f.Title, Reason: reason})
		if invalid {
			res.Invalid++
		} else {
			res.AlreadyWatched++
		}
	}
	now := s.now()
	for _, f := range feeds {
		w := &changedigest.Watch{UserID: u.ID, URL: f.URL, Title: f.Title, Tags: f.Tags, NextCheck: now}
		if err := w.Validate(); err != nil {
			skip(f, changedigest.ErrorMessage(err), true)
			continue
		}
		if watched[w.URL] {
			skip(f, "already watched", false)
			continue
		}
		switch err := s.Store.CreateWatch(ctx, w); changedigest.ErrorCode(err) {
		case "":
		case changedigest.ECONFLICT:
			skip(f, "already watched", false)
			continue
		case changedigest.EINVALID:
			skip(f, changedigest.ErrorMessage(err), true)
			continue
		default:
			return nil, fmt.Errorf("server: OPML import stopped after %d feeds: %w", len(res.Imported), err)
		}
		watched[w.URL] = true
		res.Imported = append(res.Imported, *w)
	}
	s.Logger.Info("opml imported", "user", u.ID, "imported", len(res.Imported), "skipped", len(res.Skipped))
	return res, nil
}

// opmlOut and its parts are the OPML 2.0 document an export writes.
type opmlOut struct {
	XMLName xml.Name          `xml:"opml"`
	Version string            `xml:"version,attr"`
	Head    opmlOutHead       `xml:"head"`
	Body    []*opmlOutOutline `xml:"body>outline"`
}

type opmlOutHead struct {
	Title       string `xml:"title"`
	DateCreated string `xml:"dateCreated"`
	OwnerName   string `xml:"ownerName,omitempty"`
	Docs        string `xml:"docs"`
}

type opmlOutOutline struct {
	Type     string            `xml:"type,attr,omitempty"`
	Text     string            `xml:"text,attr"`
	Title    string            `xml:"title,attr,omitempty"`
	XMLURL   string            `xml:"xmlUrl,attr,omitempty"`
	HTMLURL  string            `xml:"htmlUrl,attr,omitempty"`
	URL      string            `xml:"url,attr,omitempty"`
	Category string            `xml:"category,attr,omitempty"`
	Children []*opmlOutOutline `xml:"outline"`
}

// exportOPML writes u's watches (those carrying tag, when set) as OPML
// 2.0: a feed as an outline of type "rss" (xmlUrl), which feed readers
// subscribe to; a page as an outline of type "link" (url), which feed
// readers pass over and an import here reads back as a watch. A watch
// whose kind is not known yet (never fetched successfully) is a feed when
// its address looks like one (feedLike), else a link. Each sits
// in a folder named after its first tag, as feed readers show folders;
// all its tags are in the category attribute, so an import gives back
// the same tags.
func (s *Server) exportOPML(ctx context.Context, u *changedigest.User, tag string) ([]byte, error) {
	ws, err := s.Store.Watches(ctx, u.ID, tag)
	if err != nil {
		return nil, err
	}
	doc := opmlOut{Version: "2.0", Head: opmlOutHead{Title: "Pages and feeds watched by " + u.Name + " with changedigest",
		DateCreated: s.now().UTC().Format(time.RFC1123Z), OwnerName: u.Name, Docs: "https://opml.org/spec2.opml"}}
	folders := map[string]*opmlOutOutline{}
	var loose []*opmlOutOutline
	for i := range ws {
		w := &ws[i]
		var o *opmlOutOutline
		if w.Kind == changedigest.KindFeed || w.Kind == "" && feedLike(w.URL) {
			link, title := s.feedSite(ctx, w)
			name := cmp.Or(w.Title, title, w.URL)
			o = &opmlOutOutline{Type: "rss", Text: name, Title: name, XMLURL: w.URL, HTMLURL: link}
		} else {
			name := cmp.Or(w.Title, w.URL)
			o = &opmlOutOutline{Type: "link", Text: name, Title: name, URL: w.URL}
		}
		o.Category = strings.Join(w.Tags, ",")
		if len(w.Tags) == 0 {
			loose = append(loose, o)
			continue
		}
		f := folders[w.Tags[0]]
		if f == nil {
			f = &opmlOutOutline{Text: w.Tags[0], Title: w.Tags[0]}
			folders[w.Tags[0]] = f
		}
		f.Children = append(f.Children, o)
	}
	for _, name := range slices.Sorted(maps.Keys(folders)) {
		doc.Body = append(doc.Body, folders[name])
	}
	doc.Body = append(doc.Body, loose...)
	if doc.Body == nil {
		doc.Body = []*opmlOutOutline{} // an OPML body must be present, even empty
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("server: write OPML: %w", err)
	}
	return append(append([]byte(xml.Header), out...), '\n'), nil
}

// feedLike reports whether an address of a watch not fetched yet looks
// like a feed's (…/feed, …/rss.xml, ….atom): it is exported as one.
func feedLike(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	path := strings.ToLower(p.Path + "?" + p.RawQuery)
	for _, w := range []string{"rss", "atom", "feed", ".xml", ".rdf"} {
		if strings.Contains(path, w) {
			return true
		}
	}
	return false
}

// feedSite reads the site link and title of a feed watch from its newest
// stored version; "" when there is none or it cannot be read (logged).
func (s *Server) feedSite(ctx context.Context, w *changedigest.Watch) (link, title string) {
	if w.Kind != changedigest.KindFeed {
		return "", ""
	}
	vs, err := s.Store.Versions(ctx, w.ID, 0, 1)
	if err != nil || len(vs) == 0 {
		if err != nil {
			s.Logger.Warn("opml export: newest version", "watch", w.ID, "err", err)
		}
		return "", ""
	}
	body, err := s.Store.Body(ctx, w.ID, vs[0].Seq)
	if err != nil {
		s.Logger.Warn("opml export: body", "watch", w.ID, "seq", vs[0].Seq, "err", err)
		return "", vs[0].Title
	}
	f, err := segmenter.ParseFeed(crawl.ToUTF8(body, vs[0].ContentType))
	if err != nil {
		s.Logger.Warn("opml export: parse feed", "watch", w.ID, "seq", vs[0].Seq, "err", err)
		return "", vs[0].Title
	}
	return f.Link, cmp.Or(f.Title, vs[0].Title)
}

// writeOPML sends an OPML document as a download.
func writeOPML(w http.ResponseWriter, u *changedigest.User, data []byte) error {
	h := w.Header()
	h.Set("Content-Type", "text/x-opml; charset=utf-8")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "changedigest-" + u.Name + ".opml"}))
	h.Set("Cache-Control", "no-store")
	_, err := w.Write(data)
	return err
}

// exportTag reads the optional ?tag= of an export.
func exportTag(r *http.Request) (string, error) {
	t := r.URL.Query().Get("tag")
	if t == "" {
		return "", nil
	}
	tag, ok := oneTag(t)
	if !ok {
		return "", changedigest.Errorf(changedigest.EINVALID, "tag: %q is not one tag of at most %d characters", clip(t), changedigest.MaxTagLen)
	}
	return tag, nil
}

// handleExportOPML sends the user's feeds as an OPML file (GET /opml, on
// the web and in the API).
func (s *Server) handleExportOPML(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	tag, err := exportTag(r)
	if err != nil {
		return err
	}
	data, err := s.exportOPML(r.Context(), u, tag)
	if err != nil {
		return err
	}
	return writeOPML(w, u, data)
}

// handleImportOPML imports the OPML file of the form field "opml" (POST
// /opml) and says on the dashboard what came of it.
func (s *Server) handleImportOPML(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		switch changedigest.ErrorCode(err) {
		case changedigest.EINVALID, changedigest.ETOOLARGE:
			s.setFlash(w, "error", "Nothing was imported: "+changedigest.ErrorMessage(err))
			return s.redirect(w, r, "/")
		}
		return err
	}
	data, hdr, err := s.readUpload(r, "opml", "choose an OPML file to import", "the OPML file")
	if err != nil {
		return fail(err)
	}
	res, err := s.importOPML(r.Context(), u, data, hdr.Header.Get("Content-Type"))
	if err != nil {
		return fail(err)
	}
	s.setFlash(w, "info", res.Summary())
	return s.redirect(w, r, "/")
}

// apiImportOPML imports the OPML document of the request body.
func (s *Server) apiImportOPML(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	data, err := readBody(r, "OPML document")
	if err != nil {
		return err
	}
	res, err := s.importOPML(r.Context(), u, data, r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	watches := make([]apiWatch, len(res.Imported))
	for i := range res.Imported {
		watches[i] = s.apiWatchOf(u, &res.Imported[i])
	}
	skipped := res.Skipped
	if skipped == nil {
		skipped = []opmlSkip{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"imported": len(res.Imported), "skipped": len(res.Skipped),
		"already_watched": res.AlreadyWatched, "invalid": res.Invalid, "message": res.Summary(),
		"watches": watches, "skipped_outlines": skipped})
}

// readUpload reads the file of form field, up to MaxUpload bytes. Errors:
// EINVALID when none was sent (missing says what to choose) or it cannot
// be read, ETOOLARGE when it is larger (what names it).
func (s *Server) readUpload(r *http.Request, field, missing, what string) ([]byte, *multipart.FileHeader, error) {
	f, hdr, err := r.FormFile(field)
	if errors.Is(err, http.ErrMissingFile) {
		return nil, nil, changedigest.Errorf(changedigest.EINVALID, "%s", missing)
	} else if err != nil {
		return nil, nil, changedigest.Errorf(changedigest.EINVALID, "the upload could not be read: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.MaxUpload+1))
	if err != nil {
		return nil, nil, changedigest.Errorf(changedigest.EINVALID, "the upload could not be read: %v", err)
	}
	if int64(len(data)) > s.MaxUpload {
		return nil, nil, changedigest.Errorf(changedigest.ETOOLARGE, "%s is larger than %d bytes", what, s.MaxUpload)
	}
	return data, hdr, nil
}
