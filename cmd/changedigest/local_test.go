package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// TestServeIsAClusterOfOne: a plain serve runs through the cluster's
// code (its own embedded server, no port), and what the commands write
// to its store between two runs (users, watches, checks, deletions, a
// new password) is the cluster's at the next start: the versions a
// check stores go on from the commands' ones, a deleted watch stays
// deleted and its ID is not given again, the old password and its
// sessions no longer log in.
func TestServeIsAClusterOfOne(t *testing.T) {
	var edition atomic.Int32
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><h1>News %s</h1><p>Edition %d of the news, with the weather and the scores.</p></body></html>", r.URL.Path, edition.Load())
	}))
	defer page.Close()
	data := t.TempDir()
	cmd := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := runCmdIn(t, stdin, append(args, "--data", data)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
		return out + errs
	}
	inSync := func() bool {
		b, err := os.ReadFile(filepath.Join(data, "local.json"))
		return err == nil && strings.Contains(string(b), `"in_sync":true`)
	}
	serve := func() (*Main, string) {
		t.Helper()
		m, out := startServe(t, data, "")
		if strings.Contains(out.String(), "created the administrator") {
			t.Errorf("an administrator made though the store has one:\n%s", out.String())
		}
		if !inSync() {
			t.Error("local.json does not say the cluster holds the store")
		}
		return m, regexp.MustCompile(`running at (\S+)`).FindStringSubmatch(out.String())[1]
	}
	checkNow := func(m *Main, id int64, want int) {
		t.Helper()
		ctx := context.Background()
		w, err := m.Store.Watch(ctx, pet.AnyUser, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Scheduler.CheckNow(ctx, nil, w); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("version %d of watch %d", want, id), func() bool {
			tr, err := m.Store.Track(ctx, id)
			return err == nil && tr.Latest == want
		})
	}

	cmd("old password\n", "user", "add", "ann", "--admin")
	cmd("", "watch", "add", "--allow-private", page.URL+"/a")
	edition.Store(1)
	cmd("", "check", "--allow-private", "--all")

	// First run: the store is imported; a check goes on from the
	// command's version, and a watch made on the web gets the next ID.
	m, site := serve()
	c := webLogin(t, site, "ann", "old password")
	edition.Store(2)
	checkNow(m, 1, 2)
	users, _ := m.Store.Users(context.Background())
	w := &changedigest.Watch{UserID: users[0].ID, URL: page.URL + "/b", Interval: 24 * time.Hour}
	if err := m.clusterStore().CreateWatch(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if w.ID != 2 {
		t.Errorf("a watch made on the web has ID %d, want 2", w.ID)
	}
	firstVersion(t, m, w)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Between two runs: the commands write the store.
	cmd("", "watch", "add", "--allow-private", page.URL+"/c") // 3
	cmd("", "watch", "rm", "3")
	cmd("", "watch", "rm", "2")
	edition.Store(3)
	cmd("", "check", "--allow-private", "--all") // watch 1: version 3
	cmd("new password\n", "user", "passwd", "ann")
	if inSync() {
		t.Error("local.json says in sync after the commands wrote the store")
	}

	// Second run: the cluster is the store's again.
	m, site = serve()
	if code, _ := webGetRetrying(t, c, site+"/settings", 5*time.Second); code != http.StatusSeeOther {
		t.Errorf("the session of the old password gets %d, want 303 to log in", code)
	}
	c = webLogin(t, site, "ann", "new password")
	edition.Store(4)
	checkNow(m, 1, 4)
	code, body := get(t, c, site+"/watches/1/versions/4")
	if code != 200 || !strings.Contains(body, "Edition") {
		t.Errorf("version 4: %d\n%s", code, body)
	}
	for _, id := range []int64{2, 3} {
		if code, _ := get(t, c, fmt.Sprintf("%s/watches/%d", site, id)); code != http.StatusNotFound {
			t.Errorf("watch %d, deleted by a command: %d", id, code)
		}
	}
	// The versions stream holds watch 1's newest version (a cluster of
	// one's keeps no other), and no other watch's.
	counts, dups, err := m.Cluster.VersionCounts(context.Background())
	if err != nil || dups != 0 || counts[1] != 1 || len(counts) != 1 {
		t.Errorf("versions in the stream: %v, %d twice, %v", counts, dups, err)
	}
	w = &changedigest.Watch{UserID: users[0].ID, URL: page.URL + "/d", Interval: 24 * time.Hour}
	if err := m.clusterStore().CreateWatch(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if w.ID != 4 {
		t.Errorf("a watch made on the web after watch 3 was deleted has ID %d, want 4", w.ID)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// The directory joins a cluster: the cluster of one's files go, and
	// the store is imported into the cluster it starts.
	n, out := startServe(t, data, "grown")
	defer n.Close()
	// Watch 4 may have its first version.
	if !regexp.MustCompile(`imported this data directory's store into the cluster .* 2 watches, [45] versions`).MatchString(out.String()) {
		t.Errorf("serve --cluster on a single serve's directory:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(data, "local.json")); err == nil {
		t.Error("local.json is left in a cluster node's directory")
	}
}

// startServe runs serve on data (as a node of the cluster named, when not
// ""), on a free loopback port, fetching from loopback; the buffer holds
// what it printed. The caller closes it.
func startServe(t *testing.T, data, clusterName string) (*Main, *bytes.Buffer) {
	t.Helper()
	m := NewMain()
	var out bytes.Buffer
	m.Stdout, m.Logger = &out, slogDiscard()
	m.Config.data, m.Config.Addr, m.Config.allowPrivate = data, "127.0.0.1:0", true
	m.Config.HostGap = 10 * time.Millisecond
	m.Config.Cluster.Name = clusterName
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, &out
}

// TestClusterOfOneRebuiltFromItsStore: a cluster of one whose files lost
// what its views had read (here the watches bucket taken out, which the
// server then makes anew, empty) is made again from the store at the
// next start: the watch is the cluster's again, and can be edited.
func TestClusterOfOneRebuiltFromItsStore(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{{"user", "add", "ann"}, {"watch", "add", "--allow-private", "http://127.0.0.1:1/news", "--every", "24h"}} {
		if code, out, errs := runCmdIn(t, "a good password\n", append(args, "--data", data)...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
	}
	m, _ := startServe(t, data, "")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(data, "nats", "jetstream", "$G", "streams", "KV_cd_watches")); err != nil {
		t.Fatal(err)
	}
	m, _ = startServe(t, data, "")
	defer m.Close()
	w, err := m.clusterStore().UpdateWatch(context.Background(), pet.AnyUser, 1, func(x *changedigest.Watch) error {
		x.Title = "Renamed"
		return nil
	})
	if err != nil || w.Title != "Renamed" {
		t.Fatalf("editing the watch after its definition was lost: %+v, %v", w, err)
	}
}
