package segmenter

import (
	"math"
	"slices"
)

// Candidate pairs for the similarity pass. Scoring every pair of items
// left over by the exact passes takes time in the product of their
// numbers: two versions of a feed without ids or dates whose texts were
// all rewritten leave thousands on each side. feedPairs finds the pairs
// that can reach feedMatchThreshold by prefix filtering (Chaudhuri, Ganti
// and Kaushik 2006; Bayardo, Ma and Srikant 2007), which misses none:
//
//   - a pair scores 1 in a part (title or text) empty in both items and
//     is weighed without it, and 0 in a part empty in only one, so two
//     items can reach the threshold only when the same parts are empty
//     in both (their shape);
//   - with both parts, a score of t needs a text similarity of at least
//     (t − 0.3) / 0.7, 0.71 for t = 0.8; with one part, t in that part;
//   - a Dice coefficient of d between word multisets A and B needs
//     |A ∩ B| ≥ d·|A| / (2 − d) (and the same of B), so with the words
//     of every item in one order (rarest first), A and B share a word
//     among the first |A| − ⌈d·|A| / (2 − d)⌉ + 1 of A and of B.
//
// Each item's first words (its prefix) go into an inverted index of the
// old items; a new item's prefix finds the old items worth scoring.
// Repeated words count as distinct words (the second "the" is another
// word than the first), so multisets are sets.

// feedShape says which parts of an item are not empty: bit 1 the title,
// bit 2 the text.
type feedShape uint8

func feedShapeOf(t *feedTokens) feedShape {
	var s feedShape
	if len(t.title) > 0 {
		s |= 1
	}
	if len(t.text) > 0 {
		s |= 2
	}
	return s
}

// minDice is the least Dice coefficient of the part feedPairs indexes
// for items of shape s to reach score threshold t.
func (s feedShape) minDice(t float64) float64 {
	if s == 3 {
		return (t - feedTitleWeight) / feedTextWeight
	}
	return t
}

// part is the words feedPairs indexes: the text when there is one.
func (s feedShape) part(t *feedTokens) []string {
	if s&2 != 0 {
		return t.text
	}
	return t.title
}

// feedPrefixLen is how many of a set's n words, rarest first, must hold
// a word of any set with which it has a Dice coefficient of d or more.
func feedPrefixLen(n int, d float64) int {
	overlap := int(math.Ceil(d*float64(n)/(2-d) - 1e-9))
	return min(n, max(1, n-overlap+1))
}

// feedPairs calls visit(k, j) for each pair of old item ot[k] and new
// item nt[j] that may score feedMatchThreshold or more, each pair once,
// new items in order. It stops after feedMaxPairs pairs: the items it did
// not reach are left unpaired. Items with neither title nor text score
// 1 with each other and are all paired, within the same bound.
func feedPairs(ot, nt []feedTokens, visit func(k, j int)) {
	type word struct {
		shape feedShape
		w     string
		n     int32 // occurrence of w in the item: 0, 1, …
	}
	ids := map[word]int32{}
	var df []int32
	// words returns an item's part as word ids, counting them.
	words := func(t *feedTokens, s feedShape) []int32 {
		part := s.part(t)
		out := make([]int32, len(part))
		var occ int32
		for i, w := range part {
			if i > 0 && part[i-1] == w {
				occ++
			} else {
				occ = 0
			}
			k := word{s, w, occ}
			id, ok := ids[k]
			if !ok {
				id = int32(len(df))
				ids[k] = id
				df = append(df, 0)
			}
			df[id]++
			out[i] = id
		}
		return out
	}
	oldShape, newShape := make([]feedShape, len(ot)), make([]feedShape, len(nt))
	oldWords, newWords := make([][]int32, len(ot)), make([][]int32, len(nt))
	for k := range ot {
		if oldShape[k] = feedShapeOf(&ot[k]); oldShape[k] != 0 {
			oldWords[k] = words(&ot[k], oldShape[k])
		}
	}
	for j := range nt {
		if newShape[j] = feedShapeOf(&nt[j]); newShape[j] != 0 {
			newWords[j] = words(&nt[j], newShape[j])
		}
	}
	rarestFirst := func(a, b int32) int {
		if df[a] != df[b] {
			return int(df[a]) - int(df[b])
		}
		return int(a) - int(b)
	}
	index := make([][]int32, len(df)) // word id → old items with it in their prefix
	var empty []int32                 // old items with neither title nor text
	for k, ws := range oldWords {
		if oldShape[k] == 0 {
			empty = append(empty, int32(k))
			continue
		}
		slices.SortFunc(ws, rarestFirst)
		for _, id := range ws[:feedPrefixLen(len(ws), oldShape[k].minDice(feedMatchThreshold))] {
			index[id] = append(index[id], int32(k))
		}
	}
	budget := feedMaxPairs
	seen := make([]int32, len(ot)) // j+1 of the last new item paired with each old item
	for j, ws := range newWords {
		if newShape[j] == 0 {
			for _, k := range empty {
				if budget--; budget < 0 {
					return
				}
				visit(int(k), j)
			}
			continue
		}
		d := newShape[j].minDice(feedMatchThreshold)
		slices.SortFunc(ws, rarestFirst)
		for _, id := range ws[:feedPrefixLen(len(ws), d)] {
			for _, k := range index[id] {
				if seen[k] == int32(j+1) {
					continue
				}
				seen[k] = int32(j + 1)
				if budget--; budget < 0 {
					return
				}
				// Sizes that rule a coefficient of d out.
				a, b := float64(len(oldWords[k])), float64(len(ws))
				if d*a > (2-d)*b+1e-9 || d*b > (2-d)*a+1e-9 {
					continue
				}
				visit(int(k), j)
			}
		}
	}
}
