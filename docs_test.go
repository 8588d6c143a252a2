package gpuops_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/workload"
)

// The README is the front door: what gpuops is, the two commands, a short
// tour and links, read in ten minutes. The rest lives in docs/.
const readmeMaxLines = 300

// doc is a Markdown file of the repository: its text outside fenced code
// (examples and output), its prose (inline code blanked too, so that
// commands are not read as links or figures) and the anchors of its headings.
type doc struct {
	name    string
	text    string
	prose   string
	anchors map[string]bool
}

func readDoc(t *testing.T, name string) doc {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	d := doc{name: name, anchors: map[string]bool{}}
	var text, prose strings.Builder
	fenced := false
	seen := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || strings.HasPrefix(line, "```") {
			text.WriteString("\n")
			prose.WriteString("\n")
			continue
		}
		text.WriteString(line + "\n")
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			a := slug(h)
			if n := seen[a]; n > 0 {
				d.anchors[a+"-"+strconv.Itoa(n)] = true
			} else {
				d.anchors[a] = true
			}
			seen[a]++
		}
		prose.WriteString(inlineCode.ReplaceAllString(line, "``") + "\n")
	}
	d.text, d.prose = text.String(), prose.String()
	return d
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// slug is the anchor GitHub gives a heading: lower case, only letters,
// digits, spaces, hyphens and underscores kept, spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/*.md: %v, %d pages", err, len(pages))
	}
	return pages
}

// rawDocs is the README and every docs page, by name, as written.
func rawDocs(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for _, name := range append([]string{"README.md"}, docPages(t)...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = string(b)
	}
	return docs
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// links are the targets of a doc's Markdown links, outside code.
func (d doc) links() []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(d.prose, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into docs/", n, readmeMaxLines)
	}
}

// A moved section leaves links behind: every link between the repository's
// docs must land on a file of the repository and, with #anchor, a heading.
func TestDocsLinksResolve(t *testing.T) {
	docs := map[string]doc{}
	for _, name := range append([]string{"README.md"}, docPages(t)...) {
		docs[name] = readDoc(t, name)
	}
	for name, d := range docs {
		for _, link := range d.links() {
			if strings.HasPrefix(link, "https://") || strings.HasPrefix(link, "http://") {
				continue
			}
			file, anchor, _ := strings.Cut(link, "#")
			target := name
			if file != "" {
				target = path.Join(path.Dir(name), file)
			}
			if strings.HasPrefix(target, "../") || path.IsAbs(target) {
				t.Errorf("%s: link %s points outside the repository", name, link)
				continue
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %s: %v", name, link, err)
				continue
			}
			if anchor == "" {
				continue
			}
			to, ok := docs[target]
			if !ok {
				to = readDoc(t, target)
			}
			if !to.anchors[anchor] {
				t.Errorf("%s: link %s: %s has no heading with anchor #%s", name, link, target, anchor)
			}
		}
	}
}

