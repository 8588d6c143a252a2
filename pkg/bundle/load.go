package bundle

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object is one object of an input, as its JSON decodes.
type Object = map[string]any

// Bundle is what --from read: the objects of the kinds gpuops reads, and
// the header when the input is gpuops's own.
type Bundle struct {
	Header *Header
	// Objects are the objects by kind: the built-in kinds as their API
	// types, decoded from the JSON straight into them (through a map they
	// cost twice the decoding, and again to encode for the reader), the
	// custom resources as Unstructured.
	Objects map[Kind][]runtime.Object
	// Marked are kinds an input says the cluster has none of without an
	// object to show it: must-gather's cluster_policy.missing.
	Marked map[Kind]bool
	// Skipped counts the objects of kinds gpuops does not read, by kind.
	Skipped map[string]int
	// seen are the objects kept, by kind and namespace/name: an object
	// two files hold is kept once, as must-gather holds the operator's pod
	// in gpu_operator_pod.yaml and again in gpu_operand_pods.yaml.
	seen map[Kind]map[string]bool
	// namespaces are those the input holds an object in (HasIn).
	namespaces map[string]bool
}

// mustGatherMarks are the files NVIDIA's must-gather writes for a kind the
// cluster has none of (NVIDIA/gpu-operator v26.7.0 hack/must-gather.sh:
// `touch "${ARTIFACT_DIR}/cluster_policy.missing"`).
var mustGatherMarks = map[string]Kind{"cluster_policy.missing": mustKind("nvidia.com/v1", "ClusterPolicy")}

func mustKind(apiVersion, kind string) Kind {
	k, ok := KindOf(apiVersion, kind)
	if !ok {
		panic("bundle: unknown kind " + kind)
	}
	return k
}

// Load reads src: a file (gzip when its name ends in .gz), a folder (its
// .yaml, .yml and .json files, gzipped or not, in every subfolder; every
// other file, such as must-gather's logs and describe texts, is skipped)
// or, for "-", stdin (gzip when it starts as gzip does). Each file holds
// YAML or JSON documents, each an object or a List of them. An input that
// is not YAML or JSON, or holds nothing gpuops reads, is an error.
func Load(src string, stdin io.Reader) (*Bundle, error) {
	b := &Bundle{Objects: map[Kind][]runtime.Object{}, Marked: map[Kind]bool{}, Skipped: map[string]int{}, seen: map[Kind]map[string]bool{},
		namespaces: map[string]bool{}}
	if src == "-" {
		r := bufio.NewReader(stdin)
		if magic, _ := r.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
			return b, b.finish("stdin", b.readGzip("stdin", r))
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return b, fmt.Errorf("stdin: %w", err)
		}
		return b, b.finish("stdin", b.decode("stdin", data))
	}
	info, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return b, b.finish(src, b.readFile(src))
	}
	files := 0
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if k, ok := mustGatherMarks[d.Name()]; ok {
			b.Marked[k] = true
			files++
			return nil
		}
		if !readable(path) {
			return nil
		}
		files++
		return b.readFile(path)
	})
	if err == nil && files == 0 {
		err = fmt.Errorf("%s: no .yaml, .yml or .json file", src)
	}
	return b, b.finish(src, err)
}

// readable reports whether a folder's file is one Load reads.
func readable(path string) bool {
	name := strings.TrimSuffix(strings.ToLower(path), ".gz")
	return slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(name))
}

func (b *Bundle) readFile(path string) error {
	if !strings.HasSuffix(path, ".gz") {
		// read at once into a buffer of its size: grown as it is read, a
		// large bundle's was a tenth of a judge's CPU, zeroing memory
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return b.decode(path, data)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return b.readGzip(path, f)
}

// readGzip reads a gzip stream: a truncated file is said as such, not as
// bad YAML.
func (b *Bundle) readGzip(name string, r io.Reader) error {
	z, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%s: gzip: %w", name, err)
	}
	defer z.Close()
	data, err := io.ReadAll(z)
	if err != nil {
		return fmt.Errorf("%s: gzip: %w", name, err)
	}
	return b.decode(name, data)
}

// decode reads every YAML or JSON document of data: a JSON input of Lists
// by listsOf, any other with the decoder that reads both.
func (b *Bundle) decode(name string, data []byte) error {
	if lists, ok := listsOf(data); ok {
		return b.keepLists(name, lists)
	}
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 64<<10)
	for {
		var doc json.RawMessage
		err := d.Decode(&doc)
		if err == io.EOF {
			return nil
		}
		if err == nil && len(doc) > 0 && doc[0] != '{' && string(doc) != "null" {
			err = fmt.Errorf("a document is not an object")
		}
		if err != nil {
			return fmt.Errorf("%s: not YAML or JSON: %w", name, err)
		}
		if len(doc) == 0 || string(doc) == "null" {
			continue // an empty document
		}
		if err := b.add(name, doc, "", ""); err != nil {
			return err
		}
	}
}

