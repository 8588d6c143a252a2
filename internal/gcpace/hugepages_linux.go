package gcpace

import (
	"bytes"
	"os"
	"syscall"
	"unsafe"
)

// HugeHeap is how much of a command's heap is backed by huge pages.
//
// Go maps its heap without asking for transparent huge pages, and where
// the kernel gives them only to memory that asks (enabled=madvise, as on
// many distributions' kernels), every 4 KB page a run touches first is a
// fault, costly where a hypervisor backs the page, on the cores the API
// server is serving the LISTs with. With the heap's first HugeHeap bytes
// in 2 MB pages a judge faults far fewer pages in (docs/scale.md, "Mechanisms").
//
// So the start allocates one block of HugeHeap bytes, which the runtime
// maps fresh, asks the kernel to back it in huge pages (MADV_HUGEPAGE), and
// drops it; the start's one collection frees it, and the allocator, which
// takes the lowest free addresses first, gives it to the command. A page is
// backed only once touched: a run that allocates less holds less. Half of
// FirstCollection: the block, free, counts against the memory limit.
const HugeHeap = FirstCollection / 2

const hugePage = 2 << 20

// advised is the heap range asked for huge pages, for smallPages: set in
// init, which happens before anything calls Steady.
var advised struct{ start, end uintptr }

// hugeHeap allocates, advises and drops the block, and reports whether it
// did, for the collection that frees it: not where the kernel gives no
// huge pages at all (none built in, or enabled=never), when the heap stays
// as it was.
func hugeHeap() bool {
	if enabled, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || bytes.Contains(enabled, []byte("[never]")) {
		return false
	}
	b := make([]byte, HugeHeap)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start, end := (p+hugePage-1)&^(hugePage-1), (p+HugeHeap)&^(hugePage-1)
	if madvise(start, end, syscall.MADV_HUGEPAGE) == nil {
		advised.start, advised.end = start, end
	}
	return true
}

// smallPages asks the kernel to back the advised range in small pages from
// now on, for a command that holds its heap for long (Steady): a huge page
// partly in use is held whole, and the collector returns free memory to
// the kernel in small pages. Pages already huge stay so.
func smallPages() {
	if advised.start < advised.end {
		_ = madvise(advised.start, advised.end, syscall.MADV_NOHUGEPAGE) // nothing to undo if refused
	}
}

// madvise gives advice on [start, end), heap memory the runtime has mapped:
// addresses, not a slice, as the range outlives the block.
func madvise(start, end uintptr, advice int) error {
	if start >= end {
		return syscall.EINVAL
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}
