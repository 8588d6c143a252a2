package testcluster

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentStarts starts three clusters at once beside the package's
// running one, as go test's parallel packages and a lab cluster do; all must
// come up, each on its own ports. The first start of one of them is told to
// give etcd a port something already listens on: it must notice at once that
// etcd exited and start again on fresh ports.
func TestConcurrentStarts(t *testing.T) {
	running := get(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	squat, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	taken := squat.Addr().(*net.TCPAddr).Port

	const n = 3
	clusters := make([]*cluster, n)
	errs := make([]error, n)
	logs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var env []string
			if i == 0 {
				env = []string{fmt.Sprintf("LAB_PORTS=%d", taken)}
			}
			clusters[i], errs[i] = launch(root, clusterName(), env)
			if clusters[i] != nil {
				b, _ := os.ReadFile(clusters[i].log)
				logs[i] = string(b)
			}
		})
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			t.Cleanup(func() {
				if err := c.delete(); err != nil {
					t.Error(err)
				}
			})
		}
	}

	servers := map[string]bool{running.restConfig.Host: true}
	for i, err := range errs {
		if err != nil {
			t.Errorf("start %d: %v", i, err)
			continue
		}
		host := clusters[i].restConfig.Host
		if servers[host] {
			t.Errorf("start %d: API server %s is another cluster's", i, host)
		}
		servers[host] = true
	}
	if !strings.Contains(logs[0], "etcd exited") || !strings.Contains(logs[0], "retrying with fresh ports") {
		t.Errorf("the start given the taken port %d did not retry after etcd exited; its log:\n%s", taken, logs[0])
	}
}
