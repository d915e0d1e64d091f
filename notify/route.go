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

// notable says whether change c of version s is worth telling about,
// by changedigest.Notable: the rule feeds, digests and pushes share.
func notable(w *changedigest.Watch, s *changedigest.Snapshot, c *changedigest.Change, interest bool) bool {
	ok, _ := changedigest.Notable(w, s, c, interest)
	return ok
}

// matched reports whether change i matched the user's interests.
func matched(matches [][]changedigest.Match, i int) bool {
	return i < len(matches) && len(matches[i]) > 0
}

// Wants decides whether version snap of watch w goes to channel c:
//   - the channel is enabled and routes the watch (its watch or tag lists);
//   - the version has at least one change that changedigest.Notable
//     tells (not noise, and through the watch's own filters);
//   - SelectSignificant: the version's significance is at or above
//     threshold (the watch's minimum significance when it has one);
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
		hit := matched(matches, i)
		if !notable(w, snap, &snap.Changes[i], hit) {
			continue
		}
		told = true
		interest = interest || hit
	}
	if !told {
		return false
	}
	switch c.Select {
	case changedigest.SelectSignificant:
		if w != nil && w.MinSignificance > 0 {
			threshold = w.MinSignificance
		}
		return snap.Significance >= threshold
	case changedigest.SelectInterests:
		return interest
	default:
		return true
	}
}
