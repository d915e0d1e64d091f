package changedigest

import "time"

// Snapshot is one stored version of a watched page or feed: a row of the
// Page Evolution Track.
type Snapshot struct {
	WatchID int64 `json:"watch_id"`
	// Seq numbers the versions of a watch from 1, oldest first.
	Seq       int       `json:"seq"`
	FetchedAt time.Time `json:"fetched_at"`

	Status       int    `json:"status"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	ContentType  string `json:"content_type,omitempty"`
	// FinalURL is the address after redirects, when it differs from the watch URL.
	FinalURL string `json:"final_url,omitempty"`

	Kind  Kind   `json:"kind"`
	Title string `json:"title,omitempty"`
	// Zone is the CSS selector the version was segmented under, if any.
	Zone string `json:"zone,omitempty"`
	// Size is the length of the raw body in bytes; BodyHash its MD5 in hex.
	Size     int    `json:"size"`
	BodyHash string `json:"body_hash"`

	Segments []Segment `json:"segments"`
	// FeedItems is set for a feed with more items than a version keeps
	// (the segmenter's item limit): the number of items it had. Segments
	// then hold the newest of them.
	FeedItems int `json:"feed_items,omitempty"`
	// Layout is the segmenter's serialised segment boundaries of this
	// version, used to segment the next version along the same boundaries.
	Layout []byte `json:"layout,omitempty"`

	// Changes found against the track when the version was stored; empty
	// for the first version.
	Changes []Change `json:"changes,omitempty"`
	// Similarity of this version to the previous one, 0..1 (1 = same).
	Similarity float64 `json:"similarity"`
	// Significance of this version against the previous one, 0..1 (0 = no
	// change a reader would notice, 1 = a different page); versions below
	// the watch's threshold are minor.
	Significance float64 `json:"significance,omitempty"`
	// Print summarises the version's visible text, so that the next
	// version's significance is found without reading this one again;
	// nil when not known (versions stored before it was kept).
	Print *TextPrint `json:"-"`
	// Weight is what an HTML page shows against what its scripts weigh,
	// as the segmenter read it; nil for feeds and documents. Whether the
	// page looks like an empty frame its scripts fill in is told from it.
	Weight *PageWeight `json:"-"`

	// Value is what the watch's value selector (or the page's offer)
	// read from this version, for a watch that reads one; nil otherwise.
	// The values of a watch's versions are its series.
	Value *Value `json:"value,omitempty"`

	// Screenshot of a version rendered in a browser; nil for fetched
	// pages. Stored beside the version, its image once across versions.
	Screenshot *Screenshot `json:"screenshot,omitempty"`
}

// Segment is one block of a page (or one item of a feed) with the MD5 of
// its normalised content.
type Segment struct {
	Index int `json:"index"`
	// Hash is the hex MD5 of the normalised content: insignificant
	// whitespace, attribute order and comments do not change it.
	Hash string `json:"hash"`
	// Path is a readable location of the segment's root, e.g.
	// "html|body|div-main|article[2]"; for a feed item its GUID or link.
	Path string `json:"path"`
	// Text is the segment's visible text, for search and matching.
	Text string `json:"text"`
	// Start and End are the segment's byte range in the raw body; -1 when
	// unknown. Ranges of one snapshot are ordered and do not overlap.
	Start int `json:"start"`
	End   int `json:"end"`
}

// PageWeight measures an HTML page's visible text against its scripts.
type PageWeight struct {
	// Text counts the non-space characters of the text a reader sees:
	// outside scripts, styles, templates, noscript and titles.
	Text int
	// InlineScript is the bytes of script source in the page;
	// ExternalScripts the scripts it loads from a src.
	InlineScript, ExternalScripts int
}

// Hashes returns the segment hashes in order: one row of the signature matrix.
func (s *Snapshot) Hashes() []string {
	h := make([]string, len(s.Segments))
	for i, seg := range s.Segments {
		h[i] = seg.Hash
	}
	return h
}

// HasChanges reports whether the snapshot brought any change.
func (s *Snapshot) HasChanges() bool { return len(s.Changes) > 0 }

// Screenshot is an image of a version of a page as a browser drew it,
// with where its segments were drawn, so a view can outline them.
type Screenshot struct {
	// PNG is the image; the track stores identical images once.
	PNG []byte `json:"-"`
	// Hash is the hex SHA-256 of PNG, set by the track.
	Hash   string `json:"hash,omitempty"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	// Boxes are the segments' rectangles in the image's pixels.
	Boxes []Box `json:"boxes,omitempty"`
}

// Box is where one segment, or an element, was drawn.
type Box struct {
	// Segment is the index of the segment in its version (-1 for an
	// element that is no segment's root).
	Segment int    `json:"segment"`
	Path    string `json:"path"`
	X       int    `json:"x"`
	Y       int    `json:"y"`
	W       int    `json:"w"`
	H       int    `json:"h"`
}

// TextPrint summarises the visible text of a version: the word counts and
// 64-bit simhashes of its main text and of all its text. Version says
// which rules made it; prints made by other rules are not compared.
type TextPrint struct {
	Version   int
	MainWords int
	AllWords  int
	MainHash  uint64
	AllHash   uint64
}

// VersionParts reads the parts of a stored version that its snapshot
// leaves out, when they are needed: the text of a segment (by its index
// in the snapshot's Segments), a stretch of the body by byte offsets (the
// segments' Start and End), and the whole body, byte for byte as stored.
type VersionParts interface {
	SegmentText(i int) (string, error)
	BodyRange(start, end int) ([]byte, error)
	Body() ([]byte, error)
}
