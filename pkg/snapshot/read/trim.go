package read

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Decoding a whole pod costs far more than the few fields a judge reads:
// most of its bytes are managedFields, annotations, containers and volumes.
// So the protobuf bytes of each list item are trimmed to the fields that
// NodeFrom and PodFrom read, and only those are unmarshalled (by the API
// types' own generated code) before the usual conversion. Field numbers are
// the API's protobuf tags, which never change meaning.

// fields is what to keep of one protobuf message, by field number: all of
// a field (whole), a message trimmed in turn (fields), some elements of a
// repeated message (entries), a message kept only while a sibling is empty
// (unlessSet), or, nil, nothing. A slice indexed by number
// and not a map: a map lookup for each field of every item was a large
// share of the trim's CPU (docs/scale.md, "Mechanisms").
type fields []keep

// keep says what of a field is kept.
type keep interface{ kept() }

// all keeps a field whole; whole is the one value of it.
type all struct{}

var whole = all{}

func (all) kept()       {}
func (fields) kept()    {}
func (entries) kept()   {}
func (unlessSet) kept() {}

// entries keeps the elements of a repeated message, a map's entries
// included, whose field 1 (a map entry's key, a node condition's type)
// passes by; a nil by is the read's labelFilter. What is not kept is never
// decoded.
type entries struct{ by func(key string) bool }

// unlessSet keeps a message field, trimmed to keep, only when the field
// numbered by, a sibling before it, is absent or empty: a DaemonSet pod's
// affinity names its node, which only a pod not yet bound needs (its
// spec.nodeName says it otherwise). The API server writes a message's fields
// in the order of their numbers; one that came out of order (by after the
// field) would leave the field kept, as without the condition.
type unlessSet struct {
	by   protowire.Number // a string field, numbered below 64
	keep fields
}

// readLabels are labels, of which the read's labelFilter picks those kept.
var readLabels = entries{}

// labelFilter picks the labels a trimmed item keeps, by key; nil keeps them
// all. Labels not kept are never decoded: a real node has a hundred-odd, and
// the judges read about ten. The key it gets shares the item's bytes (no
// copy for each of a fleet's labels), valid only during the call: a filter
// compares it, it does not keep it.
type labelFilter func(key string) bool

// podLabels keeps the pod labels PodFrom reads (and a ControllerRevision's,
// snapshot.RevisionFrom): the DaemonSet's template hash.
func podLabels(key string) bool { return key == operand.RevisionHashLabel }

// podFields are what PodFrom reads.
var podFields = spec("Pod", fields{
	1: fields{ // metadata
		1:  whole,         // name
		9:  whole,         // deletionTimestamp
		11: readLabels,    // labels: a DaemonSet pod's controller-revision-hash (podLabels)
		13: controllerRef, // ownerReferences
	},
	2: fields{ // spec
		10: whole, // nodeName
		// affinity: the node a DaemonSet pod is for (daemonset.TargetNode),
		// while it is not bound: decoding it for every pod was a quarter
		// of the decode's allocations (BenchmarkDecodePodPage)
		18: unlessSet{by: 10, keep: fields{
			1: fields{ // nodeAffinity
				1: fields{ // requiredDuringSchedulingIgnoredDuringExecution
					1: fields{ // nodeSelectorTerms
						2: whole, // matchFields
					},
				},
			},
		}},
	},
	3: fields{ // status
		1:  whole, // phase
		2:  podConditions,
		3:  whole, // message
		4:  whole, // reason
		7:  whole, // startTime
		8:  containerStatusFields,
		10: containerStatusFields, // initContainerStatuses
	},
})

// controllerRef is what daemonset.Controller reads of an owner reference:
// not its uid or blockOwnerDeletion, two allocations a pod.
var controllerRef = fields{
	1: whole, // kind
	3: whole, // name
	5: whole, // apiVersion
	6: whole, // controller
}

// containerStatusFields are what PodFrom reads of a container status.
var containerStatusFields = fields{
	1: whole, // name
	2: whole, // state
	3: whole, // lastState
	4: whole, // ready
	5: whole, // restartCount
}

// nodeFields are what NodeFrom reads.
var nodeFields = spec("Node", fields{
	1: fields{ // metadata
		1:  whole,      // name
		11: readLabels, // labels, those the read's labelFilter keeps
		// annotations: only the marks of those who take a node out of
		// service; a real node's others alone can outweigh what is kept
		12: entries{operand.IsOutOfServiceAnnotation},
	},
	2: fields{ // spec
		4: whole, // unschedulable
		5: whole, // taints
	},
	3: fields{ // status: of a node's resources and conditions, those NodeFrom reads
		1: devices,        // capacity
		2: devices,        // allocatable
		4: nodeConditions, // conditions
	},
})

