package read

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldsel "k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Options says what to read besides nodes and pods.
type Options struct {
	NodeSelector string // label selector narrowing the nodes judged; empty means all
	// Node, when set, reads that one node and only the pods bound to it,
	// not every node and pod: judging one node then costs one node however
	// large the fleet. Both are LISTs narrowed by a field selector: the API
	// server reads a list narrowed to metadata.name as that one object (a
	// GET would need a right the judges' role does not grant) and pods by
	// spec.nodeName from an index. A node that does not exist leaves the
	// snapshot without nodes.
	Node string
	// DeployLabelsOnly reads of each node only what a judge reads of it
	// (pkg/judge): its name and its deploy labels (operand.LabelPrefix).
	// The nodes are listed as PartialObjectMetadata, so the server sends
	// neither spec nor status (status.images alone can outweigh the labels),
	// and the other labels (NFD and GFD write a hundred) are never decoded
	// (labelFilter): at 5,000 nodes they were most of a judge's memory.
	// Node.Taints, Unschedulable and Ready are left zero.
	DeployLabelsOnly bool
	// NodeLabels, when set, picks the labels of whole nodes the read keeps,
	// given the DaemonSets it read (none when it reads none), as
	// pipeline.Options.LabelsRead does: the others are never decoded. The
	// nodes are listed after the DaemonSets. With DeployLabelsOnly the
	// deploy labels are kept.
	NodeLabels func(daemonSets []snapshot.DaemonSet) func(key string) bool
	DaemonSets bool // also list the namespace's DaemonSets
	NoPods     bool // read no pods: a judge of the labels alone
	// PageSize, when set, splits each list into pages of that many objects
	// (limit/continue), to spare an API server that cannot stream lists.
	// Unpaged is the fastest: one request each, streamed and decoded item by
	// item, so memory does not grow with the list either way.
	PageSize int64
	// Operator also reads the GPU Operator's ClusterPolicy and NVIDIADriver
	// objects (see operator.go).
	Operator bool
	// Offers also reads, with Operator, the sharing and MIG configs the
	// policy names (sharing.go): health judges what the nodes offer by them.
	Offers bool
	// Trace, when set, picks node labels whose last writer and time the
	// snapshot keeps (Node.LabelChanges), read from managedFields: only the
	// nodes with such a label pay for decoding them. It sees the labels the
	// read keeps (with DeployLabelsOnly, the deploy labels alone).
	Trace func(key, value string) bool
	// Upgrades also reads what the driver upgrade verdict (pkg/upgrade)
	// needs: whole nodes (it overrides DeployLabelsOnly) with the upgrade
	// controller's annotations and who wrote their upgrade state label
	// (operand.UpgradeTraced, besides Trace's); each
	// DaemonSet pod's template hash; the namespace's ControllerRevisions
	// (Snapshot.Revisions) and the controller's Events on nodes
	// (Snapshot.UpgradeEvents), one LIST each.
	Upgrades bool
	// DRA also lists the DRA driver's ResourceSlices (dra.go,
	// Snapshot.DevicePools), one LIST narrowed to its driver, whoever runs
	// its kubelet plugin: the driver's own chart installs it in a namespace
	// of its own (snapshot.DRADriverName). A cluster without the DRA stack
	// pays an empty list; that the slices could not be read is a note only
	// where a DaemonSet read runs the plugin (snapshot.RunsDRA).
	DRA bool
	// Kubelet also reads what the kubelet reports of failing pods beyond
	// their status (kubelet.go, Snapshot.Warnings, Rejected and Holders):
	// the namespace's Warning Events on pods, one LIST beside the others;
	// the Failed pods of every namespace, kept when the kubelet refused
	// them at admission (the workload side's read), one LIST beside; and
	// the pods holding the devices of each node where the validator's
	// workload pod was refused one, one LIST narrowed to each such node
	// once the pods are read (none on a healthy fleet).
	Kubelet bool
}

// Traced picks the node labels a read traces: Trace's and, for upgrades,
// the upgrade state label; nil for none.
func (o Options) Traced() func(key, value string) bool {
	switch {
	case !o.Upgrades:
		return o.Trace
	case o.Trace == nil:
		return operand.UpgradeTraced
	}
	return func(k, v string) bool { return operand.UpgradeTraced(k, v) || o.Trace(k, v) }
}

// DeployOnly reports whether a read keeps only the deploy labels of each
// node: DeployLabelsOnly, unless Upgrades needs the whole node.
func (o Options) DeployOnly() bool { return o.DeployLabelsOnly && !o.Upgrades }

