package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// TestSettingsExportImportWeb: the settings file downloaded from one
// user's settings page and uploaded on another's brings the watches and
// channels, keeps what the second user had, and a bad file imports
// nothing and says why.
func TestSettingsExportImportWeb(t *testing.T) {
	e := mustServer(t)
	ctx := context.Background()
	ann := e.mustUser("ann", "correct horse")
	e.mustWatch(ann, "https://example.org/news", "local")
	e.mustWatch(ann, "https://example.org/shop")
	ch := &changedigest.Channel{UserID: ann.ID, Kind: changedigest.ChannelWebhook, URL: "https://hooks.example.org/in", Secret: "signing-secret-0123456789"}
	if err := e.store.CreateChannel(ctx, ch); err != nil {
		t.Fatal(err)
	}
	bob := e.mustUser("bob", "battery staple")
	e.mustWatch(bob, "https://example.org/news")

	a := e.login("ann", "correct horse")
	resp, doc := a.get("/settings/export")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
		!strings.Contains(doc, `"format": "changedigest-user"`) || strings.Contains(doc, "signing-secret") {
		t.Fatalf("export: %d %v\n%s", resp.StatusCode, resp.Header, doc)
	}
	_, withSecrets := a.get("/settings/export?secrets=1")
	if !strings.Contains(withSecrets, "signing-secret-0123456789") {
		t.Errorf("export with secrets lacks them:\n%s", withSecrets)
	}

	b := e.login("bob", "battery staple")
	if resp := b.multipartPost("/settings/import", "settings", "ann.json", []byte(withSecrets), false); resp.StatusCode != http.StatusForbidden {
		t.Errorf("without CSRF token: %d", resp.StatusCode)
	}
	resp = b.multipartPost("/settings/import", "settings", "ann.json", []byte(withSecrets), true)
	if got, want := flash(resp), "info:Imported 1 watches, 1 channels. Kept as they were: 1 things you had already."; resp.StatusCode != http.StatusSeeOther || got != want {
		t.Errorf("import: %d %q, want %q", resp.StatusCode, got, want)
	}
	if n := len(e.summaries(bob)); n != 2 {
		t.Errorf("bob has %d watches", n)
	}
	cs, _ := e.store.Channels(ctx, bob.ID)
	if len(cs) != 1 || cs[0].Secret != "signing-secret-0123456789" {
		t.Errorf("bob's channels: %+v", cs)
	}

	for _, tt := range []struct{ name, data, want string }{
		{"not JSON", "<opml/>", "error:Nothing was imported: the user document is not valid: not valid JSON at line 1, column 1"},
		{"cut short", withSecrets[:len(withSecrets)/2], "error:Nothing was imported: the user document is not valid: the JSON ends before"},
		{"bad watch", strings.Replace(withSecrets, "https://example.org/shop", "mailto:x@example.org", 1), `error:Nothing was imported: the user document is not valid: watches[1] (mailto:x@example.org): watch URL`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := b.multipartPost("/settings/import", "settings", "x.json", []byte(tt.data), true)
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(flash(resp), tt.want) {
				t.Errorf("%d %q, want a redirect with %q", resp.StatusCode, flash(resp), tt.want)
			}
		})
	}
	if n := len(e.summaries(bob)); n != 2 {
		t.Errorf("after bad imports bob has %d watches", n)
	}
	_, page := b.get("/settings")
	if !strings.Contains(page, `action="/settings/import"`) || !strings.Contains(page, `href="/settings/export"`) {
		t.Errorf("the settings page lacks the export and import")
	}
}
