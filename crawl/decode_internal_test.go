package crawl

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestReadCappedSize: the announced size only sizes the buffer. A body
// shorter or longer than announced is read whole, and the limit holds
// whatever the announcement says.
func TestReadCappedSize(t *testing.T) {
	body := strings.Repeat("0123456789", 1000)
	for _, size := range []int64{-1, 0, 10, 10000, 10001, 1 << 20, 1 << 40} {
		got, err := readCapped(strings.NewReader(body), 1<<20, size, "body")
		if err != nil || !bytes.Equal(got, []byte(body)) {
			t.Errorf("size %d: %d bytes, %v", size, len(got), err)
		}
		if _, err := readCapped(strings.NewReader(body), 9999, size, "body"); !errors.Is(err, ErrTooLarge) {
			t.Errorf("size %d: a body over the limit gave %v", size, err)
		}
	}
}
