package read

import (
	"slices"
	"strings"
	"sync"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The pods of a read come in parts side by side (podparts.go), each in name
// order, and a snapshot holds them as one LIST would: one slice in name order.
// Merged whole once the last part ended, the merge was the read's tail, after
// the last byte, most of it the fresh pages of the merged slice (docs/scale.md,
// "Mechanisms"). So the merge runs while the parts come, into a slice sized by
// the pods the DaemonSets expect, and after the last byte only what the last
// part brought since is left to merge.

// podBlock is how many pods a block of a part holds (72 KB).
const podBlock = 256

// podMerge merges the pods of parts, disjoint, into one slice ordered by
// name, each pod copied once. Each part writes through its own partWriter,
// which hands the merge whole blocks, never moved once written: a slice
// grown by appending (a quarter at a time once large) allocated about five
// times its pods in fresh memory, and on this VM a fresh page costs a fault
// to the hypervisor and a zeroing. For
// the same reason a block the merge has emptied goes back to the parts to
// fill again: merged as they come, the parts' pods take a few blocks each,
// not a second copy of them all.
type podMerge struct {
	mu      sync.Mutex
	changed sync.Cond // a part handed blocks over, ended or failed
	parts   []mergedPart
	spare   [][]snapshot.Pod // blocks merged, empty, for the parts to fill again
	failed  bool             // a part ended with an error: nothing to merge
}

// mergedPart is what a part has handed the merge.
type mergedPart struct {
	blocks   [][]snapshot.Pod // handed over, not taken by the merge yet
	n        int              // pods handed over in all
	done     bool             // the part ended: no more blocks
	unsorted bool             // a pod came before the one it followed
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

// handOver gives the merge the block being filled and takes a spare one,
// if any, to fill next.
func (w *partWriter) handOver(done bool, err error) {
	m := w.m
	m.mu.Lock()
	p := &m.parts[w.part]
	if len(w.block) > 0 {
		p.blocks = append(p.blocks, w.block)
		p.n += len(w.block)
	}
	w.block = nil
	if last := len(m.spare) - 1; last >= 0 && !done {
		w.block, m.spare = m.spare[last], m.spare[:last]
	}
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
// exactly their pods. If a part came out of name order, all the pods are
// sorted once every part has ended.
func (m *podMerge) merged(expected func() int) []snapshot.Pod {
	capacity := expected()
	stream := capacity > 0
	heads := make([]head, len(m.parts))
	var out []snapshot.Pod
	var emptied [][]snapshot.Pod // blocks merged since the lock was last held
	m.mu.Lock()
	for {
		m.spare, emptied = append(m.spare, emptied...), emptied[:0]
		for !m.failed && !m.mergeable(stream, heads) {
			m.changed.Wait()
		}
		if m.failed {
			m.mu.Unlock()
			return nil
		}
		ended, unsorted, n := true, false, 0
		for i := range m.parts {
			p := &m.parts[i]
			heads[i].blocks, p.blocks = append(heads[i].blocks, p.blocks...), p.blocks[:0]
			heads[i].open = !p.done
			ended, unsorted, n = ended && p.done, unsorted || p.unsorted, n+p.n
		}
		if unsorted && !ended { // sorted once all have ended
			stream = false
			continue
		}
		m.mu.Unlock()
		if out == nil && n > 0 {
			if capacity == 0 { // expecting none, merged once all have ended
				capacity = n
			}
			out = make([]snapshot.Pod, 0, capacity)
		}
		if unsorted { // every pod is merged already or in a head
			for _, h := range heads {
				out = h.appendTo(out)
			}
			slices.SortFunc(out, func(a, b snapshot.Pod) int { return strings.Compare(a.Name, b.Name) })
			return out
		}
		out, emptied = mergeHeads(out, heads, emptied)
		if ended {
			return out // nil without pods, as a node without pods has in a whole read
		}
		m.mu.Lock()
	}
}

// head is a part's blocks the merge has taken and not merged yet: the
// first from its pod at next on; none is empty.
type head struct {
	blocks [][]snapshot.Pod
	next   int
	open   bool // the part may hand over more
}

func (h *head) first() *snapshot.Pod { return &h.blocks[0][h.next] }

// pop moves past the first pod, and returns its block if that emptied it.
func (h *head) pop() (emptied []snapshot.Pod) {
	if h.next++; h.next < len(h.blocks[0]) {
		return nil
	}
	emptied, h.blocks, h.next = h.blocks[0][:0], h.blocks[1:], 0
	return emptied
}

func (h head) appendTo(out []snapshot.Pod) []snapshot.Pod {
	for i, b := range h.blocks {
		if i == 0 {
			b = b[h.next:]
		}
		out = append(out, b...)
	}
	return out
}

// mergeable reports whether merged can go on: every part has ended, or, as
// the blocks come, every part that has not has a pod not merged yet.
func (m *podMerge) mergeable(stream bool, heads []head) bool {
	for i := range m.parts {
		p := &m.parts[i]
		if !p.done && (!stream || len(heads[i].blocks) == 0 && len(p.blocks) == 0) {
			return false
		}
	}
	return true
}

// mergeHeads appends to out the least of the heads' first pods while it
// can: until every head is empty, or one of a part still open is (its next
// pod may come before the others'). It appends each block it empties to
// emptied.
func mergeHeads(out []snapshot.Pod, heads []head, emptied [][]snapshot.Pod) ([]snapshot.Pod, [][]snapshot.Pod) {
	for {
		first := -1
		for i := range heads {
			h := &heads[i]
			if len(h.blocks) == 0 {
				if h.open {
					return out, emptied
				}
				continue
			}
			if first < 0 || h.first().Name < heads[first].first().Name {
				first = i
			}
		}
		if first < 0 {
			return out, emptied
		}
		out = append(out, *heads[first].first())
		if b := heads[first].pop(); b != nil {
			emptied = append(emptied, b)
		}
	}
}
