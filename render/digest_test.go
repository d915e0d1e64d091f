package render

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"
)

func fixtureDigest(fx fixture) DigestData {
	return DigestData{User: fx.User, Day: digestDay, Events: fx.Events}
}

func TestDigestGolden(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	d := fixtureDigest(fx)

	var page, text bytes.Buffer
	if err := e.Digest(&page, d); err != nil {
		t.Fatal(err)
	}
	if err := e.DigestText(&text, d); err != nil {
		t.Fatal(err)
	}
	golden(t, "digest.html", page.Bytes())
	golden(t, "digest.txt", text.Bytes())

	html := page.String()
	checkSafeHTML(t, "digest", html)
	if strings.Contains(html, "<style") || strings.Contains(html, "<link") {
		t.Error("the digest must use inline styles only")
	}
	// Profile matches first, grouped by watch, then the other changes.
	order := []string{
		"★ Matches your interests",
		">Semantic Web notes</a>", "matches your interest semantic web (key term: RDF)", "matches your interest ontology",
		">City sports news</a>", "matches your interest football (synonym: soccer)",
		"Evil &lt;script&gt;alert(1)&lt;/script&gt; page",
		"Other changes",
		">City sports news</a>", "Tickets for the spring tournament", "sunny spells",
		">Semantic Web notes</a>", "dogs",
	}
	pos := 0
	for _, s := range order {
		i := strings.Index(html[pos:], s)
		if i < 0 {
			t.Fatalf("digest lacks %q after byte %d (or it is out of order)", s, pos)
		}
		pos += i + len(s)
	}
	// Times are shown in the digest's zone (CET = UTC+1).
	if !strings.Contains(html, "09:15 · version 12") {
		t.Error("times are not in the digest's time zone")
	}
	if !strings.Contains(text.String(), "[-football-]{+**soccer**+}") {
		t.Error("the text digest lacks the word diff with the mark")
	}
}

