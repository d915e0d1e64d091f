package segmenter

import (
	"context"
	"fmt"

	"github.com/changedigest/changedigest/internal/textdiff"
)

// work paces one detection or comparison under its context. The loops
// whose length grows with the page count their steps into it, and every
// pollSteps steps it looks at the context: once that is done, the
// detection stops at once (a panic of stopped, which the entry point
// that made the work recovers into the context's error). A nil *work
// counts nothing and never stops (the entry points without a context).
//
// A step is a small, bounded amount of work (a token read, a node
// matched, a word compared), so the steps of a detection also measure
// its cost: the tests check that hostile pages cost steps in proportion
// to their size.
type work struct {
	ctx   context.Context
	steps int64
	poll  int64 // steps at which ctx is looked at next
	// texts bounds the word-by-word comparisons of texts (edit scripts):
	// past it, texts that differ are compared as wholes.
	texts *textdiff.Budget
	// cells bounds the cells of the longest-common-subsequence tables
	// of children (lcsPairs): past it, lists are matched greedily.
	cells int64
}

// textBudget is the work the edit scripts of a detection may spend on
// documents of size bytes in all: far more than real pages ask (a
// rewritten article of some thousand words is a few million), while a
// page of thousands of rewritten blocks, each compared word by word with
// its neighbours, stays within a second.
func textBudget(size int) *textdiff.Budget {
	return textdiff.NewBudget(1<<25 + 4*int64(size))
}

// cellBudget is the cells the tables of children of a detection may
// take on documents of size bytes, in all (a table of two lists of a
// thousand children is a million).
func cellBudget(size int) int64 {
	return 1<<25 + 4*int64(size)
}

// takeCells reports whether n more cells fit the budget, and takes them.
// Without a budget (nil) they always do.
func (w *work) takeCells(n int) bool {
	if w == nil || w.cells < 0 {
		return true
	}
	if int64(n) > w.cells {
		return false
	}
	w.cells -= int64(n)
	return true
}

// budget is the edit-script budget of the detection (nil: none).
func (w *work) budget() *textdiff.Budget {
	if w == nil {
		return nil
	}
	return w.texts
}

// pollSteps is how many steps pass between two looks at the context:
// about a millisecond of work.
const pollSteps = 1 << 14

// stopped is the panic that unwinds a detection whose context is done.
type stopped struct{ err error }

func newWork(ctx context.Context) *work {
	return &work{ctx: ctx, cells: -1}
}

// add counts n steps, stopping the detection when its context is done.
func (w *work) add(n int) {
	if w == nil {
		return
	}
	w.steps += int64(n)
	if w.steps >= w.poll {
		w.check()
	}
}

// check looks at the context now.
func (w *work) check() {
	if w == nil {
		return
	}
	w.poll = w.steps + pollSteps
	if err := w.ctx.Err(); err != nil {
		panic(stopped{err})
	}
}

// catch turns the panic of a stopped detection into its error, set in
// *err, with no result (*res zeroed); other panics go on. It is deferred
// by the entry points.
func catch[T any](res *T, err *error) {
	r := recover()
	if r == nil {
		return
	}
	st, ok := r.(stopped)
	if !ok {
		panic(r)
	}
	var zero T
	*res = zero
	*err = fmt.Errorf("segmenter: segmentation and comparison stopped: %w", st.err)
}
