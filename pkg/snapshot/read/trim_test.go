package read

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// filler fills API objects at random, with valid quantities (their internals
// are unexported and the protobuf encoder needs them consistent).
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
		},
	)
}

// semantic compares API values as equality.Semantic does, and times by the
// instant they name (PodHealth keeps plain times).
var semantic = func() conversion.Equalities {
	eq := equality.Semantic.Copy()
	if err := eq.AddFunc(func(a, b time.Time) bool { return a.Equal(b) }); err != nil {
		panic(err)
	}
	return eq
}()

// TestTrimKeepsWhatConversionReads proves, over random pods and nodes, that
// converting the trimmed decode gives what converting the whole object gives:
// a field PodFrom or NodeFrom starts reading without a keep entry fails here.
func TestTrimKeepsWhatConversionReads(t *testing.T) {
	for seed := range int64(300) {
		f := filler(seed)
		var pod corev1.Pod
		f.Fill(&pod)
		if seed%2 == 0 { // make sure the branches that matter are taken
			pod.OwnerReferences = append(pod.OwnerReferences, metav1.OwnerReference{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: new(bool),
			})
			*pod.OwnerReferences[len(pod.OwnerReferences)-1].Controller = true
			pod.Spec.Affinity = targetAffinity("node-a")
			if seed%4 == 0 { // not bound yet: its target is read from the affinity
				pod.Spec.NodeName = ""
			}
			pod.Status.Phase = corev1.PodPending
			pod.Status.Reason, pod.Status.Message = "", ""
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "no fit"})
		}
		if seed%3 == 0 {
			pod.Status.Conditions, pod.Status.Reason, pod.Status.Message = nil, "", ""
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "pull"}},
			})
		}
		if seed%3 == 1 { // a pod initialising or initialised, and one crash-looping
			initialized := corev1.ConditionFalse
			if seed%2 == 0 {
				initialized = corev1.ConditionTrue
			}
			pod.Status.StartTime = &metav1.Time{Time: time.Unix(seed, 0)}
			pod.Status.Conditions = append(pod.Status.Conditions,
				corev1.PodCondition{Type: corev1.PodInitialized, Status: initialized},
				corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Unix(seed, 0)})
			pod.Status.InitContainerStatuses = append([]corev1.ContainerStatus{
				{Name: "done", Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}},
				{Name: "waits", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Unix(seed, 0)}}},
			}, pod.Status.InitContainerStatuses...)
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: "crash", RestartCount: int32(seed),
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}},
			})
		}
		var got corev1.Pod
		decodeTrimmed(t, &pod, &got, podFields, podLabels)
		if pod.Spec.NodeName != "" && got.Spec.Affinity != nil {
			t.Fatalf("seed %d: a bound pod's affinity was decoded", seed)
		}
		if p := snapshot.PodFrom(&got); seed%4 == 0 && p.DaemonSet == "ds" && p.Target != "node-a" {
			t.Fatalf("seed %d: an unbound DaemonSet pod's target was not read", seed)
		}
		if seed%3 == 1 && snapshot.PodFrom(&got).Health.Container == "" {
			t.Fatalf("seed %d: no worst container read", seed)
		}
		if want, have := snapshot.PodFrom(&pod), snapshot.PodFrom(&got); !semantic.DeepEqual(want, have) {
			t.Fatalf("seed %d: pod from trimmed bytes\n got %+v\nwant %+v", seed, have, want)
		}

		var node corev1.Node
		f.Fill(&node)
		if seed%2 == 0 {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
		}
		if seed%3 == 0 {
			if node.Status.Capacity == nil {
				node.Status.Capacity = corev1.ResourceList{}
			}
			if node.Status.Allocatable == nil {
				node.Status.Allocatable = corev1.ResourceList{}
			}
			node.Status.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(8, resource.DecimalSI)
			node.Status.Allocatable["nvidia.com/mig-1g.10gb"] = *resource.NewQuantity(seed, resource.DecimalSI)
		}
		// An upgrades read keeps a DaemonSet pod's template hash; every
		// read of whole nodes the upgrade controller's annotations (the
		// marks of who takes a node out of service).
		if seed%2 == 0 {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[operand.RevisionHashLabel] = "5f7d"
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			node.Annotations[operand.UpgradeValidationStart] = "1777636200"
		}
		var upgradePod corev1.Pod
		decodeTrimmed(t, &pod, &upgradePod, podFields, podLabels)
		if want, have := snapshot.PodFrom(&pod), snapshot.PodFrom(&upgradePod); !semantic.DeepEqual(want, have) || seed%2 == 0 && have.DaemonSet != "" && have.Revision != "5f7d" {
			t.Fatalf("seed %d: pod from upgrade-trimmed bytes\n got %+v\nwant %+v", seed, have, want)
		}
		var gotNode corev1.Node
		decodeTrimmed(t, &node, &gotNode, nodeFields, nil)
		if seed%3 == 0 && snapshot.NodeFrom(&gotNode).Devices["nvidia.com/gpu"].Capacity != 8 {
			t.Fatalf("seed %d: GPU capacity not read: %+v", seed, snapshot.NodeFrom(&gotNode).Devices)
		}
		// Nor is any other resource or condition decoded.
		for name := range gotNode.Status.Capacity {
			if !snapshot.IsDeviceResource(string(name)) {
				t.Fatalf("seed %d: resource %s decoded", seed, name)
			}
		}
		for _, c := range gotNode.Status.Conditions {
			if c.Type != corev1.NodeReady {
				t.Fatalf("seed %d: condition %s decoded", seed, c.Type)
			}
		}
		if want, have := snapshot.NodeFrom(&node), snapshot.NodeFrom(&gotNode); !semantic.DeepEqual(want, have) || seed%2 == 0 && have.Annotations[operand.UpgradeValidationStart] == "" {
			t.Fatalf("seed %d: node from trimmed bytes\n got %+v\nwant %+v", seed, have, want)
		}

		// A node's metadata alone, as the server sends it for
		// DeployLabelsOnly, with only the deploy labels decoded.
		if seed%2 == 1 {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[operand.LabelPrefix+"driver"] = "true"
		}
		meta := metav1.PartialObjectMetadata{ObjectMeta: node.ObjectMeta}
		var gotMeta metav1.PartialObjectMetadata
		decodeTrimmed(t, &meta, &gotMeta, metadataFields, operand.IsDeployLabel)
		want := snapshot.NodeFrom(&corev1.Node{ObjectMeta: node.ObjectMeta})
		want.Annotations = nil
		maps.DeleteFunc(want.Labels, func(k, _ string) bool { return !operand.IsDeployLabel(k) })
		if have := snapshot.NodeFrom(&corev1.Node{ObjectMeta: gotMeta.ObjectMeta}); !semantic.DeepEqual(want, have) || seed%2 == 1 && have.Labels[operand.LabelPrefix+"driver"] != "true" {
			t.Fatalf("seed %d: node from trimmed metadata\n got %+v\nwant %+v", seed, have, want)
		}
	}
}