// devices are the entries of a node's resource list that NodeFrom counts:
// each other entry (cpu, memory, pods, hugepages) would be a Quantity
// parsed.
var devices = entries{snapshot.IsDeviceResource}

// nodeConditions and podConditions are the conditions NodeFrom and PodFrom
// read: a node's Ready of its five or more, three of a pod's five.
var (
	nodeConditions = entries{snapshot.NodeConditionRead}
	podConditions  = entries{snapshot.PodConditionRead}
)

// revisionFields are what an upgrades read keeps of a ControllerRevision:
// not its data, the whole template of its DaemonSet.
var revisionFields = spec("ControllerRevision", fields{
	1: fields{ // metadata
		1:  whole,      // name
		11: readLabels, // labels: the template hash (podLabels)
		13: whole,      // ownerReferences
	},
	3: whole, // revision
})

// eventFields are what snapshot.EventFrom reads of an Event, and the node it
// is about.
var eventFields = spec("Event", fields{
	2:  whole, // involvedObject
	4:  whole, // message
	6:  whole, // firstTimestamp
	7:  whole, // lastTimestamp
	9:  whole, // type
	10: whole, // eventTime
	11: whole, // series
})

// metadataFields are what NodeFrom reads of a PartialObjectMetadata: its
// field 1 is metadata, as a node's is.
var metadataFields = spec("Node", fields{1: fields{1: whole, 11: readLabels}})

// trimmer trims messages without allocating once warm: a nested message
// is trimmed into the scratch buffer of its depth before it is appended,
// and the buffers are kept for the next item. Allocating them afresh for
// every metadata, spec, status and container status was a visible share of
// a judge's decoding CPU on a lab-sized fleet (docs/scale.md, "Mechanisms").
type trimmer struct {
	scratch [][]byte
	labels  labelFilter
}

// trim appends to dst the fields of the message msg that want keeps.
func (t *trimmer) trim(dst, msg []byte, want fields) ([]byte, error) {
	return t.level(dst, msg, want, 0)
}

func (t *trimmer) level(dst, msg []byte, want fields, depth int) ([]byte, error) {
	var set uint64 // the fields below 64 seen so far with a non-empty value, for unlessSet
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		raw := msg[:n+m]
		msg = msg[n+m:]
		if num < 64 && m > 1 { // a value longer than an empty string's length byte
			set |= 1 << num
		}
		var sub keep
		if int(num) < len(want) {
			sub = want[num]
		}
		if u, ok := sub.(unlessSet); ok {
			if set&(1<<u.by) != 0 {
				continue
			}
			sub = u.keep
		}
		switch sub.(type) {
		case nil:
			continue
		case fields, entries:
			if typ != protowire.BytesType {
				return nil, fmt.Errorf("field %d: wire type %d, want a message", num, typ)
			}
		}
		switch sub := sub.(type) {
		case all:
			dst = append(dst, raw...)
		case entries:
			by := sub.by
			if by == nil {
				by = t.labels
			}
			if by != nil {
				entry, _ := protowire.ConsumeBytes(raw[n:])
				key, err := field(entry, 1)
				if err != nil {
					return nil, fmt.Errorf("field %d: %w", num, err)
				}
				if !by(unsafe.String(unsafe.SliceData(key), len(key))) {
					continue
				}
			}
			dst = append(dst, raw...)
		case fields:
			if depth == len(t.scratch) {
				t.scratch = append(t.scratch, nil)
			}
			inner, _ := protowire.ConsumeBytes(raw[n:])
			trimmed, err := t.level(t.scratch[depth][:0], inner, sub, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %d: %w", num, err)
			}
			t.scratch[depth] = trimmed
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendBytes(dst, trimmed)
		}
	}
	return dst, nil
}

// protobufMagic starts every protobuf body of the Kubernetes API.
var protobufMagic = []byte("k8s\x00")

// maxItem bounds the bytes of one list item, so a corrupt length cannot make
// the reader allocate without limit. The API server itself refuses objects
// above a few megabytes.
const maxItem = 64 << 20

