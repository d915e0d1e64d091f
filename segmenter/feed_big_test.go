package segmenter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

// bigFeedOps counts the changes of a diff or snapshot by operation.
func bigFeedOps(changes []changedigest.Change) map[changedigest.Op]int {
	ops := map[changedigest.Op]int{}
	for _, c := range changes {
		ops[c.Op]++
	}
	return ops
}

// TestDiffFeedsManyEditsWithoutIDs diffs two versions of a long feed
// whose items have neither ids, links nor dates, with thousands of items
// edited: every edited item must be found as the same item modified. The
// similarity pass used to score every pair of leftover items up to a
// million pairs, and past that reported the rest as added and removed
// (here 2,707 of the 3,000 edits, of 9 million pairs to score).
func TestDiffFeedsManyEditsWithoutIDs(t *testing.T) {
	cfg := crawltest.BigFeedConfig{Items: 20000, NoIDs: true, NoDates: true, Added: 50, Removed: 50, Edited: 3000, Seed: 7}
	v1, v2 := crawltest.BigFeed(cfg)
	d, err := DiffFeeds(crawltest.BigFeedBody(cfg, v1), crawltest.BigFeedBody(cfg, v2))
	if err != nil {
		t.Fatal(err)
	}
	// The item at position n of v2 is v1's item at n-Added (past the new ones).
	var wrong []string
	updates := 0
	for _, c := range d.Changes {
		o, n := *c.OldItem, *c.NewItem
		switch c.Op {
		case changedigest.OpInsert:
			if n >= cfg.Added {
				wrong = append(wrong, fmt.Sprintf("item %d of v2 (v1's %d) reported added", n, n-cfg.Added))
			}
		case changedigest.OpDelete:
			if o < cfg.Items-cfg.Removed {
				wrong = append(wrong, fmt.Sprintf("item %d of v1 (v2's %d) reported removed", o, o+cfg.Added))
			}
		case changedigest.OpUpdate:
			updates++
			if n != o+cfg.Added || !v2[n].Edited {
				wrong = append(wrong, fmt.Sprintf("v1's %d mapped to v2's %d", o, n))
			}
		}
	}
	ops := bigFeedOps(d.Changes)
	if len(wrong) > 0 || ops[changedigest.OpInsert] != cfg.Added || ops[changedigest.OpDelete] != cfg.Removed || updates != cfg.Edited {
		t.Errorf("changes %v, want %d inserts, %d deletes, %d updates; %d wrong, first: %v",
			ops, cfg.Added, cfg.Removed, cfg.Edited, len(wrong), wrong[:min(5, len(wrong))])
	}
}

// TestFeedPairsMissNone checks the candidate pairs of the similarity pass
// against every pair: each pair that reaches feedMatchThreshold must be
// among them, on items of every shape made of few words (so that many
// pairs come close to the threshold).
func TestFeedPairsMissNone(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("a b c d e f g h i j k l m n o p")
	words := func(n int) string {
		var w []string
		for range n {
			w = append(w, vocab[r.IntN(len(vocab))])
		}
		return strings.Join(w, " ")
	}
	item := func() feedTokens {
		it := FeedItem{}
		if r.IntN(5) > 0 {
			it.Title = words(1 + r.IntN(4))
		}
		if r.IntN(5) > 0 {
			it.Text = words(r.IntN(12))
		}
		return feedTokenize(&it)
	}
	for round := range 20 {
		ot, nt := make([]feedTokens, 150), make([]feedTokens, 150)
		for i := range ot {
			ot[i], nt[i] = item(), item()
		}
		got := map[[2]int]bool{}
		feedPairs(ot, nt, func(k, j int) {
			if got[[2]int{k, j}] {
				t.Fatalf("round %d: pair %d, %d visited twice", round, k, j)
			}
			got[[2]int{k, j}] = true
		})
		want, missed := 0, 0
		for k := range ot {
			for j := range nt {
				if feedScore(&ot[k], &nt[j]) >= feedMatchThreshold {
					want++
					if !got[[2]int{k, j}] {
						missed++
						if missed <= 3 {
							t.Errorf("round %d: pair %v / %v scores %.3f and was not visited", round, ot[k], nt[j], feedScore(&ot[k], &nt[j]))
						}
					}
				}
			}
		}
		if want == 0 || len(got) >= len(ot)*len(nt) {
			t.Errorf("round %d: %d pairs reach the threshold, %d of %d visited: the test does not test", round, want, len(got), len(ot)*len(nt))
		}
	}
}

