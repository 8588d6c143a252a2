package read

import (
	"bytes"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// TestBundledKeepsWhatEveryReadKeeps proves, over random objects of each
// kind a read trims, that every trim of the kind cuts what a bundle keeps
// of an object to what it cuts of the whole object, byte for byte: a trim
// that keeps a field the bundle's union drops fails here.
func TestBundledKeepsWhatEveryReadKeeps(t *testing.T) {
	random := map[string]func() Message{
		"Node": func() Message { return &corev1.Node{} }, "Pod": func() Message { return &corev1.Pod{} },
		"Event": func() Message { return &corev1.Event{} }, "ControllerRevision": func() Message { return &appsv1.ControllerRevision{} },
		"ReplicaSet": func() Message { return &appsv1.ReplicaSet{} }, "ResourceSlice": func() Message { return &resourcev1.ResourceSlice{} },
		"ResourceClaim": func() Message { return &resourcev1.ResourceClaim{} }, "DeviceClass": func() Message { return &resourcev1.DeviceClass{} },
	}
	for kind, trims := range specs {
		newObject, ok := random[kind]
		if !ok {
			t.Fatalf("a read trims %s: add it here", kind)
		}
		for seed := range int64(100) {
			o := newObject()
			filler(seed).Funcs(func(r *runtime.RawExtension, c randfill.Continue) { r.Raw = []byte(`{"revision":"data"}`) }).Fill(o)
			whole, err := o.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			kept, err := (&trimmer{}).trim(nil, whole, bundled()[kind])
			if err != nil {
				t.Fatal(err)
			}
			for i, keep := range trims {
				for _, labels := range []labelFilter{nil, podLabels} {
					want, err := (&trimmer{labels: labels}).trim(nil, whole, keep)
					if err != nil {
						t.Fatal(err)
					}
					got, err := (&trimmer{labels: labels}).trim(nil, kept, keep)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%s, seed %d: trim %d of the bundled object differs from its trim of the whole object", kind, seed, i)
					}
				}
			}
		}
	}
}

// TestEachBundledReadsJSONAsProtobuf reads a page of real pods as protobuf
// and as JSON: the bundle keeps the same of each, and less than the whole.
func TestEachBundledReadsJSONAsProtobuf(t *testing.T) {
	asProtobuf := podPage(t, 2, "next-page")
	list, _, err := scheme.Codecs.UniversalDeserializer().Decode(asProtobuf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	asJSON, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), list)
	if err != nil {
		t.Fatal(err)
	}
	read := func(body []byte) []Message {
		t.Helper()
		var out []Message
		cont, err := EachBundled(bytes.NewReader(body), "Pod", func() Message { return &corev1.Pod{} }, func(o Message, whole []byte) error {
			var p corev1.Pod
			if err := p.Unmarshal(whole); err != nil || p.Name == "" {
				t.Errorf("whole bytes: %v, name %q", err, p.Name)
			}
			out = append(out, o)
			return nil
		})
		if err != nil || cont != "next-page" {
			t.Fatalf("continue %q, %v", cont, err)
		}
		return out
	}
	fromProtobuf, fromJSON := read(asProtobuf), read(asJSON)
	if len(fromProtobuf) != 2 || !equality.Semantic.DeepEqual(fromProtobuf, fromJSON) {
		t.Errorf("protobuf:\n%v\nJSON:\n%v", fromProtobuf, fromJSON)
	}
	pod, p := list.(*corev1.PodList).Items[1], fromProtobuf[1].(*corev1.Pod)
	if p.Name != pod.Name || p.Namespace != pod.Namespace || len(p.Labels) != len(pod.Labels) || p.Spec.NodeName != pod.Spec.NodeName ||
		p.ManagedFields != nil || len(p.Spec.Volumes) > 0 || p.Spec.Containers[0].Image != "" {
		t.Errorf("bundled pod: %+v", p)
	}
}
