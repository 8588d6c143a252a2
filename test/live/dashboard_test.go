package live_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
)

const dashboardFile = "../../kustomize/deploy/grafana/gpuops.json"

type datasource struct{ Type, UID string }

// variable is a dashboard variable: Definition is a query variable's query.
type variable struct{ Name, Type, Definition, AllValue string }

// dashboard is what the tests read of the dashboard JSON: the fields
// Grafana's dashboard model requires, and those the dashboard promises.
type dashboard struct {
	UID, Title    string
	SchemaVersion int
	Templating    struct {
		List []variable
	}
	Panels []panel
}

type panel struct {
	ID          int
	Type, Title string
	Datasource  *datasource
	GridPos     struct{ X, Y, W, H int }
	FieldConfig struct {
		Defaults struct{ Unit string }
	}
	Links   []struct{ URL string }
	Targets []struct {
		RefID        string
		Expr         string
		LegendFormat string
		Datasource   *datasource
	}
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// The runbooks and the metrics table, where every panel links.
const docsURL = "https://github.com/gpuops/gpuops/blob/main/docs/metrics.md#"

// TestDashboardModel checks the dashboard JSON against what Grafana's
// dashboard model requires (uid, title, schemaVersion; panels with an id,
// a type, a data source, targets and a place on the grid), the variables
// its queries use, that no two panels overlap on the 24-column grid, and
// that each panel has a unit and a link to a section of docs/metrics.md
// that exists.
func TestDashboardModel(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 || len(d.Panels) == 0 {
		t.Fatalf("uid %q, title %q, schemaVersion %d, %d panels: want all set", d.UID, d.Title, d.SchemaVersion, len(d.Panels))
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["pool"] != "query" || vars["policy"] != "query" {
		t.Errorf("variables %v, want datasource (a data source), pool and policy (queries)", vars)
	}
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, h := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(doc), -1) {
		anchors[githubAnchor(h[1])] = true
	}
	ids := map[int]bool{}
	used := regexp.MustCompile(`\$\{?(\w+)`)
	for i, p := range d.Panels {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID == 0 || ids[p.ID] || p.Type == "" || p.Title == "" {
			t.Errorf("%s: want a unique id, a type and a title", name)
		}
		ids[p.ID] = true
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: data source %+v, want prometheus ${datasource}", name, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", name)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || tg.Expr == "" || tg.Datasource == nil || *tg.Datasource != *p.Datasource {
				t.Errorf("%s: target %+v, want a refId, an expression and the panel's data source", name, tg)
			}
			for _, m := range used.FindAllStringSubmatch(tg.Expr, -1) {
				if vars[m[1]] == "" {
					t.Errorf("%s: %s uses $%s, not a variable", name, tg.Expr, m[1])
				}
			}
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v off the 24-column grid", name, g)
		}
		for _, q := range d.Panels[:i] {
			o := q.GridPos
			if g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H {
				t.Errorf("%s overlaps panel %d %q: %+v and %+v", name, q.ID, q.Title, g, o)
			}
		}
		if p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("%s: no unit", name)
		}
		if len(p.Links) != 1 || !strings.HasPrefix(p.Links[0].URL, docsURL) || !anchors[strings.TrimPrefix(p.Links[0].URL, docsURL)] {
			t.Errorf("%s: links %+v, want one to a section of docs/metrics.md", name, p.Links)
		}
	}
}

