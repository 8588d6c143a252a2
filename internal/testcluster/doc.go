// Package testcluster runs integration tests against a real Kubernetes
// control plane: the offline KWOK lab cluster of hack/cluster.sh (real
// kube-apiserver, DaemonSet controller and scheduler; KWOK fake nodes whose
// pods are faked to Running).
//
// Use it from a package's TestMain:
//
//	func TestMain(m *testing.M) { testcluster.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		env := testcluster.New(t)                   // fresh namespace env.Namespace
//		node := env.AddNode(t, env.NodeName("a"), map[string]string{"k": "v"})
//		env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool { ... })
//	}
//
// Where the cluster comes from: if GPUOPS_TEST_KUBECONFIG names a kubeconfig
// of a reachable cluster, that cluster is used (and left running). Otherwise
// the first New starts a dedicated cluster for this test binary
// (hack/cluster.sh up, building the tools first when needed) and Main deletes
// it when the tests end. go test runs packages in parallel, so clusters start
// side by side: hack/cluster.sh gives each random free ports and starts again
// on fresh ones when a component loses a port race. A watchdog process deletes it too if the test binary
// dies (panic, timeout, signal). Nothing is ever skipped silently: if no
// cluster can be had, every test that calls New fails with the reason. Only
// an explicit -short skips the tests that call New.
//
// Isolation: each Env has its own namespace and ID, and AddNode's nodes
// should be named with Env.NodeName, so tests never see each other's
// objects by name. But nodes and DaemonSet node selectors are cluster-wide: a
// DaemonSet in one test's namespace lands on every node of the cluster that
// matches its selector, including other tests' nodes. So:
//
//   - tests that run in parallel must select nodes by keys or values unique to
//     the test (for example a label key or value containing Env.ID);
//   - tests that use fixed, shared label keys (such as the operator's
//     nvidia.com/gpu.deploy.* labels) or that count anything cluster-wide
//     (all nodes, desiredNumberScheduled) must not call t.Parallel and must
//     not run in parallel with other such tests of the same package.
//
// Packages are isolated from each other when each test binary gets its own
// cluster (the default, and what `go tool task test` does); a shared
// GPUOPS_TEST_KUBECONFIG cluster gives up that isolation for speed.
package testcluster
