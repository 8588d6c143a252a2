package read

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// write hands each part's pods, pods with these names in this order, to a
// fresh merge, one part after the other, and ends each.
func write(parts ...[]string) *podMerge {
	m := newPodMerge(len(parts))
	for i, names := range parts {
		w := m.writer(i)
		for _, n := range names {
			w.add(pod(n))
		}
		w.end(nil)
	}
	return m
}

func pod(name string) snapshot.Pod { return snapshot.Pod{Name: name, Node: "node-of-" + name} }

// byName is every part's pods sorted by name, as a single LIST has them.
func byName(parts ...[]string) []snapshot.Pod {
	var want []snapshot.Pod
	for _, n := range slices.Concat(parts...) {
		want = append(want, pod(n))
	}
	slices.SortStableFunc(want, func(a, b snapshot.Pod) int { return strings.Compare(a.Name, b.Name) })
	return want
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
		name  string
		parts [][]string
	}{
		{"sorted parts", [][]string{{"a", "d", "g"}, {"b", "c", "h"}, {"e", "f"}}},
		{"an empty part", [][]string{{}, {"b", "c"}, {"a"}}},
		{"a part out of order", [][]string{{"c", "a", "e"}, {"b", "d"}}},
		{"none", [][]string{{}, {}}},
		{"parts of several blocks", [][]string{long, names("p", 2*podBlock, 3), {"q"}}},
		{"a part of several blocks out of order", [][]string{backwards, {"a", "z"}}},
	} {
		want := byName(tc.parts...)
		// Expecting none, the merge waits for every part; expecting some,
		// it merges what has come (here: all of it) as it comes.
		for _, expected := range []int{0, 1, len(want) + 10} {
			t.Run(fmt.Sprintf("%s/expected=%d", tc.name, expected), func(t *testing.T) {
				got := write(tc.parts...).merged(func() int { return expected })
				if !slices.Equal(got, want) {
					t.Errorf("merged = %d pods, want %d: %v", len(got), len(want), firstDiff(got, want))
				}
				if len(want) == 0 && got != nil {
					t.Errorf("merged no pods into %#v, want nil", got)
				}
			})
		}
	}
}

// The parts hand their blocks over while the merge runs, in whatever order
// the scheduler gives (go test -race checks the hand-over). Expecting the
// pods, the merge fills one slice of that size; expecting none, one of
// exactly the pods that came.
func TestMergeWhileTheyCome(t *testing.T) {
	all := names("pod", 10*podBlock+3, 1)
	var parts [3][]string
	for i, n := range all {
		parts[i%3] = append(parts[i%3], n)
	}
	shuffled := slices.Clone(parts[2]) // sorted by the merge once all have ended
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, tc := range []struct {
		name     string
		parts    [][]string
		expected int
		wantCap  int
	}{
		{"expected", parts[:], 2 * len(all), 2 * len(all)},
		{"fewer expected", parts[:], 10, -1},
		{"none expected", parts[:], 0, len(all)},
		{"a part out of order", [][]string{parts[0], parts[1], shuffled}, 2 * len(all), 2 * len(all)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 5 {
				m := newPodMerge(len(tc.parts))
				var wg sync.WaitGroup
				for i, names := range tc.parts {
					wg.Go(func() {
						w := m.writer(i)
						for j, n := range names {
							w.add(pod(n))
							if j%100 == 0 {
								runtime.Gosched()
							}
						}
						w.end(nil)
					})
				}
				got := m.merged(func() int { return tc.expected })
				wg.Wait()
				if want := byName(tc.parts...); !slices.Equal(got, want) {
					t.Fatalf("merged = %d pods, want %d: %v", len(got), len(want), firstDiff(got, want))
				}
				if tc.wantCap >= 0 && cap(got) != tc.wantCap {
					t.Fatalf("merged into a slice of %d, want %d", cap(got), tc.wantCap)
				}
			}
		})
	}
}

// A block the merge has emptied is filled again: merged as they come, the
// parts' pods take a few blocks, not a second copy of them all.
func TestMergedBlocksFilledAgain(t *testing.T) {
	m := newPodMerge(2)
	all := names("p", 6*podBlock, 1)
	got := make(chan []snapshot.Pod)
	go func() { got <- m.merged(func() int { return len(all) }) }()
	a, b := m.writer(0), m.writer(1)
	var filled []*snapshot.Pod // the blocks part a filled, by their first pod
	for i := 0; i < len(all); i += 2 {
		if len(a.block) == 0 {
			if len(filled) == 1 { // its first block handed over: wait for the merge to empty it
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					m.mu.Lock()
					n := len(m.spare)
					m.mu.Unlock()
					if n > 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the merge emptied no block")
					}
				}
			}
			a.add(pod(all[i]))
			filled = append(filled, &a.block[0])
		} else {
			a.add(pod(all[i]))
		}
		b.add(pod(all[i+1]))
	}
	a.end(nil)
	b.end(nil)
	if merged := <-got; !slices.Equal(merged, byName(all)) {
		t.Errorf("merged %d pods, want %d: %v", len(merged), len(all), firstDiff(merged, byName(all)))
	}
	if len(filled) != 3 || filled[2] != filled[0] {
		t.Errorf("part a filled %d blocks, the third not the first again", len(filled))
	}
}

// A part that fails fails the merge, which then returns at once, the
// other parts still open: the read says the part's error.
func TestMergeOfAFailedPart(t *testing.T) {
	m := newPodMerge(2)
	m.writer(0).add(snapshot.Pod{Name: "a"})
	m.writer(1).end(errors.New("refused"))
	if got := m.merged(func() int { return 10 }); got != nil {
		t.Errorf("merged = %v, want nil", got)
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

// A part keeps its pods where they were first written: adding more moves
// none, and the merge gets them in blocks of podBlock.
func TestPartNeverMovesAPod(t *testing.T) {
	m := newPodMerge(1)
	w := m.writer(0)
	w.add(snapshot.Pod{Name: "first"})
	first := &w.block[0]
	for _, n := range names("p", 4*podBlock, 1) {
		w.add(snapshot.Pod{Name: n})
	}
	w.end(nil)
	p := m.parts[0]
	if &p.blocks[0][0] != first || p.n != 4*podBlock+1 {
		t.Errorf("the first pod moved (or %d pods kept, want %d)", p.n, 4*podBlock+1)
	}
	for i, b := range p.blocks {
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
			write(parts[:]...).merged(func() int { return 0 })
		}
	})
	b.Run("runs=grown", func(b *testing.B) {
		for b.Loop() {
			m := newPodMerge(len(parts))
			for i, p := range parts {
				var grown []snapshot.Pod
				for _, n := range p {
					grown = append(grown, snapshot.Pod{Name: n})
				}
				m.parts[i] = mergedPart{blocks: [][]snapshot.Pod{grown}, n: len(grown), done: true} // one block: merged as before
			}
			m.merged(func() int { return 0 })
		}
	})
}