// add keeps doc: a List's items one by one (an item without its kind takes
// the List's: apiVersion and itemKind), the header, or an object of a kind
// gpuops reads; another kind is counted in Skipped.
func (b *Bundle) add(name string, doc json.RawMessage, apiVersion, itemKind string) error {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	var found bool
	head.APIVersion, head.Kind, found = typeMeta(doc)
	if !found || strings.HasSuffix(head.Kind, "List") {
		if err := json.Unmarshal(doc, &head); err != nil {
			return fmt.Errorf("%s: not a Kubernetes object: %w", name, err)
		}
	}
	// kubectl's List carries each item's kind; a typed list (PodList, as
	// `kubectl get --raw` prints it) does not
	if head.Kind == "" && itemKind != "" {
		head.APIVersion, head.Kind = apiVersion, itemKind
	}
	if head.Items != nil && strings.HasSuffix(head.Kind, "List") {
		for _, it := range head.Items {
			if len(it) == 0 || it[0] != '{' {
				return fmt.Errorf("%s: a List item is not an object", name)
			}
			if err := b.add(name, it, head.APIVersion, strings.TrimSuffix(head.Kind, "List")); err != nil {
				return err
			}
		}
		return nil
	}
	if head.APIVersion == HeaderAPIVersion && head.Kind == HeaderKind {
		return b.header(name, doc)
	}
	k, ok := KindOf(head.APIVersion, head.Kind)
	if !ok {
		b.skip(head.APIVersion, head.Kind)
		return nil
	}
	o, err := decodeObject(k, doc)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return b.keep(name, k, o)
}

// header keeps the header doc.
func (b *Bundle) header(name string, doc []byte) error {
	var h Header
	if err := json.Unmarshal(doc, &h); err != nil {
		return fmt.Errorf("%s: %s header: %w", name, HeaderKind, err)
	}
	if b.Header != nil {
		return fmt.Errorf("%s: a second %s header: one bundle at a time", name, HeaderKind)
	}
	b.Header = &h
	return nil
}

// skip counts an object of a kind gpuops does not read.
func (b *Bundle) skip(apiVersion, kind string) {
	b.Skipped[strings.TrimPrefix(apiVersion+"/"+kind, "/")]++
}

// keep keeps o, of kind k, unless an object of the same kind, namespace
// and name was kept before.
func (b *Bundle) keep(name string, k Kind, o runtime.Object) error {
	m, err := meta.Accessor(o)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", name, k.Kind, err)
	}
	if b.seen[k] == nil {
		b.seen[k] = map[string]bool{}
	}
	// the first read is kept: the files are read in lexical order, so
	// which one is the same every time
	key := m.GetNamespace() + "/" + m.GetName()
	if key != "/" && b.seen[k][key] {
		return nil
	}
	b.seen[k][key] = true
	b.namespaces[m.GetNamespace()] = true
	b.Objects[k] = append(b.Objects[k], o)
	return nil
}

// decodeObject decodes an object of kind k: its API type for a built-in
// kind, else an Unstructured; its apiVersion and kind set either way.
func decodeObject(k Kind, doc json.RawMessage) (runtime.Object, error) {
	var o runtime.Object
	if newTyped, ok := typedKinds[k.Kind]; ok {
		o = newTyped()
		if err := json.Unmarshal(doc, o); err != nil {
			return nil, fmt.Errorf("%s: %w", k.Kind, err)
		}
	} else {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", k.Kind, err)
		}
		o = u
	}
	o.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(k.APIVersion, k.Kind))
	return o, nil
}

// finish wraps err with the input's name, or refuses an input that holds
// nothing gpuops reads.
func (b *Bundle) finish(src string, err error) error {
	if err != nil {
		return err
	}
	if b.Header != nil || len(b.Objects) > 0 || len(b.Marked) > 0 {
		return nil
	}
	if len(b.Skipped) == 0 {
		return fmt.Errorf("%s: holds no object", src)
	}
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range b.Skipped {
			if !yield(k) {
				return
			}
		}
	})
	return fmt.Errorf("%s: holds no object gpuops reads (only %s)", src, strings.Join(kinds, ", "))
}

// Has reports whether the input holds objects of kind k, or says the
// cluster has none (a kubectl dump without a header: a kind it does not
// hold was not dumped).
func (b *Bundle) Has(k Kind) bool { return len(b.Objects[k]) > 0 || b.Marked[k] }

// HasIn reports whether the input holds kind k (Has) in namespace ns ("":
// every one): a namespace it holds no object of, of any kind, it did not
// dump. A dump of one namespace's pods (must-gather's of the operator's)
// says nothing of another's, so that a pod looked for there is not held
// rather than not found; a dump of every namespace holds a namespace's
// pods and so its other kinds, none of them too.
func (b *Bundle) HasIn(k Kind, ns string) bool {
	return b.Has(k) && (!k.Namespaced || ns == "" || b.namespaces[ns])
}

// WithoutManagedFields reports whether the input is a kubectl output
// whose nodes lack their managedFields, which `kubectl get` hides unless
// --show-managed-fields: who wrote a label and when is then unknown (a
// pause is never STUCK, the ledger names no one). A bundle keeps those a
// judge reads (collect).
func (b *Bundle) WithoutManagedFields() bool {
	nodes := b.Objects[mustKind("v1", "Node")]
	return b.Header == nil && len(nodes) > 0 && !slices.ContainsFunc(nodes, func(o runtime.Object) bool {
		m, err := meta.Accessor(o)
		return err == nil && m.GetManagedFields() != nil
	})
}
