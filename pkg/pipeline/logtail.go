// The tail of a failing container's log, read as kubectl logs --tail does
// (RBAC: get on pods/log), bounded in lines, bytes and reads at once, so
// that a fleet with many failing containers costs the API server and the
// kubelets little. logs.go says which containers are failing.

package pipeline

import (
	"context"
	"errors"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
)

// Bounds of one read: the log's last LogTailLines lines, at most
// LogLimitBytes of them. A component writes its fatal line last, and a
// driver build's compiler output before it runs to hundreds of lines.
const (
	LogTailLines  = 60
	LogLimitBytes = 64 << 10
)

// logsAtOnce is how many logs are read at once: each read is a stream
// through the API server to a kubelet.
const logsAtOnce = 4

// LogTarget is one container whose log to read.
type LogTarget struct {
	Namespace, Pod, Container string
	// Previous reads the log of the instance before, as kubectl logs
	// --previous: of a container waiting to start again.
	Previous bool
}

// Log is a container's log tail, or why it could not be read.
type Log struct {
	LogTarget
	Text string
	Err  error
}

// Forbidden reports whether the log could not be read for want of the
// right (get on pods/log).
func (l Log) Forbidden() bool { return apierrors.IsForbidden(l.Err) }

// readLogs reads each container's log tail, at most logsAtOnce at once, in
// the order given. Once a read is forbidden the others are not tried: the
// right is the namespace's, and every other read would be refused alike.
func readLogs(ctx context.Context, c kubernetes.Interface, cs []LogTarget) []Log {
	out := make([]Log, len(cs))
	var forbidden error
	var mu sync.Mutex
	slots := make(chan struct{}, logsAtOnce)
	var wg sync.WaitGroup
	for i, k := range cs {
		out[i].LogTarget = k
		slots <- struct{}{}
		mu.Lock()
		refused := forbidden
		mu.Unlock()
		if refused != nil {
			<-slots
			out[i].Err = refused
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			out[i].Text, out[i].Err = tail(ctx, c, k)
			if apierrors.IsForbidden(out[i].Err) {
				mu.Lock()
				forbidden = out[i].Err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// tail reads one container's log tail.
func tail(ctx context.Context, c kubernetes.Interface, k LogTarget) (string, error) {
	lines, limit := int64(LogTailLines), int64(LogLimitBytes)
	stream, err := c.CoreV1().Pods(k.Namespace).GetLogs(k.Pod, &corev1.PodLogOptions{
		Container: k.Container, Previous: k.Previous, TailLines: &lines, LimitBytes: &limit,
	}).Stream(ctx)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(stream, LogLimitBytes))
	return string(b), errors.Join(err, stream.Close())
}
