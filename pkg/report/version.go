package report

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"k8s.io/apimachinery/pkg/version"

	"github.com/gpuops/gpuops/pkg/operand"
)

// VersionInfo is what gpuops version prints, laid out as kubectl version's.
type VersionInfo struct {
	ClientVersion ClientVersion `json:"clientVersion"`
	Catalog       Catalog       `json:"catalog"`
	ServerVersion *version.Info `json:"serverVersion,omitempty"`
}

// ClientVersion is the build of this binary.
type ClientVersion struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit,omitempty"`
	GitTreeState string `json:"gitTreeState,omitempty"`
	BuildDate    string `json:"buildDate,omitempty"`
	GoVersion    string `json:"goVersion"`
	Platform     string `json:"platform"`
}

// Catalog is the operand catalog built into this binary (pkg/operand).
type Catalog struct {
	Lab   []CatalogEntry `json:"lab"`   // the lab's roster, what up deploys
	Known []CatalogEntry `json:"known"` // every operand of a real install gpuops knows by name
}

// CatalogEntry is one operand of the catalog.
type CatalogEntry struct {
	Name      string `json:"name"`
	DaemonSet string `json:"daemonSet"`
	Label     string `json:"label"`
}

// ClientVersionInfo is the client's part of the version: the binary's build
// and catalog. linked is the version the linker stamped, if any; else the
// module version of `go install …@v1.2.3`, else "devel".
func ClientVersionInfo(linked string) VersionInfo {
	return VersionInfo{ClientVersion: buildVersion(linked), Catalog: builtInCatalog()}
}

// buildVersion reads the version the linker or the Go toolchain stamped.
func buildVersion(linked string) ClientVersion {
	v := ClientVersion{GitVersion: "devel", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if m := bi.Main.Version; m != "" && m != "(devel)" {
			v.GitVersion = m
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.GitCommit = s.Value
			case "vcs.time":
				v.BuildDate = s.Value
			case "vcs.modified":
				v.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
			}
		}
	}
	if linked != "" {
		v.GitVersion = linked
	}
	return v
}

func builtInCatalog() Catalog {
	entries := func(ops []operand.Operand) []CatalogEntry {
		out := make([]CatalogEntry, len(ops))
		for i, o := range ops {
			out[i] = CatalogEntry{Name: o.Name, DaemonSet: o.DaemonSet, Label: o.LabelKey()}
		}
		return out
	}
	return Catalog{Lab: entries(operand.Lab), Known: entries(operand.Real)}
}

// Version prints the version: JSON or YAML of every field, else kubectl
// version's text lines.
func (p Printer) Version(w io.Writer, v VersionInfo) error {
	if p.Format.Data() {
		return p.data(w, v)
	}
	cv := v.ClientVersion
	var b strings.Builder
	fmt.Fprintf(&b, "gpuops Version: %s\n", cv.GitVersion)
	if cv.GitCommit != "" {
		fmt.Fprintf(&b, "Git Commit: %s (%s, %s)\n", cv.GitCommit, cv.GitTreeState, cv.BuildDate)
	}
	fmt.Fprintf(&b, "Go Version: %s %s\n", cv.GoVersion, cv.Platform)
	fmt.Fprintf(&b, "Lab Operands: %s\n", entryNames(v.Catalog.Lab))
	fmt.Fprintf(&b, "Known Operands: %s\n", entryNames(v.Catalog.Known))
	if v.ServerVersion != nil {
		fmt.Fprintf(&b, "Server Version: %s\n", v.ServerVersion.GitVersion)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func entryNames(entries []CatalogEntry) string {
	n := make([]string, len(entries))
	for i, e := range entries {
		n[i] = e.Name
	}
	return strings.Join(n, ", ")
}
