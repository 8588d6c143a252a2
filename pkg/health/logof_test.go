package health_test

import (
	"testing"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestLogOf(t *testing.T) {
	for _, c := range []struct {
		name         string
		h            snapshot.PodHealth
		previous, ok bool
	}{
		{"no container in a bad state", snapshot.PodHealth{Ready: true}, false, false},
		{"crash loop: the instance before", snapshot.PodHealth{Container: "c", State: "CrashLoopBackOff", Restarts: 5, LastState: "Error"}, true, true},
		{"terminated: the current instance", snapshot.PodHealth{Container: "c", State: "Error"}, false, true},
		{"never ran: image not pulled", snapshot.PodHealth{Container: "c", State: "ImagePullBackOff"}, false, false},
		{"never ran: config error", snapshot.PodHealth{Container: "c", State: "CreateContainerConfigError"}, false, false},
		{"waiting again after it ran", snapshot.PodHealth{Container: "c", State: "RunContainerError", Restarts: 1}, true, true},
		{"running after a failure, not ready", snapshot.PodHealth{Container: "c", State: "Running", Restarts: 2, LastState: "Error"}, true, true},
	} {
		if previous, ok := health.LogOf(c.h); previous != c.previous || ok != c.ok {
			t.Errorf("%s: LogOf = %v, %v; want %v, %v", c.name, previous, ok, c.previous, c.ok)
		}
	}
}
