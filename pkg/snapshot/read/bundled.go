package read

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// A bundle (pkg/bundle, written by pkg/collect) holds of each built-in
// object what the reads of its kind keep, so that a read of the bundle
// (--from) makes the snapshot a read of the cluster makes, from a fraction
// of the bytes: the union of the trims this package declares for the kind
// (spec), every label (a judge groups nodes by any, and the bundle's server
// selects by any), and the name and namespace by which that server answers.
// A kind no read trims (DaemonSets, the operator's Deployment: few, and
// read whole) is kept whole. The trims are the one list of what the judges
// read: a field a read comes to keep is in the bundles collected after.

// specs are the trims the reads declare, by kind.
var specs = map[string][]fields{}

// spec declares want as a trim of kind's objects, and returns it.
func spec(kind string, want fields) fields {
	specs[kind] = append(specs[kind], want)
	return want
}

// named is what a bundle keeps of every object besides what its reads keep:
// its name, namespace and labels.
var named = fields{1: fields{1: whole, 3: whole, 11: readLabels}}

// bundled is what a bundle keeps of each kind a read trims.
var bundled = sync.OnceValue(func() map[string]fields {
	out := map[string]fields{}
	for kind, trims := range specs {
		var u keep = named
		for _, t := range trims {
			u = union(u, t)
		}
		out[kind] = u.(fields)
	}
	return out
})

// union keeps what a or what b keeps, and more where that is simpler: a
// condition dropped (unlessSet), the entries that two trims pick each their
// own way (a pod's conditions: PodFrom's and GPUPodFrom's) kept whole.
// Labels picked by the read's label filter stay so: a bundle's trim has
// none, and keeps every label.
func union(a, b keep) keep {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	if u, ok := a.(unlessSet); ok {
		a = u.keep
	}
	if u, ok := b.(unlessSet); ok {
		b = u.keep
	}
	switch a := a.(type) {
	case fields:
		if b, ok := b.(fields); ok {
			out := make(fields, max(len(a), len(b)))
			for i := range out {
				var x, y keep
				if i < len(a) {
					x = a[i]
				}
				if i < len(b) {
					y = b[i]
				}
				out[i] = union(x, y)
			}
			return out
		}
	case entries:
		if b, ok := b.(entries); ok && a.by == nil && b.by == nil {
			return readLabels
		}
	}
	return whole
}

// Message is an API type with its generated protobuf codec.
type Message interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// EachBundled reads a list body of kind's objects, protobuf or JSON, item
// by item, and calls fn with what a bundle keeps of each (above), decoded
// into a fresh object of newItem, and with the item's whole protobuf bytes,
// valid only during the call. A JSON item is encoded as protobuf and
// trimmed as one that came so: the bundle is the same either way. It
// returns the list's continue token.
func EachBundled(body io.Reader, kind string, newItem func() Message, fn func(o Message, whole []byte) error) (string, error) {
	keep := bundled()[kind]
	decode := func(trimmed, whole []byte) error {
		if keep == nil {
			trimmed = whole
		}
		o := newItem()
		if err := o.Unmarshal(trimmed); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		return fn(o, whole)
	}
	r := bufio.NewReaderSize(body, bodyBuffer)
	if magic, _ := r.Peek(len(protobufMagic)); bytes.Equal(magic, protobufMagic) {
		return eachListItem(r, keep, nil, decode)
	}
	var t trimmer
	var trimmed []byte
	return eachJSONItem(r, nil, func(o runtime.Object) error {
		m, ok := o.(Message)
		if !ok {
			return fmt.Errorf("%s: unexpected %T in list", kind, o)
		}
		whole, err := m.Marshal()
		if err != nil {
			return err
		}
		if trimmed, err = t.trim(trimmed[:0], whole, keep); err != nil {
			return fmt.Errorf("list item: %w", err)
		}
		return decode(trimmed, whole)
	})
}
