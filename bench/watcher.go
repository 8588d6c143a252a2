package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/operand"
)

// The watcher's part of the bench: gpuops serve kept running on the fleet,
// against the way to keep a verdict fresh without it, `gpuops audit` run
// back to back, both measured in the same run. Each gets a quiet window
// (no change in the cluster) for its CPU and the API server's, and rounds
// of one label change each way for the time until its verdict shows it.

// idleWindow is how long CPU is measured while nothing changes.
const idleWindow = 30 * time.Second

type watcherBench struct {
	client    kubernetes.Interface
	env       []string
	gpuops    string
	apiserver int // pid
	node      string
	operand   operand.Operand
	rounds    int
}

// watcherFigures is one contender's figures.
type watcherFigures struct {
	cpu, apiserverCPU float64 // cores, over the idle window
	latencies         []time.Duration
	rss, peakRSS      int64 // bytes; serve only
	ready             time.Duration
}

// benchWatcher measures and returns its section of the results file.
func benchWatcher(ctx context.Context, root, cluster string, client kubernetes.Interface, env []string, gpuops string, fleet []fleetNode, rounds int) (string, error) {
	pid, err := readPID(pidFile(root, cluster, "kube-apiserver"))
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(fleet, func(f fleetNode) bool { return f.role == tainted })
	// A tainted node asks for every operand and runs none: flipping one of
	// its deploy labels adds or removes a MISSING at once, whatever the
	// DaemonSet controller does.
	b := &watcherBench{client: client, env: env, gpuops: gpuops, apiserver: pid, node: fleet[i].name, operand: operand.Lab.DCGMExporter(), rounds: rounds}
	load := loadAverage()
	logf("watcher: the cluster alone for %s", idleWindow)
	quiet, err := b.apiserverIdle(ctx)
	if err != nil {
		return "", err
	}
	logf("watcher: gpuops serve")
	serve, err := b.serve(ctx)
	if err != nil {
		return "", err
	}
	logf("watcher: `gpuops audit` back to back")
	poll, err := b.poll(ctx)
	if err != nil {
		return "", err
	}
	return b.markdown(len(fleet), quiet, serve, poll, [2]string{load, loadAverage()}), nil
}

// serve runs gpuops serve, waits for its first verdict, then measures.
func (b *watcherBench) serve(ctx context.Context) (watcherFigures, error) {
	var f watcherFigures
	p, err := start(ctx, b.env, b.gpuops, "serve", "--listen", "127.0.0.1:0", "--all-rules")
	if err != nil {
		return f, err
	}
	defer p.stop()
	lines := bufio.NewScanner(p.stderr)
	var url string
	for lines.Scan() {
		if m := servingLine.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
		if strings.HasPrefix(lines.Text(), "ready: ") {
			f.ready = time.Since(p.began)
			break
		}
	}
	if url == "" || f.ready == 0 {
		return f, fmt.Errorf("gpuops serve did not get ready: %v", lines.Err())
	}
	go io.Copy(io.Discard, p.stderr) //nolint:errcheck // keep the pipe flowing
	pid := p.cmd.Process.Pid
	if err := sleep(ctx, 10*time.Second); err != nil { // let the start-up garbage go
		return f, err
	}
	before, err := cpuTime(pid)
	if err != nil {
		return f, err
	}
	f.apiserverCPU, err = b.apiserverIdle(ctx)
	if err != nil {
		return f, err
	}
	after, err := cpuTime(pid)
	if err != nil {
		return f, err
	}
	f.cpu = (after - before).Seconds() / idleWindow.Seconds()
	if f.rss, f.peakRSS, err = rss(pid); err != nil {
		return f, err
	}
	series := fmt.Sprintf("gpuops_operand_missing{node=%q,operand=%q} 1\n", b.node, b.operand.Name)
	f.latencies, err = b.latencies(ctx, func(missing bool) (time.Time, error) {
		// Scraping is the only way to learn what an exporter says: every
		// 5 ms, so the latency measured is the exporter's, not the poll's.
		var seen time.Time
		err := wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			body, err := get(ctx, url+"/metrics")
			if err != nil || strings.Contains(body, series) != missing {
				return false, err
			}
			seen = time.Now()
			return true, nil
		})
		return seen, err
	})
	return f, err
}

