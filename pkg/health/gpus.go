package health

import (
	"strconv"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// GPUs are the devices a node was asked to offer and those it offers, in
// devices a workload can ask for: GPUs shared by replicas count each
// replica, a MIG layout its MIG devices.
type GPUs struct {
	Asked      int64 `json:"asked"`
	Advertised int64 `json:"advertised"`
}

// Offered says what a GPU node was asked to offer and what it offers; false
// when the ask cannot be told (no GPU count, a layout that depends on the
// GPU model). Asked, of the device plugin's stack: GFD's GPU count (else
// the plugin's nvidia.com/gpu capacity), times the replicas its sharing
// config asks, or the MIG devices its layout asks once applied; advertised:
// the devices allocatable. Of the DRA stack: the devices published, and of
// them those no taint withholds.
func Offered(n snapshot.Node, offers *snapshot.Offers, pools []snapshot.DevicePool) (GPUs, bool) {
	if len(pools) > 0 {
		var g GPUs
		for _, p := range pools {
			withheld := map[string]bool{}
			for _, t := range p.Tainted {
				withheld[t.Device] = true
			}
			g.Asked += int64(p.Devices)
			g.Advertised += int64(p.Devices - len(withheld))
		}
		return g, true
	}
	var g GPUs
	for name, d := range n.Devices {
		if snapshot.IsDeviceResource(name) {
			g.Advertised += d.Allocatable
		}
	}
	gpus, err := strconv.ParseInt(n.Labels[operand.GPUCountLabel], 10, 64)
	if err != nil {
		gpus = n.Devices[snapshot.GPUResource].Capacity
	}
	if gpus == 0 {
		return g, false
	}
	g.Asked = gpus
	if offers == nil {
		return g, true
	}
	if mc := offers.MIG; mc != nil && n.Labels[operand.MIGChange.StateLabel] == operand.MIGSuccess {
		if entries, ok := mc.Layouts[n.Labels[operand.MIGConfigLabel]]; ok {
			variants := snapshot.Variants(entries)
			devices, ok := mixed(variants[0], gpus)
			if len(variants) != 1 || !ok {
				return g, false
			}
			if len(devices) > 0 {
				g.Asked = 0
				for _, k := range devices {
					g.Asked += k
				}
			}
			return g, true
		}
	}
	if cfg, _, _, ok := sharingConfig(n, offers.Sharing); ok {
		for _, r := range cfg.Resources {
			if r.Name == snapshot.GPUResource {
				g.Asked = gpus * r.Replicas
			}
		}
	}
	return g, true
}
