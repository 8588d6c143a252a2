package realinstall_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// checkFrom: every judge, in text and JSON, prints from a bundle of the
// mode's install (gpuops collect) what it prints live (issue #55's
// differential; test/collect holds the other formats and inputs).
func (in *install) checkFrom(t *testing.T) {
	t.Helper()
	node := in.nodes[slices.Sorted(maps.Keys(in.nodes))[0]]
	gpuopstest.On(in.env).FromIsLive(t, gpuopstest.TextAndJSON(gpuopstest.FromCases(node, in.selector())))
}
