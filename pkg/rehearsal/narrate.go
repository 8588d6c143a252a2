package rehearsal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workload"
)

// Narrate is an Options.Step that prints each step and, under it, what
// gpuops says right then, through the one pipeline: each GPU node's health
// as `gpuops health` prints it, after the rollout as `gpuops upgrades`
// does when the options judge it, judged with the options given (Health
// switched on).
func Narrate(w io.Writer, c kubernetes.Interface, judging pipeline.Options) func(context.Context, Step) error {
	judging.Health = true
	views := []report.View{report.HealthView}
	if judging.Upgrades {
		views = []report.View{report.UpgradesView, report.HealthView}
	}
	text := report.Printer{Format: report.Text}
	return func(ctx context.Context, s Step) error {
		r, err := pipeline.Run(ctx, c, judging)
		if err != nil {
			return err
		}
		b := stepHeader(s)
		for _, view := range views {
			if err := indented(b, func(w io.Writer) error { return text.Result(w, io.Discard, r, view) }); err != nil {
				return err
			}
		}
		_, err = w.Write(b.Bytes())
		return err
	}
}

// NarrateWorkloads is an Options.Step that prints each step and, under it,
// what gpuops says right then of the GPU pods, through the same pipeline as
// the commands: gpuops why of each pod the step made or waited for, gpuops
// pods (every namespace), gpuops capacity (by the default pool label), as
// their text, judged with the options given.
func NarrateWorkloads(w io.Writer, c kubernetes.Interface, judging pipeline.Options) func(context.Context, Step) error {
	judging.Health = true
	if judging.GroupBy == "" {
		judging.GroupBy = pipeline.DefaultGroupBy
	}
	text := report.Printer{Format: report.Text}
	return func(ctx context.Context, s Step) error {
		b := stepHeader(s)
		for _, pod := range s.Pods {
			ns, name, _ := strings.Cut(pod, "/")
			r, err := pipeline.Why(ctx, c, judging, ns, workload.Target{Kind: "Pod", Name: name})
			if err != nil {
				return err
			}
			if err := indented(b, func(w io.Writer) error { return text.Why(w, io.Discard, r) }); err != nil {
				return err
			}
		}
		pods, err := pipeline.Pods(ctx, c, judging, "", "")
		if err != nil {
			return err
		}
		if err := indented(b, func(w io.Writer) error { return text.Pods(w, io.Discard, pods) }); err != nil {
			return err
		}
		capacity, err := pipeline.Capacity(ctx, c, judging)
		if err != nil {
			return err
		}
		if err := indented(b, func(w io.Writer) error { return text.Capacity(w, io.Discard, capacity) }); err != nil {
			return err
		}
		_, err = w.Write(b.Bytes())
		return err
	}
}

// stepHeader is the step's first line, as every narration starts it.
func stepHeader(s Step) *bytes.Buffer {
	var b bytes.Buffer
	fmt.Fprintf(&b, "rehearsal: step %d: %s\n", s.N, s.What)
	return &b
}

// indented appends what print writes to b, each line indented by two.
func indented(b *bytes.Buffer, print func(io.Writer) error) error {
	var v bytes.Buffer
	if err := print(&v); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(v.String(), "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
	return nil
}

// Known reports, as an error naming the known ones, a scenario name that is
// none of Scenarios; "" (the plain lab) is known.
func Known(scenario string) error {
	if scenario != "" && !slices.Contains(Scenarios, scenario) {
		return fmt.Errorf("unknown scenario %q (known: %s)", scenario, strings.Join(Scenarios, ", "))
	}
	return nil
}

// Ready says why the scenario cannot run on the cluster, before anything
// is written (the lab included): see Check.
func Ready(ctx context.Context, cl *kube.Clients, scenario string) error {
	if scenario == DriverUpgrade {
		return nil
	}
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		return err
	}
	return Check(ctx, cl.Kube, dyn, scenario)
}

// Narrated runs the scenario on the lab spec's nodes and narrates every
// step on w as gpuops judges the lab's namespace (JudgingOf): what lab
// --scenario shows. The driver upgrade's last node fails.
func Narrated(ctx context.Context, cl *kube.Clients, w io.Writer, lab *labspec.Lab, scenario string, timeout time.Duration) error {
	o := Options{Namespace: lab.Namespace, Timeout: timeout, Step: Narrate(w, cl.Kube, JudgingOf(scenario, lab.Namespace))}
	if scenario == Workloads {
		o.Step = NarrateWorkloads(w, cl.Kube, JudgingOf(scenario, lab.Namespace))
	}
	for _, n := range lab.Nodes {
		o.Nodes = append(o.Nodes, n.Name)
	}
	if scenario == DriverUpgrade {
		o.FailLast = true
		return Run(ctx, cl.Kube, o)
	}
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		return err
	}
	return RunOffer(ctx, cl.Kube, dyn, scenario, o)
}

// Needs are the rights a rehearsal needs besides the lab's, so that a
// caller short of one stops before the first step rather than half-way.
func Needs(scenario, namespace string) []access.Need {
	if scenario == DriverUpgrade {
		return []access.Need{
			{Verbs: []string{"get", "list", "watch", "patch"}, Resource: "nodes"},
			{Verbs: []string{"get", "list", "watch", "patch", "delete"}, Resource: "pods", Namespace: namespace},
			{Verbs: []string{"get", "list", "watch", "patch"}, Group: "apps", Resource: "daemonsets", Namespace: namespace},
			{Verbs: []string{"list"}, Group: "apps", Resource: "controllerrevisions", Namespace: namespace},
			{Verbs: []string{"list", "create"}, Resource: "events", Namespace: metav1.NamespaceDefault},
		}
	}
	needs := []access.Need{
		{Verbs: []string{"get", "list", "watch", "patch"}, Resource: "nodes"},
		{Verbs: []string{"get", "list", "watch", "patch", "delete"}, Resource: "pods", Namespace: namespace},
		{Verbs: []string{"get", "list", "watch", "create", "delete"}, Group: "apps", Resource: "daemonsets", Namespace: namespace},
	}
	switch scenario {
	case Sharing, MIG:
		needs = append(needs,
			access.Need{Verbs: []string{"get", "create", "delete"}, Resource: "configmaps", Namespace: namespace},
			access.Need{Verbs: []string{"get", "create", "delete"}, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
			access.Need{Verbs: []string{"list", "create", "delete"}, Group: PolicyGVR.Group, Resource: PolicyGVR.Resource})
	case DRA:
		needs = append(needs, access.Need{Verbs: []string{"get", "list", "create", "update", "delete"}, Group: "resource.k8s.io", Resource: "resourceslices"})
	case Workloads:
		needs = append(needs,
			access.Need{Verbs: []string{"get", "list", "watch", "create", "delete"}, Resource: "namespaces"},
			access.Need{Verbs: []string{"get", "list", "watch", "create", "delete"}, Resource: "pods", Namespace: WorkloadsNamespace},
			access.Need{Verbs: []string{"list"}, Resource: "pods"},
			access.Need{Verbs: []string{"list"}, Resource: "events"})
	}
	return needs
}
