// Package bundle is gpuops's support bundle: what `gpuops collect` writes
// and what every judge reads with --from. A bundle is a Kubernetes List of
// the objects the judges read, each of a built-in kind cut to the fields
// they read (pkg/collect), led by a header (Header) saying when and
// from what it was taken and what could not be read; --from reads any
// `kubectl get -o yaml|json` output just as well (a List, or a stream of
// documents, a folder of files), without a header.
//
// The judges do not read a bundle themselves: Server answers the reader's
// requests (pkg/snapshot/read) from the objects as the API server would, so
// that the snapshot, and every verdict made of it, is the one a live read
// of the same objects makes. The package links no API client.
package bundle

import (
	"strings"
	"time"
)

// Kind is a kind of object gpuops reads, and the resource it is listed as.
type Kind struct {
	APIVersion string // as its objects carry it
	Kind       string
	Resource   string
	Namespaced bool
}

// Group is the kind's API group ("" for the core group).
func (k Kind) Group() string {
	g, _, ok := strings.Cut(k.APIVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// Qualified is the resource as RBAC and kubectl name it: pods,
// daemonsets.apps, clusterpolicies.nvidia.com.
func (k Kind) Qualified() string {
	if g := k.Group(); g != "" {
		return k.Resource + "." + g
	}
	return k.Resource
}

// Kinds are the kinds the judges read (pkg/snapshot/read): every other
// kind in an input is skipped, Secrets among them.
var Kinds = []Kind{
	{"v1", "Node", "nodes", false},
	{"v1", "Pod", "pods", true},
	{"v1", "Event", "events", true},
	{"v1", "ConfigMap", "configmaps", true},
	{"apps/v1", "DaemonSet", "daemonsets", true},
	{"apps/v1", "ControllerRevision", "controllerrevisions", true},
	{"apps/v1", "Deployment", "deployments", true},
	{"apps/v1", "ReplicaSet", "replicasets", true},
	{"resource.k8s.io/v1", "ResourceSlice", "resourceslices", false},
	{"resource.k8s.io/v1", "ResourceClaim", "resourceclaims", true},
	{"resource.k8s.io/v1", "DeviceClass", "deviceclasses", false},
	{"nvidia.com/v1", "ClusterPolicy", "clusterpolicies", false},
	{"nvidia.com/v1alpha1", "NVIDIADriver", "nvidiadrivers", false},
	// the ClusterPolicy's own, whose schema tells the operator's release
	// when nothing else does (read.ClusterPolicyCRD)
	{"apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", false},
}

// KindOf is the kind of objects of apiVersion and kind, if gpuops reads it.
func KindOf(apiVersion, kind string) (Kind, bool) {
	for _, k := range Kinds {
		if k.APIVersion == apiVersion && k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// resourceKind is the kind listed at group/version/resource.
func resourceKind(apiVersion, resource string) (Kind, bool) {
	for _, k := range Kinds {
		if k.APIVersion == apiVersion && k.Resource == resource {
			return k, true
		}
	}
	return Kind{}, false
}

// The header's type: the first item of a bundle.
const (
	HeaderAPIVersion = "gpuops.io/v1alpha1"
	HeaderKind       = "Bundle"
)

// Header says what a bundle holds: who wrote it and when, from which
// cluster, and for each resource whether it was read and where, or why
// not. Read and NotRead are what Server answers by: a request the bundle
// did not read is "not held", not an empty list.
type Header struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	GPUOps     string   `json:"gpuopsVersion"`
	// Time is when the objects were read: --from judges as of then unless
	// --now says otherwise.
	Time          time.Time `json:"time"`
	ServerVersion string    `json:"serverVersion,omitempty"`
	// Context and Server name the cluster as the collecting kubeconfig
	// did: a report of the bundle names it so.
	Context string `json:"context,omitempty"`
	Server  string `json:"server,omitempty"`
	// Namespace is the GPU Operator's, whose operands the bundle holds:
	// --from judges it unless -n says otherwise.
	Namespace string `json:"namespace"`
	// Redacted says the names of nodes, pods and namespaces are hashes
	// (collect --redact).
	Redacted bool      `json:"redacted,omitempty"`
	Read     []Read    `json:"read"`
	NotRead  []NotRead `json:"notRead,omitempty"`
}

// Metadata is the header's object metadata: a name, so that kubectl and
// other tools take it for an object.
type Metadata struct {
	Name string `json:"name"`
}

// Read is a resource the bundle read: in Namespace (every namespace when
// empty), the one object Name when set (a GET; absent from the bundle:
// it did not exist). Only says what of it was kept, when not all.
type Read struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Only      string `json:"only,omitempty"`
}

// NotRead is a resource the bundle could not read, and why: Reason is the
// API's (Forbidden: the collecting user may not; NotFound: the cluster
// does not serve it), Message its words.
type NotRead struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Reason    string `json:"reason"`
	Message   string `json:"message,omitempty"`
}

// covers reports whether an entry for namespace ns and name (empty: all)
// covers a request in namespace reqNS (empty: every one) for reqName
// (empty: a list).
func covers(ns, name, reqNS, reqName string) bool {
	return (ns == "" || ns == reqNS) && (name == "" || name == reqName)
}
