package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/changedigest/changedigest"
)

// TestSchedulesInChunks writes a shard's schedules in chunks, reads them
// back whole, writes fewer (the chunks left over are deleted) and skips a
// chunk of another write's generation.
func TestSchedulesInChunks(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	conn, err := Dial(ctx, Config{Name: "a", Dir: t.TempDir(), Shards: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := &Node{Conn: conn, Logger: quiet}
	defer func(c int) { scheduleChunk = c }(scheduleChunk)
	scheduleChunk = 3
	due := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	watches := func(k int) []changedigest.Watch {
		var ws []changedigest.Watch
		for i := range k {
			ws = append(ws, changedigest.Watch{ID: int64(i + 1), NextCheck: due.Add(time.Duration(i) * time.Minute), Checks: i + 1})
		}
		return ws
	}
	read := func(want int) {
		t.Helper()
		got := n.readSchedules(ctx, 1)
		if len(got) != want {
			t.Fatalf("read %d schedules, want %d", len(got), want)
		}
		for id, w := range got {
			if w.Checks != int(id) || !w.NextCheck.Equal(due.Add(time.Duration(id-1)*time.Minute)) {
				t.Errorf("watch %d: %+v", id, w)
			}
		}
	}
	if err := n.writeShardSchedules(ctx, 1, watches(7)); err != nil {
		t.Fatal(err)
	}
	read(7)
	if err := n.writeShardSchedules(ctx, 1, watches(2)); err != nil {
		t.Fatal(err)
	}
	read(2)
	for _, k := range []int{1, 2} {
		if _, err := conn.schedules.Get(ctx, scheduleKey(1, k)); err == nil {
			t.Errorf("chunk %d of the larger write is still there", k)
		}
	}
	// A chunk another write left behind is not read.
	stale, _ := json.Marshal(shardSchedules{Gen: 1, Watches: []changedigest.Watch{{ID: 99, Checks: 99}}})
	if _, err := conn.schedules.Put(ctx, scheduleKey(1, 1), s2.Encode(nil, stale)); err != nil {
		t.Fatal(err)
	}
	read(2)
	if got := n.readSchedules(ctx, 0); len(got) != 0 {
		t.Errorf("a shard with nothing kept: %d schedules", len(got))
	}
	if err := n.writeShardSchedules(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := n.readSchedules(ctx, 0); len(got) != 0 {
		t.Errorf("an empty shard: %d schedules", len(got))
	}
}
