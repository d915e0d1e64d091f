package main

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest/secret"
)

// TestWatchAddRequestOptions: the options given to 'watch add' arrive at
// the page on 'check', the secrets are neither stored in clear nor shown
// by 'watch list --json', and bad options are refused naming the flag.
func TestWatchAddRequestOptions(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<html><body><div id="a"><p>first part of the page</p></div><div id="b"><p>price 24</p></div></body></html>`))
	}))
	defer srv.Close()
	data := t.TempDir()
	run := func(stdin string, want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmdIn(t, stdin, append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	const key, cookie, password = "key-9a8b7c6d5e4f", "cookie-value-1234abcd", "secret-password-77"
	run(password+"\n", 0, "watch", "add", srv.URL+"/members", "--header", "X-Api-Key: "+key, "--header", "Accept-Language: fr",
		"--cookie", "sid="+cookie, "--basic-auth", "ann", "--method", "POST", "--body", "q=kettle", "--zone", "//div[@id='b']")
	if fi, err := os.Stat(filepath.Join(data, secret.KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", fi, err)
	}
	out := run("", 0, "watch", "list", "--json")
	for _, s := range []string{key, cookie, password, "v1."} {
		if strings.Contains(out, s) {
			t.Errorf("watch list --json shows %q:\n%s", s, out)
		}
	}
	for _, s := range []string{`"hint": "••••5e4f"`, `"hint": "••••abcd"`, `"user": "ann"`, `"method": "POST"`, `"zone": "//div[@id='b']"`} {
		if !strings.Contains(out, s) {
			t.Errorf("watch list --json lacks %s:\n%s", s, out)
		}
	}
	filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, s := range []string{key, cookie, password} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q in clear", p, s)
			}
		}
		return nil
	})

	run("", 0, "check", "1", "--allow-private")
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	user, pass, _ := r.BasicAuth()
	ck, _ := r.Cookie("sid")
	if r.Method != "POST" || bodies[0] != "q=kettle" || r.Header.Get("X-Api-Key") != key || r.Header.Get("Accept-Language") != "fr" ||
		user != "ann" || pass != password || ck == nil || ck.Value != cookie {
		t.Errorf("the page got %s %q %v", r.Method, bodies[0], r.Header)
	}
	mu.Unlock()

	for _, bad := range [][]string{
		{"--header", "Host: evil.example"},
		{"--header", "no colon"},
		{"--method", "PUT"},
		{"--body", "x"},
		{"--cookie", "sid=a;b"},
		{"--zone", "//div["},
	} {
		out := run("", 2, append([]string{"watch", "add", srv.URL + "/x"}, bad...)...)
		if !strings.Contains(out, strings.TrimPrefix(bad[0], "--")) && !strings.Contains(out, "XPath") {
			t.Errorf("%v: %s", bad, out)
		}
	}
}
