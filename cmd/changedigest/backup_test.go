package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/demo"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/profile"
	"github.com/changedigest/changedigest/secret"
	"github.com/changedigest/changedigest/userdata"
)

// changingSite serves pages /p/N on loopback of some 40 KB of text that
// changes whole at every request.
func changingSite(t *testing.T) *httptest.Server {
	t.Helper()
	words := strings.Fields("river castle market station library garden bridge harbour council school " +
		"election football concert theatre museum bakery festival railway tower meadow")
	var n atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		rng := rand.New(rand.NewPCG(uint64(k), 7))
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>Page %s</title></head><body><h1>Page %s</h1>\n", r.URL.Path, r.URL.Path)
		for range 80 {
			b.WriteString("<p>")
			for range 60 {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "paragraph %d.</p>\n", rng.IntN(1000))
		}
		b.WriteString("</body></html>")
		io.WriteString(w, b.String())
	}))
	t.Cleanup(site.Close)
	return site
}

// setUpUser gives the running service a user with a profile, a channel
// and watches of site's pages, written as the web pages write.
func setUpUser(t *testing.T, m *Main, site string, watches int) []*changedigest.Watch {
	t.Helper()
	ctx := context.Background()
	cs := m.clusterStore()
	u := &changedigest.User{Name: "ann", Email: "ann@example.org", DigestHour: 6, PasswordHash: []byte("$2a$10$notarealhashbutbytes")}
	if err := cs.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(profile.Document{Body: bytes.NewReader(demo.Profile), Name: "demo.ttl"})
	if err != nil {
		t.Fatal(err)
	}
	p.UserID = u.ID
	if err := cs.PutProfile(ctx, p, demo.Profile); err != nil {
		t.Fatal(err)
	}
	var ws []*changedigest.Watch
	for i := range watches {
		w := &changedigest.Watch{UserID: u.ID, URL: fmt.Sprintf("%s/p/%d", site, i), Interval: time.Hour, Tags: []string{"load"}}
		if err := cs.CreateWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	c := &changedigest.Channel{UserID: u.ID, Kind: changedigest.ChannelNtfy, URL: site + "/ntfy", Secret: "ntfy-token-0123456789", Disabled: true}
	if err := cs.CreateChannel(ctx, c); err != nil {
		t.Fatal(err)
	}
	return ws
}

// versionsOf counts the stored versions of each watch.
func versionsOf(t *testing.T, st *pet.Store, ws []*changedigest.Watch) map[int64]int {
	t.Helper()
	n := map[int64]int{}
	for _, w := range ws {
		tr, err := st.Track(context.Background(), w.ID)
		if err != nil {
			t.Fatal(err)
		}
		n[w.ID] = tr.Latest
	}
	return n
}

// sameVersions checks that every version restored holds what the live
// store holds under the same number, byte for byte, and returns how many
// it compared.
func sameVersions(t *testing.T, restored, live *pet.Store, ws []*changedigest.Watch) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, w := range ws {
		tr, err := restored.Track(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Versions != tr.Latest || (tr.Latest > 0 && tr.Oldest != 1) {
			t.Errorf("watch %d restored with versions %d..%d, %d of them", w.ID, tr.Oldest, tr.Latest, tr.Versions)
		}
		for seq := tr.Oldest; seq <= tr.Latest && seq > 0; seq++ {
			rv, err1 := restored.Version(ctx, w.ID, seq)
			lv, err2 := live.Version(ctx, w.ID, seq)
			rb, err3 := restored.Body(ctx, w.ID, seq)
			lb, err4 := live.Body(ctx, w.ID, seq)
			if err := firstErr(err1, err2, err3, err4); err != nil {
				t.Fatalf("watch %d version %d: %v", w.ID, seq, err)
			}
			rj, _ := json.Marshal(rv)
			lj, _ := json.Marshal(lv)
			if !bytes.Equal(rj, lj) || !bytes.Equal(rb, lb) {
				t.Errorf("watch %d version %d differs after the restore", w.ID, seq)
			}
			n++
		}
	}
	return n
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// accounts is what the store holds of its users that a restore must keep:
// each user with credentials, and their settings as exported.
func accounts(t *testing.T, st userdata.Store, users []changedigest.User) string {
	t.Helper()
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "%d %s admin=%v email=%s hour=%d hash=%x feed=%s\n", u.ID, u.Name, u.Admin, u.Email, u.DigestHour, u.PasswordHash, u.FeedToken)
		d, err := userdata.Export(context.Background(), st, u.Name, userdata.Options{Secrets: true, Now: func() time.Time { return time.Time{} }})
		if err != nil {
			t.Fatal(err)
		}
		d.Encode(&b)
	}
	return b.String()
}

