package notify

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/url"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/smtptest"
)

const testTemplate = `{{define "title"}}T: {{.Watch.Name}} #{{.Seq}}{{end}}MSG {{.Watch.Name}}{{range .Changes}} [{{.Op}} {{.Old}} → {{.New}}{{range .Matches}} ({{.}}){{end}}]{{end}} {{.URL}}`

// checkTemplated checks a message and title written by testTemplate.
func checkTemplated(t *testing.T, kind, title, text string) {
	t.Helper()
	if !strings.HasPrefix(text, "MSG News [update Library hours → The football club won on Sunday (matches your interest football)] http://cd.example.org/watches/") {
		t.Errorf("%s: message %q", kind, text)
	}
	if title != "-" && title != "T: News #1" {
		t.Errorf("%s: title %q", kind, title)
	}
}

// TestTemplateEveryKind sends a change to a channel of each kind with a
// message template, against the loopback fakes of their services: each
// sends what the template wrote, and its title where the kind has one.
func TestTemplateEveryKind(t *testing.T) {
	const userKey = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
	kinds := []struct {
		ch   changedigest.Channel
		read func(t *testing.T, r received) (title, text string)
	}{
		{changedigest.Channel{Kind: changedigest.ChannelWebhook, Secret: "k"}, func(t *testing.T, r received) (string, string) {
			if r.header.Get("Content-Type") != "text/plain; charset=utf-8" || r.header.Get(SignatureHeader) == "" {
				t.Errorf("webhook headers %v", r.header)
			}
			return "-", string(r.body)
		}},
		{changedigest.Channel{Kind: changedigest.ChannelSlack}, func(t *testing.T, r received) (string, string) {
			var m struct{ Text string }
			json.Unmarshal(r.body, &m)
			return "-", m.Text
		}},
		{changedigest.Channel{Kind: changedigest.ChannelMattermost}, func(t *testing.T, r received) (string, string) {
			var m struct{ Text string }
			json.Unmarshal(r.body, &m)
			return "-", m.Text
		}},
		{changedigest.Channel{Kind: changedigest.ChannelDiscord}, func(t *testing.T, r received) (string, string) {
			var m struct{ Content string }
			json.Unmarshal(r.body, &m)
			return "-", m.Content
		}},
		{changedigest.Channel{Kind: changedigest.ChannelNtfy}, func(t *testing.T, r received) (string, string) {
			return r.header.Get("Title"), string(r.body)
		}},
		{changedigest.Channel{Kind: changedigest.ChannelGotify, Secret: "AppTok"}, func(t *testing.T, r received) (string, string) {
			var m struct{ Title, Message string }
			json.Unmarshal(r.body, &m)
			return m.Title, m.Message
		}},
		{changedigest.Channel{Kind: changedigest.ChannelTelegram, Secret: "123:ABC", Room: "-100200300"}, func(t *testing.T, r received) (string, string) {
			var m struct{ Text string }
			json.Unmarshal(r.body, &m)
			return "-", m.Text
		}},
		{changedigest.Channel{Kind: changedigest.ChannelPushover, Secret: "azGDORePK8gMaC0QOYAMyEEuzJnyUi", Room: userKey}, func(t *testing.T, r received) (string, string) {
			form, _ := url.ParseQuery(string(r.body))
			return form.Get("title"), form.Get("message")
		}},
	}
	for _, k := range kinds {
		t.Run(string(k.ch.Kind), func(t *testing.T) {
			f := newFixture(t)
			rc := newReceiver(t)
			k.ch.URL, k.ch.Template = rc.URL+"/"+string(k.ch.Kind), testTemplate
			f.channel(t, k.ch)
			f.addVersion(t, f.now, []string{"a"}, footballChange)
			drain(t, f.dispatcher())
			got := rc.got()
			if len(got) != 1 {
				t.Fatalf("%d requests", len(got))
			}
			title, text := k.read(t, got[0])
			checkTemplated(t, string(k.ch.Kind), title, text)
		})
	}
	t.Run("matrix", func(t *testing.T) {
		f := newFixture(t)
		const room = "!abc:example.org"
		hs := newHomeserver(t, "syt_token", room)
		f.channel(t, changedigest.Channel{Kind: changedigest.ChannelMatrix, URL: hs.URL, Room: room, Secret: "syt_token", Template: testTemplate})
		f.addVersion(t, f.now, []string{"a"}, footballChange)
		drain(t, f.dispatcher())
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if len(hs.events) != 1 {
			t.Fatalf("%d events", len(hs.events))
		}
		ev := hs.events[hs.order[0]]
		if _, ok := ev["formatted_body"]; ok || ev["msgtype"] != "m.text" {
			t.Errorf("event %v", ev)
		}
		body, _ := ev["body"].(string)
		checkTemplated(t, "matrix", "-", body)
	})
	t.Run("email", func(t *testing.T) {
		f := newFixture(t)
		srv := smtptest.New(t)
		mailer, err := NewMailer(srv.Addr, "changedigest <digest@cd.example.org>")
		if err != nil {
			t.Fatal(err)
		}
		f.n.Mail = mailer
		f.channel(t, changedigest.Channel{Kind: changedigest.ChannelEmail, URL: "ann.phone@example.org", Template: testTemplate})
		f.addVersion(t, f.now, []string{"a"}, footballChange)
		drain(t, f.dispatcher())
		msgs := srv.Messages()
		if len(msgs) != 1 {
			t.Fatalf("%d messages", len(msgs))
		}
		msg, err := mail.ReadMessage(strings.NewReader(string(msgs[0].Data)))
		if err != nil {
			t.Fatal(err)
		}
		subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
		if msg.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("content type %q", msg.Header.Get("Content-Type"))
		}
		body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
		if err != nil {
			t.Fatal(err)
		}
		checkTemplated(t, "email", subject, strings.TrimSpace(string(body)))
	})
	t.Run("webhook JSON", func(t *testing.T) {
		f := newFixture(t)
		rc := newReceiver(t)
		f.channel(t, changedigest.Channel{Kind: changedigest.ChannelWebhook, URL: rc.URL,
			Template: `{"text": {{json .Title}}, "link": {{json .URL}}, "n": {{len .Changes}}}`})
		f.addVersion(t, f.now, []string{"a"}, footballChange)
		drain(t, f.dispatcher())
		got := rc.got()
		var m struct {
			Text, Link string
			N          int
		}
		if len(got) != 1 || got[0].header.Get("Content-Type") != "application/json" || json.Unmarshal(got[0].body, &m) != nil ||
			m.Text != "★ football: News: Library hours → The football club won on Sunday" || m.N != 1 {
			t.Errorf("webhook JSON: %+v %s", got, got[0].body)
		}
	})
	t.Run("test message", func(t *testing.T) {
		f := newFixture(t)
		rc := newReceiver(t)
		c := f.channel(t, changedigest.Channel{Kind: changedigest.ChannelNtfy, URL: rc.URL, Template: `{{if .Test}}TEST {{end}}{{.Watch.Name}}`})
		if res := f.dispatcher().Test(context.Background(), c); res.Err != nil {
			t.Fatal(res.Err)
		}
		if got := rc.got(); len(got) != 1 || string(got[0].body) != "TEST Test watch" {
			t.Errorf("test message %+v", got)
		}
	})
}

