package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepair damages a store's watch record and checks the command line
// around it: serve's check at opening and `repair --check` say what is
// wrong and what to do; `repair` keeps the damaged file aside, takes the
// damaged watch out and keeps the others whole; a second check finds the
// store whole.
func TestRepair(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><h1>Page %s</h1><p>The text of page %s.</p></body></html>", r.URL.Path, r.URL.Path)
	}))
	defer srv.Close()
	dir := t.TempDir()
	for i := range 6 {
		if code, _, stderr := runCmd(t, "--data", dir, "--allow-private", "watch", "add", fmt.Sprintf("%s/%d", srv.URL, i)); code != 0 {
			t.Fatal(stderr)
		}
	}
	if code, _, stderr := runCmd(t, "--data", dir, "--allow-private", "check", "--all"); code != 0 {
		t.Fatal(stderr)
	}
	if code, out, _ := runCmd(t, "--data", dir, "repair", "--check"); code != 0 || !strings.Contains(out, "is whole") {
		t.Fatalf("a whole store: exit %d: %s", code, out)
	}
	// Damage the record of watch 3: its URL's bytes turned to others.
	db := filepath.Join(dir, "pet.db")
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// (Every copy: pages written before hold older ones.)
	url := `"url":"` + srv.URL + `/2"`
	n := 0
	for i := strings.Index(string(data), url); i >= 0; i = strings.Index(string(data), url) {
		data[i+5] = 0xff // the colon
		n++
	}
	if n == 0 {
		t.Fatal("the watch's record is not in the file as JSON")
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd(t, "--data", dir, "repair", "--check")
	if code != 1 || !strings.Contains(out, "is damaged") || !strings.Contains(out, "watch 3") || !strings.Contains(stderr, "without --check") {
		t.Fatalf("check of a damaged store: exit %d: %s %s", code, out, stderr)
	}
	// The others are listed as they are, the damaged one as damaged.
	code, out, _ = runCmd(t, "--data", dir, "watch", "list")
	if code != 0 || strings.Count(out, srv.URL) != 5 || !strings.Contains(out, "changedigest repair") {
		t.Errorf("watch list of a damaged store: exit %d: %s", code, out)
	}
	code, out, stderr = runCmd(t, "--data", dir, "repair")
	if code != 0 || !strings.Contains(out, "watch 3: its record is damaged") || !strings.Contains(out, "5 watches and 5 versions") {
		t.Fatalf("repair: exit %d: %s %s", code, out, stderr)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "pet.db.damaged-*"))
	if len(aside) != 1 {
		t.Errorf("damaged files kept aside: %v", aside)
	}
	if code, out, _ := runCmd(t, "--data", dir, "repair", "--check"); code != 0 || !strings.Contains(out, "is whole") {
		t.Errorf("after repair: exit %d: %s", code, out)
	}
	code, out, _ = runCmd(t, "--data", dir, "watch", "list")
	if code != 0 || strings.Count(out, srv.URL) != 5 || strings.Contains(out, srv.URL+"/2 ") {
		t.Errorf("watch list after repair: exit %d: %s", code, out)
	}
}
