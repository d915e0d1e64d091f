package segmenter

import "github.com/changedigest/changedigest"

// Input is one new version of a watched document together with what the
// Page Evolution Track knows of the versions before it.
type Input struct {
	// Body is the new version, decoded to UTF-8.
	Body []byte
	// Zone is an optional CSS selector restricting detection to part of a page.
	Zone string
	// Prev is the stored previous version (segments, hashes, layout), nil
	// for the first version; PrevBody its body.
	Prev     *changedigest.Snapshot
	PrevBody []byte
	// PrevParts, when set, reads the parts of Prev that are left out: the
	// texts of its segments (Prev's own are then not used) and, when
	// PrevBody is nil, its body, which BodyRange and Body give decoded to
	// UTF-8 like PrevBody. A detection reads only what its comparison
	// needs; a read that fails fails it.
	PrevParts changedigest.VersionParts
	// History holds the segment hashes of the last m stored versions,
	// newest first (History[0] is Prev's): the signature matrix.
	History [][]string
	// Recent holds the changes of the last stored versions, newest first
	// (up to NoiseVolatileWindow of them), to learn which locations change
	// at nearly every check; nil learns nothing.
	Recent [][]changedigest.Change
	// RecentFrom, when set and Recent is nil, reads Recent: only when a
	// change of the new version could be marked volatile. An error fails
	// the detection.
	RecentFrom func() ([][]changedigest.Change, error)

	// reads holds what was read through PrevParts and the first error.
	reads *prevReads
}

// prevReads reads the parts of the previous version a detection needs
// through Input.PrevParts, keeping the first error: the comparison goes
// on with what it has, and the detection then fails with that error.
type prevReads struct {
	parts changedigest.VersionParts
	err   error
}

func (r *prevReads) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// text is the text of segment i of the previous version.
func (r *prevReads) text(i int) string {
	t, err := r.parts.SegmentText(i)
	if err != nil {
		r.fail(err)
	}
	return t
}

// bytes is bytes [a, b) of the previous body.
func (r *prevReads) bytes(a, b int) []byte {
	p, err := r.parts.BodyRange(a, b)
	if err != nil {
		r.fail(err)
		return nil
	}
	return p
}

// whole is the whole previous body.
func (r *prevReads) whole() []byte {
	p, err := r.parts.Body()
	if err != nil {
		r.fail(err)
		return nil
	}
	return p
}

// lazy reports whether the previous version's texts and body are to be
// read through PrevParts, and sets up the reads.
func (in *Input) lazy() bool {
	if in.PrevParts == nil || in.Prev == nil {
		return false
	}
	if in.reads == nil {
		in.reads = &prevReads{parts: in.PrevParts}
	}
	return true
}

// readErr is the error of a read through PrevParts, if any.
func (in *Input) readErr() error {
	if in.reads == nil {
		return nil
	}
	return in.reads.err
}

// whole returns in with the previous version read in full: the texts of
// its segments and, unless given, its body (for the paths that compare
// all of it). The reads' errors stay with in.
func (in Input) whole() Input {
	if !in.lazy() {
		return in
	}
	prev := *in.Prev
	prev.Segments = append([]changedigest.Segment(nil), prev.Segments...)
	for i := range prev.Segments {
		prev.Segments[i].Text = in.reads.text(i)
	}
	in.Prev = &prev
	if in.PrevBody == nil {
		in.PrevBody = in.reads.whole()
	}
	in.PrevParts = nil
	return in
}
