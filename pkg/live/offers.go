package live

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldsel "k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// What health reads of how each node offers its GPUs, watched as the
// one-shot read lists it (pkg/snapshot/read dra.go, sharing.go): the DRA
// driver's ResourceSlices, trimmed to what snapshot.AddSlice reads and
// indexed by node; and the ConfigMaps the ClusterPolicy names for sharing
// and MIG, of which the tracker keeps only names and versions: a change to
// one of them reads the policy and its configs again, as a DaemonSet change
// does, since the device plugin and the MIG manager then reconfigure every
// node that uses it. Without the watch, a config edit would be judged
// against the old config (sharing-not-applied on every node that took the
// new one) until a DaemonSet changed.

// watchOffers adds the watches of the devices and configs, for health.
func (t *Tracker) watchOffers() error {
	ro := t.opts.ReadOptions()
	if ro.DRA {
		sel := func(o *metav1.ListOptions) {
			o.FieldSelector = fieldsel.OneTermEqualSelector("spec.driver", snapshot.DRADriverName).String()
		}
		slices := resourceinformers.NewFilteredResourceSliceInformer(t.client, 0, cache.Indexers{nodeIndex: sliceNode}, sel)
		err := t.add(ResourceSlices, slices, trimSlice, handler(t.mark, func(s *stored[resourcev1.ResourceSliceSpec]) []item {
			if s.Of.NodeName != nil {
				return []item{judgeNode(*s.Of.NodeName)}
			}
			return nil
		}), &optional{mayWatch(t.client.ResourceV1().ResourceSlices(), sel), "the DRA driver's devices go unjudged"})
		if err != nil {
			return err
		}
	}
	if ro.Offers {
		cms := coreinformers.NewFilteredConfigMapInformer(t.client, t.opts.Namespace, 0, cache.Indexers{}, nil)
		err := t.add(ConfigMaps, cms, trimConfigMap, handler(t.mark, func(c *stored[string]) []item {
			return []item{{configChanged, c.Name}}
		}), &optional{mayWatch(t.client.CoreV1().ConfigMaps(t.opts.Namespace), nil), "a change to the sharing or MIG configs is seen at the next DaemonSet change"})
		if err != nil {
			return err
		}
	}
	return nil
}

// trimSlice keeps a slice of the DRA driver bound to a node, as
// snapshot.TrimSlice does; others (a driver's slices for every node) are
// kept empty, and fold into nothing.
func trimSlice(obj any) (any, error) {
	if s, ok := obj.(*resourcev1.ResourceSlice); ok {
		var spec resourcev1.ResourceSliceSpec
		if s.Spec.NodeName != nil {
			spec = snapshot.TrimSlice(s)
		}
		return &stored[resourcev1.ResourceSliceSpec]{keep(s.ObjectMeta), spec}, nil
	}
	return obj, nil
}

func sliceNode(obj any) ([]string, error) {
	if s, ok := obj.(*stored[resourcev1.ResourceSliceSpec]); ok && s.Of.NodeName != nil {
		return []string{*s.Of.NodeName}, nil
	}
	return nil, nil
}

// trimConfigMap keeps of a ConfigMap its version alone: the configs are read
// again, by name, when one the policy names changes.
func trimConfigMap(obj any) (any, error) {
	if c, ok := obj.(*corev1.ConfigMap); ok {
		return &stored[string]{keep(c.ObjectMeta), c.ResourceVersion}, nil
	}
	return obj, nil
}

// namesConfig reports whether the policy names the ConfigMap as a config:
// a change to any other (a leader's record, renewed every few seconds)
// changes no verdict.
func (t *Tracker) namesConfig(cm string) bool {
	p := t.operator.Policy
	return p != nil && cm != "" && (cm == p.Offer.DevicePluginConfig || cm == p.Offer.MIGConfig)
}

// devicePools are the DRA driver's pools on the named nodes, whoever runs
// its kubelet plugin, as the one-shot read lists them (read.Options.DRA);
// nil when the slices are not watched (the devices then go unjudged, as
// after a read that could not list them).
func (t *Tracker) devicePools(names []string) map[string][]snapshot.DevicePool {
	st := t.store(ResourceSlices)
	if st == nil {
		return nil
	}
	pools := map[string][]snapshot.DevicePool{}
	for _, name := range names {
		slices, _ := st.ByIndex(nodeIndex, name)
		for _, s := range slices {
			snapshot.AddSlice(pools, &resourcev1.ResourceSlice{Spec: s.(*stored[resourcev1.ResourceSliceSpec]).Of})
		}
	}
	return pools
}
