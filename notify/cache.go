package notify

import (
	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/render"
)

// DefaultEventCacheBytes bounds the memory of the events a notifier keeps.
const DefaultEventCacheBytes = 8 << 20

// eventKey identifies a version and everything worked out of it depends on.
type eventKey struct {
	watchID int64
	seq     int
	fetched int64  // the version's detection time, unix nanoseconds
	matcher uint64 // generation of the user's matcher (0: no profile)
	watch   uint64 // render.WatchKey of the watch
}

// compiled is what is worked out of one version: its slices are shared
// by every request (read only). It holds no part of the version, which
// the store keeps (or reads again) as long as it is needed.
type compiled struct {
	key eventKey
	// hits are the profile matches of the changes that have some; lists
	// is how many lists Match gave (one per change, most of them empty;
	// 0 without a profile).
	hits   []changeHits
	lists  int
	render uint64 // render.EventKey of the event with every change
	// told is whether Notable lets any change through; toldRender is
	// render.EventKey of the event with only those (see Told).
	told       bool
	toldRender uint64
	size       int
}

func keyOf(w *changedigest.Watch, s *changedigest.Snapshot, m *matcher, watchKey uint64) eventKey {
	return eventKey{watchID: w.ID, seq: s.Seq, fetched: s.FetchedAt.UnixNano(), matcher: m.gen, watch: watchKey}
}

// compile works out the event of watch w (whose render.WatchKey is
// watchKey) and version s for a user with matcher m, from the cache or
// now.
func (n *Notifier) compile(w *changedigest.Watch, s *changedigest.Snapshot, m *matcher, watchKey uint64) *compiled {
	k := keyOf(w, s, m, watchKey)
	x, _ := n.kept.Do(k, func() (*compiled, int, error) {
		x := work(k, w, s, m)
		return x, x.size, nil
	})
	return x
}

// work matches the changes of version s of watch w against the profile
// and finds what is told and the render keys.
func work(k eventKey, w *changedigest.Watch, s *changedigest.Snapshot, m *matcher) *compiled {
	matches := Match(m.m, s.Changes)
	x := &compiled{key: k, lists: len(matches)}
	for i, ms := range matches {
		if len(ms) > 0 {
			x.hits = append(x.hits, changeHits{i, ms})
		}
	}
	ev := render.Event{Watch: w, Snapshot: s, Matches: matches}
	x.render = render.EventKey(ev)
	if told := Told([]render.Event{ev}); len(told) == 1 {
		x.told = true
		x.toldRender = x.render
		if told[0].Snapshot != s {
			x.toldRender = render.EventKey(told[0])
		}
	}
	x.size = 192 + 32*len(x.hits)
	for _, h := range x.hits {
		x.size += 96 * len(h.ms)
	}
	return x
}

// changeHits are the profile matches of the change at index i.
type changeHits struct {
	i  int
	ms []changedigest.Match
}

// matches are the profile matches of the version's changes as Match
// gave them: a list per change, nil without a profile.
func (x *compiled) matches() [][]changedigest.Match {
	if x.lists == 0 {
		return nil
	}
	out := make([][]changedigest.Match, x.lists)
	for _, h := range x.hits {
		out[h.i] = h.ms
	}
	return out
}

// toldEvent is the event of watch w and version s as Told keeps it,
// with its key; false when nothing of it is told.
func (x *compiled) toldEvent(w *changedigest.Watch, s *changedigest.Snapshot) (render.Event, bool) {
	if !x.told {
		return render.Event{}, false
	}
	told := Told([]render.Event{{Watch: w, Snapshot: s, Matches: x.matches()}})
	if len(told) != 1 {
		return render.Event{}, false
	}
	told[0].Key = x.toldRender
	return told[0], true
}
