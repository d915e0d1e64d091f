package crawl

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSlots checks that slots let n take at once, that a taker waits for
// one to be freed and gives up when its context ends, and that nil slots
// never wait.
func TestSlots(t *testing.T) {
	s := NewSlots(2)
	ctx := context.Background()
	free1, err := s.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.take(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := s.take(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third take with both slots taken: %v, want the context's end", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := s.take(ctx)
		got <- err
	}()
	free1()
	if err := <-got; err != nil {
		t.Fatalf("take after a slot was freed: %v", err)
	}
	var none Slots
	for range 3 {
		if _, err := none.take(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
