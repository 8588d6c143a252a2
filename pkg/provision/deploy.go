package provision

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/settle"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// Change is an operand DaemonSet's desiredNumberScheduled, read by JSONPath
// when it had settled before a deploy label changed and again when it had
// settled after.
type Change struct {
	DaemonSet     string
	Before, After string
}

// OptOut sets the operand's deploy label on the node to "false" (the lab's step 5)
// and writes out/optout.txt.
func OptOut(ctx context.Context, c kubernetes.Interface, ns string, ws workspace.Workspace, node, operandName string, opts Options) (*Change, error) {
	ch, err := SetDeploy(ctx, c, ns, node, operandName, false, opts)
	if err != nil {
		return nil, err
	}
	if err := ws.WriteOut(OptOutFile, OptOutText(*ch)); err != nil {
		return nil, err
	}
	return ch, nil
}

// OptIn sets the operand's deploy label on the node to "true" (the lab's step 7).
func OptIn(ctx context.Context, c kubernetes.Interface, ns string, node, operandName string, opts Options) (*Change, error) {
	return SetDeploy(ctx, c, ns, node, operandName, true, opts)
}

// SetDeploy sets the operand's deploy label on the node to on, with server-side
// apply as gpuops, and waits for its DaemonSet to settle before and after.
// The apply carries every other label gpuops owns on the node unchanged, as
// server-side apply removes what an applier stops sending.
func SetDeploy(ctx context.Context, c kubernetes.Interface, ns, nodeName, operandName string, on bool, opts Options) (*Change, error) {
	o, err := operand.Lookup(operand.Lab, operandName)
	if err != nil {
		return nil, err
	}
	node, err := c.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if notFound(err) {
		return nil, &NodeNotFoundError{Node: nodeName}
	}
	if err != nil {
		return nil, fmt.Errorf("read node %s: %w", nodeName, err)
	}
	if _, err := c.AppsV1().DaemonSets(ns).Get(ctx, o.DaemonSet, metav1.GetOptions{}); err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("DaemonSet %s/%s not found (gpuops up creates it)", ns, o.DaemonSet)
		}
		return nil, fmt.Errorf("read DaemonSet %s/%s: %w", ns, o.DaemonSet, err)
	}
	labels := map[string]string{o.LabelKey(): strconv.FormatBool(on)}
	if !opts.Force {
		if err := checkLabelOwners(node, labels); err != nil {
			return nil, err
		}
	}
	mine, err := corev1ac.ExtractNode(node, FieldManager)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", nodeName, err)
	}
	for k, v := range mine.Labels {
		if _, set := labels[k]; !set {
			labels[k] = v
		}
	}

	ch := &Change{DaemonSet: o.DaemonSet}
	if ch.Before, err = settledDesired(ctx, c, ns, o.DaemonSet, opts); err != nil {
		return nil, err
	}
	after, err := c.CoreV1().Nodes().Apply(ctx, corev1ac.Node(nodeName).WithLabels(labels), applyOptions(opts.Force))
	if err != nil {
		return nil, fmt.Errorf("label node %s: %w", nodeName, err)
	}
	opts.logf("node/%s %s", nodeName, change(node.ResourceVersion, after.ResourceVersion, "labelled"))
	if ch.After, err = settledDesired(ctx, c, ns, o.DaemonSet, opts); err != nil {
		return nil, err
	}
	return ch, nil
}

// settledDesired waits for the DaemonSet to settle, then reads its desiredNumberScheduled.
func settledDesired(ctx context.Context, c kubernetes.Interface, ns, name string, opts Options) (string, error) {
	if _, err := settle.Wait(ctx, c, ns, []string{name}, opts.settle()); err != nil {
		return "", err
	}
	ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read DaemonSet %s/%s: %w", ns, name, err)
	}
	return strconv.Itoa(int(ds.Status.DesiredNumberScheduled)), nil
}
