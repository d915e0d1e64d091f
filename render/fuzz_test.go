package render

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// atomElements are the elements the feed may contain; anything else in
// the XML would be markup planted by a page.
var atomElements = map[string]bool{
	"feed": true, "id": true, "title": true, "subtitle": true, "updated": true, "link": true,
	"author": true, "name": true, "generator": true, "entry": true, "published": true,
	"category": true, "content": true,
}

// FuzzRender puts hostile page text in every field an event carries and
// checks the feed is well-formed XML with only Atom elements, and that
// the HTML of the feed entries, the digest and the version page holds no
// script, event handler or non-http link.
func FuzzRender(f *testing.F) {
	seeds := [][]string{
		{"<script>alert(1)</script>", "javascript:alert(1)", "<b onmouseover=alert(1)>", "]]> <![CDATA[", "\x00\x01\x1b\ufffe", "<img src=x onerror=alert(1)>", "JaVaScRiPt:alert(1)", "\" onerror=\"alert(1)", "football"},
		{"Title", "https://example.org/", "html|body", "old text", "new text soccer", "item", "https://example.org/i", "football", "soccer"},
		{"\xff\xfe bad utf8", "data:text/html;base64,PHNjcmlwdD4=", "</textarea><script>", "&lt;script&gt;", "&#x6a;avascript:alert(1)", "<svg/onload=alert(1)>", "https://x.org/\"><script>", "<style>", "x"},
		{"", "", "", "", "", "", "", "", ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], 2, 9)
	}
	e := MustEngine(f)
	user := &changedigest.User{ID: 1, Name: "fuzz", Email: "fuzz@example.org", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.Fuzz(func(t *testing.T, title, url, path, oldText, newText, itemTitle, link, interest, term string, start, end int) {
		// The watch asks for changes of the fuzzed type.
		w := &changedigest.Watch{ID: 5, URL: url, Title: title, Tags: []string{title, path}, CreatedAt: user.CreatedAt,
			NotifyTypes: []changedigest.ChangeType{changedigest.ChangeType(term)}}
		s := &changedigest.Snapshot{WatchID: 5, Seq: 3, FetchedAt: time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC), Kind: changedigest.KindFeed}
		for _, op := range []changedigest.Op{changedigest.OpUpdate, changedigest.OpInsert, changedigest.OpDelete} {
			c := changedigest.Change{Path: path, Type: changedigest.ChangeType(term), Op: op, OldText: oldText, NewText: newText, Title: itemTitle, Link: link}
			switch op {
			case changedigest.OpInsert:
				c.OldText = ""
			case changedigest.OpDelete:
				c.NewText = ""
			}
			s.Changes = append(s.Changes, c)
		}
		m := changedigest.Match{Interest: interest, Term: term, Relation: path, Start: start, End: end}
		ev := Event{Watch: w, Snapshot: s, Matches: [][]changedigest.Match{{m}, {m}, {m}}}

		var feed bytes.Buffer
		if err := e.Atom(&feed, e.WatchFeed(user, w, "https://changes.example.org/feeds/5.atom"), []Event{ev}); err != nil {
			t.Fatalf("Atom: %v", err)
		}
		dec := xml.NewDecoder(bytes.NewReader(feed.Bytes()))
		dec.Strict = true
		var contents []string
		inContent := false
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("feed is not well-formed XML: %v\n%s", err, feed.Bytes())
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				if tok.Name.Space != atomNS || !atomElements[tok.Name.Local] {
					t.Fatalf("feed holds a foreign element %v", tok.Name)
				}
				inContent = tok.Name.Local == "content"
				if inContent {
					contents = append(contents, "")
				}
			case xml.CharData:
				if inContent {
					contents[len(contents)-1] += string(tok)
				}
			case xml.EndElement:
				inContent = false
			}
		}
		if len(contents) != 1 {
			t.Fatalf("%d entry contents, want 1", len(contents))
		}
		checkSafeHTML(t, "feed content", contents[0])

		var page bytes.Buffer
		d := DigestData{User: user, Day: time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC), Events: []Event{ev}}
		if err := e.Digest(&page, d); err != nil {
			t.Fatalf("Digest: %v", err)
		}
		checkSafeHTML(t, "digest", page.String())

		dp, err := e.DiffPage(ev, 2, 4)
		if err != nil {
			t.Fatalf("DiffPage: %v", err)
		}
		page.Reset()
		if err := e.Render(&page, "diff", Page{Title: title, Flash: &Flash{Kind: path, Message: title}, Data: dp}); err != nil {
			t.Fatalf("Render diff: %v", err)
		}
		checkSafeHTML(t, "diff page", page.String())

		var msg bytes.Buffer
		h := MailHeader{From: mail.Address{Name: title, Address: "digest@example.org"}, To: mail.Address{Name: itemTitle, Address: "fuzz@example.org"}, Date: d.Day}
		if err := e.DigestEmail(&msg, h, d); err != nil {
			t.Fatalf("DigestEmail: %v", err)
		}
		parsed, err := mail.ReadMessage(&msg)
		if err != nil {
			t.Fatalf("mail does not parse: %v", err)
		}
		if len(parsed.Header) != 8 {
			t.Fatalf("mail has %d header fields, want 8 (a name broke out of its field?)", len(parsed.Header))
		}
		if strings.ContainsAny(parsed.Header.Get("To"), "\r\n") {
			t.Fatalf("To header holds a line break")
		}
	})
}
