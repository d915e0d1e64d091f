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
	// History holds the segment hashes of the last m stored versions,
	// newest first (History[0] is Prev's): the signature matrix.
	History [][]string
	// Recent holds the changes of the last stored versions, newest first
	// (up to NoiseVolatileWindow of them), to learn which locations change
	// at nearly every check; nil learns nothing.
	Recent [][]changedigest.Change
}
