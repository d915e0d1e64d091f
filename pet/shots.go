package pet

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/changedigest/changedigest"
)

// Screenshots of versions rendered in a browser. The image is a chunk of
// the chunk store (stored once under the hash of its bytes, reference
// counted, so a screenshot that did not change between versions costs a
// reference); the shots bucket maps a version to its image and the boxes
// of its segments.

// Limits on a screenshot.
const (
	// MaxScreenshot is the largest screenshot image AddVersion accepts.
	MaxScreenshot = 8 << 20
	maxShotBoxes  = 10000
	maxShotSide   = 1 << 15
)

var bShots = []byte("shots") // wid|seq → shotRec

// shotRec is a version's screenshot: [format][16-byte image hash][uvarint
// chunk id][uvarint width][uvarint height][packed boxes JSON].
type shotRec struct {
	sum           [16]byte
	chunk         uint64
	width, height int
	boxes         []changedigest.Box
}

const shotFormat = 1

func (r *shotRec) encode() ([]byte, error) {
	e := enc{b: []byte{shotFormat}}
	e.b = append(e.b, r.sum[:]...)
	e.uint(r.chunk)
	e.uint(uint64(r.width))
	e.uint(uint64(r.height))
	boxes, err := json.Marshal(r.boxes)
	if err != nil {
		return nil, err
	}
	e.bytes(pack(boxes))
	return e.b, nil
}

func decodeShot(v []byte) (*shotRec, error) { return decodeShotPart(v, true) }

// decodeShotPart decodes a screenshot record, with its boxes or not.
func decodeShotPart(v []byte, withBoxes bool) (*shotRec, error) {
	if len(v) < 1 || v[0] != shotFormat {
		return nil, fmt.Errorf("unknown screenshot record format")
	}
	d := dec{b: v[1:]}
	r := &shotRec{}
	copy(r.sum[:], d.fixed(16))
	r.chunk = d.uint()
	r.width, r.height = int(d.uint()), int(d.uint())
	packedBoxes := d.bytes()
	if d.err != nil {
		return nil, d.err
	}
	if !withBoxes {
		return r, nil
	}
	boxes, err := unpack(packedBoxes, maxLayout)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(boxes, &r.boxes); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *shotRec) screenshot() *changedigest.Screenshot {
	return &changedigest.Screenshot{Hash: hex.EncodeToString(r.sum[:]), Width: r.width, Height: r.height, Boxes: r.boxes}
}

// checkShot validates a snapshot's screenshot before anything is written.
func checkShot(sh *changedigest.Screenshot) error {
	if sh == nil {
		return nil
	}
	switch {
	case len(sh.PNG) == 0:
		return invalidf("screenshot has no image")
	case len(sh.PNG) > MaxScreenshot:
		return tooLargef("screenshot of %d bytes is over the limit of %d bytes", len(sh.PNG), MaxScreenshot)
	case !bytes.HasPrefix(sh.PNG, []byte("\x89PNG\r\n\x1a\n")):
		return invalidf("screenshot is not a PNG image")
	case sh.Width <= 0 || sh.Height <= 0 || sh.Width > maxShotSide || sh.Height > maxShotSide:
		return invalidf("screenshot of %d×%d pixels is out of range", sh.Width, sh.Height)
	case len(sh.Boxes) > maxShotBoxes:
		return tooLargef("screenshot has %d boxes (at most %d)", len(sh.Boxes), maxShotBoxes)
	}
	for i, b := range sh.Boxes {
		if len(b.Path) > maxSegPath {
			return invalidf("screenshot box %d has a path of %d bytes (at most %d)", i, len(b.Path), maxSegPath)
		}
	}
	return nil
}

// putShot stores the screenshot of version seq (nil: none).
func (t *trackTx) putShot(seq int, sh *changedigest.Screenshot, sum [16]byte) error {
	if sh == nil {
		return nil
	}
	packed := append([]byte{blobRaw}, sh.PNG...) // a PNG is deflated already
	id, err := t.chunks.ref(sum, sh.PNG, packed, 0)
	if err != nil {
		return err
	}
	v, err := (&shotRec{sum: sum, chunk: id, width: sh.Width, height: sh.Height, boxes: sh.Boxes}).encode()
	if err != nil {
		return err
	}
	return t.tx.Bucket(bShots).Put(id64(t.id(), int64(seq)), v)
}

// dropShot deletes the screenshot of version seq, if any, and its
// reference on the image.
func (t *trackTx) dropShot(seq int) error {
	b := t.tx.Bucket(bShots)
	k := id64(t.id(), int64(seq))
	v := b.Get(k)
	if v == nil {
		return nil
	}
	r, err := decodeShot(v)
	if err != nil {
		return corruptf("screenshot of version %d of watch %d: %v", seq, t.id(), err)
	}
	if err := t.chunks.unref(r.chunk); err != nil {
		return err
	}
	return b.Delete(k)
}

// shotOf returns the screenshot record of a version (without its boxes
// unless withBoxes), nil when it has none.
func shotOf(tx *bolt.Tx, watchID int64, seq int, withBoxes bool) (*shotRec, error) {
	v := tx.Bucket(bShots).Get(id64(watchID, int64(seq)))
	if v == nil {
		return nil, nil
	}
	r, err := decodeShotPart(v, withBoxes)
	if err != nil {
		return nil, corruptf("screenshot of version %d of watch %d: %v", seq, watchID, err)
	}
	return r, nil
}

// Screenshot returns the screenshot of a version with its image.
// Errors: ENOTFOUND when the watch, the version or its screenshot does
// not exist.
func (s *Store) Screenshot(ctx context.Context, watchID int64, seq int) (*changedigest.Screenshot, error) {
	var out *changedigest.Screenshot
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if _, err := trackOf(tx, watchID); err != nil {
			return err
		}
		if tx.Bucket(bVersions).Get(id64(watchID, int64(seq))) == nil {
			return notFoundf("version %d of watch %d not found", seq, watchID)
		}
		r, err := shotOf(tx, watchID, seq, true)
		if err != nil {
			return err
		}
		if r == nil {
			return notFoundf("version %d of watch %d has no screenshot", seq, watchID)
		}
		img, err := readChunk(tx, r.chunk, MaxScreenshot)
		if err != nil {
			return err
		}
		out = r.screenshot()
		out.PNG = img
		return nil
	})
	if err != nil {
		return nil, wrap(err, "screenshot of version %d of watch %d", seq, watchID)
	}
	return out, nil
}

// shotRefs adds the chunk references the screenshots hold to refs, for
// Check, and reports screenshots of versions that are not stored.
func shotRefs(tx *bolt.Tx, refs map[uint64]uint64, bad func(string, ...any)) error {
	versions := tx.Bucket(bVersions)
	return tx.Bucket(bShots).ForEach(func(k, v []byte) error {
		wid, seq := at(k, 0), at(k, 1)
		r, err := decodeShot(v)
		if err != nil {
			bad("screenshot of version %d of watch %d: %v", seq, wid, err)
			return nil
		}
		if versions.Get(k) == nil {
			bad("screenshot of version %d of watch %d, which is not stored", seq, wid)
		}
		refs[r.chunk]++
		return nil
	})
}