func TestDigestCaps(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	e.DigestChanges = 1
	e.DigestWatches = 1
	var page bytes.Buffer
	if err := e.Digest(&page, fixtureDigest(fx)); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{
		`href="https://changes.example.org/watches/1">…and 1 more change on this page</a>`,
		`href="https://changes.example.org/">…and 2 more watches with matching changes</a>`,
		`href="https://changes.example.org/">…and 1 more watch with changes</a>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("digest lacks %q", want)
		}
	}
}

func TestDigestEmpty(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	var page, text bytes.Buffer
	d := DigestData{User: fx.User, Day: digestDay}
	if err := e.Digest(&page, d); err != nil {
		t.Fatal(err)
	}
	if err := e.DigestText(&text, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "None of your watched pages changed that day.") || !strings.Contains(text.String(), "None of your watched pages changed that day.") {
		t.Errorf("empty digest:\n%s\n%s", page.String(), text.String())
	}
}

func TestDigestEmail(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	d := fixtureDigest(fx)
	h := MailHeader{
		From: mail.Address{Name: "changedigest", Address: "digest@changes.example.org"},
		Date: time.Date(2026, 3, 15, 7, 0, 0, 0, time.UTC),
	}
	var msg bytes.Buffer
	if err := e.DigestEmail(&msg, h, d); err != nil {
		t.Fatal(err)
	}
	golden(t, "digest.eml", msg.Bytes())
	for i, line := range strings.Split(msg.String(), "\r\n") {
		if len(line) > 998 || strings.Contains(line, "\n") {
			t.Fatalf("line %d is %d bytes or holds a bare LF", i+1, len(line))
		}
	}

	m, err := mail.ReadMessage(bytes.NewReader(msg.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"From":           `"changedigest" <digest@changes.example.org>`,
		"To":             `"ada" <ada@example.org>`,
		"Date":           "Sun, 15 Mar 2026 07:00:00 +0000",
		"Message-Id":     "<digest.7.20260314@changes.example.org>",
		"Mime-Version":   "1.0",
		"Auto-Submitted": "auto-generated",
	} {
		if got := m.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if subject != "Your changedigest for Saturday 14 March 2026: 7 changes on 3 watches, 4 matching your interests" {
		t.Errorf("subject %q", subject)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("content type %q: %v", m.Header.Get("Content-Type"), err)
	}
	var wantText, wantHTML bytes.Buffer
	e.DigestText(&wantText, d)
	e.Digest(&wantHTML, d)
	mr := multipart.NewReader(m.Body, params["boundary"])
	for i, want := range []struct {
		typ  string
		body []byte
	}{{"text/plain; charset=utf-8", wantText.Bytes()}, {"text/html; charset=utf-8", wantHTML.Bytes()}} {
		p, err := mr.NextRawPart()
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if p.Header.Get("Content-Type") != want.typ || p.Header.Get("Content-Transfer-Encoding") != "quoted-printable" {
			t.Errorf("part %d header %v", i, p.Header)
		}
		body, err := io.ReadAll(quotedprintable.NewReader(p))
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		// Quoted-printable carries line ends as CRLF.
		if got := bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")); !bytes.Equal(got, want.body) {
			t.Errorf("part %d does not decode to the %s digest", i, want.typ)
		}
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Errorf("a third part: %v", err)
	}
}

func TestDigestErrors(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	d := fixtureDigest(fx)
	from := mail.Address{Address: "digest@changes.example.org"}
	date := time.Date(2026, 3, 15, 7, 0, 0, 0, time.UTC)
	noEmail := *fx.User
	noEmail.Email = ""
	tests := []struct {
		name string
		h    MailHeader
		d    DigestData
		want error
	}{
		{"no user", MailHeader{From: from, Date: date}, DigestData{Day: digestDay}, ErrInvalidEvent},
		{"no day", MailHeader{From: from, Date: date}, DigestData{User: fx.User}, ErrInvalidEvent},
		{"bad event", MailHeader{From: from, Date: date}, DigestData{User: fx.User, Day: digestDay, Events: []Event{{}}}, ErrInvalidEvent},
		{"no from", MailHeader{Date: date}, d, ErrInvalidMail},
		{"no date", MailHeader{From: from}, d, ErrInvalidMail},
		{"user without e-mail", MailHeader{From: from, Date: date}, DigestData{User: &noEmail, Day: digestDay}, ErrInvalidMail},
		{"address with a header in it", MailHeader{From: mail.Address{Address: "a@b.org\r\nBcc: x@y.org"}, Date: date}, d, ErrInvalidMail},
		{"address with a name in it", MailHeader{From: mail.Address{Address: "Eve <eve@b.org>"}, Date: date}, d, ErrInvalidMail},
		{"bad message id", MailHeader{From: from, Date: date, MessageID: "<x@y>\r\nBcc: z@w"}, d, ErrInvalidMail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := e.DigestEmail(&buf, tt.h, tt.d)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DigestEmail: %v, want %v", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error", buf.Len())
			}
		})
	}
}

func TestDigestEmailHeaderNames(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	u := *fx.User
	u.Name = "Zoë\r\nBcc: eve@evil.example"
	h := MailHeader{From: mail.Address{Name: "Änderungen", Address: "digest@changes.example.org"}, Date: time.Unix(0, 0), Subject: "Über\r\nBcc: x@y"}
	var msg bytes.Buffer
	if err := e.DigestEmail(&msg, h, DigestData{User: &u, Day: digestDay, Events: []Event{}}); err != nil {
		t.Fatal(err)
	}
	m, err := mail.ReadMessage(&msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Header["Bcc"]) != 0 {
		t.Fatal("a name or subject injected a header")
	}
	to, err := mail.ParseAddress(m.Header.Get("To"))
	if err != nil || to.Name != "Zoë Bcc: eve@evil.example" || to.Address != "ada@example.org" {
		t.Errorf("To: %v %v", to, err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if subject != "Über Bcc: x@y" {
		t.Errorf("Subject %q", subject)
	}
}
