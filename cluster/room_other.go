//go:build !unix

package cluster

import "errors"

// diskSpace is not known here: the disk's own refusal says when it is
// full.
func diskSpace(dir string) (free, total uint64, err error) {
	return 0, 0, errors.New("free space unknown on this system")
}
