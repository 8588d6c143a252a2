package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
)

// lineUp lists the contenders, each with the output it must print. A
// contender that is not there yet (a gpuops command not written, an empty
// script) is left out with a note, so the bench runs at every stage.
func lineUp(root string, bin func(string) string, fleet []fleetNode, work *workloadFleet, bundle string, offers, withScript, recipe bool) ([]contender, []string) {
	ns := kube.DefaultNamespace
	audit, matrix := expectedAudit(fleet, roster(offers)), expectedMatrix(fleet, roster(offers))
	floor, lists := []string{bin("floor"), "-n", ns}, "nodes ‖ pods"
	var checkHealthOut func([]byte) string
	if offers {
		floor, lists = append(floor, "-slices"), "nodes ‖ pods ‖ ResourceSlices"
		checkHealthOut = checkHealth(fleet)
	}
	cs := []contender{
		{name: "floor: the raw LISTs (" + lists + "), protobuf", argv: floor, codes: []int{0}, floor: true},
		{name: "the raw LISTs as JSON", argv: append(floor[:len(floor):len(floor)], "-json"), codes: []int{0}},
	}
	var notes []string
	for _, c := range []struct{ cmd, want string }{{"audit", audit}, {"matrix", matrix}} {
		if exec.Command(bin("gpuops"), c.cmd, "--help").Run() != nil {
			notes = append(notes, fmt.Sprintf("`gpuops %s` not measured: the command does not exist yet", c.cmd))
			continue
		}
		cs = append(cs, contender{name: "gpuops " + c.cmd, argv: []string{bin("gpuops"), "-n", ns, c.cmd}, codes: []int{0, 1}, want: c.want})
	}
	// order-check reads one node and its pods, however large the fleet;
	// audit --explain and health read whole nodes (taints, conditions;
	// health also devices and every pod's container states).
	cs = append(cs,
		contender{name: "gpuops order-check NODE (one node)", argv: []string{bin("gpuops"), "-n", ns, "order-check", fleet[0].name}, codes: []int{0}, want: "ok\n"},
		contender{name: "gpuops audit --explain (whole nodes)", argv: []string{bin("gpuops"), "-n", ns, "audit", "--explain"}, codes: []int{0, 1}},
		contender{name: healthJudge, argv: []string{bin("gpuops"), "-n", ns, "health"}, codes: []int{0, 1}, check: checkHealthOut},
	)
	if work != nil {
		cs = append(cs, work.contenders(bin, fleet, ns, bundle)...)
	}
	script := filepath.Join(root, "operand-audit.sh")
	if !withScript {
		notes = append(notes, "operand-audit.sh not measured (-script=false)")
	} else if data, err := os.ReadFile(script); err != nil || !bytes.Contains(data, []byte("kubectl")) {
		notes = append(notes, "operand-audit.sh not measured: still a placeholder")
	} else {
		cs = append(cs, contender{name: "operand-audit.sh", argv: []string{"bash", script}, codes: []int{0, 1}, want: audit, slow: true})
	}
	if recipe {
		cs = append(cs, contender{name: "kubectl+jq recipe (bench/recipe.sh)", argv: []string{"bash", filepath.Join(root, "bench", "recipe.sh")}, codes: []int{0, 1}, want: audit, slow: true})
	} else {
		notes = append(notes, "the kubectl+jq recipe not measured (-recipe=false)")
	}
	return cs, notes
}

// baselineJudges are the contenders a -baseline binary runs too, by name.
var baselineJudges = []string{"gpuops audit", "gpuops matrix", healthJudge}

// healthJudge is health's contender.
const healthJudge = "gpuops health (whole nodes, pod health)"

// baselineName is the name of a judge's contender run by the baseline
// labelled label.
func baselineName(label, judge string) string {
	return label + " " + strings.TrimPrefix(judge, "gpuops ")
}

// baselines are the judges of cs run by other gpuops binaries, checked
// against the same output: spec is a comma-separated list of PATH, labelled
// "baseline", or LABEL=PATH (say, builds that each leave out one
// mechanism, measured against this one in the same rounds).
func baselines(spec string, cs []contender) []contender {
	var out []contender
	for _, b := range strings.Split(spec, ",") {
		label, binary, ok := strings.Cut(b, "=")
		if !ok {
			label, binary = "baseline", b
		}
		for _, c := range cs {
			if slices.Contains(baselineJudges, c.name) {
				b := c
				b.name, b.baseline = baselineName(label, c.name), true
				b.argv = append([]string{binary}, c.argv[1:]...)
				out = append(out, b)
			}
		}
	}
	return out
}

