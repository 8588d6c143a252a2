package live

import (
	"slices"
	"strings"
	"sync"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// stored is what an informer keeps of an object: the model's trimmed view
// (what the judges read) and the metadata its store keys and versions it by.
// A whole pod costs kilobytes; a stored one a few hundred bytes.
type stored[T any] struct {
	key
	Of T
}

// key is the metadata a store keys and versions an object by: three
// strings, where a whole ObjectMeta, most of it empty, takes some 250
// bytes for every pod held.
type key struct {
	Name, Namespace, ResourceVersion string
}

// GetObjectMeta makes a stored object one client-go's stores can key
// (meta.Accessor).
func (k *key) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace, ResourceVersion: k.ResourceVersion}
}

func keep(m metav1.ObjectMeta) key {
	return key{m.Name, m.Namespace, m.ResourceVersion}
}

// The transforms trim each object as it arrives, before it is stored or
// handed to a handler. Anything else (a tombstone, an object trimmed
// already) passes unchanged, which keeps them idempotent as client-go asks.

// trimNode keeps of a node's labels only those its verdicts read (labels,
// pipeline.Options.LabelsRead): a real node carries a hundred, most of the
// store, and a change to one no judge reads (GFD's timestamp) then marks
// nothing. The kept labels are interned: a fleet's nodes carry the same keys
// and mostly the same values, so the store holds each string once. With
// trace, it keeps who last wrote the labels trace picks (a helper's pause),
// from managedFields, as the one-shot read does, and who cordoned or
// tainted the node.
func trimNode(read read.Options, labels pipeline.Labels) cache.TransformFunc {
	trace := read.Traced()
	sets := &labelSets{m: map[string]map[string]string{}}
	return func(obj any) (any, error) {
		if n, ok := obj.(*corev1.Node); ok {
			node := snapshot.NodeFrom(n)
			node.Labels = kept(node.Labels, labels.Keep, sets)
			if trace != nil {
				if keys := snapshot.TracedKeys(node.Labels, trace); len(keys) > 0 {
					node.LabelChanges = snapshot.LabelChangesFrom(n.ManagedFields, keys)
				}
			}
			node.TraceSpec(n.ManagedFields)
			return &stored[snapshot.Node]{keep(n.ObjectMeta), node}, nil
		}
		return obj, nil
	}
}

// trimRevision keeps of a ControllerRevision its DaemonSet, number and
// hash: not its data, a whole pod template.
func trimRevision(obj any) (any, error) {
	if r, ok := obj.(*appsv1.ControllerRevision); ok {
		rev, _ := snapshot.RevisionFrom(r) // one no DaemonSet owns has no name: LatestRevisions skips it
		return &stored[snapshot.Revision]{keep(r.ObjectMeta), rev}, nil
	}
	return obj, nil
}

// upgradeEvent is an upgrade controller's Event and the node it is about.
type upgradeEvent struct {
	Node string
	snapshot.Event
}

func trimEvent(obj any) (any, error) {
	if e, ok := obj.(*corev1.Event); ok {
		return &stored[upgradeEvent]{keep(e.ObjectMeta), upgradeEvent{e.InvolvedObject.Name, snapshot.EventFrom(e)}}, nil
	}
	return obj, nil
}

// trimPod keeps what the judges read of a pod, its strings that many pods
// share (namespace, node, DaemonSet, template hash, states) interned.
func trimPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		pod := snapshot.PodFrom(p)
		for _, s := range []*string{&pod.Node, &pod.Target, &pod.DaemonSet, &pod.Revision, &pod.Reason, &pod.StatusReason,
			&pod.Health.Container, &pod.Health.State, &pod.Health.LastState} {
			*s = intern(*s)
		}
		k := keep(p.ObjectMeta)
		k.Namespace = intern(k.Namespace)
		return &stored[snapshot.Pod]{k, pod}, nil
	}
	return obj, nil
}

func intern(s string) string { return unique.Make(s).Value() }

func trimDaemonSet(obj any) (any, error) {
	if d, ok := obj.(*appsv1.DaemonSet); ok {
		ds := snapshot.DaemonSetFrom(d)
		// Status changes on every pod a DaemonSet makes or loses, and no
		// verdict the tracker makes reads it: left out, those updates
		// compare equal.
		ds.DesiredNumberScheduled = 0
		return &stored[snapshot.DaemonSet]{keep(d.ObjectMeta), ds}, nil
	}
	return obj, nil
}

// nodeIndex indexes pods by the node they are on, or, before they are
// scheduled, the node their DaemonSet made them for: the pods a node's
// verdict reads.
const nodeIndex = "node"

func podNode(obj any) ([]string, error) {
	if p, ok := obj.(*stored[snapshot.Pod]); ok {
		if n := p.Of.Placement(); n != "" {
			return []string{n}, nil
		}
	}
	return nil, nil
}

func eventNode(obj any) ([]string, error) {
	if e, ok := obj.(*stored[upgradeEvent]); ok {
		return []string{e.Of.Node}, nil
	}
	return nil, nil
}

// kept copies the labels that keep picks, each key and value interned
// (unique.Make), into the map of sets for that set of labels; nil if it
// picks none.
func kept(labels map[string]string, keep func(key string) bool, sets *labelSets) map[string]string {
	var picked []string
	for k, v := range labels {
		if keep(k) {
			picked = append(picked, k+"="+v)
		}
	}
	if len(picked) == 0 {
		return nil
	}
	slices.Sort(picked)
	key := strings.Join(picked, "\x00")
	sets.mu.Lock()
	defer sets.mu.Unlock()
	if m, ok := sets.m[key]; ok {
		return m
	}
	m := make(map[string]string, len(picked))
	for _, kv := range picked {
		k, v, _ := strings.Cut(kv, "=") // a label key has no "="
		m[intern(k)] = intern(v)
	}
	if len(sets.m) >= maxLabelSets {
		clear(sets.m) // the maps held stay; new nodes share new ones
	}
	sets.m[key] = m
	return m
}

// labelSets are the kept labels' maps, one per set of labels, which the nodes
// that carry it share: a fleet's nodes mostly carry the same kept labels (their
// deploy labels, the GPU's), and a map of their own was most of what serve held
// of a realistic node (docs/scale.md, "`serve` all day"). Nothing may write to
// a node's labels once it is stored: TestJudgingWritesNoSharedLabels judges
// with every judge on and checks that none does.
type labelSets struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

// maxLabelSets bounds the sets remembered, under a churn of labels.
const maxLabelSets = 4096
