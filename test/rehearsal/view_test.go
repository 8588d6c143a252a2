package rehearsal_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/rehearsal"
)

// startServe runs gpuops serve on the test's nodes for the whole walk.
func (g *gpuopsView) startServe() {
	g.serve = g.gpuops.Serve(g.t, g.args("serve", "--stuck-after", pipeline.DefaultStuckAfter.String())...)
}

// checkServe waits until serve, judging live, says of every GPU node what
// health does after the step (usable, and its causes), of every node in the
// rollout its verdict and state (upgrades: "verdict/state"), and finds
// nothing missing or stuck on any node.
func (g *gpuopsView) checkServe(ctx context.Context, at string, want, upgrades map[string]string) {
	t := g.t
	t.Helper()
	ours := func(s gpuopstest.Sample) bool { return slices.Contains(mapValues(g.names), s.Labels["node"]) }
	var got map[string][]string
	var rollout map[string]string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		m, err := g.serve.TryScrape()
		if err != nil {
			return false, nil
		}
		got, rollout = map[string][]string{}, map[string]string{}
		for _, s := range slices.DeleteFunc(m.Samples("gpuops_node_usable"), func(s gpuopstest.Sample) bool { return !ours(s) }) {
			got[s.Labels["node"]] = append(got[s.Labels["node"]], fmt.Sprintf("usable=%v", s.Value))
		}
		findings := false
		for _, name := range []string{"gpuops_node_unusable_cause", "gpuops_driver_upgrade_node", "gpuops_operand_missing", "gpuops_operand_stuck", "gpuops_order_violation"} {
			for _, s := range m.Samples(name) {
				if !ours(s) || s.Value != 1 {
					continue
				}
				l := s.Labels
				switch name {
				case "gpuops_node_unusable_cause":
					got[l["node"]] = append(got[l["node"]], l["code"]+"/"+l["operand"])
				case "gpuops_driver_upgrade_node":
					rollout[l["node"]] = l["verdict"] + "/" + l["state"]
				default:
					findings = true
				}
			}
		}
		if findings || len(got) != len(want) || !maps.Equal(rollout, upgrades) {
			return false, nil
		}
		for node, causes := range want {
			exp := []string{"usable=1"}
			if causes != ok {
				exp = append([]string{"usable=0"}, strings.Split(causes, "+")...)
			}
			slices.Sort(exp)
			have := slices.Sorted(slices.Values(got[node]))
			if !slices.Equal(have, exp) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("%s: serve does not say what health (%v) and the rollout (%v) are within 30s; it says %v and %v", at, want, upgrades, got, rollout)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// checkManagers: the state label is the controller's, the cordon its, a
// paused deploy label the driver manager's, as managedFields records them.
func (g *gpuopsView) checkManagers(ctx context.Context, at string, s rehearsal.Step) {
	t := g.t
	t.Helper()
	if s.Node == "" {
		return
	}
	n, err := g.env.Client.CoreV1().Nodes().Get(ctx, s.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owns := func(manager, field string) bool {
		return slices.ContainsFunc(n.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == manager && e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), `"f:`+field+`"`)
		})
	}
	if s.State != "" && !owns(operand.UpgradeManager, operand.UpgradeStateLabel) {
		t.Errorf("%s: %s is not %s's", at, operand.UpgradeStateLabel, operand.UpgradeManager)
	}
	if strings.Contains(s.What, ": cordoned (") && !owns(operand.UpgradeManager, "unschedulable") {
		t.Errorf("%s: the cordon is not %s's", at, operand.UpgradeManager)
	}
	if strings.Contains(s.What, "paused") && !owns(operand.DriverUpgrade.Manager, operand.LabelPrefix+operand.ContainerToolkit) {
		t.Errorf("%s: the paused label is not %s's", at, operand.DriverUpgrade.Manager)
	}
}

// checkEvents: a's every state change has the controller's Event, where
// its recorder files a node's (namespace default).
func (g *gpuopsView) checkEvents(ctx context.Context) {
	t := g.t
	evs, err := g.env.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + g.names["a"] + ",reason=" + operand.UpgradeEventReason})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range evs.Items {
		said = append(said, strings.TrimPrefix(e.Message, "Successfully updated node state label to "))
	}
	for _, s := range []string{operand.UpgradeRequired, operand.UpgradeCordonRequired, operand.UpgradeWaitForJobsRequired,
		operand.UpgradePodDeletionRequired, operand.UpgradeDrainRequired, operand.UpgradePodRestartRequired,
		operand.UpgradeValidationRequired, operand.UpgradeUncordonRequired, operand.UpgradeDone} {
		if !slices.Contains(said, s) {
			t.Errorf("no %s Event of node %s moving to %s: %q", operand.UpgradeEventReason, g.names["a"], s, said)
		}
	}
}

// checkCommand: gpuops lab --scenario refuses a scenario it does not know
// with nothing changed, and runs the lab and the rehearsal again.
func (g *gpuopsView) checkCommand(spec string) {
	t := g.t
	file := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "lab.yaml"), spec)
	dir := t.TempDir()
	lab := func(scenario string) gpuopstest.Output {
		return gpuopstest.Cluster{Kubeconfig: g.env.Kubeconfig}.Run(t, "lab", "--lab", file, "--workdir", dir, "--scenario", scenario)
	}
	r := lab("nope")
	if r.Code != 2 || r.Stderr != "error: unknown scenario \"nope\" (known: "+strings.Join(rehearsal.Scenarios, ", ")+") (see --help)\n" {
		t.Errorf("lab --scenario nope: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	dss, err := g.env.Client.AppsV1().DaemonSets(g.env.Namespace).List(context.Background(), metav1.ListOptions{})
	if entries, _ := os.ReadDir(dir); err != nil || len(dss.Items) > 0 || len(entries) > 0 {
		t.Errorf("lab --scenario nope changed something: %d DaemonSets, %d files in the workdir (%v)", len(dss.Items), len(entries), err)
	}

	r = lab(rehearsal.DriverUpgrade)
	last := fmt.Sprintf("rehearsal: step %d: clean-up: ", len(table))
	if r.Code != 0 || !strings.Contains(r.Stdout, last) || !strings.Contains(r.Stdout, "  "+g.names["c"]+" failed upgrade-failed since ") ||
		!strings.Contains(r.Stdout, "  "+g.names["c"]+" UNUSABLE upgrade-failed driver") {
		t.Errorf("lab --scenario %s: exit %d\n%s%s", rehearsal.DriverUpgrade, r.Code, r.Stdout, r.Stderr)
	}
	if r := (gpuopstest.Cluster{}).Run(t, "lab", "--help"); !strings.Contains(r.Stdout, "--scenario NAME") {
		t.Errorf("lab --help does not explain --scenario:\n%s", r.Stdout)
	}
}
