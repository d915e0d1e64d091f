package server

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestChannelTemplate sets a channel's message template through the API
// and the web form: an invalid or unbounded one is refused saying why, a
// good one is kept and shown back, and the form's preview renders it
// against a sample event.
func TestChannelTemplate(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	c.callErr("POST", "/channels", "application/json",
		[]byte(`{"kind":"ntfy","url":"https://ntfy.example.org/t","template":"{{.Nope}}"}`), 400, "invalid", "message template", "can't evaluate field Nope")
	c.callErr("POST", "/channels", "application/json",
		[]byte(`{"kind":"ntfy","url":"https://ntfy.example.org/t","template":"{{range 1000000000}}x{{end}}"}`), 400, "invalid", "range goes only over")
	var ch apiChannel
	tmpl := `{{.Watch.Name}}:{{range .Changes}} {{.Old}} → {{.New}}{{end}}`
	c.call("POST", "/channels", map[string]any{"kind": "ntfy", "url": "https://ntfy.example.org/t", "template": tmpl}, http.StatusCreated, &ch)
	if ch.Template != tmpl {
		t.Errorf("created %+v", ch)
	}
	c.callErr("PATCH", fmt.Sprintf("/channels/%d", ch.ID), "application/json", []byte(`{"template":"{{if}}"}`), 400, "invalid", "missing value for if")
	c.call("PATCH", fmt.Sprintf("/channels/%d", ch.ID), map[string]any{"name": "phone"}, http.StatusOK, &ch)
	if ch.Template != tmpl || ch.Name != "phone" {
		t.Errorf("after a PATCH without template: %+v", ch)
	}

	web := e.login("ann", "correct horse")
	resp, body := web.post("/settings/channels", url.Values{"kind": {"ntfy"}, "url": {"https://ntfy.example.org/u"},
		"template": {`{{printf "%0999999999d" 1}}`}})
	mustStatus(t, "bad template", resp, body, http.StatusBadRequest)
	mustContain(t, body, "message template: ", "width or precision over 999", `printf &#34;%0999999999d&#34; 1`)
	resp, body = web.post("/settings/channels/preview", url.Values{"new": {"1"}, "kind": {"ntfy"}, "url": {"https://ntfy.example.org/u"},
		"template": {"{{define \"title\"}}Price: {{.Watch.Name}}{{end}}{{range .Changes}}{{.Where}} {{.Old}} → {{.New}}\n{{end}}"}})
	mustStatus(t, "preview", resp, body, http.StatusOK)
	mustContain(t, body, "Message preview", "Price: Harbour Bikes", "under ‘Cargo bike’ 80 → 85", `value="https://ntfy.example.org/u"`)
	resp, body = web.post("/settings/channels/preview", url.Values{"template": {"{{range .Seq}}{{end}}"}})
	mustStatus(t, "preview of a bad template", resp, body, http.StatusOK)
	mustContain(t, body, "range goes only over")
	resp, body = web.post(fmt.Sprintf("/settings/channels/%d", ch.ID), url.Values{"name": {"phone"}, "select": {"all"}, "template": {""}})
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		t.Fatalf("edit: %d %s", resp.StatusCode, body)
	}
	got, err := e.store.Channel(t.Context(), ann.ID, ch.ID)
	if err != nil || got.Template != "" {
		t.Errorf("after clearing the template: %+v %v", got, err)
	}
}
