package kubectl_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/blang/semver/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// releaseVersion is the version the test's release is stamped with.
const releaseVersion = "v0.0.0-test"

var (
	releaseOnce sync.Once
	releaseDir  string
	releaseErr  error
)

// release builds the krew release of this machine's platform (go run
// ./hack/krew, as `go tool task krew` does) once per test binary and
// returns its folder: gpuops.yaml and the archive.
func release(t *testing.T) string {
	t.Helper()
	releaseOnce.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			releaseErr = err
			return
		}
		if releaseDir, releaseErr = os.MkdirTemp("", "gpuops-krew-"); releaseErr != nil {
			return
		}
		cmd := exec.Command("go", "run", "./hack/krew", "-version", releaseVersion, "-platforms", runtime.GOOS+"/"+runtime.GOARCH, "-out", releaseDir)
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		if out, err := cmd.CombinedOutput(); err != nil {
			releaseErr = errors.New("go run ./hack/krew: " + err.Error() + "\n" + string(out))
		}
	})
	if releaseErr != nil {
		t.Fatal(releaseErr)
	}
	return releaseDir
}

// krewPlugin is krew's plugin manifest (sigs.k8s.io/krew/pkg/index.Plugin),
// field for field, so that a strict decode refuses any field krew does not
// know.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats"`
		Homepage         string         `json:"homepage"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Selector *metav1.LabelSelector `json:"selector"`
	Files    []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
	License string `json:"license"`
	Bin     string `json:"bin"`
}

var (
	krewSafeName = regexp.MustCompile(`^[\w-]+$`)
	krewSHA256   = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// validateKrew checks what krew checks before it installs a plugin or
// krew-index accepts one (krew's internal/index/validation): API version
// and kind, a safe name that is the file's, a one-line short description,
// a semantic version with a leading v, and on every platform an URI, a
// sha256, a bin, files unset or complete, and a selector on os and arch
// only.
func validateKrew(file string, p krewPlugin) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, file+": "+fmt.Sprintf(format, args...)) }
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" {
		fail("apiVersion %q", p.APIVersion)
	}
	if p.Kind != "Plugin" {
		fail("kind %q", p.Kind)
	}
	if name := strings.TrimSuffix(filepath.Base(file), ".yaml"); !krewSafeName.MatchString(p.Metadata.Name) || p.Metadata.Name != name {
		fail("name %q: want %q, matching %s", p.Metadata.Name, name, krewSafeName)
	}
	if s := p.Spec.ShortDescription; s == "" || strings.ContainsAny(s, "\r\n") {
		fail("shortDescription %q: want one line", s)
	}
	if v, ok := strings.CutPrefix(p.Spec.Version, "v"); !ok {
		fail("version %q: want a leading v", p.Spec.Version)
	} else if _, err := semver.Parse(v); err != nil {
		fail("version %q: %v", p.Spec.Version, err)
	}
	if len(p.Spec.Platforms) == 0 {
		fail("no platforms")
	}
	for _, pl := range p.Spec.Platforms {
		if pl.URI == "" || pl.Bin == "" || !krewSHA256.MatchString(pl.Sha256) {
			fail("platform %+v: want uri, bin and a sha256 of 64 hex digits", pl)
		}
		if pl.Files != nil && len(pl.Files) == 0 {
			fail("platform %s: files given but empty", pl.URI)
		}
		for _, f := range pl.Files {
			if f.From == "" || f.To == "" {
				fail("platform %s: a file without from or to", pl.URI)
			}
		}
		sel := pl.Selector
		if sel == nil || len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
			fail("platform %s: no selector", pl.URI)
			continue
		}
		for k := range sel.MatchLabels {
			if k != "os" && k != "arch" {
				fail("platform %s: selector key %q (krew knows os and arch)", pl.URI, k)
			}
		}
		for _, e := range sel.MatchExpressions {
			if e.Key != "os" && e.Key != "arch" {
				fail("platform %s: selector key %q (krew knows os and arch)", pl.URI, e.Key)
			}
		}
	}
	return errs
}

// install puts the release's archive in place as krew does: unpacked into
// its store, bin linked as bin/kubectl-gpuops, and kubectl_complete-gpuops
// linked next to it as the manifest's caveats say. It returns the bin folder.
func install(t *testing.T, archive, bin string) string {
	t.Helper()
	root := t.TempDir()
	store, binDir := filepath.Join(root, "store", "gpuops", releaseVersion), filepath.Join(root, "bin")
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(store, filepath.FromSlash(path.Clean("/"+h.Name)))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(store, bin), filepath.Join(binDir, "kubectl-gpuops")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("kubectl-gpuops", filepath.Join(binDir, "kubectl_complete-gpuops")); err != nil {
		t.Fatal(err)
	}
	return binDir
}

// manifest decodes the release's krew manifest strictly.
func manifest(t *testing.T) (dir string, p krewPlugin) {
	t.Helper()
	dir = release(t)
	data, err := os.ReadFile(filepath.Join(dir, "gpuops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("gpuops.yaml is not a krew manifest: %v", err)
	}
	if len(p.Spec.Platforms) != 1 {
		t.Fatalf("%d platforms; want the one built", len(p.Spec.Platforms))
	}
	return dir, p
}

// pluginPath is a PATH on which kubectl finds the plugin as krew installs
// it from the release (kubectl-gpuops, and kubectl_complete-gpuops for its
// completion), then the lab's kubectl. The plugin comes first: kubectl runs
// the first kubectl-gpuops on PATH, and `go tool task plugin` puts one
// beside the lab's kubectl.
func pluginPath(t *testing.T) string {
	t.Helper()
	dir, p := manifest(t)
	pl := p.Spec.Platforms[0]
	bin := install(t, filepath.Join(dir, path.Base(pl.URI)), pl.Bin)
	return strings.Join([]string{bin, filepath.Dir(kubectlPath(t)), os.Getenv("PATH")}, string(os.PathListSeparator))
}

// The manifest is what krew accepts, for archives that are what it names,
// and the plugin it installs runs as `kubectl gpuops`.
func TestKrewManifest(t *testing.T) {
	t.Parallel()
	dir, p := manifest(t)
	for _, e := range validateKrew("gpuops.yaml", p) {
		t.Error(e)
	}
	if p.Spec.Version != releaseVersion {
		t.Errorf("version %q, want %s", p.Spec.Version, releaseVersion)
	}
	pl := p.Spec.Platforms[0]
	if pl.Selector.MatchLabels["os"] != runtime.GOOS || pl.Selector.MatchLabels["arch"] != runtime.GOARCH {
		t.Errorf("selector %v, want os %s arch %s", pl.Selector.MatchLabels, runtime.GOOS, runtime.GOARCH)
	}
	u, err := url.Parse(pl.URI)
	if err != nil || u.Scheme != "https" || !strings.Contains(u.Path, "/"+releaseVersion+"/") {
		t.Errorf("uri %q: want https, in the release %s", pl.URI, releaseVersion)
	}
	b, err := os.ReadFile(filepath.Join(dir, path.Base(u.Path)))
	if err != nil {
		t.Fatalf("the archive the uri names: %v", err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != pl.Sha256 {
		t.Errorf("sha256 %s, but the archive's is %x", pl.Sha256, sum)
	}

	r := gpuopstest.Run(t, []string{"PATH=" + pluginPath(t), "HOME=" + t.TempDir()}, "kubectl", "gpuops", "--version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "gpuops Version: "+releaseVersion+"\n") {
		t.Errorf("kubectl gpuops --version: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
