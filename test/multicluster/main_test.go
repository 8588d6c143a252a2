// Package multicluster_test checks one run across clusters the way a user
// meets it: two real control planes in one merged kubeconfig (one healthy
// lab, one whose device plugin runs without the toolkit on a node of its
// own), a context whose API server refuses connections and one whose user
// may read nothing; every judge with --contexts, --all-contexts and
// --context-match, in text, tables, JSON, JUnit and HTML, each reachable
// cluster's part against what the command prints for that cluster alone.
// The labs use the operator's fixed deploy-label keys, so the tests do not
// run in parallel.
package multicluster_test

import (
	"testing"

	"github.com/gpuops/gpuops/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }
