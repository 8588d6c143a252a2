//go:build !linux

package gcpace

// HugeHeap is how much of a command's heap is backed by huge pages: none
// but on Linux (hugepages_linux.go).
const HugeHeap = 0

// advised is the heap range asked for huge pages: none.
var advised struct{ start, end uintptr }

func hugeHeap() bool { return false }

func smallPages() {}
