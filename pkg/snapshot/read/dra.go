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
	pools := map[string][]snapshot.DevicePool{}
	err := readList(ctx, func() *rest.Request { return rc.Get().Resource("resourceslices") },
		metav1.ListOptions{Limit: opts.PageSize, FieldSelector: sel.String()}, sliceFields, nil, reuseSlice, &resourcev1.ResourceSliceList{},
		func(s *resourcev1.ResourceSlice, _ []byte) error { snapshot.AddSlice(pools, s); return nil })
	switch {
	case apierrors.IsNotFound(err):
		return nil, []string{"DRA devices not judged: the cluster does not serve resourceslices.resource.k8s.io/v1"}, nil
	case apierrors.IsForbidden(err):
		return nil, []string{"DRA devices not judged (whether each node publishes its GPUs is unknown): the user may not list resourceslices.resource.k8s.io"}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("list resourceslices of driver %s: %w", snapshot.DRADriverName, err)
	}
	return pools, nil, nil
}

// sliceFields are what snapshot.AddSlice reads of a ResourceSlice: of a
// device its name, type and taints, not its capacities, counters and other
// attributes (most of a slice).
var sliceFields = fields{
	2: fields{ // spec
		1: whole, // driver
		2: whole, // pool
		3: whole, // nodeName
		6: fields{ // devices
			1: whole,      // name
			2: deviceType, // attributes
			8: whole,      // taints
		},
	},
}

// deviceType keeps a device's type attribute alone.
var deviceType = entries{func(key string) bool { return key == snapshot.DeviceTypeAttr }}

// reuseSlice empties a decoded ResourceSlice for the next, keeping the
// storage of its devices: AddSlice keeps none of them.
func reuseSlice(s *resourcev1.ResourceSlice) {
	devices := s.Spec.Devices
	*s = resourcev1.ResourceSlice{}
	s.Spec.Devices = devices[:0]
}
