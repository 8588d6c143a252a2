// Package alerts_test checks the alerts that ship with gpuops serve:
// promtool's unit tests of the rule file (rules_test.yml), and that the
// PrometheusRule manifest is that same file. promtool comes from
// hack/build-tools.sh (.lab/bin on PATH, as hack/test.sh sets it).
package alerts_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/workload"
)

var update = flag.Bool("update", false, "write the PrometheusRule manifest generated from the rule file")

const (
	ruleFile       = "../../kustomize/deploy/alerts/gpuops.rules.yml"
	prometheusRule = "../../kustomize/deploy/prometheusrule/prometheusrule.yaml"
)

func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not on PATH: build it with hack/build-tools.sh and put .lab/bin on PATH (%v)", err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestRuleFileIsValid(t *testing.T) {
	promtool(t, "check", "rules", "--lint=all", "--lint-fatal", ruleFile)
}

func TestAlertsFireAsDocumented(t *testing.T) {
	out := promtool(t, "test", "rules", "rules_test.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules:\n%s", out)
	}
}

// generate makes the PrometheusRule of the rule file: its groups, indented
// under spec, byte for byte (comments and block scalars stay as written).
func generate(rules []byte) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated from ../alerts/gpuops.rules.yml by `go test ./test/alerts -update`:\n" +
		"# edit that file, not this one.\n" +
		"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: gpuops\nspec:\n")
	header := true
	for _, line := range strings.SplitAfter(string(rules), "\n") {
		if header && strings.HasPrefix(line, "#") {
			continue // the rule file's own header
		}
		header = false
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

func TestPrometheusRuleIsTheRuleFile(t *testing.T) {
	rules, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	want := generate(rules)
	if *update {
		if err := os.WriteFile(prometheusRule, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRule)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not generated from %s: run go test ./test/alerts -update", prometheusRule, ruleFile)
	}
	// The same groups, read as YAML (what the Operator hands Prometheus).
	var file struct{ Groups any }
	var manifest struct {
		Kind string
		Spec struct{ Groups any }
	}
	if err := yaml.UnmarshalStrict(rules, &file); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(got, &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.Kind != "PrometheusRule" || file.Groups == nil || !reflect.DeepEqual(manifest.Spec.Groups, file.Groups) {
		t.Fatalf("the PrometheusRule's groups differ from the rule file's")
	}
}

// The alert on GPU pods blocked by the stack names exactly the codes
// workload.ByStack counts the stack's: a code added there is alerted on,
// and none of a person's setting or of capacity ever is.
func TestBlockedByStackIsTheStacksCodes(t *testing.T) {
	rules, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`gpuops_gpu_pods_blocked\{cause=~"([^"]+)"\}`).FindSubmatch(rules)
	if m == nil {
		t.Fatal("no gpuops_gpu_pods_blocked{cause=~...} in the rule file")
	}
	var want []string
	for _, c := range workload.Codes {
		if workload.ByStack(c) {
			want = append(want, c)
		}
	}
	got := strings.Split(string(m[1]), "|")
	if !slices.Equal(got, want) {
		t.Errorf("GpuopsGPUPodsBlockedByStack's codes %q, want the stack's %q", got, want)
	}
}