// githubAnchor is the anchor GitHub makes of a heading: lower case,
// punctuation dropped, spaces as hyphens.
func githubAnchor(h string) string {
	h = strings.ToLower(h)
	h = regexp.MustCompile(`[^\p{L}\p{N} _-]`).ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// TestDashboardOnRealPrometheus runs every query of every panel against a
// real Prometheus scraping gpuops serve on a fleet that holds each case the
// dashboard shows, and checks that each returns the series it should. The
// fleet: a healthy node; a node its toolkit taken from under its device
// plugin (a start-up-order violation), quarantined by serve, and a second
// one, which trips the quarantine's fuse (at most one node); a node whose
// operands a taint keeps off (a taint of no actor the ledger knows: out of
// service, by unknown); a node the driver upgrade controller gave up on; a
// node a person cordoned. The healthy node and the first violation are
// of a second pool (a GPU model of their own, serve's default --group-by):
// the pool variable offers both pools, and a panel filtered to the second
// shows only its nodes.
func TestDashboardOnRealPrometheus(t *testing.T) {
	f := newFleet(t)
	gpus := testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: resource.MustParse("8")})
	ok, viol, viol2, upgrade, cordoned := f.gpuNode(t, "ok", gpus), f.gpuNode(t, "viol", gpus), f.gpuNode(t, "viol2", gpus),
		f.gpuNode(t, "upgrade", gpus), f.gpuNode(t, "cordoned", gpus)
	taint := f.gpuNode(t, "taint", gpus, testcluster.WithTaints(corev1.Taint{Key: "gpuops.test/broken", Effect: corev1.TaintEffectNoSchedule}))
	const a100 = "NVIDIA-A100-SXM4-80GB"
	for _, n := range []string{ok, viol} {
		f.env.LabelNode(t, n, summary.DefaultGroupBy, a100)
	}
	f.env.LabelNode(t, upgrade, operand.UpgradeStateLabel, operand.UpgradeFailed)
	f.env.Kubectl(t, "cordon", cordoned)
	srv := serve(t, append(slices.Clone(f.args), "--quarantine=on", "--quarantine-after", "1s", "--quarantine-max", "1", "--quarantine-rate", "5")...)
	f.env.LabelNode(t, viol, toolkit.LabelKey(), "false")
	srv.WaitFor(t, viol+" quarantined", func(m gpuopstest.Scrape) bool {
		return m.IsOne("gpuops_quarantined_node", map[string]string{"node": viol, "mode": "on"})
	})
	f.env.LabelNode(t, viol2, toolkit.LabelKey(), "false")
	srv.WaitFor(t, "the fuse tripped", func(m gpuopstest.Scrape) bool {
		fuse, _ := m.Value("gpuops_quarantine_fuse_tripped", nil)
		return fuse == 1
	})
	prom := startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))
	// Two scrapes of the tripped fuse at least: rate() needs two samples.
	prom.waitFor(t, "the tripped fuse scraped twice", func() bool {
		return prom.count(t, "count_over_time(gpuops_quarantine_fuse_tripped[5m]) >= 2 and gpuops_quarantine_fuse_tripped == 1") == 1
	})

	// The watches serve runs, as it says (one series each).
	var watches []string
	for _, w := range srv.Scrape(t).Series("gpuops_informer_synced") {
		watches = append(watches, strings.TrimPrefix(w, "resource=")+" 0")
	}
	if len(watches) == 0 {
		t.Fatal("serve says it runs no watch")
	}
	slices.Sort(watches)

	// What each panel shows: its targets' series, in order, as Grafana
	// names them (the target's legend, else the labels) with their values.
	// The node names are the test's own: n replaces them by the case's name.
	want := map[string][]string{
		"GPU nodes: usable and unusable": {"usable 2", "unusable 4"},
		"Nodes by verdict":               {"finding 3", "ok 3"},
		"Unusable GPU nodes by cause": {
			"missing container-toolkit 1", "missing dcgm-exporter 1", "missing device-plugin 1", "missing driver 1",
			"missing gpu-feature-discovery 1", "order dcgm-exporter 2", "order device-plugin 2", "order gpu-feature-discovery 2",
			"upgrade-failed driver 1"},
		"Operands: nodes asking vs running": {
			"container-toolkit asked 4", "dcgm-exporter asked 6", "device-plugin asked 6", "driver asked 6", "gpu-feature-discovery asked 6",
			"container-toolkit running 3", "dcgm-exporter running 5", "device-plugin running 5", "driver running 5", "gpu-feature-discovery running 5"},
		"Missing operands and why": {
			"{node=taint,operand=container-toolkit,reason=untolerated-taint} 1", "{node=taint,operand=dcgm-exporter,reason=untolerated-taint} 1",
			"{node=taint,operand=device-plugin,reason=untolerated-taint} 1", "{node=taint,operand=driver,reason=untolerated-taint} 1",
			"{node=taint,operand=gpu-feature-discovery,reason=untolerated-taint} 1"},
		"Start-up-order violations": {
			"{needs=container-toolkit,node=viol,operand=dcgm-exporter,rule=dcgm-exporter-without-toolkit} 1",
			"{needs=container-toolkit,node=viol,operand=device-plugin,rule=device-plugin-without-toolkit} 1",
			"{needs=container-toolkit,node=viol,operand=gpu-feature-discovery,rule=gpu-feature-discovery-without-toolkit} 1",
			"{needs=container-toolkit,node=viol2,operand=dcgm-exporter,rule=dcgm-exporter-without-toolkit} 1",
			"{needs=container-toolkit,node=viol2,operand=device-plugin,rule=device-plugin-without-toolkit} 1",
			"{needs=container-toolkit,node=viol2,operand=gpu-feature-discovery,rule=gpu-feature-discovery-without-toolkit} 1"},
		// Every watch serve runs, none failing (serve runs as the admin).
		"Failed lists and watches": watches,
		// No ClusterPolicy: the rollout's policy is none. The tainted node
		// has no driver pod, so no part in it.
		"Driver upgrade: nodes by verdict": {"none done 4", "none failed 1", "none in-progress 0", "none left-cordoned 0", "none outdated 0",
			"none skipped 0", "none stuck 0", "none waiting 0"},
		// The failed node counts as in progress, the two cordoned ones
		// (by a person, by gpuops) as unavailable.
		"Driver upgrade: budget": {"none available 0", "none in_progress 1", "none max_parallel 0", "none max_unavailable 0", "none unavailable 2"},
		"Driver upgrade: nodes": {"{node=cordoned,verdict=done} 1", "{node=ok,verdict=done} 1", "{node=upgrade,state=upgrade-failed,verdict=failed} 1",
			"{node=viol,verdict=done} 1", "{node=viol2,verdict=done} 1"},
		"Quarantine: nodes held and its limit":                  {"on 1", "max 1"},
		"Quarantine fuse":                                       {"fuse 1"},
		"Quarantine: unusable nodes left in service, by reason": {"fuse-tripped 2", "held-by-other 1", "in-driver-upgrade 1"},
		"Out of service, by who took them out":                  {"driver-manager 0", "gpuops 1", "kured 0", "nvsentinel 0", "person 1", "unknown 1", "upgrade-controller 0"},
		"Nodes out of service":                                  {"{actor=gpuops,node=viol} 1", "{actor=person,node=cordoned} 1", "{actor=unknown,node=taint} 1"},
	}
	d := readDashboard(t)
	// The pool variable: its query as Grafana runs it (label_values is the
	// label values API); every query variable at its All value, unless set.
	i := slices.IndexFunc(d.Templating.List, func(v variable) bool { return v.Name == "pool" })
	if i < 0 {
		t.Fatal("the dashboard has no pool variable")
	}
	m := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`).FindStringSubmatch(d.Templating.List[i].Definition)
	if m == nil {
		t.Fatalf("the pool variable's query %q, want label_values(METRIC, LABEL)", d.Templating.List[i].Definition)
	}
	var values struct{ Data []string }
	if !prom.get(t, "/api/v1/label/"+m[2]+"/values?match[]="+url.QueryEscape(m[1]), &values) || !slices.Equal(values.Data, []string{summary.NoGroup, a100}) {
		t.Errorf("the pool variable's values %q, want %q and %q", values.Data, summary.NoGroup, a100)
	}
	n := strings.NewReplacer(ok, "ok", viol2, "viol2", viol, "viol", upgrade, "upgrade", cordoned, "cordoned", taint, "taint")
	shows := func(p panel, set map[string]string) []string {
		var args []string
		for _, v := range d.Templating.List {
			if v.Type == "query" {
				args = append(args, "$"+v.Name, cmp.Or(set[v.Name], v.AllValue))
			}
		}
		vars := strings.NewReplacer(args...)
		var got []string
		for _, tg := range p.Targets {
			got = append(got, prom.series(t, vars.Replace(tg.Expr), tg.LegendFormat)...)
		}
		return strings.Split(n.Replace(strings.Join(got, "\n")), "\n")
	}
	// The second pool alone, as Grafana writes one value into a regular
	// expression: quoted.
	inA100 := map[string][]string{
		"GPU nodes: usable and unusable": {"usable 1", "unusable 1"},
		"Start-up-order violations": {
			"{needs=container-toolkit,node=viol,operand=dcgm-exporter,rule=dcgm-exporter-without-toolkit} 1",
			"{needs=container-toolkit,node=viol,operand=device-plugin,rule=device-plugin-without-toolkit} 1",
			"{needs=container-toolkit,node=viol,operand=gpu-feature-discovery,rule=gpu-feature-discovery-without-toolkit} 1"},
	}
	for _, p := range d.Panels {
		got := shows(p, nil)
		w, known := want[p.Title]
		if !known {
			t.Errorf("panel %q: no expectation; it shows\n%s", p.Title, strings.Join(got, "\n"))
			continue
		}
		if !slices.Equal(got, w) {
			t.Errorf("panel %q shows\n%s\nwant\n%s", p.Title, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
		delete(want, p.Title)
		if w, filtered := inA100[p.Title]; filtered {
			if got := shows(p, map[string]string{"pool": regexp.QuoteMeta(a100)}); !slices.Equal(got, w) {
				t.Errorf("panel %q of pool %s shows\n%s\nwant\n%s", p.Title, a100, strings.Join(got, "\n"), strings.Join(w, "\n"))
			}
			delete(inA100, p.Title)
		}
	}
	if len(want) > 0 || len(inA100) > 0 {
		t.Errorf("no panel %q", slices.Concat(slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(inA100))))
	}
}

// legendLabel is a label in a legend: {{node}}.
var legendLabel = regexp.MustCompile(`\{\{ *\w+ *\}\}`)

// series runs an instant query and returns its series as Grafana names
// them, with their values: legend, a target's legendFormat, with each
// {{label}} replaced; without one, the labels, sorted, without the
// metric's name and the target's instance and job (the dashboard's tables
// hide them). The series come sorted.
func (p *prometheus) series(t *testing.T, query, legend string) []string {
	t.Helper()
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if !p.get(t, "/api/v1/query?query="+url.QueryEscape(query), &r) || r.Status != "success" {
		t.Fatalf("Prometheus does not answer %s", query)
	}
	var out []string
	for _, s := range r.Data.Result {
		name := legend
		if name == "" {
			var ls []string
			for _, k := range slices.Sorted(maps.Keys(s.Metric)) {
				if k != "__name__" && k != "instance" && k != "job" {
					ls = append(ls, k+"="+s.Metric[k])
				}
			}
			name = "{" + strings.Join(ls, ",") + "}"
		}
		name = legendLabel.ReplaceAllStringFunc(name, func(l string) string { return s.Metric[strings.Trim(l, "{} ")] })
		out = append(out, fmt.Sprintf("%s %v", name, s.Value[1]))
	}
	slices.Sort(out)
	return out
}
