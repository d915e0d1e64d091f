package segmenter

import (
	"bytes"
	"slices"
	"time"
)

// The item limit. A publisher may list its whole archive in its feed:
// tens of thousands of items, megabytes of XML. A check of such a feed
// keeps its newest items only (Segmenter.MaxItems, DefaultMaxItems): they
// are the version's segments, stored, indexed and compared; the snapshot's
// FeedItems says how many the feed had. Its body is still stored whole.
//
// The newest items are found without parsing the rest when the feed is
// in date order: the dates of up to feedOrderSample items spread over
// the feed tell whether it lists its newest items first (or has no
// dates: feeds list the newest first) or last, and the kept items are
// cut out of the body with the feed's header and end around them and
// parsed alone. A feed in no date order is parsed whole and its items
// taken by date, newest first.

// feedOrderSample is how many items, spread evenly over a feed past its
// item limit, are parsed to learn its date order.
const feedOrderSample = 64

// feedWindow parses a feed keeping at most max items (all of them when
// max <= 0): its newest ones, in document order, with their byte ranges
// in body. Feed.omitted counts the items left out. Errors as ParseFeed's.
func feedWindow(body []byte, max int) (*Feed, error) {
	ranges := feedItemRanges(body)
	if max > 0 && len(ranges) > max {
		if keep := feedNewestRanges(body, ranges, max); keep != nil {
			if f := feedParseSome(body, ranges, keep); f != nil {
				f.omitted = len(ranges) - len(keep)
				return f, nil
			}
		}
	}
	f, err := parseFeedRanges(body, ranges)
	if err != nil {
		return nil, err
	}
	if max > 0 && len(f.Items) > max {
		n := len(f.Items)
		f.Items = feedNewest(f.Items, max)
		f.omitted = n - len(f.Items)
		feedSetKeys(f.Items)
	}
	return f, nil
}

// feedNewest returns the max newest items, by date (published, else
// updated; undated items count as oldest), the earlier in the document
// first among equal dates, in document order.
func feedNewest(items []FeedItem, max int) []FeedItem {
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return items[b].date().Compare(items[a].date()) })
	idx = idx[:max]
	slices.Sort(idx)
	out := make([]FeedItem, len(idx))
	for k, i := range idx {
		out[k] = items[i]
	}
	return out
}

// feedSetKeys gives items their identity keys (feedItemKeys) anew, for
// items kept out of a larger feed: keys are unique among the kept items
// whichever way they were parsed.
func feedSetKeys(items []FeedItem) {
	keys := feedItemKeys(items)
	for i := range items {
		items[i].Key = keys[i]
	}
}

// feedNewestRanges picks the max newest of a feed's items (ranges, more
// than max) from the date order of a sample of them: the first max when
// the feed lists its newest first or dates fewer than half of the
// sample, the last max when it lists them oldest first. It returns the indices of the kept
// ranges, or nil when the sample does not settle it (dates in no order,
// a sample that does not parse): the feed is then parsed whole.
func feedNewestRanges(body []byte, ranges [][2]int, max int) []int {
	n := len(ranges)
	k := min(feedOrderSample, n)
	sample := make([]int, k)
	for j := range sample {
		sample[j] = j * (n - 1) / (k - 1)
	}
	f := feedParseSome(body, ranges, sample)
	if f == nil {
		return nil
	}
	var dates []time.Time
	for i := range f.Items {
		if d := f.Items[i].date(); !d.IsZero() {
			dates = append(dates, d)
		}
	}
	up, down := 0, 0
	for j := 1; j < len(dates); j++ {
		switch dates[j].Compare(dates[j-1]) {
		case 1:
			up++
		case -1:
			down++
		}
	}
	first := true
	switch {
	case 2*len(dates) < k: // undated: the newest come first
	case up == 0:
	case down == 0:
		first = false
	default:
		return nil
	}
	keep := make([]int, max)
	for i := range keep {
		keep[i] = i
		if !first {
			keep[i] = n - max + i
		}
	}
	return keep
}

// feedParseSome parses the items of body at the given indices of ranges
// (ascending) alone: the body before the first item (declaration, feed
// header), the chosen items, the body after the last item. Their Start
// and End are their ranges in body. It returns nil when that does not
// parse into the same number of items.
func feedParseSome(body []byte, ranges [][2]int, idx []int) *Feed {
	if len(idx) == 0 {
		return nil
	}
	sep := []byte("\n")
	if t := bytes.TrimLeft(body, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		sep = []byte(",") // the objects of a JSON Feed's items array
	}
	head, tail := body[:ranges[0][0]], body[ranges[len(ranges)-1][1]:]
	size := len(head) + len(tail)
	for _, i := range idx {
		size += ranges[i][1] - ranges[i][0] + len(sep)
	}
	sub := make([]byte, 0, size)
	sub = append(sub, head...)
	for k, i := range idx {
		if k > 0 {
			sub = append(sub, sep...)
		}
		sub = append(sub, body[ranges[i][0]:ranges[i][1]]...)
	}
	sub = append(sub, tail...)
	f, err := ParseFeed(sub)
	if err != nil || len(f.Items) != len(idx) {
		return nil
	}
	for k, i := range idx {
		f.Items[k].Start, f.Items[k].End = ranges[i][0], ranges[i][1]
	}
	return f
}

// feedOutside returns a test of whether item i of f, which has no
// counterpart in other, is one of the items other's window left out (when
// other omitted some) rather than an item added or removed: it is older
// than every item other kept, by date when both have dates, else it comes
// after the last item of f that has a counterpart (to maps f's items to
// other's, -1 where none).
func feedOutside(f, other *Feed, to []int) func(i int) bool {
	if other.omitted == 0 {
		return func(int) bool { return false }
	}
	var oldest time.Time
	for j := range other.Items {
		if d := other.Items[j].date(); !d.IsZero() && (oldest.IsZero() || d.Before(oldest)) {
			oldest = d
		}
	}
	last := -1
	for j, t := range to {
		if t >= 0 {
			last = j
		}
	}
	return func(i int) bool {
		if d := f.Items[i].date(); !d.IsZero() && !oldest.IsZero() {
			return d.Before(oldest)
		}
		return last >= 0 && i > last
	}
}
