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
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

// Narrate is an Options.Step that prints each step and, under it, what
// gpuops says right then, through the one pipeline: the rollout as
// `gpuops upgrades` prints it and each GPU node's health as `gpuops health`
// does, judged with the options given (Upgrades and Health switched on).
func Narrate(w io.Writer, c kubernetes.Interface, judging pipeline.Options) func(context.Context, Step) error {
	judging.Upgrades, judging.Health = true, true
	text := report.Printer{Format: report.Text}
	return func(ctx context.Context, s Step) error {
		r, err := pipeline.Run(ctx, c, judging)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "rehearsal: step %d: %s\n", s.N, s.What)
		for _, view := range []report.View{report.UpgradesView, report.HealthView} {
			var v bytes.Buffer
			if err := text.Result(&v, io.Discard, r, view); err != nil {
				return err
			}
			for _, line := range strings.SplitAfter(v.String(), "\n") {
				if line != "" {
					b.WriteString("  " + line)
				}
			}
		}
		_, err = w.Write(b.Bytes())
		return err
	}
}

// Known reports, as an error naming the known ones, a scenario name that is
// none of Scenarios; "" (the plain lab) is known.
func Known(scenario string) error {
	if scenario != "" && !slices.Contains(Scenarios, scenario) {
		return fmt.Errorf("unknown scenario %q (known: %s)", scenario, strings.Join(Scenarios, ", "))
	}
	return nil
}

// Narrated rehearses on the lab spec's nodes, the last of the walk failing,
// and narrates every step on w as gpuops judges the lab's namespace by
// default: what lab --scenario driver-upgrade shows.
func Narrated(ctx context.Context, c kubernetes.Interface, w io.Writer, lab *labspec.Lab, timeout time.Duration) error {
	o := Options{Namespace: lab.Namespace, FailLast: true, Timeout: timeout,
		Step: Narrate(w, c, pipeline.Options{Namespace: lab.Namespace, StuckAfter: pipeline.DefaultStuckAfter})}
	for _, n := range lab.Nodes {
		o.Nodes = append(o.Nodes, n.Name)
	}
	return Run(ctx, c, o)
}

// Needs are the rights a rehearsal needs besides the lab's, so that a
// caller short of one stops before the first step rather than half-way.
func Needs(namespace string) []access.Need {
	return []access.Need{
		{Verbs: []string{"get", "list", "watch", "patch"}, Resource: "nodes"},
		{Verbs: []string{"get", "list", "watch", "patch", "delete"}, Resource: "pods", Namespace: namespace},
		{Verbs: []string{"get", "list", "watch", "patch"}, Group: "apps", Resource: "daemonsets", Namespace: namespace},
		{Verbs: []string{"list"}, Group: "apps", Resource: "controllerrevisions", Namespace: namespace},
		{Verbs: []string{"list", "create"}, Resource: "events", Namespace: metav1.NamespaceDefault},
	}
}
