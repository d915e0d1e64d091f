package main

import (
	"context"
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
)

// TestCommandsBesideService: while serve runs, the user and watch
// commands go through its admin socket and work as they do on a stopped
// store, with the same output; the service sees at once what they did.
func TestCommandsBesideService(t *testing.T) {
	data := t.TempDir()
	if code, out, errs := runCmdIn(t, "a good password\n", "user", "add", "ann", "--admin", "--data", data); code != 0 {
		t.Fatalf("user add: exit %d: %s%s", code, out, errs)
	}
	m, _ := startServe(t, data, "")
	run := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := runCmdIn(t, stdin, append(args, "--data", data)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
		return out
	}
	if out := run("another good password\n", "user", "add", "bob"); !strings.Contains(out, "created user bob (id 2)") {
		t.Errorf("user add through the service: %q", out)
	}
	if out := run("", "user", "list"); !strings.Contains(out, "ann") || !strings.Contains(out, "bob") {
		t.Errorf("user list: %q", out)
	}
	if out := run("a new password of bob\n", "user", "passwd", "bob"); !strings.Contains(out, "password of bob changed") {
		t.Errorf("user passwd: %q", out)
	}
	if out := run("", "watch", "add", "http://127.0.0.1:1/news", "--user", "bob", "--every", "2h", "--tag", "town"); !strings.Contains(out, "watch 1: http://127.0.0.1:1/news (every 2h0m0s)") {
		t.Errorf("watch add: %q", out)
	}
	run("", "watch", "add", "http://127.0.0.1:1/prices", "--user", "bob", "--every", "3h", "--ignore", "sale")
	if out := run("", "watch", "filter", "http://127.0.0.1:1/news", "--user", "bob", "--trigger", "harbour", "--types", "content"); !strings.Contains(out, "harbour") {
		t.Errorf("watch filter: %q", out)
	}
	// The service has them: its store, as the web pages read it.
	ctx := context.Background()
	st := m.clusterStore()
	bob, err := st.UserByName(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.Watches(ctx, bob.ID, "")
	if err != nil || len(ws) != 2 || len(ws[0].TriggerText) != 1 || ws[0].TriggerText[0] != "harbour" || len(ws[1].IgnoreText) != 1 {
		t.Fatalf("the service's watches of bob: %+v, %v", ws, err)
	}
	if out := run("", "watch", "rm", "http://127.0.0.1:1/prices", "--user", "bob"); !strings.Contains(out, "removed watch 2") {
		t.Errorf("watch rm: %q", out)
	}
	remote := run("", "watch", "list", "--user", "bob")
	remoteJSON := run("", "watch", "list", "--user", "bob", "--json")
	if code, _, errs := runCmd(t, "user", "add", "bad name!", "--data", data); code != 2 || !strings.Contains(errs, "name") {
		t.Errorf("a bad name through the service: exit %d: %s", code, errs)
	}
	if code, _, errs := runCmd(t, "watch", "rm", "99", "--user", "bob", "--data", data); code == 0 || !strings.Contains(errs, "not found") {
		t.Errorf("an unknown watch through the service: exit %d: %s", code, errs)
	}
	m.Close()

	// The same commands on the stopped store say the same.
	if local := run("", "watch", "list", "--user", "bob"); local != remote {
		t.Errorf("watch list differs:\nthrough the service:\n%s\nfrom the store:\n%s", remote, local)
	}
	if local := run("", "watch", "list", "--user", "bob", "--json"); local != remoteJSON {
		t.Errorf("watch list --json differs:\nthrough the service:\n%s\nfrom the store:\n%s", remoteJSON, local)
	}
}

// TestDisabledAccountNotChecked: the service fetches nothing for the
// watches of a disabled account, while it checks the others.
func TestDisabledAccountNotChecked(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		fmt.Fprintf(w, "<html><body><p>The page at %s.</p></body></html>", r.URL.Path)
	}))
	defer site.Close()
	data := t.TempDir()
	for _, args := range [][]string{{"user", "add", "ann"}, {"user", "add", "bob"},
		{"watch", "add", site.URL + "/ann", "--user", "ann", "--every", "1h"},
		{"watch", "add", site.URL + "/bob", "--user", "bob", "--every", "1h"}} {
		if code, out, errs := runCmdIn(t, "a good password\n", append(args, "--data", data)...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
	}
	st := openStore(t, data)
	bob, err := st.UserByName(context.Background(), "bob")
	if err == nil {
		_, err = st.UpdateUser(context.Background(), bob.ID, func(u *changedigest.User) error { u.Disabled = true; return nil })
	}
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	m, _ := startServe(t, data, "")
	defer m.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		a := hits["/ann"]
		mu.Unlock()
		if a > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // bob's turn came at the same time
	mu.Lock()
	defer mu.Unlock()
	if hits["/ann"] == 0 || hits["/bob"] != 0 {
		t.Errorf("requests: %v; want ann's page and not bob's", hits)
	}
}

