package discover

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Choice says which roster to judge with.
type Choice int

const (
	// Auto discovers the operands on a GPU Operator install (see Install)
	// and keeps the lab's five elsewhere.
	Auto     Choice = iota
	Lab             // the lab's five, always
	Discover        // the operands of the namespace's DaemonSets, always
)

// Picked is the roster to judge with, and what to tell the user about it.
type Picked struct {
	Roster []operand.Operand
	Notes  []string
}

// For picks the roster as choice says and switches off the operands the
// namespace's ClusterPolicy switches off (Operand.Off).
func For(s *snapshot.Snapshot, choice Choice) Picked {
	var r Picked
	discover := choice == Discover
	if choice == Auto {
		if why := Install(s); why != "" {
			discover = true
			r.Notes = append(r.Notes, "judging the operands of the namespace's DaemonSets: "+why+" (--discover=false for the lab's five)")
		}
	}
	r.Roster = operand.Lab
	if discover {
		r.Roster = Roster(s.DaemonSets)
	}
	p := s.Policy
	if p != nil && p.Namespace != "" && p.Namespace != s.Namespace {
		r.Notes = append(r.Notes, fmt.Sprintf("ClusterPolicy %s manages namespace %s, not %s: its switches are not applied", p.Name, p.Namespace, s.Namespace))
		p = nil
	}
	if p != nil {
		r.Roster = slices.Clone(r.Roster)
		for i := range r.Roster {
			if why := off(r.Roster[i].Name, p, s.NVIDIADrivers); why != "" {
				r.Roster[i].Off = "ClusterPolicy " + p.Name + ": " + why
			}
		}
	}
	return r
}

// Install says why the snapshot is of a GPU Operator install, or "" if it
// is not: a ClusterPolicy for the namespace, or a DaemonSet there that the
// operator renders (labelled managed-by=gpu-operator, or controlled by one
// of its nvidia.com objects: ClusterPolicy, NVIDIADriver, GPUCluster).
func Install(s *snapshot.Snapshot) string {
	if p := s.Policy; p != nil && (p.Namespace == "" || p.Namespace == s.Namespace) {
		return "ClusterPolicy " + p.Name + " renders them"
	}
	for _, d := range s.DaemonSets {
		if d.Labels[operand.ManagedByLabel] == "gpu-operator" {
			return "DaemonSet " + d.Name + " is labelled " + operand.ManagedByLabel + "=gpu-operator"
		}
		if strings.HasSuffix(d.Controller, ".nvidia.com") {
			return "DaemonSet " + d.Name + " is controlled by a " + d.Controller
		}
	}
	return ""
}

// off says why the ClusterPolicy switches the named operand off, or "" if
// it does not (or has no say over it).
func off(name string, p *snapshot.ClusterPolicy, drivers []snapshot.NVIDIADriver) string {
	sw, ok := operand.Switches[name]
	switch {
	case !ok:
		return ""
	case sw.Never:
		return "the operator no longer renders " + name
	case p.NVIDIADriverCRD && (name == operand.Driver || name == operand.VGPUManager):
		// NVIDIADriver objects render these instead (gpu and vgpu drivers
		// select the driver label, vgpu-host-manager the vgpu-manager one).
		// Unread ones (nil) may render anything.
		if drivers == nil || slices.ContainsFunc(drivers, func(d snapshot.NVIDIADriver) bool {
			return (d.DriverType == "vgpu-host-manager") == (name == operand.VGPUManager)
		}) {
			return ""
		}
		return "spec.driver.useNvidiaDriverCRD is true and no NVIDIADriver renders a " + name
	case sw.Sandbox && !p.Enabled["sandboxWorkloads"]:
		return "spec.sandboxWorkloads.enabled is false"
	case sw.Mode != "" && sandboxMode(p) != sw.Mode:
		return "spec.sandboxWorkloads.mode is " + sandboxMode(p)
	}
	enabled, set := p.Enabled[sw.Field]
	switch {
	case !set && !sw.Default:
		return "spec." + sw.Field + ".enabled is not set (off by default)"
	case set && !enabled:
		return "spec." + sw.Field + ".enabled is false"
	}
	return ""
}

func sandboxMode(p *snapshot.ClusterPolicy) string {
	if p.SandboxMode == "" {
		return "kubevirt"
	}
	return p.SandboxMode
}
