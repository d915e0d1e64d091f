package notify

import (
	"github.com/changedigest/changedigest"
)

// DefaultSignificance is the significance a version needs to reach a
// channel that takes only significant versions, as long as watches carry
// no threshold of their own (Dispatcher.Threshold). On the 0..1 scale of
// Snapshot.Significance, 0.2 lets through a changed paragraph of an
// article and holds back a changed date or counter.
const DefaultSignificance = 0.2

// notable says whether a change is worth telling about: the one test
// of a change that routing and the pushed messages share (today: it is
// not classified as noise).
func notable(c *changedigest.Change) bool { return c.Noise == "" }

// Wants decides whether version snap of watch w goes to channel c:
//   - the channel is enabled and routes the watch (its watch or tag lists);
//   - the version has at least one change that is not noise;
//   - SelectSignificant: the version's significance is at or above
//     threshold (the watch's);
//   - SelectInterests: a change that is not noise matches the user's
//     interests (matches holds the profile matches per change, as Match
//     returns them).
//
// It is the one place routing rules are decided; the e-mail digest, the
// feeds and WebSub have their own selection.
func Wants(c *changedigest.Channel, w *changedigest.Watch, snap *changedigest.Snapshot, matches [][]changedigest.Match, threshold float64) bool {
	if !c.Routes(w) {
		return false
	}
	told, interest := false, false
	for i := range snap.Changes {
		if !notable(&snap.Changes[i]) {
			continue
		}
		told = true
		if i < len(matches) && len(matches[i]) > 0 {
			interest = true
		}
	}
	if !told {
		return false
	}
	switch c.Select {
	case changedigest.SelectSignificant:
		return snap.Significance >= threshold
	case changedigest.SelectInterests:
		return interest
	default:
		return true
	}
}
