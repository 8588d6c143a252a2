package multicluster_test

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// TestAcrossClusters runs every judge across the fleet's contexts and checks
// each cluster's part against the same command on that cluster alone.
func TestAcrossClusters(t *testing.T) {
	f := newFleet(t)
	t.Run("text", func(t *testing.T) { testText(t, f) })
	t.Run("json", func(t *testing.T) { testJSON(t, f) })
	t.Run("table", func(t *testing.T) { testTable(t, f) })
	t.Run("junit", func(t *testing.T) { testJUnit(t, f) })
	t.Run("html", func(t *testing.T) { testHTML(t, f) })
	t.Run("openreports", func(t *testing.T) { testOpenReports(t, f) })
	t.Run("all-contexts", func(t *testing.T) { testAllContexts(t, f) })
	t.Run("context-match", func(t *testing.T) { testContextMatch(t, f) })
	t.Run("bad input", func(t *testing.T) { testBadInput(t, f) })
}

// stamped splits text output by its "<context>: " stamps.
func stamped(t *testing.T, r gpuopstest.Output) map[string]string {
	t.Helper()
	parts := map[string]string{}
	for line := range strings.Lines(r.Stdout) {
		context, rest, ok := strings.Cut(line, ": ")
		if !ok {
			errorf(t, r, "line %q is not stamped with its context", line)
		}
		parts[context] += rest
	}
	return parts
}

// lastLine is the one error line a failed run ends with on stderr.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// checkNotJudged checks a run whose context down could not be judged: exit
// 2, and one error line naming it, last on stderr.
func checkNotJudged(t *testing.T, r gpuopstest.Output, of int) {
	t.Helper()
	if r.Code != 2 {
		errorf(t, r, "exit %d, want 2: a context could not be judged", r.Code)
	}
	want := "error: 1 of " + string(rune('0'+of)) + " contexts could not be judged: down: "
	if l := lastLine(r.Stderr); !strings.HasPrefix(l, want) || !strings.Contains(l, "connection refused") {
		errorf(t, r, "last stderr line %q, want %q… connection refused", l, want)
	}
}

func testText(t *testing.T, f *fleet) {
	for _, j := range f.judges() {
		t.Run(j.String(), func(t *testing.T) {
			two := f.gpuops.Run(t, with(j.args, "--contexts", contextsList(healthy, broken))...)
			if two.Code != j.exit {
				errorf(t, two, "exit %d, want %d", two.Code, j.exit)
			}
			three := f.gpuops.Run(t, with(j.args, "--contexts", contextsList(healthy, broken, down))...)
			checkNotJudged(t, three, 3)
			for _, r := range []gpuopstest.Output{two, three} {
				parts := stamped(t, r)
				for _, c := range []string{healthy, broken} {
					if alone := f.alone(t, c, j.args...); parts[c] != alone.Stdout {
						errorf(t, r, "%s's part:\n%s\nwant what it prints alone:\n%s", c, parts[c], alone.Stdout)
					}
				}
			}
			if d := stamped(t, three)[down]; !strings.HasPrefix(d, "error: ") || !strings.Contains(d, "connection refused") {
				errorf(t, three, "down's part %q, want its error", d)
			}
			// The contexts come in the order given.
			if first, _, _ := strings.Cut(three.Stdout, ": "); first != healthy {
				errorf(t, three, "first context %q, want %s", first, healthy)
			}
		})
	}
	// summary's total: the fleet by group, beside the clusters.
	r := f.gpuops.Run(t, "summary", "--contexts", contextsList(broken, healthy, down))
	total := stamped(t, r)["(fleet)"]
	for _, want := range []string{
		"contexts=3 errors=1 nodes=4 with-findings=1\n",
		"(none) nodes=4 with-findings=1\n",
		"  order                 device-plugin-without-toolkit=1\n",
		"  health                ready=3 unusable=1 order/device-plugin=1\n",
	} {
		if !strings.Contains(total, want) {
			errorf(t, r, "the fleet's total lacks %q:\n%s", want, total)
		}
	}
}