// servingLine is serve's line on stderr saying where it serves.
var servingLine = regexp.MustCompile(`^serving (http://\S+)/metrics$`)

// started is a program the bench runs: its stderr, when it started, and
// stop, which ends it (SIGTERM) and waits for it.
type started struct {
	cmd    *exec.Cmd
	stderr io.Reader
	began  time.Time
	stop   func()
}

func start(ctx context.Context, env []string, name string, args ...string) (*started, error) {
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	// Ended before it is waited for: the other way round, Wait would wait
	// for a process nothing ends.
	return &started{cmd: cmd, stderr: stderr, began: began, stop: func() { cancel(); cmd.Wait() }}, nil //nolint:errcheck // ended by cancel
}

// poll runs gpuops audit back to back and measures the loop.
func (b *watcherBench) poll(ctx context.Context) (watcherFigures, error) {
	var f watcherFigures
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type run struct {
		end time.Time
		out string
	}
	var mu sync.Mutex
	var runs []run
	var cpu time.Duration
	changed := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			cmd := exec.CommandContext(ctx, b.gpuops, "audit")
			cmd.Env = b.env
			out, err := cmd.Output()
			if ctx.Err() != nil {
				break
			}
			if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 {
				done <- fmt.Errorf("gpuops audit: exit %d: %v", code, err)
				return
			}
			u := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			mu.Lock()
			runs = append(runs, run{time.Now(), string(out)})
			cpu += time.Duration(u.Utime.Nano() + u.Stime.Nano())
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		done <- nil
	}()
	snapshot := func() (int, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		return len(runs), cpu
	}
	if err := sleep(ctx, 5*time.Second); err != nil {
		return f, err
	}
	_, before := snapshot()
	var err error
	f.apiserverCPU, err = b.apiserverIdle(ctx)
	if err != nil {
		return f, err
	}
	_, after := snapshot()
	f.cpu = (after - before).Seconds() / idleWindow.Seconds()
	line := fmt.Sprintf("%s MISSING %s\n", b.node, b.operand.Name)
	f.latencies, err = b.latencies(ctx, func(missing bool) (time.Time, error) {
		from, _ := snapshot()
		for {
			select {
			case <-changed:
			case err := <-done:
				return time.Time{}, fmt.Errorf("the audit loop ended: %v", err)
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			}
			mu.Lock()
			// Only an audit that started after the change may show it:
			// skip the one that was running then.
			for i := from + 1; i < len(runs); i++ {
				if strings.Contains(runs[i].out, line) == missing {
					end := runs[i].end
					mu.Unlock()
					return end, nil
				}
			}
			mu.Unlock()
		}
	})
	return f, err
}

// latencies flips the node's deploy label of the operand rounds times each
// way and times each flip until seen(missing) says the verdict shows it.
func (b *watcherBench) latencies(ctx context.Context, seen func(missing bool) (time.Time, error)) ([]time.Duration, error) {
	var out []time.Duration
	for range b.rounds {
		for _, value := range []string{"false", "true"} {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, b.operand.LabelKey(), value)
			if _, err := b.client.CoreV1().Nodes().Patch(ctx, b.node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return nil, err
			}
			changed := time.Now()
			at, err := seen(value == "true")
			if err != nil {
				return nil, err
			}
			out = append(out, at.Sub(changed))
		}
	}
	return out, nil
}

// apiserverIdle is the API server's CPU, in cores, over idleWindow.
func (b *watcherBench) apiserverIdle(ctx context.Context) (float64, error) {
	return cpuDuring(b.apiserver, func() error { return sleep(ctx, idleWindow) })
}

