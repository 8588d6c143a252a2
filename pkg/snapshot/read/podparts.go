package read

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/gpuops/gpuops/pkg/operand"
)

// The API server encodes (and gzips) one LIST response in one goroutine, so
// a namespace's whole pod list, most of a judge's read, keeps one of its
// cores busy while the others wait. Read as a few LISTs side by side, the
// same pods come on as many cores, and the client decodes them on as many
// of its own. On the realistic 1,000-node fleet (docs/scale.md, "The pod
// list in parts") the pods came in 0.49 s as three LISTs side by side
// against 0.64 s as one, on the same two cores.
//
// The parts are label selectors on the `app` label the GPU Operator gives
// each operand's pods (its DaemonSet's name): `app in (…)` for a few groups
// of operands and, last, `app notin (all of them)`. They are disjoint, and
// together they hold every pod of the namespace, a pod without the label
// included (notin matches it), so the snapshot is the one a single LIST
// gives; how evenly the pods spread over the parts only decides the speed.
const podPartLabel = "app"

// podPartGroups are the operands whose pods each `in` part lists: two of
// the lab's operands each, which on the lab and on a real install are a pod
// a GPU node each.
var podPartGroups = [][]operand.Operand{
	{operand.Lab.Driver(), operand.Lab.ContainerToolkit()},
	{operand.Lab.DevicePlugin(), operand.Lab.GPUFeatureDiscovery()},
}

// podParts returns the label selectors of the parts, in a fixed order.
func podParts() []string {
	var all, out []string
	for _, group := range podPartGroups {
		var names []string
		for _, o := range group {
			names = append(names, o.DaemonSets()...)
		}
		out = append(out, requirement(selection.In, names))
		all = append(all, names...)
	}
	return append(out, requirement(selection.NotIn, all))
}

func requirement(op selection.Operator, values []string) string {
	r, err := labels.NewRequirement(podPartLabel, op, values)
	if err != nil {
		panic(err) // the values are the catalog's DaemonSet names, valid label values
	}
	return r.String()
}
