package gcpace_test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpuops/gpuops/internal/gcpace"
	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// A one-shot command's heap asks for huge pages over HugeHeap bytes (less
// the rounding to 2 MB at each end), the command's allocations land there,
// and a command that holds its heap (Steady) asks for small pages again.
// The kernel's own record of each mapping (/proc/self/smaps, VmFlags hg and
// nh) is what is read, in a fresh test process.
func TestHeapInHugePages(t *testing.T) {
	if enabled, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(enabled), "[never]") {
		t.Skip("this kernel gives no transparent huge pages: the heap stays in small pages")
	}
	res := gpuopstest.Run(t, []string{"GOGC=", "GOMEMLIMIT=", "GCPACE_PAGES_PROBE=1"}, os.Args[0], "-test.run=^TestPagesProbe$", "-test.v")
	for _, want := range []string{
		"advised: huge true, small false",
		"of 8 blocks of 1 MB, in the advised range: 8",
		"after Steady: huge false, small true",
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("want %q in the probe's output:\n%s%s", want, res.Stdout, res.Stderr)
		}
	}
}

// TestPagesProbe is TestHeapInHugePages's fresh process. It prints whether
// the kernel maps the advised range (at least HugeHeap less 2 MB) with each
// advice, where 1 MB blocks allocated now land, and the advice after Steady.
func TestPagesProbe(t *testing.T) {
	if os.Getenv("GCPACE_PAGES_PROBE") == "" {
		return // a probe only when TestHeapInHugePages runs it
	}
	<-gcpace.Armed
	start, end := gcpace.Advised()
	min := uintptr(gcpace.HugeHeap - 2<<20)
	report := func(when string) {
		huge, small := advice(t, start, end)
		fmt.Printf("%s: huge %v, small %v\n", when, huge >= min, small >= min)
	}
	report("advised")
	in := 0
	blocks := make([][]byte, 8)
	for i := range blocks {
		blocks[i] = make([]byte, 1<<20)
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(blocks[i]))); p >= start && p < end {
			in++
		}
	}
	fmt.Printf("of %d blocks of 1 MB, in the advised range: %d\n", len(blocks), in)
	gcpace.Steady()
	report("after Steady")
}

// advice sums the bytes of [start, end) in mappings that ask for huge pages
// (VmFlags hg) and in those that ask for small ones (nh).
func advice(t *testing.T, start, end uintptr) (huge, small uintptr) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lo, hi uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if r, _, ok := strings.Cut(line, " "); ok && strings.Contains(r, "-") && !strings.HasSuffix(r, ":") {
			a, b, _ := strings.Cut(r, "-")
			l, err1 := strconv.ParseUint(a, 16, 64)
			h, err2 := strconv.ParseUint(b, 16, 64)
			if err1 == nil && err2 == nil {
				lo, hi = max(uintptr(l), start), min(uintptr(h), end)
			}
			continue
		}
		flags, ok := strings.CutPrefix(line, "VmFlags:")
		if !ok || lo >= hi {
			continue
		}
		for _, f := range strings.Fields(flags) {
			switch f {
			case "hg":
				huge += hi - lo
			case "nh":
				small += hi - lo
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return huge, small
}
