package visual

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"
)

// page draws a w×h "page": white, with grey text-like bars, and a dark
// block at (bx, by) of 20×10 when bx >= 0.
func page(tb testing.TB, w, h, bx, by int, nrgba bool) []byte {
	tb.Helper()
	var img canvas
	if nrgba {
		img = image.NewNRGBA(image.Rect(0, 0, w, h))
	} else {
		img = image.NewRGBA(image.Rect(0, 0, w, h))
	}
	for y := range h {
		for x := range w {
			c := color.RGBA{255, 255, 255, 255}
			if y%12 < 4 && x%50 < 40 {
				c = color.RGBA{90, 90, 90, 255}
			}
			if bx >= 0 && x >= bx && x < bx+20 && y >= by && y < by+10 {
				c = color.RGBA{20, 40, 200, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

type canvas interface {
	image.Image
	Set(x, y int, c color.Color)
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name        string
		before      []byte
		after       []byte
		w, h        int
		wantChanged int
	}{
		{"same image", page(t, 100, 60, 10, 10, false), page(t, 100, 60, 10, 10, true), 100, 60, 0},
		// The block moved: its old place and its new place differ, less
		// the pixels where the block covered text bars in both.
		{"block moved", page(t, 100, 60, 10, 10, false), page(t, 100, 60, 60, 30, false), 100, 60, 400},
		{"block added", page(t, 100, 60, -1, 0, false), page(t, 100, 60, 70, 40, false), 100, 60, -1},
		{"page grew", page(t, 100, 60, -1, 0, false), page(t, 100, 80, -1, 0, false), 100, 80, 100 * 20},
		{"page shrank", page(t, 100, 80, -1, 0, false), page(t, 100, 60, -1, 0, false), 100, 80, 100 * 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Diff(tc.before, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(res.PNG))
			if err != nil {
				t.Fatalf("the overlay is not a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h || res.Width != tc.w || res.Height != tc.h {
				t.Errorf("overlay is %v, result %d×%d; want %d×%d", b, res.Width, res.Height, tc.w, tc.h)
			}
			// Count the red pixels of the overlay itself.
			red := 0
			for y := range tc.h {
				for x := range tc.w {
					if r, g, _, _ := img.At(x, y).RGBA(); r > 0xc000 && g < 0x1000 {
						red++
					}
				}
			}
			if red != res.Changed {
				t.Errorf("the overlay shows %d changed pixels, the result says %d", red, res.Changed)
			}
			switch {
			case tc.wantChanged >= 0 && res.Changed > tc.wantChanged:
				t.Errorf("changed = %d, want at most %d", res.Changed, tc.wantChanged)
			case tc.wantChanged > 0 && res.Changed < tc.wantChanged/2:
				t.Errorf("changed = %d, want about %d", res.Changed, tc.wantChanged)
			case tc.wantChanged == 0 && res.Changed != 0:
				t.Errorf("changed = %d, want 0", res.Changed)
			case tc.wantChanged < 0 && (res.Changed == 0 || res.Changed > 200):
				t.Errorf("changed = %d, want the block's 200 at most and some", res.Changed)
			}
		})
	}
}

func TestDiffRefuses(t *testing.T) {
	good := page(t, 10, 10, -1, 0, false)
	if _, err := Diff([]byte("not a png"), good); !errors.Is(err, ErrImage) {
		t.Errorf("garbage: %v, want ErrImage", err)
	}
	if _, err := Diff(good, good[:len(good)/2]); !errors.Is(err, ErrImage) {
		t.Errorf("a truncated PNG: %v, want ErrImage", err)
	}
	// A header claiming a huge image is refused before it is decoded.
	huge := image.NewGray(image.Rect(0, 0, 1, 1))
	var buf bytes.Buffer
	png.Encode(&buf, huge)
	p := buf.Bytes()
	// IHDR width and height at bytes 16..23 (the CRC no longer matches,
	// so DecodeConfig may refuse it either way).
	copy(p[16:24], []byte{0, 0, 0x10, 0, 0, 0, 0x10, 0})
	if _, err := Diff(p, good); err == nil {
		t.Errorf("a 4096×4096 header was accepted")
	}
}

func BenchmarkDiff(b *testing.B) {
	before := page(b, 1280, 4000, 100, 100, false)
	after := page(b, 1280, 4000, 600, 2000, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Diff(before, after); err != nil {
			b.Fatal(err)
		}
	}
}
