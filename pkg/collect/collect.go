// Package collect reads from a cluster what the judges read and makes a
// bundle of it (pkg/bundle): `gpuops collect`. It reads what
// pkg/snapshot/read reads, so that --from of the bundle makes the snapshot
// a live read makes: every kind Kinds lists, each with the selectors the
// reader uses, and what it could not read (the user may not; the cluster
// does not serve it) in the header, so that --from refuses it again as the
// cluster did. Of each object of a built-in kind it decodes and keeps only
// what the reader's trims of that kind keep (read.EachBundled): the reader
// then finds in the bundle all it reads, and collect decodes no more than
// the judges would.
package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/words"
)

// Options say what to collect and how.
type Options struct {
	Namespace string // the GPU Operator's
	// Context and Server name the cluster, for the header.
	Context, Server string
	Version         string // gpuops's, for the header
	// Progress, when set, gets a line per page of a long list: on a large
	// fleet a collect takes a while.
	Progress io.Writer
	// PageSize, when set, is how many objects a LIST returns at a time;
	// 0 asks for each list whole, as the judges read it: each page costs
	// the API server a walk of its cache to where the last one stopped,
	// which on a large fleet made paging the larger part of a collect
	// (docs/scale.md, "The workload side at 5,000 realistic nodes").
	PageSize int
}

// Collect reads the bundle: the header, then the objects, each with its
// apiVersion and kind: the built-in kinds as their API types, decoded from
// protobuf and written from the type (a map in between would cost more
// than the reading), the custom resources as Unstructured.
func Collect(ctx context.Context, c kubernetes.Interface, o Options) (*bundle.Header, []runtime.Object, error) {
	h := &bundle.Header{APIVersion: bundle.HeaderAPIVersion, Kind: bundle.HeaderKind, Metadata: bundle.Metadata{Name: "gpuops"},
		GPUOps: o.Version, Time: time.Now().UTC().Truncate(time.Second), Namespace: o.Namespace,
		Context: o.Context, Server: o.Server}
	if v, err := c.Discovery().ServerVersion(); err == nil {
		h.ServerVersion = v.GitVersion
	}
	ns := o.Namespace
	traced := pipeline.Options{Health: true, Upgrades: true}.ReadOptions().Traced() // every label a judge traces
	// The reads are made side by side, as the judges make theirs; each
	// keeps its objects and its lines of the header apart, joined in this
	// order: the bundle is the same whatever answered first. The
	// ConfigMaps and the CRD the policy names are read once the policy is.
	first := []func(r *reader) error{
		func(r *reader) error { return r.list(kind("Node"), "", "", "", "", nodeTrimmer(traced)) },
		func(r *reader) error { return r.list(kind("DaemonSet"), ns, "", "", "", nil) },
		func(r *reader) error { return r.list(kind("ControllerRevision"), ns, "", "", "", nil) },
		func(r *reader) error {
			return r.list(kind("Deployment"), ns, read.OperatorSelector, "", "the GPU Operator's", nil)
		},
		func(r *reader) error { return r.list(kind("ClusterPolicy"), "", "", "", "", nil) },
		func(r *reader) error { return r.list(kind("NVIDIADriver"), "", "", "", "", nil) },
		func(r *reader) error {
			return r.list(kind("ResourceSlice"), "", "", "spec.driver="+snapshot.DRADriverName, "the GPU DRA driver's", nil)
		},
		func(r *reader) error { return r.list(kind("ResourceClaim"), "", "", "", "", nil) },
		func(r *reader) error { return r.list(kind("DeviceClass"), "", "", "", "", nil) },
		func(r *reader) error { return r.events() },
		func(r *reader) error { return r.pods(ns) },
		// every ReplicaSet, its name and controller: why deployment/NAME
		// finds a Deployment's pods through them, in one LIST rather than
		// one a namespace of the pods' owners
		func(r *reader) error { return r.list(kind("ReplicaSet"), "", "", "", "their names and controllers", nil) },
	}
	readers, err := side(ctx, c, o, first)
	if err != nil {
		return nil, nil, err
	}
	var items []runtime.Object
	for _, r := range readers {
		items = append(items, r.items...)
	}
	then := []func(r *reader) error{
		func(r *reader) error { return r.configMaps(ns, items) },
		func(r *reader) error { return r.policyCRD(items) },
	}
	more, err := side(ctx, c, o, then)
	if err != nil {
		return nil, nil, err
	}
	// the header's lines and the objects in the order the reads are listed
	// above, the policy's ConfigMaps and CRD where they were read before
	all := append(readers[:6:6], more[0], more[1])
	all = append(all, readers[6:]...)
	items = nil
	for _, r := range all {
		h.Read, h.NotRead = append(h.Read, r.h.Read...), append(h.NotRead, r.h.NotRead...)
		items = append(items, r.items...)
	}
	return h, items, nil
}

