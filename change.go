package changedigest

import (
	"fmt"
	"strings"
)

// ChangeType classifies a change (Goel and Aggarwal's four classes).
type ChangeType string

// Change types.
const (
	// ChangeContent is text inserted, deleted or updated.
	ChangeContent ChangeType = "content"
	// ChangeStructural is tags added, removed or moved, or link targets changed.
	ChangeStructural ChangeType = "structural"
	// ChangeCosmetic is a change of presentation attributes only (style,
	// class, font, colour) with the same text.
	ChangeCosmetic ChangeType = "cosmetic"
	// ChangeBehavioural is a change of scripts, event handler attributes,
	// iframes, objects or applets.
	ChangeBehavioural ChangeType = "behavioural"
)

// ChangeTypes lists the types in display order.
var ChangeTypes = []ChangeType{ChangeContent, ChangeStructural, ChangeCosmetic, ChangeBehavioural}

// ParseChangeType checks a change type name.
func ParseChangeType(s string) (ChangeType, error) {
	for _, t := range ChangeTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", Errorf(EINVALID, "unknown change type %q (want content, structural, cosmetic or behavioural)", s)
}

// Op is the edit operation of a change.
type Op string

// Edit operations.
const (
	OpInsert Op = "insert"
	OpDelete Op = "delete"
	OpUpdate Op = "update"
	OpMove   Op = "move"
)

// Change is one located, typed difference between two versions.
type Change struct {
	// Segment is the index of the segment in the new version (in the old
	// one for a deletion); for feeds the item position.
	Segment int    `json:"segment"`
	Path    string `json:"path"`
	// Where names the change's place as the page shows it, for people:
	// "under ‘Opening hours’", "in the navigation" ("" when the page
	// gives no name to it). Path is for programs.
	Where   string     `json:"where,omitempty"`
	Type    ChangeType `json:"type"`
	Op      Op         `json:"op"`
	OldText string     `json:"old_text"`
	NewText string     `json:"new_text"`

	// A content update shows only the words that changed: OldText and
	// NewText are one run of changed words of a block (a block with
	// changes far apart gives one change per run), Before and After up to
	// a few unchanged words of the block around it. The whole texts of
	// the block are in the version's segments.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Truncated is set when OldText or NewText was cut to a cap (a view or
	// feed that must bound its size); OldLen and NewLen then give their
	// full lengths in bytes. Without it the texts are whole.
	Truncated bool `json:"truncated,omitempty"`
	OldLen    int  `json:"old_len,omitempty"`
	NewLen    int  `json:"new_len,omitempty"`

	// Feed changes only: item positions in each version (-1 where absent;
	// in a stored version of a feed past the item limit, among the items
	// it kept, its segments), the item title, link and the old/new item
	// similarity.
	OldItem    *int     `json:"old_item,omitempty"`
	NewItem    *int     `json:"new_item,omitempty"`
	Title      string   `json:"title,omitempty"`
	Link       string   `json:"link,omitempty"`
	Similarity *float64 `json:"similarity,omitempty"`

	// Noise, when set, says why the change is not worth telling about
	// (generated values only, a location that changes at nearly every
	// check, ...). Noise changes are kept in the track and the API, folded
	// in the views and left out of feeds and notifications by default.
	Noise string `json:"noise,omitempty"`
}

// NoiseTypography is the Noise of a change of text that changes only
// quotes, dashes, symbols or characters lost to "?": no news alone, but
// shown with the other changes of a version that is told.
const NoiseTypography = "typography only"

// PlaceName returns the heading or the label that Where quotes, the
// title of the item or section the change is in ("Opening hours" for
// "under ‘Opening hours’"); "" for a place named by its kind ("in the
// navigation") or none.
func (c Change) PlaceName() string {
	for _, prefix := range []string{"under ‘", "in ‘"} {
		if rest, ok := strings.CutPrefix(c.Where, prefix); ok {
			if name, ok := strings.CutSuffix(rest, "’"); ok {
				return name
			}
		}
	}
	return ""
}

func (c Change) String() string {
	return fmt.Sprintf("%s %s at %s", c.Type, c.Op, c.Path)
}

// Diff is the result of comparing two versions of a document: the
// `changedigest diff --json` contract.
type Diff struct {
	Kind            Kind         `json:"kind"`
	Old             DocumentStat `json:"old"`
	New             DocumentStat `json:"new"`
	ChangedSegments int          `json:"changed_segments"`
	Similarity      float64      `json:"similarity"`
	// Significance of the new version against the old one, 0..1 (0 = no
	// change a reader would notice, 1 = a different page).
	Significance float64  `json:"significance,omitempty"`
	Changes      []Change `json:"changes"`
}

// DocumentStat is the size of one side of a Diff.
type DocumentStat struct {
	Segments int `json:"segments"`
	Bytes    int `json:"bytes"`
}
