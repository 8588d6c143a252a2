package gpuopstest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// Golden is one command line whose whole output (exit code, stdout, stderr)
// must stay byte for byte what testdata/golden holds: the guard of every
// change that is meant not to change behaviour.
type Golden struct {
	Name string   // the file under testdata/golden, without .golden
	Args []string // gpuops's arguments
}

// UpdateGolden is the environment variable that makes CheckGolden write
// what it got instead of comparing: GPUOPS_UPDATE_GOLDEN=1 go test ./test/...
const UpdateGolden = "GPUOPS_UPDATE_GOLDEN"

// Volatile is what differs between two runs of the same command on the
// same objects and is not gpuops's doing: the names a test makes unique
// (replaced by the caller's) and the clock's instants and ages.
type Volatile map[string]string

var (
	instant = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?( UTC)?`)
	// OpenReports' timestamps, in seconds since the epoch
	epoch = regexp.MustCompile(`(seconds"?: )\d{9,}`)
	// the local cluster's kubeconfig context, which names it
	kwokContext = regexp.MustCompile(`\bkwok-[a-z0-9-]+`)
	// an age where gpuops prints one: "(3m)", "for 3m", "age 3m",
	// "[written] by MANAGER 3m ago" (YAML may fold the line before "by"),
	// in JSON as "ageSeconds": 180
	ageIn = regexp.MustCompile(`(\(|for |age[": ]+|Seconds": |by \S+ )(\d+h\d+m\d+s|\d+h\d+m|\d+h|\d+m\d+s|\d+m|\d+(\.\d+)?s|\d+)(\)|\b)`)
	// an age before "ago" wherever the writer's name is followed by more
	// ("written by M (not N, which writes this value) 3m ago")
	agoAge = regexp.MustCompile(`\b(\d+h\d+m\d+s|\d+h\d+m|\d+h|\d+m\d+s|\d+m|\d+(\.\d+)?s)( ago\b)`)
)

// normalize makes out comparable across runs: each of v's keys replaced by
// its value, the instants by <time>, the cluster's context by <cluster>,
// the ages by <age>. It is applied to the golden files too, so that a rule
// added here needs no new recording.
func (v Volatile) normalize(out string) string {
	out = instant.ReplaceAllString(v.names(out), "<time>")
	out = epoch.ReplaceAllString(out, "${1}<time>")
	out = kwokContext.ReplaceAllString(out, "<cluster>")
	out = agoAge.ReplaceAllString(ageIn.ReplaceAllString(out, "${1}<age>${4}"), "<age>${3}")
	// The files were first recorded with the parenthesis after an age
	// dropped; it goes on both sides, so they compare without a new recording.
	return strings.ReplaceAll(out, "<age>)", "<age>")
}

// names is out with each of v's keys replaced by its value.
func (v Volatile) names(out string) string {
	// the longest first: a namespace may hold a test's ID
	for _, from := range slices.SortedFunc(maps.Keys(v), func(a, b string) int { return len(b) - len(a) }) {
		if from != "" {
			out = strings.ReplaceAll(out, from, v[from])
		}
	}
	return out
}

// Comparable is out as two runs compare it (normalize), word by word
// when args print YAML (folded).
func (v Volatile) Comparable(args []string, out string) string {
	if folded(args) {
		out = OneSpaced(out)
	}
	return v.normalize(out)
}

// CheckGolden runs each command against c and compares what it printed,
// normalized by v, with dir/NAME.golden; with GPUOPS_UPDATE_GOLDEN=1 it
// writes the files instead. A file of dir that no case makes fails: every
// golden is checked by the test that made it.
func CheckGolden(t *testing.T, c Cluster, dir string, v Volatile, cases []Golden) {
	t.Helper()
	made := map[string]bool{}
	for _, g := range cases {
		made[g.Name+".golden"] = true
		r := c.Run(t, g.Args...)
		got := fmt.Sprintf("$ gpuops %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(g.Args, " "), r.Code, r.Stdout, r.Stderr)
		checkGolden(t, filepath.Join(dir, g.Name+".golden"), "gpuops "+strings.Join(g.Args, " "), got, v.normalize, folded(g.Args))
	}
	unmade(t, dir, made)
}

// CheckRendered compares each rendering with dir/NAME.golden (with
// GPUOPS_UPDATE_GOLDEN=1 it writes them); a file of dir that no rendering
// makes fails.
func CheckRendered(t *testing.T, dir string, rs []Rendered) {
	t.Helper()
	made := map[string]bool{}
	for _, r := range rs {
		made[r.Name+".golden"] = true
		checkGolden(t, filepath.Join(dir, r.Name+".golden"), r.Name, r.Text, func(s string) string { return s }, false)
	}
	unmade(t, dir, made)
}

// unmade fails for each file of dir that is not made: a golden nothing
// checks any more.
func unmade(t *testing.T, dir string, made map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !made[e.Name()] {
			t.Errorf("%s: no test case makes it (delete it)", filepath.Join(dir, e.Name()))
		}
	}
}

// checkGolden compares got with the golden file at path, both normalized
// (word by word when the output is folded YAML); with GPUOPS_UPDATE_GOLDEN=1
// it writes the file instead.
func checkGolden(t *testing.T, path, what, got string, normalize func(string) string, folded bool) {
	t.Helper()
	got = normalize(got)
	if os.Getenv(UpdateGolden) != "" {
		WriteFile(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v (make it with %s=1)", what, err, UpdateGolden)
		return
	}
	w := string(want)
	if folded { // unfolded first, so that a folded age is found
		got, w = normalize(OneSpaced(got)), OneSpaced(w)
	}
	if w = normalize(w); got != w {
		t.Errorf("%s: output changed from %s:\n%s", what, path, lineDiff(w, got))
	}
}

// folded reports whether the output is YAML, whose long strings the YAML
// library folds where the line runs out: an age of another length folds
// the line elsewhere, so such output is compared word by word.
func folded(args []string) bool {
	i := slices.Index(args, "-o")
	return i >= 0 && i+1 < len(args) && (args[i+1] == "yaml" || args[i+1] == "openreports")
}

// OneSpaced is s with every run of white space one space: wrapped help
// and prose as they read.
func OneSpaced(s string) string { return strings.Join(strings.Fields(s), " ") }

// lineDiff names the first line where got leaves want, with both.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(same lines, different ends)"
}

// JudgeCases are every judging command in every format it prints, the one
// node order-check judges being node, then each again across the contexts
// of ManyContexts (with -o openreports and report --html too).
func JudgeCases(node string, selector ...string) []Golden {
	formats := map[string][]string{
		"audit":       {"text", "json", "yaml", "table", "wide", "name", "junit", "openreports"},
		"order-check": {"text", "json", "yaml", "table", "wide", "name", "junit", "openreports"},
		"matrix":      {"text", "json", "yaml", "table"},
		"summary":     {"text", "json", "yaml", "table", "name"},
		"health":      {"text", "json", "yaml", "table", "junit", "openreports"},
		"upgrades":    {"text", "json", "yaml", "table", "openreports"},
	}
	var cs []Golden
	for _, cmd := range []string{"audit", "order-check", "matrix", "summary", "health", "upgrades"} {
		var args []string
		if cmd == "order-check" {
			args = []string{node}
		}
		for _, f := range formats[cmd] {
			cs = append(cs, Golden{Name: cmd + "." + f, Args: slices.Concat([]string{cmd}, args, []string{"-o", f})})
			if cmd != "order-check" {
				cs = append(cs, Golden{Name: "contexts." + cmd + "." + f, Args: []string{cmd, "--contexts", strings.Join(Contexts, ","), "-o", f}})
			}
		}
	}
	cs = append(cs,
		Golden{Name: "audit.explain", Args: []string{"audit", "--explain"}},
		Golden{Name: "audit.no-headers", Args: []string{"audit", "-o", "table", "--no-headers"}},
		Golden{Name: "health.explain", Args: []string{"health", "--explain"}},
		Golden{Name: "order-check.all-rules", Args: []string{"order-check", "--all-rules", node, "-o", "wide"}},
		Golden{Name: "report.html", Args: []string{"report", "--html", "-"}},
		Golden{Name: "contexts.report.html", Args: []string{"report", "--html", "-", "--contexts", strings.Join(Contexts, ",")}},
	)
	if len(selector) > 0 { // order-check judges its NODE alone
		for i := range cs {
			if cs[i].Args[0] != "order-check" {
				cs[i].Args = append(cs[i].Args, "-l", selector[0])
			}
		}
	}
	return append(cs,
		Golden{Name: "guard-status.text", Args: []string{"guard", "status"}},
		Golden{Name: "guard-status.json", Args: []string{"guard", "status", "-o", "json"}},
	)
}

// FromCases are the JudgeCases that a bundle of one cluster answers: across
// contexts and the guard's status read more than one cluster's objects.
func FromCases(node string, selector ...string) []Golden {
	return slices.DeleteFunc(JudgeCases(node, selector...), func(g Golden) bool {
		return strings.HasPrefix(g.Name, "contexts.") || strings.HasPrefix(g.Name, "guard-status")
	})
}

// TextAndJSON are the cases of cs that print text (no -o is text; the HTML
// page is not), and JSON but across contexts: what an install mode keeps.
func TextAndJSON(cs []Golden) []Golden {
	var out []Golden
	for _, c := range cs {
		format := "text"
		if i := slices.Index(c.Args, "-o"); i >= 0 && i+1 < len(c.Args) {
			format = c.Args[i+1]
		}
		contexts := slices.Contains(c.Args, "--contexts")
		if (format == "text" || format == "json" && !contexts) && !slices.Contains(c.Args, "--html") {
			out = append(out, c)
		}
	}
	return out
}

// Contexts are the contexts of ManyContexts: the cluster twice, and one
// whose API server does not answer.
var Contexts = []string{"east", "west", "down"}

// ManyContexts writes a kubeconfig whose contexts east and west are the
// cluster of kubeconfig, and down a server that refuses connections.
func ManyContexts(t testing.TB, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	down := *cfg.Clusters[cur.Cluster]
	down.Server = "https://127.0.0.1:1"
	cfg.Clusters["down"] = &down
	for _, name := range Contexts {
		c := *cur
		if name == "down" {
			c.Cluster = "down"
		}
		cfg.Contexts[name] = &c
	}
	path := filepath.Join(t.TempDir(), "contexts.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