// side runs each read on a reader of its own, side by side, and returns
// them in the order given.
func side(ctx context.Context, c kubernetes.Interface, o Options, reads []func(r *reader) error) ([]*reader, error) {
	readers := make([]*reader, len(reads))
	var g errgroup.Group
	for i, read := range reads {
		readers[i] = &reader{ctx: ctx, c: c, rc: c.Discovery().RESTClient(), o: o, h: &bundle.Header{}}
		g.Go(func() error { return read(readers[i]) })
	}
	return readers, g.Wait()
}

func kind(name string) bundle.Kind {
	for _, k := range bundle.Kinds {
		if k.Kind == name {
			return k
		}
	}
	panic("collect: unknown kind " + name)
}

// reader lists into the bundle.
type reader struct {
	ctx   context.Context
	c     kubernetes.Interface
	rc    rest.Interface
	o     Options
	h     *bundle.Header
	items []runtime.Object
}

// list lists k in namespace ns ("" every one) narrowed by the selectors,
// passes each object through trim (nil: none; it gets the object's whole
// protobuf, see each) and records the read in the header, or why it was
// not made.
func (r *reader) list(k bundle.Kind, ns, labelSel, fieldSel, only string, trim func(runtime.Object, []byte) error) error {
	err := r.each(k, ns, labelSel, fieldSel, func(o runtime.Object, whole []byte) error {
		if trim != nil {
			if err := trim(o, whole); err != nil {
				return err
			}
		}
		r.add(k, o)
		return nil
	})
	return r.record(k, ns, "", only, err)
}

// record notes a read made, or refused: anything else is an error.
func (r *reader) record(k bundle.Kind, ns, name, only string, err error) error {
	if !k.Namespaced {
		ns = ""
	}
	switch {
	case err == nil:
		r.h.Read = append(r.h.Read, bundle.Read{Resource: k.Qualified(), Namespace: ns, Name: name, Only: only})
	case apierrors.IsForbidden(err):
		r.h.NotRead = append(r.h.NotRead, bundle.NotRead{Resource: k.Qualified(), Namespace: ns, Name: name,
			Reason: string(metav1.StatusReasonForbidden), Message: words.ErrorLine(err)})
	case apierrors.IsNotFound(err) && name == "":
		r.h.NotRead = append(r.h.NotRead, bundle.NotRead{Resource: k.Qualified(), Namespace: ns,
			Reason: string(metav1.StatusReasonNotFound), Message: "the cluster does not serve " + k.Qualified() + "/" + strings.TrimPrefix(k.APIVersion, k.Group()+"/")})
	default:
		what := k.Qualified()
		if ns != "" {
			what += " in namespace " + ns
		}
		return fmt.Errorf("list %s: %w", what, err)
	}
	return nil
}

