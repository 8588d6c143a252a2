package main

import (
	"testing"

	"github.com/gpuops/gpuops/internal/testcluster"
)

// Integration tests of this package run against a real control plane. The
// ones that use the operator's fixed deploy-label keys count DaemonSet pods
// cluster-wide, so none of this package's tests call t.Parallel.
func TestMain(m *testing.M) { testcluster.Main(m) }
