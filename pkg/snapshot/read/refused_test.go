package read_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// What an input does not hold is said so in the notes, not as a refusal
// of the user's: the operator's objects too, read as JSON (their error is
// the server's Status, not Raw's, which keeps only the code).
func TestNotHeldIsSaidSo(t *testing.T) {
	in := "apiVersion: v1\nkind: List\nitems:\n" +
		"- {apiVersion: v1, kind: Node, metadata: {name: a}}\n" +
		"- {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}}\n" +
		"- {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, namespace: ns}}\n" +
		"- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: ns}}\n"
	b, err := bundle.Load("-", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.InProcess(bundle.NewServer(b))
	if err != nil {
		t.Fatal(err)
	}
	s, err := read.Snapshot(context.Background(), c, "ns", read.Options{DaemonSets: true, Operator: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ClusterPolicy not read (operands it switches off read as missing): the input holds no clusterpolicies.nvidia.com"; len(s.Notes) != 1 || s.Notes[0] != want {
		t.Errorf("notes %q, want %q", s.Notes, want)
	}
}
