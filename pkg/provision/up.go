package provision

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
	"github.com/gpuops/gpuops/pkg/settle"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// Provisioned is what up read back from the cluster once the lab had settled.
type Provisioned struct {
	Desired string   // the driver DaemonSet's desiredNumberScheduled
	Skipped []string // GPU nodes on which no driver pod runs, in natural order
}

// Up provisions the lab (the lab's steps 1–4 and the DaemonSet of step 5): it
// creates the namespace if missing, sets the lab's node labels, renders the
// operand DaemonSets into k8s/ and applies them, waits until they have
// settled, then writes out/roster.txt and out/driver.txt from the live API.
// Everything is checked before anything is changed; a second Up with nothing
// changed modifies no object.
func Up(ctx context.Context, c kubernetes.Interface, lab *labspec.Lab, assets Assets, ws workspace.Workspace, opts Options) (*Provisioned, error) {
	roster := operand.Lab
	manifests, err := render.Operands(assets.Kustomize, roster, lab.Namespace)
	if err != nil {
		return nil, err
	}
	p, err := planUp(ctx, c, lab, roster, manifests, opts.Force)
	if err != nil {
		return nil, err
	}
	if err := ws.InstallScripts(assets.Scripts); err != nil {
		return nil, err
	}
	for _, m := range manifests {
		if err := ws.WriteManifest(m.Operand.Manifest, m.YAML); err != nil {
			return nil, err
		}
	}
	if err := p.apply(ctx, c, opts); err != nil {
		return nil, err
	}
	names := make([]string, len(roster))
	for i, o := range roster {
		names[i] = o.DaemonSet
	}
	if _, err := settle.Wait(ctx, c, lab.Namespace, names, opts.settle()); err != nil {
		return nil, err
	}
	res, err := readDriver(ctx, c, lab.Namespace, roster)
	if err != nil {
		return nil, err
	}
	if err := ws.WriteOut(workspace.RosterFile, RosterText(roster)); err != nil {
		return nil, err
	}
	if err := ws.WriteOut(workspace.DriverFile, DriverText(res.Desired, res.Skipped)); err != nil {
		return nil, err
	}
	return res, nil
}

// upPlan is what Up will write, checked against the cluster.
type upPlan struct {
	namespace       string
	createNamespace bool
	nodes           []plannedNode
	daemonSets      []plannedDaemonSet
}

type plannedNode struct {
	name            string
	labels          map[string]string
	resourceVersion string
}

type plannedDaemonSet struct {
	render.Manifest
	resourceVersion string // "" when it does not exist yet
}

// planUp reads the cluster and refuses what Up must not do. It changes nothing.
func planUp(ctx context.Context, c kubernetes.Interface, lab *labspec.Lab, roster []operand.Operand, manifests []render.Manifest, force bool) (*upPlan, error) {
	p := &upPlan{namespace: lab.Namespace}
	ns, err := c.CoreV1().Namespaces().Get(ctx, lab.Namespace, metav1.GetOptions{})
	switch {
	case notFound(err):
		p.createNamespace = true
		if _, err := c.CoreV1().Namespaces().Apply(ctx, namespaceConfig(lab.Namespace), dryRun(applyOptions(false))); err != nil {
			return nil, fmt.Errorf("namespace %s cannot be created: %w", lab.Namespace, err)
		}
	case err != nil:
		return nil, fmt.Errorf("read namespace %s: %w", lab.Namespace, err)
	case ns.DeletionTimestamp != nil:
		return nil, fmt.Errorf("namespace %s is being deleted; wait until it is gone", lab.Namespace)
	}

	p.nodes = make([]plannedNode, len(lab.Nodes))
	names := make([]string, len(lab.Nodes))
	for i, n := range lab.Nodes {
		names[i] = n.Name
	}
	err = eachNamedNode(ctx, c, names, func(i int, node *corev1.Node) error {
		labels := lab.Nodes[i].NodeLabels(roster)
		if !force {
			if err := checkLabelOwners(node, labels); err != nil {
				return err
			}
		}
		p.nodes[i] = plannedNode{name: node.Name, labels: labels, resourceVersion: node.ResourceVersion}
		return nil
	})
	if err != nil {
		return nil, err
	}

	for _, m := range manifests {
		pd := plannedDaemonSet{Manifest: m}
		if !p.createNamespace {
			ds, err := c.AppsV1().DaemonSets(lab.Namespace).Get(ctx, m.Operand.DaemonSet, metav1.GetOptions{})
			switch {
			case notFound(err):
			case err != nil:
				return nil, fmt.Errorf("read DaemonSet %s/%s: %w", lab.Namespace, m.Operand.DaemonSet, err)
			default:
				pd.resourceVersion = ds.ResourceVersion
				if !force {
					if err := checkDaemonSetOwners(ctx, c, lab.Namespace, m); err != nil {
						return nil, err
					}
				}
			}
		}
		p.daemonSets = append(p.daemonSets, pd)
	}
	return p, nil
}

