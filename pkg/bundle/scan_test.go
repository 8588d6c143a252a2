package bundle_test

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/bundle"
)

// A JSON input is read as its YAML is: the Lists the scanner follows, each
// item decoded on its own, and what it leaves to the decoder that reads
// any (a typed list, an object, a List in a List, a bad item) alike.
func TestJSONReadAsYAML(t *testing.T) {
	for _, c := range []struct {
		name string
		docs []string
		err  string
	}{
		{"kubectl's List", []string{`{
    "apiVersion": "v1",
    "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b", "labels": {"pool": "p1", "x": "a,}]\"{"}}},
        {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s", "namespace": "n"}, "data": {"k": "dg=="}}
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""}
}`}, ""},
		{"a stream of Lists, the header", []string{`{"apiVersion":"v1","kind":"List","metadata":{},"items":[
{"apiVersion":"gpuops.io/v1alpha1","kind":"Bundle","metadata":{"name":"gpuops"},"namespace":"gpu-operator","read":[{"resource":"nodes"}]},
{"kind":"Node","apiVersion":"v1","metadata":{"name":"a"}}]}`, "null",
			`{"apiVersion":"v1","kind":"List","items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"team"},"status":{"phase":"Running"}}]}`}, ""},
		{"a typed list and an object", []string{`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"p","namespace":"team"}}]}`,
			`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d","namespace":"gpu-operator"}}`}, ""},
		{"a List in a List", []string{`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}]}]}`}, ""},
		{"an item that does not decode", []string{`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":3}}]}`},
			"Node: json: cannot unmarshal number"},
		{"a bad item of a kind not read", []string{`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Secret","data":{"k":]}]}`}, "not YAML or JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fromJSON, errJSON := bundle.Load("-", strings.NewReader(strings.Join(c.docs, "\n")))
			if c.err != "" {
				if errJSON == nil || !strings.Contains(errJSON.Error(), c.err) {
					t.Fatalf("%v, want an error with %q", errJSON, c.err)
				}
				return
			}
			var docs []string
			for _, doc := range c.docs {
				y, err := yaml.JSONToYAML([]byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(y))
			}
			fromYAML, errYAML := bundle.Load("-", strings.NewReader(strings.Join(docs, "---\n")))
			if errJSON != nil || errYAML != nil {
				t.Fatalf("JSON: %v, YAML: %v", errJSON, errYAML)
			}
			if !reflect.DeepEqual(fromJSON.Objects, fromYAML.Objects) || !reflect.DeepEqual(fromJSON.Skipped, fromYAML.Skipped) ||
				!reflect.DeepEqual(fromJSON.Header, fromYAML.Header) || len(fromJSON.Objects) == 0 {
				t.Errorf("JSON read %+v %v %+v, YAML %+v %v %+v", fromJSON.Objects, fromJSON.Skipped, fromJSON.Header,
					fromYAML.Objects, fromYAML.Skipped, fromYAML.Header)
			}
		})
	}
}