// Snapshot takes a snapshot with one LIST call per page of objects, never one
// per node: nodes, the namespace's pods (in three parts by label,
// podparts.go) and its DaemonSets when asked, listed concurrently. Each list,
// and each part, is one consistent view (the pages of a list share its
// resourceVersion). Nodes and pods come as protobuf when the client asks for
// it (kube.Connect does) and are decoded trimmed to what the judges read (see
// trim.go); a JSON client gets the same snapshot, more slowly.
func Snapshot(ctx context.Context, c kubernetes.Interface, namespace string, opts Options) (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{Namespace: namespace}
	core := c.CoreV1().RESTClient()
	pick := opts.Traced()
	opts.DeployLabelsOnly = opts.DeployOnly()
	// The lists are not cancelled when one fails: each ends with its own
	// error, in its slot, so that a failure every list meets (a bad token)
	// is said as the node list met it, whichever list failed first. Failing
	// is the rare path; waiting there for the slowest list costs little.
	var g errgroup.Group
	var errs [7]error
	run := func(slot int, f func() error) { g.Go(func() error { errs[slot] = f(); return errs[slot] }) }
	// The DaemonSets and then the nodes are read one after the other, on one
	// connection (a fresh process shakes hands once less): the filter of the nodes' labels is made of the
	// DaemonSets. The operator's objects, a chain of their own (the policy
	// names the ConfigMaps), go beside them on another: behind them, on an
	// API server busy with the pods' lists, each small request waited its
	// turn and the node list had been the last to end.
	var notes, draNotes, warningNotes []string // apart: Operator writes s.Notes meanwhile
	var warnings map[string][]snapshot.Warning
	run(5, func() error { return operatorAndOffers(ctx, c, namespace, opts, s) })
	if opts.DRA {
		run(4, func() (err error) {
			s.DevicePools, draNotes, err = readDevicePools(ctx, c.ResourceV1().RESTClient(), opts)
			return err
		})
	}
	daemonSetsRead := make(chan struct{})
	g.Go(func() error {
		errs[2] = readDaemonSets(ctx, c, namespace, opts, s)
		close(daemonSetsRead)
		labels := nodeLabels(opts, s.DaemonSets)
		errs[0] = readNodes(ctx, core, opts, labels, func(n *corev1.Node, whole []byte) error {
			if whole == nil && labels != nil { // decoded whole (JSON): not filtered yet
				if maps.DeleteFunc(n.Labels, func(k, _ string) bool { return !labels(k) }); len(n.Labels) == 0 {
					n.Labels = nil // as the protobuf decode leaves a node none of whose labels are kept
				}
			}
			node := snapshot.NodeFrom(n)
			if err := trace(&node, n, whole, pick); err != nil {
				return fmt.Errorf("node %s: %w", node.Name, err)
			}
			s.Nodes = append(s.Nodes, node)
			return nil
		})
		if errs[0] != nil {
			errs[0] = fmt.Errorf("list nodes: %w", errs[0])
		}
		return errors.Join(errs[0], errs[2])
	})
	run(1, func() error {
		if opts.NoPods {
			return nil
		}
		// As many pods as the DaemonSets want, a guess that sizes the
		// merge (pods of no DaemonSet are few): none when none are read,
		// nor for one node's pods, a few of the fleet's.
		expected := func() (n int) {
			if <-daemonSetsRead; opts.Node != "" {
				return 0
			}
			for _, d := range s.DaemonSets {
				n += int(d.DesiredNumberScheduled)
			}
			return n + n/8
		}
		pods, err := readPods(ctx, core, namespace, opts, expected)
		if err != nil {
			return fmt.Errorf("list pods in namespace %s: %w", namespace, err)
		}
		s.Pods = pods
		return nil
	})
	if opts.Upgrades {
		run(3, func() (err error) {
			s.Revisions, s.UpgradeEvents, notes, err = readUpgrades(ctx, c, namespace, opts.PageSize)
			return err
		})
	}
	var rejected []snapshot.RejectedPod
	var rejectedErr error
	if opts.Kubelet {
		run(6, func() (err error) {
			warnings, warningNotes, err = readWarnings(ctx, core, namespace, opts.PageSize)
			return err
		})
		g.Go(func() error {
			rejected, rejectedErr = readRejected(ctx, core, metav1.NamespaceAll, "", opts.PageSize)
			return nil // a refusal the user may not see is a note (below), not a failed read
		})
	}
	if g.Wait() != nil {
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
	}
	if !snapshot.RunsDRA(s.DaemonSets) {
		draNotes = nil // devices no one was known to publish are not missed
	}
	s.Notes = append(append(append(s.Notes, notes...), draNotes...), warningNotes...)
	if opts.Kubelet {
		if warnings != nil {
			s.Warnings = operandWarnings(warnings, namespace, s.Pods)
		}
		switch {
		case apierrors.IsForbidden(rejectedErr):
			s.Notes = append(s.Notes, "workload pods refused at admission not read (a device plugin that fails to allocate goes unseen): the user may not list pods in all namespaces")
		case rejectedErr != nil:
			return nil, rejectedErr
		default:
			s.Rejected = rejected
		}
		holders, holderNotes, err := Holders(ctx, core, s.RefusedNodes(), opts.PageSize)
		if err != nil {
			return nil, err
		}
		s.Holders = holders
		s.Notes = append(s.Notes, holderNotes...)
	}
	return s, nil
}