// TestDetectFeedItemLimit checks a feed past the item limit: a version
// keeps the newest DefaultMaxItems items, whatever order the feed lists
// them in, says how many the feed had, and the next version tells the
// items added and edited among the newest, not the items that only left
// the kept ones.
func TestDetectFeedItemLimit(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		name  string
		cfg   crawltest.BigFeedConfig
		order func([]crawltest.BigFeedItem) // how the feed lists its items (newest first as made)
	}{
		{"rss newest first", crawltest.BigFeedConfig{Items: 40000}, nil},
		{"atom oldest first", crawltest.BigFeedConfig{Items: 10000, Atom: true}, slices.Reverse[[]crawltest.BigFeedItem]},
		{"json newest first", crawltest.BigFeedConfig{Items: 10000, JSON: true}, nil},
		{"rss in no order", crawltest.BigFeedConfig{Items: 10000}, func(items []crawltest.BigFeedItem) {
			r := rand.New(rand.NewPCG(3, 4))
			r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		}},
		{"rss without dates", crawltest.BigFeedConfig{Items: 10000, NoDates: true}, nil},
		{"rss without ids or dates", crawltest.BigFeedConfig{Items: 10000, NoIDs: true, NoDates: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Added, cfg.Removed, cfg.Edited, cfg.Seed = 30, 40, cfg.Items/100, 11
			v1, v2 := crawltest.BigFeed(cfg)
			// The newest DefaultMaxItems of each version: the first ones as made.
			newest := func(items []crawltest.BigFeedItem) map[int]bool {
				m := map[int]bool{}
				for _, it := range items[:DefaultMaxItems] {
					m[it.ID] = true
				}
				return m
			}
			kept1, kept2 := newest(v1), newest(v2)
			wantEdited := 0
			for _, it := range v2[:DefaultMaxItems] {
				if it.Edited && kept1[it.ID] {
					wantEdited++
				}
			}
			if tc.order != nil {
				tc.order(v1)
				tc.order(v2)
			}
			b1, b2 := crawltest.BigFeedBody(cfg, v1), crawltest.BigFeedBody(cfg, v2)
			byText := func(items []crawltest.BigFeedItem) map[string]int {
				m := map[string]int{}
				for _, it := range items {
					m[it.Title+"\n"+it.Text] = it.ID
				}
				return m
			}
			ids1, ids2 := byText(v1), byText(v2)
			checkKept := func(snap *changedigest.Snapshot, ids map[string]int, kept map[int]bool, total int) {
				t.Helper()
				if len(snap.Segments) != DefaultMaxItems || snap.FeedItems != total {
					t.Fatalf("%d segments, FeedItems %d; want %d of %d", len(snap.Segments), snap.FeedItems, DefaultMaxItems, total)
				}
				for _, seg := range snap.Segments {
					if id, ok := ids[seg.Text]; !ok || !kept[id] {
						t.Fatalf("segment %d (%q) is not one of the newest items", seg.Index, seg.Text)
					}
				}
			}
			first, err := s.Detect(Input{Body: b1})
			if err != nil {
				t.Fatal(err)
			}
			checkKept(first, ids1, kept1, len(v1))
			snap, err := s.Detect(Input{Body: b2, Prev: first, PrevBody: b1, History: [][]string{first.Hashes()}})
			if err != nil {
				t.Fatal(err)
			}
			checkKept(snap, ids2, kept2, len(v2))
			ops := bigFeedOps(snap.Changes)
			if ops[changedigest.OpInsert] != cfg.Added || ops[changedigest.OpUpdate] != wantEdited || ops[changedigest.OpDelete] != 0 {
				t.Errorf("changes %v, want %d inserts, %d updates, no delete", ops, cfg.Added, wantEdited)
			}
			for _, c := range snap.Changes {
				if c.Op == changedigest.OpInsert && kept1[ids2[c.NewText]] {
					t.Errorf("item %q, kept before, reported added", c.Title)
				}
			}
		})
	}
}