// rosterJSON hands the operand catalog to the recipe script.
func rosterJSON() string {
	type entry struct {
		Name string `json:"name"`
		Key  string `json:"key"`
		DS   string `json:"ds"`
	}
	var r []entry
	for _, o := range operand.Lab {
		r = append(r, entry{o.Name, o.LabelKey(), o.DaemonSet})
	}
	b, _ := json.Marshal(r)
	return string(b)
}

type report struct {
	nodes, running, pending, rounds int
	when                            time.Time
	machine, revision               string
	results                         []result
	setup, notes                    []string
	load                            [2]string // 1-minute load average before and after the rounds
	up                              *upRounds // nil unless -up-rounds
	shape                           shape
	watcher                         string        // serve's section (-watcher), or empty
	serve                           *serveFigures // -serve: serve under churn, in place of the judges
}

// markdown is the fleet's section, its heading at level (2: a run's own
// section, 3: one fleet of several).
func (r report) markdown(level int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s %d nodes, %d operand pods (%d Pending) — %s\n\n", strings.Repeat("#", level), r.nodes, r.running+r.pending, r.pending, r.when.Format("2006-01-02 15:04 MST"))
	if r.serve != nil {
		fmt.Fprintf(&b, "%s; gpuops %s.\n", r.machine, r.revision)
		b.WriteString(r.serve.markdown(level + 1))
		r.notes = append(r.notes, "against the targets set for 5,000 realistic nodes: "+r.serve.targets())
		r.list(&b)
		return b.String()
	}
	fmt.Fprintf(&b, "%s; gpuops %s. Median of %d rounds after a warm-up; CPU is the run's user and system time and peak RSS its largest process (/usr/bin/time). Load average (1 min) %s before the rounds, %s after.\n\n",
		r.machine, r.revision, r.rounds, r.load[0], r.load[1])
	b.WriteString("| what | median wall | × floor | median CPU | peak RSS | output |\n|---|---:|---:|---:|---:|---|\n")
	for _, res := range r.results {
		if res.failed != nil {
			fmt.Fprintf(&b, "| %s | — | — | — | — | **failed** %s |\n", res.name, res.failed)
			continue
		}
		ratio := "—"
		if floor := r.floorOf(res); floor > 0 {
			ratio = fmt.Sprintf("%.2f", float64(res.median())/float64(floor))
			if res.against != "" {
				against, _, _ := strings.Cut(res.against, " (")
				ratio += " × " + against
			}
		}
		name := res.name
		if len(res.walls) < r.rounds {
			name += fmt.Sprintf(" (%d run, no warm-up)", len(res.walls))
		}
		fmt.Fprintf(&b, "| %s | %.3f s | %s | %.2f s | %d MB | %s |\n", name, res.median().Seconds(), ratio, res.medianCPU().Seconds(), res.peakRSS()>>20, verdict(res))
	}
	b.WriteByte('\n')
	if r.up != nil {
		b.WriteString(r.up.markdown())
	}
	r.list(&b)
	b.WriteString(r.watcher)
	return b.String()
}

// list writes the setup and the notes, a line each.
func (r report) list(b *strings.Builder) {
	for _, s := range r.setup {
		fmt.Fprintf(b, "- setup: %s\n", s)
	}
	for _, s := range r.notes {
		fmt.Fprintf(b, "- %s\n", s)
	}
}

// floor is the median wall of the run's floor contender.
func (r report) floor() time.Duration {
	for _, res := range r.results {
		if res.floor {
			return res.median()
		}
	}
	return 0
}

// floorOf is the median wall a contender's ratio is over: of the
// contender it is measured against, else of the run's floor; 0 when the
// contender is a floor itself.
func (r report) floorOf(c result) time.Duration {
	if c.against == "" {
		return r.floor()
	}
	for _, res := range r.results {
		if res.name == c.against && res.failed == nil {
			return res.median()
		}
	}
	return 0
}