func targetAffinity(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
}

type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func decodeTrimmed(t *testing.T, in, out protoMessage, keep fields, labels labelFilter) {
	t.Helper()
	if err := out.Unmarshal(trimmedBytes(t, in, keep, labels)); err != nil {
		t.Fatal(err)
	}
}

// trimmedBytes is in's protobuf encoding trimmed to keep and labels.
func trimmedBytes(t *testing.T, in protoMessage, keep fields, labels labelFilter) []byte {
	t.Helper()
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	trimmed, err := (&trimmer{labels: labels}).trim(nil, b, keep)
	if err != nil {
		t.Fatal(err)
	}
	return trimmed
}

// podPage is a protobuf PodList body of n copies of a real DaemonSet pod
// (testdata/pod.json, as a KWOK cluster serves it, managedFields and all).
func podPage(tb testing.TB, n int, cont string) []byte {
	tb.Helper()
	data, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		tb.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(data, &pod); err != nil {
		tb.Fatal(err)
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{Continue: cont}}
	for i := range n {
		p := pod.DeepCopy()
		p.Name = fmt.Sprintf("%s-%d", pod.Name, i)
		p.Spec.NodeName = fmt.Sprintf("node-%d", i)
		list.Items = append(list.Items, *p)
	}
	return protobufBody(tb, list)
}

// protobufBody encodes a core/v1 list as the API server sends it.
func protobufBody(tb testing.TB, list runtime.Object) []byte {
	tb.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		tb.Fatal("no protobuf serializer")
	}
	body, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), list)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

func reader(b []byte) *bufio.Reader { return bufio.NewReaderSize(bytes.NewReader(b), bodyBuffer) }