// each lists k page by page and calls fn on each item, its apiVersion and
// kind set: a built-in kind as its API type, asked as protobuf (smaller
// and several times quicker for the API server to send than JSON) and
// decoded trimmed to what a bundle keeps of it (read.EachBundled: what the
// judges read), with its whole protobuf bytes; a custom resource as an
// Unstructured, without.
func (r *reader) each(k bundle.Kind, ns, labelSel, fieldSel string, fn func(o runtime.Object, whole []byte) error) error {
	path := resourcePath(k, ns)
	rc, typed := r.typedClient(k)
	cont, total := "", 0
	for {
		req := rc.Get().AbsPath(path)
		if r.o.PageSize > 0 {
			req = req.Param("limit", strconv.Itoa(r.o.PageSize))
		}
		if labelSel != "" {
			req = req.Param("labelSelector", labelSel)
		}
		if fieldSel != "" {
			req = req.Param("fieldSelector", fieldSel)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		n, next, err := r.page(k, req, typed, fn)
		if err != nil {
			return err
		}
		total += n
		cont = next
		if r.o.Progress != nil && (cont != "" || total >= progressFrom) {
			fmt.Fprintf(r.o.Progress, "collect: %s: %d read\n", k.Qualified(), total)
		}
		if cont == "" {
			return nil
		}
	}
}

// progressFrom is the size of a list read whole from which its count is
// said on Progress: the lists a large fleet takes seconds to send.
const progressFrom = 1000

// typedClient is the client of k's API group that takes protobuf, and
// true; for a custom resource, which the API server sends as JSON alone,
// the JSON client and false.
func (r *reader) typedClient(k bundle.Kind) (rest.Interface, bool) {
	switch k.APIVersion {
	case "v1":
		return r.c.CoreV1().RESTClient(), true
	case "apps/v1":
		return r.c.AppsV1().RESTClient(), true
	case "resource.k8s.io/v1":
		return r.c.ResourceV1().RESTClient(), true
	}
	return r.rc, false
}

// page reads one page: its items, and the continue token.
func (r *reader) page(k bundle.Kind, req *rest.Request, typed bool, fn func(runtime.Object, []byte) error) (int, string, error) {
	gvk := schema.FromAPIVersionAndKind(k.APIVersion, k.Kind)
	if typed {
		body, err := req.Stream(r.ctx)
		if err != nil {
			return 0, "", err
		}
		defer body.Close()
		n := 0
		cont, err := read.EachBundled(body, k.Kind, func() read.Message { o, _ := bundle.NewTyped(k.Kind); return o },
			func(item read.Message, whole []byte) error {
				n++
				item.GetObjectKind().SetGroupVersionKind(gvk)
				return fn(item, whole)
			})
		if err != nil {
			return 0, "", fmt.Errorf("decode %s: %w", k.Qualified(), err)
		}
		return n, cont, nil
	}
	body, err := read.JSON(r.ctx, req)
	if err != nil {
		return 0, "", err
	}
	var page struct {
		Metadata struct{ Continue string }
		Items    []bundle.Object
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&page); err != nil {
		return 0, "", fmt.Errorf("decode %s: %w", k.Qualified(), err)
	}
	for _, o := range page.Items {
		u := &unstructured.Unstructured{Object: o}
		u.SetGroupVersionKind(gvk)
		if err := fn(u, nil); err != nil {
			return 0, "", err
		}
	}
	return len(page.Items), page.Metadata.Continue, nil
}

// resourcePath is where k is listed, in namespace ns ("": every one).
func resourcePath(k bundle.Kind, ns string) string {
	path := "/api/" + k.APIVersion
	if k.Group() != "" {
		path = "/apis/" + k.APIVersion
	}
	if ns != "" && k.Namespaced {
		path += "/namespaces/" + url.PathEscape(ns)
	}
	return path + "/" + k.Resource
}

// add keeps an object, trimmed of what no judge reads and may be secret.
func (r *reader) add(k bundle.Kind, o runtime.Object) {
	bundle.Scrub(o, k.Kind == "Node")
	r.items = append(r.items, o)
}

// configMaps gets the ConfigMaps the ClusterPolicy names for the device
// plugin's sharing and the MIG manager's layouts (as read.Offers does):
// one that does not exist is recorded as read, so that --from finds it
// missing as the cluster did.
func (r *reader) configMaps(ns string, items []runtime.Object) error {
	var names []string
	for _, o := range items {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "ClusterPolicy" {
			b, err := json.Marshal(u.Object)
			if err != nil {
				return err
			}
			named, err := read.OfferConfigMaps(b)
			if err != nil {
				return fmt.Errorf("ClusterPolicy: %w", err)
			}
			names = append(names, named...)
		}
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if err := r.get(kind("ConfigMap"), ns, name, "", nil); err != nil {
			return err
		}
	}
	return nil
}

// get gets one object by name, trimmed by keep (nil: kept whole), and
// records the read: one that does not exist is recorded as read, so that
// --from finds it missing as the cluster did.
func (r *reader) get(k bundle.Kind, ns, name, only string, keep func(bundle.Object) bundle.Object) error {
	var o bundle.Object
	body, err := read.JSON(r.ctx, r.rc.Get().AbsPath(resourcePath(k, ns), name))
	if err == nil {
		err = json.Unmarshal(body, &o)
	}
	switch {
	case err == nil && keep != nil:
		r.add(k, &unstructured.Unstructured{Object: keep(o)})
	case err == nil:
		r.add(k, &unstructured.Unstructured{Object: o})
	case apierrors.IsNotFound(err):
		err = nil // read: it does not exist
	}
	return r.record(k, ns, name, only, err)
}

// policyCRD gets the ClusterPolicy's CRD when there is a policy: a judge
// reads its schema for the operator's release when neither the operator's
// Deployment nor the chart's label names it (read.ClusterPolicyCRD). Its
// schema's field names alone are kept: the descriptions are most of it.
func (r *reader) policyCRD(items []runtime.Object) error {
	if !slices.ContainsFunc(items, func(o runtime.Object) bool { return o.GetObjectKind().GroupVersionKind().Kind == "ClusterPolicy" }) {
		return nil
	}
	return r.get(kind("CustomResourceDefinition"), "", read.ClusterPolicyCRD, "its schema's field names", schemaNames)
}

// schemaNames is a CRD with, of each version, its name, whether it is
// served and its schema's tree of properties, nothing else.
func schemaNames(crd bundle.Object) bundle.Object {
	var props func(schema any) bundle.Object
	props = func(schema any) bundle.Object {
		m, _ := schema.(bundle.Object)
		p, _ := m["properties"].(bundle.Object)
		if p == nil {
			return bundle.Object{}
		}
		out := bundle.Object{}
		for name, sub := range p {
			out[name] = props(sub)
		}
		return bundle.Object{"properties": out}
	}
	spec, _ := crd["spec"].(bundle.Object)
	versions, _ := spec["versions"].([]any)
	kept := make([]any, 0, len(versions))
	for _, v := range versions {
		v, _ := v.(bundle.Object)
		schema, _ := v["schema"].(bundle.Object)
		kept = append(kept, bundle.Object{"name": v["name"], "served": v["served"],
			"schema": bundle.Object{"openAPIV3Schema": props(schema["openAPIV3Schema"])}})
	}
	meta, _ := crd["metadata"].(bundle.Object)
	return bundle.Object{"apiVersion": crd["apiVersion"], "kind": crd["kind"], "metadata": bundle.Object{"name": meta["name"]},
		"spec": bundle.Object{"group": spec["group"], "versions": kept}}
}

// events lists what the judges read of Events: the Warnings on pods of
// every namespace and the driver upgrade controller's Events on nodes.
func (r *reader) events() error {
	k := kind("Event")
	var errs []error
	for _, sel := range []string{read.PodWarnings, read.UpgradeEvents} {
		errs = append(errs, r.each(k, "", "", sel, func(o runtime.Object, _ []byte) error {
			r.add(k, o)
			return nil
		}))
	}
	for _, err := range errs {
		if err != nil {
			return r.record(k, "", "", "", err)
		}
	}
	return r.record(k, "", "", "Warnings on pods, the driver upgrade controller's on nodes", nil)
}

// pods lists the pods of the operator's namespace and, elsewhere, as the
// judges list them side by side, the pods that have not ended
// (read.Unended) and the Failed ones (read.Failed), keeping the GPU pods
// and those the kubelet refused: the workload's side (snapshot.GPUPods)
// and the pods holding a node's devices (read.Holders); and the GPU pods
// that Succeeded, which say why a target has no GPU pod running
// (read.PodsIn). Every other pod is kept as the stub read.PodsIn reads
// (read.NonGPUStub): why says of one that it asks no GPU, or how it
// ended, as it does live, not that it does not exist. Each pod is decoded
// only as far as a bundle keeps any pod (read.EachBundled), the stub made
// of that. A user who may list pods in the operator's namespace alone gets
// those.
func (r *reader) pods(ns string) error {
	k := kind("Pod")
	outside := func(sel string) func(r *reader) error {
		return func(sub *reader) error {
			return sub.each(k, "", "", sel, func(o runtime.Object, _ []byte) error {
				p, ok := o.(*corev1.Pod)
				if !ok {
					return fmt.Errorf("pods: not decoded as pods: %T", o)
				}
				if p.Namespace == ns {
					return nil
				}
				_, gpu := snapshot.GPUPodFrom(p)
				_, refused := snapshot.RejectedPodFrom(p)
				if !gpu && !refused {
					sub.add(k, read.NonGPUStub(p))
					return nil
				}
				sub.add(k, p)
				return nil
			})
		}
	}
	succeeded := fields.OneTermEqualSelector("status.phase", string(corev1.PodSucceeded)).String()
	subs, err := side(r.ctx, r.c, r.o, []func(r *reader) error{
		func(sub *reader) error { return sub.list(k, ns, "", "", "", nil) },
		outside(read.Unended), outside(read.Failed), outside(succeeded),
	})
	for _, sub := range subs {
		r.items = append(r.items, sub.items...)
	}
	inNamespace := subs[0].h
	if err != nil && !apierrors.IsForbidden(err) {
		return err
	}
	if apierrors.IsForbidden(err) {
		if err := r.record(k, "", "", "", err); err != nil {
			return err
		}
		r.items = subs[0].items
		r.h.Read, r.h.NotRead = append(r.h.Read, inNamespace.Read...), append(r.h.NotRead, inNamespace.NotRead...)
		return nil
	}
	r.h.Read = append(r.h.Read, inNamespace.Read...)
	return r.record(k, "", "", "outside namespace "+ns+": the GPU pods and those the kubelet refused; of the others their name, controller, node and phase", nil)
}

// nodeTrimmer keeps of a node's managedFields the entries that own a label
// a judge traces (traced) or its cordon or taints (the ledger's), as the
// reader decodes only those (read.ManagedFields): the rest, the kubelet's
// status and NFD's hundred labels, is most of a node.
func nodeTrimmer(traced func(key, value string) bool) func(runtime.Object, []byte) error {
	return func(o runtime.Object, whole []byte) (err error) {
		n, ok := o.(*corev1.Node)
		if !ok {
			return fmt.Errorf("nodes: not decoded as nodes: %T", o)
		}
		n.ManagedFields, err = read.ManagedFields(whole, append(snapshot.TracedKeys(n.Labels, traced), snapshot.SpecNeedles...))
		return err
	}
}
