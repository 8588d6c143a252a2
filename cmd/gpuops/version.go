package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/operand"
)

// gpuopsVersion is set when linking a release:
// go build -ldflags "-X main.gpuopsVersion=v1.2.3". Otherwise the module
// version of `go install …@v1.2.3` is used, else "devel".
var gpuopsVersion string

// versionInfo is what `gpuops version` prints, laid out as kubectl version's.
type versionInfo struct {
	ClientVersion clientVersion `json:"clientVersion"`
	Catalog       catalog       `json:"catalog"`
	ServerVersion *version.Info `json:"serverVersion,omitempty"`
}

type clientVersion struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit,omitempty"`
	GitTreeState string `json:"gitTreeState,omitempty"`
	BuildDate    string `json:"buildDate,omitempty"`
	GoVersion    string `json:"goVersion"`
	Platform     string `json:"platform"`
}

// catalog is the operand catalog built into this binary (pkg/operand).
type catalog struct {
	Lab   []catalogEntry `json:"lab"`   // the lab's roster, what up deploys
	Known []catalogEntry `json:"known"` // every operand of a real install gpuops knows by name
}

type catalogEntry struct {
	Name      string `json:"name"`
	DaemonSet string `json:"daemonSet"`
	Label     string `json:"label"`
}

// versionFormats are the formats of version's -o, besides its text lines.
var versionFormats = []string{"json", "yaml"}

func versionOutputFlag() cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: json or yaml (default: text lines)"}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of gpuops, its Go and its operand catalog, and the server's version",
		Description: "As kubectl version: the client's part always, then the API server's /version (exit 2,\n" +
			"after the client's part, when it cannot be read). --client skips the server;\n" +
			"`gpuops --version` is `gpuops version --client`.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "client", Usage: "only the client's part; contact no server"},
			versionOutputFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return printVersion(c, c.Bool("client"))
		},
	}
}

func printVersion(c *cli.Context, clientOnly bool) error {
	format := c.String("output")
	if format != "" && !slices.Contains(versionFormats, format) {
		return usageError(fmt.Errorf("unknown output format %q (want json or yaml)", format))
	}
	v := versionInfo{ClientVersion: buildVersion(), Catalog: builtInCatalog()}
	var serverErr error
	if !clientOnly {
		v.ServerVersion, serverErr = serverVersion(c)
	}
	if err := writeVersion(c.App.Writer, format, v); err != nil {
		return err
	}
	if serverErr != nil {
		return fmt.Errorf("server version: %w", serverErr)
	}
	return nil
}

func serverVersion(c *cli.Context) (*version.Info, error) {
	cl, err := connect(c)
	if err != nil {
		return nil, err
	}
	return cl.Kube.Discovery().ServerVersion()
}

func writeVersion(w io.Writer, format string, v versionInfo) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	cv := v.ClientVersion
	s := fmt.Sprintf("gpuops Version: %s\n", cv.GitVersion)
	if cv.GitCommit != "" {
		s += fmt.Sprintf("Git Commit: %s (%s, %s)\n", cv.GitCommit, cv.GitTreeState, cv.BuildDate)
	}
	s += fmt.Sprintf("Go Version: %s %s\n", cv.GoVersion, cv.Platform)
	s += fmt.Sprintf("Lab Operands: %s\n", names(v.Catalog.Lab))
	s += fmt.Sprintf("Known Operands: %s\n", names(v.Catalog.Known))
	if v.ServerVersion != nil {
		s += fmt.Sprintf("Server Version: %s\n", v.ServerVersion.GitVersion)
	}
	_, err := io.WriteString(w, s)
	return err
}

func names(entries []catalogEntry) string {
	n := make([]string, len(entries))
	for i, e := range entries {
		n[i] = e.Name
	}
	return strings.Join(n, ", ")
}

// buildVersion reads the version the linker or the Go toolchain stamped.
func buildVersion() clientVersion {
	v := clientVersion{GitVersion: "devel", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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
	if gpuopsVersion != "" {
		v.GitVersion = gpuopsVersion
	}
	return v
}

func builtInCatalog() catalog {
	entries := func(ops []operand.Operand) []catalogEntry {
		out := make([]catalogEntry, len(ops))
		for i, o := range ops {
			out[i] = catalogEntry{Name: o.Name, DaemonSet: o.DaemonSet, Label: o.LabelKey()}
		}
		return out
	}
	return catalog{Lab: entries(operand.Lab), Known: entries(operand.Real)}
}