// checkLabelOwners refuses labels that another field manager owns.
func checkLabelOwners(node *corev1.Node, labels map[string]string) error {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	owners, err := foreignOwners(node.ManagedFields, FieldManager, labelPaths(keys))
	if err != nil {
		return fmt.Errorf("node %s: %w", node.Name, err)
	}
	if len(owners) > 0 {
		return &ForeignOwnerError{Object: "node/" + node.Name + " labels", Owners: owners}
	}
	return nil
}

// checkDaemonSetOwners applies the manifest as a dry run: the API server
// reports a conflict where another manager set a field to another value, and
// its ownership record shows where one set the same value.
func checkDaemonSetOwners(ctx context.Context, c kubernetes.Interface, ns string, m render.Manifest) error {
	object := "daemonset.apps/" + ns + "/" + m.Operand.DaemonSet
	ds, err := applyDaemonSet(ctx, c, ns, m, dryRun(applyOptions(false)))
	if apierrors.IsConflict(err) {
		return &ForeignOwnerError{Object: object, Detail: err.Error()}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", object, err)
	}
	mine, err := owned(ds.ManagedFields, FieldManager)
	if err != nil {
		return err
	}
	owners, err := foreignOwners(ds.ManagedFields, FieldManager, mine.Leaves())
	if err != nil {
		return err
	}
	if len(owners) > 0 {
		return &ForeignOwnerError{Object: object, Owners: owners}
	}
	return nil
}

func (p *upPlan) apply(ctx context.Context, c kubernetes.Interface, opts Options) error {
	if p.createNamespace {
		if _, err := c.CoreV1().Namespaces().Apply(ctx, namespaceConfig(p.namespace), applyOptions(false)); err != nil {
			return fmt.Errorf("create namespace %s: %w", p.namespace, err)
		}
		opts.changed(ObjectChange{Object: "namespace/" + p.namespace, Action: "created"})
	}
	done := make([]string, len(p.nodes)) // what happened to each node, told in the lab's order
	err := forEach(ctx, len(p.nodes), func(ctx context.Context, i int) error {
		n := p.nodes[i]
		after, err := c.CoreV1().Nodes().Apply(ctx, corev1ac.Node(n.name).WithLabels(n.labels), applyOptions(opts.Force))
		if err != nil {
			return fmt.Errorf("label node %s: %w", n.name, err)
		}
		done[i] = change(n.resourceVersion, after.ResourceVersion, "labelled")
		return nil
	})
	for i, d := range done {
		if d != "" {
			opts.changed(ObjectChange{Object: "node/" + p.nodes[i].name, Action: d})
		}
	}
	if err != nil {
		return err
	}
	for _, d := range p.daemonSets {
		after, err := applyDaemonSet(ctx, c, p.namespace, d.Manifest, applyOptions(opts.Force))
		if err != nil {
			return fmt.Errorf("apply DaemonSet %s/%s: %w", p.namespace, d.Operand.DaemonSet, err)
		}
		verb := change(d.resourceVersion, after.ResourceVersion, "configured")
		if d.resourceVersion == "" {
			verb = "created"
		}
		opts.changed(ObjectChange{Object: "daemonset.apps/" + d.Operand.DaemonSet, Action: verb})
	}
	return nil
}

// applyDaemonSet applies the manifest's bytes as they are, so k8s/ holds
// exactly what was applied.
func applyDaemonSet(ctx context.Context, c kubernetes.Interface, ns string, m render.Manifest, opts metav1.ApplyOptions) (*appsv1.DaemonSet, error) {
	return c.AppsV1().DaemonSets(ns).Patch(ctx, m.Operand.DaemonSet, types.ApplyYAMLPatchType, m.YAML, opts.ToPatchOptions())
}

func namespaceConfig(name string) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(name).WithLabels(map[string]string{operand.ManagedByLabel: FieldManager})
}

func applyOptions(force bool) metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: FieldManager, Force: force}
}

func dryRun(o metav1.ApplyOptions) metav1.ApplyOptions {
	o.DryRun = []string{metav1.DryRunAll}
	return o
}

func change(before, after, verb string) string {
	if before == after {
		return "unchanged"
	}
	return verb
}

// readDriver reads, once settled, the driver DaemonSet's desiredNumberScheduled
// (by JSONPath, as kubectl would) and which GPU nodes run no driver pod.
func readDriver(ctx context.Context, c kubernetes.Interface, ns string, roster []operand.Operand) (*Provisioned, error) {
	driver, err := operand.Lookup(roster, operand.Driver)
	if err != nil {
		return nil, err
	}
	ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, driver.DaemonSet, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read DaemonSet %s/%s: %w", ns, driver.DaemonSet, err)
	}
	desired := strconv.Itoa(int(ds.Status.DesiredNumberScheduled))
	s, err := read.Snapshot(ctx, c, ns, read.Options{NodeSelector: operand.GPUPresent + "=true"})
	if err != nil {
		return nil, err
	}
	res := &Provisioned{Desired: desired}
	present := judge.NewPresence(s.Pods)
	for _, n := range judge.SortedNodes(s) {
		if present.On(n.Name, driver) == 0 {
			res.Skipped = append(res.Skipped, n.Name)
		}
	}
	return res, nil
}