// readDaemonSets reads the namespace's DaemonSets into s when opts asks.
func readDaemonSets(ctx context.Context, c kubernetes.Interface, namespace string, opts Options, s *snapshot.Snapshot) error {
	if !opts.DaemonSets {
		return nil
	}
	dss, err := c.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list daemonsets in namespace %s: %w", namespace, err)
	}
	for i := range dss.Items {
		s.DaemonSets = append(s.DaemonSets, snapshot.DaemonSetFrom(&dss.Items[i]))
	}
	return nil
}

// operatorAndOffers reads the operator's objects and the configs they name
// into s, as opts asks.
func operatorAndOffers(ctx context.Context, c kubernetes.Interface, namespace string, opts Options, s *snapshot.Snapshot) error {
	if !opts.Operator {
		return nil
	}
	if err := Operator(ctx, c, s); err != nil || !opts.Offers {
		return err
	}
	return Offers(ctx, c, namespace, s)
}

// nodeLabels is the label filter of the nodes' read: the deploy labels
// alone (and the one other that asks, operand.AskLabel), opts.NodeLabels
// of the DaemonSets read, or nil for all.
func nodeLabels(opts Options, daemonSets []snapshot.DaemonSet) labelFilter {
	switch {
	case opts.DeployLabelsOnly:
		return operand.AskLabel
	case opts.NodeLabels == nil:
		return nil
	}
	return opts.NodeLabels(daemonSets)
}

// readPods lists the namespace's pods: those bound to opts.Node, or all of
// them in parts side by side (podparts.go), merged back into the order of
// one LIST (by name) as they come (podmerge.go), given how many pods the
// read expects (0: unknown).
func readPods(ctx context.Context, core rest.Interface, namespace string, opts Options, expected func() int) ([]snapshot.Pod, error) {
	var parts []metav1.ListOptions
	if opts.Node != "" {
		parts = append(parts, metav1.ListOptions{Limit: opts.PageSize,
			FieldSelector: fieldsel.OneTermEqualSelector("spec.nodeName", opts.Node).String()})
	} else {
		for _, sel := range podParts() {
			parts = append(parts, metav1.ListOptions{Limit: opts.PageSize, LabelSelector: sel})
		}
	}
	m := newPodMerge(len(parts))
	var g errgroup.Group
	for i, o := range parts {
		g.Go(func() error {
			w := m.writer(i)
			err := readList(ctx, func() *rest.Request { return core.Get().Namespace(namespace).Resource("pods") }, o,
				podFields, podLabels, reusePod, &corev1.PodList{}, func(p *corev1.Pod, _ []byte) error { w.add(snapshot.PodFrom(p)); return nil })
			w.end(err)
			return err
		})
	}
	pods := m.merged(expected)
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return pods, nil
}

// reusePod empties a decoded pod for the next, keeping the storage of its
// labels, owner references and status lists: growing them afresh for every
// pod was a visible share of a judge's decoding on lab-sized pods
// (docs/scale.md, "Mechanisms"). PodFrom keeps none of it: a snapshot.Pod holds
// strings and times alone (it is comparable), and the decoder makes every
// string afresh.
func reusePod(p *corev1.Pod) {
	labels, owners, st := p.Labels, p.OwnerReferences, p.Status
	clear(labels)
	*p = corev1.Pod{}
	p.Labels, p.OwnerReferences = labels, owners[:0]
	p.Status.Conditions = st.Conditions[:0]
	p.Status.ContainerStatuses = st.ContainerStatuses[:0]
	p.Status.InitContainerStatuses = st.InitContainerStatuses[:0]
}

