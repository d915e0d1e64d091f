package cluster

import "testing"

// TestViewsPassOwnAppends: a view passes the run of this node's own
// appends right after its place (those of other shards too, which are
// on none of its subjects), and stops at a sequence it does not know of
// or at one of a shard given up since.
func TestViewsPassOwnAppends(t *testing.T) {
	var x tips
	// Stream sequences 11 to 14: own appends to shards 1, 2, 1, 1; 15 is
	// another writer's; 16 is own again.
	for i, s := range []int{1, 2, 1, 1} {
		x.heldOwn(int64(100+i), s, 0, 1, uint64(11+i))
	}
	x.heldOwn(200, 1, 0, 1, 16)
	if to, k := x.pass(10, 1); to != 14 || k != 3 {
		t.Errorf("shard 1 from 10: to %d past %d of its own, want 14 past 3", to, k)
	}
	if to, k := x.pass(10, 2); to != 14 || k != 1 {
		t.Errorf("shard 2 from 10: to %d past %d of its own, want 14 past 1", to, k)
	}
	if to, k := x.pass(9, 1); to != 9 || k != 0 {
		t.Errorf("from 9 (10 unknown): to %d, want 9", to)
	}
	if to, _ := x.pass(15, 1); to != 16 {
		t.Errorf("from 15: to %d, want 16", to)
	}
	// Shard 2 given up: its append is no longer known to be in the view.
	x.dropShard(2, 4)
	if to, k := x.pass(10, 1); to != 11 || k != 1 {
		t.Errorf("after shard 2 was dropped, shard 1 from 10: to %d past %d, want 11 past 1", to, k)
	}
	// An append stored while its shard's view was being given up (an
	// older generation) is not known either.
	x.heldOwn(300, 2, 0, 1, 12)
	if to, _ := x.pass(11, 1); to != 11 {
		t.Errorf("an append of a dropped generation passed: to %d, want 11", to)
	}
	x.forgetOwn(14)
	if to, _ := x.pass(10, 1); to != 10 {
		t.Errorf("after forgetting up to 14: to %d, want 10", to)
	}
	if to, _ := x.pass(15, 1); to != 16 {
		t.Errorf("after forgetting up to 14, from 15: to %d, want 16", to)
	}
}
