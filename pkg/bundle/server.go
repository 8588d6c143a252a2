package bundle

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NotHeld is the reason Server gives for a request the input does not
// hold: an error that apierrors.IsForbidden takes as a refusal (code 403),
// so that the reader skips what it skips for a user who may not list it,
// with a note, and fails where it fails; its notes say which
// (ReasonNotHeld).
const NotHeld metav1.StatusReason = "NotHeld"

// IsNotHeld reports whether err is Server's answer for what the input
// does not hold.
func IsNotHeld(err error) bool { return apierrors.ReasonForError(err) == NotHeld }

// Server answers the reader's GET requests from a bundle as the API server
// answers them (protobuf for the built-in kinds, JSON else): a list by namespace, label selector, field
// selector (on any field, as the API server's selectable ones are), limit
// and continue, in the API server's order (by namespace, then name); one
// object by name; a PartialObjectMetadataList when asked for one. What the
// bundle's header says was refused or not served is refused again with
// the same reason; what it did not read, or a kubectl dump does not hold a
// single object of (in the namespace asked: Bundle.HasIn), and a kind
// gpuops does not read, are NotHeld.
type Server struct {
	b       *Bundle
	mu      sync.Mutex
	missing []string
}

// NewServer serves b.
func NewServer(b *Bundle) *Server {
	for _, objs := range b.Objects {
		slices.SortStableFunc(objs, func(x, y runtime.Object) int {
			mx, my := metaOf(x), metaOf(y)
			return cmp.Or(strings.Compare(mx.GetNamespace(), my.GetNamespace()), strings.Compare(mx.GetName(), my.GetName()))
		})
	}
	return &Server{b: b}
}

// Missing are the requests the server answered NotHeld, each once, in the
// order asked: what the judges read and the input lacks.
func (s *Server) Missing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.missing)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		status(w, apierrors.NewMethodNotSupported(schemaResource("", r.URL.Path), r.Method))
		return
	}
	apiVersion, ns, resource, name, sub, ok := parsePath(r.URL.Path)
	k, known := resourceKind(apiVersion, resource)
	if !ok || sub != "" && sub != "log" {
		status(w, apierrors.NewNotFound(schemaResource("", resource), name))
		return
	}
	if !known {
		// A kind no input holds, which the cluster may serve all the same:
		// said as missing, not as "not served", which a reader takes for
		// "none" and would judge by without a word.
		status(w, s.notHeld(unknownKind(apiVersion, resource), ns, name, sub))
		return
	}
	if err := s.access(k, ns, name, sub); err != nil {
		status(w, err)
		return
	}
	accept := r.Header.Get("Accept")
	asProtobuf := strings.Contains(accept, protobufType) && !strings.Contains(accept, "as=") && typedKinds[k.Kind] != nil
	if name != "" {
		for i, o := range s.b.Objects[k] {
			if m := metaOf(o); m.GetName() == name && (!k.Namespaced || m.GetNamespace() == ns) {
				if asProtobuf {
					s.writeProtobuf(w, k.APIVersion, k.Kind, "", k, []int{i})
					return
				}
				write(w, o)
				return
			}
		}
		status(w, apierrors.NewNotFound(schemaResource(k.Group(), k.Resource), name))
		return
	}
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		status(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		status(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	var matched []int
	for i, o := range s.b.Objects[k] {
		m := metaOf(o)
		if k.Namespaced && ns != "" && m.GetNamespace() != ns || !ls.Matches(labels.Set(m.GetLabels())) || !fs.Empty() && !fs.Matches(fieldSet(o, fs)) {
			continue
		}
		matched = append(matched, i)
	}
	from, _ := strconv.Atoi(q.Get("continue"))
	matched = matched[min(from, len(matched)):]
	cont := ""
	if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && limit < len(matched) {
		matched, cont = matched[:limit], strconv.Itoa(from+limit)
	}
	if asProtobuf {
		s.writeProtobuf(w, k.APIVersion, k.Kind+"List", cont, k, matched)
		return
	}
	items := make([]runtime.Object, len(matched))
	for j, i := range matched {
		items[j] = s.b.Objects[k][i]
	}
	meta := map[string]any{"resourceVersion": "1"}
	if cont != "" {
		meta["continue"] = cont
	}
	list := map[string]any{"apiVersion": k.APIVersion, "kind": k.Kind + "List", "metadata": meta, "items": items}
	if strings.Contains(accept, "as=PartialObjectMetadataList") {
		partial := make([]Object, len(items))
		for i, o := range items {
			// an API type's ObjectMeta alone (its accessor is the whole
			// object), an Unstructured's map
			var m any
			switch o := o.(type) {
			case *unstructured.Unstructured:
				m = o.Object["metadata"]
			case metav1.ObjectMetaAccessor:
				m = o.GetObjectMeta()
			}
			partial[i] = Object{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": m}
		}
		list["apiVersion"], list["kind"], list["items"] = "meta.k8s.io/v1", "PartialObjectMetadataList", partial
	}
	write(w, list)
}

// access answers whether the bundle holds what a request asks: nil, or
// the error the API server gave the collecting user, or NotHeld.
func (s *Server) access(k Kind, ns, name, sub string) error {
	res := schemaResource(k.Group(), k.Resource)
	if h := s.b.Header; h != nil && sub == "" {
		for _, nr := range h.NotRead {
			if nr.Resource != k.Qualified() || !covers(nr.Namespace, nr.Name, ns, name) {
				continue
			}
			if nr.Reason == string(metav1.StatusReasonNotFound) {
				return apierrors.NewNotFound(res, nr.Name)
			}
			return apierrors.NewForbidden(res, name, fmt.Errorf("%s", nr.Message))
		}
		for _, rd := range h.Read {
			if rd.Resource == k.Qualified() && covers(rd.Namespace, rd.Name, ns, name) {
				return nil
			}
		}
	} else if s.b.Header == nil && sub == "" && s.b.HasIn(k, ns) {
		return nil
	}
	return s.notHeld(k, ns, name, sub)
}

// unknownKind names a resource gpuops does not read, for notHeld.
func unknownKind(apiVersion, resource string) Kind {
	return Kind{APIVersion: apiVersion, Kind: resource, Resource: resource, Namespaced: true}
}

// notHeld records a request the input does not hold in Missing and is
// the answer to it.
func (s *Server) notHeld(k Kind, ns, name, sub string) error {
	what := k.Qualified()
	switch {
	case sub != "":
		what = k.Resource + "/" + sub
	case name != "":
		what = k.Kind + " " + name
	}
	if k.Namespaced && ns != "" {
		what += " in namespace " + ns
	}
	s.mu.Lock()
	if !slices.Contains(s.missing, what) {
		s.missing = append(s.missing, what)
	}
	s.mu.Unlock()
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: NotHeld,
		Message: "the input holds no " + what}}
}