// entries decodes {"clusters":[…]}.
func entries(t *testing.T, r gpuopstest.Output) (clusters []map[string]any, fleet map[string]any) {
	t.Helper()
	var doc struct {
		Clusters []map[string]any `json:"clusters"`
		Fleet    map[string]any   `json:"fleet"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		errorf(t, r, "not JSON: %v", err)
	}
	return doc.Clusters, doc.Fleet
}

func testJSON(t *testing.T, f *fleet) {
	for _, j := range f.judges() {
		t.Run(j.String(), func(t *testing.T) {
			r := f.gpuops.Run(t, with(j.args, "--contexts", contextsList(healthy, down, broken), "-o", "json")...)
			checkNotJudged(t, r, 3)
			cs, _ := entries(t, r)
			var order []string
			for _, e := range cs {
				c, _ := e["context"].(string)
				order = append(order, c)
				if s, _ := e["server"].(string); !strings.HasPrefix(s, "https://127.0.0.1:") {
					errorf(t, r, "%s: server %q", c, s)
				}
				if c == down {
					if msg, _ := e["error"].(string); len(e) != 3 || !strings.Contains(msg, "connection refused") {
						errorf(t, r, "down's entry %v, want context, server and its error only", e)
					}
					continue
				}
				delete(e, "context")
				delete(e, "server")
				var alone map[string]any
				a := f.alone(t, c, with(j.args, "-o", "json")...)
				if err := json.Unmarshal([]byte(a.Stdout), &alone); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(e, alone) {
					errorf(t, r, "%s's entry (less context and server) differs from its output alone:\n%s", c, a.Stdout)
				}
			}
			if !slices.Equal(order, []string{healthy, down, broken}) {
				errorf(t, r, "contexts %q, want the order given", order)
			}
		})
	}
	r := f.gpuops.Run(t, "summary", "--contexts", contextsList(healthy, broken, down), "-o", "yaml")
	checkNotJudged(t, r, 3)
	// YAML's keys come sorted, so an entry's context need not lead it.
	if !strings.HasPrefix(r.Stdout, "clusters:\n- ") || !strings.Contains(r.Stdout, "\n  context: healthy\n") || !strings.Contains(r.Stdout, "\nfleet:\n") {
		errorf(t, r, "YAML: want clusters and the fleet's total")
	}
	r = f.gpuops.Run(t, "summary", "--contexts", contextsList(healthy, broken, down), "-o", "json")
	_, total := entries(t, r)
	for k, want := range map[string]float64{"contexts": 3, "errors": 1, "nodes": 4, "nodesWithFindings": 1} {
		if total[k] != want {
			errorf(t, r, "fleet.%s = %v, want %v", k, total[k], want)
		}
	}
	if total["ok"] != false {
		errorf(t, r, "fleet.ok = %v with a context not judged and a finding", total["ok"])
	}
}

// rows are a table's lines as fields, without its headers; of a run across
// clusters, those of one context, without the CONTEXT column or stamp.
func rows(out, context string) [][]string {
	var rs [][]string
	header := true
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case context == "" && header:
			header = false
		case context == "":
			rs = append(rs, fields)
		case fields[0] == context || fields[0] == context+":":
			rs = append(rs, fields[1:])
		}
	}
	return rs
}

func testTable(t *testing.T, f *fleet) {
	for _, j := range f.judges() {
		if j.args[0] == "summary" { // several tables: below
			continue
		}
		t.Run(j.String(), func(t *testing.T) {
			r := f.gpuops.Run(t, with(j.args, "--contexts", contextsList(healthy, broken, down), "-o", "table")...)
			checkNotJudged(t, r, 3)
			if !strings.HasPrefix(r.Stdout, "CONTEXT ") {
				errorf(t, r, "want one table with a leading CONTEXT column")
			}
			for _, c := range []string{healthy, broken} {
				alone := f.alone(t, c, with(j.args, "-o", "table")...)
				if got, want := rows(r.Stdout, c), rows(alone.Stdout, ""); !reflect.DeepEqual(got, want) {
					errorf(t, r, "%s's rows %q, want its table alone's %q", c, got, want)
				}
			}
			if got := rows(r.Stdout, down); len(got) != 1 || got[0][0] != "error:" {
				errorf(t, r, "down: %q, want its error line", got)
			}
		})
	}
	r := f.gpuops.Run(t, "summary", "--contexts", contextsList(healthy, broken), "-o", "table")
	if r.Code != 1 || strings.Count(r.Stdout, "CONTEXT ") != 3 || !strings.Contains(r.Stdout, "\n(fleet)   ") {
		errorf(t, r, "summary: exit %d; want its three tables with CONTEXT columns, the fleet's rows among them", r.Code)
	}
}

// junitDoc is a JUnit document, each suite's cases as written.
type junitDoc struct {
	Suites []struct {
		Name     string `xml:"name,attr"`
		Hostname string `xml:"hostname,attr"`
		Errors   int    `xml:"errors,attr"`
		Inner    string `xml:",innerxml"`
	} `xml:"testsuite"`
}

func testJUnit(t *testing.T, f *fleet) {
	for _, args := range [][]string{{"audit"}, {"order-check", f.gpu1}, {"health"}} {
		t.Run(args[0], func(t *testing.T) {
			r := f.gpuops.Run(t, with(args, "--contexts", contextsList(healthy, broken, down), "-o", "junit")...)
			checkNotJudged(t, r, 3)
			gpuopstest.ValidJUnit(t, filepath.Join("..", ".."), r.Stdout)
			var doc junitDoc
			if err := xml.Unmarshal([]byte(r.Stdout), &doc); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range doc.Suites {
				names = append(names, s.Name)
				if !strings.HasPrefix(s.Hostname, "https://127.0.0.1:") {
					t.Errorf("suite %s: hostname %q, want its API server", s.Name, s.Hostname)
				}
				if s.Name == down {
					if s.Errors != 1 || !strings.Contains(s.Inner, "<error ") {
						t.Errorf("down's suite: errors=%d %s, want one case in error", s.Errors, s.Inner)
					}
					continue
				}
				var alone junitDoc
				if err := xml.Unmarshal([]byte(f.alone(t, s.Name, with(args, "-o", "junit")...).Stdout), &alone); err != nil {
					t.Fatal(err)
				}
				if len(alone.Suites) != 1 || s.Inner != alone.Suites[0].Inner {
					t.Errorf("%s's suite:\n%s\nwant its cases alone:\n%v", s.Name, s.Inner, alone.Suites)
				}
			}
			if !slices.Equal(names, []string{healthy, broken, down}) {
				t.Errorf("suites %q, want one per context in order", names)
			}
		})
	}
}

// gridRow is one node's row of the report's grid.
var gridRow = regexp.MustCompile(`<tr class="n[^"]*" id="n-([^"]+)">.*</tr>`)

func testHTML(t *testing.T, f *fleet) {
	two := f.gpuops.Run(t, "report", "--html", "-", "--contexts", contextsList(healthy, broken))
	if two.Code != 1 {
		errorf(t, two, "report: exit %d, want 1 (the broken lab's finding)", two.Code)
	}
	r := f.gpuops.Run(t, "report", "--html", "-", "--contexts", contextsList(healthy, broken, down))
	checkNotJudged(t, r, 3)
	page := r.Stdout
	for _, want := range []string{
		`<h2>Clusters (3)</h2>`,
		`id="not-judged"><span class="m">✗</span> 1 of 3 contexts could not be judged</p>`,
		`<tr><th scope="row" class="mono">down</th>`,
		`✗ not judged:</span> `,
		`<tr class="total"><th scope="row">Fleet</th><td></td><td class="num">4</td><td class="num"><span class="m">✗ 1</span></td><td class="num">1</td><td class="num">1</td></tr>`,
		`<option>healthy · (none)</option><option>broken · (none)</option>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	var got int
	for _, c := range []string{healthy, broken} {
		alone := f.alone(t, c, "report", "--html", "-").Stdout
		want := gridRow.FindAllString(alone, -1)
		var mine []string
		for _, m := range gridRow.FindAllStringSubmatch(page, -1) {
			if strings.HasPrefix(m[1], c+"/") {
				// the link's fragment is escaped, the id is not
				mine = append(mine, strings.NewReplacer(c+"/", "", c+"%2f", "").Replace(m[0]))
			}
		}
		got += len(mine)
		if len(want) != 2 || !slices.Equal(mine, want) {
			t.Errorf("%s's grid rows:\n%s\nwant its page alone's:\n%s", c, strings.Join(mine, "\n"), strings.Join(want, "\n"))
		}
	}
	if all := len(gridRow.FindAllString(page, -1)); all != got {
		t.Errorf("the page has %d grid rows, %d of them the clusters'", all, got)
	}
}

func testAllContexts(t *testing.T, f *fleet) {
	r := f.gpuops.Run(t, "audit", "--all-contexts", "-o", "json", "--parallel", "2")
	if r.Code != 2 {
		errorf(t, r, "exit %d, want 2", r.Code)
	}
	cs, _ := entries(t, r)
	var names []string
	for _, e := range cs {
		names = append(names, e["context"].(string))
	}
	if !slices.Equal(names, []string{broken, down, forbidden, healthy}) {
		errorf(t, r, "contexts %q, want every one of the kubeconfig's, by name", names)
	}
	if msg, _ := cs[2]["error"].(string); !strings.Contains(msg, "forbidden") {
		errorf(t, r, "the service account without rights: error %q, want forbidden", msg)
	}
	if l := lastLine(r.Stderr); !strings.HasPrefix(l, "error: 2 of 4 contexts could not be judged: down: ") || !strings.Contains(l, "; forbidden: ") {
		errorf(t, r, "last stderr line %q", l)
	}
	// More than a few contexts: a line as each is done.
	if n := strings.Count(r.Stderr, "contexts: "); n != 4 || !strings.Contains(r.Stderr, "contexts: 4/4 judged (") {
		errorf(t, r, "%d progress lines on stderr, want 4", n)
	}
	// Every judge, in text: every context by name, each reachable one as alone.
	for _, j := range f.judges() {
		r := f.gpuops.Run(t, with(j.args, "--all-contexts")...)
		if r.Code != 2 {
			errorf(t, r, "%s: exit %d, want 2", j, r.Code)
		}
		var order []string
		for line := range strings.Lines(r.Stdout) {
			if c, _, _ := strings.Cut(line, ": "); !slices.Contains(order, c) {
				order = append(order, c)
			}
		}
		if j.args[0] == "summary" {
			order = slices.DeleteFunc(order, func(c string) bool { return c == "(fleet)" })
		}
		if !slices.Equal(order, []string{broken, down, forbidden, healthy}) {
			errorf(t, r, "%s: contexts %q, want all of them by name", j, order)
		}
		parts := stamped(t, r)
		for _, c := range []string{healthy, broken} {
			if alone := f.alone(t, c, j.args...); parts[c] != alone.Stdout {
				errorf(t, r, "%s: %s's part differs from alone:\n%s", j, c, alone.Stdout)
			}
		}
		if !strings.HasPrefix(parts[forbidden], "error: ") || !strings.Contains(parts[forbidden], "forbidden") {
			errorf(t, r, "%s: forbidden's part %q", j, parts[forbidden])
		}
	}
}

func testContextMatch(t *testing.T, f *fleet) {
	r := f.gpuops.Run(t, "summary", "--context-match", "^(healthy|broken)$", "-o", "json")
	if r.Code != 1 {
		errorf(t, r, "exit %d, want 1", r.Code)
	}
	cs, total := entries(t, r)
	if len(cs) != 2 || cs[0]["context"] != broken || cs[1]["context"] != healthy || total["errors"] != float64(0) {
		errorf(t, r, "want broken and healthy, by name, all judged")
	}
	// With --contexts it filters the list.
	r = f.gpuops.Run(t, "order-check", f.gpu1, "--contexts", contextsList(healthy, down, forbidden), "--context-match", "^h")
	if r.Code != 0 || r.Stdout != healthy+": ok\n" {
		errorf(t, r, "exit %d, want 0 and healthy's verdict only", r.Code)
	}
}

// testBadInput: each refused before any cluster is read, with one error
// line and nothing on stdout.
func testBadInput(t *testing.T, f *fleet) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--contexts", healthy, "--context", broken}, "error: --context names one cluster: it does not go with --contexts, --all-contexts or --context-match (see --help)"},
		{[]string{"matrix", "--all-contexts", "--server", "https://127.0.0.1:1"}, "error: --server names one cluster"},
		{[]string{"summary", "--contexts", healthy + ",nope"}, `error: --contexts: context "nope" does not exist in the kubeconfig (it has broken, down, forbidden, healthy)`},
		{[]string{"health", "--context-match", "("}, "error: --context-match: error parsing regexp: missing closing ): `(`"},
		{[]string{"upgrades", "--context-match", "^x"}, `error: --context-match: no context matches "^x"`},
		{[]string{"audit", "--all-contexts", "--parallel", "0"}, "error: --parallel: want at least 1, got 0"},
		{[]string{"audit", "--parallel", "2"}, "error: --parallel needs --contexts, --all-contexts or --context-match"},
		{[]string{"order-check", f.gpu1, "--contexts", healthy, "--all-contexts"}, "error: --contexts and --all-contexts: give one of them"},
		{[]string{"report", "--html", "-", "--contexts", healthy + ",,broken"}, "error: --contexts: an empty context name"},
	} {
		f.gpuops.WantError(t, c.want, c.args...)
	}
}