func openStore(t *testing.T, dir string) *pet.Store {
	t.Helper()
	st := pet.New(dir)
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestBackupUnderLoad: a backup taken through the running service while
// its checks store new versions restores to a store that passes its full
// check and holds each watch's versions, as of a moment during the backup,
// byte for byte as the service holds them, with the users, their
// settings, profile and channels; a serve started on it serves them.
func TestBackupUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs the service under load")
	}
	ctx := context.Background()
	site := changingSite(t)
	data := t.TempDir()
	m, _ := startServe(t, data, "")
	defer m.Close()
	ws := setUpUser(t, m, site.URL, 8)
	if fi, err := os.Stat(filepath.Join(data, adminSocket)); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("admin socket: %v, %v", fi, err)
	}

	// Load: check every watch again and again, each check a new version.
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for lctx.Err() == nil {
			m.Scheduler.CheckNow(lctx, nil, ws...)
		}
	}()
	waitFor(t, "two versions of every watch", func() bool {
		for _, n := range versionsOf(t, m.Store, ws) {
			if n < 2 {
				return false
			}
		}
		return true
	})
	// The backup through the admin socket, read slowly: the service's
	// checks store versions while its copy is being read.
	before := versionsOf(t, m.Store, ws)
	file := filepath.Join(t.TempDir(), "b.tar")
	c := adminClient(ctx, data)
	if c == nil {
		t.Fatal("no admin socket")
	}
	res, err := adminDo(ctx, c, "GET", "/backup", nil)
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if _, err := io.CopyN(&archive, res.Body, 64<<10); err != nil {
		t.Fatal(err)
	}
	// The copy was taken before the first byte came: what is stored
	// from now on is not in it.
	sent := versionsOf(t, m.Store, ws)
	waitFor(t, "versions stored while the backup is read", func() bool {
		n := versionsOf(t, m.Store, ws)
		return n[ws[0].ID] > sent[ws[0].ID]
	})
	if _, err := io.Copy(&archive, res.Body); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	after := versionsOf(t, m.Store, ws)
	if err := os.WriteFile(file, archive.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// And one by the command, while the load goes on.
	if code, out, errs := runCmd(t, "backup", "--data", data, filepath.Join(t.TempDir(), "cli.tar")); code != 0 || !strings.Contains(out, "through the running service") {
		t.Fatalf("backup: exit %d: %s%s", code, out, errs)
	}
	stop()
	wg.Wait()

	restoredDir := filepath.Join(t.TempDir(), "restored")
	if code, out, errs := runCmd(t, "restore", "--data", restoredDir, file); code != 0 || !strings.Contains(out, "search index rebuilt") {
		t.Fatalf("restore: exit %d: %s%s", code, out, errs)
	}
	restored := openStore(t, restoredDir)
	if err := restored.Check(ctx); err != nil {
		t.Fatalf("the restored store fails its check: %v", err)
	}
	got := versionsOf(t, restored, ws)
	for _, w := range ws {
		if got[w.ID] < before[w.ID] || got[w.ID] > after[w.ID] {
			t.Errorf("watch %d: %d versions restored, want between %d (before the backup) and %d (after)", w.ID, got[w.ID], before[w.ID], after[w.ID])
		}
	}
	behind := 0
	for _, w := range ws {
		behind += after[w.ID] - got[w.ID]
	}
	if behind == 0 {
		t.Errorf("no version stored during the backup is missing from it: the backup did not overlap the checks")
	}
	n := sameVersions(t, restored, m.Store, ws)
	t.Logf("%d versions compared byte for byte; versions before/at/after the backup: %v / %v / %v", n, before, got, after)
	users, err := m.Store.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := accounts(t, restored, users), accounts(t, m.Store, users); g != w {
		t.Errorf("accounts after the restore:\n%s\nwant\n%s", g, w)
	}
	key, _ := os.ReadFile(filepath.Join(data, "server.key"))
	if rk, _ := os.ReadFile(filepath.Join(restoredDir, "server.key")); len(key) == 0 || !bytes.Equal(rk, key) {
		t.Errorf("server.key not restored")
	}
	// The search index was rebuilt from the store.
	hits, err := restored.Search(ctx, pet.Query{Text: "harbour", UserID: pet.AnyUser})
	if err != nil || hits.Total == 0 {
		t.Errorf("search of the restored store: %+v, %v", hits, err)
	}
	restored.Close()

	// A serve on the restored directory makes its cluster of one from it.
	m2, _ := startServe(t, restoredDir, "")
	defer m2.Close()
	rws, err := m2.clusterStore().Watches(ctx, pet.AnyUser, "load")
	if err != nil || len(rws) != len(ws) {
		t.Fatalf("the restored service's watches: %d, %v", len(rws), err)
	}
	if u, err := m2.clusterStore().UserByName(ctx, "ann"); err != nil || u.Email != "ann@example.org" {
		t.Errorf("the restored service's user: %+v, %v", u, err)
	}
}

