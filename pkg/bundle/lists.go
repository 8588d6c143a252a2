package bundle

import (
	"encoding/json"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
)

// listItem is an item of a List listsOf read: an object of a kind gpuops
// reads, decoded; the header's bytes; or the apiVersion and kind of an
// object gpuops does not read.
type listItem struct {
	kind                Kind
	object              runtime.Object
	header              []byte
	apiVersion, skipped string
}

// decodeBatch is how many items a core takes at a time.
const decodeBatch = 64

// listsOf reads a JSON input whose documents are Lists, as collect writes
// it and `kubectl get -o json` prints it, and decodes their items of the
// kinds gpuops reads side by side on every core: decoding is most of the
// loading of a large input. It returns false, having kept nothing, where it
// leaves the input to the decoder that reads any: not JSON the scanner
// follows (YAML), a document that is no List, an item whose apiVersion and
// kind it does not read off its first keys (a typed list's) or that is a
// List, an item that does not decode (that decoder then says why).
func listsOf(data []byte) ([][]listItem, bool) {
	docs, ok := documents(data)
	if !ok || len(docs) == 0 {
		return nil, false
	}
	var lists [][]listItem
	var todo []*listItem
	var raw [][]byte
	for _, doc := range docs {
		if string(doc) == "null" {
			continue
		}
		if _, kind, found := typeMeta(doc); !found || !strings.HasSuffix(kind, "List") {
			return nil, false
		}
		items, ok := listItems(doc)
		if !ok {
			return nil, false
		}
		l := make([]listItem, len(items))
		for i, it := range items {
			apiVersion, kind, found := typeMeta(it)
			k, known := KindOf(apiVersion, kind)
			switch {
			case !found || strings.HasSuffix(kind, "List"):
				return nil, false
			case apiVersion == HeaderAPIVersion && kind == HeaderKind:
				l[i].header = it
			case known:
				l[i].kind = k
				todo, raw = append(todo, &l[i]), append(raw, it)
			case !json.Valid(it):
				return nil, false
			default:
				l[i].apiVersion, l[i].skipped = apiVersion, kind
			}
		}
		lists = append(lists, l)
	}
	var failed atomic.Bool
	var next atomic.Int64
	var wg sync.WaitGroup
	for range goruntime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !failed.Load() {
				start := int(next.Add(decodeBatch)) - decodeBatch
				if start >= len(todo) {
					return
				}
				for i := start; i < min(start+decodeBatch, len(todo)); i++ {
					o, err := decodeObject(todo[i].kind, raw[i])
					if err != nil {
						failed.Store(true)
						return
					}
					todo[i].object = o
				}
			}
		})
	}
	wg.Wait()
	return lists, !failed.Load()
}

// keepLists keeps what listsOf read, in the input's order.
func (b *Bundle) keepLists(name string, lists [][]listItem) error {
	for _, l := range lists {
		for _, it := range l {
			var err error
			switch {
			case it.header != nil:
				err = b.header(name, it.header)
			case it.object != nil:
				err = b.keep(name, it.kind, it.object)
			default:
				b.skip(it.apiVersion, it.skipped)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
