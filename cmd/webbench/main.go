// Command webbench builds a store for measuring the web pages under load:
// users with many watches in varied states (titles, tags, failures, check
// and change times) and a few watches with real stored versions and
// changes, checked through the real scheduler, fetcher, segmenter and
// store against a page farm on loopback, as checkbench does. It prints a
// session cookie of each user, for wrk or curl against `changedigest serve`
// on the same data directory.
//
//	go run ./cmd/webbench -data /tmp/webbench -watches 10000 -users 16
//	go run ./cmd/changedigest serve --data /tmp/webbench --addr 127.0.0.1:8399 &
//	wrk -t2 -c16 -d20s --latency -H "Cookie: $(sed -n 1p /tmp/webbench/cookies.txt)" http://127.0.0.1:8399/
//
// The first user (bench01) has -watches watches, the others -others each.
// No watch is due for a month, so the service does not check any while
// it is measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/segmenter"
	"github.com/changedigest/changedigest/server"
)

func main() {
	data := flag.String("data", "", "data directory to create (must not exist or be empty)")
	watches := flag.Int("watches", 10000, "watches of the first user")
	others := flag.Int("others", 100, "watches of each other user")
	users := flag.Int("users", 16, "users (bench01, bench02, …), each with a session")
	checked := flag.Int("checked", 40, "watches of the first user checked twice against a loopback page farm, so that they have versions and changes")
	password := flag.String("password", "bench password", "the users' password")
	flag.Parse()
	if *data == "" || *users < 1 || *watches < 0 || *others < 0 || *checked < 0 || *checked > *watches {
		fmt.Fprintln(os.Stderr, "webbench: give -data DIR, -users ≥ 1 and 0 ≤ -checked ≤ -watches")
		os.Exit(2)
	}
	if err := run(*data, *watches, *others, *users, *checked, *password); err != nil {
		fmt.Fprintln(os.Stderr, "webbench:", err)
		os.Exit(1)
	}
}

// tb stands in for testing.TB for the farm.
type tb struct{ cleanups []func() }

func (t *tb) Helper()          {}
func (t *tb) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *tb) close() {
	for _, f := range t.cleanups {
		f()
	}
}

var tagPool = []string{"news", "science", "politics", "sport", "football", "cycling", "music", "film",
	"books", "go", "web", "security", "climate", "local", "work", "family"}

var words = []string{"daily", "weekly", "city", "council", "notes", "blog", "review", "journal", "league",
	"club", "lab", "project", "release", "report", "updates", "archive", "market", "weather", "transit", "library"}

func run(dir string, nFirst, nOthers, nUsers, nChecked int, password string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	store := pet.New(dir)
	store.NoSync = true // a throw-away store: building it is then a matter of seconds
	store.Logger = slog.New(slog.DiscardHandler)
	if err := store.Open(ctx); err != nil {
		return err
	}
	defer store.Close()
	hash, err := server.HashPassword(password)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	start := now
	var cookies []string
	var firstWatches []*changedigest.Watch
	for ui := range nUsers {
		u := &changedigest.User{Name: fmt.Sprintf("bench%02d", ui+1), PasswordHash: hash, DigestHour: -1}
		if err := store.CreateUser(ctx, u); err != nil {
			return err
		}
		n := nOthers
		if ui == 0 {
			n = nFirst
		}
		for i := range n {
			w := &changedigest.Watch{UserID: u.ID, URL: fmt.Sprintf("https://site%d.example/%s/%d", i%500, words[i%len(words)], i),
				Category: changedigest.CategoryNews}
			for range rng.IntN(4) {
				w.Tags = append(w.Tags, tagPool[rng.IntN(len(tagPool))])
			}
			if err := store.CreateWatch(ctx, w); err != nil {
				return err
			}
			if ui == 0 && i < nChecked {
				firstWatches = append(firstWatches, w)
				continue // its state comes from real checks
			}
			if _, err := store.UpdateWatch(ctx, pet.AnyUser, w.ID, func(w *changedigest.Watch) error {
				if rng.IntN(3) > 0 {
					w.Title = strings.ToUpper(words[rng.IntN(len(words))][:1]) + words[rng.IntN(len(words))][1:] + " " + words[rng.IntN(len(words))]
				}
				w.Kind = changedigest.KindPage
				if rng.IntN(4) == 0 {
					w.Kind = changedigest.KindFeed
				}
				w.Checks = 1 + rng.IntN(200)
				w.LastCheck = now.Add(-time.Duration(rng.IntN(48*60)) * time.Minute)
				if rng.IntN(5) > 0 {
					w.LastChange = w.LastCheck.Add(-time.Duration(rng.IntN(30*24)) * time.Hour)
				}
				if rng.IntN(20) == 0 {
					w.LastError, w.LastErrorAt, w.ErrorCount = "fetch: 503 Service Unavailable", w.LastCheck, 1+rng.IntN(5)
				}
				w.NextCheck = now.Add(30*24*time.Hour + time.Duration(rng.IntN(24*60))*time.Minute)
				w.Paused = rng.IntN(50) == 0
				return nil
			}); err != nil {
				return err
			}
		}
		token, err := store.CreateSession(ctx, u.ID, 30*24*time.Hour)
		if err != nil {
			return err
		}
		cookies = append(cookies, "cd_session="+token)
	}
	fmt.Printf("created %d users, %d watches in %s\n", nUsers, nFirst+(nUsers-1)*nOthers, time.Since(start).Round(time.Millisecond))

	if len(firstWatches) > 0 {
		if err := checkTwice(ctx, store, firstWatches); err != nil {
			return err
		}
		for _, w := range firstWatches {
			if _, err := store.UpdateWatch(ctx, pet.AnyUser, w.ID, func(w *changedigest.Watch) error {
				w.NextCheck = now.Add(30 * 24 * time.Hour)
				return nil
			}); err != nil {
				return err
			}
		}
	}
	path := filepath.Join(dir, "cookies.txt")
	if err := os.WriteFile(path, []byte(strings.Join(cookies, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Printf("session cookies (bench01 first) in %s; the users' password is %q\n", path, password)
	return nil
}

// checkTwice checks the watches against a loopback farm, changes a third
// of the pages and checks them again, so they have versions and changes.
func checkTwice(ctx context.Context, store *pet.Store, ws []*changedigest.Watch) error {
	t := &tb{}
	defer t.close()
	farm := crawltest.NewFarm(t, crawltest.FarmConfig{Hosts: 4, Pages: len(ws), Size: 16 << 10,
		Rate: func(int) float64 { return 0 }})
	for i, w := range ws {
		if _, err := store.UpdateWatch(ctx, pet.AnyUser, w.ID, func(x *changedigest.Watch) error {
			x.URL = farm.URL(i)
			return nil
		}); err != nil {
			return err
		}
		w.URL = farm.URL(i)
	}
	f := crawl.NewFetcher()
	f.AllowPrivate = true
	sched := crawl.NewScheduler(store, crawl.NewPipeline(f, segmenter.New(), store))
	sched.Workers, sched.HostGap = 8, time.Millisecond
	sched.Logger = slog.New(slog.DiscardHandler)
	if _, err := sched.CheckNow(ctx, nil, ws...); err != nil {
		return err
	}
	for i := 0; i < len(ws); i += 3 {
		farm.Pages[i].Touch()
	}
	sum, err := sched.CheckNow(ctx, nil, ws...)
	if err != nil {
		return err
	}
	fmt.Printf("checked %d watches twice: %d changed\n", len(ws), sum.Changed)
	return nil
}
