package pet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// crashEnv names the store directory of the child process that writes
// versions until it is killed.
const crashEnv = "PET_CRASH_CHILD_DIR"

// crashKeep is the child's retention, so that kills also hit removals.
const crashKeep = 12

// crashVersion is version n of the child's page: a paragraph unique to
// the version (so every version is searchable by its own word), and
// paragraphs that change at different rates.
func crashVersion(n int) []byte {
	paras := []string{fmt.Sprintf("marker vers%d of the crash page", n)}
	for i := 1; i < 10; i++ {
		paras = append(paras, words(uint64(n/(i+1)*100+i), 20))
	}
	return []byte(page(paras...))
}

func crashStore(dir string, log io.Writer) *Store {
	s := New(dir)
	s.KeepVersions = crashKeep
	s.Logger = slog.New(slog.NewTextHandler(log, nil))
	return s
}

// runCrashChild writes versions in a loop, printing each stored seq.
func runCrashChild(dir string) {
	ctx := context.Background()
	s := crashStore(dir, io.Discard)
	if err := s.Open(ctx); err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	u, err := s.UserByName(ctx, "crash")
	if err != nil {
		u = &changedigest.User{Name: "crash", DigestHour: -1}
		if err := s.CreateUser(ctx, u); err != nil {
			fmt.Println("user:", err)
			os.Exit(2)
		}
	}
	ws, err := s.Watches(ctx, u.ID, "")
	if err != nil {
		fmt.Println("watches:", err)
		os.Exit(2)
	}
	var w *changedigest.Watch
	if len(ws) > 0 {
		w = &ws[0]
	} else {
		w = &changedigest.Watch{UserID: u.ID, URL: "https://crash.example/"}
		if err := s.CreateWatch(ctx, w); err != nil {
			fmt.Println("watch:", err)
			os.Exit(2)
		}
	}
	fmt.Println("ready")
	for {
		info, err := s.Track(ctx, w.ID)
		if err != nil {
			fmt.Println("track:", err)
			os.Exit(2)
		}
		n := info.Latest + 1
		body := crashVersion(n)
		snap := splitPage(body, 0)
		seq, err := s.AddVersion(ctx, w.ID, snap, body)
		if err != nil || seq != n {
			fmt.Println("add:", seq, err)
			os.Exit(3)
		}
		fmt.Println("stored", seq)
	}
}

// TestCrash kills a writing child process with SIGKILL at random moments
// and checks after each kill that the store reopens consistent: every
// listed version reads back whole and is found by search, no chunk or
// segment is left over, and the index agrees with pet.db.
func TestCrash(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		runCrashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("crash test runs child processes")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	rounds := 10
	lastLatest, replays, rebuilds := 0, 0, 0
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1000)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill during Open now and then, else after some versions.
		delay := time.Duration(r.IntN(900)+100) * time.Millisecond
		if round%3 == 2 {
			delay = time.Duration(r.IntN(60)) * time.Millisecond
		}
		time.Sleep(delay)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		stored := 0
		var last string
		for l := range lines {
			if strings.HasPrefix(l, "stored") {
				stored++
			} else if l != "ready" {
				last = l
			}
		}
		if last != "" {
			t.Fatalf("round %d: child failed: %s", round, last)
		}
		latest := checkCrashStore(t, dir, &replays, &rebuilds)
		t.Logf("round %d: killed after %v, %d versions reported stored, track now ends at %d", round, delay, stored, latest)
		if latest < lastLatest+stored {
			t.Fatalf("round %d: track ends at %d, but %d versions were reported stored after %d", round, latest, stored, lastLatest)
		}
		lastLatest = latest
	}
	t.Logf("%d rounds: %d reopens replayed pending index updates, %d rebuilt the index", rounds, replays, rebuilds)
	if lastLatest < crashKeep {
		t.Errorf("the child stored only %d versions in %d rounds; retention was never exercised", lastLatest, rounds)
	}
}

// checkCrashStore opens the store the child left, checks it and returns
// the latest seq.
func checkCrashStore(t *testing.T, dir string, replays, rebuilds *int) int {
	t.Helper()
	ctx := context.Background()
	var log strings.Builder
	s := crashStore(dir, &log)
	if err := s.Open(ctx); err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	if strings.Contains(log.String(), "replaying pending") {
		*replays++
	}
	if strings.Contains(log.String(), "rebuild") {
		*rebuilds++
	}
	defer s.Close()
	u, err := s.UserByName(ctx, "crash")
	if err != nil {
		return 0 // killed before the user was created
	}
	ws, err := s.Watches(ctx, u.ID, "")
	if err != nil || len(ws) == 0 {
		return 0
	}
	w := ws[0]
	info, err := s.Track(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Latest > 0 && info.Versions != min(info.Latest, crashKeep) {
		t.Errorf("track %+v: want %d versions", info, min(info.Latest, crashKeep))
	}
	bodies := map[int]string{}
	for seq := info.Oldest; info.Latest > 0 && seq <= info.Latest; seq++ {
		body := crashVersion(seq)
		bodies[seq] = string(body)
		snap, err := s.Version(ctx, w.ID, seq)
		if err != nil {
			t.Fatalf("version %d: %v", seq, err)
		}
		want := splitPage(body, 0)
		if fmt.Sprint(snap.Hashes()) != fmt.Sprint(want.Hashes()) {
			t.Errorf("version %d: segment hashes differ", seq)
		}
		res, err := s.Search(ctx, Query{Text: fmt.Sprintf("vers%d", seq), UserID: u.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 || res.Hits[0].Seq != seq {
			t.Errorf("version %d is not found by its own word: %+v", seq, res)
		}
	}
	// Versions removed by retention are not found any more.
	for seq := max(1, info.Oldest-3); seq < info.Oldest; seq++ {
		if res, err := s.Search(ctx, Query{Text: fmt.Sprintf("vers%d", seq), UserID: u.ID}); err != nil || res.Total != 0 {
			t.Errorf("removed version %d is still found: %+v, %v", seq, res, err)
		}
	}
	checkTrack(t, s, w.ID, bodies)
	return info.Latest
}
