// Command krew builds the release archives of kubectl-gpuops, one per
// platform, and renders the krew plugin manifest (gpuops.yaml next to this
// file, a template) with their URIs and sha256 sums:
//
//	go run ./hack/krew -version v1.2.3 -out .lab/krew
//
// leaves .lab/krew/gpuops.yaml and .lab/krew/gpuops_<version>_<os>_<arch>.tar.gz.
// krew installs them without any download:
//
//	kubectl krew install --manifest=.lab/krew/gpuops.yaml --archive=.lab/krew/gpuops_v1.2.3_linux_amd64.tar.gz
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

//go:embed gpuops.yaml
var manifest string

// pkg is the plugin's main package; the archive holds it as kubectl-gpuops.
const pkg = "github.com/gpuops/gpuops/cmd/gpuops"

// versionVar is the variable the linker stamps with the release version.
const versionVar = "main.gpuopsVersion"

type platform struct {
	OS, Arch, Archive, SHA256, Bin string
}

func main() {
	version := flag.String("version", "v0.0.0-dev", "release version: semantic, with a leading v (krew requires it)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64", "GOOS/GOARCH list")
	out := flag.String("out", ".lab/krew", "output folder")
	flag.Parse()
	if err := release(*version, strings.Split(*platforms, ","), *out); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(2)
	}
}

func release(version string, targets []string, out string) error {
	tmpl, err := template.New("gpuops.yaml").Option("missingkey=error").Parse(manifest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var plats []platform
	for _, t := range targets {
		goos, goarch, ok := strings.Cut(t, "/")
		if !ok {
			return fmt.Errorf("platform %q: want GOOS/GOARCH", t)
		}
		p, err := archive(version, goos, goarch, out)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "krew: %s (sha256 %s)\n", filepath.Join(out, p.Archive), p.SHA256)
		plats = append(plats, p)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, struct {
		Version   string
		Platforms []platform
	}{version, plats}); err != nil {
		return err
	}
	path := filepath.Join(out, "gpuops.yaml")
	fmt.Fprintf(os.Stderr, "krew: %s\n", path)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// archive builds the plugin for one platform and packs it as krew expects:
// a .tar.gz holding the executable.
func archive(version, goos, goarch, out string) (platform, error) {
	p := platform{OS: goos, Arch: goarch, Bin: "kubectl-gpuops", Archive: fmt.Sprintf("gpuops_%s_%s_%s.tar.gz", version, goos, goarch)}
	if goos == "windows" {
		p.Bin += ".exe"
	}
	build, err := os.MkdirTemp("", "gpuops-krew-")
	if err != nil {
		return p, err
	}
	defer os.RemoveAll(build)
	exe := filepath.Join(build, p.Bin)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X "+versionVar+"="+version, "-o", exe, pkg)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return p, fmt.Errorf("go build for %s/%s: %v\n%s", goos, goarch, err, b)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		return p, err
	}
	var tgz bytes.Buffer
	zw := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{Name: p.Bin, Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return p, err
	}
	if _, err := tw.Write(bin); err != nil {
		return p, err
	}
	if err := tw.Close(); err != nil {
		return p, err
	}
	if err := zw.Close(); err != nil {
		return p, err
	}
	sum := sha256.Sum256(tgz.Bytes())
	p.SHA256 = hex.EncodeToString(sum[:])
	return p, os.WriteFile(filepath.Join(out, p.Archive), tgz.Bytes(), 0o644)
}
