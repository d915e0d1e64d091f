package segmenter

import (
	"errors"

	"github.com/changedigest/changedigest"
)

var errFeedsPending = errors.New("feeds: not built in this tree")

// DiffFeeds compares two versions of a feed.
func DiffFeeds(old, new []byte) (*changedigest.Diff, error) {
	return nil, errFeedsPending
}

// DetectFeed segments a new version of a feed into items and finds its
// changes against in.Prev.
func DetectFeed(in Input) (*changedigest.Snapshot, error) {
	return nil, errFeedsPending
}
