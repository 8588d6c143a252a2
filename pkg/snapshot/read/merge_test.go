package read

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// run is a podRun of pods with these names, in this order.
func run(names ...string) podRun {
	var r podRun
	for _, n := range names {
		r.add(snapshot.Pod{Name: n, Node: "node-of-" + n})
	}
	return r
}

// names are n pod names from prefix-000000 on, every step-th.
func names(prefix string, n, step int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%06d", prefix, i*step)
	}
	return out
}

func TestMergeByName(t *testing.T) {
	long := names("p", 3*podBlock+7, 2) // blocks of its own, the last one part full
	backwards := slices.Clone(long)
	slices.Reverse(backwards)
	for _, tc := range []struct {
		name string
		runs []podRun
	}{
		{"sorted runs", []podRun{run("a", "d", "g"), run("b", "c", "h"), run("e", "f")}},
		{"an empty run", []podRun{run(), run("b", "c"), run("a")}},
		{"a run out of order", []podRun{run("c", "a", "e"), run("b", "d")}},
		{"none", []podRun{run(), run()}},
		{"runs of several blocks", []podRun{run(long...), run(names("p", 2*podBlock, 3)...), run("q")}},
		{"a run of several blocks out of order", []podRun{run(backwards...), run("a", "z")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []snapshot.Pod
			for _, r := range tc.runs {
				want = slices.Concat(append([][]snapshot.Pod{want}, r.blocks...)...)
			}
			slices.SortStableFunc(want, func(a, b snapshot.Pod) int { return strings.Compare(a.Name, b.Name) })
			if got := mergeByName(tc.runs); !slices.Equal(got, want) {
				t.Errorf("mergeByName = %d pods, want %d: %v", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(got, want []snapshot.Pod) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d %s, want %s", i, got[i].Name, want[i].Name)
		}
	}
	return "one is the other's start"
}

// A run keeps its pods where they were first written: adding more moves none.
func TestRunNeverMovesAPod(t *testing.T) {
	var r podRun
	r.add(snapshot.Pod{Name: "first"})
	first := &r.blocks[0][0]
	for _, n := range names("p", 4*podBlock, 1) {
		r.add(snapshot.Pod{Name: n})
	}
	if &r.blocks[0][0] != first || r.n != 4*podBlock+1 {
		t.Errorf("the first pod moved (or %d pods kept, want %d)", r.n, 4*podBlock+1)
	}
	for i, b := range r.blocks {
		if cap(b) != podBlock {
			t.Errorf("block %d holds %d, want %d", i, cap(b), podBlock)
		}
	}
}

// BenchmarkCollectPods collects 25,000 pods in three runs and merges them,
// against collecting them in slices grown by appending, as before, and merged
// the same way: the bytes
// a judge's read allocates for them (B/op) are the fresh pages it touches.
//
//	go test ./pkg/snapshot/read -run '^$' -bench CollectPods -benchmem
func BenchmarkCollectPods(b *testing.B) {
	var parts [3][]string
	for i, n := range names("pod", 25000, 1) {
		parts[i%3] = append(parts[i%3], n)
	}
	b.Run("runs=blocks", func(b *testing.B) {
		for b.Loop() {
			runs := make([]podRun, len(parts))
			for i, p := range parts {
				for _, n := range p {
					runs[i].add(snapshot.Pod{Name: n})
				}
			}
			mergeByName(runs)
		}
	})
	b.Run("runs=grown", func(b *testing.B) {
		for b.Loop() {
			runs := make([]podRun, len(parts))
			for i, p := range parts {
				var grown []snapshot.Pod
				for _, n := range p {
					grown = append(grown, snapshot.Pod{Name: n})
				}
				runs[i] = podRun{blocks: [][]snapshot.Pod{grown}, n: len(grown)} // one block: merged as before
			}
			mergeByName(runs)
		}
	})
}
