package segmenter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// pollContext is a context whose Err reports it done from its done-th
// call on (0: never), counting the calls: how often a detection looks at
// its context, and whether it stops at once when told to.
type pollContext struct {
	context.Context
	done, calls int
}

func (c *pollContext) Err() error {
	c.calls++
	if c.done > 0 && c.calls >= c.done {
		return context.Canceled
	}
	return nil
}

func (c *pollContext) Done() <-chan struct{} { return nil }

func (c *pollContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// costShapes are the adversarial page shapes, by name.
func costShape(t testing.TB, name string) adversarialShape {
	for _, sh := range adversarialShapes {
		if sh.name == name {
			return sh
		}
	}
	t.Fatalf("no shape %q", name)
	return adversarialShape{}
}

// TestCancelStopsAtOnce: a comparison looks at its context as it goes
// (the segmenter used to never look at it, and a page ran for minutes
// past a check's time limit) and stops at the first look that finds it
// done, with the context's error.
func TestCancelStopsAtOnce(t *testing.T) {
	s := New()
	for _, name := range []string{"tiny-segments", "nested-divs", "distinct-tags", "long-lists", "rebuilt-children", "feed-many-items"} {
		old, new := costShape(t, name).gen(1 << 20)
		whole := &pollContext{Context: context.Background()}
		w := newWork(whole)
		if _, err := s.diff(w, old, new, ""); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if whole.calls < 3 {
			t.Fatalf("%s: a whole comparison looked at its context %d times, in %d steps", name, whole.calls, w.steps)
		}
		for _, done := range []int{1, 2, whole.calls / 2} {
			ctx := &pollContext{Context: context.Background(), done: done}
			d, err := s.diff(newWork(ctx), old, new, "")
			if !errors.Is(err, context.Canceled) || d != nil {
				t.Fatalf("%s, done at look %d: got %v, %v; want a context.Canceled error", name, done, d, err)
			}
			if ctx.calls != done {
				t.Errorf("%s, done at look %d: looked %d times", name, done, ctx.calls)
			}
		}
		// a check: the new version against the stored previous one
		prev, err := s.Detect(Input{Body: old})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		in := Input{Body: new, Prev: prev, PrevBody: old, History: [][]string{prev.Hashes()}}
		ctx := &pollContext{Context: context.Background(), done: 2}
		if snap, err := s.detect(newWork(ctx), in); !errors.Is(err, context.Canceled) || snap != nil || ctx.calls != 2 {
			t.Fatalf("%s, a check done at look 2: got %v, %v after %d looks", name, snap, err, ctx.calls)
		}
	}
}

// TestCancelledEntryPoints: DetectContext and DiffContext with a context
// that is already done do nothing and say why; a deadline gives
// context.DeadlineExceeded.
func TestCancelledEntryPoints(t *testing.T) {
	old, new := costShape(t, "tiny-segments").gen(64 << 10)
	s := New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.DiffContext(ctx, old, new, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("DiffContext: %v", err)
	}
	if _, err := s.DetectContext(ctx, Input{Body: new}); !errors.Is(err, context.Canceled) {
		t.Errorf("DetectContext: %v", err)
	}
	dl, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	_, err := s.DetectContext(dl, Input{Body: new})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DetectContext past its deadline: %v", err)
	}
	if code := changedigest.ErrorCode(err); code == changedigest.EINVALID || code == changedigest.ETOOLARGE {
		t.Errorf("a stopped detection is no input error: code %s", code)
	}
}

// TestAdversarialCostLinear: each adversarial shape costs steps in
// proportion to its size. Four times the size costs at most five times
// the steps, where a cost that grows with the square of the size (the
// repeated keys, nesting, sibling counts, merges and renamed children
// that made pages run for minutes) costs sixteen. Work that grows faster
// only up to a fixed bound (feed items scored against each other) may
// reach that bound.
func TestAdversarialCostLinear(t *testing.T) {
	s := New()
	const small, large = 128 << 10, 512 << 10
	for _, sh := range adversarialShapes {
		var steps [2]int64
		var size [2]int
		for k, n := range []int{small, large} {
			old, new := sh.gen(n)
			w := newWork(context.Background())
			if _, err := s.diff(w, old, new, ""); err != nil {
				t.Fatalf("%s: %v", sh.name, err)
			}
			steps[k], size[k] = w.steps, len(old)+len(new)
		}
		ratio := float64(steps[1]) / float64(max(steps[0], 1))
		t.Logf("%-24s %8d steps at %7d bytes, %8d at %7d: ×%.2f", sh.name, steps[0], size[0], steps[1], size[1], ratio)
		if ratio > 5*float64(size[1])/float64(4*size[0]) && steps[1] > fixedSteps {
			t.Errorf("%s: %d steps at %d bytes but %d at %d", sh.name, steps[0], size[0], steps[1], size[1])
		}
	}
}

// fixedSteps is the most steps of the work bounded by constants rather
// than by the size of a page: feed items scored against each other.
const fixedSteps = 2 * (feedMaxWords + feedMaxPairs)

// TestTokensCostLinear: the scanner's own work (tokens, the stack, sibling
// counts) grows with the page, for the markup that made it quadratic:
// end tags searched for down a deep stack, many distinct sibling tags.
func TestTokensCostLinear(t *testing.T) {
	for _, c := range []struct {
		name string
		page func(n int) []byte
	}{
		{"end tags of an element open below a block", func(n int) []byte {
			return []byte("<i><div>" + string(bytes.Repeat([]byte("<b>"), 500)) + string(bytes.Repeat([]byte("</i>"), n)))
		}},
		{"distinct sibling tags", func(n int) []byte {
			var b bytes.Buffer
			for i := range n {
				fmt.Fprintf(&b, "<x%d>w</x%d>", i, i)
			}
			return b.Bytes()
		}},
		{"deep stack of alike tags", func(n int) []byte {
			return bytes.Repeat([]byte("<span>"), n)
		}},
	} {
		var steps [2]int64
		for k, n := range []int{5000, 20000} {
			w := newWork(context.Background())
			scan(w, c.page(n), nil, step{}).release()
			steps[k] = w.steps
		}
		if steps[1] > 5*steps[0] {
			t.Errorf("%s: %d steps for 5,000, %d for 20,000", c.name, steps[0], steps[1])
		}
	}
}
