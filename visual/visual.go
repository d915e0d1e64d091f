// Package visual compares screenshots of two versions of a page pixel by
// pixel and draws where they differ.
//
// Diff decodes two PNG images (image/png), marks every pixel whose colour
// differs by more than a threshold, and draws the result as a paletted
// PNG: the newer image in faded greys, the differing pixels in red, and
// the area only one image covers (a page that grew or shrank) as
// differing. A paletted image of a few colours keeps the overlay small
// and quick to encode even for a page thousands of pixels high.
package visual

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
)

// Errors of the package.
var (
	// ErrImage: an input is not a PNG image that can be read.
	ErrImage = errors.New("visual: not a readable PNG image")
	// ErrTooLarge: an input has more pixels than MaxPixels.
	ErrTooLarge = errors.New("visual: image too large")
)

// MaxPixels bounds each image (width × height) Diff decodes: 1280 × 16384.
const MaxPixels = 1280 * 16384

// Threshold is the summed difference of the red, green and blue channels
// (0–765) above which a pixel counts as changed: anti-aliasing and
// colour rounding stay below it.
const Threshold = 48

// Result is the outcome of a comparison.
type Result struct {
	// PNG is the overlay image, Width × Height pixels (the larger of the
	// two inputs in each direction).
	PNG           []byte
	Width, Height int
	// Changed is the number of differing pixels; Share their part of the image.
	Changed int
	Share   float64
}

// The overlay's palette: 32 greys for the faded newer image, then the
// colour of a changed pixel.
const greys = 32

var palette = func() color.Palette {
	p := make(color.Palette, 0, greys+1)
	for i := range greys {
		// Light greys only (192–255): the image stays readable, the
		// changes stand out.
		v := uint8(192 + i*63/(greys-1))
		p = append(p, color.Gray{Y: v})
	}
	return append(p, color.RGBA{R: 230, G: 0, B: 60, A: 255})
}()

const changedIndex = greys

// Diff compares the PNG images before and after. Errors: ErrImage for an
// input that does not decode, ErrTooLarge for one over MaxPixels.
func Diff(before, after []byte) (*Result, error) {
	a, err := decode(before, "before")
	if err != nil {
		return nil, err
	}
	b, err := decode(after, "after")
	if err != nil {
		return nil, err
	}
	ab, bb := a.Bounds(), b.Bounds()
	w, h := max(ab.Dx(), bb.Dx()), max(ab.Dy(), bb.Dy())
	out := image.NewPaletted(image.Rect(0, 0, w, h), palette)
	changed := 0
	for y := range h {
		row := out.Pix[y*out.Stride : y*out.Stride+w]
		var ra, rb []uint8
		if y < ab.Dy() {
			ra = a.Pix[y*a.Stride : y*a.Stride+4*ab.Dx()]
		}
		if y < bb.Dy() {
			rb = b.Pix[y*b.Stride : y*b.Stride+4*bb.Dx()]
		}
		for x := range w {
			i := 4 * x
			inA, inB := i < len(ra), i < len(rb)
			if !inA || !inB {
				row[x] = changedIndex
				changed++
				continue
			}
			d := absDiff(ra[i], rb[i]) + absDiff(ra[i+1], rb[i+1]) + absDiff(ra[i+2], rb[i+2])
			if d > Threshold {
				row[x] = changedIndex
				changed++
				continue
			}
			// Luma of the newer pixel, 0–255, to one of the greys.
			lum := (299*int(rb[i]) + 587*int(rb[i+1]) + 114*int(rb[i+2])) / 1000
			row[x] = uint8(lum * (greys - 1) / 255)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, fmt.Errorf("visual: encode the overlay: %w", err)
	}
	res := &Result{PNG: buf.Bytes(), Width: w, Height: h, Changed: changed}
	if w*h > 0 {
		res.Share = float64(changed) / float64(w*h)
	}
	return res, nil
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// decode reads a PNG into RGBA with 8 bits per channel; alpha is ignored
// (screenshots are opaque).
func decode(p []byte, name string) (*image.RGBA, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(p))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrImage, name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > MaxPixels {
		return nil, fmt.Errorf("%w: %s is %d×%d pixels (at most %d pixels)", ErrTooLarge, name, cfg.Width, cfg.Height, MaxPixels)
	}
	img, err := png.Decode(bytes.NewReader(p))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrImage, name, err)
	}
	switch m := img.(type) {
	case *image.RGBA:
		return m, nil
	case *image.NRGBA:
		// Opaque pixels have the same values premultiplied or not.
		return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}, nil
	}
	rgba := image.NewRGBA(image.Rect(0, 0, cfg.Width, cfg.Height))
	draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
	return rgba, nil
}
