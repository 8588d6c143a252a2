// Package operand is the catalog of GPU Operator operands that gpuops knows:
// for each one, the node label that switches it on, its DaemonSet, the file
// its manifest is written to and its column in the matrix. Everything else
// (kustomize bases, roster.txt, judges, shell scripts) must agree with it;
// tests prove they do.
package operand

import (
	"fmt"
	"slices"
	"strings"
)

// LabelPrefix starts every per-operand deploy label of the GPU Operator.
const LabelPrefix = "nvidia.com/gpu.deploy."

// OperandsLabel set to "false" makes the real operator strip all deploy labels
// from a node.
const OperandsLabel = LabelPrefix + "operands"

// Operand is one component the GPU Operator fans out into, run by one
// DaemonSet (or, on a live cluster, several).
type Operand struct {
	Name      string // operand name as the lab and the operator spell it
	DaemonSet string // DaemonSet name, also the pod label app=<DaemonSet>
	// Variants are more DaemonSets whose pods count as this operand on a live
	// cluster (found by --discover): precompiled drivers named
	// nvidia-driver-daemonset-<kernel>-<os>, or one driver DaemonSet per node
	// pool of an NVIDIADriver resource. The operand is present on a node when a
	// pod of any of them is.
	Variants []string
	Column   string // short column name in the matrix
	Manifest string // file name under k8s/ where the rendered manifest is written; empty if gpuops does not render it
	// Off says why the cluster's ClusterPolicy switches the operand off
	// (empty when it does not): no node can run it, the operator renders no
	// DaemonSet for it, yet its deploy label stays "true". Judges take it as
	// provided by the hosts, not as missing.
	Off string
	// Requires, when set, is a node label that must also be "true" for the
	// operand's DaemonSet to select the node (Release.Roster sets it).
	Requires string
}

// LabelKey is the node label whose value "true" asks for the operand on that
// node.
func (o Operand) LabelKey() string { return LabelPrefix + o.Name }

// DeployLabel looks up the deploy label of the named operand in a node's
// labels.
func DeployLabel(labels map[string]string, name string) (value string, ok bool) {
	value, ok = labels[LabelPrefix+name]
	return value, ok
}

// Label is the operand's deploy label on a node (DeployLabel).
func (o Operand) Label(labels map[string]string) (value string, ok bool) {
	return DeployLabel(labels, o.Name)
}

// Asks reports whether a node's labels ask for the named operand: its deploy
// label is exactly "true" ("True", "false", "" and a missing label do not).
func Asks(labels map[string]string, name string) bool {
	v, _ := DeployLabel(labels, name)
	return v == "true"
}

// AskedBy reports whether a node's labels ask for the operand (Asks), and
// its DaemonSet selects the node by the label it Requires too.
func (o Operand) AskedBy(labels map[string]string) bool {
	return Asks(labels, o.Name) && (o.Requires == "" || labels[o.Requires] == "true")
}

// AskLabel reports whether a node label key is one of those whether a node
// asks for an operand depends on: the deploy labels, and CCCapable, which
// cc-manager's DaemonSet also selects in releases before v26.3. A judge of
// the labels alone (pkg/judge) reads no other.
func AskLabel(key string) bool { return IsDeployLabel(key) || key == CCCapable }

// CCCapable is the label the operator's labeller sets on nodes whose GPUs
// can run confidential computing.
const CCCapable = "nvidia.com/cc.capable"

// IsDeployLabel reports whether a node label key is a deploy label.
func IsDeployLabel(key string) bool { return strings.HasPrefix(key, LabelPrefix) }

// DaemonSets lists every DaemonSet whose pods count as the operand.
func (o Operand) DaemonSets() []string { return append([]string{o.DaemonSet}, o.Variants...) }

// RunBy reports whether pods of the named DaemonSet count as the operand.
func (o Operand) RunBy(daemonSet string) bool {
	return daemonSet == o.DaemonSet || slices.Contains(o.Variants, daemonSet)
}

// Roster is a list of operands in the order of every listing (roster,
// audit, matrix).
type Roster []Operand

// Lab is the lab's roster. Code that means one of its operands names it
// (Lab.Driver()), never its place in the listing.
var Lab = Roster{
	{Name: "driver", DaemonSet: "nvidia-driver-daemonset", Column: "driver", Manifest: "driver-ds.yaml"},
	{Name: "container-toolkit", DaemonSet: "nvidia-container-toolkit-daemonset", Column: "toolkit", Manifest: "toolkit-ds.yaml"},
	{Name: "device-plugin", DaemonSet: "nvidia-device-plugin-daemonset", Column: "device-plugin", Manifest: "device-plugin-ds.yaml"},
	{Name: "gpu-feature-discovery", DaemonSet: "gpu-feature-discovery", Column: "gfd", Manifest: "gfd-ds.yaml"},
	{Name: "dcgm-exporter", DaemonSet: "nvidia-dcgm-exporter", Column: "dcgm", Manifest: "dcgm-ds.yaml"},
}

