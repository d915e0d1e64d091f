package segmenter

import (
	"fmt"
	"math/rand/v2"
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
