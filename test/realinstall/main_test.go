// Package realinstall_test judges a GPU Operator v26.7 install on the real
// control plane: the objects the operator renders for the chart's default
// ClusterPolicy, nodes labelled as the operator and its helpers label them
// (testdata/), and the install modes users run (host driver, host toolkit,
// NVIDIADriver pools). Every command must say what the operator's semantics
// say (testdata/verdicts.yaml): no false MISSING and no false order finding
// on a healthy node, pauses and stuck pauses with their reason, and no
// phantom operand. The ClusterPolicy is cluster-wide, so the tests of this
// package do not run in parallel.
package realinstall_test

import (
	"testing"

	"github.com/gpuops/gpuops/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }
