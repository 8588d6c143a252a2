package health

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// dra checks, once the DRA kubelet plugin is ready on a node, the devices it
// publishes there, as the device plugin's are checked (devices): published
// at all, every slice of each pool, no device withheld by a taint. One
// cause is the link's; the others go into its evidence. Nothing is judged
// when the read did not list the ResourceSlices (pools nil).
//
// On a node whose GPUs are all bound to vfio-pci the DRA validator's pod
// cannot be scheduled: its claim asks for a device of class gpu.nvidia.com
// (type gpu), and the node publishes only type vfio
// (NVIDIA/gpu-operator v26.7.0 manifests/state-dra-validation/0500_daemonset.yaml,
// manifests/state-dra-driver/0400_deviceclass-gpu.yaml). That pod, unbound,
// is expected there, not a failure.
func (c chain) dra(links []link, node string, pools map[string][]snapshot.DevicePool) {
	i := c.index(operand.DRADriver)
	if i < 0 || pools == nil || !links[i].asked || links[i].code != "" {
		return
	}
	own := pools[node]
	var total, vfio int
	var tainted []string // devices withheld, each once
	var taints []string
	var incomplete []string
	evidence := []string{}
	for _, p := range own {
		total += p.Devices
		vfio += p.VFIO
		for _, t := range p.Tainted {
			if !slices.Contains(tainted, t.Device) {
				tainted = append(tainted, t.Device)
			}
			taint := t.Key
			if t.Value != "" {
				taint += "=" + t.Value
			}
			taints = append(taints, fmt.Sprintf("%s %s:%s", t.Device, taint, t.Effect))
		}
		if !p.Complete() {
			incomplete = append(incomplete, fmt.Sprintf("pool %s (generation %d) has %d of its %d ResourceSlices",
				p.Name, p.Generation, p.Slices, p.SliceCount))
		}
		evidence = append(evidence, fmt.Sprintf("pool %s generation %d: %d of %d ResourceSlices, %d devices (%d vfio), %d taints withholding",
			p.Name, p.Generation, p.Slices, p.SliceCount, p.Devices, p.VFIO, len(p.Tainted)))
	}
	var found [][2]string // code, message; the first is the cause
	switch {
	case len(own) == 0:
		found = append(found, [2]string{DevicesNotPublished, fmt.Sprintf(
			"the DRA kubelet plugin is ready, yet the node publishes no ResourceSlice of driver %s", snapshot.DRADriverName)})
		evidence = append(evidence, fmt.Sprintf("no ResourceSlice of driver %s with spec.nodeName %s", snapshot.DRADriverName, node))
	case len(incomplete) > 0:
		found = append(found, [2]string{PoolIncomplete, strings.Join(incomplete, "; ") +
			": its devices are not all published yet, whatever the published slices list"})
	case total == 0:
		found = append(found, [2]string{DevicesNotPublished, fmt.Sprintf(
			"the DRA kubelet plugin is ready, yet the node's ResourceSlices of driver %s list no device", snapshot.DRADriverName)})
	}
	if len(tainted) > 0 {
		found = append(found, [2]string{DevicesTainted, fmt.Sprintf("%d of %d devices tainted against new claims: %s",
			len(tainted), total, strings.Join(taints, ", "))})
	}
	if len(found) > 0 {
		for _, f := range found[1:] {
			evidence = append(evidence, "also "+f[0]+": "+f[1])
		}
		links[i].fail(found[0][0], found[0][1], strings.Join(evidence, "; "))
		return
	}
	if total > 0 && vfio == total {
		if v := c.index(operand.DRAValidator); v >= 0 && unscheduled(&links[v]) {
			links[v].code, links[v].message, links[v].evidence = "", "", ""
		}
	}
}

// unscheduled reports whether a link fails only because its pod is not
// bound to the node: pending, no container started.
func unscheduled(l *link) bool {
	return l.code == NotRunning && l.pod != nil && l.pod.Node == "" && l.pod.Phase == corev1.PodPending
}
