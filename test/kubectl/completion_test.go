package kubectl_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

// bashCompletion is bash-completion's library, which Cobra's bash script
// (like kubectl's) needs.
const bashCompletion = "/usr/share/bash-completion/bash_completion"

// completing is a test's cluster view for completion: two nodes of its
// own, and a kubeconfig with two contexts, the current one unreachable.
type completing struct {
	env        *testcluster.Env
	nodes      []string
	kubeconfig string // contexts "elsewhere" (current, unreachable) and "lab"
	path       string // PATH with gpuops first
}

func newCompleting(t *testing.T) *completing {
	t.Helper()
	env := testcluster.New(t)
	c := &completing{env: env, path: filepath.Dir(gpuopstest.Binary(t)) + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, s := range []string{"a", "b"} {
		c.nodes = append(c.nodes, env.AddNode(t, env.NodeName(s), nil).Name)
	}
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin := cfg.Contexts[cfg.CurrentContext]
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts = map[string]*clientcmdapi.Context{
		"lab":       {Cluster: admin.Cluster, AuthInfo: admin.AuthInfo},
		"elsewhere": {Cluster: "nowhere", AuthInfo: admin.AuthInfo},
	}
	cfg.CurrentContext = "elsewhere"
	c.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *completing) environ(t *testing.T) []string {
	return []string{"PATH=" + c.path, "HOME=" + t.TempDir(), "KUBECONFIG="}
}

// bash completes the line's last word as bash does on TAB: the words in
// COMP_WORDS, the cursor at the end, then the completion function that
// setup registered; it returns COMPREPLY.
func bash(t *testing.T, environ []string, setup, function string, words ...string) []string {
	t.Helper()
	if _, err := os.Stat(bashCompletion); err != nil {
		t.Fatalf("bash-completion is not installed (go tool task deps installs it): %v", err)
	}
	script := "source " + bashCompletion + "\n" + setup + `
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
` + function + ` 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
	r := gpuopstest.Run(t, environ, "bash", append([]string{"-c", script, "bash"}, words...)...)
	if r.Code != 0 {
		t.Fatalf("bash completion of %q: exit %d\n%s", words, r.Code, r.Stderr)
	}
	return lines(r.Stdout)
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func wantCandidates(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s: candidates %q, want %q", what, got, want)
	}
}

func operandNames() []string {
	var names []string
	for _, o := range operand.Lab {
		names = append(names, o.Name)
	}
	return names
}

func TestBashCompletion(t *testing.T) {
	t.Parallel()
	c := newCompleting(t)
	env := c.environ(t)
	complete := func(words ...string) []string {
		return bash(t, env, "source <(gpuops completion bash)", "__start_gpuops", append([]string{"gpuops"}, words...)...)
	}
	wantCandidates(t, "commands", complete(""),
		"audit", "capacity", "collect", "completion", "guard", "health", "help", "lab", "matrix", "optin", "optout", "order-check", "pods", "quarantine", "report", "reset", "serve", "summary", "up", "upgrades", "version", "watch", "why")
	wantCandidates(t, "a command's prefix", complete("o"), "optin", "optout", "order-check")
	wantCandidates(t, "operands", complete("optout", c.nodes[0], ""), operandNames()...)
	wantCandidates(t, "an operand's prefix", complete("optin", c.nodes[0], "d"), "driver", "device-plugin", "dcgm-exporter")
	wantCandidates(t, "-o of audit", complete("audit", "-o", ""), "text", "json", "yaml", "table", "wide", "name", "junit", "openreports")
	wantCandidates(t, "-o of order-check", complete("order-check", "-o", ""), "text", "json", "yaml", "table", "wide", "name", "junit", "openreports")
	wantCandidates(t, "-o of matrix", complete("matrix", "-o", ""), "text", "json", "yaml", "table")
	wantCandidates(t, "-o of summary", complete("summary", "-o", ""), "text", "json", "yaml", "table", "name")
	wantCandidates(t, "-o of health", complete("health", "-o", ""), "text", "json", "yaml", "table", "junit", "openreports")
	wantCandidates(t, "--no-headers", complete("matrix", "--no-h"), "--no-headers")
	wantCandidates(t, "a flag", complete("audit", "--ex"), "--explain")
	wantCandidates(t, "shells", complete("completion", ""), "bash", "zsh", "fish")
	wantCandidates(t, "--scenario of lab", complete("lab", "--scenario", ""), "driver-upgrade", "sharing", "mig", "dra", "workloads")

	prefix := "t-" + c.env.ID + "-"
	wantCandidates(t, "contexts of --kubeconfig", complete("--kubeconfig", c.kubeconfig, "--context", ""), "elsewhere", "lab")
	wantCandidates(t, "contexts for --contexts", complete("--kubeconfig", c.kubeconfig, "audit", "--contexts", ""), "elsewhere", "lab")
	// Cobra's script quotes the word it inserts, as for a file name: the shell reads lab,elsewhere.
	wantCandidates(t, "the rest of a list of contexts", complete("--kubeconfig", c.kubeconfig, "summary", "--contexts", "lab,"), `lab\,elsewhere`)
	wantCandidates(t, "nodes through --context", complete("--kubeconfig", c.kubeconfig, "--context", "lab", "order-check", prefix), c.nodes...)
	wantCandidates(t, "nodes, flags after the command", complete("optout", "--context=lab", "--kubeconfig", c.kubeconfig, prefix), c.nodes...)
	wantCandidates(t, "nodes of an unreachable current context", complete("--kubeconfig", c.kubeconfig, "order-check", prefix))
	wantCandidates(t, "namespaces", complete("--kubeconfig", c.kubeconfig, "--context", "lab", "-n", "t-"+c.env.ID), c.env.Namespace)
}

func TestFishCompletion(t *testing.T) {
	t.Parallel()
	c := newCompleting(t)
	complete := func(line string) []string {
		r := gpuopstest.Run(t, c.environ(t), "fish", "-c", "gpuops completion fish | source; complete -C $argv[1]", line)
		if r.Code != 0 {
			t.Fatalf("fish: exit %d\n%s", r.Code, r.Stderr)
		}
		var names []string
		for _, l := range lines(r.Stdout) {
			name, _, _ := strings.Cut(l, "\t") // fish prints "candidate<TAB>description"
			names = append(names, name)
		}
		return names
	}
	wantCandidates(t, "operands", complete("gpuops optin "+c.nodes[1]+" "), operandNames()...)
	wantCandidates(t, "nodes", complete(fmt.Sprintf("gpuops --kubeconfig %s --context lab optout t-%s-", c.kubeconfig, c.env.ID)), c.nodes...)
}

// zsh completes in an interactive zsh under tmux, as on a terminal: the
// line is typed, then TAB, and the listing read from the screen.
func TestZshCompletion(t *testing.T) {
	t.Parallel()
	c := newCompleting(t)
	zdot := t.TempDir()
	gpuopstest.WriteFile(t, filepath.Join(zdot, ".zshrc"), "PS1='ready%% '\nautoload -U compinit && compinit -u\nsource <(gpuops completion zsh)\n")
	socket := "gpuops-test-" + c.env.ID
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-x", "200", "-y", "50", "env", "PATH="+c.path, "HOME="+zdot, "ZDOTDIR="+zdot, "KUBECONFIG=", "zsh", "-i")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	screenHas := func(what string, want ...string) {
		t.Helper()
		// tmux tells of no change to a pane: reading it again is the only way.
		var screen string
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			screen = tmux("capture-pane", "-p")
			return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(screen, w) }), nil
		})
		if err != nil {
			t.Fatalf("%s: after 30s the screen does not show %q:\n%s", what, want, screen)
		}
	}
	screenHas("zsh prompt", "ready%")
	tmux("send-keys", fmt.Sprintf("gpuops --kubeconfig %s --context lab optout t-%s-", c.kubeconfig, c.env.ID), "Tab")
	screenHas("nodes", c.nodes...)
	tmux("send-keys", "C-u", "gpuops optout x ", "Tab")
	screenHas("operands", "driver", "container-toolkit", "-- DaemonSet nvidia-dcgm-exporter")
}
