// Package fleetview_test checks the fleet views the way a user meets them:
// gpuops summary, report --html and -o junit run as a binary against a fleet
// of a few hundred KWOK nodes on a real control plane, the summary's counts
// against what audit and matrix say node by node, the JUnit file against its
// schema, and the HTML page in a real headless Chromium. The tests use the
// operator's fixed deploy-label keys, so they do not run in parallel.
package fleetview_test

import (
	"testing"

	"github.com/gpuops/gpuops/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }
