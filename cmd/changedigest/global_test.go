package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobalFlags: the common flags may come before the command, as git
// and docker take them, with the same effect as after it; a command
// ignores those it has no use for; the same flag after the command wins.
func TestGlobalFlags(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<html><head><title>Notes</title></head><body><p>Some notes on the garden.</p></body></html>`))
	}))
	defer srv.Close()
	a, b := t.TempDir(), t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCmd(t, args...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	run(0, "--data", a, "watch", "add", srv.URL+"/a", "--tag", "garden")
	run(0, "--data="+b, "watch", "add", srv.URL+"/b")
	run(0, "-data", a, "--user", "admin", "--allow-private", "--matrix", "5", "check", "--all")
	tests := []struct {
		name       string
		args       []string
		want, lack string
	}{
		{"before the command", []string{"--data", a, "watch", "list"}, "/a", "/b"},
		{"with =", []string{"--data=" + b, "watch", "list"}, "/b", "/a"},
		{"one dash", []string{"-data", b, "watch", "ls"}, "/b", "/a"},
		{"after the command", []string{"watch", "list", "--data", a}, "/a", "/b"},
		{"after wins", []string{"--data", b, "watch", "list", "--data", a}, "/a", "/b"},
		{"several", []string{"--data", a, "--user=admin", "--matrix", "7", "watch", "list", "--tag", "garden"}, "/a", "/b"},
		{"history", []string{"--data", a, "history", "1"}, "1 checks", ""},
		{"ignored by a command without a store", []string{"--data", a, "--user", "x", "profile", "../../profile/testdata/foaf/ppd.rdf"}, "Alice Example", ""},
		{"end of global flags", []string{"--data", a, "--", "watch", "list"}, "/a", "/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(0, tt.args...)
			if !strings.Contains(out, tt.want) || tt.lack != "" && strings.Contains(out, tt.lack) {
				t.Errorf("%v: output holds no %q or holds %q:\n%s", tt.args, tt.want, tt.lack, out)
			}
		})
	}
	if out := run(0, "--data", a, "--help"); !strings.Contains(out, "global flags") {
		t.Errorf("help: %s", out)
	}
}

func TestGlobalFlagsBad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown", []string{"--nope", "watch", "list"}, `unknown flag --nope before the command: only --data, --allow-private, --matrix, --user go there`},
		{"a command's own flag", []string{"--tag", "x", "watch", "list"}, "a command's own flags go after it"},
		{"no value", []string{"--data"}, "flag --data needs a value"},
		{"bad value", []string{"--matrix", "many", "watch", "list"}, `invalid value "many" for flag -matrix`},
		{"bad bool", []string{"--allow-private=maybe", "watch", "list"}, `invalid boolean value "maybe"`},
		{"no command", []string{"--data", dir}, "want a command after the global flags"},
		{"unknown command", []string{"--data", dir, "frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCmd(t, tt.args...)
			if code != exitUsage || out != "" {
				t.Errorf("exit %d, output %q", code, out)
			}
			if !strings.HasPrefix(errs, "changedigest: ") || !strings.Contains(errs, tt.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("error %q does not say %q in one line", errs, tt.want)
			}
		})
	}
}
