package crawl

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"

	"github.com/changedigest/changedigest"
)

// acceptEncoding is what Fetch offers; it decodes these itself so that it
// can cap the decoded size (the standard transport decodes gzip only, and
// without a cap).
const acceptEncoding = "gzip, deflate, br"

// ratioFloor is the decoded size under which the ratio guard is not
// applied: small, very repetitive pages compress far better than 100:1.
const ratioFloor = 1 << 20

// maxSizeHint bounds the buffer made from an announced length, which a
// server may state falsely.
const maxSizeHint = 8 << 20

// readCapped reads r to the end, failing with ErrTooLarge as soon as more
// than limit bytes arrive (it reads at most limit+1 bytes). size is the
// length announced (a Content-Length; <= 0 when unknown): the buffer is
// made that large at once, up to maxSizeHint, rather than grown by
// doubling, which copies the body and touches twice its memory.
func readCapped(r io.Reader, limit, size int64, what string) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 && size <= min(limit, maxSizeHint) {
		buf.Grow(int(size) + bytes.MinRead) // ReadFrom wants MinRead free to see the end
	}
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: %s is over the %s limit", ErrTooLarge, what, changedigest.FormatBytes(limit))
	}
	return buf.Bytes(), nil
}

// decodeContent undoes the Content-Encoding header's codings, last applied
// first. The decoded size is capped at limit and, once over a megabyte,
// at maxRatio times the encoded size (maxRatio <= 0: no ratio guard).
func decodeContent(body []byte, contentEncoding string, limit int64, maxRatio float64) ([]byte, error) {
	var codings []string
	for _, c := range strings.Split(contentEncoding, ",") {
		if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
			codings = append(codings, c)
		}
	}
	encoded := len(body)
	for i := len(codings) - 1; i >= 0; i-- {
		var (
			r   io.Reader
			err error
		)
		switch codings[i] {
		case "gzip", "x-gzip":
			r, err = gzip.NewReader(bytes.NewReader(body))
		case "deflate":
			// RFC 9110 deflate is zlib-wrapped; some servers send raw deflate.
			r, err = zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				r, err = flate.NewReader(bytes.NewReader(body)), nil
			}
		case "br":
			r = brotli.NewReader(bytes.NewReader(body))
		default:
			return nil, fmt.Errorf("%w: unsupported Content-Encoding %q", ErrBadEncoding, codings[i])
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadEncoding, codings[i], err)
		}
		ceiling := limit
		if maxRatio > 0 {
			ceiling = min(limit, max(int64(maxRatio*float64(encoded)), ratioFloor))
		}
		out, err := readCapped(r, ceiling, 0, "decoded body")
		if errors.Is(err, ErrTooLarge) {
			if ceiling < limit {
				return nil, fmt.Errorf("%w: %s body of %s decodes to more than %s", ErrCompressionBomb, codings[i], changedigest.FormatBytes(int64(encoded)), changedigest.FormatBytes(ceiling))
			}
			return nil, fmt.Errorf("%w: decoded body is over the %s limit", ErrTooLarge, changedigest.FormatBytes(limit))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadEncoding, codings[i], err)
		}
		body = out
	}
	return body, nil
}
