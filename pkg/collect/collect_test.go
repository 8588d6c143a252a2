package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/collect"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/workload"
)

// cluster is one object of every kind a judge reads, each read by another
// path: the operands and their Warning, the ClusterPolicy naming a sharing
// and a MIG ConfigMap, with neither an operator Deployment nor a chart
// label, so that its CRD's schema tells the release; the DRA driver's
// slice and another driver's; a GPU pod of a Deployment with its claim, a
// pod the kubelet refused at admission and one that asks no GPU, in
// another namespace; the upgrade controller's Event on a node. Beside
// them what no judge reads: a ConfigMap the policy does not name, a
// Secret.
const cluster = `
- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu.deploy.device-plugin: "true", nvidia.com/gpu.deploy.dra-driver: "true", nvidia.com/gpu.product: H100}},
   status: {capacity: {nvidia.com/gpu: "8"}, allocatable: {nvidia.com/gpu: "8"}, conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: nvidia-device-plugin-daemonset, namespace: gpu-operator, uid: ds1},
   spec: {selector: {matchLabels: {app: nvidia-device-plugin-daemonset}}, template: {metadata: {labels: {app: nvidia-device-plugin-daemonset}},
     spec: {nodeSelector: {nvidia.com/gpu.deploy.device-plugin: "true"}, containers: [{name: p, image: i, env: [{name: TOKEN, value: secret}]}]}}},
   status: {desiredNumberScheduled: 1, currentNumberScheduled: 1, numberReady: 0}}
- {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: nvidia-dra-driver-gpu-kubelet-plugin, namespace: gpu-operator, uid: ds2},
   spec: {selector: {matchLabels: {app: dra}}, template: {metadata: {labels: {app: dra}},
     spec: {nodeSelector: {nvidia.com/gpu.deploy.dra-driver: "true"}, containers: [{name: p, image: i}]}}},
   status: {desiredNumberScheduled: 1}}
- {apiVersion: apps/v1, kind: ControllerRevision, metadata: {name: nvidia-device-plugin-daemonset-5d4f, namespace: gpu-operator,
   labels: {app: nvidia-device-plugin-daemonset}, ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-device-plugin-daemonset, uid: ds1, controller: true}]},
   revision: 1, data: {spec: {template: {}}}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: gpu-operator}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: w, image: i}]}}}}
- {apiVersion: v1, kind: Pod, metadata: {name: nvidia-device-plugin-daemonset-abcde, namespace: gpu-operator, labels: {app: nvidia-device-plugin-daemonset},
   ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-device-plugin-daemonset, uid: ds1, controller: true}]},
   spec: {nodeName: n1, containers: [{name: p, image: i}]}, status: {phase: Pending, containerStatuses: [{name: p, ready: false, state: {waiting: {reason: ContainerCreating}}}]}}
- {apiVersion: v1, kind: Event, metadata: {name: e1, namespace: gpu-operator}, type: Warning, reason: FailedCreatePodSandBox, count: 3, message: no runtime handler nvidia,
   involvedObject: {kind: Pod, namespace: gpu-operator, name: nvidia-device-plugin-daemonset-abcde}, lastTimestamp: "2026-12-07T11:59:00Z"}
- {apiVersion: v1, kind: Event, metadata: {name: e2, namespace: gpu-operator}, type: Normal, reason: Pulled, involvedObject: {kind: Pod, namespace: gpu-operator, name: nvidia-device-plugin-daemonset-abcde}}
- {apiVersion: v1, kind: Event, metadata: {name: e3, namespace: default}, type: Normal, reason: GPUDriverUpgrade, message: "Successfully updated node state label to upgrade-required",
   involvedObject: {kind: Node, name: n1}, lastTimestamp: "2026-12-07T11:00:00Z"}
- {apiVersion: v1, kind: Event, metadata: {name: e4, namespace: team}, type: Warning, reason: FailedScheduling, message: "0/2 nodes are available",
   involvedObject: {kind: Pod, namespace: team, name: train-7f9-x1}, lastTimestamp: "2026-12-07T11:58:00Z"}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: time-slicing-config, namespace: gpu-operator}, data: {any: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: custom-mig, namespace: gpu-operator}, data: {config.yaml: "version: v1\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n"}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: unrelated, namespace: gpu-operator}, data: {a: b}}
- {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: gpu-operator}}
- {apiVersion: nvidia.com/v1, kind: ClusterPolicy, metadata: {name: cluster-policy},
   spec: {devicePlugin: {config: {name: time-slicing-config, default: any}}, migManager: {config: {name: custom-mig}}, driver: {enabled: true}}}
- {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: clusterpolicies.nvidia.com},
   spec: {group: nvidia.com, names: {kind: ClusterPolicy, plural: clusterpolicies}, scope: Cluster, versions: [{name: v1, served: true, storage: true,
     schema: {openAPIV3Schema: {type: object, description: the policy, properties: {spec: {type: object, properties: {driver: {type: object, description: the driver,
       properties: {kernelModuleType: {type: string, description: open or proprietary}}}}}}}}}]}}
- {apiVersion: nvidia.com/v1alpha1, kind: NVIDIADriver, metadata: {name: default}, spec: {driverType: gpu, nodeSelector: {nvidia.com/gpu.present: "true"}}}
- {apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {name: n1-gpu}, spec: {driver: gpu.nvidia.com, nodeName: n1, pool: {name: n1, generation: 1, resourceSliceCount: 1},
   devices: [{name: gpu-0}]}}
- {apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {name: n1-nic}, spec: {driver: nic.example.com, nodeName: n1, pool: {name: n1, generation: 1, resourceSliceCount: 1}, devices: [{name: nic-0}]}}
- {apiVersion: resource.k8s.io/v1, kind: DeviceClass, metadata: {name: gpu.nvidia.com}, spec: {selectors: [{cel: {expression: "device.driver == 'gpu.nvidia.com'"}}]}}
- {apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: one-gpu, namespace: team},
   spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
- {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: train-7f9, namespace: team, ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: train, uid: d1, controller: true}]},
   spec: {selector: {matchLabels: {app: train}}}}
- {apiVersion: v1, kind: Pod, metadata: {name: train-7f9-x1, namespace: team, creationTimestamp: "2026-12-07T11:00:00Z", labels: {app: train},
   ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: train-7f9, uid: r1, controller: true}]},
   spec: {containers: [{name: t, image: i, resources: {limits: {nvidia.com/gpu: "8"}}}], resourceClaims: [{name: gpu, resourceClaimName: one-gpu}]},
   status: {phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, message: "0/2 nodes are available"}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: refused-1, namespace: team}, spec: {nodeName: n1, containers: [{name: t, image: i, resources: {limits: {nvidia.com/gpu: "1"}}}]},
   status: {phase: Failed, reason: UnexpectedAdmissionError, message: "Allocate failed due to no healthy devices present", startTime: "2026-12-07T11:30:00Z"}}
- {apiVersion: v1, kind: Pod, metadata: {name: infer-1, namespace: team}, spec: {nodeName: n1, containers: [{name: i, image: i, resources: {limits: {nvidia.com/gpu: "2"}}}]}, status: {phase: Running}}
- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: team}, spec: {nodeName: n2, containers: [{name: w, image: i}]}, status: {phase: Running}}
`

