package pet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// testPNG is a w×h PNG whose pixels depend on seed.
func testPNG(tb testing.TB, w, h int, seed byte) []byte {
	tb.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{byte(x) ^ seed, byte(y), seed, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// chunkCount is the number of chunks stored.
func chunkCount(tb testing.TB, s *Store) int {
	tb.Helper()
	var n int
	if err := s.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bChunkData).Stats().KeyN; return nil }); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestScreenshots(t *testing.T) {
	f := newFixture(t, func(s *Store) { s.KeepVersions, s.KeepDays, s.Matrix = 6, 0, 2 })
	ctx := context.Background()
	shotA, shotB := testPNG(t, 64, 120, 1), testPNG(t, 64, 130, 2)
	boxes := []changedigest.Box{{Segment: 0, Path: "html|body|p", X: 8, Y: 10, W: 40, H: 20}}
	add := func(v int, img []byte) *changedigest.Snapshot {
		t.Helper()
		body := page(fmt.Sprintf("version %d", v), "constant footer")
		snap := snapshotOf([]byte(body))
		snap.FetchedAt = f.clock.Add(time.Hour)
		if img != nil {
			cfg, err := png.DecodeConfig(bytes.NewReader(img))
			if err != nil {
				t.Fatal(err)
			}
			snap.Screenshot = &changedigest.Screenshot{PNG: img, Width: cfg.Width, Height: cfg.Height, Boxes: boxes}
		}
		if _, err := f.s.AddVersion(ctx, f.watch.ID, snap, []byte(body)); err != nil {
			t.Fatal(err)
		}
		return snap
	}
	s1 := add(1, shotA)
	before := chunkCount(t, f.s)
	// The same image again is a reference, not a second copy.
	add(2, shotA)
	if n := chunkCount(t, f.s); n != before+1 { // the new body piece only
		t.Errorf("an unchanged screenshot added %d chunks, want 1 (the changed text)", n-before)
	}
	add(3, shotB)
	add(4, nil)

	got, err := f.s.Screenshot(ctx, f.watch.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.PNG, shotA) || got.Width != 64 || got.Height != 120 || got.Hash != s1.Screenshot.Hash || len(got.Boxes) != 1 || got.Boxes[0] != boxes[0] {
		t.Errorf("screenshot of version 2 = %d bytes %dx%d %s %+v, want version 1's image and boxes", len(got.PNG), got.Width, got.Height, got.Hash, got.Boxes)
	}
	v3, err := f.s.Version(ctx, f.watch.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if v3.Screenshot == nil || v3.Screenshot.Height != 130 || v3.Screenshot.PNG != nil {
		t.Errorf("version 3's screenshot = %+v, want its metadata without the image", v3.Screenshot)
	}
	if _, err := f.s.Screenshot(ctx, f.watch.ID, 4); !errors.Is(err, ErrNotFound) {
		t.Errorf("screenshot of a version without one: %v, want ErrNotFound", err)
	}
	if _, err := f.s.Screenshot(ctx, f.watch.ID, 99); !errors.Is(err, ErrNotFound) {
		t.Errorf("screenshot of a missing version: %v, want ErrNotFound", err)
	}
	if err := f.s.Check(ctx); err != nil {
		t.Fatalf("check: %v", err)
	}

	// Retention drops old versions and their screenshots; the image lives
	// while a version holds it.
	for v := 5; v <= 9; v++ {
		add(v, shotB)
	}
	if _, err := f.s.Screenshot(ctx, f.watch.ID, 2); !errors.Is(err, ErrNotFound) {
		t.Errorf("screenshot of a removed version: %v, want ErrNotFound", err)
	}
	if err := f.s.Check(ctx); err != nil {
		t.Fatalf("check after retention: %v", err)
	}
	if err := f.s.DeleteWatch(ctx, f.user.ID, f.watch.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Check(ctx); err != nil {
		t.Fatalf("check after delete: %v", err)
	}
	if n := chunkCount(t, f.s); n != 0 {
		t.Errorf("%d chunks left after the watch was deleted", n)
	}
}

func TestScreenshotRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good := testPNG(t, 8, 8, 0)
	tests := []struct {
		name string
		shot changedigest.Screenshot
		code string
	}{
		{"no image", changedigest.Screenshot{Width: 8, Height: 8}, changedigest.EINVALID},
		{"not a PNG", changedigest.Screenshot{PNG: []byte("GIF89a...."), Width: 8, Height: 8}, changedigest.EINVALID},
		{"no size", changedigest.Screenshot{PNG: good}, changedigest.EINVALID},
		{"too large", changedigest.Screenshot{PNG: append(append([]byte{}, good...), make([]byte, MaxScreenshot)...), Width: 8, Height: 8}, changedigest.ETOOLARGE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := page("a page")
			snap := snapshotOf([]byte(body))
			snap.Screenshot = &tc.shot
			_, err := f.s.AddVersion(ctx, f.watch.ID, snap, []byte(body))
			if changedigest.ErrorCode(err) != tc.code {
				t.Fatalf("AddVersion: %v, want %s", err, tc.code)
			}
			if info, _ := f.s.Track(ctx, f.watch.ID); info.Versions != 0 {
				t.Errorf("a refused version was stored")
			}
		})
	}
}
