package snapshot

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/words"
)

// Offers are what the device plugin and the MIG manager were asked to make
// of the nodes' GPUs: the ConfigMaps the ClusterPolicy names, parsed and
// kept small. The node labels that pick one config each are the nodes' own.
type Offers struct {
	// Sharing is the device plugin's ConfigMap (devicePlugin.config.name),
	// nil when the policy names none: then no node shares its GPUs.
	Sharing *SharingConfigs
	// MIG is the MIG manager's custom ConfigMap (migManager.config.name),
	// nil when the policy names none: the MIG manager then makes its
	// layouts from the node's GPUs.
	MIG *MIGConfigs
}

// OfferPolicy is where the ClusterPolicy says the configs are:
// spec.devicePlugin.config.{name,default} and spec.migManager.config.name
// (NVIDIA/gpu-operator v26.7.0 api/nvidia/v1/clusterpolicy_types.go).
type OfferPolicy struct {
	DevicePluginConfig, DevicePluginDefault string
	MIGConfig                               string
}

// SharingConfigs are the device plugin's configs, one a key of its
// ConfigMap; a node picks one by its nvidia.com/device-plugin.config label,
// else Default (devicePlugin.config.default), else none.
type SharingConfigs struct {
	ConfigMap string
	Default   string
	Configs   map[string]SharingConfig
	// Error says why the ConfigMap could not be had (it does not exist).
	Error string
}

// Sharing kinds (k8s-device-plugin api/config/v1/sharing.go).
const (
	TimeSlicing = "time-slicing"
	MPS         = "mps"
)

// SharingConfig is what one device plugin config asks of a node's GPUs.
type SharingConfig struct {
	Kind      string           // TimeSlicing, MPS, or "" for none
	Resources []SharedResource // with more than one replica
	// RenameIgnored: renameByDefault is set under flags, where the device
	// plugin ignores it (k8s-device-plugin #1433): it belongs under
	// sharing.timeSlicing or sharing.mps.
	RenameIgnored bool
	// Error says why the config does not parse; the device plugin fails
	// on it.
	Error string
}

// SharedResource is one resource shared: Name as the device plugin would
// advertise it unshared, Replicas of each device, advertised as As.
type SharedResource struct {
	Name     string
	Replicas int64
	As       string
}

// SharedSuffix is what renameByDefault appends to a shared resource's name
// (k8s-device-plugin v0.20.0 api/config/v1/consts.go,
// DefaultSharedResourceNameSuffix).
const SharedSuffix = ".shared"

// ParseSharingConfig reads one device plugin config (YAML or JSON), as
// k8s-device-plugin v0.20.0 api/config/v1 does: MPS wins over
// time-slicing when both replicate (Sharing.SharingStrategy); a resource
// is renamed with SharedSuffix when renameByDefault is set, and a
// per-resource rename is ignored (DisableResourceNamingInConfig).
func ParseSharingConfig(data string) SharingConfig {
	type replicated struct {
		RenameByDefault bool `json:"renameByDefault"`
		Resources       []struct {
			Name     string `json:"name"`
			Replicas int64  `json:"replicas"`
		} `json:"resources"`
	}
	var c struct {
		Flags   map[string]json.RawMessage `json:"flags"`
		Sharing struct {
			TimeSlicing *replicated `json:"timeSlicing"`
			MPS         *replicated `json:"mps"`
		} `json:"sharing"`
	}
	if err := yaml.Unmarshal([]byte(data), &c); err != nil {
		return SharingConfig{Error: words.ErrorLine(err)}
	}
	_, ignored := c.Flags["renameByDefault"]
	out := SharingConfig{RenameIgnored: ignored}
	for _, k := range []struct {
		kind string
		r    *replicated
	}{{MPS, c.Sharing.MPS}, {TimeSlicing, c.Sharing.TimeSlicing}} {
		if k.r == nil {
			continue
		}
		for _, r := range k.r.Resources {
			if r.Replicas < 2 {
				continue
			}
			as := r.Name
			if k.r.RenameByDefault {
				as += SharedSuffix
			}
			out.Resources = append(out.Resources, SharedResource{Name: r.Name, Replicas: r.Replicas, As: as})
		}
		if len(out.Resources) > 0 {
			out.Kind = k.kind
			break
		}
	}
	return out
}

// MIGConfigs are the MIG manager's layouts (mig-parted's config format,
// NVIDIA/mig-parted v0.15.0 api/spec/v1/spec.go), by name; a node picks
// one by its nvidia.com/mig.config label.
type MIGConfigs struct {
	ConfigMap string
	Layouts   map[string][]MIGEntry
	// Error says why the ConfigMap could not be had or does not parse.
	Error string
}

// MIGEntry is one entry of a layout: the GPUs it applies to (all, or a
// count of listed ones) of the device IDs in Filter (empty: any), whether
// MIG is on, and the MIG devices each GPU gets by profile.
type MIGEntry struct {
	Filter  []string
	All     bool
	Devices int64 // the GPUs listed, when not All
	Enabled bool
	Profile map[string]int64
}

// ParseMIGConfigs reads a mig-parted config file.
func ParseMIGConfigs(data string) (map[string][]MIGEntry, error) {
	var c struct {
		MigConfigs map[string][]struct {
			DeviceFilter any              `json:"device-filter"`
			Devices      any              `json:"devices"`
			MigEnabled   bool             `json:"mig-enabled"`
			MigDevices   map[string]int64 `json:"mig-devices"`
		} `json:"mig-configs"`
	}
	if err := yaml.Unmarshal([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("%s", words.ErrorLine(err))
	}
	out := make(map[string][]MIGEntry, len(c.MigConfigs))
	for name, entries := range c.MigConfigs {
		for _, e := range entries {
			m := MIGEntry{Enabled: e.MigEnabled, Profile: e.MigDevices}
			switch f := e.DeviceFilter.(type) {
			case string:
				m.Filter = []string{f}
			case []any:
				for _, v := range f {
					m.Filter = append(m.Filter, fmt.Sprint(v))
				}
			}
			switch d := e.Devices.(type) {
			case string:
				m.All = d == "all"
			case []any:
				m.Devices = int64(len(d))
			}
			out[name] = append(out[name], m)
		}
	}
	return out, nil
}

// Variants are the ways a layout can apply to a node, whose GPUs' device
// IDs the snapshot does not know: the entries without a filter, with those
// of one filter at a time. One variant when no entry filters.
func Variants(entries []MIGEntry) [][]MIGEntry {
	var common []MIGEntry
	var filters []string
	for _, e := range entries {
		if len(e.Filter) == 0 {
			common = append(common, e)
		} else if f := strings.Join(e.Filter, ","); !slices.Contains(filters, f) {
			filters = append(filters, f)
		}
	}
	if len(filters) == 0 {
		return [][]MIGEntry{common}
	}
	out := make([][]MIGEntry, len(filters))
	for i, f := range filters {
		out[i] = slices.Clone(common)
		for _, e := range entries {
			if strings.Join(e.Filter, ",") == f {
				out[i] = append(out[i], e)
			}
		}
	}
	return out
}

// MIGResource is the resource name the device plugin advertises a MIG
// profile under with the mixed strategy: nvidia.com/mig-<profile>, a "+"
// as "." (k8s-device-plugin v0.20.0 internal/rm/rm.go).
func MIGResource(profile string) string {
	return MIGResourcePrefix + strings.ReplaceAll(profile, "+", ".")
}
