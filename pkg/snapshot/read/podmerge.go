package read

import (
	"slices"
	"strings"
	"sync"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The pods of a read come in parts side by side (podparts.go), each in
// name order, and a snapshot holds them as one LIST would: one slice in
// name order. Merged whole once the last part ended, the merge was the
// read's tail: at 1,000 lab-sized nodes (4,973 pods) 6-13 ms after the
// last byte, most of it the fresh pages of the merged slice (bench/RESULTS.md,
// "The merge while the pods come"). So the merge runs while the parts come,
// into a slice sized by the pods the DaemonSets expect, and after the last
// byte only what the last part brought since is left to merge.

// podBlock is how many pods a block of a part holds (72 KB).
const podBlock = 256

// podRun is the pods of one part in the order they came, in blocks that
// are never moved once written. A slice grown by appending (a quarter at a
// time once large) allocated about five times its pods in fresh memory
// before the merge copied them once more, and on this VM a fresh page costs
// a fault to the hypervisor and a zeroing: at 5,000 lab-sized nodes, the
// faults of the growing copies alone were 4.6% of health's CPU (perf;
// bench/RESULTS.md, "Fresh pages").
type podRun struct {
	blocks [][]snapshot.Pod
	n      int
}

// sortByName leaves the run sorted by name: as it came, the API server
// listing a namespace's objects in key order, else sorted as one block.
func (r *podRun) sortByName() {
	prev := ""
	for _, b := range r.blocks {
		for i := range b {
			if b[i].Name < prev {
				all := slices.Concat(r.blocks...)
				slices.SortFunc(all, func(a, b snapshot.Pod) int { return strings.Compare(a.Name, b.Name) })
				r.blocks = [][]snapshot.Pod{all}
				return
			}
			prev = b[i].Name
		}
	}
}

// podMerge merges the pods of parts, disjoint, into one slice ordered by
// name, each pod copied once. Each part writes through its own partWriter,
// which hands the merge whole blocks; merged takes them as they come.
type podMerge struct {
	mu      sync.Mutex
	changed sync.Cond // a part handed blocks over, ended or failed
	parts   []mergedPart
	failed  bool // a part ended with an error: nothing to merge
}

// mergedPart is what a part has handed the merge.
type mergedPart struct {
	podRun
	done     bool // the part ended: no more blocks
	unsorted bool // a pod came before the one it followed
}

func newPodMerge(parts int) *podMerge {
	m := &podMerge{parts: make([]mergedPart, parts)}
	m.changed.L = &m.mu
	return m
}

// partWriter collects the pods of one part, in the goroutine that reads
// it.
type partWriter struct {
	m        *podMerge
	part     int
	block    []snapshot.Pod // being filled, not handed over yet
	last     string
	unsorted bool
}

func (m *podMerge) writer(part int) *partWriter { return &partWriter{m: m, part: part} }

func (w *partWriter) add(p snapshot.Pod) {
	w.unsorted = w.unsorted || p.Name < w.last
	w.last = p.Name
	if w.block == nil {
		w.block = make([]snapshot.Pod, 0, podBlock)
	}
	if w.block = append(w.block, p); len(w.block) == podBlock {
		w.handOver(false, nil)
	}
}

// end hands over the last block: the part has no more pods, or failed
// with err.
func (w *partWriter) end(err error) { w.handOver(true, err) }

func (w *partWriter) handOver(done bool, err error) {
	m := w.m
	m.mu.Lock()
	p := &m.parts[w.part]
	if len(w.block) > 0 {
		p.blocks = append(p.blocks, w.block)
		p.n += len(w.block)
	}
	w.block = nil
	p.done, p.unsorted = done, w.unsorted
	m.failed = m.failed || err != nil
	m.mu.Unlock()
	m.changed.Broadcast()
}

// merged returns every part's pods ordered by name once each part has
// ended, nil if one failed (its error is its reader's to say). expected,
// called once, is how many pods the read expects: when it is above zero the
// merge runs as the blocks come, into a slice that size (more pods than
// expected grow it); at zero, once every part has ended, into a slice of
// exactly their pods. A part that came out of name order is sorted once
// every part has ended, and the merge starts over.
func (m *podMerge) merged(expected func() int) []snapshot.Pod {
	capacity := expected()
	stream := capacity > 0
	heads := make([][][]snapshot.Pod, len(m.parts)) // each part's blocks taken, not merged yet; none empty
	open := make([]bool, len(m.parts))              // the part may hand over more
	taken := make([]int, len(m.parts))              // blocks taken from each part
	var out []snapshot.Pod
	m.mu.Lock()
	for {
		for !m.failed && !m.mergeable(stream, heads, taken) {
			m.changed.Wait()
		}
		if m.failed {
			m.mu.Unlock()
			return nil
		}
		ended, unsorted, n := true, false, 0
		for i := range m.parts {
			p := &m.parts[i]
			heads[i] = append(heads[i], p.blocks[taken[i]:]...)
			taken[i], open[i] = len(p.blocks), !p.done
			ended, unsorted, n = ended && p.done, unsorted || p.unsorted, n+p.n
		}
		if unsorted && !ended { // merge once all have ended
			stream = false
			continue
		}
		m.mu.Unlock()
		if unsorted {
			out = out[:0]
			for i := range m.parts {
				m.parts[i].sortByName()
				heads[i] = m.parts[i].blocks
			}
		}
		if out == nil && n > 0 {
			if capacity == 0 { // expecting none, merged once all have ended
				capacity = n
			}
			out = make([]snapshot.Pod, 0, capacity)
		}
		out = mergeHeads(out, heads, open)
		if ended {
			return out // nil without pods, as a node without pods has in a whole read
		}
		m.mu.Lock()
	}
}

// mergeable reports whether merged can go on: every part has ended, or, as
// the blocks come, every part that has not has a pod not merged yet.
func (m *podMerge) mergeable(stream bool, heads [][][]snapshot.Pod, taken []int) bool {
	for i := range m.parts {
		p := &m.parts[i]
		if !p.done && (!stream || len(heads[i]) == 0 && len(p.blocks) == taken[i]) {
			return false
		}
	}
	return true
}

// mergeHeads appends to out the least of the heads' first pods while it
// can: until every head is empty, or one of a part still open is (its next
// pod may come before the others').
func mergeHeads(out []snapshot.Pod, heads [][][]snapshot.Pod, open []bool) []snapshot.Pod {
	for {
		first := -1
		for i, h := range heads {
			if len(h) == 0 {
				if open[i] {
					return out
				}
				continue
			}
			if first < 0 || h[0][0].Name < heads[first][0][0].Name {
				first = i
			}
		}
		if first < 0 {
			return out
		}
		h := heads[first]
		out = append(out, h[0][0])
		if h[0] = h[0][1:]; len(h[0]) == 0 {
			heads[first] = h[1:]
		}
	}
}
