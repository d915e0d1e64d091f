package ratelimit

import (
	"strconv"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	b := New(60, 3) // a token a second, three at once
	for i := range 3 {
		if d := b.Take("a", t0); d != 0 {
			t.Fatalf("take %d of the burst: wait %s", i, d)
		}
	}
	if d := b.Take("a", t0); d != time.Second {
		t.Errorf("an empty bucket: wait %s, want 1s", d)
	}
	if !b.Allow("b", t0) {
		t.Error("another key is held back")
	}
	if d := b.Take("a", t0.Add(600*time.Millisecond)); d != 400*time.Millisecond {
		t.Errorf("0.6 s later: wait %s, want 400ms", d)
	}
	if !b.Allow("a", t0.Add(time.Second)) || b.Allow("a", t0.Add(time.Second)) {
		t.Error("a second later: want one token, no more")
	}
	// A clock that goes back does not fill or empty a bucket.
	if b.Allow("a", t0) {
		t.Error("a clock gone back gave a token")
	}
	if !b.Allow("a", t0.Add(time.Hour)) || !b.Allow("a", t0.Add(time.Hour)) || !b.Allow("a", t0.Add(time.Hour)) || b.Allow("a", t0.Add(time.Hour)) {
		t.Error("an hour later: want the burst of three, no more")
	}
	if !New(0, 0).Allow("x", t0) {
		t.Error("rate 0 must allow everything")
	}
}

func TestBucketsBoundTheirKeys(t *testing.T) {
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	b := New(60, 1)
	for i := range MaxKeys + 10 {
		b.Allow(strconv.Itoa(i), t0)
	}
	if n := len(b.m); n > MaxKeys {
		t.Errorf("%d keys kept, at most %d wanted", n, MaxKeys)
	}
	// Idle buckets go once a minute.
	b = New(60, 1)
	for i := range 2000 {
		b.Allow(strconv.Itoa(i), t0)
	}
	b.Allow("late", t0.Add(2*time.Minute))
	if n := len(b.m); n != 1 {
		t.Errorf("after two minutes: %d keys, want 1", n)
	}
}