// Names of the operands the order rules refer to.
const (
	Driver           = "driver"
	ContainerToolkit = "container-toolkit"
	DevicePlugin     = "device-plugin"
)

// Driver is the roster's driver.
func (r Roster) Driver() Operand { return r.named(Driver) }

// ContainerToolkit is the roster's container toolkit.
func (r Roster) ContainerToolkit() Operand { return r.named(ContainerToolkit) }

// DevicePlugin is the roster's device plugin.
func (r Roster) DevicePlugin() Operand { return r.named(DevicePlugin) }

// GPUFeatureDiscovery is the roster's GPU Feature Discovery.
func (r Roster) GPUFeatureDiscovery() Operand { return r.named(GPUFeatureDiscovery) }

// DCGMExporter is the roster's DCGM exporter.
func (r Roster) DCGMExporter() Operand { return r.named(DCGMExporter) }

// named panics when the roster lacks the operand: the accessors name the
// lab's five, which every catalog roster (Lab, Real) holds.
func (r Roster) named(name string) Operand {
	o, err := Lookup(r, name)
	if err != nil {
		panic(err)
	}
	return o
}

// Lookup finds an operand of the roster by name.
func Lookup(roster []Operand, name string) (Operand, error) {
	for _, o := range roster {
		if o.Name == name {
			return o, nil
		}
	}
	return Operand{}, fmt.Errorf("unknown operand %q (known: %s)", name, Names(roster))
}

// Names lists the operand names of a roster, comma separated.
func Names(roster []Operand) string {
	s := ""
	for i, o := range roster {
		if i > 0 {
			s += ", "
		}
		s += o.Name
	}
	return s
}

// Rule says that an operand running on a node needs another one running there
// too.
type Rule struct {
	Operand string // the dependent operand, present on the node
	Needs   string // the operand it cannot work without
	Finding string // what the order check prints when Needs is absent
	// HostValues are values of Needs' deploy label that say the host itself
	// provides what Needs would: no pod is needed then.
	HostValues []string
}

// HostProvides reports whether a node's labels say the host provides what
// the rule's needed operand would.
func (r Rule) HostProvides(labels map[string]string) bool {
	v, ok := labels[LabelPrefix+r.Needs]
	return ok && slices.Contains(r.HostValues, v)
}

// Excused reports whether the rule cannot be broken on a node although its
// needed operand (need, from the roster) has no pod there: the node's label
// says the host provides it, or the ClusterPolicy switches it off, so the
// hosts provide it. A helper's pause is no excuse: it pauses the dependent
// operands at the same time, and one still running is the hazard the rule
// is about.
func (r Rule) Excused(labels map[string]string, need Operand) bool {
	return r.HostProvides(labels) || need.Off != ""
}

// DeviceRule is the lab's order check: a device plugin advertises nvidia.com/gpu,
// but without the container toolkit no container can open the device.
var DeviceRule = Rule{Operand: DevicePlugin, Needs: ContainerToolkit, Finding: "device-plugin-without-toolkit"}

// JudgedLabel reports whether the judges read a node label of this key whatever
// the DaemonSets select on: the deploy labels and the operator's own labels the
// catalog names (a GPU's presence and count, the MIG strategy, the workload
// config, the driver upgrade's state, skip and pool, the helpers' progress, the
// sharing and MIG configs' labels: OfferLabel). A store may keep only these and
// the DaemonSets' selector keys (pkg/pipeline Labels): a real node's other
// hundred labels (NFD's, most of GFD's, the cloud's) are most of its size and
// never judged.
func JudgedLabel(key string) bool {
	switch key {
	case GPUPresent, GPUCountLabel, MIGStrategyLabel, WorkloadConfigLabel,
		UpgradeStateLabel, UpgradeSkipLabel, NVIDIADriverOwner:
		return true
	}
	for _, p := range Pauses {
		if key == p.StateLabel {
			return true
		}
	}
	return AskLabel(key) || OfferLabel(key) || IsNVSentinelCordonLabel(key)
}

// OperatorAccounts are the GPU Operator's service accounts that may write
// nodes (NVIDIA/gpu-operator, deployments/gpu-operator and assets/state-*,
// whose ClusterRoles grant patch or update on nodes): the operator, the
// driver manager (it runs as the driver's account) and the MIG, vGPU, VFIO,
// CC and DRA helpers. They pause and restore deploy labels on purpose and
// must not be held up half-way.
var OperatorAccounts = []string{
	"gpu-operator", "nvidia-driver", "nvidia-mig-manager", "nvidia-vgpu-manager",
	"nvidia-vgpu-device-manager", "nvidia-vfio-manager", "nvidia-cc-manager", "nvidia-dra-driver-kubeletplugin",
}
