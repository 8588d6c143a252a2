package report_test

import (
	"bytes"
	"testing"

	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/report"
)

// The change lines are kubectl's, byte for byte what up, optout, reset and
// guard have always printed: scripts grep them.
func TestChanges(t *testing.T) {
	var b bytes.Buffer
	for _, ch := range []struct{ Object, Action, Why string }{
		{Object: "namespace/gpu-operator", Action: "created"},
		{Object: "node/gpu-node-1", Action: "labelled"},
		{Object: "node/gpu-node-10", Action: "unchanged"},
		{Object: "daemonset.apps/nvidia-driver-daemonset", Action: "configured"},
		{Object: "daemonset.apps/nvidia-driver-daemonset", Action: "kept", Why: `also managed by ["kubectl"]`},
		{Object: "node/gpu-node-1", Action: "unlabelled"},
	} {
		report.Change(&b, ch.Object, ch.Action, ch.Why)
	}
	want := "namespace/gpu-operator created\n" +
		"node/gpu-node-1 labelled\n" +
		"node/gpu-node-10 unchanged\n" +
		"daemonset.apps/nvidia-driver-daemonset configured\n" +
		"daemonset.apps/nvidia-driver-daemonset kept: also managed by [\"kubectl\"]\n" +
		"node/gpu-node-1 unlabelled\n"
	if b.String() != want {
		t.Errorf("changes:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestGuardLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		print func(*bytes.Buffer) error
		want  string
	}{
		{"enforced", func(b *bytes.Buffer) error {
			return report.GuardEnforcement(b, &guard.Enforcement{Mode: guard.Warn})
		}, "guard: enforced, mode warn\n"},
		{"exempt", func(b *bytes.Buffer) error {
			return report.GuardEnforcement(b, &guard.Enforcement{Mode: guard.Deny, Exempt: "kubernetes-admin"})
		}, "guard: not probed: you (kubernetes-admin) are exempt from it\n"},
		{"nothing to uninstall", func(b *bytes.Buffer) error { return report.GuardUninstalled(b, false) }, "guard: not installed\n"},
		{"uninstalled", func(b *bytes.Buffer) error { return report.GuardUninstalled(b, true) }, ""},
		{"dry run", func(b *bytes.Buffer) error {
			return report.GuardObjects(b, &guard.Objects{PolicyYAML: []byte("kind: P\n"), BindingYAML: []byte("kind: B\n")})
		}, "kind: P\n---\nkind: B\n"},
	} {
		var b bytes.Buffer
		if err := tc.print(&b); err != nil || b.String() != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, b.String(), err, tc.want)
		}
	}
}
