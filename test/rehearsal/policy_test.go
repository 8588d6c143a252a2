package rehearsal_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// The walk again, with nodes a, b and c all schedulable, under a
// ClusterPolicy that turns autoUpgrade on with maxParallelUpgrades 1 and
// maxUnavailable 25% (1 of 3 nodes), the controller's budget as pkg/upgrade
// counts it: the first upgrade-required node in order gets the slot and is
// in progress before it moves; the others wait while a node is past
// upgrade-required and not done (a failed one keeps its slot); the moment
// one is done, the next upgrade-required node has the slot. The walk goes
// one node at a time in the same order, so it never contradicts the budget.
var policyTable = walk("", `OOO POO PWO PWW
	PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW DPW
	DPW DPW DPW DPW DPW DPW DPW DPW DPW DPW DPW DPW DDP
	DDP DDP DDP DDP DDP DDP DDP DDP DDP DDP DDF DDF DDF DDF DDP DDP DDD
	DDD DDD DDD`)

var (
	crdGVR           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	clusterPolicyGVR = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}
)

// The ClusterPolicy kind as the API serves it, its schema left open: gpuops
// reads spec.driver.upgradePolicy of it.
const clusterPolicyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterpolicies.nvidia.com}
spec:
  group: nvidia.com
  scope: Cluster
  names: {kind: ClusterPolicy, listKind: ClusterPolicyList, plural: clusterpolicies, singular: clusterpolicy}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestDriverUpgradeRehearsalWithPolicy: with the policy, the verdicts follow
// the controller's budget at every step.
func TestDriverUpgradeRehearsalWithPolicy(t *testing.T) {
	r := newRig(t, false)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(r.g.env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(clusterPolicyCRD), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Gone before the next test, which judges a cluster without a policy.
	t.Cleanup(func() {
		ctx := context.Background()
		_ = dyn.Resource(crdGVR).Delete(ctx, crd.GetName(), metav1.DeleteOptions{})
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("CRD %s not gone: %v", crd.GetName(), err)
		}
	})
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "cluster-policy-" + r.g.env.ID},
		"spec": map[string]any{"driver": map[string]any{"upgradePolicy": map[string]any{
			"autoUpgrade": true, "maxParallelUpgrades": int64(1), "maxUnavailable": "25%"}}},
	}}
	// The CRD is served a moment after it is created.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(clusterPolicyGVR).Create(ctx, policy, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("create the ClusterPolicy: %v", err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(clusterPolicyGVR).Delete(context.Background(), policy.GetName(), metav1.DeleteOptions{})
	})
	r.rehearse(policyTable)
}
