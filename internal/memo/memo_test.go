package memo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestKeepsTheRecentlyUsedWithinMax(t *testing.T) {
	c := Cache[int, string]{Max: 80}
	for i := range 10 {
		c.Put(i, "v", 10)
	}
	// 80 bytes hold the last eight; getting 2 makes it recent.
	if _, ok := c.Get(0); ok {
		t.Error("0 is kept past the bound")
	}
	if _, ok := c.Get(2); !ok {
		t.Fatal("2 is not kept")
	}
	c.Put(10, "v", 10)
	if _, ok := c.Get(3); ok {
		t.Error("3, the least recently used, is kept")
	}
	if _, ok := c.Get(2); !ok {
		t.Error("2, used lately, was dropped")
	}
	c.Put(11, "big", 11) // over an eighth of Max
	if _, ok := c.Get(11); ok {
		t.Error("a value over an eighth of Max is kept")
	}
	c.Reset()
	if _, ok := c.Get(2); ok {
		t.Error("kept after Reset")
	}
}

func TestDoMakesAValueOnceForConcurrentCallers(t *testing.T) {
	c := Cache[string, int]{Max: 1 << 20}
	var works atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v, err := c.Do("k", func() (int, int, error) {
				works.Add(1)
				<-release
				return 42, 8, nil
			})
			if v != 42 || err != nil {
				t.Errorf("Do = %d, %v", v, err)
			}
		})
	}
	// Let the callers meet while the first one works.
	for deadline := time.Now().Add(5 * time.Second); ; {
		c.mu.Lock()
		_, making := c.making["k"]
		c.mu.Unlock()
		if making || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := works.Load(); n != 1 {
		t.Errorf("the value was made %d times, want 1", n)
	}
	if c.Made() != 1 {
		t.Errorf("Made = %d, want 1", c.Made())
	}
	if v, err := c.Do("k", func() (int, int, error) { t.Error("made again"); return 0, 0, nil }); v != 42 || err != nil {
		t.Errorf("Do after = %d, %v", v, err)
	}
}

func TestDoKeepsNoError(t *testing.T) {
	c := Cache[string, int]{Max: 1 << 20}
	boom := errors.New("boom")
	if _, err := c.Do("k", func() (int, int, error) { return 0, 8, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := c.Get("k"); ok {
		t.Error("a failed value is kept")
	}
	if v, _ := c.Do("k", func() (int, int, error) { return 7, -1, nil }); v != 7 {
		t.Errorf("Do = %d", v)
	}
	if _, ok := c.Get("k"); ok {
		t.Error("a value with a negative size is kept")
	}
}

func TestDoAfterAPanic(t *testing.T) {
	c := Cache[string, int]{Max: 1 << 20}
	func() {
		defer func() { recover() }()
		c.Do("k", func() (int, int, error) { panic("boom") })
	}()
	if v, err := c.Do("k", func() (int, int, error) { return 3, 8, nil }); v != 3 || err != nil {
		t.Errorf("Do after a panic = %d, %v", v, err)
	}
}

func TestWaitersMakeAgainWhenTheMakersContextEnded(t *testing.T) {
	c := Cache[string, int]{Max: 1 << 20}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := c.Do("k", func() (int, int, error) {
			close(started)
			<-release
			return 0, 0, context.Canceled
		})
		done <- err
	}()
	<-started
	got := make(chan int)
	go func() {
		v, err := c.Do("k", func() (int, int, error) { return 5, 8, nil })
		if err != nil {
			t.Errorf("the waiter got %v", err)
		}
		got <- v
	}()
	time.Sleep(20 * time.Millisecond) // let the second caller wait
	close(release)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the maker got %v", err)
	}
	if v := <-got; v != 5 {
		t.Errorf("the waiter got %d, want 5 (made again)", v)
	}
}