// TestTemplateRefused checks templates that do not parse, do not run on
// a sample event, or could run without bound: each is refused with a
// message saying why and where.
func TestTemplateRefused(t *testing.T) {
	manyWide := `{{range $.Changes}}` + strings.Repeat(`{{printf "%999s" ""}}`, 100) + `{{end}}`
	cases := []struct{ src, want string }{
		{`{{if}}`, "missing value for if"},
		{`{{.Nope}}`, "can't evaluate field Nope"},
		{`{{range .Changes}}{{.Old.Nope}}{{end}}`, "Nope"},
		{`{{range 1000000000}}{{end}}`, "range goes only over"},
		{`{{range $i, $c := .Seq}}{{end}}`, "range goes only over"},
		{`{{range (slice .Changes 0 1)}}{{end}}`, "range goes only over"},
		{`{{define "x"}}x{{end}}`, `defines "x"`},
		{`{{define "title"}}{{template "title" .}}{{end}}`, "{{template}} and {{block}} are not supported"},
		{`{{template "title" .}}`, "{{template}} and {{block}} are not supported"},
		{`{{block "title" .}}x{{end}}`, "{{template}} and {{block}} are not supported"},
		{`{{range $.Changes}}{{range $.Changes}}{{range $.Interests}}{{range $.Lines}}{{end}}{{end}}{{end}}{{end}}`, "nested more than 3 deep"},
		{`{{printf "%0999999999d" 1}}`, "width or precision over 999"},
		{`{{printf "%*d" 1000000000 1}}`, "width or precision over 999"},
		{`{{printf "%.99999f" 1.0}}`, "width or precision over 999"},
		{`{{printf "%[2]*[1]d" 1 1000000000}}`, "width or precision over 999"},
		{`{{printf "%-+# 01000s" ""}}`, "width or precision over 999"},
		{manyWide, "longer than 65536 bytes"},
		{strings.Repeat("x", MaxTemplateLen+1), "longer than 16384 bytes"},
	}
	for _, c := range cases {
		start := time.Now()
		err := CheckTemplate(c.src)
		if err == nil || changedigest.ErrorCode(err) != changedigest.EINVALID || !strings.Contains(changedigest.ErrorMessage(err), c.want) ||
			!strings.HasPrefix(changedigest.ErrorMessage(err), "message template: ") {
			t.Errorf("%.60q: %v, want an EINVALID error saying %q", c.src, err, c.want)
		}
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Errorf("%.60q: took %v", c.src, took)
		}
	}
	for _, good := range []string{"", testTemplate, `{{range $c := .Changes}}{{range $.Changes}}{{range $c.Matches}}{{.}}{{end}}{{end}}{{end}}`,
		`{{.Time | date "2006-01-02"}} {{clip 10 .Title}} {{upper .Summary}} {{printf "%-20s|%[1]q %5.2f %% %x" .Watch.Name .Significance 255}}`} {
		if err := CheckTemplate(good); err != nil {
			t.Errorf("%.60q: %v", good, err)
		}
	}
	// The README's example.
	readme := "{{define \"title\"}}{{.Watch.Name}}: {{len .Changes}} change(s){{end}}{{range .Changes}}{{with .Where}}{{.}}: {{end}}{{.Old}} → {{.New}}{{range .Matches}} ★ {{.}}{{end}}\n{{end}}{{.URL}}"
	if title, msg, err := RenderSample(readme); err != nil || title != "Harbour Bikes: 2 change(s)" ||
		msg != "under ‘Cargo bike’: 80 → 85\n → Tandem: a bike for two, 45 euros a day. ★ matches your interest cycling (hyponym: tandem)\nhttps://changedigest.example.org/watches/7/versions/12" {
		t.Errorf("README example: %q %q %v", title, msg, err)
	}
	title, msg, err := RenderSample(testTemplate)
	if err != nil || title != "T: Harbour Bikes #12" || !strings.Contains(msg, "[update 80 → 85]") ||
		!strings.Contains(msg, "(matches your interest cycling (hyponym: tandem))") {
		t.Errorf("sample: %q %q %v", title, msg, err)
	}
}

