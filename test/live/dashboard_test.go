package live_test

import (
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

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

const dashboardFile = "../../kustomize/deploy/grafana/gpuops.json"

type datasource struct{ Type, UID string }

// dashboard is what the tests read of the dashboard JSON: the fields
// Grafana's dashboard model requires, and those the dashboard promises.
type dashboard struct {
	UID, Title    string
	SchemaVersion int
	Templating    struct {
		List []struct {
			Name, Type string
			Query      any
			AllValue   string
		}
	}
	Panels []struct {
		ID          int
		Type, Title string
		Datasource  *datasource
		GridPos     struct{ X, Y, W, H int }
		FieldConfig struct {
			Defaults struct{ Unit string }
		}
		Links   []struct{ URL string }
		Targets []struct {
			RefID      string
			Expr       string
			Datasource *datasource
		}
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
	if vars["datasource"] != "datasource" || vars["pool"] != "query" {
		t.Errorf("variables %v, want datasource (a data source) and pool (a query)", vars)
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
// plugin (a start-up-order violation), quarantined by serve; a node whose
// operands a taint keeps off, which trips the quarantine's fuse (at most
// one node); a node the driver upgrade controller gave up on; a node a
// person cordoned.
func TestDashboardOnRealPrometheus(t *testing.T) {
	f := newFleet(t)
	ok, viol, upgrade, cordoned := f.gpuNode(t, "ok"), f.gpuNode(t, "viol"), f.gpuNode(t, "upgrade"), f.gpuNode(t, "cordoned")
	f.env.LabelNode(t, upgrade, operand.UpgradeStateLabel, operand.UpgradeFailed)
	f.env.Kubectl(t, "cordon", cordoned)
	srv := serve(t, append(slices.Clone(f.args), "--quarantine=on", "--quarantine-after", "1s", "--quarantine-max", "1", "--quarantine-rate", "5")...)
	f.env.LabelNode(t, viol, toolkit.LabelKey(), "false")
	srv.waitFor(t, viol+" quarantined", func(m metrics) bool {
		return m.has("gpuops_quarantined_node", map[string]string{"node": viol, "mode": "on"})
	})
	taint := f.gpuNode(t, "taint", testcluster.WithTaints(corev1.Taint{Key: "gpuops.test/broken", Effect: corev1.TaintEffectNoSchedule}))
	srv.waitFor(t, "the fuse tripped", func(m metrics) bool {
		fuse, _ := m.value("gpuops_quarantine_fuse_tripped", nil)
		return fuse == 1
	})
	prom := startPrometheus(t, strings.TrimPrefix(srv.url, "http://"))
	prom.waitFor(t, "the tripped fuse scraped", func() bool { return prom.count(t, "gpuops_quarantine_fuse_tripped == 1") == 1 })

	// What each panel shows: its targets' series, "labels value", in
	// order. The node names are the test's own: n replaces them by the
	// case's name.
	want := map[string][]string{}
	d := readDashboard(t)
	n := strings.NewReplacer(ok, "ok", viol, "viol", upgrade, "upgrade", cordoned, "cordoned", taint, "taint")
	for _, p := range d.Panels {
		var got []string
		for _, tg := range p.Targets {
			got = append(got, prom.series(t, strings.ReplaceAll(tg.Expr, "$pool", ".*"))...)
		}
		got = strings.Split(n.Replace(strings.Join(got, "\n")), "\n")
		w, known := want[p.Title]
		if !known {
			t.Errorf("panel %q: no expectation; it shows\n%s", p.Title, strings.Join(got, "\n"))
			continue
		}
		if !slices.Equal(got, w) {
			t.Errorf("panel %q shows\n%s\nwant\n%s", p.Title, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
		delete(want, p.Title)
	}
	if len(want) > 0 {
		t.Errorf("no panel %q", slices.Sorted(maps.Keys(want)))
	}
}

// series runs an instant query and returns its series as "labels value",
// the labels sorted and without the target's instance and job, the series
// sorted.
func (p *prometheus) series(t *testing.T, query string) []string {
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
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(s.Metric)) {
			if k != "instance" && k != "job" {
				ls = append(ls, k+"="+s.Metric[k])
			}
		}
		out = append(out, fmt.Sprintf("{%s} %v", strings.Join(ls, ","), s.Value[1]))
	}
	slices.Sort(out)
	return out
}