// eachListItem reads a protobuf list body as it streams in (a
// runtime.Unknown whose raw field holds, say, a PodList: field 1 its
// ListMeta, field 2 each item) and calls fn on each item's bytes, trimmed to
// keep, and whole (valid only during the call). Only one item is in memory
// at a time, however long the list. It returns the list's continue token.
func eachListItem(r *bufio.Reader, keep fields, labels labelFilter, fn func(trimmed, whole []byte) error) (string, error) {
	magic, err := r.Peek(len(protobufMagic))
	if err != nil || !bytes.Equal(magic, protobufMagic) {
		return "", errors.New("not a protobuf body")
	}
	s := &stream{r: r}
	if err := s.skip(int64(len(protobufMagic))); err != nil {
		return "", err
	}
	var cont string
	var item, trimmed []byte
	t := trimmer{labels: labels}
	err = s.fields(-1, func(num protowire.Number, size int64) error {
		if num != 2 { // runtime.Unknown.raw
			return s.skip(size)
		}
		return s.fields(size, func(num protowire.Number, size int64) (err error) {
			if num != 1 && num != 2 {
				return s.skip(size)
			}
			var b []byte
			if b, item, err = s.next(item, size); err != nil {
				return err
			}
			if num == 1 { // ListMeta
				c, err := field(b, 3) // continue
				cont = string(c)
				return err
			}
			if trimmed, err = t.trim(trimmed[:0], b, keep); err != nil {
				return fmt.Errorf("list item: %w", err)
			}
			return fn(trimmed, b)
		})
	})
	if err != nil {
		return "", err
	}
	return cont, nil
}

// stream reads protobuf fields off a buffered body, counting the bytes it
// has consumed so that nested messages end where their length says.
type stream struct {
	r *bufio.Reader
	n int64
}

func (s *stream) ReadByte() (byte, error) {
	b, err := s.r.ReadByte()
	if err == nil {
		s.n++
	}
	return b, err
}

func (s *stream) skip(n int64) error {
	d, err := s.r.Discard(int(n))
	s.n += int64(d)
	return truncated(err)
}

// next consumes the next n bytes and returns them, valid until s is read
// again: in the reader's buffer when they fit there, as a list's items do,
// else read into buf, whose storage it reuses and returns. Not copying the
// items out of the buffer spares a copy of every byte of the list: the
// whole decompressed pod list passes through here.
func (s *stream) next(buf []byte, n int64) (b, grown []byte, err error) {
	if n > int64(s.r.Size()) {
		buf, err = s.read(buf, n)
		return buf, buf, err
	}
	if b, err = s.r.Peek(int(n)); err != nil {
		return nil, buf, truncated(err)
	}
	d, _ := s.r.Discard(int(n)) // Peek buffered them: n, and no error
	s.n += int64(d)
	return b, buf, nil
}

// read reads the next n bytes into buf, reusing its storage.
func (s *stream) read(buf []byte, n int64) ([]byte, error) {
	if n > maxItem {
		return nil, fmt.Errorf("list item of %d bytes: more than %d", n, maxItem)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	m, err := io.ReadFull(s.r, buf)
	s.n += int64(m)
	return buf, truncated(err)
}

// fields reads the fields of a message that ends size bytes on (-1: at the
// end of the body) and calls fn with the number and length of each
// length-delimited one; fn consumes exactly those bytes. Fields of other wire
// types are skipped.
func (s *stream) fields(size int64, fn func(num protowire.Number, size int64) error) error {
	end := s.n + size
	for size < 0 || s.n < end {
		tag, err := binary.ReadUvarint(s)
		if err == io.EOF && size < 0 {
			return nil
		}
		if err != nil {
			return truncated(err)
		}
		num, typ := protowire.DecodeTag(tag)
		switch typ {
		case protowire.BytesType:
			var length uint64
			if length, err = binary.ReadUvarint(s); err == nil {
				err = fn(num, int64(length))
			}
		case protowire.VarintType:
			_, err = binary.ReadUvarint(s)
		case protowire.Fixed32Type:
			err = s.skip(4)
		case protowire.Fixed64Type:
			err = s.skip(8)
		default:
			err = fmt.Errorf("field %d: unsupported wire type %d", num, typ)
		}
		if err != nil {
			return truncated(err)
		}
	}
	if s.n != end {
		return errors.New("a field overruns its message")
	}
	return nil
}

func truncated(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// field returns the bytes of the last occurrence of a length-delimited field
// (protobuf's rule for a repeated scalar field), or nil if it is absent.
func field(msg []byte, want protowire.Number) ([]byte, error) {
	var out []byte
	err := eachField(msg, want, func(v []byte) error { out = v; return nil })
	return out, err
}

// eachField calls fn with the bytes of every occurrence of a
// length-delimited field of a message, in order.
func eachField(msg []byte, want protowire.Number, fn func(v []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		if num == want && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(msg[n : n+m])
			if err := fn(v); err != nil {
				return err
			}
		}
		msg = msg[n+m:]
	}
	return nil
}