// parsePath splits an API path: /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]]
// or /apis/GROUP/VERSION/...
func parsePath(path string) (apiVersion, ns, resource, name, sub string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		apiVersion, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		apiVersion, parts = parts[1]+"/"+parts[2], parts[3:]
	default:
		return "", "", "", "", "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		ns, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 || len(parts) > 3 {
		return "", "", "", "", "", false
	}
	resource = parts[0]
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = parts[2]
	}
	return apiVersion, ns, resource, name, sub, true
}

func schemaResource(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

// fieldSet holds the values of the fields sel reads of o, each by its
// dotted path ("" where o has none), as the API server's field selectors
// compare them: of an API type, the fields its registry lets a selector
// read (kubernetes v1.37.2 pkg/registry/core/pod/strategy.go
// ToSelectableFields, and event's, node's and resourceslice's alike); of
// a custom resource, any path.
func fieldSet(o runtime.Object, sel fields.Selector) fields.Set {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return mapFieldSet(u.Object, sel)
	}
	m := metaOf(o)
	set := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	switch o := o.(type) {
	case *corev1.Pod:
		set["spec.nodeName"], set["spec.schedulerName"], set["spec.serviceAccountName"] = o.Spec.NodeName, o.Spec.SchedulerName, o.Spec.ServiceAccountName
		set["spec.restartPolicy"], set["spec.hostNetwork"] = string(o.Spec.RestartPolicy), strconv.FormatBool(o.Spec.HostNetwork)
		set["status.phase"], set["status.podIP"], set["status.nominatedNodeName"] = string(o.Status.Phase), o.Status.PodIP, o.Status.NominatedNodeName
	case *corev1.Event:
		ref := o.InvolvedObject
		set["involvedObject.kind"], set["involvedObject.namespace"], set["involvedObject.name"] = ref.Kind, ref.Namespace, ref.Name
		set["involvedObject.uid"], set["involvedObject.apiVersion"] = string(ref.UID), ref.APIVersion
		set["involvedObject.resourceVersion"], set["involvedObject.fieldPath"] = ref.ResourceVersion, ref.FieldPath
		set["reason"], set["reportingComponent"], set["source"], set["type"] = o.Reason, o.ReportingController, o.Source.Component, o.Type
	case *corev1.Node:
		set["spec.unschedulable"] = strconv.FormatBool(o.Spec.Unschedulable)
	case *resourcev1.ResourceSlice:
		set["spec.driver"] = o.Spec.Driver
		if o.Spec.NodeName != nil {
			set["spec.nodeName"] = *o.Spec.NodeName
		}
	}
	return set
}

// mapFieldSet is fieldSet of a decoded object, by any dotted path.
func mapFieldSet(o Object, sel fields.Selector) fields.Set {
	set := fields.Set{}
	for _, req := range sel.Requirements() {
		var v any = o
		for _, key := range strings.Split(req.Field, ".") {
			m, _ := v.(Object)
			v = m[key]
		}
		switch v := v.(type) {
		case nil:
			set[req.Field] = ""
		case string:
			set[req.Field] = v
		default:
			set[req.Field] = fmt.Sprint(v)
		}
	}
	return set
}

// metaOf is an object's metadata: every object a bundle holds has it.
func metaOf(o runtime.Object) metav1.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		panic(fmt.Sprintf("bundle: %T without metadata", o))
	}
	return m
}

func metadataOf(o Object) Object { m, _ := o["metadata"].(Object); return m }
func nameOf(o Object) string     { s, _ := metadataOf(o)["name"].(string); return s }
func namespaceOf(o Object) string {
	s, _ := metadataOf(o)["namespace"].(string)
	return s
}

// writeProtobuf answers with objects at of kind k in protobuf: one
// object as kind when cont is "" and a name was asked (a single index and
// kind k.Kind), else a list.
func (s *Server) writeProtobuf(w http.ResponseWriter, apiVersion, kind, cont string, k Kind, at []int) {
	items := make([][]byte, len(at))
	for j, i := range at {
		b, err := s.protobufOf(k, i)
		if err != nil {
			status(w, apierrors.NewInternalError(err))
			return
		}
		items[j] = b
	}
	raw := protobufList(cont, items)
	if kind == k.Kind {
		raw = items[0]
	}
	w.Header().Set("Content-Type", protobufType)
	_, _ = w.Write(protobufBody(apiVersion, kind, raw))
}

func write(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func status(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	s := st.Status()
	s.Kind, s.APIVersion = "Status", "v1"
	body, _ := json.Marshal(s)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(body)
}
