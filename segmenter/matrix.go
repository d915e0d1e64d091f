package segmenter

// NewSegments is the signature-matrix step (CaSePer eq. 9–11). current is
// the segment hashes of the new version; history holds the hashes of the
// last m stored versions, newest first (one row per version, rows may
// differ in length). Segment i of the new version is changed, and only
// then compared in detail, when its hash is absent from every earlier row:
// content that flips back to something seen before (rotating banners, A/B
// blocks) is not new. With no history every segment is new.
func NewSegments(current []string, history [][]string) []bool {
	seen := make(map[string]struct{}, len(current)*(len(history)+1))
	for _, row := range history {
		for _, h := range row {
			seen[h] = struct{}{}
		}
	}
	out := make([]bool, len(current))
	for i, h := range current {
		_, ok := seen[h]
		out[i] = !ok
	}
	return out
}
