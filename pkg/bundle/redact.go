package bundle

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Maps are the objects as Redact takes them: an Unstructured's own map, an
// API type converted.
func Maps(items []runtime.Object) ([]Object, error) {
	out := make([]Object, len(items))
	for i, o := range items {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out[i] = u.Object
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// Redact replaces, in the header and every object, the names of the nodes,
// pods and namespaces the bundle holds by hashes of them salted with salt:
// the same name is the same hash throughout the bundle (so a pod's node,
// an Event's object, a selector's hostname still match), for a bundle
// posted in public. A node or pod name is replaced wherever it occurs in a
// string (a provider ID, a message, a claim named after its pod); a
// namespace only where a namespace is named (metadata.namespace, an
// Event's object, the ClusterPolicy's status, the header) and in messages,
// as the GPU Operator's namespace is often named as its component is
// ("gpu-operator", a label value the judges select on). The controllers of
// the pods outside the operator's namespace (a ReplicaSet's name is its
// Deployment's and a hash of its template) are replaced where they are
// named as such (redactOwners); the operator's own DaemonSets keep theirs,
// which the judges read.
func Redact(h *Header, items []Object, salt []byte) {
	names, namespaces := map[string]string{}, map[string]string{}
	salted := func(prefix, name string) string {
		sum := sha256.Sum256(append(slices.Clone(salt), name...))
		return prefix + hex.EncodeToString(sum[:5])
	}
	hash := func(into map[string]string, prefix, name string) {
		if name != "" && into[name] == "" {
			into[name] = salted(prefix, name)
		}
	}
	hash(namespaces, "ns-", h.Namespace)
	for _, o := range items {
		switch o["kind"] {
		case "Node":
			hash(names, "node-", nameOf(o))
		case "Pod":
			hash(names, "pod-", nameOf(o))
		}
		hash(namespaces, "ns-", namespaceOf(o))
	}
	redactOwners(items, h.Namespace, func(name string) string { return salted("owner-", name) })
	r := Redaction{names: replacer(names), namespaces: replacer(namespaces), namespace: namespaces}
	h.Namespace = r.namespaceName(h.Namespace)
	for i := range h.Read {
		h.Read[i].Namespace = r.namespaceName(h.Read[i].Namespace)
		h.Read[i].Only = r.namespaces.Replace(h.Read[i].Only)
	}
	for i := range h.NotRead {
		h.NotRead[i].Namespace = r.namespaceName(h.NotRead[i].Namespace)
		h.NotRead[i].Message = r.names.Replace(r.namespaces.Replace(h.NotRead[i].Message))
	}
	h.Context, h.Server = "", "" // they may name the cluster
	h.Redacted = true
	for _, o := range items {
		r.walk(o, "")
	}
}

// Redaction is one bundle's replacements.
type Redaction struct {
	names, namespaces *strings.Replacer
	namespace         map[string]string
}

// replacer replaces each key of m by its value, the longest first where
// two start at the same place.
func replacer(m map[string]string) *strings.Replacer {
	var pairs []string
	for _, k := range slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) }) {
		pairs = append(pairs, k, m[k])
	}
	return strings.NewReplacer(pairs...)
}

func (r Redaction) namespaceName(ns string) string {
	if h, ok := r.namespace[ns]; ok {
		return h
	}
	return ns
}

// walk redacts the strings of v, the value of key in its object.
func (r Redaction) walk(v any, key string) any {
	switch v := v.(type) {
	case Object:
		for k, x := range v {
			if k == "namespace" {
				if s, ok := x.(string); ok {
					v[k] = r.namespaceName(s)
					continue
				}
			}
			v[k] = r.walk(x, k)
		}
	case []any:
		for i, x := range v {
			v[i] = r.walk(x, key)
		}
	case string:
		s := r.names.Replace(v)
		if key == "message" {
			s = r.namespaces.Replace(s)
		}
		return s
	}
	return v
}

// redactOwners replaces by hash(name) the names of the controllers of
// objects outside namespace ns: each ownerReference's name and a
// ReplicaSet's own name, exactly, so that a pod still names its ReplicaSet
// and the ReplicaSet its Deployment. Only there: a controller's name can be
// a plain word ("web", "gpu") that a replacement inside every string would
// find in labels and images.
func redactOwners(items []Object, ns string, hash func(string) string) {
	for _, o := range items {
		if namespaceOf(o) == ns {
			continue
		}
		meta := metadataOf(o)
		if o["kind"] == "ReplicaSet" {
			if name, ok := meta["name"].(string); ok {
				meta["name"] = hash(name)
			}
		}
		refs, _ := meta["ownerReferences"].([]any)
		for _, ref := range refs {
			if ref, ok := ref.(Object); ok {
				if name, ok := ref["name"].(string); ok {
					ref["name"] = hash(name)
				}
			}
		}
	}
}