// reportItems decodes a List of ClusterReports, each without its
// metadata and its results' timestamps (the time of each run's read), by
// the context its annotation names.
func reportItems(t *testing.T, r gpuopstest.Output) map[string][]any {
	t.Helper()
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(r.Stdout), &list); err != nil || list.Kind != "List" {
		errorf(t, r, "not a List: %v", err)
	}
	out := map[string][]any{}
	for _, item := range list.Items {
		meta, _ := item["metadata"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		context, _ := annotations["gpuops.io/cluster"].(string)
		delete(item, "metadata")
		results, _ := item["results"].([]any)
		for _, res := range results {
			delete(res.(map[string]any), "timestamp")
		}
		out[context] = append(out[context], item)
	}
	return out
}

// -o openreports: one List of every judged cluster's reports, each
// cluster's the reports it has alone, stamped with its context.
func testOpenReports(t *testing.T, f *fleet) {
	for _, args := range [][]string{{"audit"}, {"order-check", f.gpu1}, {"health"}} {
		t.Run(args[0], func(t *testing.T) {
			r := f.gpuops.Run(t, with(args, "--contexts", contextsList(healthy, broken, down), "-o", "openreports")...)
			checkNotJudged(t, r, 3)
			got := reportItems(t, r)
			if len(got) != 2 {
				errorf(t, r, "reports of %d contexts, want healthy's and broken's", len(got))
			}
			for _, c := range []string{healthy, broken} {
				alone := reportItems(t, f.alone(t, c, with(args, "-o", "openreports")...))[""]
				if len(alone) == 0 || !reflect.DeepEqual(got[c], alone) {
					errorf(t, r, "%s's reports differ from its reports alone: %v", c, alone)
				}
			}
		})
	}
}
