package testcluster

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
)

// reportsModule is the OpenReports API module go.mod pins.
const reportsModule = "github.com/openreports/reports-api"

// ClusterReportCRD is the path of the ClusterReport CRD of the reports-api
// version go.mod pins, from the module cache (go mod download fetches it if
// it is not there), and that version; root is the repository's root.
func ClusterReportCRD(root string) (path, version string, err error) {
	cmd := exec.Command("go", "mod", "download", "-json", reportsModule)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go mod download %s: %w\n%s", reportsModule, err, out)
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", "", fmt.Errorf("go mod download %s: %v %s", reportsModule, err, out)
	}
	return filepath.Join(m.Dir, "config", "crd", "openreports.io_clusterreports.yaml"), m.Version, nil
}