// TestReadsBesideService: history, show and search say the same through
// a running service as from the stopped store.
func TestReadsBesideService(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><head><title>Harbour</title></head><body><h1>Ferry times</h1><p>The harbour ferry leaves at nine.</p></body></html>")
	}))
	defer site.Close()
	data := t.TempDir()
	for _, args := range [][]string{{"user", "add", "ann"}, {"watch", "add", site.URL + "/ferry", "--every", "1h"}} {
		if code, out, errs := runCmdIn(t, "a good password\n", append(args, "--data", data)...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
	}
	m, _ := startServe(t, data, "")
	reads := [][]string{{"history", "1"}, {"show", "1"}, {"show", "1", "--raw"}, {"search", "harbour"}}
	outputs := func() []string {
		var out []string
		for _, args := range reads {
			code, o, errs := runCmd(t, append(args, "--data", data)...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s%s", args, code, o, errs)
			}
			out = append(out, o)
		}
		return out
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The version is indexed, and its check counted on the watch
		// (recorded after the version is stored).
		code, o, _ := runCmd(t, "search", "harbour", "--data", data)
		hc, h, _ := runCmd(t, "history", "1", "--data", data)
		if code == 0 && strings.Contains(o, "1 hit") && hc == 0 && strings.Contains(h, "1 checks") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	remote := outputs()
	m.Close()
	local := outputs()
	for i := range reads {
		if remote[i] != local[i] {
			t.Errorf("%v differs:\nthrough the service:\n%s\nfrom the store:\n%s", reads[i], remote[i], local[i])
		}
	}
	if !strings.Contains(local[3], "harbour") || !strings.Contains(local[2], "The harbour ferry leaves at nine.") {
		t.Errorf("search and show --raw: %q, %q", local[3], local[2])
	}
}

// TestCheckBesideService: check through a running service checks now and
// prints what check prints; the version is the service's.
func TestCheckBesideService(t *testing.T) {
	var mu sync.Mutex
	text := "The harbour ferry leaves at nine."
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "<html><body><h1>Ferry times</h1><p>%s</p></body></html>", text)
	}))
	defer site.Close()
	data := t.TempDir()
	for _, args := range [][]string{{"user", "add", "ann"}, {"watch", "add", site.URL + "/ferry", "--every", "24h"}} {
		if code, out, errs := runCmdIn(t, "a good password\n", append(args, "--data", data)...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
	}
	m, _ := startServe(t, data, "")
	defer m.Close()
	// The service's first check at start; then the page changes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, o, _ := runCmd(t, "history", "1", "--data", data)
		if strings.Contains(o, "1 checks") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	text = "The harbour ferry leaves at ten."
	mu.Unlock()
	code, out, errs := runCmd(t, "check", "1", "--data", data)
	if code != 0 || !strings.Contains(out, "changed") || !strings.Contains(out, "checked 1: 1 changed, 0 first versions") {
		t.Fatalf("check through the service: exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := runCmd(t, "show", "1", "--changes", "--data", data); code != 0 || !strings.Contains(out, "[-nine-]{+ten+}") {
		t.Errorf("the new version: exit %d: %s%s", code, out, errs)
	}
	if code, _, errs := runCmd(t, "check", "7", "--data", data); code == 0 || !strings.Contains(errs, "7") {
		t.Errorf("an unknown watch: exit %d: %s", code, errs)
	}
}

// TestChannelsBesideService: the channel commands through a running
// service: add, list, test (the service sends it), template, rm; the
// list says the same as from the stopped store.
func TestChannelsBesideService(t *testing.T) {
	var mu sync.Mutex
	var got []string
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	defer rc.Close()
	data := t.TempDir()
	if code, out, errs := runCmdIn(t, "a good password\n", "user", "add", "ann", "--data", data); code != 0 {
		t.Fatalf("user add: exit %d: %s%s", code, out, errs)
	}
	m, _ := startServe(t, data, "")
	run := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := runCmdIn(t, stdin, append(args, "--data", data)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
		return out
	}
	if out := run("a-signing-secret-1234\n", "channel", "add", "webhook", rc.URL+"/hook", "--secret-stdin"); !strings.Contains(out, "channel 1: webhook") {
		t.Errorf("channel add: %q", out)
	}
	if out := run("", "channel", "test", "1"); !strings.Contains(out, "test message sent to channel 1") {
		t.Errorf("channel test: %q", out)
	}
	mu.Lock()
	if len(got) != 1 {
		t.Errorf("the receiver got %d requests, want the test message", len(got))
	}
	mu.Unlock()
	tmpl := filepath.Join(t.TempDir(), "msg.tmpl")
	if err := os.WriteFile(tmpl, []byte("{{.Title}}: {{.URL}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("", "channel", "template", "1", tmpl); !strings.Contains(out, "sends its own message") {
		t.Errorf("channel template: %q", out)
	}
	remote := run("", "channel", "list")
	if !strings.Contains(remote, "(own message)") || !strings.Contains(remote, "…1234") {
		t.Errorf("channel list: %q", remote)
	}
	m.Close()
	if local := run("", "channel", "list"); local != remote {
		t.Errorf("channel list differs:\nthrough the service:\n%s\nfrom the store:\n%s", remote, local)
	}
	m, _ = startServe(t, data, "")
	defer m.Close()
	if out := run("", "channel", "rm", "1"); !strings.Contains(out, "removed channel 1") {
		t.Errorf("channel rm: %q", out)
	}
	if out := run("", "channel", "list"); !strings.Contains(out, "no channels yet") {
		t.Errorf("channel list after rm: %q", out)
	}
}
