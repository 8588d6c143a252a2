package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// lastApplied is kubectl apply's copy of the whole object as applied: its
// environment's values included, and nothing a judge reads.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Scrub drops of an object what no judge reads and may hold a secret or
// outweigh the rest: its managedFields (a node's are trimmed by the
// collector to the entries a judge traces, and kept when keepManaged), the
// last applied configuration, every container's environment. o is an API
// type, as a built-in kind is read, or an Unstructured, as a custom
// resource is.
func Scrub(o runtime.Object, keepManaged bool) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		scrubMap(u.Object, keepManaged)
		return
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	if !keepManaged {
		m.SetManagedFields(nil)
	}
	delete(m.GetAnnotations(), lastApplied)
	var spec *corev1.PodSpec
	switch o := o.(type) {
	case *corev1.Pod:
		spec = &o.Spec
	case *appsv1.DaemonSet:
		spec = &o.Spec.Template.Spec
	case *appsv1.Deployment:
		spec = &o.Spec.Template.Spec
	case *appsv1.ReplicaSet:
		spec = &o.Spec.Template.Spec
	default:
		return
	}
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			cs[i].Env = nil
		}
	}
	for i := range spec.EphemeralContainers {
		spec.EphemeralContainers[i].Env = nil
	}
}

// scrubMap is Scrub of a decoded object.
func scrubMap(o Object, keepManaged bool) {
	if m := metadataOf(o); m != nil {
		if !keepManaged {
			delete(m, "managedFields")
		}
		if a, ok := m["annotations"].(Object); ok {
			delete(a, lastApplied)
		}
	}
	dropEnv(o)
}

// dropEnv deletes env from every container, init and ephemeral container
// of a pod spec anywhere in v (a pod's, a DaemonSet's template's).
func dropEnv(v any) {
	switch v := v.(type) {
	case Object:
		for k, x := range v {
			if k == "containers" || k == "initContainers" || k == "ephemeralContainers" {
				if cs, ok := x.([]any); ok {
					for _, c := range cs {
						if c, ok := c.(Object); ok {
							delete(c, "env")
						}
					}
					continue
				}
			}
			dropEnv(x)
		}
	case []any:
		for _, x := range v {
			dropEnv(x)
		}
	}
}

// Write writes a bundle, one Kubernetes List whose first item is the
// header, as YAML or else JSON, one item at a time. Each item is what
// encoding/json makes of it: an Object, or an API type with its apiVersion
// and kind set, as collect keeps the built-in kinds (marshalled from the
// type, without a map in between).
func Write[T any](w io.Writer, asYAML bool, h *Header, items []T) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if asYAML {
		fmt.Fprint(bw, "apiVersion: v1\nkind: List\nmetadata: {}\nitems:\n")
	} else {
		fmt.Fprint(bw, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{},\"items\":[\n")
	}
	for i := -1; i < len(items); i++ {
		b := head
		if i >= 0 {
			if b, err = json.Marshal(items[i]); err != nil {
				return err
			}
		}
		if asYAML {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
			for j, line := range bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
				if j == 0 {
					bw.WriteString("- ")
				} else {
					bw.WriteString("  ")
				}
				bw.Write(line)
			}
			bw.WriteString("\n")
			continue
		}
		if i >= 0 {
			bw.WriteString(",\n")
		}
		bw.Write(b)
	}
	if !asYAML {
		bw.WriteString("\n]}\n")
	}
	return bw.Flush()
}
