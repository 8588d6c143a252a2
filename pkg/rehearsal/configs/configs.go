// Package configs holds the device plugin's and the MIG manager's configs as
// users write them, the texts the rehearsals put in the ConfigMaps a
// ClusterPolicy names and the sharing judge's tests read: one copy for both.
package configs

// Sharing are device plugin configs (k8s-device-plugin api/config/v1), by
// key of the ConfigMap spec.devicePlugin.config.name names.
var Sharing = map[string]string{
	// Time-slicing, 4 replicas, advertised as nvidia.com/gpu.shared.
	"ts-renamed": `version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`,
	// Time-slicing, 4 replicas, still nvidia.com/gpu.
	"ts": `version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`,
	// MPS, 4 replicas: needs the MPS control daemon on the node.
	"mps": `version: v1
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`,
	// k8s-device-plugin #1433: renameByDefault under flags, which the
	// device plugin ignores: 4 replicas of nvidia.com/gpu.
	"flags-rename": `version: v1
flags:
  renameByDefault: true
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`,
}

// Replicas is how many replicas of each GPU the time-slicing and MPS
// configs above ask for.
const Replicas = 4

// MIG is a custom mig-parted config (NVIDIA/mig-parted api/spec/v1), the
// key MIGKey of the ConfigMap spec.migManager.config.name names: one layout
// for every GPU, one disabled, one that depends on the GPU model
// (device-filter).
const MIG = `version: v1
mig-configs:
  all-disabled:
  - devices: all
    mig-enabled: false
  all-1g.10gb:
  - devices: all
    mig-enabled: true
    mig-devices:
      "1g.10gb": 7
  all-balanced:
  - device-filter: ["0x20B210DE", "0x20B510DE"]
    devices: all
    mig-enabled: true
    mig-devices:
      "1g.10gb": 2
      "2g.20gb": 1
      "3g.40gb": 1
  - device-filter: "0x233010DE"
    devices: all
    mig-enabled: true
    mig-devices:
      "1g.20gb": 2
      "2g.40gb": 1
      "3g.80gb": 1
`
