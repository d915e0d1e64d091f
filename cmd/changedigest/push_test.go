package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
)

// TestServePushesWebhook runs the service, adds a watch of a loopback
// page and a signed webhook channel through the API, changes the page,
// and waits for the webhook: its signature verifies with the channel's
// secret and its payload names the watch, the version and the change.
func TestServePushesWebhook(t *testing.T) {
	var mu sync.Mutex
	page := "<html><head><title>Club</title></head><body><h1>Club news</h1><p>Training is on Tuesday evening at the old ground.</p></body></html>"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	defer site.Close()
	type hit struct {
		header http.Header
		body   []byte
	}
	hits := make(chan hit, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- hit{r.Header.Clone(), b}
	}))
	defer hook.Close()

	m := NewMain()
	m.Stdout, m.Logger = io.Discard, slogDiscard()
	m.Config.data, m.Config.Addr, m.Config.allowPrivate = t.TempDir(), "127.0.0.1:0", true
	ctx := context.Background()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	admin, err := m.Store.UserByName(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := m.clusterStore().CreateToken(ctx, admin.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	api := func(method, path string, in, out any) {
		t.Helper()
		b, _ := json.Marshal(in)
		req, _ := http.NewRequest(method, m.Server.Render.URL("/api/v1"+path), bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, body)
		}
		if out != nil {
			if err := json.Unmarshal(body, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	var w struct{ ID int64 }
	api("POST", "/watches", map[string]any{"url": site.URL + "/club", "every": "1h"}, &w)
	const secret = "end-to-end-signing-secret"
	api("POST", "/channels", map[string]any{"kind": "webhook", "url": hook.URL + "/in", "secret": secret}, nil)
	api("POST", fmt.Sprintf("/watches/%d/check", w.ID), nil, nil)
	mu.Lock()
	page = strings.Replace(page, "Training is on Tuesday evening at the old ground.",
		"Training moves to Thursday evening at the new stadium by the river.", 1)
	mu.Unlock()
	stored := time.Now()
	api("POST", fmt.Sprintf("/watches/%d/check", w.ID), nil, nil)

	var h hit
	select {
	case h = <-hits:
	case <-time.After(15 * time.Second):
		t.Fatal("no webhook within 15 s of the change")
	}
	t.Logf("webhook %s after the check was asked for", time.Since(stored).Round(time.Millisecond))
	if err := notify.Verify(secret, h.header.Get(notify.SignatureHeader), h.body, time.Now(), time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var p notify.Payload
	if err := json.Unmarshal(h.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Event != "version" || p.Watch.ID != w.ID || p.Version.Seq != 2 || p.ID != h.header.Get(notify.IdempotencyHeader) {
		t.Errorf("payload %+v", p)
	}
	found := false
	for _, c := range p.Changes {
		found = found || strings.Contains(c.Before+c.NewText+c.After, "moves to Thursday evening")
	}
	if !found {
		t.Errorf("the payload's changes lack the new text: %+v", p.Changes)
	}
	if !strings.HasPrefix(p.Version.URL, m.Server.Render.Site()) {
		t.Errorf("version link %q is not on the service", p.Version.URL)
	}
	select {
	case h := <-hits:
		t.Errorf("a second webhook: %s", h.body)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestChannelCommands adds, lists, tests and removes channels from the
// command line; the secret is read from standard input and never printed.
func TestChannelCommands(t *testing.T) {
	var got []http.Header
	var mu sync.Mutex
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
	}))
	defer hook.Close()
	data := t.TempDir()
	run := func(want int, stdin string, args ...string) string {
		t.Helper()
		code, out, errs := runCmdIn(t, stdin, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	const secret = "command-line-signing-secret"
	out := run(0, secret+"\n", "channel", "add", "webhook", hook.URL+"/in", "--secret-stdin", "--name", "hook", "--select", "interests")
	if !strings.Contains(out, "channel 1: webhook "+hook.URL+"/in") {
		t.Errorf("channel add: %s", out)
	}
	run(2, "", "channel", "add", "pager", "https://example.org/")
	run(2, "", "channel", "add", "matrix", "https://m.example.org", "--room", "general")
	run(2, "", "channel", "add", "webhook", "https://example.org/", "--select", "some")
	run(1, "", "channel", "add", "webhook", "https://example.org/", "--watch", "9")
	out = run(0, "", "channel", "list")
	if !strings.Contains(out, "hook") || !strings.Contains(out, "…cret") || strings.Contains(out, secret) || !strings.Contains(out, "interests") {
		t.Errorf("channel list: %s", out)
	}
	out = run(1, "", "channel", "test", "1")
	if !strings.Contains(out, "refused non-public address") {
		t.Errorf("test of a loopback receiver without --allow-private: %s", out)
	}
	out = run(0, "", "channel", "test", "1", "--allow-private")
	if !strings.Contains(out, "test message sent to channel 1 (hook): status 200") {
		t.Errorf("channel test: %s", out)
	}
	mu.Lock()
	if len(got) != 1 || !strings.HasPrefix(got[0].Get(notify.SignatureHeader), "t=") {
		t.Errorf("the receiver got %v", got)
	}
	mu.Unlock()
	run(1, "", "channel", "test", "7")
	// A notification that failed for good is made pending again.
	store := pet.New(data)
	if err := store.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	dl := &changedigest.Delivery{ID: "w1.v2.c1", UserID: 1, ChannelID: 1, WatchID: 1, Seq: 2, State: changedigest.DeliveryDead, LastError: "the receiver answered 500"}
	if err := store.AddDelivery(context.Background(), dl); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if out = run(0, "", "channel", "list"); !strings.Contains(out, "the receiver answered 500") {
		t.Errorf("channel list does not show the failure: %s", out)
	}
	if out = run(0, "", "channel", "retry", "1"); !strings.Contains(out, "1 failed notification(s) of channel 1 (hook) will be sent again") {
		t.Errorf("channel retry: %s", out)
	}
	store = pet.New(data)
	if err := store.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if x, err := store.Delivery(context.Background(), 1, dl.ID); err != nil || x.State != changedigest.DeliveryPending || x.Attempts != 0 {
		t.Errorf("after retry: %+v, %v", x, err)
	}
	store.Close()
	run(0, "", "channel", "rm", "1")
	if out = run(0, "", "channel", "list"); !strings.Contains(out, "no channels yet") {
		t.Errorf("after rm: %s", out)
	}
}

// TestChannelTemplateCommands: channel add --template FILE and channel
// template set a channel's message template, refusing one that does not
// run or could run without bound; channel test sends what it writes.
func TestChannelTemplateCommands(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	topic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer topic.Close()
	data := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmdIn(t, "", append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	file := func(name, src string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loop := file("loop.tmpl", "{{range 1000000000}}{{end}}")
	if out := run(2, "channel", "add", "ntfy", topic.URL+"/t", "--template", loop); !strings.Contains(out, "message template: ") || !strings.Contains(out, "range goes only over") {
		t.Errorf("a looping template: %s", out)
	}
	if out := run(2, "channel", "add", "ntfy", topic.URL+"/t", "--template", file("bad.tmpl", "{{.Watch.Nope}}")); !strings.Contains(out, "can't evaluate field Nope") {
		t.Errorf("a template that does not run: %s", out)
	}
	run(0, "channel", "add", "ntfy", topic.URL+"/t", "--template", file("good.tmpl", `{{if .Test}}TEST {{end}}{{.Watch.Name}}: {{.Summary}}`))
	if out := run(0, "channel", "list"); !strings.Contains(out, "(own message)") {
		t.Errorf("channel list: %s", out)
	}
	run(0, "channel", "test", "1", "--allow-private")
	out := run(0, "channel", "template", "1", file("other.tmpl", `{{range .Changes}}{{.Where}}: {{.Old}} → {{.New}}{{"\n"}}{{end}}`))
	if !strings.Contains(out, "under ‘Cargo bike’: 80 → 85") {
		t.Errorf("channel template: %s", out)
	}
	run(2, "channel", "template", "1", loop)
	if out := run(0, "channel", "template", "1", "--clear"); !strings.Contains(out, "sends the default message") {
		t.Errorf("channel template --clear: %s", out)
	}
	run(0, "channel", "test", "1", "--allow-private")
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0] != "TEST Test watch: 1 change" || !strings.Contains(bodies[1], "This is a test message from changedigest.") {
		t.Errorf("the topic got %q", bodies)
	}
}
