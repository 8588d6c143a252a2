package read

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

const pauseValue = "paused-for-driver-upgrade"

func pausedLabel(_, v string) bool { return v == pauseValue }

// gpuNode is testdata/node.json grown to a real GPU node's size: NFD's
// feature labels and their managedFields entry, the kubelet's status entry;
// with paused, the driver manager has paused two operands.
func gpuNode(tb testing.TB, paused bool) *corev1.Node {
	tb.Helper()
	data, err := os.ReadFile("testdata/node.json")
	if err != nil {
		tb.Fatal(err)
	}
	var n corev1.Node
	if err := json.Unmarshal(data, &n); err != nil {
		tb.Fatal(err)
	}
	at := func(min int) *metav1.Time {
		t := metav1.NewTime(time.Date(2026, 12, 1, 10, min, 0, 0, time.UTC)) // after node.json's own entries
		return &t
	}
	owns := func(keys ...string) *metav1.FieldsV1 {
		f := map[string]any{}
		for _, k := range keys {
			f["f:"+k] = map[string]any{}
		}
		raw, _ := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:labels": f}})
		return &metav1.FieldsV1{Raw: raw}
	}
	var nfd []string
	for i := range 80 {
		k := fmt.Sprintf("feature.node.kubernetes.io/cpu-cpuid.F%02d", i)
		n.Labels[k] = "true"
		nfd = append(nfd, k)
	}
	n.ManagedFields = append(n.ManagedFields,
		metav1.ManagedFieldsEntry{Manager: "nfd-master", Operation: "Update", APIVersion: "v1", Time: at(1), FieldsType: "FieldsV1", FieldsV1: owns(nfd...)},
		metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: "Update", APIVersion: "v1", Time: at(2), FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:allocatable":{"f:cpu":{},"f:memory":{},"f:nvidia.com/gpu":{}},"f:capacity":{"f:cpu":{},"f:memory":{},"f:nvidia.com/gpu":{}},` +
				`"f:conditions":{"k:{\"type\":\"DiskPressure\"}":{"f:lastHeartbeatTime":{},"f:status":{}},"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{},"f:status":{}},` +
				`"k:{\"type\":\"PIDPressure\"}":{"f:lastHeartbeatTime":{},"f:status":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{},"f:message":{},"f:reason":{},"f:status":{}}},` +
				`"f:images":{},"f:nodeInfo":{"f:bootID":{},"f:kernelVersion":{},"f:kubeletVersion":{},"f:machineID":{},"f:osImage":{},"f:systemUUID":{}}}}`)}},
	)
	if paused {
		keys := []string{"nvidia.com/gpu.deploy.container-toolkit", "nvidia.com/gpu.deploy.device-plugin"}
		for _, k := range keys {
			n.Labels[k] = pauseValue
		}
		n.ManagedFields = append(n.ManagedFields, metav1.ManagedFieldsEntry{Manager: "driver-manager", Operation: "Update", APIVersion: "v1", Time: at(7), FieldsType: "FieldsV1", FieldsV1: owns(keys...)})
	}
	return &n
}

// nodePage is a protobuf NodeList body of n copies of a GPU node.
func nodePage(tb testing.TB, n int, paused bool) []byte {
	tb.Helper()
	node := gpuNode(tb, paused)
	list := &corev1.NodeList{}
	for i := range n {
		c := node.DeepCopy()
		c.Name = fmt.Sprintf("gpu-node-%d", i)
		list.Items = append(list.Items, *c)
	}
	return protobufBody(tb, list)
}

// decodeNodes reads a node page as Snapshot does.
func decodeNodes(tb testing.TB, body []byte, pick func(k, v string) bool) []snapshot.Node {
	var nodes []snapshot.Node
	var n corev1.Node
	_, err := eachListItem(reader(body), nodeFields, nil, func(item, whole []byte) error {
		reuseNode(&n) // as the read does
		if err := n.Unmarshal(item); err != nil {
			return err
		}
		node := snapshot.NodeFrom(&n)
		if err := trace(&node, &n, whole, pick); err != nil {
			return err
		}
		nodes = append(nodes, node)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return nodes
}

// Tracing reads the writer of a paused label from the protobuf bytes as it
// would from the whole decoded node, and leaves other nodes alone.
func TestTrace(t *testing.T) {
	full := gpuNode(t, true)
	want := snapshot.LabelChangesFrom(full.ManagedFields, []string{"nvidia.com/gpu.deploy.container-toolkit", "nvidia.com/gpu.deploy.device-plugin"})
	if len(want) != 2 || want["nvidia.com/gpu.deploy.device-plugin"].Manager != "driver-manager" {
		t.Fatalf("reference: %v", want)
	}
	got := decodeNodes(t, nodePage(t, 2, true), pausedLabel)
	if len(got) != 2 || !maps.Equal(got[1].LabelChanges, want) {
		t.Errorf("traced from protobuf: %v, want %v", got[1].LabelChanges, want)
	}
	node := snapshot.NodeFrom(full)
	if err := trace(&node, full, nil, pausedLabel); err != nil || !maps.Equal(node.LabelChanges, want) {
		t.Errorf("traced from a whole node: %v, %v; want %v", node.LabelChanges, err, want)
	}
	if got := decodeNodes(t, nodePage(t, 1, false), pausedLabel); got[0].LabelChanges != nil {
		t.Errorf("a node without paused labels: %v, want none", got[0].LabelChanges)
	}
}

// BenchmarkDecodeNodePage measures what tracing costs on a page of 5,000 GPU
// nodes: nothing traced (the baseline), tracing on a fleet where no label is
// paused, and on one where every node is paused (the worst case):
//
//	go test ./pkg/snapshot/read -run '^$' -bench DecodeNodePage -count 6 | benchstat -col /trace -
func BenchmarkDecodeNodePage(b *testing.B) {
	healthy, upgrading := nodePage(b, 5000, false), nodePage(b, 5000, true)
	for _, tc := range []struct {
		name string
		body []byte
		pick func(k, v string) bool
	}{
		{"trace=off", healthy, nil},
		{"trace=none-paused", healthy, pausedLabel},
		{"trace=all-paused", upgrading, pausedLabel},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				decodeNodes(b, tc.body, tc.pick)
			}
		})
	}
}

// A node decoded into the storage of the one before (reuseNode) has none of
// its resources, conditions, labels or taints: a node without GPUs, not
// Ready, then a GPU node that is, then one with no status at all.
func TestNodesDecodedOneIntoAnother(t *testing.T) {
	gpu := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Labels: map[string]string{"nvidia.com/gpu.present": "true"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("7")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		}}
	cpu := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}, Status: corev1.NodeStatus{
		Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}},
	}}
	bare := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	got := decodeNodes(t, protobufBody(t, &corev1.NodeList{Items: []corev1.Node{cpu, gpu, bare}}), nil)
	want := []snapshot.Node{snapshot.NodeFrom(&cpu), snapshot.NodeFrom(&gpu), snapshot.NodeFrom(&bare)}
	if len(got) != len(want) {
		t.Fatalf("decoded %d nodes, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("node %s decoded as %+v, want %+v", want[i].Name, got[i], want[i])
		}
	}
}
