package testcluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// EnvKubeconfig names a kubeconfig of a running cluster to test against.
	EnvKubeconfig = "GPUOPS_TEST_KUBECONFIG"
	// EnvClusterPrefix is the name prefix of the clusters this package starts
	// (default "gpuops-t"); `go tool task test` sets one per run so it can
	// sweep what a crashed test binary left behind.
	EnvClusterPrefix = "GPUOPS_TEST_CLUSTER_PREFIX"

	modulePath = "github.com/gpuops/gpuops"
)

// cluster is the control plane the tests of this binary share.
type cluster struct {
	kubeconfig string
	restConfig *rest.Config
	client     kubernetes.Interface

	// Set when this binary started the cluster.
	name     string
	root     string
	log      string // output of hack/cluster.sh up and down
	watchdog *exec.Cmd
	release  *os.File // closing it makes the watchdog delete the cluster
}

var (
	mainCalled bool
	once       sync.Once
	current    *cluster // the cluster the tests use
	startErr   error
	owned      *cluster // the cluster this binary started, deleted by stop

	secondOnce sync.Once
	second     *cluster // NewSecond's, deleted by stop
	secondErr  error
)

// Main runs the tests of a package that uses this harness; call it from
// TestMain. It deletes the cluster the tests started, if any, and exits.
func Main(m *testing.M) {
	mainCalled = true
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// get returns the shared cluster, starting it on first use.
func get(t testing.TB) *cluster {
	t.Helper()
	if !mainCalled {
		t.Fatal("testcluster: call testcluster.Main(m) from the package's TestMain")
	}
	if testing.Short() {
		t.Skip("testcluster: integration test skipped by -short")
	}
	once.Do(func() { current, startErr = start() })
	if startErr != nil {
		t.Fatalf("testcluster: no cluster: %v", startErr)
	}
	return current
}

func start() (*cluster, error) {
	if kc := os.Getenv(EnvKubeconfig); kc != "" {
		c, err := connect(kc)
		if err == nil {
			return c, nil
		}
		fmt.Fprintf(os.Stderr, "testcluster: %s=%s is not usable (%v); starting a cluster\n", EnvKubeconfig, kc, err)
	}
	return startOwn()
}

// connect builds clients from a kubeconfig and checks that the apiserver is ready.
func connect(kubeconfig string) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver not ready: %w", err)
	}
	if string(body) != "ok" {
		return nil, fmt.Errorf("apiserver not ready: %q", body)
	}
	return &cluster{kubeconfig: kubeconfig, restConfig: cfg, client: client}, nil
}

// startOwn starts the dedicated cluster of this test binary; stop deletes it.
func startOwn() (*cluster, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	c, err := launch(root, clusterName(), nil)
	owned = c // set even if the start failed: stop deletes what is left
	return c, err
}

// clusterName is a new cluster name with this run's prefix.
func clusterName() string {
	prefix := os.Getenv(EnvClusterPrefix)
	if prefix == "" {
		prefix = "gpuops-t"
	}
	return prefix + "-" + randomID(8)
}

// launch starts cluster name with hack/cluster.sh (env added to its
// environment) and a watchdog that deletes it when this process ends, however
// it ends. Unless it returns a nil cluster, the caller must delete it, also
// after an error. Starts may run concurrently: hack/cluster.sh picks free
// ports of its own and retries a start that lost a port race.
func launch(root, name string, env []string) (*cluster, error) {
	script := filepath.Join(root, "hack", "cluster.sh")
	logDir := filepath.Join(root, ".lab", "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	c := &cluster{name: name, root: root, log: logPath}
	// The watchdog waits for EOF on its stdin, which comes when this
	// process closes c.release or dies; then it deletes the cluster. It runs
	// in its own process group so that ^C on the terminal does not kill it
	// before it has cleaned up.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.watchdog = exec.Command("bash", "-c", `trap "" INT TERM HUP; while read -r _; do :; done; exec "$0" down "$1"`, script, name)
	c.watchdog.Stdin, c.watchdog.Stdout, c.watchdog.Stderr = r, logFile, logFile
	c.watchdog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.watchdog.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	r.Close()
	c.release = w

	begin := time.Now()
	up := exec.Command(script, "up", name)
	up.Env = append(append(os.Environ(), "LAB_NODES="), env...)
	up.Stdout, up.Stderr = logFile, logFile
	if err := up.Run(); err != nil {
		return c, fmt.Errorf("%s up %s: %w\n%s", script, name, err, tail(logPath, 30, nil))
	}
	kc := filepath.Join(root, ".lab", "kubeconfig-"+name)
	own, err := connect(kc)
	if err != nil {
		return c, fmt.Errorf("cluster %s started but %w\n%s", name, err, tail(logPath, 30, nil))
	}
	c.kubeconfig, c.restConfig, c.client = own.kubeconfig, own.restConfig, own.client
	fmt.Fprintf(os.Stderr, "testcluster: started cluster %s in %.1fs (log %s)\n", name, time.Since(begin).Seconds(), logPath)
	return c, nil
}

// stop deletes the cluster this binary started, if any.
func stop() error {
	var errs []error
	for _, c := range []*cluster{owned, second} {
		if c != nil {
			errs = append(errs, c.delete())
		}
	}
	return errors.Join(errs...)
}

// delete deletes a cluster that launch started, through its watchdog.
func (c *cluster) delete() error {
	c.release.Close()
	done := make(chan error, 1)
	go func() { done <- c.watchdog.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("deleting cluster %s: %w\n%s", c.name, err, tail(c.log, 30, nil))
		}
		os.Remove(c.log)
		return nil
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("deleting cluster %s: still running after 2m", c.name)
	}
}

// repoRoot walks up from the working directory to the root module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePathOf(data) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod of " + modulePath + ") not found above the working directory")
		}
		dir = parent
	}
}

func modulePathOf(gomod []byte) string {
	s := bufio.NewScanner(bytes.NewReader(gomod))
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// tail returns the last n lines of a file, of those pick picks when it is
// not nil; "" when it cannot be read.
func tail(path string, n int, pick func(line string) bool) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		if pick == nil || pick(l) {
			lines = append(lines, strings.TrimRight(l, "\n"))
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// kwokctlFile is a file kwokctl keeps of a cluster hack/cluster.sh started
// (dir "pids" or "logs"), under the repo's .lab folder.
func kwokctlFile(lab, name, dir, file string) string {
	return filepath.Join(lab, "clusters", "clusters", name, dir, file)
}

// componentLog is a component's log of a cluster this binary started; ""
// for one it did not start.
func (c *cluster) componentLog(component string) string {
	if c.name == "" {
		return ""
	}
	return kwokctlFile(filepath.Join(c.root, ".lab"), c.name, "logs", component+".log")
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// randomID returns n random characters valid in DNS-1123 labels.
func randomID(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	if b[0] >= '0' && b[0] <= '9' {
		b[0] = 'a' + (b[0] - '0')
	}
	return string(b)
}
