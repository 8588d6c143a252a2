package gpuops_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/operand"
)

func script(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(gpuops.Scripts, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The audit script carries its own copy of the roster; it must be the catalog's.
func TestAuditScriptRosterIsTheCatalog(t *testing.T) {
	m := regexp.MustCompile(`(?s)\nROSTER='\n(.*?)'\n`).FindStringSubmatch(script(t, "operand-audit.sh"))
	if m == nil {
		t.Fatal("operand-audit.sh: no ROSTER='...' block")
	}
	var want []string
	for _, o := range operand.Lab {
		want = append(want, strings.Join([]string{o.Name, o.LabelKey(), o.DaemonSet}, " "))
	}
	got := strings.Split(strings.TrimSuffix(m[1], "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("operand-audit.sh ROSTER:\n%s\nthe catalog (operand.Lab):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The order script names the DaemonSets of the device rule and its finding.
func TestOrderScriptIsTheDeviceRule(t *testing.T) {
	text := script(t, "order-check.sh")
	assign := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("order-check.sh: no %s=... line", name)
		}
		return m[1]
	}
	plugin, err := operand.Lookup(operand.Lab, operand.DeviceRule.Operand)
	if err != nil {
		t.Fatal(err)
	}
	toolkit, err := operand.Lookup(operand.Lab, operand.DeviceRule.Needs)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"DEVICE_PLUGIN_DS": plugin.DaemonSet,
		"TOOLKIT_DS":       toolkit.DaemonSet,
		"FINDING":          operand.DeviceRule.Finding,
	} {
		if got := assign(name); got != want {
			t.Errorf("order-check.sh %s=%s, the catalog says %s", name, got, want)
		}
	}
}