// fleetsMarkdown is the section of a run over several fleets: first each
// judge against the floor of the same fleet, one row a fleet, then every
// fleet's own table.
func fleetsMarkdown(reps []report) string {
	var b strings.Builder
	if reps[0].serve != nil {
		fmt.Fprintf(&b, "\n## `gpuops serve` under churn on %d fleets, one run — %s\n\n", len(reps), reps[0].when.Format("2006-01-02 15:04 MST"))
		fmt.Fprintf(&b, "%s; gpuops %s. The fleets one after the other; per fleet the informers alone (the memory floor), then serve with every judgement on, each under the same churn (details below).\n\n", reps[0].machine, reps[0].revision)
		b.WriteString("| fleet | ready | steady RSS (× floor) | peak RSS | CPU per change | probe → /metrics p50 / p99 | → watch p99 (floor) |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range reps {
			if f := r.serve; f != nil {
				fmt.Fprintf(&b, "| %s, %d nodes | %.2f s | %d MB (%.2f×) | %d MB | %.2f ms | %s / %s | %s |\n", f.name, f.nodes, f.serve.ready.Seconds(),
					f.serve.rss>>20, float64(f.serve.rss)/float64(f.floor.rss), f.serve.peak>>20, perChange(f.serve),
					ms(percentile(f.toMetric, .5)), ms(percentile(f.toMetric, .99)), ms(percentile(f.toWatch, .99)))
			}
		}
		for _, r := range reps {
			b.WriteString(r.markdown(3))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "\n## The judges against the floor on %d fleets, one run — %s\n\n", len(reps), reps[0].when.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "%s; gpuops %s. The fleets were measured one after the other (each contender's rounds interleaved within its fleet, each round in a shuffled order); each ratio is a judge's median wall over its own fleet's floor.\n\n", reps[0].machine, reps[0].revision)
	judges := slices.Clone(baselineJudges)
	head := "| fleet | a node, a pod | floor | audit | matrix | health |"
	if slices.ContainsFunc(reps[0].results, func(r result) bool { return strings.HasPrefix(r.name, "baseline ") }) {
		for _, j := range baselineJudges {
			judges = append(judges, baselineName("baseline", j))
		}
		head += " baseline audit | baseline matrix | baseline health |"
	}
	b.WriteString(head + "\n|---|---|" + strings.Repeat("---:|", len(judges)+1) + "\n")
	for _, r := range reps {
		floor := r.floor()
		fmt.Fprintf(&b, "| %d nodes, %d pods | %.1f KB, %.1f KB | %.3f s |", r.nodes, r.running+r.pending, r.shape.nodeKB, r.shape.podKB, floor.Seconds())
		for _, j := range judges {
			cell := " — |"
			for _, res := range r.results {
				if res.name == j && floor > 0 && res.failed == nil {
					cell = fmt.Sprintf(" %.3f s (%.2f×) |", res.median().Seconds(), float64(res.median())/float64(floor))
				}
			}
			b.WriteString(cell)
		}
		b.WriteByte('\n')
	}
	for _, r := range reps {
		b.WriteString(r.markdown(3))
	}
	return b.String()
}

// verdict compares a contender's output with what the fleet must produce.
func verdict(r result) string {
	if r.check != nil {
		return r.check(r.out)
	}
	if r.want == "" {
		return "—"
	}
	if string(r.out) == r.want {
		return fmt.Sprintf("as expected (%d lines)", strings.Count(r.want, "\n"))
	}
	got, want := strings.Split(string(r.out), "\n"), strings.Split(r.want, "\n")
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("**WRONG** at line %d: got %q, want %q", i+1, got[i], want[i])
		}
	}
	return fmt.Sprintf("**WRONG**: %d lines, want %d", len(got)-1, len(want)-1)
}

const resultsHeader = `# Benchmark results

Written by ` + "`go tool task bench`" + ` (N=1000) and ` + "`go tool task bench N=5000`" + `, one section per run,
newest last. Each run builds a fresh KWOK fleet on this machine's local control plane (QPS limits off),
settles it with ` + "`gpuops up`" + ` (or, with ` + "`UP=false`" + `, labels the nodes at creation and applies the
DaemonSets itself), then times every contender in interleaved rounds. The floor is a minimal
Go program that sends the two LIST requests and drops the bodies; "× floor" is median wall over the
floor's. "output" compares each judge's stdout, byte for byte, with the audit (or matrix) the fleet
must produce.
`

// appendResults adds a run's section to the results file, creating it with
// its header if needed.
func appendResults(path, section string) error {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		section = resultsHeader + section
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(section); err != nil {
		f.Close()
		return err
	}
	logf("results appended to %s", path)
	return f.Close()
}

// machine describes where the figures come from.
func machine(server string) string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %d GiB RAM", (kb+1<<19)>>20)
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("Machine: %s, %d cores%s, Linux %s; %s; kube-apiserver %s on KWOK",
		cpu, runtime.NumCPU(), mem, strings.TrimSpace(string(kernel)), runtime.Version(), server)
}

// loadAverage is the 1-minute load average: other work on the machine
// slows the API server and every contender with it.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(data))[0]
}

// revision names the code measured: the commit, marked when the work tree
// differs from it in the files that make up gpuops.
func revision(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(unknown revision)"
	}
	rev := strings.TrimSpace(string(out))
	dirty, _ := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--", "cmd", "pkg", "go.mod", "operand-audit.sh").Output()
	if len(bytes.TrimSpace(dirty)) > 0 {
		rev += " + uncommitted changes"
	}
	return rev
}
