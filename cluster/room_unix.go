//go:build unix

package cluster

import "golang.org/x/sys/unix"

// diskSpace returns the bytes free to this process and in all on the
// filesystem holding dir.
func diskSpace(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
