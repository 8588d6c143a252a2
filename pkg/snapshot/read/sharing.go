package read

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The operator's own MIG ConfigMap (NVIDIA/gpu-operator v26.7.0
// controllers/object_controls.go, MigPartedDefaultConfigMapName; a custom
// one holds the mig-parted config under operand.MIGConfigKey). Without a
// custom ConfigMap the MIG manager generates its layouts from the node's GPUs (mig-parted v0.15.0
// cmd/nvidia-mig-manager/main.go, setupMigConfig), which no object shows:
// only a custom one is read.
const defaultMIGConfigMap = "default-mig-parted-config"

// offerPolicy reads where a ClusterPolicy's spec says the device plugin's
// and the MIG manager's configs are.
func offerPolicy(spec map[string]json.RawMessage) snapshot.OfferPolicy {
	var dp, mig struct {
		Config *struct{ Name, Default string }
	}
	_ = json.Unmarshal(spec["devicePlugin"], &dp) // absent or not an object: no config
	_ = json.Unmarshal(spec["migManager"], &mig)
	var out snapshot.OfferPolicy
	if dp.Config != nil {
		out.DevicePluginConfig, out.DevicePluginDefault = dp.Config.Name, dp.Config.Default
	}
	if mig.Config != nil {
		out.MIGConfig = mig.Config.Name
	}
	return out
}

// OfferConfigMaps are the ConfigMaps a ClusterPolicy (JSON) names for the
// device plugin's and the MIG manager's configs: those Offers may get.
func OfferConfigMaps(policy []byte) ([]string, error) {
	var p clusterPolicy
	if err := json.Unmarshal(policy, &p); err != nil {
		return nil, err
	}
	var out []string
	for _, name := range []string{offerPolicy(p.Spec).DevicePluginConfig, offerPolicy(p.Spec).MIGConfig} {
		if name != "" {
			out = append(out, name)
		}
	}
	return out, nil
}

// Offers reads the ConfigMaps the ClusterPolicy names for the device
// plugin and the MIG manager (a custom one) into s.Offers, one GET each, in the operator's
// namespace; nothing without a policy. A ConfigMap the user may not read is
// a note; one that does not exist is said in the config (the operands fail
// on it too).
func Offers(ctx context.Context, c kubernetes.Interface, namespace string, s *snapshot.Snapshot) error {
	if s.Policy == nil {
		return nil
	}
	p := s.Policy.Offer
	s.Offers = &snapshot.Offers{}
	get := func(name, what string) (map[string]string, string, error) {
		cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("ConfigMap %s/%s not found", namespace, name), nil
		case apierrors.IsForbidden(err):
			s.Notes = append(s.Notes, fmt.Sprintf("%s not read (not judged): %s", what, refused(err, "get", "configmap "+name+" in namespace "+namespace)))
			return nil, "", err
		case err != nil:
			return nil, "", fmt.Errorf("get configmap %s in namespace %s: %w", name, namespace, err)
		}
		return cm.Data, "", nil
	}
	if p.DevicePluginConfig != "" {
		data, missing, err := get(p.DevicePluginConfig, "the device plugin's sharing configs")
		switch {
		case apierrors.IsForbidden(err):
		case err != nil:
			return err
		default:
			sc := &snapshot.SharingConfigs{ConfigMap: p.DevicePluginConfig, Default: p.DevicePluginDefault, Error: missing,
				Configs: make(map[string]snapshot.SharingConfig, len(data))}
			for key, text := range data {
				cfg := snapshot.ParseSharingConfig(text)
				if cfg.RenameIgnored {
					s.Notes = append(s.Notes, fmt.Sprintf("ConfigMap %s key %s: the device plugin ignores renameByDefault under flags (k8s-device-plugin #1433); it belongs under sharing.timeSlicing or sharing.mps", p.DevicePluginConfig, key))
				}
				sc.Configs[key] = cfg
			}
			s.Offers.Sharing = sc
		}
	}
	if on, set := s.Policy.Enabled["migManager"]; set && !on {
		return nil
	}
	name := p.MIGConfig
	if name == "" || name == defaultMIGConfigMap {
		return nil
	}
	data, missing, err := get(name, "the MIG manager's layouts")
	switch {
	case apierrors.IsForbidden(err):
		return nil
	case err != nil:
		return err
	}
	mc := &snapshot.MIGConfigs{ConfigMap: name, Error: missing}
	if missing == "" {
		if mc.Layouts, err = snapshot.ParseMIGConfigs(data[operand.MIGConfigKey]); err != nil {
			mc.Error = fmt.Sprintf("ConfigMap %s/%s key %s: %v", namespace, name, operand.MIGConfigKey, err)
		}
	}
	s.Offers.MIG = mc
	return nil
}
