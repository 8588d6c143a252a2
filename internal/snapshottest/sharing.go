package snapshottest

import (
	"github.com/gpuops/gpuops/pkg/rehearsal/configs"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Offers are the rehearsals' device plugin configs (configs.Sharing) and
// MIG layouts (configs.MIG) as the reader keeps them, in ConfigMaps of
// these names: the sharing judge's tests and the rehearsals judge the same
// configs.
func Offers(sharingConfigMap, migConfigMap string) *snapshot.Offers {
	sc := &snapshot.SharingConfigs{ConfigMap: sharingConfigMap, Configs: map[string]snapshot.SharingConfig{}}
	for k, v := range configs.Sharing {
		sc.Configs[k] = snapshot.ParseSharingConfig(v)
	}
	layouts, err := snapshot.ParseMIGConfigs(configs.MIG)
	if err != nil {
		panic(err)
	}
	return &snapshot.Offers{Sharing: sc, MIG: &snapshot.MIGConfigs{ConfigMap: migConfigMap, Layouts: layouts}}
}
