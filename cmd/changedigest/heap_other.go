//go:build !linux

package main

// hugeHeap is a no-op where transparent huge pages are not known.
func hugeHeap() {}
