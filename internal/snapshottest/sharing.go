package snapshottest

import "github.com/gpuops/gpuops/pkg/snapshot"

// Device plugin configs as users write them in the ConfigMap
// spec.devicePlugin.config.name names (k8s-device-plugin api/config/v1),
// by key: the sharing judge's tests and the integration tests share them.
var SharingConfigs = map[string]string{
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

// MIGConfig is a custom mig-parted config (NVIDIA/mig-parted api/spec/v1),
// the key config.yaml of the ConfigMap spec.migManager.config.name names:
// one layout for every GPU, one disabled, one that depends on the GPU
// model (device-filter).
const MIGConfig = `version: v1
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

// Offers are SharingConfigs and MIGConfig as the reader keeps them, in
// ConfigMaps of these names.
func Offers(sharingConfigMap, migConfigMap string) *snapshot.Offers {
	sc := &snapshot.SharingConfigs{ConfigMap: sharingConfigMap, Configs: map[string]snapshot.SharingConfig{}}
	for k, v := range SharingConfigs {
		sc.Configs[k] = snapshot.ParseSharingConfig(v)
	}
	layouts, err := snapshot.ParseMIGConfigs(MIGConfig)
	if err != nil {
		panic(err)
	}
	return &snapshot.Offers{Sharing: sc, MIG: &snapshot.MIGConfigs{ConfigMap: migConfigMap, Layouts: layouts}}
}
