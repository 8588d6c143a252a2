package report

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/outcome"
)

// The lab's files (out/audit.txt, out/order.txt, out/matrix.txt, what its
// scripts print and its checks compare) are the text of audit, order-check
// and matrix: LabAudit, LabOrder, LabMatrix.

// LabAudit is out/audit.txt: audit's text of every node.
func LabAudit(r *outcome.Result) []byte { return []byte(text(auditView{r}.lines())) }

// LabMatrix is out/matrix.txt: matrix's text.
func LabMatrix(r *outcome.Result) []byte { return []byte(text(matrixView{r}.lines())) }

// LabOrder is out/order.txt: "<node> <verdict>" for each node named (the
// lab spec's), in natural name order; a NodeNotFoundError for one that is
// not in r.
func LabOrder(r *outcome.Result, nodes []string) ([]byte, error) {
	var b bytes.Buffer
	for _, n := range slices.SortedFunc(slices.Values(nodes), judge.NaturalCompare) {
		v, err := r.Verdict(n)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s %s\n", n, v.Order.String())
	}
	return b.Bytes(), nil
}
