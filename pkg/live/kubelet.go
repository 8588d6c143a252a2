package live

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// What the one-shot read's Kubelet option reads, kept live for health: the
// namespace's Warning Events on pods, watched, and the pods holding the
// devices of a node whose validator workload pod was refused one, listed
// when such a node is judged (none on a healthy fleet; the refused pod is
// made again every few minutes, which judges the node again).

// podWarning is a Warning Event and the pod it is about.
type podWarning struct {
	Pod string
	snapshot.Warning
}

func trimWarning(obj any) (any, error) {
	if e, ok := obj.(*corev1.Event); ok {
		return &stored[podWarning]{keep(e.ObjectMeta), podWarning{e.InvolvedObject.Name, snapshot.WarningFrom(e)}}, nil
	}
	return obj, nil
}

// podNameIndex indexes the Warnings by the pod they are about.
const podNameIndex = "pod"

func warningPod(obj any) ([]string, error) {
	if w, ok := obj.(*stored[podWarning]); ok {
		return []string{w.Of.Pod}, nil
	}
	return nil, nil
}

// watchWarnings adds the informer of the Warning Events on pods, whose
// node it finds in pods, the pod informer's store; the user may go without
// it.
func (t *Tracker) watchWarnings(pods cache.Indexer) error {
	selectWarnings := func(o *metav1.ListOptions) { o.FieldSelector = read.PodWarnings }
	events := coreinformers.NewFilteredEventInformer(t.client, t.opts.Namespace, 0, cache.Indexers{podNameIndex: warningPod}, selectWarnings)
	return t.add(PodWarnings, events, trimWarning, handler(t.mark, warningNode(pods, t.opts.Namespace)), &optional{mayWatch(t.client.CoreV1().Events(t.opts.Namespace), selectWarnings), "health goes without the Warning Events on pods (a sandbox the runtime cannot create goes unseen)"})
}

// warningNode finds the node of the pod a Warning is about, as the pod
// store holds it: an Event names its pod, not the pod's node.
func warningNode(pods cache.Indexer, namespace string) func(*stored[podWarning]) []item {
	return func(w *stored[podWarning]) []item {
		obj, found, _ := pods.GetByKey(namespace + "/" + w.Of.Pod)
		if !found {
			return nil
		}
		return podNodeItem(obj.(*stored[snapshot.Pod]))
	}
}

// addKubelet adds to s, for its pods, what the kubelet reports of them:
// the operand pods' Warnings, when watched, and the holders of the devices
// of the nodes where it refused the validator's workload pod one. A list of
// the holders that failed, or that the user may not make, leaves them out
// and is told as a failed list: the refusal then counts against the node,
// and the verdicts are uncertain a while (pkg/quarantine acts on none).
func (t *Tracker) addKubelet(ctx context.Context, s *snapshot.Snapshot) {
	if st := t.store(PodWarnings); st != nil {
		s.Warnings = map[string][]snapshot.Warning{}
		for _, p := range s.Pods {
			if !p.Operand() {
				continue
			}
			ws, _ := st.ByIndex(podNameIndex, p.Name)
			for _, w := range ws {
				s.Warnings[p.Name] = snapshot.KeepWarning(s.Warnings[p.Name], w.(*stored[podWarning]).Of.Warning)
			}
		}
	}
	nodes := s.RefusedNodes()
	if len(nodes) == 0 {
		return
	}
	holders, notes, err := read.Holders(ctx, t.client.CoreV1().RESTClient(), nodes, 0)
	if err == nil && len(notes) > 0 {
		err = errors.New(notes[0])
	}
	if err != nil {
		t.watchFailed(DeviceHolders, fmt.Errorf("the pods on the nodes %s: %w", strings.Join(nodes, ","), err))
	}
	s.Holders = holders
}
