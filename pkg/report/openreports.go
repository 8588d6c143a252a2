package report

import (
	"fmt"
	"io"

	"github.com/gpuops/gpuops/pkg/words"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/outcome"
)

// OpenReports is -o openreports: the checks the command judged as
// OpenReports ClusterReports (pkg/openreports), in one v1 List of YAML that
// kubectl applies (gpuops audit -o openreports | kubectl apply -f -), for
// Policy Reporter and Kyverno's UI. Every judge makes the audit and the order
// check of each node, so each command's reports hold both, and health's
// and upgrades' their own checks too.
const OpenReports Format = "openreports"

// clustersReports prints every cluster's reports in one List, each named
// and labelled for its kubeconfig context; a cluster that could not be
// judged is a line on notes (stderr), so the List still applies.
func clustersReports(w, notes io.Writer, cs []outcome.Cluster, view View) error {
	var all []v1alpha1.ClusterReport
	for _, c := range cs {
		err := c.Err
		if err == nil {
			_, err = view.of(c.Result) // order-check's refuses a cluster without its node
		}
		if err != nil {
			fmt.Fprintf(notes, "%s: error: %s\n", c.Context, words.ErrorLine(err))
			continue
		}
		all = append(all, reports(c.Result, c.Context)...)
	}
	return PrintReports(w, all)
}

// reports are the ClusterReports of a result, cluster naming its context
// in a run across clusters.
func reports(r *outcome.Result, cluster string) []v1alpha1.ClusterReport {
	return openreports.Assemble(openreports.Nodes(r.Nodes, r.Namespace, r.Taken), cluster, r.Named, openreports.MaxBytes)
}

// PrintReports writes reports as one v1 List in YAML: of one cluster, or of
// several (gpuops --contexts), each report named and labelled for its own.
func PrintReports(w io.Writer, reports []v1alpha1.ClusterReport) error {
	b, err := yaml.Marshal(struct {
		APIVersion string                   `json:"apiVersion"`
		Kind       string                   `json:"kind"`
		Items      []v1alpha1.ClusterReport `json:"items"`
	}{"v1", "List", nonNil(reports)})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
