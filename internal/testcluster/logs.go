package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ContainerLog is what KWOK serves as a container's log: Current for
// kubectl logs, Previous for kubectl logs --previous ("" serves none).
type ContainerLog struct {
	Pod               *corev1.Pod
	Container         string
	Current, Previous string
}

// ServeLogs has KWOK serve each container's log through the API server's
// pods/log, as a kubelet does (its Logs resource, hack/kwokctl.yaml), and
// waits until it serves the first.
func (e *Env) ServeLogs(t testing.TB, logs []ContainerLog) {
	t.Helper()
	if len(logs) == 0 {
		return
	}
	dir := t.TempDir()
	// KWOK finds a pod's logs in the Logs object of the pod's name: one per
	// pod, an entry per container.
	var manifest strings.Builder
	done := map[*corev1.Pod]bool{}
	for i, l := range logs {
		if done[l.Pod] {
			continue
		}
		done[l.Pod] = true
		fmt.Fprintf(&manifest, "---\napiVersion: kwok.x-k8s.io/v1alpha1\nkind: Logs\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  logs:\n",
			l.Pod.Name, l.Pod.Namespace)
		for j, c := range logs[i:] {
			if c.Pod != l.Pod {
				continue
			}
			fmt.Fprintf(&manifest, "  - containers: [%s]\n", c.Container)
			if c.Current != "" {
				fmt.Fprintf(&manifest, "    logsFile: %s\n", criFile(t, dir, fmt.Sprintf("%d.log", i+j), c.Current))
			}
			if c.Previous != "" {
				fmt.Fprintf(&manifest, "    previousLogsFile: %s\n", criFile(t, dir, fmt.Sprintf("%d.previous.log", i+j), c.Previous))
			}
		}
	}
	path := filepath.Join(dir, "logs.yaml")
	if err := os.WriteFile(path, []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Kubectl(t, "apply", "-f", path)
	// KWOK serves a log once its controller has seen the Logs object.
	first := logs[0]
	opts := &corev1.PodLogOptions{Container: first.Container, Previous: first.Current == ""}
	var served error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, e.timeout(), true, func(ctx context.Context) (bool, error) {
		_, served = e.Client.CoreV1().Pods(first.Pod.Namespace).GetLogs(first.Pod.Name, opts).DoRaw(ctx)
		return served == nil, nil
	})
	if err != nil {
		t.Fatalf("testcluster: KWOK serves no log of pod %s: %v", first.Pod.Name, served)
	}
}

// criFile writes a log file as the container runtime writes one (the CRI
// format KWOK reads: time, stream, tag, line), returning its path.
func criFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		b.WriteString("2026-12-07T04:00:00Z stdout F " + line + "\n")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
