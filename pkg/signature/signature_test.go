package signature_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/signature"
)

// healthyLogs are logs of components that started well, each holding the
// lines next to a signature's (unloading nouveau, resolving the kernel
// version, unloading the driver's modules) without it.
func healthyLogs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("testdata/healthy/*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("no healthy logs in testdata/healthy (%v)", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// Each text of each entry, written in a log after healthy lines, is found
// as that entry, with the line that shows it.
func TestEveryTextMatchesItsEntry(t *testing.T) {
	before := healthyLogs(t)["driver.log"]
	for _, s := range signature.Catalog {
		for _, text := range s.Texts {
			line := "ERROR: " + text + " (as written)"
			f, ok := signature.Match(before + line + "\nStopping NVIDIA persistence daemon...\n")
			if !ok || f.Code != s.Code || f.Line != line {
				t.Errorf("%s: text %q: got %q on line %q (found %v), want %s on %q", s.Code, text, f.Code, f.Line, ok, s.Code, line)
			}
		}
	}
}

func TestHealthyLogsMatchNothing(t *testing.T) {
	for name, log := range healthyLogs(t) {
		if f, ok := signature.Match(log); ok {
			t.Errorf("%s: matched %s on %q", name, f.Code, f.Line)
		}
	}
	if f, ok := signature.Match(""); ok {
		t.Errorf("the empty log matched %s", f.Code)
	}
}

// A log's newest line wins: a driver that could not be unloaded, then
// retried into a kernel without headers, shows the headers.
func TestTheNewestLineWins(t *testing.T) {
	log := "Could not unload NVIDIA driver kernel modules, driver is in use\r\nResolving Linux kernel version...\r\nCould not resolve Linux kernel version\r\n"
	f, ok := signature.Match(log)
	if !ok || f.Code != signature.KernelHeadersMissing || f.Line != "Could not resolve Linux kernel version" {
		t.Errorf("got %+v (%v), want %s", f, ok, signature.KernelHeadersMissing)
	}
}

// k8s-driver-manager wrote "Failed to unload nouveau driver" as a shell
// script and "failed to unload nouveau driver: ..." since its Go rewrite.
func TestCaseIsIgnored(t *testing.T) {
	for _, line := range []string{
		"Failed to unload nouveau driver",
		`time=2026-02-25T08:26:00Z level=error msg="failed to unload nouveau driver: device or resource busy"`,
	} {
		if f, ok := signature.Match(line); !ok || f.Code != signature.NouveauLoaded {
			t.Errorf("%q: got %q (%v), want %s", line, f.Code, ok, signature.NouveauLoaded)
		}
	}
}

// Every entry is whole: a code of its own, a component, texts, a cause, a
// remedy and where its texts come from.
func TestCatalogEntriesAreWhole(t *testing.T) {
	codes := signature.Codes()
	for i, s := range signature.Catalog {
		if s.Code == "" || s.Component == "" || len(s.Texts) == 0 || s.Cause == "" || s.Remedy == "" || len(s.Sources) == 0 {
			t.Errorf("entry %d (%q) lacks a field: %+v", i, s.Code, s)
		}
		if slices.Index(codes, s.Code) != i {
			t.Errorf("code %s is not unique", s.Code)
		}
		if got, ok := signature.Of(s.Code); !ok || got.Code != s.Code {
			t.Errorf("Of(%s) = %q, %v", s.Code, got.Code, ok)
		}
		for _, src := range s.Sources {
			if !strings.Contains(src, "/") {
				t.Errorf("%s: source %q names no repository", s.Code, src)
			}
		}
	}
	if _, ok := signature.Of("no-such-code"); ok {
		t.Error("Of found an entry for an unknown code")
	}
}

// k8s-driver-manager has written the pre-installed line three ways: v0.4.0's
// script (it then sleeps), v0.4.1 to v0.8.1's (it labels the node), and the
// Go rewrite's logger (v0.9.0 on). Each is the one entry that excuses; no
// other entry does.
func TestDriverPreinstalledAsEachReleaseWritesIt(t *testing.T) {
	for _, line := range []string{
		"NVIDIA GPU driver is already pre-installed on the node, will not proceed with the containerized driver installation. This pod can be disabled through 'nvidia.com/gpu.deploy.driver=false' node label.",
		"NVIDIA GPU driver is already pre-installed on the node, disabling the containerized driver on the node",
		`time="2026-02-25T08:26:00Z" level=info msg="NVIDIA GPU driver is already pre-installed on the node, disabling the containerized driver"`,
	} {
		if f, ok := signature.Match(line); !ok || f.Code != signature.DriverPreinstalled || !f.Excuses {
			t.Errorf("%q: got %q (%v, excuses %v), want %s", line, f.Code, ok, f.Excuses, signature.DriverPreinstalled)
		}
	}
	for _, s := range signature.Catalog {
		if s.Excuses != (s.Code == signature.DriverPreinstalled) {
			t.Errorf("%s: excuses %v", s.Code, s.Excuses)
		}
	}
}
