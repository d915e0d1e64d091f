package segmenter

import (
	"context"
	"fmt"
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
}

// pollSteps is how many steps pass between two looks at the context:
// about a millisecond of work.
const pollSteps = 1 << 14

// stopped is the panic that unwinds a detection whose context is done.
type stopped struct{ err error }

func newWork(ctx context.Context) *work {
	return &work{ctx: ctx}
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
// *err; other panics go on. It is deferred by the entry points.
func (w *work) catch(err *error) {
	r := recover()
	if r == nil {
		return
	}
	st, ok := r.(stopped)
	if !ok {
		panic(r)
	}
	*err = fmt.Errorf("segmenter: segmentation and comparison stopped: %w", st.err)
}
