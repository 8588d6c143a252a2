package bundle

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object is one object of an input, as its JSON decodes.
type Object = map[string]any

// Bundle is what --from read: the objects of the kinds gpuops reads, and
// the header when the input is gpuops's own.
type Bundle struct {
	Header  *Header
	Objects map[Kind][]Object
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
	b := &Bundle{Objects: map[Kind][]Object{}, Marked: map[Kind]bool{}, Skipped: map[string]int{}, seen: map[Kind]map[string]bool{},
		namespaces: map[string]bool{}}
	if src == "-" {
		r := bufio.NewReader(stdin)
		if magic, _ := r.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
			return b, b.finish("stdin", b.readGzip("stdin", r))
		}
		return b, b.finish("stdin", b.decode("stdin", r))
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
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if strings.HasSuffix(path, ".gz") {
		return b.readGzip(path, f)
	}
	return b.decode(path, f)
}

func (b *Bundle) readGzip(name string, r io.Reader) error {
	z, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%s: gzip: %w", name, err)
	}
	defer z.Close()
	return b.decode(name, gunzipped{z, name})
}

// gunzipped names a gzip stream's errors as gzip's: a truncated file is
// said as such, not as bad YAML.
type gunzipped struct {
	r    io.Reader
	name string
}

func (g gunzipped) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = &gzipError{fmt.Errorf("%s: gzip: %w", g.name, err)}
	}
	return n, err
}

type gzipError struct{ error }

func (e *gzipError) Unwrap() error { return e.error }

// decode reads every YAML or JSON document of r.
func (b *Bundle) decode(name string, r io.Reader) error {
	d := utilyaml.NewYAMLOrJSONDecoder(r, 64<<10)
	for {
		var doc Object
		err := d.Decode(&doc)
		if err == io.EOF {
			return nil
		}
		if ge := (*gzipError)(nil); errors.As(err, &ge) {
			return ge.error
		}
		if err != nil {
			return fmt.Errorf("%s: not YAML or JSON: %w", name, err)
		}
		if doc == nil {
			continue // an empty document
		}
		if err := b.add(name, doc); err != nil {
			return err
		}
	}
}

// add keeps one document: the header, an object of a kind gpuops reads,
// or each item of a List.
func (b *Bundle) add(name string, doc Object) error {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if items, ok := doc["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		// kubectl's List carries each item's kind; a typed list (PodList, as
		// `kubectl get --raw` prints it) does not
		itemKind := strings.TrimSuffix(kind, "List")
		for _, it := range items {
			o, ok := it.(Object)
			if !ok {
				return fmt.Errorf("%s: a List item is not an object", name)
			}
			if _, set := o["kind"]; !set && itemKind != "" {
				o["apiVersion"], o["kind"] = apiVersion, itemKind
			}
			if err := b.add(name, o); err != nil {
				return err
			}
		}
		return nil
	}
	if apiVersion == HeaderAPIVersion && kind == HeaderKind {
		raw, _ := json.Marshal(doc)
		var h Header
		if err := json.Unmarshal(raw, &h); err != nil {
			return fmt.Errorf("%s: %s header: %w", name, HeaderKind, err)
		}
		if b.Header != nil {
			return fmt.Errorf("%s: a second %s header: one bundle at a time", name, HeaderKind)
		}
		b.Header = &h
		return nil
	}
	k, ok := KindOf(apiVersion, kind)
	if !ok {
		b.Skipped[strings.TrimPrefix(apiVersion+"/"+kind, "/")]++
		return nil
	}
	if b.seen[k] == nil {
		b.seen[k] = map[string]bool{}
	}
	// the first read is kept: the files are read in lexical order, so
	// which one is the same every time
	key := namespaceOf(doc) + "/" + nameOf(doc)
	if key != "/" && b.seen[k][key] {
		return nil
	}
	b.seen[k][key] = true
	b.namespaces[namespaceOf(doc)] = true
	b.Objects[k] = append(b.Objects[k], doc)
	return nil
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
	return b.Header == nil && len(nodes) > 0 && !slices.ContainsFunc(nodes, func(o Object) bool { return metadataOf(o)["managedFields"] != nil })
}
