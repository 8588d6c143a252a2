package realinstall_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/operand"
)

// schemaFields is pkg/operand's record of the ClusterPolicy CRD of every
// tag read: by tag, the spec fields its CRD serves of those some tags lack.
const schemaFields = "../../pkg/operand/testdata/clusterpolicy-fields.txt"

// With no operator Deployment and no chart label on the ClusterPolicy, the
// release is told from the served ClusterPolicy CRD's schema: the CRD of
// each tag read (the fields it serves of those that vary, and two every tag
// serves) is judged as that tag's release line, as the note says; a CRD
// without a field any later release added as the oldest gpuops knows,
// which it may be older than; a schema that spells out no field of spec
// (kept open) tells nothing, and the operator's version goes unsaid, as
// before.
func TestReleaseFromTheCRDsSchema(t *testing.T) {
	in := newReleaseInstall(t, "operator.yaml", operand.Newest(), "v26.7.0")
	ctx := context.Background()
	if err := in.env.Client.AppsV1().Deployments(in.env.Namespace).Delete(ctx, "gpu-operator", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	crds := in.dyn.Resource(crdGVR)
	const name = "clusterpolicies.nvidia.com"
	original, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	openSpec, _, _ := unstructured.NestedSlice(original.Object, "spec", "versions")
	setSpec := func(t *testing.T, spec map[string]any) {
		t.Helper()
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for i := range versions {
			v := versions[i].(map[string]any)
			if err := unstructured.SetNestedField(v, spec, "schema", "openAPIV3Schema", "properties", "spec"); err != nil {
				t.Fatal(err)
			}
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // the other tests' CRD, its spec open
		v := openSpec[0].(map[string]any)
		spec, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec")
		setSpec(t, spec)
	})

	raw, err := os.ReadFile(schemaFields)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	served := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if rest, ok := strings.CutPrefix(line, "# tags: "); ok {
			tags = strings.Fields(rest)
		}
		if f := strings.Fields(line); len(f) > 1 && !strings.HasPrefix(line, "#") {
			for _, tag := range f[1:] {
				served[tag] = append(served[tag], f[0])
			}
		}
	}
	if len(tags) == 0 {
		t.Fatalf("%s names no tag", schemaFields)
	}
	for _, tag := range tags {
		want, _ := operand.ReleaseOf(tag)
		setSpec(t, specSchema(append([]string{"driver.enabled", "toolkit.enabled"}, served[tag]...)))
		op := in.operatorOf(t)
		note := "the oldest release whose ClusterPolicy CRD serves spec."
		if want.Version == operand.Releases[0].Version {
			note = "serves no field a later release added (it may be older)"
		}
		if op == nil || op.Version != "" || op.JudgedAs != want.Version || !strings.Contains(op.Note, "judged as "+want.Version) || !strings.Contains(op.Note, note) {
			t.Errorf("the CRD of %s: operator %+v, want judged as %s with a note %q", tag, op, want.Version, note)
		}
		// A bundle holds the CRD, and so judges as the cluster does: at a
		// tag not judged as the newest, which a read without the CRD falls
		// back to. Once: the read is the same at every tag. (Not kubectl's
		// output: a cluster with no Deployment at all leaves none in it, so
		// that --from says it holds none, and cannot judge by the CRD.)
		if tag == tags[0] {
			c := gpuopstest.On(in.env)
			bundle := filepath.Join(t.TempDir(), "bundle.yaml")
			c.Want(t, 0, "collect", "-o", bundle)
			for _, args := range [][]string{{"health", "-o", "json", "-l", in.selector()}, {"audit", "--explain", "-l", in.selector()}} {
				c.SameFrom(t, args, gpuopstest.Volatile{}, nil, bundle)
			}
		}
	}
	setSpec(t, map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true})
	if op := in.operatorOf(t); op != nil {
		t.Errorf("an open schema: operator %+v, want none said", op)
	}
}

// operatorOf is the operator health -o json says it judged by.
func (in *install) operatorOf(t *testing.T) *struct{ Version, JudgedAs, Note string } {
	t.Helper()
	r := in.judge(t, "health", "-o", "json")
	var v struct {
		Operator *struct{ Version, JudgedAs, Note string }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || r.Code > 1 {
		t.Fatalf("health -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return v.Operator
}

// specSchema is the schema of spec with the fields given (dotted paths
// below spec), every object's other fields kept open.
func specSchema(fields []string) map[string]any {
	object := func() map[string]any {
		return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": map[string]any{}}
	}
	spec := object()
	for _, f := range fields {
		at := spec
		names := strings.Split(f, ".")
		for i, n := range names {
			props := at["properties"].(map[string]any)
			next, ok := props[n].(map[string]any)
			if !ok {
				next = object()
				if i == len(names)-1 {
					next = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
				}
				props[n] = next
			}
			if next["properties"] == nil && i < len(names)-1 {
				next["type"], next["properties"] = "object", map[string]any{}
			}
			at = next
		}
	}
	return spec
}