// reuseNode empties a decoded node for the next, keeping the storage of what
// NodeFrom reads and does not keep: its resource lists (a map each, made afresh
// for every node) and its conditions: a page a process touches first is a
// fault, costly where a hypervisor backs it, and this spares many of health's
// (docs/scale.md, "Mechanisms"). Its labels and taints the snapshot keeps.
func reuseNode(n *corev1.Node) {
	capacity, allocatable, conditions := n.Status.Capacity, n.Status.Allocatable, n.Status.Conditions
	clear(capacity)
	clear(allocatable)
	*n = corev1.Node{}
	n.Status.Capacity, n.Status.Allocatable, n.Status.Conditions = capacity, allocatable, conditions[:0]
}

// metadataList asks for a list as PartialObjectMetadataList, protobuf if the
// server can, as the metadata client (k8s.io/client-go/metadata) does; that
// client decodes the whole list at once, readList streams it.
const metadataList = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// readNodes calls add on each node opts asks for, with its protobuf bytes
// when it came as protobuf (see readList): then with only the labels that
// labels keeps.
func readNodes(ctx context.Context, core rest.Interface, opts Options, labels labelFilter, add func(n *corev1.Node, whole []byte) error) error {
	list := metav1.ListOptions{LabelSelector: opts.NodeSelector, Limit: opts.PageSize}
	if opts.Node != "" {
		list.FieldSelector = fieldsel.OneTermEqualSelector("metadata.name", opts.Node).String()
	}
	if opts.DeployLabelsOnly {
		var node corev1.Node // one for all: a node each was 300 of the 3,700 pages audit faulted in at 1,000 nodes
		return readList(ctx, func() *rest.Request { return core.Get().Resource("nodes").SetHeader("Accept", metadataList) }, list,
			metadataFields, labels, nil, &metav1.PartialObjectMetadataList{}, func(m *metav1.PartialObjectMetadata, whole []byte) error {
				node.ObjectMeta = m.ObjectMeta
				return add(&node, whole)
			})
	}
	return readList(ctx, func() *rest.Request { return core.Get().Resource("nodes") }, list, nodeFields, labels, reuseNode, &corev1.NodeList{}, add)
}

// bodyBuffer is the buffer a list body is read through: a list item that
// fits in it, as pods and nodes do, is decoded where it lies (stream.next).
const bodyBuffer = 64 << 10

// message is an API type with its generated protobuf decoder.
type message[T any] interface {
	*T
	Unmarshal([]byte) error
}

// readList GETs a list (a fresh request from req for each page), page by
// page when opts.Limit is set, and calls add on every item, in the server's
// order. A protobuf body is decoded item by item as it streams in, trimmed
// to keep and to the labels that labels passes, and add gets the item's
// whole bytes too; any other (JSON) is
// decoded whole into a fresh copy of the empty list, as a plain client
// would, and add gets nil bytes: the item is whole.
//
// Each protobuf item is decoded into a zeroed T, as add may keep its maps
// and slices; unless reuse is set, which empties the previous one for the
// next, keeping what storage add never keeps.
func readList[T any, PT message[T]](ctx context.Context, req func() *rest.Request,
	opts metav1.ListOptions, keep fields, labels labelFilter, reuse func(*T), list runtime.Object, add func(item *T, whole []byte) error) error {
	var item T
	for {
		body, err := req().VersionedParams(&opts, scheme.ParameterCodec).Stream(ctx)
		if err != nil {
			return err
		}
		r := bufio.NewReaderSize(body, bodyBuffer)
		var next string
		if magic, _ := r.Peek(len(protobufMagic)); bytes.Equal(magic, protobufMagic) {
			next, err = eachListItem(r, keep, labels, func(b, whole []byte) error {
				if reuse != nil {
					reuse(&item)
				} else {
					item = *new(T)
				}
				if err := PT(&item).Unmarshal(b); err != nil {
					return err
				}
				return add(&item, whole)
			})
		} else {
			next, err = eachTypedItem(r, list.DeepCopyObject(), add)
		}
		body.Close()
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if next == "" {
			return nil
		}
		opts.Continue = next
	}
}

func eachTypedItem[T any](r io.Reader, list runtime.Object, add func(*T, []byte) error) (string, error) {
	return eachJSONItem(r, list, func(o runtime.Object) error {
		item, ok := any(o).(*T)
		if !ok {
			return fmt.Errorf("unexpected %T in list", o)
		}
		return add(item, nil)
	})
}

// eachJSONItem decodes a JSON list body whole into list (nil: a list of the
// type its kind names) and calls fn on each item; it returns the list's
// continue token.
func eachJSONItem(r io.Reader, list runtime.Object, fn func(runtime.Object) error) (string, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	if list, _, err = scheme.Codecs.UniversalDeserializer().Decode(body, nil, list); err != nil {
		return "", err
	}
	if err := meta.EachListItem(list, fn); err != nil {
		return "", err
	}
	l, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return l.GetContinue(), nil
}