// TestBackupWithoutService: with no service running, backup reads the
// store itself, into a new file of the directory given; restore refuses
// a directory that is not empty, keeps the store it replaces with
// --force, and refuses a directory a service runs on.
func TestBackupWithoutService(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{{"user", "add", "ann", "--email", "ann@example.org"}, {"watch", "add", "http://127.0.0.1:1/news", "--every", "2h", "--tag", "x", "--basic-auth", "ann:a-secret-of-ann"}} {
		if code, out, errs := runCmdIn(t, "a good password\n", append(args, "--data", data)...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
	}
	dir := t.TempDir()
	code, out, errs := runCmd(t, "--data", data, "backup", dir)
	if code != 0 || !strings.Contains(out, "no service running") {
		t.Fatalf("backup: exit %d: %s%s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "changedigest-backup-*.tar"))
	if len(files) != 1 {
		t.Fatalf("backup files in %s: %v", dir, files)
	}
	if code, _, errs := runCmd(t, "backup", "--data", data, files[0]); code != 2 || !strings.Contains(errs, "exists") {
		t.Errorf("backup over a file: exit %d: %s", code, errs)
	}
	if code, _, errs := runCmd(t, "backup", "--data", filepath.Join(dir, "none"), filepath.Join(dir, "x.tar")); code != 2 || !strings.Contains(errs, "no store") {
		t.Errorf("backup of nothing: exit %d: %s", code, errs)
	}

	target := t.TempDir()
	if code, out, errs := runCmd(t, "restore", "--data", target, files[0]); code != 0 {
		t.Fatalf("restore: exit %d: %s%s", code, out, errs)
	}
	live, restored := openStore(t, data), openStore(t, target)
	users, _ := live.Users(context.Background())
	if g, w := accounts(t, restored, users), accounts(t, live, users); g != w {
		t.Errorf("after the restore:\n%s\nwant\n%s", g, w)
	}
	live.Close()
	restored.Close()
	// The key of the watches' secrets comes back with them.
	if key, _ := os.ReadFile(filepath.Join(data, secret.KeyFile)); len(key) == 0 {
		t.Errorf("no %s made for the watch's password", secret.KeyFile)
	} else if rk, _ := os.ReadFile(filepath.Join(target, secret.KeyFile)); !bytes.Equal(rk, key) {
		t.Errorf("%s not restored", secret.KeyFile)
	}

	if code, _, errs := runCmd(t, "restore", "--data", target, files[0]); code != 2 || !strings.Contains(errs, "not empty") {
		t.Errorf("restore into a store: exit %d: %s", code, errs)
	}
	if code, out, errs := runCmd(t, "restore", "--data", target, "--force", files[0]); code != 0 || !strings.Contains(out, "kept the store that was there aside as pet.db.replaced-") {
		t.Errorf("restore --force: exit %d: %s%s", code, out, errs)
	}
	m, _ := startServe(t, target, "")
	defer m.Close()
	if code, _, errs := runCmd(t, "restore", "--data", target, "--force", files[0]); code != 1 || !strings.Contains(errs, "in use by a running changedigest service") {
		t.Errorf("restore under a service: exit %d: %s", code, errs)
	}
	// The same archive either way: through the service, the same files.
	code, out, errs = runCmd(t, "backup", "--data", target, filepath.Join(dir, "live.tar"))
	if code != 0 || !strings.Contains(out, "through the running service") || !strings.Contains(out, "server.key (32 bytes), tag-authority") {
		t.Errorf("backup through the service: exit %d: %s%s", code, out, errs)
	}
}

// TestRestoreBadInput: a backup cut short, altered, or not a backup at
// all is refused with a message that says which, and the data directory
// is left as it was.
func TestRestoreBadInput(t *testing.T) {
	data := t.TempDir()
	if code, out, errs := runCmdIn(t, "a good password\n", "user", "add", "ann", "--data", data); code != 0 {
		t.Fatalf("user add: exit %d: %s%s", code, out, errs)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tar")
	if code, out, errs := runCmd(t, "backup", "--data", data, good); code != 0 {
		t.Fatalf("backup: exit %d: %s%s", code, out, errs)
	}
	a, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(a)
	flipped[len(flipped)/2] ^= 1
	for _, tc := range []struct {
		name  string
		input []byte
		want  string
	}{
		{"truncated in the store", a[:len(a)/2], "the backup is cut short: it ends in pet.db"},
		{"truncated before the manifest", a[:len(a)-2048], "the backup is cut short"},
		{"altered", flipped, "the backup is damaged"},
		{"empty", nil, "not a changedigest backup"},
		{"a user export", []byte(`{"format":"changedigest-user","version":1}` + strings.Repeat("\n", 600)), "not a changedigest backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".tar", tc.input)
			target := filepath.Join(t.TempDir(), "data")
			code, out, errs := runCmd(t, "restore", "--data", target, file)
			if code != 2 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "nothing was restored") {
				t.Errorf("exit %d: %s%s, want %q", code, out, errs, tc.want)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Errorf("the data directory was left behind: %v", err)
			}
		})
	}
}

// TestUserExportImportCommands: user export, then user import as another
// user, with the service stopped and through it; bad input is an error
// that names what is wrong, and imports nothing.
func TestUserExportImportCommands(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{{"user", "add", "ann"}, {"watch", "add", "http://127.0.0.1:1/news", "--every", "2h", "--tag", "x", "--user", "ann"}} {
		if code, out, errs := runCmdIn(t, "a good password\n", append(args, "--data", data)...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
	}
	if code, out, errs := runCmdIn(t, "signing-secret-0123456789\n", "channel", "add", "webhook", "https://hooks.example.org/x", "--secret-stdin", "--user", "ann", "--data", data); code != 0 {
		t.Fatalf("channel add: exit %d: %s%s", code, out, errs)
	}
	code, doc, errs := runCmd(t, "user", "export", "ann", "--data", data)
	if code != 0 || !strings.Contains(doc, `"secret_omitted": true`) || strings.Contains(doc, "signing-secret") {
		t.Fatalf("export: exit %d: %s%s", code, doc, errs)
	}
	_, withSecrets, _ := runCmd(t, "user", "export", "ann", "--secrets", "--data", data)
	if !strings.Contains(withSecrets, "signing-secret-0123456789") {
		t.Errorf("export --secrets: %s", withSecrets)
	}
	file := writeFile(t, t.TempDir(), "ann.json", []byte(withSecrets))
	code, out, errs := runCmd(t, "user", "import", "bob", file, "--data", data)
	if code != 0 || !strings.Contains(out, "created user bob") || !strings.Contains(out, "1 watches, 1 channels") {
		t.Fatalf("import: exit %d: %s%s", code, out, errs)
	}
	bad := writeFile(t, t.TempDir(), "bad.json", []byte(strings.Replace(withSecrets, `"every": "2h0m0s"`, `"every": "2s"`, 1)))
	code, out, errs = runCmd(t, "user", "import", "carol", bad, "--data", data)
	if code != 2 || !strings.Contains(errs, "watches[0] (http://127.0.0.1:1/news): interval 2s is shorter than one minute") {
		t.Errorf("import of a bad file: exit %d: %s%s", code, out, errs)
	}
	if code, _, errs := runCmdIn(t, withSecrets[:len(withSecrets)/2], "user", "import", "carol", "-", "--data", data); code != 2 || !strings.Contains(errs, "cut short") {
		t.Errorf("import of a cut file: exit %d: %s", code, errs)
	}
	if _, out, _ := runCmd(t, "user", "list", "--data", data); strings.Contains(out, "carol") {
		t.Errorf("a failed import made a user:\n%s", out)
	}

	// Through the running service: the same document, the same report.
	m, _ := startServe(t, data, "")
	defer m.Close()
	code, live, errs := runCmd(t, "user", "export", "bob", "--secrets", "--data", data)
	if code != 0 || !strings.Contains(live, "signing-secret-0123456789") || !strings.Contains(live, `"name": "bob"`) {
		t.Fatalf("export through the service: exit %d: %s%s", code, live, errs)
	}
	code, out, errs = runCmd(t, "user", "import", "dave", file, "--data", data)
	if code != 0 || !strings.Contains(out, "created user dave") || !strings.Contains(out, "1 watches, 1 channels") {
		t.Fatalf("import through the service: exit %d: %s%s", code, out, errs)
	}
	if code, _, errs := runCmd(t, "user", "export", "nobody", "--data", data); code != 2 || !strings.Contains(errs, "nobody") {
		t.Errorf("export of an unknown user: exit %d: %s", code, errs)
	}
	u, err := m.clusterStore().UserByName(context.Background(), "dave")
	if err != nil {
		t.Fatal(err)
	}
	if ws, _ := m.clusterStore().Watches(context.Background(), u.ID, "x"); len(ws) != 1 {
		t.Errorf("dave's watches: %+v", ws)
	}
}