// Every page of docs/ is one click from the README, or nobody finds it.
func TestDocsReachableFromREADME(t *testing.T) {
	linked := map[string]bool{}
	for _, link := range readDoc(t, "README.md").links() {
		file, _, _ := strings.Cut(link, "#")
		linked[path.Clean(file)] = true
	}
	for _, page := range docPages(t) {
		if !linked[page] {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

// figure is a measured quantity in prose: a duration, a size or a ratio.
var figure = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?(?: min \d+ s| ?(?:CPU-minutes|minutes|ms|µs|s|MB|GB|KB|×))(?:[^\w]|$)`)

// The README's timings must be runs recorded in bench/RESULTS.md, written as
// the bench wrote them, not estimates nor rounded hopes.
func TestREADMEFiguresAreRecorded(t *testing.T) {
	results, err := os.ReadFile("bench/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range figure.FindAllString(readDoc(t, "README.md").prose, -1) {
		f := strings.TrimRightFunc(m, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '×' })
		found++
		if !recorded(string(results), f) {
			t.Errorf("README.md says %q, which bench/RESULTS.md does not record", f)
		}
	}
	if found == 0 {
		t.Error("README.md gives no figure: the two commands' timings belong there")
	}
}

// recorded is whether figure f stands in the results on its own, not as the
// tail of a longer number (214 s is not 1214 s).
func recorded(results, f string) bool {
	for i := strings.Index(results, f); i >= 0; {
		if i == 0 || !strings.ContainsAny(results[i-1:i], "0123456789.,") {
			return true
		}
		j := strings.Index(results[i+1:], f)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// Every command, and every subcommand, has its section in docs/commands.md
// and its name in the README: a new command comes with its tour.
// Every cause code health gives is explained in `gpuops health --help`,
// in docs/commands.md (scripts match on them) and in the runbook of
// GpuopsNodeUnusable (docs/metrics.md), which carries the code.
func TestEveryHealthCodeDocumented(t *testing.T) {
	help := gpuopstest.Run(t, nil, gpuopstest.Binary(t), "health", "--help").Stdout
	for _, code := range health.Codes {
		if !regexp.MustCompile(`\b` + code + `\b`).MatchString(help) {
			t.Errorf("gpuops health --help does not name %s", code)
		}
	}
	for _, name := range []string{"docs/commands.md", "docs/metrics.md"} {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, code := range health.Codes {
			if !strings.Contains(string(raw), "`"+code+"`") {
				t.Errorf("%s does not name `%s`", name, code)
			}
		}
	}
}

// Every code of the catalog of host faults, and each text it matches, is
// in docs/commands.md's table, and health's and serve's help name --logs.
func TestEveryHostFaultDocumented(t *testing.T) {
	raw, err := os.ReadFile("docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range signature.Catalog {
		if !strings.Contains(string(raw), "| `"+s.Code+"` |") {
			t.Errorf("docs/commands.md has no row for `%s`", s.Code)
		}
		for _, text := range s.Texts {
			if !strings.Contains(string(raw), text) {
				t.Errorf("docs/commands.md does not quote %s's text %q", s.Code, text)
			}
		}
	}
	for _, bound := range []string{
		fmt.Sprintf("at most %d a run", pipeline.MaxLogs), fmt.Sprintf("at most %d reads start in a minute", pipeline.LogsPerMinute),
		fmt.Sprintf("its last %d lines, at most %d KiB", pipeline.LogTailLines, pipeline.LogLimitBytes>>10),
	} {
		if !strings.Contains(string(raw), bound) {
			t.Errorf("docs/commands.md does not say %q", bound)
		}
	}
	for _, cmd := range []string{"health", "serve"} {
		if help := gpuopstest.Run(t, nil, gpuopstest.Binary(t), cmd, "--help").Stdout; !strings.Contains(help, "--logs") {
			t.Errorf("gpuops %s --help does not name --logs", cmd)
		}
	}
}

// TestEveryWhyCodeDocumented: every code why and pods give is named by
// both commands' help and in docs/commands.md, and the headline's
// precedence is written there in the order the code follows.
func TestEveryWhyCodeDocumented(t *testing.T) {
	bin := gpuopstest.Binary(t)
	for _, cmd := range []string{"why", "pods"} {
		help := gpuopstest.Run(t, nil, bin, cmd, "--help").Stdout
		if !strings.Contains(gpuopstest.OneSpaced(help), strings.Join(workload.Codes, ", ")) {
			t.Errorf("gpuops %s --help does not list the codes in their precedence: %s", cmd, strings.Join(workload.Codes, ", "))
		}
	}
	raw, err := os.ReadFile("docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range workload.Codes {
		if !strings.Contains(string(raw), "`"+code+"`") {
			t.Errorf("docs/commands.md does not name `%s`", code)
		}
	}
	var order []string
	for _, code := range workload.Codes {
		order = append(order, "`"+code+"`")
	}
	if !strings.Contains(gpuopstest.OneSpaced(string(raw)), strings.Join(order, ", ")) {
		t.Errorf("docs/commands.md does not give the headline's precedence as %s", strings.Join(order, ", "))
	}
}

func TestEveryCommandDocumented(t *testing.T) {
	bin := gpuopstest.Binary(t)
	raw, err := os.ReadFile("docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var headings []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "## ") {
			headings = append(headings, line)
		}
	}
	commands := helpCommands(t, bin)
	if len(commands) < 10 {
		t.Fatalf("gpuops --help lists %d commands: %q", len(commands), commands)
	}
	for _, c := range commands {
		word := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(c) + `([^\w-]|$)`)
		if !containsMatch(headings, word) {
			t.Errorf("docs/commands.md has no section (## heading) for %s", c)
		}
		if !word.Match(readme) {
			t.Errorf("README.md does not name the command %s", c)
		}
		for _, sub := range helpCommands(t, bin, c) {
			if !strings.Contains(string(raw), c+" "+sub) {
				t.Errorf("docs/commands.md does not show %s %s", c, sub)
			}
		}
	}
}

func containsMatch(lines []string, re *regexp.Regexp) bool {
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// helpCommands are the commands the COMMANDS section of `gpuops [args] --help`
// lists, without help itself.
func helpCommands(t *testing.T, bin string, args ...string) []string {
	t.Helper()
	r := gpuopstest.Run(t, nil, bin, append(args, "--help")...)
	if r.Code != 0 {
		t.Fatalf("gpuops %s --help: exit %d\n%s", strings.Join(args, " "), r.Code, r.Stderr)
	}
	var names []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "COMMANDS:":
			in = true
		case in && strings.TrimSpace(line) == "":
			in = false
		case in:
			name := strings.TrimSuffix(strings.Fields(line)[0], ",")
			if name != "help" {
				names = append(names, name)
			}
		}
	}
	return names
}

// repoPath is a path of this repository named in the docs.
var repoPath = regexp.MustCompile(`(?:^|[^\w./-])((?:cmd|pkg|internal|test|hack|kustomize|bench)/[\w./-]*\w/?)`)

// upstreamPaths are the upstream projects' files the docs cite as the source
// of a fact; they name no path of this repository.
var upstreamPaths = map[string]bool{
	"cmd/driver-manager/main.go":                                           true, // k8s-driver-manager
	"cmd/nvidia-k8s-vgpu-dm/main.go":                                       true, // vgpu-device-manager
	"internal/state/driver.go":                                             true, // gpu-operator
	"internal/state/nodepool.go":                                           true, // gpu-operator
	"pkg/mig/reconfigure/reconfigure.go":                                   true, // mig-parted
	"pkg/upgrade/consts.go":                                                true, // k8s-operator-libs
	"pkg/controller/daemon":                                                true, // Kubernetes
	"cmd/nvidia-validator/main.go":                                         true, // gpu-operator
	"cmd/gpu-operator/main.go":                                             true, // gpu-operator
	"cmd/config-manager/main.go":                                           true, // k8s-device-plugin
	"internal/lm/mig-strategy.go":                                          true, // k8s-device-plugin
	"internal/rm/rm.go":                                                    true, // k8s-device-plugin
	"cmd/nvidia-mig-manager/main.go":                                       true, // mig-parted
	"cmd/gpu-kubelet-plugin/driver.go":                                     true, // dra-driver-nvidia-gpu
	"pkg/apis/resource/v1/conversion.go":                                   true, // Kubernetes
	"internal/kubernetes/client.go":                                        true, // k8s-driver-manager
	"internal/k8soperations/annotations.go":                                true, // kured
	"cmd/kured/main.go":                                                    true, // kured
	"internal/plugin/factory.go":                                           true, // k8s-device-plugin
	"pkg/kubelet/kuberuntime/kuberuntime_manager.go":                       true, // Kubernetes
	"pkg/kubelet/cm/dra/manager.go":                                        true, // Kubernetes
	"pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go": true, // Kubernetes
	"hack/must-gather.sh":                                                  true, // GPU Operator
}

// Packages are renamed and files move: every path of the repository the
// docs name must still be there.
func TestDocsPathsExist(t *testing.T) {
	for name, text := range rawDocs(t) {
		for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
			p := m[1]
			if upstreamPaths[p] {
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s names %s, which is not in the repository", name, p)
			}
		}
	}
}

// testName is a test or benchmark the docs cite as the check of a claim;
// a trailing * stands for a family of them.
var testName = regexp.MustCompile(`\b(?:Test|Benchmark)[A-Z]\w*\*?`)

// A claim the docs say is tested must name a test that is there: a renamed
// or deleted test fails here, not in a reader's search. (Example code, fenced,
// may name a test of its own.)
func TestDocsCiteTestsThatExist(t *testing.T) {
	var funcs strings.Builder
	err := filepath.WalkDir(".", func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && strings.HasPrefix(e.Name(), ".") && p != "." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			funcs.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	declared := funcs.String()
	for _, name := range append([]string{"README.md"}, docPages(t)...) {
		for _, n := range testName.FindAllString(readDoc(t, name).text, -1) {
			decl := "func " + n + "("
			if prefix, family := strings.CutSuffix(n, "*"); family {
				decl = "func " + prefix
			}
			if !strings.Contains(declared, decl) {
				t.Errorf("%s cites %s, which no test file declares", name, n)
			}
		}
	}
}

// commentDate is a day named in a comment (a timestamp in an example of
// output, 2026-12-04T10:00:00Z, is not one).
var commentDate = regexp.MustCompile(`\b20\d\d-[01]\d-[0-3]\d\b(?:[^T]|$)`)

// scaleSection is a comment's pointer to a section of docs/scale.md.
var scaleSection = regexp.MustCompile(`docs/scale\.md, +"([^"]+)"`)

// Comments say why the code is so; what it measured rots, so a comment
// names no run (bench/RESULTS.md) and no day, and one that needs a
// measurement points to a section of docs/scale.md that is there.
func TestCommentsCiteNoRun(t *testing.T) {
	var headings []string
	for _, line := range strings.Split(readDoc(t, "docs/scale.md").text, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			headings = append(headings, h)
		}
	}
	err := filepath.WalkDir(".", func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (strings.HasPrefix(e.Name(), ".") && p != "." || e.Name() == "testdata") {
			return filepath.SkipDir
		}
		marker := map[string]string{".go": "//", ".sh": "#"}[filepath.Ext(p)]
		if e.IsDir() || marker == "" || p == "docs_test.go" { // its README test reads the results
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var comments strings.Builder // a pointer may wrap
		for i, line := range strings.Split(string(b), "\n") {
			comment, ok := strings.CutPrefix(strings.TrimSpace(line), marker)
			if !ok {
				continue
			}
			comments.WriteString(comment)
			if strings.Contains(comment, "RESULTS.md") || commentDate.MatchString(comment) {
				t.Errorf("%s:%d: a comment cites a run or a day (point to docs/scale.md instead): %s", p, i+1, strings.TrimSpace(comment))
			}
		}
		for _, m := range scaleSection.FindAllStringSubmatch(comments.String(), -1) {
			if !slices.ContainsFunc(headings, func(h string) bool { return strings.HasPrefix(h, m[1]) }) {
				t.Errorf("%s: docs/scale.md has no section %q", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// resultsMaxLines bounds bench/RESULTS.md: the runs behind the figures the
// docs cite, not every run ever made (git keeps those).
const resultsMaxLines = 1500

// bench/RESULTS.md opens with an index of the figures cited and their
// runs; each run it names is a section of the file.
func TestResultsIndexNamesItsRuns(t *testing.T) {
	b, err := os.ReadFile("bench/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > resultsMaxLines {
		t.Errorf("bench/RESULTS.md has %d lines, more than %d: superseded runs leave it", len(lines), resultsMaxLines)
	}
	var headings []string
	for _, l := range lines {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			headings = append(headings, h)
		}
	}
	named, sections := 0, 0
	for _, l := range lines {
		if strings.HasPrefix(l, "## ") {
			if sections++; sections > 1 { // the index is the first section
				break
			}
		}
		cells := strings.Split(l, "|")
		if !strings.HasPrefix(l, "| ") || len(cells) < 4 || strings.HasPrefix(l, "| where") {
			continue
		}
		for _, m := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(cells[3], -1) {
			run := strings.TrimPrefix(m[1], "— ")
			named++
			if !slices.ContainsFunc(headings, func(h string) bool { return strings.Contains(h, run) }) {
				t.Errorf("the index names %q, which no section of bench/RESULTS.md is", m[1])
			}
		}
	}
	if named == 0 {
		t.Error("bench/RESULTS.md has no index of the runs behind the figures")
	}
}

// testdataMaxLines bounds the test data: goldens a reviewer reads, each
// view and format rendered once (docs/testing.md, "Golden files"), not every
// format of every install mode.
const testdataMaxLines = 25000

func TestTestdataStaysReadable(t *testing.T) {
	total := 0
	err := filepath.WalkDir(".", func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && strings.HasPrefix(e.Name(), ".") && p != "." {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.Contains(filepath.ToSlash(p), "testdata/") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > testdataMaxLines {
		t.Errorf("the testdata folders hold %d lines, more than %d: render a view or format once (pkg/report's goldens), not again per case", total, testdataMaxLines)
	}
}