// served serves a bundle of the header and items.
func served[T any](t *testing.T, h *bundle.Header, items []T) (*bundle.Server, kubernetes.Interface) {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.Write(&buf, false, h, items); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load("-", &buf)
	if err != nil {
		t.Fatal(err)
	}
	s := bundle.NewServer(b)
	c, err := kube.InProcess(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// Collect takes everything a judge reads: every judge's read of the
// collected bundle is the read of the cluster it was collected from, and
// neither asks for anything the bundle cannot answer. The cluster is a
// bundle whose header says everything was read (the fake API server that
// --from serves): a reader that asks for a kind pkg/bundle does not know
// fails here as missing, and so does a read collect does not make, or
// makes narrower than the reader's.
func TestCollectHoldsWhatTheJudgesRead(t *testing.T) {
	var items []bundle.Object
	if err := yaml.Unmarshal([]byte(cluster), &items); err != nil {
		t.Fatal(err)
	}
	all := &bundle.Header{APIVersion: bundle.HeaderAPIVersion, Kind: bundle.HeaderKind, Namespace: "gpu-operator"}
	for _, k := range bundle.Kinds {
		all.Read = append(all.Read, bundle.Read{Resource: k.Qualified()})
	}
	liveServer, live := served(t, all, items)
	ctx := context.Background()
	h, collected, err := collect.Collect(ctx, live, collect.Options{Namespace: "gpu-operator"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.NotRead) > 0 {
		t.Errorf("not read: %+v", h.NotRead)
	}
	fromServer, from := served(t, h, collected)

	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	o := pipeline.Options{Namespace: "gpu-operator", Roster: pipeline.DiscoverRoster, StuckAfter: 30 * time.Minute, Now: now}
	every := o
	every.Health, every.Upgrades, every.Explain, every.Capacity, every.GroupBy = true, true, true, true, "nvidia.com/gpu.product"
	oneNode := o
	oneNode.Node, oneNode.AllRules, oneNode.Explain = "n1", true, true
	pod, _ := workload.ParseTarget("train-7f9-x1")
	deployment, _ := workload.ParseTarget("deployment/train")
	noGPU, _ := workload.ParseTarget("web-1")
	// each of the judges' reads (the audit's, health's, order-check's, the
	// workload's), and what each is known by in the result
	reads := []struct {
		name string
		read func(kubernetes.Interface) (any, error)
		says []string
	}{
		// the snapshot of every option, and the GPU pods: each object above
		// is in one of them
		{"snapshot", func(c kubernetes.Interface) (any, error) {
			return read.Snapshot(ctx, c, "gpu-operator", every.ReadOptions())
		},
			[]string{"FailedCreatePodSandBox", "kernelModuleType", "refused-1", `"Replicas":4`, "all-disabled", "upgrade-required", `"SliceCount":1`, "5d4f"}},
		{"gpu pods", func(c kubernetes.Interface) (any, error) { return read.GPUPods(ctx, c, read.WorkloadOptions{}) },
			[]string{"train-7f9-x1", "one-gpu", "refused-1", "gpu.nvidia.com"}},
		{"audit", func(c kubernetes.Interface) (any, error) { return pipeline.Run(ctx, c, o) }, nil},
		{"health, upgrades, summary", func(c kubernetes.Interface) (any, error) { return pipeline.Run(ctx, c, every) },
			[]string{"FailedCreatePodSandBox", "judged as v25.3"}},
		{"order-check n1", func(c kubernetes.Interface) (any, error) { return pipeline.Run(ctx, c, oneNode) }, nil},
		{"why pod", func(c kubernetes.Interface) (any, error) { return pipeline.Why(ctx, c, every, "team", pod) }, []string{"train-7f9-x1"}},
		{"why deployment", func(c kubernetes.Interface) (any, error) { return pipeline.Why(ctx, c, every, "team", deployment) }, []string{"train-7f9-x1"}},
		{"why a pod that asks no GPU", func(c kubernetes.Interface) (any, error) { return pipeline.Why(ctx, c, every, "team", noGPU) },
			[]string{`"team/web-1","why":"asks no GPU"`}},
		{"warnings", func(c kubernetes.Interface) (any, error) {
			w, notes, err := read.Warnings(ctx, c, "")
			return []any{w, notes}, err
		}, []string{"FailedScheduling", "FailedCreatePodSandBox"}},
		{"pods", func(c kubernetes.Interface) (any, error) { return pipeline.Pods(ctx, c, every, "", "") }, []string{"infer-1"}},
		{"capacity", func(c kubernetes.Interface) (any, error) { return pipeline.Capacity(ctx, c, every) }, []string{`"allocated":2`}},
		{"holders", func(c kubernetes.Interface) (any, error) {
			h, notes, err := read.Holders(ctx, c.CoreV1().RESTClient(), []string{"n1"}, 0)
			return []any{h, notes}, err
		}, []string{"infer-1"}},
	}
	for _, r := range reads {
		want, wantErr := r.read(live)
		got, gotErr := r.read(from)
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if !bytes.Equal(w, g) || (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: from the bundle %v\n%s\nfrom the cluster %v\n%s", r.name, gotErr, g, wantErr, w)
		}
		for _, s := range r.says {
			if !bytes.Contains(w, []byte(s)) {
				t.Errorf("%s: the cluster's read says no %q (the fixture no longer tests it):\n%s", r.name, s, w)
			}
		}
	}
	if m := liveServer.Missing(); len(m) > 0 {
		t.Errorf("a judge asks for what no bundle holds: %q", m)
	}
	if m := fromServer.Missing(); len(m) > 0 {
		t.Errorf("a judge asks for what collect does not collect: %q", m)
	}
	// and no more than the judges read: of a pod that asks no GPU, no
	// container
	out, _ := json.Marshal(collected)
	for _, never := range []string{"unrelated", `"Secret"`, "nic.example.com", "Pulled", "TOKEN", "open or proprietary"} {
		if strings.Contains(string(out), never) {
			t.Errorf("the bundle holds %s", never)
		}
	}
	for _, o := range collected {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "web-1" && (len(p.Spec.Containers) > 0 || p.Spec.NodeName != "n2" || p.Status.Phase != corev1.PodRunning) {
			t.Errorf("the pod that asks no GPU is kept as %+v, want its name, node and phase alone", p)
		}
	}
}