// TestTemplateTimeout runs a template that escaped the checks (parsed
// without them) and loops: it is stopped at the time limit with an error
// saying so.
func TestTemplateTimeout(t *testing.T) {
	defer func(d time.Duration) { templateTimeout = d }(templateTimeout)
	templateTimeout = 50 * time.Millisecond
	tm := template.Must(template.New("message").Parse(`{{range 20000000}}{{end}}`))
	start := time.Now()
	_, err := ExecuteTemplate(tm, "message", MessageData{})
	if err == nil || !strings.Contains(err.Error(), "ran longer than 50ms and was stopped") || time.Since(start) > 500*time.Millisecond {
		t.Errorf("%v after %v", err, time.Since(start))
	}
}

// TestTemplateBrokenAtSend: a stored template that fails (stored before
// a check or by an older version) fails its deliveries at once, with the
// template's error, and sends nothing.
func TestTemplateBrokenAtSend(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	f.channel(t, changedigest.Channel{Kind: changedigest.ChannelNtfy, URL: rc.URL, Template: `{{range 100}}{{end}}`})
	f.addVersion(t, f.now, []string{"a"}, footballChange)
	drain(t, f.dispatcher())
	ds := f.deliveries(t)
	if len(rc.got()) != 0 || len(ds) != 1 || ds[0].State != changedigest.DeliveryDead || !strings.Contains(ds[0].LastError, "range goes only over") {
		t.Errorf("%d sent, deliveries %+v", len(rc.got()), ds)
	}
}
