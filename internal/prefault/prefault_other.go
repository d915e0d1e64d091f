//go:build !linux

package prefault

// SmallFaultsDear is false where nothing is mapped ahead of use.
func SmallFaultsDear() bool { return false }
