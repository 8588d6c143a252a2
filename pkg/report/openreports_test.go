package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/report"
)

// TestClustersOpenReports: with --contexts, -o openreports is one List of
// every judged cluster's reports, each stamped with its context, apart by
// name though the clusters' node names are the same; the cluster that
// could not be judged is a line on stderr, outside the List.
func TestClustersOpenReports(t *testing.T) {
	var out, notes bytes.Buffer
	if err := (report.Printer{Format: report.OpenReports}).Clusters(&out, &notes, run, report.HealthView); err != nil {
		t.Fatal(err)
	}
	var l struct {
		Kind  string
		Items []v1alpha1.ClusterReport
	}
	if err := yaml.Unmarshal(out.Bytes(), &l); err != nil || l.Kind != "List" || len(l.Items) != 2 {
		t.Fatalf("-o openreports of 3 contexts, 1 down: %v, %d items\n%s", err, len(l.Items), out.String())
	}
	for i, ctx := range []string{"west", "east"} {
		r := l.Items[i]
		if r.Name != openreports.Name(ctx, "") || r.Annotations[openreports.ClusterAnnotation] != ctx || r.Labels[openreports.ClusterLabel] == "" {
			t.Errorf("item %d: %s %v %v, want the report of %s", i, r.Name, r.Labels, r.Annotations, ctx)
		}
		if len(r.Results) != 2 || r.Summary.Fail != i { // east has a node unusable
			t.Errorf("%s: %d results, summary %+v", ctx, len(r.Results), r.Summary)
		}
	}
	if l.Items[0].Name == l.Items[1].Name {
		t.Errorf("two clusters' reports share the name %s", l.Items[0].Name)
	}
	if got := notes.String(); got != "down: error: dial tcp: connection refused\n" || strings.Contains(out.String(), "down") {
		t.Errorf("the unreachable cluster: stderr %q", got)
	}
}