// TestEachListItemReadsAPage reads a page through a buffer its items fit in
// (each decoded where it lies) and through one they do not (each read out).
func TestEachListItemReadsAPage(t *testing.T) {
	body := podPage(t, 3, "next-page")
	for _, size := range []int{bodyBuffer, 16} {
		t.Run(fmt.Sprintf("buffer=%d", size), func(t *testing.T) {
			r := func(b []byte) *bufio.Reader { return bufio.NewReaderSize(bytes.NewReader(b), size) }
			var pods []snapshot.Pod
			var wholeNames []string
			cont, err := eachListItem(r(body), podFields, podLabels, func(b, whole []byte) error {
				var p, w corev1.Pod
				if err := p.Unmarshal(b); err != nil {
					return err
				}
				if err := w.Unmarshal(whole); err != nil {
					return err
				}
				pods = append(pods, snapshot.PodFrom(&p))
				wholeNames = append(wholeNames, w.Name+" "+w.Spec.Containers[0].Name)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if cont != "next-page" {
				t.Errorf("continue = %q, want next-page", cont)
			}
			if len(pods) != 3 || pods[2].Name != "gpu-feature-discovery-22bkd-2" || pods[2].Node != "node-2" ||
				pods[2].DaemonSet != "gpu-feature-discovery" || pods[2].Phase != corev1.PodRunning || pods[2].Target != "" {
				t.Fatalf("pods = %+v", pods)
			}
			if want := "gpu-feature-discovery-22bkd-1 gpu-feature-discovery"; len(wholeNames) != 3 || wholeNames[1] != want {
				t.Errorf("whole items %q, the second want %q", wholeNames, want)
			}
			if _, err := eachListItem(r([]byte(`{"kind":"PodList"}`)), podFields, podLabels, nil); err == nil {
				t.Error("a JSON body must be refused")
			}
			if _, err := eachListItem(r(body[:len(body)-7]), podFields, podLabels, func(_, _ []byte) error { return nil }); err == nil {
				t.Error("a truncated body must be refused")
			}
		})
	}
}

// BenchmarkDecodePodPage compares decoding one page of 2,000 pods whole (what
// a typed client does) with decoding it trimmed (what Read does):
//
//	go test ./pkg/snapshot -run '^$' -bench DecodePodPage -count 6 | benchstat -col /decode -
func BenchmarkDecodePodPage(b *testing.B) {
	body := podPage(b, 2000, "")
	b.Run("decode=typed", func(b *testing.B) {
		for b.Loop() {
			var list corev1.PodList
			if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &list); err != nil {
				b.Fatal(err)
			}
			pods := make([]snapshot.Pod, 0, len(list.Items))
			for i := range list.Items {
				pods = append(pods, snapshot.PodFrom(&list.Items[i]))
			}
		}
	})
	b.Run("decode=trimmed", func(b *testing.B) {
		for b.Loop() {
			var pods []snapshot.Pod
			var p corev1.Pod
			_, err := eachListItem(reader(body), podFields, podLabels, func(item, _ []byte) error {
				reusePod(&p) // as readList does
				if err := p.Unmarshal(item); err != nil {
					return err
				}
				pods = append(pods, snapshot.PodFrom(&p))
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A server that answers the metadata list in JSON is read as well.
func TestMetadataListAsJSON(t *testing.T) {
	list := metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{Continue: "next"},
	}
	for _, name := range []string{"a", "b"} {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"k": name}},
		})
	}
	body, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	cont, err := eachTypedItem(bytes.NewReader(body), &metav1.PartialObjectMetadataList{}, func(m *metav1.PartialObjectMetadata, _ []byte) error {
		got = append(got, m.Name+"="+m.Labels["k"])
		return nil
	})
	if err != nil || cont != "next" || fmt.Sprint(got) != "[a=a b=b]" {
		t.Errorf("got %v, continue %q, %v; want [a=a b=b], next", got, cont, err)
	}
}

// TestReusedPodDecodesAsFresh proves that a pod decoded into the previous
// one's storage (reusePod) converts as one decoded afresh: nothing of the
// previous pod shows through, whatever each holds.
func TestReusedPodDecodesAsFresh(t *testing.T) {
	var reused corev1.Pod
	for seed := range int64(200) {
		var pod corev1.Pod
		filler(seed).Fill(&pod)
		owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: new(bool)}}
		*owner[0].Controller = true
		switch seed % 3 {
		case 0: // what PodFrom reads of the lists, for the next pod not to show
			pod.Labels = map[string]string{operand.RevisionHashLabel: "5f7d"}
			pod.OwnerReferences = owner
			pod.Status.Phase = corev1.PodPending
			pod.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "no fit"},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}
		case 1: // a DaemonSet's pod with none of the lists
			pod.Labels, pod.OwnerReferences, pod.Status = nil, owner, corev1.PodStatus{Phase: corev1.PodPending}
		}
		trimmed := trimmedBytes(t, &pod, podFields, podLabels)
		var fresh corev1.Pod
		if err := fresh.Unmarshal(trimmed); err != nil {
			t.Fatal(err)
		}
		reusePod(&reused)
		if err := reused.Unmarshal(trimmed); err != nil {
			t.Fatal(err)
		}
		if want, got := snapshot.PodFrom(&fresh), snapshot.PodFrom(&reused); !semantic.DeepEqual(want, got) {
			t.Fatalf("seed %d: reused pod converts to\n %+v\nwant %+v", seed, got, want)
		}
	}
}
