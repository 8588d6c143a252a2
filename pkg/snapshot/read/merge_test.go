package read

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestMergeByName(t *testing.T) {
	pods := func(names ...string) []snapshot.Pod {
		out := make([]snapshot.Pod, 0, len(names))
		for _, n := range names {
			out = append(out, snapshot.Pod{Name: n, Node: "node-of-" + n})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		parts [][]snapshot.Pod
	}{
		{"sorted parts", [][]snapshot.Pod{pods("a", "d", "g"), pods("b", "c", "h"), pods("e", "f")}},
		{"an empty part", [][]snapshot.Pod{pods(), pods("b", "c"), pods("a")}},
		{"a part out of order", [][]snapshot.Pod{pods("c", "a", "e"), pods("b", "d")}},
		{"none", [][]snapshot.Pod{pods(), pods()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Concat(tc.parts...)
			slices.SortFunc(want, func(a, b snapshot.Pod) int { return strings.Compare(a.Name, b.Name) })
			if got := mergeByName(tc.parts); !slices.Equal(got, want) {
				t.Errorf("mergeByName = %v, want %v", got, want)
			}
		})
	}
}
