package pipeline_test

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// nfdPCI is a label Node Feature Discovery sets and a real driver
// DaemonSet's affinity reads.
const nfdPCI = "feature.node.kubernetes.io/pci-10de.present"

// dressed gives each node of a random cluster a real node's hundred labels
// (its own win), some of the operator's with odd values, and makes one
// DaemonSet select on an NFD label by nodeSelector and another by
// affinity, so that the reasons read labels beyond the catalog's.
func dressed(r *rand.Rand) *snapshot.Snapshot {
	s := randomCluster(r)
	for i := range s.Nodes {
		n := &corev1.Node{}
		fleettest.DressNode(n, i)
		if r.IntN(3) == 0 {
			delete(n.Labels, nfdPCI)
		}
		extra := map[string]string{operand.GPUPresent: []string{"true", "false"}[r.IntN(2)],
			operand.UpgradeStateLabel:   []string{"upgrade-done", "upgrade-failed", "pod-restart-required"}[r.IntN(3)],
			operand.MIGStrategyLabel:    []string{"none", "single", "mixed"}[r.IntN(3)],
			operand.WorkloadConfigLabel: []string{"container", "vm-passthrough", "vm-vgpu"}[r.IntN(3)]}
		maps.Copy(n.Labels, extra)
		maps.Copy(n.Labels, s.Nodes[i].Labels)
		s.Nodes[i].Labels = n.Labels
		// Fewer GPUs advertised than GFD counts, where health compares.
		s.Nodes[i].Devices = map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: int64(4 + r.IntN(5)), Allocatable: 4}}
	}
	if r.IntN(2) == 0 { // a policy's labeller: deploy labels without a GPU warn; sandbox configs read
		s.Policy = &snapshot.ClusterPolicy{Name: "cluster-policy", Namespace: s.Namespace, Enabled: map[string]bool{"sandboxWorkloads": r.IntN(2) == 0},
			UpgradePolicy: &snapshot.UpgradePolicy{AutoUpgrade: true, MaxParallelUpgrades: 1}}
	}
	for i := range s.Pods {
		s.Pods[i].Health.Ready = r.IntN(4) > 0 // health walks the chain up to the devices
	}
	for i := range s.DaemonSets {
		switch i % 3 {
		case 0:
			s.DaemonSets[i].NodeSelector = maps.Clone(s.DaemonSets[i].NodeSelector)
			s.DaemonSets[i].NodeSelector[nfdPCI] = "true"
		case 1:
			s.DaemonSets[i].Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "feature.node.kubernetes.io/system-os_release.ID", Operator: corev1.NodeSelectorOpIn, Values: []string{"ubuntu"}}},
				}}}}}
		}
	}
	return s
}

func trimmed(s *snapshot.Snapshot, keep func(string) bool) *snapshot.Snapshot {
	out := *s
	out.Nodes = nil
	for _, n := range s.Nodes {
		n.Labels = maps.Collect(func(yield func(string, string) bool) {
			for k, v := range n.Labels {
				if keep(k) && !yield(k, v) {
					return
				}
			}
		})
		out.Nodes = append(out.Nodes, n)
	}
	return &out
}

// TestLabelsReadAreWhatTheVerdictsRead is what lets the live store keep
// only LabelsRead's labels: with every judgement on, the nodes with only
// those judge as the nodes with all their labels, reasons, health, the
// rollout and the grouping included.
func TestLabelsReadAreWhatTheVerdictsRead(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sets := []pipeline.Options{
		{},
		{Explain: true, StuckAfter: time.Hour},
		{Roster: pipeline.DiscoverRoster, AllRules: true, Explain: true, Health: true, Upgrades: true, StuckAfter: time.Hour, GroupBy: fleettest.GroupBy},
	}
	for seed := range uint64(100) {
		s := dressed(rand.New(rand.NewPCG(seed, 3)))
		for _, o := range sets {
			o.Namespace = s.Namespace
			p := pipeline.Decide(s, o)
			whole, err := p.Judge(s, now)
			if err != nil {
				t.Fatal(err)
			}
			labels := o.LabelsRead(s.DaemonSets)
			got, err := p.Judge(trimmed(s, labels.Keep), now)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Nodes, whole.Nodes) || !reflect.DeepEqual(got.Fleet, whole.Fleet) || !reflect.DeepEqual(got.Rollout, whole.Rollout) {
				t.Fatalf("seed %d, options %+v: the nodes with only the labels read judge otherwise:\n got %+v\nwant %+v", seed, o, got.Nodes, whole.Nodes)
			}
		}
	}
}

// The check above would see a label the reasons need and the store drops:
// without the DaemonSets' selector keys, some node's reason changes.
func TestLabelsReadNeedTheSelectorKeys(t *testing.T) {
	o := pipeline.Options{Namespace: "gpu-operator", Explain: true}
	for seed := range uint64(100) {
		s := dressed(rand.New(rand.NewPCG(seed, 3)))
		p := pipeline.Decide(s, o)
		whole, _ := p.Judge(s, time.Time{})
		blind, _ := p.Judge(trimmed(s, o.LabelsRead(nil).Keep), time.Time{})
		if !reflect.DeepEqual(blind.Nodes, whole.Nodes) {
			return
		}
	}
	t.Fatal("no random cluster needs a DaemonSet's selector label: the agreement test proves nothing about them")
}

func TestLabelsCover(t *testing.T) {
	ds := []snapshot.DaemonSet{{Name: "nvidia-driver-daemonset", NodeSelector: map[string]string{nfdPCI: "true"}}}
	deployOnly, none, some := pipeline.Options{}.LabelsRead(ds), pipeline.Options{Explain: true}.LabelsRead(nil), pipeline.Options{Explain: true}.LabelsRead(ds)
	for _, c := range []struct {
		name     string
		l, m     pipeline.Labels
		want     bool
		keepsPCI bool
	}{
		{"all labels cover the deploy labels", none, deployOnly, true, false},
		{"the deploy labels do not cover the reasons'", deployOnly, none, false, false},
		{"a new selector key is not covered", none, some, false, false},
		{"the selector keys cover fewer", some, none, true, true},
	} {
		if got := c.l.Covers(c.m); got != c.want {
			t.Errorf("%s: Covers = %v", c.name, got)
		}
		if got := c.l.Keep(nfdPCI); got != c.keepsPCI {
			t.Errorf("%s: Keep(%s) = %v", c.name, nfdPCI, got)
		}
	}
	if !some.Keep(operand.GPUPresent) || deployOnly.Keep(operand.GPUPresent) || some.Keep("feature.node.kubernetes.io/kernel-version.full") {
		t.Error("catalog labels: kept only by a read beyond the deploy labels; NFD's only when selected on")
	}
}
