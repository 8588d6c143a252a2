package read

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldsel "k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// readDevicePools lists the DRA driver's ResourceSlices (of opts.Node alone
// when set), one LIST narrowed on the server by field selector: the API
// server selects ResourceSlices by spec.driver and spec.nodeName
// (kubernetes v1.37.2 pkg/apis/resource/v1/conversion.go). A cluster that
// does not serve resource.k8s.io/v1, or a user who may not list them, is a
// note: the devices then go unjudged.
func readDevicePools(ctx context.Context, rc rest.Interface, opts Options) (map[string][]snapshot.DevicePool, []string, error) {
	sel := fieldsel.OneTermEqualSelector("spec.driver", snapshot.DRADriverName)
	if opts.Node != "" {
		sel = fieldsel.AndSelectors(sel, fieldsel.OneTermEqualSelector("spec.nodeName", opts.Node))
	}
	r := poolReader{pools: map[string][]snapshot.DevicePool{}}
	err := readList(ctx, func() *rest.Request { return rc.Get().Resource("resourceslices") },
		metav1.ListOptions{Limit: opts.PageSize, FieldSelector: sel.String()}, sliceFields, nil, nil, &resourcev1.ResourceSliceList{}, r.add)
	switch {
	case apierrors.IsNotFound(err):
		return nil, []string{"DRA devices not judged: the cluster does not serve resourceslices.resource.k8s.io/v1"}, nil
	case apierrors.IsForbidden(err):
		return nil, []string{"DRA devices not judged (whether each node publishes its GPUs is unknown): " + refused(err, "list", "resourceslices.resource.k8s.io")}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("list resourceslices of driver %s: %w", snapshot.DRADriverName, err)
	}
	return r.pools, nil, nil
}

// sliceFields are what snapshot.SlicePool reads of a ResourceSlice: its
// driver, pool and node. Its devices are decoded one by one (poolReader).
var sliceFields = spec("ResourceSlice", fields{
	2: fields{ // spec
		1: whole, // driver
		2: whole, // pool
		3: whole, // nodeName
	},
})

// deviceFields are what DevicePool.AddDevice reads of a device: its name,
// type and taints, not its capacities, counters and other attributes (most
// of a slice).
var deviceFields = fields{
	1: whole,      // name
	2: deviceType, // attributes
	8: whole,      // taints
}

// The devices of a slice, as poolReader reads them, are among what a
// bundle keeps of it (bundled).
var _ = spec("ResourceSlice", fields{2: fields{6: deviceFields}})

// deviceType keeps a device's type attribute alone.
var deviceType = entries{func(key string) bool { return key == snapshot.DeviceTypeAttr }}

// poolReader folds the slices a read lists into pools, and decodes the
// devices of each one by one into one Device, its attribute map cleared
// for the next: decoded with their slice, each device was a map of its own
// for its one attribute, a visible share of health's CPU and of the fresh
// pages it faulted in on a lab-sized fleet (docs/scale.md, "Mechanisms").
type poolReader struct {
	pools   map[string][]snapshot.DevicePool
	device  resourcev1.Device
	trim    trimmer
	trimmed []byte
}

// add folds a slice decoded without its devices and, from its whole bytes,
// the devices; a slice that came as JSON (no bytes) was decoded whole.
func (r *poolReader) add(s *resourcev1.ResourceSlice, whole []byte) error {
	if whole == nil {
		snapshot.AddSlice(r.pools, s)
		return nil
	}
	pool := snapshot.SlicePool(r.pools, &s.Spec)
	if pool == nil {
		return nil
	}
	return eachField(whole, 2, func(spec []byte) error {
		return eachField(spec, 6, func(device []byte) (err error) { // spec.devices
			if r.trimmed, err = r.trim.trim(r.trimmed[:0], device, deviceFields); err != nil {
				return fmt.Errorf("device: %w", err)
			}
			attributes, taints := r.device.Attributes, r.device.Taints
			clear(attributes)
			r.device = resourcev1.Device{Attributes: attributes, Taints: taints[:0]}
			if err := r.device.Unmarshal(r.trimmed); err != nil {
				return fmt.Errorf("device: %w", err)
			}
			pool.AddDevice(&r.device)
			return nil
		})
	})
}