// cpuDuring runs do and returns the process' CPU meanwhile, in cores.
func cpuDuring(pid int, do func() error) (float64, error) {
	before, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	began := time.Now()
	if err := do(); err != nil {
		return 0, err
	}
	after, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	return (after - before).Seconds() / time.Since(began).Seconds(), nil
}

func (b *watcherBench) markdown(nodes int, quiet float64, serve, poll watcherFigures, load [2]string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "\n### Continuous mode: `gpuops serve` against `gpuops audit` back to back (%d nodes)\n\n", nodes)
	fmt.Fprintf(&s, "CPU in cores over %s with no change in the cluster (the API server alone: %.3f cores meanwhile); "+
		"latency from a label change on %s (its %s deploy label, %d times each way) until the verdict shows it: "+
		"serve's /metrics polled every 5 ms, the audit that started after the change. Load average (1 min) %s before, %s after.\n\n",
		idleWindow, quiet, b.node, b.operand.Name, b.rounds, load[0], load[1])
	s.WriteString("| | `gpuops serve` | `gpuops audit` back to back |\n|---|---:|---:|\n")
	fmt.Fprintf(&s, "| its CPU, no change in the cluster | %.3f cores | %.3f cores |\n", serve.cpu, poll.cpu)
	fmt.Fprintf(&s, "| kube-apiserver CPU meanwhile | %.3f cores | %.3f cores |\n", serve.apiserverCPU, poll.apiserverCPU)
	fmt.Fprintf(&s, "| label change → verdict, median | %s | %s |\n", ms(median(serve.latencies)), ms(median(poll.latencies)))
	fmt.Fprintf(&s, "| label change → verdict, max | %s | %s |\n", ms(slices.Max(serve.latencies)), ms(slices.Max(poll.latencies)))
	fmt.Fprintf(&s, "| steady RSS (peak) | %d MB (%d MB) | see the audit row above |\n", serve.rss>>20, serve.peakRSS>>20)
	fmt.Fprintf(&s, "| start to first verdict | %.2f s | — |\n", serve.ready.Seconds())
	return s.String()
}

func median[T cmp.Ordered](s []T) T {
	var zero T
	if len(s) == 0 {
		return zero
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// pidFile is where kwokctl keeps the pid of a component of a cluster of
// the repository (hack/cluster.sh's KWOK_WORKDIR, .lab/clusters).
func pidFile(root, cluster, component string) string {
	return filepath.Join(root, ".lab", "clusters", "clusters", cluster, "pids", component+".pid")
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// cpuTime is the user and system CPU a process has used (/proc/PID/stat).
func cpuTime(pid int) (time.Duration, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	f, err := statFields(path)
	if err != nil {
		return 0, err
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %q", path, f)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: %q", path, f)
	}
	const tick = time.Second / 100 // USER_HZ
	return time.Duration(utime+stime) * tick, nil
}

// statFields reads a process's or thread's stat file (/proc/PID/stat,
// /proc/PID/task/TID/stat): the fields after the command, which is in
// parentheses and may hold spaces, the state first.
func statFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])), nil
}

// rss is a process's resident memory now and at its peak (/proc/PID/status).
func rss(pid int) (now, peak int64, err error) {
	now, peak, _, err = memory(pid)
	return now, peak, err
}

// memory is a process's resident memory now and at its peak, and its
// anonymous part now: the heap and stacks, without the pages of its binary
// (/proc/PID/status).
func memory(pid int) (now, peak, anon int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(l, "VmRSS: %d kB", &kb); err == nil {
			now = kb << 10
		}
		if _, err := fmt.Sscanf(l, "VmHWM: %d kB", &kb); err == nil {
			peak = kb << 10
		}
		if _, err := fmt.Sscanf(l, "RssAnon: %d kB", &kb); err == nil {
			anon = kb << 10
		}
	}
	return now, peak, anon, nil
}
