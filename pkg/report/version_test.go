package report_test

import (
	"bytes"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/version"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
)

var release = report.VersionInfo{
	ClientVersion: report.ClientVersion{GitVersion: "v1.2.3", GitCommit: "abc123", GitTreeState: "clean",
		BuildDate: "2025-01-02T03:04:05Z", GoVersion: "go1.25.0", Platform: "linux/amd64"},
	Catalog: report.Catalog{
		Lab:   []report.CatalogEntry{{Name: "driver", DaemonSet: "nvidia-driver-daemonset", Label: "nvidia.com/gpu.deploy.driver"}},
		Known: []report.CatalogEntry{{Name: "driver", DaemonSet: "nvidia-driver-daemonset", Label: "nvidia.com/gpu.deploy.driver"}, {Name: "mig-manager", DaemonSet: "nvidia-mig-manager", Label: "nvidia.com/gpu.deploy.mig-manager"}},
	},
}

func TestVersion(t *testing.T) {
	withServer := release
	withServer.ServerVersion = &version.Info{GitVersion: "v1.33.1"}
	devel := report.VersionInfo{ClientVersion: report.ClientVersion{GitVersion: "devel", GoVersion: "go1.25.0", Platform: "darwin/arm64"}, Catalog: release.Catalog}
	for _, tc := range []struct {
		name   string
		format report.Format
		v      report.VersionInfo
		want   string
	}{
		{"text of a release", report.Text, withServer, "gpuops Version: v1.2.3\n" +
			"Git Commit: abc123 (clean, 2025-01-02T03:04:05Z)\n" +
			"Go Version: go1.25.0 linux/amd64\n" +
			"Lab Operands: driver\n" +
			"Known Operands: driver, mig-manager\n" +
			"Server Version: v1.33.1\n"},
		{"text without commit or server", report.Text, devel, "gpuops Version: devel\n" +
			"Go Version: go1.25.0 darwin/arm64\n" +
			"Lab Operands: driver\n" +
			"Known Operands: driver, mig-manager\n"},
		{"json", report.JSON, devel, `{
  "clientVersion": {
    "gitVersion": "devel",
    "goVersion": "go1.25.0",
    "platform": "darwin/arm64"
  },
  "catalog": {
    "lab": [
      {
        "name": "driver",
        "daemonSet": "nvidia-driver-daemonset",
        "label": "nvidia.com/gpu.deploy.driver"
      }
    ],
    "known": [
      {
        "name": "driver",
        "daemonSet": "nvidia-driver-daemonset",
        "label": "nvidia.com/gpu.deploy.driver"
      },
      {
        "name": "mig-manager",
        "daemonSet": "nvidia-mig-manager",
        "label": "nvidia.com/gpu.deploy.mig-manager"
      }
    ]
  }
}
`},
		{"yaml", report.YAML, release, `catalog:
  known:
  - daemonSet: nvidia-driver-daemonset
    label: nvidia.com/gpu.deploy.driver
    name: driver
  - daemonSet: nvidia-mig-manager
    label: nvidia.com/gpu.deploy.mig-manager
    name: mig-manager
  lab:
  - daemonSet: nvidia-driver-daemonset
    label: nvidia.com/gpu.deploy.driver
    name: driver
clientVersion:
  buildDate: "2025-01-02T03:04:05Z"
  gitCommit: abc123
  gitTreeState: clean
  gitVersion: v1.2.3
  goVersion: go1.25.0
  platform: linux/amd64
`},
	} {
		var b bytes.Buffer
		if err := (report.Printer{Format: tc.format}).Version(&b, tc.v); err != nil || b.String() != tc.want {
			t.Errorf("%s: %v\n%s\nwant:\n%s", tc.name, err, b.String(), tc.want)
		}
	}
}

// The client's part is this binary's: the version the linker stamped, its
// Go, and the catalog of pkg/operand.
func TestClientVersionInfo(t *testing.T) {
	v := report.ClientVersionInfo("v9.9.9")
	cv := v.ClientVersion
	if cv.GitVersion != "v9.9.9" || cv.GoVersion != runtime.Version() || cv.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("client version %+v", cv)
	}
	if len(v.Catalog.Lab) != len(operand.Lab) || len(v.Catalog.Known) != len(operand.Real) {
		t.Fatalf("catalog of %d and %d operands, want %d and %d", len(v.Catalog.Lab), len(v.Catalog.Known), len(operand.Lab), len(operand.Real))
	}
	last := operand.Real[len(operand.Real)-1]
	if got := v.Catalog.Known[len(v.Catalog.Known)-1]; got != (report.CatalogEntry{Name: last.Name, DaemonSet: last.DaemonSet, Label: last.LabelKey()}) {
		t.Errorf("last known operand %+v, want %s", got, last.Name)
	}
	if v.ServerVersion != nil {
		t.Errorf("client's part has a server version: %+v", v.ServerVersion)
	}
}
